//! Fuzzes the time-series archive: the bytes are read to the end through
//! `ArchiveReader` (whole reads and small chunks), dumped in every data
//! encoding, and their first 12 bytes go through `Stamp::decode` and
//! `decode_micros`, which must agree; a stamp that decodes must encode back
//! to the same bytes (`-00:00` excepted: it is stored as `+00:00`). UTF-8
//! input also goes through `Stamp::parse_iso`, whose stamps must print and
//! parse back unchanged.
#![no_main]

use std::io::{self, Cursor};

use libfuzzer_sys::fuzz_target;
use sluice_archive::{decode_micros, dump_reader, ArchiveReader, DataEncoding, Stamp, HEADER_LEN};

#[path = "common.rs"]
mod common;
use common::Trickle;

fn drain(data: &[u8]) {
    for chunk in [0, 1 + data.len() % 61] {
        let mut r = if chunk == 0 {
            ArchiveReader::from_reader("fuzz", Cursor::new(data.to_vec()))
        } else {
            ArchiveReader::from_reader(
                "fuzz",
                Trickle {
                    data: Cursor::new(data.to_vec()),
                    chunk,
                },
            )
        };
        let mut bytes = 0usize;
        loop {
            match r.next_record() {
                Ok(Some(rec)) => {
                    bytes += HEADER_LEN + rec.data.len();
                    assert!(bytes <= data.len(), "more record bytes than input");
                    assert!(rec.stamp.validate().is_ok(), "unchecked stamp");
                    assert_eq!(decode_micros(&rec.stamp.encode()), Ok(rec.unix_micros()));
                }
                Ok(None) => {
                    assert!(matches!(r.next_record(), Ok(None)));
                    assert_eq!(r.offset(), data.len() as u64, "stopped early");
                    break;
                }
                Err(e) => {
                    let again = r.next_record().expect_err("error not repeated");
                    assert_eq!(again.to_string(), e.to_string());
                    assert_eq!(e.record, r.records_read() + 1);
                    break;
                }
            }
        }
    }
    for enc in DataEncoding::ALL {
        let mut r = ArchiveReader::from_reader("fuzz", Cursor::new(data.to_vec()));
        let _ = dump_reader(&mut r, &mut io::sink(), enc);
    }
}

fn stamp(data: &[u8]) {
    if let Some(b) = data.first_chunk::<12>() {
        let slow = Stamp::decode(b);
        assert_eq!(decode_micros(b), slow.clone().map(|s| s.unix_micros()));
        if let Ok(s) = slow {
            let mut back = s.encode();
            if b[10..] == [0x80, 0] {
                back[10] = 0x80;
            }
            assert_eq!(&back, b);
            assert_eq!(Stamp::parse_iso(&s.to_iso()), Ok(s));
        }
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(s) = Stamp::parse_iso(text) {
            assert_eq!(Stamp::parse_iso(&s.to_iso()), Ok(s));
            assert_eq!(Stamp::decode(&s.encode()), Ok(s));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    stamp(data);
    drain(data);
});
