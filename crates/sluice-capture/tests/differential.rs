//! Our pcap and pcapng readers against the `pcap-parser` crate (see
//! `diff/mod.rs` for what must agree and the listed places where the two
//! may differ): every pcap/pcapng capture under testdata/ (gzip ones
//! decompressed first), then a few thousand seeded mutants of them:
//! flipped and random bytes, cuts, 4-byte fields set to 0 / 0xffffffff /
//! random, deleted and duplicated ranges, aimed mostly at record and
//! block boundaries where the length and type fields are. Deterministic;
//! a few seconds in a debug build. The `pcap_differential` fuzz target
//! runs the same check on fuzzer input.

mod diff;
mod mutants;

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use mutants::{boundaries, mutate};
use sluice_testkit::Rng;

/// Mutants per capture: `MUTANT_BYTES / size`, within these bounds.
const MIN_MUTANTS: usize = 8;
const MAX_MUTANTS: usize = 600;
const MUTANT_BYTES: usize = 10_000_000;
/// Larger captures are checked whole but not mutated.
const MAX_MUTATED: usize = 100 * 1024;

fn captures(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            captures(&p, out);
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let base = name.strip_suffix(".gz").unwrap_or(&name);
        if !(base.ends_with(".pcap") || base.ends_with(".pcapng")) {
            continue;
        }
        let mut bytes = fs::read(&p).unwrap();
        if diff::is_gzip(&bytes) {
            let mut plain = Vec::new();
            MultiGzDecoder::new(&bytes[..])
                .read_to_end(&mut plain)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            bytes = plain;
        }
        out.push((p, bytes));
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes pcap and pcapng in one byte order.
struct W {
    be: bool,
}

impl W {
    fn u16(&self, v: u16) -> [u8; 2] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn u32(&self, v: u32) -> [u8; 4] {
        if self.be {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    }
    fn block(&self, t: u32, body: &[u8]) -> Vec<u8> {
        let mut body = body.to_vec();
        body.resize(body.len().next_multiple_of(4), 0);
        let len = self.u32(12 + body.len() as u32);
        [&self.u32(t)[..], &len, &body, &len].concat()
    }
    fn opt(&self, code: u16, value: &[u8]) -> Vec<u8> {
        let mut v = [&self.u16(code)[..], &self.u16(value.len() as u16), value].concat();
        v.resize(v.len().next_multiple_of(4), 0);
        v
    }
    fn shb(&self) -> Vec<u8> {
        let mut body = self.u32(0x1a2b_3c4d).to_vec();
        body.extend(self.u16(1));
        body.extend(self.u16(0));
        body.extend([0xff; 8]);
        body.extend(self.opt(3, b"linux"));
        body.extend(self.opt(0, b""));
        self.block(0x0a0d_0d0a, &body)
    }
    fn idb(&self, linktype: u16, snaplen: u32, opts: &[Vec<u8>]) -> Vec<u8> {
        let mut body = [&self.u16(linktype)[..], &[0, 0], &self.u32(snaplen)].concat();
        opts.iter().for_each(|o| body.extend(o));
        self.block(1, &body)
    }
    /// An EPB (`t` 6) or OPB (`t` 2) with an `epb_flags` option.
    fn pkt(&self, t: u32, iface: u32, ts: u64, data: &[u8], orig: u32) -> Vec<u8> {
        let mut body = if t == 2 {
            [self.u16(iface as u16), self.u16(0)].concat()
        } else {
            self.u32(iface).to_vec()
        };
        for v in [(ts >> 32) as u32, ts as u32, data.len() as u32, orig] {
            body.extend(self.u32(v));
        }
        body.extend(data);
        body.resize(body.len().next_multiple_of(4), 0);
        body.extend(self.opt(2, &self.u32(1)));
        self.block(t, &body)
    }
    fn pcapng(&self) -> Vec<u8> {
        let tsoffset = |s: i64| {
            let b = if self.be {
                s.to_be_bytes()
            } else {
                s.to_le_bytes()
            };
            self.opt(14, &b)
        };
        let mut f = self.shb();
        f.extend(self.idb(1, 8, &[self.opt(2, b"eth0"), self.opt(9, &[9])]));
        f.extend(self.idb(113, 0, &[self.opt(9, &[0x8a]), tsoffset(-1)]));
        f.extend(self.idb(12, 0, &[tsoffset(5), self.opt(9, &[3]), self.opt(0, b"")]));
        f.extend(self.block(4, &[0, 0, 0, 0]));
        f.extend(self.pkt(6, 0, 1_700_000_000_123_456_789, b"0123456789ab", 60));
        f.extend(self.block(3, &[&self.u32(20)[..], b"simple packet data"].concat()));
        f.extend(self.pkt(2, 1, 3 << 40, b"obsolete", 8));
        f.extend(self.block(5, &[&self.u32(0)[..], &[0; 8]].concat()));
        f.extend(self.pkt(6, 2, 42, b"raw", 3));
        f.extend(self.block(0x4000_0bad, &[&self.u32(32473)[..], b"custom"].concat()));
        f.extend(self.block(0x8000_0001, b"pib"));
        f.extend(self.block(0x7777, b""));
        f.extend(self.block(3, &[&self.u32(2)[..], b"hi"].concat()));
        f
    }
    /// pcap of version 2.`minor`, record lengths in file order.
    fn pcap(&self, nanos: bool, minor: u16, link: u32, recs: &[(u32, u32, &[u8])]) -> Vec<u8> {
        let magic = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        let mut f = [&self.u32(magic)[..], &self.u16(2), &self.u16(minor)].concat();
        f.extend([0; 8]);
        f.extend(self.u32(65535));
        f.extend(self.u32(link));
        for (i, (a, b, data)) in recs.iter().enumerate() {
            for v in [1_600_000_000 + i as u32, 999_999 + i as u32, *a, *b] {
                f.extend(self.u32(v));
            }
            f.extend(*data);
        }
        f
    }
}

/// Hand-made captures for what testdata lacks: binary resolutions,
/// offsets, the obsolete packet block, simple packets cut by the snaplen,
/// several sections, pre-2.4 pcap length order, FCS bits.
fn synthetic() -> Vec<(PathBuf, Vec<u8>)> {
    let (le, be) = (W { be: false }, W { be: true });
    let mut two = le.pcapng();
    two.extend(be.pcapng());
    let recs: &[(u32, u32, &[u8])] = &[(4, 60, b"abcd"), (60, 2, b"xy"), (0, 0, b"")];
    [
        ("le.pcapng", le.pcapng()),
        ("be.pcapng", be.pcapng()),
        ("le-be.pcapng", two),
        (
            "v2.2.pcap",
            le.pcap(false, 2, 1, &[(60, 2, b"xy"), (1, 1, b"z")]),
        ),
        ("v2.3-be-nano.pcap", be.pcap(true, 3, 1, recs)),
        (
            "v2.4-fcs.pcap",
            le.pcap(false, 4, 0x1400_0001, &[(4, 60, b"abcd"), (2, 60, b"xy")]),
        ),
    ]
    .into_iter()
    .map(|(n, b)| (PathBuf::from("synthetic").join(n), b))
    .collect()
}

#[test]
fn readers_agree_with_pcap_parser_on_testdata_and_mutants() {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata"));
    let mut files = Vec::new();
    captures(&root, &mut files);
    assert!(files.len() >= 80, "only {} captures found", files.len());
    files.extend(synthetic());

    let mut failures = Vec::new();
    let (mut mutants, mut clean, mut packets) = (0usize, 0usize, 0usize);
    for (n, (path, bytes)) in files.iter().enumerate() {
        let name = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        match diff::check(bytes) {
            Ok(a) => packets += a.packets,
            Err(e) => failures.push(format!("{name}: {e}")),
        }
        if bytes.len() > MAX_MUTATED {
            continue;
        }
        let marks = boundaries(bytes);
        let mut rng = Rng(0x5eed_d1ff ^ (n as u64) << 20);
        let count = (MUTANT_BYTES / bytes.len().max(1)).clamp(MIN_MUTANTS, MAX_MUTANTS);
        for m in 0..count {
            let v = mutate(&mut rng, bytes, &marks);
            if diff::is_gzip(&v) {
                continue;
            }
            mutants += 1;
            match diff::check(&v) {
                Ok(a) => {
                    clean += usize::from(a.clean);
                    packets += a.packets;
                }
                Err(e) => {
                    // Enough to rebuild the mutant by hand or to replay
                    // it: the test is deterministic (file order, seeds).
                    let diffs = bytes
                        .iter()
                        .zip(&v)
                        .position(|(a, b)| a != b)
                        .unwrap_or(bytes.len().min(v.len()));
                    failures.push(format!(
                        "{name} mutant {m} ({} bytes, first change at {diffs}: {}..): {e}",
                        v.len(),
                        hex(&v[diffs.min(v.len())..(diffs + 16).min(v.len())])
                    ));
                }
            }
        }
    }
    eprintln!(
        "{} captures, {mutants} mutants ({clean} read cleanly), {packets} packets agreed",
        files.len()
    );
    assert!(mutants >= 2_000, "only {mutants} mutants");
    assert!(
        failures.is_empty(),
        "{} disagreements with pcap-parser:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The listed differences, each on a small hand-made file: both sides must
/// still agree (the reference applies the rule pcap-parser lacks).
#[test]
fn listed_differences_are_applied() {
    let le = |v: u32| v.to_le_bytes();
    let pcap_hdr = |minor: u16, link: u32| {
        let mut v = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0];
        v.extend(minor.to_le_bytes());
        v.extend([0; 8]);
        v.extend(le(65535));
        v.extend(le(link));
        v
    };
    let rec = |caplen: u32, len: u32, data: &[u8]| {
        let mut v = [le(1), le(2), le(caplen), le(len)].concat();
        v.extend(data);
        v
    };
    // P3: a v2.2 record stores len before caplen.
    let mut f = pcap_hdr(2, 1);
    f.extend(rec(60, 3, b"abc"));
    assert_eq!(diff::check(&f).unwrap().packets, 1);
    assert_eq!(diff::ours(&f).recs[0].data, b"abc");
    // P2: reserved link-type bits refuse the file.
    let mut f = pcap_hdr(4, 0x0030_0001);
    f.extend(rec(3, 3, b"abc"));
    assert!(!diff::check(&f).unwrap().clean);

    let block = |t: u32, body: &[u8]| {
        let len = 12 + body.len() as u32;
        [&le(t)[..], &le(len), body, &le(len)].concat()
    };
    let shb = block(
        0x0a0d_0d0a,
        &[&le(0x1a2b_3c4d)[..], &[1, 0, 0, 0], &[0xff; 8]].concat(),
    );
    // N5: binary resolution 2^-10 and an offset of -1 s; N7: an OPB.
    let mut idb_body = vec![1, 0, 0, 0];
    idb_body.extend(le(0));
    idb_body.extend([9, 0, 1, 0, 0x8a, 0, 0, 0, 14, 0, 8, 0]);
    idb_body.extend((-1i64).to_le_bytes());
    let mut f = shb.clone();
    f.extend(block(1, &idb_body));
    let pkt = |iface: &[u8]| {
        let mut b = iface.to_vec();
        b.extend(le(0));
        b.extend(le(3 << 10));
        b.extend(le(4));
        b.extend(le(60));
        b.extend(b"wxyz");
        b
    };
    f.extend(block(6, &pkt(&le(0))));
    f.extend(block(2, &pkt(&[0, 0, 0, 0])));
    // N8: an SPB after them, timestamp of the previous packet.
    f.extend(block(3, &[&le(2)[..], b"hi\0\0"].concat()));
    let a = diff::check(&f).unwrap();
    assert_eq!((a.packets, a.clean), (3, true));
    let recs = diff::ours(&f).recs;
    assert_eq!(recs[0].ts_ns, 2_000_000_000);
    assert_eq!(recs[1], recs[0]);
    assert_eq!(
        (recs[2].ts_ns, &recs[2].data[..]),
        (2_000_000_000, &b"hi"[..])
    );
}

/// Found by this comparison: a timestamp past `u64::MAX` ns before its
/// interface's (negative) `if_tsoffset` is in range after it, and is read
/// (we used to refuse it as out of range: the offset was added only after
/// a conversion limited to `u64`).
#[test]
fn offset_brings_a_far_timestamp_into_range() {
    let le = |v: u32| v.to_le_bytes();
    let block = |t: u32, body: &[u8]| {
        let len = 12 + body.len() as u32;
        [&le(t)[..], &le(len), body, &le(len)].concat()
    };
    let mut f = block(
        0x0a0d_0d0a,
        &[&le(0x1a2b_3c4d)[..], &[1, 0, 0, 0], &[0xff; 8]].concat(),
    );
    // Microseconds (the default), if_tsoffset -10^9 s.
    let mut idb = vec![1, 0, 0, 0, 0, 0, 0, 0, 14, 0, 8, 0];
    idb.extend((-1_000_000_000i64).to_le_bytes());
    f.extend(block(1, &idb));
    let ts = u64::MAX / 1000 + 5;
    let epb = [
        &le(0)[..],
        &le((ts >> 32) as u32),
        &le(ts as u32),
        &le(4),
        &le(60),
        b"wxyz",
    ];
    f.extend(block(6, &epb.concat()));
    let a = diff::check(&f).unwrap();
    assert_eq!((a.packets, a.clean), (1, true));
    let want = u128::from(ts) * 1000 - 1_000_000_000 * 1_000_000_000;
    assert_eq!(u128::from(diff::ours(&f).recs[0].ts_ns), want);
}

#[test]
fn synthetic_captures_read_cleanly() {
    let want = [5, 5, 10, 2, 3, 2];
    for ((name, bytes), want) in synthetic().iter().zip(want) {
        let a = diff::check(bytes).unwrap_or_else(|e| panic!("{}: {e}", name.display()));
        assert_eq!((a.packets, a.clean), (want, true), "{}", name.display());
    }
    // The v2.3 file swaps only the record whose caplen exceeds its len.
    let recs = diff::ours(&synthetic()[4].1).recs;
    assert_eq!((recs[0].data.len(), recs[0].orig_len), (4, 60));
    assert_eq!((recs[1].data.len(), recs[1].orig_len), (2, 60));
    // The snaplen of interface 0 (8) cuts the simple packet.
    let recs = diff::ours(&synthetic()[0].1).recs;
    assert_eq!(
        (&recs[1].data[..], recs[1].orig_len),
        (&b"simple p"[..], 20)
    );
}
