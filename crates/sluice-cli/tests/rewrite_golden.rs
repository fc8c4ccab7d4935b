//! Header rewriting against tcprewrite's own test suite: its golden
//! outputs (`testdata/tcpreplay-suite/`, tcpreplay's `test/test2.rewrite_*`, the
//! little-endian set) made from the same `test.pcap` with the same options.
//! Every frame must be byte-identical except the ones each case names, and
//! those are checked for what sluice does instead (and why).

mod common;
use common::*;
use sluice_wire::verify_checksums;
use std::path::{Path, PathBuf};

fn golden(name: &str) -> PathBuf {
    sluice_testkit::testdata("tcpreplay-suite").join(format!("test2.rewrite_{name}.pcap.gz"))
}

type Frames = Vec<Vec<u8>>;

/// Replays `input` with `args` into a pcap; returns (input, sluice, golden)
/// frames and the 1-based numbers of the frames that differ.
fn compare(input: &Path, name: &str, args: &[&str]) -> (Frames, Frames, Frames, Vec<usize>) {
    let d = tmpdir(&format!("golden-{name}"));
    let out = d.join("out.pcap");
    let o = run_to_pcap(&["replay", input.to_str().unwrap()], &out, args);
    assert!(o.status.success(), "{name}: {}", stderr(&o));
    let (inp, got, want) = (frames_of(input), frames_of(&out), frames_of(&golden(name)));
    assert_eq!(got.len(), want.len(), "{name}: frame count");
    let diff = (0..got.len())
        .filter(|&i| got[i] != want[i])
        .map(|i| i + 1)
        .collect();
    (inp, got, want, diff)
}

/// Frames of test.pcap whose TCP/UDP checksums are wrong in the trace.
const BAD_L4: [usize; 3] = [19, 27, 32];
/// EoMPLS frames: a VLAN tag inside the pseudowire's own Ethernet frame.
const EOMPLS: [usize; 10] = [142, 150, 157, 170, 174, 175, 176, 177, 178, 179];

#[test]
fn field_rewrites_are_byte_identical_to_tcprewrite() {
    let t = testdata("tcpreplay__test.pcap");
    for (name, args) in [
        ("seed", &["--seed", "55"][..]),
        ("tos", &["--tos", "50"]),
        ("portmap", &["--portmap", "80:8080"]),
        ("range_portmap", &["--portmap", "1-100:49148"]),
        ("pnat", &["--pnat", "96.17.211.0/24:172.16.0.0/24"]),
        ("fixlen_pad", &["--fixlen", "pad"]),
        ("fixlen_trunc", &["--fixlen", "trunc"]),
        ("fixlen_del", &["--fixlen", "del"]),
    ] {
        let (inp, got, _, diff) = compare(&t, name, args);
        assert!(
            diff.is_empty(),
            "{name}: frames {diff:?} differ from tcprewrite's"
        );
        let changed = (0..got.len()).filter(|&i| got[i] != inp[i]).count();
        // The fixlen cases change nothing (test.pcap holds no cut frame).
        assert!(
            name.starts_with("fixlen") || changed > 0,
            "{name}: nothing rewritten"
        );
    }
}

/// tcprewrite recomputes every checksum after a TTL change or --mtu-trunc,
/// which silently repairs the ones the trace had wrong; sluice updates them
/// incrementally, so those stay wrong (--fixcsum gives tcprewrite's).
#[test]
fn ttl_and_mtu_match_tcprewrite_except_where_it_repairs_bad_checksums() {
    let t = testdata("tcpreplay__test.pcap");
    for (name, args) in [
        ("1ttl", &["--ttl", "58"][..]),
        ("2ttl", &["--ttl=+58"]),
        ("3ttl", &["--ttl=-58"]),
        ("mtutrunc", &["--mtu-trunc", "--mtu", "300"]),
    ] {
        let (inp, got, want, diff) = compare(&t, name, args);
        let expect: Vec<usize> = if name == "mtutrunc" {
            BAD_L4[1..].to_vec()
        } else {
            BAD_L4.to_vec()
        };
        assert_eq!(diff, expect, "{name}");
        for n in expect {
            assert!(verify_checksums(&inp[n - 1]).is_err(), "{name} #{n}");
            assert!(verify_checksums(&got[n - 1]).is_err(), "{name} #{n}");
            assert!(verify_checksums(&want[n - 1]).is_ok(), "{name} #{n}");
        }
    }
}

/// tcprewrite leaves a frame alone when its IP length disagrees with the
/// captured bytes (Ethernet padding, a trailer, a cut); sluice computes the
/// checksums it can over the IP length.
#[test]
fn fixcsum_matches_tcprewrite_and_also_fixes_padded_frames() {
    let t = testdata("tcpreplay__test.pcap");
    let (inp, got, want, diff) = compare(&t, "fixcsum", &["--fixcsum"]);
    assert_eq!(diff, [11, 12, 14]);
    for n in [11, 12, 14] {
        assert_eq!(want[n - 1], inp[n - 1], "tcprewrite left #{n} alone");
    }
    for n in [12, 14] {
        assert!(verify_checksums(&inp[n - 1]).is_err(), "#{n}");
        assert!(verify_checksums(&got[n - 1]).is_ok(), "#{n}");
    }
}

/// On EoMPLS frames tcprewrite adds and deletes the tag inside the
/// pseudowire; sluice edits the outermost Ethernet header, the one the
/// device under test sees.
#[test]
fn vlan_add_and_del_match_tcprewrite_outside_pseudowires() {
    let t = testdata("tcpreplay__test.pcap");
    let args = [
        "--enet-vlan",
        "add",
        "--enet-vlan-tag",
        "45",
        "--enet-vlan-cfi",
        "1",
        "--enet-vlan-pri",
        "5",
    ];
    let (inp, got, _, diff) = compare(&t, "config", &args);
    assert_eq!(diff, EOMPLS);
    for n in EOMPLS {
        // Outer tag: TPID 0x8100, TCI pri 5, cfi 1, tag 45 = 0xb02d.
        assert_eq!(got[n - 1][12..16], [0x81, 0x00, 0xb0, 0x2d], "#{n}");
        assert_eq!(got[n - 1][16..], inp[n - 1][12..], "#{n}");
    }
    let (inp, got, _, diff) = compare(&golden("config"), "vlandel", &["--enet-vlan", "del"]);
    assert_eq!(diff, EOMPLS);
    for n in EOMPLS {
        assert_eq!(got[n - 1], inp[n - 1], "#{n}: no outer tag to delete");
    }
}
