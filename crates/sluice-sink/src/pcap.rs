//! The pcap sink: a nanosecond pcap file, stamped with send times.

use crate::{Sink, SinkError};
use sluice_capture::{LinkType, PcapWriter};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Largest frame the pcap header advertises.
const SNAPLEN: u32 = 262_144;

pub struct PcapSink {
    path: PathBuf,
    writer: PcapWriter<BufWriter<File>>,
}

impl PcapSink {
    pub fn create(path: &Path) -> Result<Self, SinkError> {
        let file = File::create(path)
            .map_err(|e| SinkError::os(format!("cannot create {}", path.display()), e))?;
        let writer = PcapWriter::new(
            BufWriter::with_capacity(1 << 20, file),
            LinkType::ETHERNET,
            SNAPLEN,
        )
        .map_err(|e| SinkError::os(format!("cannot write {}", path.display()), e))?;
        Ok(PcapSink {
            path: path.to_path_buf(),
            writer,
        })
    }

    fn io(&self, e: std::io::Error) -> SinkError {
        SinkError::os(format!("writing {}", self.path.display()), e)
    }
}

impl Sink for PcapSink {
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.writer
            .write_packet(stamp_ns, frame, frame.len() as u32)
            .map_err(|e| self.io(e))
    }

    fn send_parts(&mut self, head: &[u8], body: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        let len = (head.len() + body.len()) as u32;
        self.writer
            .write_packet_parts(stamp_ns, &[head, body], len)
            .map_err(|e| self.io(e))
    }

    /// Buffered writes reach the file in 1 MiB chunks; only `finish` forces
    /// the tail out (a per-batch flush would cost a syscall per batch).
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        self.writer.flush().map_err(|e| self.io(e))
    }

    fn describe(&self) -> String {
        format!("pcap:{}", self.path.display())
    }
}
