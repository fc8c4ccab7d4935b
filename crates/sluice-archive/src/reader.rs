//! [`ArchiveReader`]: streaming, lending record reader.
//!
//! Design: the capture reader's own buffer (`StreamBuf`) under
//! [`split_record`]: records are handed out as slices of that buffer, valid
//! until the next call, so memory stays at the buffer size (at most 1 MiB;
//! a record is at most 64 KiB) whatever the file size. Every record's
//! timestamp is decoded and checked before it is handed out. Errors are
//! sticky: after one, `next_record` repeats it without reading further.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::error::{ArchiveError, ArchiveErrorKind};
use super::record::{pack_device, split_record, trim_device, Record, HEADER_LEN};
use super::stamp::Stamp;
use sluice_capture::StreamBuf;

/// Streaming reader of a time-series archive.
///
/// ```no_run
/// # fn main() -> Result<(), sluice_archive::ArchiveError> {
/// use sluice_archive::ArchiveReader;
/// let mut r = ArchiveReader::open("series.arc".as_ref())?;
/// while let Some(rec) = r.next_record()? {
///     println!("{} {} bytes", rec.stamp, rec.data.len());
/// }
/// # Ok(()) }
/// ```
pub struct ArchiveReader {
    name: String,
    buf: StreamBuf,
    records: u64,
    failed: Option<ArchiveError>,
}

impl fmt::Debug for ArchiveReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArchiveReader")
            .field("name", &self.name)
            .field("offset", &self.offset())
            .field("records_read", &self.records)
            .field("failed", &self.failed.is_some())
            .finish()
    }
}

impl ArchiveReader {
    /// Opens an archive file (nothing is read yet).
    pub fn open(path: &Path) -> Result<Self, ArchiveError> {
        let name = path.display().to_string();
        match File::open(path) {
            Ok(f) => Ok(Self::from_reader(name, f)),
            Err(e) => Err(ArchiveError {
                file: name,
                offset: 0,
                record: 0,
                kind: ArchiveErrorKind::Io(e),
            }),
        }
    }

    /// Reads an archive from any byte stream; `name` is used in errors.
    pub fn from_reader(name: impl Into<String>, r: impl Read + Send + 'static) -> Self {
        ArchiveReader {
            name: name.into(),
            buf: StreamBuf::new(Box::new(r)),
            records: 0,
            failed: None,
        }
    }

    /// The name used in errors.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Byte offset of the next record (= bytes consumed so far).
    pub fn offset(&self) -> u64 {
        self.buf.offset()
    }

    /// Records handed out so far.
    pub fn records_read(&self) -> u64 {
        self.records
    }

    fn fail(&mut self, offset: u64, kind: ArchiveErrorKind) -> ArchiveError {
        let e = ArchiveError {
            file: self.name.clone(),
            offset,
            record: self.records + 1,
            kind,
        };
        self.failed = Some(e.duplicate());
        e
    }

    /// The next record, `Ok(None)` at the end of the archive (an empty file
    /// has no records), or an error naming the record and its byte offset:
    /// a length below 30, a timestamp that does not decode, or a last record
    /// cut short (every earlier record is returned first; the error's
    /// [`is_truncation`](ArchiveError::is_truncation) is true).
    pub fn next_record(&mut self) -> Result<Option<Record<'_>>, ArchiveError> {
        if let Some(e) = &self.failed {
            return Err(e.duplicate());
        }
        let offset = self.buf.offset();
        let have = match self.buf.fill(HEADER_LEN) {
            Ok(n) => n,
            Err(e) => return Err(self.fail(offset, ArchiveErrorKind::Io(e))),
        };
        let len = match split_record(self.buf.avail()) {
            Ok(Some((_, len))) => len,
            Ok(None) if have == 0 => return Ok(None),
            Ok(None) if have == 1 => {
                return Err(self.fail(offset, ArchiveErrorKind::TruncatedLength { got: 1 }))
            }
            Ok(None) => {
                // Not all of it is buffered yet: read the rest of the record.
                let need = usize::from(u16::from_be_bytes([
                    self.buf.avail()[0],
                    self.buf.avail()[1],
                ]));
                match self.buf.fill(need) {
                    Ok(n) if n >= need => need,
                    Ok(n) => {
                        let kind = ArchiveErrorKind::Truncated {
                            need: need as u64,
                            got: n as u64,
                        };
                        return Err(self.fail(offset, kind));
                    }
                    Err(e) => return Err(self.fail(offset, ArchiveErrorKind::Io(e))),
                }
            }
            Err(kind) => return Err(self.fail(offset, kind)),
        };
        let pos = self.buf.pos();
        let Some(Ok(Some((rec, _)))) = self.buf.storage().get(pos..pos + len).map(split_record)
        else {
            // Unreachable: `len` bytes are buffered and framed a record.
            let kind = ArchiveErrorKind::Truncated {
                need: len as u64,
                got: 0,
            };
            return Err(self.fail(offset, kind));
        };
        let stamp = match Stamp::decode(rec.stamp) {
            Ok(s) => s,
            Err(e) => return Err(self.fail(offset, ArchiveErrorKind::BadStamp(e))),
        };
        if let Err(e) = pack_device(trim_device(rec.device)) {
            return Err(self.fail(offset, ArchiveErrorKind::BadDevice(e)));
        }
        self.buf.consume(len);
        self.records += 1;
        let storage = self.buf.storage();
        match storage.get(pos..pos + len).map(split_record) {
            Some(Ok(Some((rec, _)))) => Ok(Some(Record {
                stamp,
                device: rec.device,
                data: rec.data,
                offset,
            })),
            _ => Ok(None), // unreachable: the same bytes framed a record above
        }
    }
}
