//! Deterministic mutation test: seeded random damage to every small
//! testdata capture (`mutants`: flipped bytes, cuts, 4-byte fields set,
//! deleted and duplicated ranges), each mutant read to
//! the end through `from_reader`, sometimes in tiny read chunks. The reader
//! must never panic, must end (packets <= bytes / 16 + 1), must not hand out
//! more packet bytes than the input has, and after an error must repeat it.

mod mutants;

use mutants::{boundaries, mutate};
use sluice_testkit::{Rng, Trickle};
use std::io::{self, Cursor, Read};
use std::mem::discriminant;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use flate2::write::GzEncoder;
use flate2::Compression;
use sluice_capture::CaptureReader;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/pcap");
const MAX_FILE: u64 = 100 * 1024;
/// Mutation work per file in input bytes: a file gets about this many
/// bytes' worth of mutants, within [`MIN_MUTANTS`, `MAX_MUTANTS`] (small
/// files are cheap and dense in structure; this keeps the debug run short).
const BYTES_PER_FILE: usize = 3_000_000;
const MIN_MUTANTS: usize = 200;
const MAX_MUTANTS: usize = 3_000;

/// Reads a mutant to the end; returns a description of any misbehaviour.
/// `expand` bounds how much larger the decoded stream can be (1 for plain
/// captures; deflate's maximum ratio for gzip).
fn check(bytes: Vec<u8>, chunk: usize, expand: usize) -> Result<(), String> {
    let len = bytes.len() * expand;
    let src: Box<dyn Read + Send> = if chunk == 0 {
        Box::new(Cursor::new(bytes))
    } else {
        Box::new(Trickle {
            data: Cursor::new(bytes),
            chunk,
        })
    };
    let Ok(mut r) = CaptureReader::from_reader(src, "mutant") else {
        return Ok(());
    };
    let limit = len as u64 / 16 + 1;
    let mut data_bytes = 0usize;
    loop {
        match r.next_packet() {
            Ok(Some(p)) => {
                // Packet bytes come from distinct parts of the input.
                data_bytes += p.data.len();
                if data_bytes > len {
                    return Err(format!("{data_bytes} packet bytes from a {len}-byte input"));
                }
                if r.packets_read() > limit {
                    return Err(format!("more than {limit} packets from {len} bytes"));
                }
                if r.offset() > len as u64 {
                    return Err(format!("offset {} past the {len}-byte input", r.offset()));
                }
            }
            Ok(None) => {
                return match r.next_packet() {
                    Ok(None) => Ok(()),
                    _ => Err("Ok(None) not repeated".into()),
                }
            }
            Err(e) => {
                for _ in 0..2 {
                    match r.next_packet() {
                        Err(again)
                            if discriminant(&again.kind) == discriminant(&e.kind)
                                && again.offset == e.offset => {}
                        _ => return Err(format!("error `{e}` not repeated")),
                    }
                }
                return Ok(());
            }
        }
    }
}

fn run(name: &str, orig: &[u8], mutants: usize, expand: usize) {
    let marks = boundaries(orig);
    let seed = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let mut rng = Rng(seed);
    for i in 0..mutants {
        let m = mutate(&mut rng, orig, &marks);
        let chunk = match rng.below(4) {
            0 => 1 + rng.below(40),
            _ => 0,
        };
        match catch_unwind(AssertUnwindSafe(|| check(m, chunk, expand))) {
            Ok(Ok(())) => {}
            Ok(Err(why)) => panic!("{name} mutant {i} (seed {seed:#x}): {why}"),
            Err(_) => panic!("{name} mutant {i} (seed {seed:#x}, chunk {chunk}): reader panicked"),
        }
    }
}

fn small_files() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(DIR);
    assert!(
        dir.is_dir(),
        "testdata directory {} is missing",
        dir.display()
    );
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            (n.ends_with(".pcap") || n.ends_with(".pcapng"))
                && p.metadata().unwrap().len() < MAX_FILE
        })
        .map(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            (n, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    assert!(
        files.len() > 40,
        "expected the testdata captures, found {}",
        files.len()
    );
    files
}

/// Mutants for a file of `len` bytes. `SLUICE_MUTATION_SCALE=N` multiplies
/// it for soak runs (`cargo test --release -p sluice-capture --test
/// mutations` with N = 100 runs about ten million mutants).
fn budget(len: usize) -> usize {
    let scale = std::env::var("SLUICE_MUTATION_SCALE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .unwrap_or(1);
    (BYTES_PER_FILE / len.max(1)).clamp(MIN_MUTANTS, MAX_MUTANTS) * scale
}

/// Half of the files (alternating by name), so two test threads share the
/// work evenly.
fn half(part: usize) {
    for (name, bytes) in small_files().iter().skip(part).step_by(2) {
        run(name, bytes, budget(bytes.len()), 1);
    }
}

#[test]
fn mutated_captures_never_panic_or_hang_part_1() {
    half(0);
}

#[test]
fn mutated_captures_never_panic_or_hang_part_2() {
    half(1);
}

#[test]
fn mutated_gzip_never_panics_or_hangs() {
    for (name, bytes) in small_files()
        .iter()
        .filter(|(n, _)| n == "tcpdump__dns_tcp.pcap" || n == "zeek__vlan-pcp-dei.pcapng")
    {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        io::Write::write_all(&mut e, bytes).unwrap();
        let gz = e.finish().unwrap();
        run(&format!("{name}.gz"), &gz, 300, 1100);
    }
}
