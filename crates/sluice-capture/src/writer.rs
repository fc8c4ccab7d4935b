//! [`PcapWriter`]: little-endian nanosecond pcap output.
//!
//! Design: always the nanosecond variant (magic 0xa1b23c4d, v2.4) so that
//! timestamps from any reader round-trip exactly; always little-endian (what
//! every current tool writes). The writer buffers internally (a `BufWriter`
//! of [`WRITE_BUFFER`] bytes) so a raw `File` costs one syscall per many
//! packets; `into_inner` flushes and hands back the inner writer. Packets
//! are written as given: the caller decides about snaplen truncation.

use std::io::{self, Write};

use crate::linktype::LinkType;

/// Size of the writer's internal buffer.
pub const WRITE_BUFFER: usize = 256 * 1024;

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// libpcap's largest snapshot length (`MAXIMUM_SNAPLEN`): what a file
/// header advertises when every frame is kept whole, and what libpcap
/// takes a header's 0 or larger value for.
pub const MAX_SNAPLEN: u32 = 262_144;

/// How a record's fraction of a second is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamps {
    /// Nanoseconds, magic 0xa1b23c4d (sluice's own files).
    Nanos,
    /// Microseconds (cut, not rounded), magic 0xa1b2c3d4: libpcap's
    /// default, what tcprewrite writes.
    Micros,
    /// Nanoseconds under the microsecond magic: what `tcpreplay -w`
    /// writes (it reads with nanosecond precision and dumps the value as
    /// it is), kept for byte-identical output.
    NanosAsMicros,
}

/// Writes a little-endian pcap stream (nanosecond timestamps unless
/// [`PcapWriter::with_stamps`] says otherwise).
///
/// Records are buffered whole and handed to the inner writer only at
/// record boundaries, so output that stops (a flush, an error, a killed
/// process) never ends inside a record: [`PcapWriter::written`] bytes are
/// always whole records.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    stamps: Stamps,
    buf: Vec<u8>,
    packets: u64,
    /// Records in `written` (the rest are still buffered).
    packets_written: u64,
    /// Bytes handed to `out` without error (whole records).
    written: u64,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the 24-byte file header (magic 0xa1b23c4d, version 2.4,
    /// `snaplen`, `linktype`).
    pub fn new(w: W, linktype: LinkType, snaplen: u32) -> io::Result<Self> {
        Self::with_stamps(w, linktype, snaplen, Stamps::Nanos)
    }

    /// As [`PcapWriter::new`], with timestamps written as `stamps` says.
    pub fn with_stamps(w: W, linktype: LinkType, snaplen: u32, stamps: Stamps) -> io::Result<Self> {
        let magic: u32 = match stamps {
            Stamps::Nanos => 0xa1b2_3c4d,
            Stamps::Micros | Stamps::NanosAsMicros => 0xa1b2_c3d4,
        };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&magic.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&linktype.0.to_le_bytes());
        let mut buf = Vec::with_capacity(WRITE_BUFFER + 2048);
        buf.extend_from_slice(&h);
        Ok(PcapWriter {
            out: w,
            stamps,
            buf,
            packets: 0,
            packets_written: 0,
            written: 0,
        })
    }

    /// Appends one record. Fails with `InvalidInput` when the timestamp is
    /// past the 32-bit seconds field (year 2106) or `data` is longer than
    /// `u32::MAX`.
    pub fn write_packet(&mut self, ts_ns: u64, data: &[u8], orig_len: u32) -> io::Result<()> {
        self.write_packet_parts(ts_ns, &[data], orig_len)
    }

    /// Writes one record whose data is `parts` joined (headers in front of
    /// a payload kept elsewhere), without joining them in memory first.
    pub fn write_packet_parts(
        &mut self,
        ts_ns: u64,
        parts: &[&[u8]],
        orig_len: u32,
    ) -> io::Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let secs = u32::try_from(ts_ns / NANOS_PER_SEC).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("timestamp {ts_ns} ns is past the pcap 32-bit seconds field"),
            )
        })?;
        let mut frac = (ts_ns % NANOS_PER_SEC) as u32;
        if self.stamps == Stamps::Micros {
            frac /= 1_000;
        }
        let caplen = u32::try_from(len).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("packet of {len} bytes is too long for pcap"),
            )
        })?;
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&secs.to_le_bytes());
        h[4..8].copy_from_slice(&frac.to_le_bytes());
        h[8..12].copy_from_slice(&caplen.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.buf.extend_from_slice(&h);
        for p in parts {
            self.buf.extend_from_slice(p);
        }
        self.packets += 1;
        if self.buf.len() >= WRITE_BUFFER {
            self.drain()?;
        }
        Ok(())
    }

    /// Hands every buffered record to the inner writer and flushes it.
    pub fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.out.flush()
    }

    /// Bytes handed to the inner writer so far, all whole records (after
    /// a failed write, the length to cut the output back to).
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The inner writer.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    fn drain(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.out.write_all(&self.buf)?;
        self.written += self.buf.len() as u64;
        self.packets_written = self.packets;
        self.buf.clear();
        Ok(())
    }

    /// Records written so far (buffered ones included).
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Records not yet handed to the inner writer (buffered, or left over
    /// by a failed write), and their captured bytes.
    pub fn unwritten(&self) -> (u64, u64) {
        let n = self.packets - self.packets_written;
        // The file header waits in the buffer until the first write.
        let header = if self.written == 0 && !self.buf.is_empty() {
            crate::pcap::FILE_HEADER_LEN as u64
        } else {
            0
        };
        let data = (self.buf.len() as u64).saturating_sub(header + 16 * n);
        (n, data)
    }

    /// Records handed to the inner writer without error: those in its
    /// first [`PcapWriter::written`] bytes.
    pub fn packets_written(&self) -> u64 {
        self.packets_written
    }

    /// Flushes and returns the inner writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        Ok(self.out)
    }

    /// The inner writer as it is: records not yet handed to it (after a
    /// failed flush) are dropped.
    pub fn into_written(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_record_bytes() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET, 65_535).unwrap();
        w.write_packet(1_700_000_000_123_456_789, b"\x01\x02\x03", 60)
            .unwrap();
        assert_eq!(w.packets(), 1);
        let v = w.into_inner().unwrap();
        assert_eq!(
            v,
            [
                // magic, 2.4, thiszone, sigfigs, snaplen 65535, EN10MB
                0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0,
                0, 0, //
                // 1700000000 s, 123456789 ns, caplen 3, len 60, data
                0x00, 0xf1, 0x53, 0x65, 0x15, 0xcd, 0x5b, 0x07, 3, 0, 0, 0, 60, 0, 0, 0, 1, 2, 3,
            ]
        );
    }

    #[test]
    fn refuses_timestamps_past_2106() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::RAW, 0).unwrap();
        let e = w
            .write_packet((u64::from(u32::MAX) + 1) * NANOS_PER_SEC, b"", 0)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        w.write_packet(u64::from(u32::MAX) * NANOS_PER_SEC + 999_999_999, b"", 0)
            .unwrap();
        assert_eq!(w.packets(), 1);
    }
}
