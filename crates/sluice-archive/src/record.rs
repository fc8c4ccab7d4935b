//! One archive record in memory: [`split_record`] over raw bytes
//! ([`RecordRef`]) and the reader's checked [`Record`]; device-id packing.
//!
//! Design: `split_record` is the single place that knows the record
//! framing (2-byte big-endian length including the 30-byte header, 12-byte
//! timestamp, 16-byte device id, data). It borrows, never copies, and
//! leaves the timestamp undecoded so a caller that only needs framing (an
//! IO thread counting whole records in a buffer) pays nothing for it.

use super::error::ArchiveErrorKind;
use super::stamp::Stamp;

pub use crate::HEADER_LEN;
/// Largest record: the length field is 16 bits.
pub const MAX_RECORD_LEN: usize = u16::MAX as usize;
/// Largest data field: [`MAX_RECORD_LEN`] − [`HEADER_LEN`] = 65505 bytes.
pub const MAX_DATA_LEN: usize = MAX_RECORD_LEN - HEADER_LEN;
/// Bytes of the device-id field.
pub const DEVICE_LEN: usize = 16;

/// The fields of one record, borrowed from the buffer it lies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// The encoded timestamp (not yet checked; see [`Stamp::decode`]).
    pub stamp: &'a [u8; 12],
    /// The device id, zero-padded on the right.
    pub device: &'a [u8; DEVICE_LEN],
    /// The data (record length − 30 bytes).
    pub data: &'a [u8],
}

/// Parses the record at the start of `buf`. Returns the record and its
/// length (the bytes to skip to the next one), `Ok(None)` when `buf` holds
/// less than one whole record (read more and call again), or
/// [`ArchiveErrorKind::BadLength`] for a length field below 30.
#[inline]
pub fn split_record(buf: &[u8]) -> Result<Option<(RecordRef<'_>, usize)>, ArchiveErrorKind> {
    let Some(&[hi, lo]) = buf.first_chunk::<2>() else {
        return Ok(None);
    };
    let len = u16::from_be_bytes([hi, lo]);
    let n = usize::from(len);
    if n < HEADER_LEN {
        return Err(ArchiveErrorKind::BadLength { len });
    }
    let Some(rec) = buf.get(2..n) else {
        return Ok(None);
    };
    let Some((stamp, rest)) = rec.split_first_chunk::<12>() else {
        return Ok(None);
    };
    let Some((device, data)) = rest.split_first_chunk::<DEVICE_LEN>() else {
        return Ok(None);
    };
    Ok(Some((
        RecordRef {
            stamp,
            device,
            data,
        },
        n,
    )))
}

/// A record as [`ArchiveReader`](super::ArchiveReader) hands it out: the
/// timestamp decoded and checked, the rest borrowed from the reader's
/// buffer until the next call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// The decoded timestamp.
    pub stamp: Stamp,
    /// The device id as stored: zero-padded to 16 bytes.
    pub device: &'a [u8; DEVICE_LEN],
    /// The data field.
    pub data: &'a [u8],
    /// Byte offset of the record (its length field) in the archive.
    pub offset: u64,
}

impl<'a> Record<'a> {
    /// The timestamp as microseconds since 1970 (UTC).
    #[inline]
    pub fn unix_micros(&self) -> i64 {
        self.stamp.unix_micros()
    }

    /// The device id without its zero padding.
    #[inline]
    pub fn device_id(&self) -> &'a [u8] {
        trim_device(self.device)
    }
}

/// A device id without the zero bytes at its end.
#[inline]
pub fn trim_device(device: &[u8; DEVICE_LEN]) -> &[u8] {
    let end = device.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &device[..end]
}

/// Why a device id cannot be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceIdError {
    /// Zero bytes.
    #[error("device id is empty")]
    Empty,
    /// More than 16 bytes.
    #[error("device id is {0} bytes long, at most 16 fit")]
    TooLong(usize),
    /// A NUL byte (it would be lost to the zero padding).
    #[error("device id contains a NUL byte (at byte {0})")]
    Nul(usize),
}

/// The 16-byte field for a device id of 1-16 bytes without NUL bytes,
/// zero-padded on the right.
pub fn pack_device(id: &[u8]) -> Result<[u8; DEVICE_LEN], DeviceIdError> {
    if id.is_empty() {
        return Err(DeviceIdError::Empty);
    }
    if id.len() > DEVICE_LEN {
        return Err(DeviceIdError::TooLong(id.len()));
    }
    if let Some(i) = id.iter().position(|&b| b == 0) {
        return Err(DeviceIdError::Nul(i));
    }
    let mut out = [0; DEVICE_LEN];
    out[..id.len()].copy_from_slice(id);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(len: u16, fill: usize) -> Vec<u8> {
        let mut v = len.to_be_bytes().to_vec();
        v.extend((0..fill).map(|i| i as u8));
        v
    }

    #[test]
    fn splits_whole_records_only() {
        let v = record(33, 31);
        let (r, n) = split_record(&v).unwrap().unwrap();
        assert_eq!(n, 33);
        assert_eq!(r.stamp[0], 0);
        assert_eq!(r.device[0], 12);
        assert_eq!(r.data, &[28, 29, 30]);
        // One byte more than a record: the record, and the rest is left.
        let mut w = v.clone();
        w.push(0);
        assert_eq!(split_record(&w).unwrap().unwrap().1, 33);
        // One byte short, or no length yet: need more.
        assert!(matches!(split_record(&v[..32]), Ok(None)));
        assert!(matches!(split_record(&v[..1]), Ok(None)));
        assert!(matches!(split_record(&[]), Ok(None)));
        // The smallest record has no data.
        let empty = record(30, 28);
        let (r, n) = split_record(&empty).unwrap().unwrap();
        assert_eq!((r.data.len(), n), (0, 30));
    }

    #[test]
    fn refuses_lengths_below_the_header() {
        for len in [0u16, 1, 2, 29] {
            let v = record(len, 40);
            let got = split_record(&v);
            assert!(
                matches!(got, Err(ArchiveErrorKind::BadLength { len: l }) if l == len),
                "{got:?}"
            );
        }
    }

    #[test]
    fn device_ids() {
        let d = pack_device(b"BW.RJOB..EHZ").unwrap();
        assert_eq!(&d[..12], b"BW.RJOB..EHZ");
        assert_eq!(d[12..], [0; 4]);
        assert_eq!(trim_device(&d), b"BW.RJOB..EHZ");
        assert_eq!(trim_device(&pack_device(&[b'x'; 16]).unwrap()), [b'x'; 16]);
        assert_eq!(trim_device(&[0; 16]), b"");
        assert_eq!(pack_device(b""), Err(DeviceIdError::Empty));
        assert_eq!(pack_device(&[b'x'; 17]), Err(DeviceIdError::TooLong(17)));
        assert_eq!(pack_device(b"a\0b"), Err(DeviceIdError::Nul(1)));
    }
}
