//! Reading an archive into large buffers of whole records (paper §V-B.1).
//!
//! The IO thread fills one buffer at a time with a single large `read`
//! sequence, then walks the length fields to find where the last complete
//! record ends; the bytes after it are carried to the front of the next
//! buffer, so no record is ever split between buffers and a consumer knows
//! exactly how many records a buffer holds. Only lengths are checked here
//! (cheap, ~1 ns per record); timestamps are decoded by the workers.

use super::SeriesError;
use sluice_archive::HEADER_LEN;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;

/// Smallest buffer: one record of the largest size must fit.
pub const MIN_BUFFER: usize = 1 << 16;

/// A buffer of whole records, as handed from the IO thread to a worker.
pub struct Filled {
    data: Box<[u8]>,
    /// Bytes of complete records at the front of `data`.
    len: usize,
    /// File offset of `data[0]`.
    pub file_offset: u64,
    /// Archive-wide index (0-based) of the first record in the buffer.
    pub first_record: u64,
    pub records: u32,
    /// Buffer sequence number (0, 1, 2, ...).
    pub seq: u64,
}

impl Filled {
    /// A buffer of `size` bytes, its pages faulted in now (before the run
    /// starts) rather than on the first fill.
    pub fn new(size: usize) -> Filled {
        let mut data = vec![0u8; size.max(MIN_BUFFER)].into_boxed_slice();
        for i in (0..data.len()).step_by(4096) {
            // black_box: the compiler may not drop a store of 0 into memory
            // it knows to be zeroed, and the store is what faults the page.
            data[i] = std::hint::black_box(0);
        }
        Filled {
            data,
            len: 0,
            file_offset: 0,
            first_record: 0,
            records: 0,
            seq: 0,
        }
    }

    /// The complete records.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.len]
    }

    pub fn capacity(&self) -> usize {
        self.data.len()
    }
}

pub struct ArchiveChunker {
    file: File,
    name: String,
    /// File offset of the next byte `read` returns.
    read_offset: u64,
    /// Bytes read past the last complete record, carried to the next buffer.
    carry: Vec<u8>,
    records: u64,
    seq: u64,
    eof: bool,
    /// Bytes read from the file.
    pub bytes_read: u64,
}

impl ArchiveChunker {
    pub fn open(path: &Path) -> Result<Self, SeriesError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| SeriesError::Io {
            file: name.clone(),
            error: e,
        })?;
        Ok(ArchiveChunker {
            file,
            name,
            read_offset: 0,
            carry: Vec::with_capacity(1 << 16),
            records: 0,
            seq: 0,
            eof: false,
            bytes_read: 0,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Refills `buf` with the next whole records. Ok(false) when the
    /// archive is exhausted (nothing was put in `buf`).
    pub fn fill(&mut self, buf: &mut Filled) -> Result<bool, SeriesError> {
        let start = self.read_offset - self.carry.len() as u64;
        let mut len = self.carry.len();
        buf.data[..len].copy_from_slice(&self.carry);
        self.carry.clear();
        while len < buf.data.len() && !self.eof {
            match self.file.read(&mut buf.data[len..]) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    len += n;
                    self.read_offset += n as u64;
                    self.bytes_read += n as u64;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(SeriesError::Io {
                        file: self.name.clone(),
                        error: e,
                    })
                }
            }
        }
        // Walk the length fields to the last complete record.
        let data = &buf.data[..len];
        let mut at = 0usize;
        let mut count = 0u32;
        while at + 2 <= len {
            let rec = usize::from(u16::from_be_bytes([data[at], data[at + 1]]));
            if rec < HEADER_LEN {
                return Err(SeriesError::Record {
                    file: self.name.clone(),
                    record: self.records + u64::from(count) + 1,
                    offset: start + at as u64,
                    what: format!("bad length {rec} (a record is at least {HEADER_LEN} bytes)"),
                });
            }
            if at + rec > len {
                break;
            }
            at += rec;
            count += 1;
        }
        self.carry.extend_from_slice(&data[at..]);
        if count == 0 {
            if self.carry.is_empty() {
                return Ok(false);
            }
            // At end of file with a partial record: the archive was cut short.
            let have = self.carry.len();
            let want = if have >= 2 {
                format!(
                    "{} bytes",
                    u16::from_be_bytes([self.carry[0], self.carry[1]])
                )
            } else {
                "a length field".to_string()
            };
            return Err(SeriesError::Record {
                file: self.name.clone(),
                record: self.records + 1,
                offset: start,
                what: format!("truncated record: {have} bytes left, {want} expected"),
            });
        }
        buf.len = at;
        buf.file_offset = start;
        buf.first_record = self.records;
        buf.records = count;
        buf.seq = self.seq;
        self.seq += 1;
        self.records += u64::from(count);
        Ok(true)
    }

    /// Archive records handed out so far.
    pub fn records(&self) -> u64 {
        self.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(len: usize, tag: u8) -> Vec<u8> {
        let mut r = vec![tag; len];
        r[..2].copy_from_slice(&(len as u16).to_be_bytes());
        r
    }

    fn write(name: &str, bytes: &[u8]) -> tempfile::TempPath {
        let p = tempfile::Builder::new()
            .prefix(name)
            .tempfile()
            .unwrap()
            .into_temp_path();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    #[test]
    fn buffers_hold_whole_records_only() {
        let mut all = Vec::new();
        let mut lens = Vec::new();
        for i in 0..5000usize {
            let len = 30 + (i * 37) % 1400;
            lens.push(len);
            all.extend(record(len, i as u8));
        }
        let p = write("whole", &all);
        let mut c = ArchiveChunker::open(&p).unwrap();
        let mut buf = Filled::new(MIN_BUFFER);
        let (mut seen, mut bytes) = (0usize, Vec::new());
        while c.fill(&mut buf).unwrap() {
            assert_eq!(buf.first_record as usize, seen);
            assert_eq!(buf.file_offset as usize, bytes.len());
            let mut at = 0;
            for _ in 0..buf.records {
                let l = u16::from_be_bytes([buf.bytes()[at], buf.bytes()[at + 1]]) as usize;
                assert_eq!(l, lens[seen]);
                assert!(buf.bytes()[at + 2..at + l].iter().all(|&b| b == seen as u8));
                at += l;
                seen += 1;
            }
            assert_eq!(at, buf.bytes().len());
            bytes.extend_from_slice(buf.bytes());
        }
        assert_eq!(seen, 5000);
        assert_eq!(bytes, all);
    }

    #[test]
    fn bad_length_and_truncation_name_record_and_offset() {
        let mut all = record(40, 1);
        all.extend(record(50, 2));
        all.extend([0u8, 12]);
        all.extend([0u8; 10]);
        let p = write("bad", &all);
        let mut c = ArchiveChunker::open(&p).unwrap();
        let e = c
            .fill(&mut Filled::new(MIN_BUFFER))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("record 3") && e.contains("byte 90") && e.contains("bad length 12"),
            "{e}"
        );

        let mut cut = record(40, 1);
        cut.extend(&record(50, 2)[..20]);
        let p2 = write("cut", &cut);
        let mut c = ArchiveChunker::open(&p2).unwrap();
        let mut b = Filled::new(MIN_BUFFER);
        assert!(c.fill(&mut b).unwrap());
        assert_eq!(b.records, 1);
        let e = c.fill(&mut b).unwrap_err().to_string();
        assert!(
            e.contains("record 2") && e.contains("byte 40") && e.contains("truncated"),
            "{e}"
        );
    }
}
