//! [`ArchiveWriter`]: appends records to any `Write`.
//!
//! Design: buffered internally (like `PcapWriter`), so a raw `File` costs
//! one syscall per many records. Each record's header is built in a 30-byte
//! array and written with its data; nothing is allocated per record. A
//! timestamp out of range or data longer than 65505 bytes is refused with
//! `InvalidInput` before anything is written, so the output never holds a
//! record a reader would reject.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::record::{pack_device, DEVICE_LEN, HEADER_LEN, MAX_DATA_LEN};
use super::stamp::Stamp;
use sluice_capture::WRITE_BUFFER;

/// Writes archive records.
#[derive(Debug)]
pub struct ArchiveWriter<W: Write> {
    out: BufWriter<W>,
    records: u64,
    bytes: u64,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl ArchiveWriter<File> {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self::new(File::create(path)?))
    }
}

impl<W: Write> ArchiveWriter<W> {
    /// A writer over `w` (an archive has no file header: nothing is written
    /// until the first record).
    pub fn new(w: W) -> Self {
        ArchiveWriter {
            out: BufWriter::with_capacity(WRITE_BUFFER, w),
            records: 0,
            bytes: 0,
        }
    }

    /// Appends one record. Fails with `InvalidInput` for a stamp that
    /// [`Stamp::validate`] refuses or data longer than 65505 bytes.
    pub fn write(
        &mut self,
        stamp: &Stamp,
        device: &[u8; DEVICE_LEN],
        data: &[u8],
    ) -> io::Result<()> {
        stamp
            .validate()
            .map_err(|e| invalid(format!("timestamp: {e}")))?;
        self.write_encoded(&stamp.encode(), device, data)
    }

    /// [`write`](Self::write) with the device id as text (1-16 bytes, no
    /// NUL), zero-padded here.
    pub fn write_str(&mut self, stamp: &Stamp, device: &str, data: &[u8]) -> io::Result<()> {
        let d = pack_device(device.as_bytes()).map_err(|e| invalid(e.to_string()))?;
        self.write(stamp, &d, data)
    }

    /// Appends a record whose timestamp is already encoded (copied through
    /// from another archive; not checked).
    pub fn write_encoded(
        &mut self,
        stamp: &[u8; 12],
        device: &[u8; DEVICE_LEN],
        data: &[u8],
    ) -> io::Result<()> {
        if data.len() > MAX_DATA_LEN {
            return Err(invalid(format!(
                "record data of {} bytes is longer than the {MAX_DATA_LEN} a record can hold",
                data.len()
            )));
        }
        let len = HEADER_LEN + data.len(); // <= 65535
        let mut h = [0u8; HEADER_LEN];
        h[..2].copy_from_slice(&(len as u16).to_be_bytes());
        h[2..14].copy_from_slice(stamp);
        h[14..].copy_from_slice(device);
        self.out.write_all(&h)?;
        self.out.write_all(data)?;
        self.records += 1;
        self.bytes += len as u64;
        Ok(())
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Bytes written so far (headers and data).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Flushes buffered records to the inner writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the inner writer.
    pub fn finish(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_bytes() {
        let s = Stamp::parse_iso("2015-07-01T19:20:30.45+01:00").unwrap();
        let mut w = ArchiveWriter::new(Vec::new());
        w.write_str(&s, "dev", b"xyz").unwrap();
        assert_eq!((w.records(), w.bytes()), (1, 33));
        let v = w.finish().unwrap();
        let mut want = vec![0, 33];
        want.extend_from_slice(&[
            0x20, 0x15, 0x07, 0x01, 0x19, 0x20, 0x30, 0x45, 0, 0, 0x01, 0,
        ]);
        want.extend_from_slice(b"dev\0\0\0\0\0\0\0\0\0\0\0\0\0xyz");
        assert_eq!(v, want);
    }

    #[test]
    fn refuses_what_a_reader_would_reject() {
        let mut w = ArchiveWriter::new(Vec::new());
        let s = Stamp::parse_iso("2015-07-01T19:20:30Z").unwrap();
        let bad = Stamp { month: 13, ..s };
        let e = w.write_str(&bad, "d", b"").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(e.to_string(), "timestamp: month 13 out of range (1..=12)");
        let e = w
            .write_str(&s, "d", &vec![0; MAX_DATA_LEN + 1])
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(w.write_str(&s, "", b"").is_err());
        assert!(w.write_str(&s, "seventeen bytes!!", b"").is_err());
        w.write_str(&s, "d", &vec![7; MAX_DATA_LEN]).unwrap();
        assert_eq!((w.records(), w.bytes()), (1, 65_535));
        assert_eq!(w.finish().unwrap()[..2], [0xff, 0xff]);
    }
}
