//! Differential check of our pcap and pcapng readers against the
//! `pcap-parser` crate (rusticata), shared by `tests/differential.rs` and
//! the `pcap_differential` fuzz target (which includes this file by path).
//!
//! Both read the same bytes to the end. The *reference* is pcap-parser's
//! parsers (file header, record and block framing, fixed fields, option
//! lists) with the rules of the formats that pcap-parser leaves to its
//! caller applied on top, each below in [`reference`] and listed here. The
//! check ([`check`]) then asks for exact agreement:
//!
//! - the same packets in the same order: timestamp (ns), captured bytes,
//!   original length, link type and interface; and
//! - the same ending: both reach a clean end, or both refuse (an error,
//!   truncation included) after the same packets. Error *kinds* are not
//!   compared (pcap-parser's are nom errors).
//!
//! Where the two readers differ, the reference applies our rule on top
//! of pcap-parser, so the check itself has no exceptions; these places,
//! and only these, with the reason for each (our rules are documented in
//! `src/pcap.rs`, `src/pcapng.rs`, `src/interface.rs`):
//!
//! pcap
//! - P1 major version other than 2: refused (libpcap refuses;
//!   pcap-parser reads any version).
//! - P2 link-type field with reserved bits 16..25 set: refused (libpcap).
//! - P3 versions before 2.3 store `len` before `caplen`, and 2.3 files
//!   may: the two are swapped back as libpcap does (always before 2.3; in
//!   2.3 when caplen > len). pcap-parser never swaps: the record is parsed
//!   by pcap-parser from a copy of its header with the fields swapped.
//! - P4 the "modified" (Kuznetzov) format, magic 0xa1b2cd34: refused (we
//!   do not read it, a 1999 patch's format with longer record headers;
//!   libpcap and pcap-parser do).
//! - P5 a captured length over [`MAX_RECORD`] (256 MiB): refused (our
//!   bound on memory; pcap-parser would wait for the bytes).
//! - Timestamps: `sec * 1e9 + frac * (1 or 1000)`, the fraction as is
//!   even when out of range (libpcap does the same; pcap-parser hands out
//!   the raw fields).
//!
//! pcapng
//! - N1 a block length not a multiple of 4, or over 256 MiB: refused
//!   (the spec; libpcap refuses both; pcap-parser takes any length).
//! - N2 a trailing length that differs from the leading one: refused for
//!   every block (pcap-parser checks it for EPB and IDB only).
//! - N3 section header major version other than 1: refused (libpcap).
//! - N4 section and interface options: read up to `opt_endofopt` (later
//!   ones ignored; pcap-parser reads on); an option whose value runs past
//!   the end of its block is refused (pcap-parser silently stops there).
//!   (A last option missing its padding, which we use and pcap-parser
//!   drops, could only end a block whose length N1 refuses.)
//!   Packet-block options are not looked at (neither reader uses them).
//! - N5 `if_tsresol` and `if_tsoffset` are decoded here, not by
//!   pcap-parser 0.17, which refuses every binary resolution (it tests the
//!   0x80 bit against its 63 limit), reads `if_tsoffset` little-endian in
//!   big-endian sections, and takes options of the wrong length: options
//!   of the wrong length are ignored (Wireshark), the last valid one wins,
//!   a resolution finer than 10^-19 s or 2^-63 s refuses its interface.
//!   Timestamps: `ts * 1e9 / units_per_second` (floor) `+ offset * 1e9`,
//!   exact in 128 bits; a packet whose time falls outside `0..=u64::MAX`
//!   ns is refused.
//! - N6 a packet block before any interface description, or naming an
//!   interface the section has not described: refused (the spec;
//!   pcap-parser does not track interfaces). At most [`MAX_INTERFACES`]
//!   per section (our bound on memory).
//! - N7 the obsolete Packet Block (type 2), unknown to pcap-parser: framed
//!   by pcap-parser's unknown-block parser, its fixed fields (as EPB, with
//!   a 16-bit interface) decoded here.
//! - N8 Simple Packet Blocks: captured length `min(original length, block
//!   room, snaplen of interface 0 unless 0)` (the spec; pcap-parser
//!   ignores the snaplen); timestamp: the previous packet's, 0 before any
//!   (ours: SPBs have none).
//! - N9 blocks we do not interpret (name resolution, statistics, secrets,
//!   process information, custom, unknown) are framed by pcap-parser's
//!   unknown-block parser, not by its parser for their type: we check only
//!   their framing, and pcap-parser 0.17's parsers of their contents are
//!   stricter (and its process-information block parser computes
//!   `length - 12` unchecked: a block length under 12 is an overflow panic
//!   with overflow checks on, found by this fuzz target).
//!
//! Out of scope: gzip input (pcap-parser reads none; callers compare the
//! decompressed bytes) and ERF/TSH (known by file name only).

use pcap_parser::nom;
use pcap_parser::pcapng::{
    parse_enhancedpacketblock_be, parse_enhancedpacketblock_le, parse_interfacedescriptionblock_be,
    parse_interfacedescriptionblock_le, parse_sectionheaderblock, parse_simplepacketblock_be,
    parse_simplepacketblock_le, parse_unknownblock_be, parse_unknownblock_le, Block,
};
use pcap_parser::traits::PcapNGPacketBlock;
use pcap_parser::{parse_pcap_frame, parse_pcap_frame_be, parse_pcap_header, PcapNGOption};
use sluice_capture::{CaptureReader, LinkType, MAX_INTERFACES, MAX_RECORD};
use std::io::Cursor;

/// One packet as both sides describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub ts_ns: u64,
    pub data: Vec<u8>,
    pub orig_len: u32,
    pub linktype: u32,
    pub interface: u32,
}

/// A reader's whole reading of one input: its packets and how it ended
/// (`Err` with a description when it refused).
#[derive(Debug)]
pub struct Reading {
    pub recs: Vec<Rec>,
    pub end: Result<(), String>,
}

/// What [`check`] found when the two agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreed {
    pub packets: usize,
    pub clean: bool,
}

/// Reads `bytes` with our reader.
pub fn ours(bytes: &[u8]) -> Reading {
    let mut recs = Vec::new();
    let mut r = match CaptureReader::from_reader(Box::new(Cursor::new(bytes.to_vec())), "diff") {
        Ok(r) => r,
        Err(e) => {
            return Reading {
                recs,
                end: Err(e.to_string()),
            }
        }
    };
    let end = loop {
        match r.next_packet() {
            Ok(Some(p)) => recs.push(Rec {
                ts_ns: p.ts_ns,
                data: p.data.to_vec(),
                orig_len: p.orig_len,
                linktype: p.linktype.0,
                interface: p.interface,
            }),
            Ok(None) => break Ok(()),
            Err(e) => break Err(e.to_string()),
        }
    };
    Reading { recs, end }
}

/// Reads `bytes` with pcap-parser and the rules listed in the module
/// documentation.
pub fn reference(bytes: &[u8]) -> Reading {
    let mut recs = Vec::new();
    let end = if bytes.len() >= 4 && bytes[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        pcapng(bytes, &mut recs)
    } else {
        pcap(bytes, &mut recs)
    };
    Reading { recs, end }
}

/// Whether `bytes` is gzip, which only our reader reads (out of scope).
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Compares the two readings of `bytes` (not gzip); `Err` describes the
/// first disagreement.
pub fn check(bytes: &[u8]) -> Result<Agreed, String> {
    assert!(!is_gzip(bytes), "gzip input is out of scope");
    let a = ours(bytes);
    let b = reference(bytes);
    for (i, (x, y)) in a.recs.iter().zip(&b.recs).enumerate() {
        if x != y {
            return Err(format!(
                "packet {}: ours {} != pcap-parser {}",
                i + 1,
                show(x),
                show(y)
            ));
        }
    }
    if a.recs.len() != b.recs.len() || a.end.is_ok() != b.end.is_ok() {
        return Err(format!(
            "ours: {} packets, then {:?}; pcap-parser: {} packets, then {:?}",
            a.recs.len(),
            a.end,
            b.recs.len(),
            b.end
        ));
    }
    Ok(Agreed {
        packets: a.recs.len(),
        clean: a.end.is_ok(),
    })
}

fn show(r: &Rec) -> String {
    let head: Vec<String> = r.data.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!(
        "{{ts_ns {}, caplen {}, orig_len {}, linktype {}, interface {}, data {}..}}",
        r.ts_ns,
        r.data.len(),
        r.orig_len,
        r.linktype,
        r.interface,
        head.join("")
    )
}

fn nom_err<E: std::fmt::Debug>(what: &str, e: nom::Err<E>) -> String {
    match e {
        nom::Err::Incomplete(_) => format!("{what}: truncated"),
        e => format!("{what}: {e:?}"),
    }
}

fn u16_at(b: &[u8], at: usize, be: bool) -> u16 {
    let v = [b[at], b[at + 1]];
    if be {
        u16::from_be_bytes(v)
    } else {
        u16::from_le_bytes(v)
    }
}

fn u32_at(b: &[u8], at: usize, be: bool) -> u32 {
    let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if be {
        u32::from_be_bytes(v)
    } else {
        u32::from_le_bytes(v)
    }
}

fn pcap(bytes: &[u8], recs: &mut Vec<Rec>) -> Result<(), String> {
    let (mut rest, h) = parse_pcap_header(bytes).map_err(|e| nom_err("file header", e))?;
    // P4
    if h.is_modified_format() {
        return Err("modified pcap format".into());
    }
    // P1
    if h.version_major != 2 {
        return Err(format!("version {}.{}", h.version_major, h.version_minor));
    }
    // P2
    let field = h.network.0 as u32;
    if field & 0x03ff_0000 != 0 {
        return Err(format!("link type field {field:#x}"));
    }
    let be = h.is_bigendian();
    let mult = if h.is_nanosecond_precision() {
        1
    } else {
        1_000
    };
    let linktype = LinkType::from_header(field).0;
    while !rest.is_empty() {
        let mut swapped = [0u8; 16];
        let fields = rest
            .get(..16)
            .map(|r| (u32_at(r, 8, be), u32_at(r, 12, be)));
        // P3
        let swap = match (h.version_minor, fields) {
            (0..=2, Some(_)) => true,
            (3, Some((caplen, len))) => caplen > len,
            _ => false,
        };
        let frame = if swap {
            swapped.copy_from_slice(&rest[..16]);
            swapped[8..12].copy_from_slice(&rest[12..16]);
            swapped[12..16].copy_from_slice(&rest[8..12]);
            let caplen = u32_at(&swapped, 8, be) as usize;
            let mut copy = swapped.to_vec();
            copy.extend_from_slice(&rest[16..rest.len().min(16 + caplen)]);
            let parsed = if be {
                parse_pcap_frame_be(&copy)
            } else {
                parse_pcap_frame(&copy)
            };
            parsed
                .map(|(_, f)| (f.ts_sec, f.ts_usec, f.origlen, f.data.to_vec()))
                .map_err(|e| nom_err("record", e))?
        } else {
            let parsed = if be {
                parse_pcap_frame_be(rest)
            } else {
                parse_pcap_frame(rest)
            };
            let (_, f) = parsed.map_err(|e| nom_err("record", e))?;
            (f.ts_sec, f.ts_usec, f.origlen, f.data.to_vec())
        };
        let (sec, frac, orig_len, data) = frame;
        // P5
        if data.len() > MAX_RECORD as usize {
            return Err("record over 256 MiB".into());
        }
        rest = &rest[16 + data.len()..];
        recs.push(Rec {
            ts_ns: u64::from(sec) * 1_000_000_000 + u64::from(frac) * mult,
            data,
            orig_len,
            linktype,
            interface: 0,
        });
    }
    Ok(())
}

/// One interface of a pcapng section, as the reference reads it.
struct Iface {
    linktype: u32,
    snaplen: u32,
    units_per_sec: u128,
    offset_s: i64,
}

impl Iface {
    /// N5: exact conversion; `None` outside `0..=u64::MAX` ns.
    fn ts_ns(&self, ts: u64) -> Option<u64> {
        let ns = u128::from(ts) * 1_000_000_000 / self.units_per_sec;
        let ns = i128::try_from(ns).ok()? + i128::from(self.offset_s) * 1_000_000_000;
        u64::try_from(ns).ok()
    }
}

/// N4: the options of a section or interface block as we read them.
/// `parsed` is pcap-parser's list, `region` the raw option bytes.
fn options<'a>(
    parsed: &'a [PcapNGOption<'a>],
    region: &'a [u8],
    be: bool,
) -> Result<Vec<(u16, &'a [u8])>, String> {
    let mut out = Vec::new();
    let mut used = 0;
    for o in parsed {
        if o.code.0 == 0 {
            return Ok(out);
        }
        out.push((o.code.0, &o.value()[..usize::from(o.len)]));
        used += 4 + o.value().len();
    }
    // pcap-parser stops at the first option it cannot take whole.
    let left = &region[used..];
    if left.len() >= 4 {
        let code = u16_at(left, 0, be);
        let len = usize::from(u16_at(left, 2, be));
        if code == 0 {
            return Ok(out);
        }
        if 4 + len > left.len() {
            return Err(format!("option {code} of {len} bytes overruns its block"));
        }
        out.push((code, &left[4..4 + len]));
    }
    Ok(out)
}

/// N5: an interface from its description block.
fn iface(linktype: u16, snaplen: u32, opts: &[(u16, &[u8])], be: bool) -> Result<Iface, String> {
    let mut units_per_sec = 1_000_000u128;
    let mut offset_s = 0i64;
    for &(code, v) in opts {
        match (code, v.len()) {
            (9, 1) => {
                let e = u32::from(v[0] & 0x7f);
                units_per_sec = match (v[0] & 0x80 != 0, e) {
                    (true, 0..=63) => 1u128 << e,
                    (false, 0..=19) => 10u128.pow(e),
                    _ => return Err(format!("if_tsresol {:#x}", v[0])),
                };
            }
            (14, 8) => {
                let b: [u8; 8] = v.try_into().unwrap();
                offset_s = if be {
                    i64::from_be_bytes(b)
                } else {
                    i64::from_le_bytes(b)
                };
            }
            _ => {}
        }
    }
    Ok(Iface {
        linktype: LinkType::from_header(u32::from(linktype)).0,
        snaplen,
        units_per_sec,
        offset_s,
    })
}

/// State of a pcapng reading: the current section's byte order and
/// interfaces, and the last packet's timestamp (N8).
struct Ng {
    be: bool,
    ifaces: Vec<Iface>,
    last_ts: u64,
}

impl Ng {
    /// N6: the interface a packet block names.
    fn iface(&self, id: u32) -> Result<&Iface, String> {
        self.ifaces
            .get(id as usize)
            .ok_or_else(|| format!("interface {id} of {}", self.ifaces.len()))
    }

    /// An EPB's or OPB's packet (N5, N6).
    fn packet(
        &mut self,
        id: u32,
        ts_high: u32,
        ts_low: u32,
        data: &[u8],
        orig_len: u32,
    ) -> Result<Rec, String> {
        let i = self.iface(id)?;
        let ts = (u64::from(ts_high) << 32) | u64::from(ts_low);
        let ts_ns = i.ts_ns(ts).ok_or("timestamp out of range")?;
        let linktype = i.linktype;
        self.last_ts = ts_ns;
        Ok(Rec {
            ts_ns,
            data: data.to_vec(),
            orig_len,
            linktype,
            interface: id,
        })
    }
}

const SHB: u32 = 0x0a0d_0d0a;

fn pcapng(bytes: &[u8], recs: &mut Vec<Rec>) -> Result<(), String> {
    let mut ng = Ng {
        be: false,
        ifaces: Vec::new(),
        last_ts: 0,
    };
    let mut rest = bytes;
    let mut first = true;
    while !rest.is_empty() {
        let at = bytes.len() - rest.len();
        let fail = |what: String| format!("block at byte {at}: {what}");
        let t = if rest.len() >= 4 {
            u32_at(rest, 0, ng.be)
        } else {
            0
        };
        let parsed = match (first, t, ng.be) {
            (true, _, _) | (_, SHB, _) => {
                parse_sectionheaderblock(rest).map(|(r, b)| (r, Block::SectionHeader(b)))
            }
            (_, 1, false) => parse_interfacedescriptionblock_le(rest)
                .map(|(r, b)| (r, Block::InterfaceDescription(b))),
            (_, 1, true) => parse_interfacedescriptionblock_be(rest)
                .map(|(r, b)| (r, Block::InterfaceDescription(b))),
            (_, 3, false) => {
                parse_simplepacketblock_le(rest).map(|(r, b)| (r, Block::SimplePacket(b)))
            }
            (_, 3, true) => {
                parse_simplepacketblock_be(rest).map(|(r, b)| (r, Block::SimplePacket(b)))
            }
            (_, 6, false) => {
                parse_enhancedpacketblock_le(rest).map(|(r, b)| (r, Block::EnhancedPacket(b)))
            }
            (_, 6, true) => {
                parse_enhancedpacketblock_be(rest).map(|(r, b)| (r, Block::EnhancedPacket(b)))
            }
            // N9 (and N7: pcap-parser has no parser for type 2)
            (_, _, false) => parse_unknownblock_le(rest).map(|(r, b)| (r, Block::Unknown(b))),
            (_, _, true) => parse_unknownblock_be(rest).map(|(r, b)| (r, Block::Unknown(b))),
        };
        let (next, block) = parsed.map_err(|e| fail(nom_err("block", e)))?;
        first = false;
        let raw = &rest[..rest.len() - next.len()];
        rest = next;
        let be = match &block {
            Block::SectionHeader(shb) => shb.big_endian(),
            _ => ng.be,
        };
        // N1, N2
        let len = u32_at(raw, 4, be);
        if !len.is_multiple_of(4) || len > MAX_RECORD {
            return Err(fail(format!("length {len}")));
        }
        let trailer = u32_at(raw, raw.len() - 4, be);
        if trailer != len {
            return Err(fail(format!("trailer {trailer} != {len}")));
        }
        match block {
            Block::SectionHeader(shb) => {
                // N3
                if shb.major_version != 1 {
                    return Err(fail(format!("version {}", shb.major_version)));
                }
                options(&shb.options, &raw[24..raw.len() - 4], be).map_err(fail)?;
                ng.be = be;
                ng.ifaces.clear();
            }
            Block::InterfaceDescription(idb) => {
                // N6
                if ng.ifaces.len() >= MAX_INTERFACES as usize {
                    return Err(fail("too many interfaces".into()));
                }
                let opts = options(&idb.options, &raw[16..raw.len() - 4], be).map_err(fail)?;
                let i = iface(idb.linktype.0 as u16, idb.snaplen, &opts, be).map_err(fail)?;
                ng.ifaces.push(i);
            }
            Block::EnhancedPacket(epb) => {
                let rec = ng
                    .packet(
                        epb.if_id,
                        epb.ts_high,
                        epb.ts_low,
                        epb.packet_data(),
                        epb.origlen,
                    )
                    .map_err(fail)?;
                recs.push(rec);
            }
            Block::SimplePacket(spb) => {
                // N8
                let i = ng.iface(0).map_err(fail)?;
                let mut caplen = (spb.origlen as usize).min(spb.data.len());
                if i.snaplen != 0 {
                    caplen = caplen.min(i.snaplen as usize);
                }
                recs.push(Rec {
                    ts_ns: ng.last_ts,
                    data: spb.data[..caplen].to_vec(),
                    orig_len: spb.origlen,
                    linktype: i.linktype,
                    interface: 0,
                });
            }
            Block::Unknown(u) if u32_at(raw, 0, be) == 2 => {
                // N7: interface (u16), drops (u16), ts high, ts low,
                // caplen, len, data.
                let body = u.data;
                if body.len() < 20 {
                    return Err(fail("packet block shorter than 32 bytes".into()));
                }
                let caplen = u32_at(body, 12, be) as usize;
                if caplen > body.len() - 20 {
                    return Err(fail(format!("caplen {caplen} overruns the block")));
                }
                let rec = ng
                    .packet(
                        u32::from(u16_at(body, 0, be)),
                        u32_at(body, 4, be),
                        u32_at(body, 8, be),
                        &body[20..20 + caplen],
                        u32_at(body, 16, be),
                    )
                    .map_err(fail)?;
                recs.push(rec);
            }
            _ => {}
        }
    }
    Ok(())
}
