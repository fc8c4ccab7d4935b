//! Runs the payload rewriter over every frame of real captures.
//!
//! Real traffic has what synthetic frames lack: offloaded (partial)
//! checksums, snaplen cuts, fragments, odd options, garbage. For every
//! Ethernet frame of the little-endian microsecond pcaps in the repository's
//! testdata directory (tcpreplay's `test.pcap` and zeek's
//! `http_bro.org.pcap` at least), `Zero` and `Truncate` must not panic,
//! and a frame whose checksums verified before must still verify after.
//!
//! The pcap reader is a dozen lines written here: this crate must not
//! depend on the capture crate.

use std::path::{Path, PathBuf};

use sluice_wire::{flow_hash, parse_layers, rewrite_payload, verify_checksums, PayloadMode};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/pcap");
const REQUIRED: [&str; 2] = ["tcpreplay__test.pcap", "zeek__http_bro.org.pcap"];

/// The frames of a little-endian microsecond pcap with linktype Ethernet,
/// or `None` for any other file. A record cut by the end of the file ends
/// the list.
fn read_ethernet_pcap(path: &Path) -> Option<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path).ok()?;
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    if u32_at(0)? != 0xa1b2_c3d4 || u32_at(4)? & 0xffff != 2 || u32_at(20)? != 1 {
        return None;
    }
    let mut frames = Vec::new();
    let mut at = 24;
    while let Some(incl) = u32_at(at + 8) {
        let start = at + 16;
        let Some(frame) = bytes.get(start..start + incl as usize) else {
            break;
        };
        frames.push(frame.to_vec());
        at = start + incl as usize;
    }
    Some(frames)
}

fn testdata_dir() -> PathBuf {
    let dir = PathBuf::from(DIR);
    assert!(
        dir.is_dir(),
        "testdata directory {DIR} is missing: it is part of the repository"
    );
    dir
}

#[derive(Default, Debug)]
struct Counts {
    frames: usize,
    valid_before: usize,
    zeroed: usize,
    truncated: usize,
}

fn check_capture(name: &str, frames: &[Vec<u8>], counts: &mut Counts) {
    for (i, frame) in frames.iter().enumerate() {
        counts.frames += 1;
        let valid_before = verify_checksums(frame).is_ok();
        counts.valid_before += usize::from(valid_before);
        let layers = parse_layers(frame);
        let _ = flow_hash(frame);

        let mut z = frame.clone();
        let r = rewrite_payload(&mut z, PayloadMode::Zero);
        assert_eq!(
            r.new_len,
            frame.len(),
            "{name} #{}: Zero changed the length",
            i + 1
        );
        if r.changed {
            counts.zeroed += 1;
            let l4 = layers.l4.expect("changed without L4");
            assert!(z[l4.payload_offset..l4.end()].iter().all(|&b| b == 0));
            assert_eq!(
                z[..l4.offset],
                frame[..l4.offset],
                "{name} #{}: headers touched",
                i + 1
            );
        } else {
            assert_eq!(&z, frame, "{name} #{}: unchanged but modified", i + 1);
        }
        if valid_before {
            assert_eq!(verify_checksums(&z), Ok(()), "{name} #{} after Zero", i + 1);
        }

        let mut t = frame.clone();
        let r = rewrite_payload(&mut t, PayloadMode::Truncate);
        assert!(r.new_len <= frame.len());
        t.truncate(r.new_len);
        if r.changed {
            counts.truncated += 1;
            let l4 = parse_layers(&t).l4.expect("L4 after Truncate");
            assert_eq!(
                (l4.payload_len, l4.end()),
                (0, t.len()),
                "{name} #{}",
                i + 1
            );
            assert_eq!(
                flow_hash(&t),
                flow_hash(frame),
                "{name} #{}: flow changed",
                i + 1
            );
        } else {
            assert_eq!(&t, frame, "{name} #{}: unchanged but modified", i + 1);
        }
        if valid_before {
            assert_eq!(
                verify_checksums(&t),
                Ok(()),
                "{name} #{} after Truncate",
                i + 1
            );
        }
    }
}

#[test]
fn rewrite_real_captures() {
    let dir = testdata_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pcap"))
        .collect();
    names.sort();
    for required in REQUIRED {
        assert!(
            names.iter().any(|n| n == required),
            "{required} missing from {DIR}"
        );
    }
    let mut total = Counts::default();
    for name in &names {
        let Some(frames) = read_ethernet_pcap(&dir.join(name)) else {
            assert!(
                !REQUIRED.contains(&name.as_str()),
                "{name} is not a LE µs Ethernet pcap"
            );
            continue;
        };
        let mut counts = Counts::default();
        check_capture(name, &frames, &mut counts);
        eprintln!("{name}: {counts:?}");
        if REQUIRED.contains(&name.as_str()) {
            assert!(
                counts.frames > 100 && counts.zeroed > 10 && counts.truncated > 10,
                "{name}: {counts:?}"
            );
        }
        total.frames += counts.frames;
        total.valid_before += counts.valid_before;
        total.zeroed += counts.zeroed;
        total.truncated += counts.truncated;
    }
    eprintln!("all: {total:?}");
    assert!(total.valid_before > 1000, "{total:?}");
}
