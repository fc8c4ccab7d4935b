//! Shared by the fuzz targets: read arbitrary bytes to the end through
//! `CaptureReader::from_reader`, once in whole reads and once in small
//! chunks (different buffer-refill paths), checking the reader's promises.

use std::io::{Cursor, Read};

use sluice_capture::CaptureReader;
/// Hands out at most `chunk` bytes per `read` (the mutation suites' own).
pub use sluice_testkit::Trickle;

/// Reads `data` to the end; panics (a fuzzer finding) if the reader hands
/// out more than the input holds, does not end, or does not repeat an error.
#[allow(dead_code)] // not every target drains captures
pub fn drain(data: &[u8]) {
    drain_as(data, "fuzz");
}

/// [`drain`] for a capture named `name` (ERF and TSH are known by name).
#[allow(dead_code)]
pub fn drain_as(data: &[u8], name: &str) {
    let gzip = data.starts_with(&[0x1f, 0x8b]);
    for chunk in [0, 1 + data.len() % 61] {
        let src: Box<dyn Read + Send> = if chunk == 0 {
            Box::new(Cursor::new(data.to_vec()))
        } else {
            Box::new(Trickle {
                data: Cursor::new(data.to_vec()),
                chunk,
            })
        };
        let Ok(mut r) = CaptureReader::from_reader(src, name) else {
            continue;
        };
        let mut bytes = 0usize;
        loop {
            match r.next_packet() {
                Ok(Some(p)) => {
                    bytes += p.data.len();
                    if !gzip {
                        assert!(bytes <= data.len(), "more packet bytes than input");
                        assert!(
                            r.packets_read() <= data.len() as u64 / 16 + 1,
                            "more packets than the input can hold"
                        );
                    }
                }
                Ok(None) => {
                    assert!(matches!(r.next_packet(), Ok(None)));
                    break;
                }
                Err(e) => {
                    let again = r.next_packet().expect_err("error not repeated");
                    assert_eq!(again.to_string(), e.to_string());
                    break;
                }
            }
        }
    }
}
