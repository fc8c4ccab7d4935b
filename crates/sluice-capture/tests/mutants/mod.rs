//! Seeded mutants of captures, shared by the mutation and differential
//! tests: bytes flipped or set, cuts, 4-byte fields set to 0, all ones,
//! a small length or random in either byte order, ranges deleted and
//! duplicated, most of them aimed at record and block boundaries.

use sluice_capture::CaptureReader;
use sluice_testkit::Rng;
use std::io::Cursor;

/// Record and block start offsets (our reader's view): mutations aimed
/// here hit length and type fields rather than payload.
pub fn boundaries(bytes: &[u8]) -> Vec<usize> {
    let mut v = vec![0, 4, 8, 12, 16, 20, 24];
    if let Ok(mut r) = CaptureReader::from_reader(Box::new(Cursor::new(bytes.to_vec())), "orig") {
        v.push(r.offset() as usize);
        while let Ok(Some(_)) = r.next_packet() {
            v.push(r.offset() as usize);
        }
    }
    v
}

pub fn mutate(rng: &mut Rng, orig: &[u8], marks: &[usize]) -> Vec<u8> {
    let mut v = orig.to_vec();
    for _ in 0..1 + rng.below(3) {
        if v.is_empty() {
            break;
        }
        let at = if rng.below(4) == 0 {
            rng.below(v.len())
        } else {
            (marks[rng.below(marks.len())] + rng.below(32)).min(v.len() - 1)
        };
        match rng.below(9) {
            0 => v[at] ^= 1 << rng.below(8),
            1 => v[at] = rng.next_u64() as u8,
            2 => v.truncate(rng.below(v.len())),
            3..=6 => {
                let val = match rng.below(4) {
                    0 => 0u32,
                    1 => u32::MAX,
                    2 => rng.below(80) as u32,
                    _ => rng.next_u64() as u32,
                };
                let bytes = if rng.below(2) == 0 {
                    val.to_le_bytes()
                } else {
                    val.to_be_bytes()
                };
                for (i, b) in bytes.iter().enumerate() {
                    if let Some(x) = v.get_mut(at + i) {
                        *x = *b;
                    }
                }
            }
            7 => {
                let end = (at + 1 + rng.below(64)).min(v.len());
                v.drain(at..end);
            }
            _ => {
                let end = (at + 1 + rng.below(64)).min(v.len());
                let copy = v[at..end].to_vec();
                v.splice(at..at, copy);
            }
        }
    }
    v
}
