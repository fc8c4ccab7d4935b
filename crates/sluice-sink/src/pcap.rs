//! The pcap sink: a nanosecond pcap file, stamped with send times.
//!
//! The file is written atomically (`sluice_sys::output`): into a temporary
//! file beside the target, renamed over it when the sink finishes with at
//! least one frame written, so a run that sends nothing (it failed before
//! its first frame) leaves an existing file as it was. Records reach the
//! file whole, at least once a second and at every stop; after a failed
//! write the file is cut back to its last whole record.

use crate::{Sink, SinkError};
use sluice_capture::{LinkType, PcapWriter};
use sluice_sys::output::Output;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Largest frame the pcap header advertises.
const SNAPLEN: u32 = 262_144;
/// Longest buffered records wait for the file.
const DURABLE_EVERY: Duration = Duration::from_secs(1);

pub struct PcapSink {
    path: PathBuf,
    /// None once finished.
    writer: Option<PcapWriter<Output>>,
    last_flush: Instant,
}

impl PcapSink {
    pub fn create(path: &Path) -> Result<Self, SinkError> {
        let out = Output::create(path)?;
        let writer = PcapWriter::new(out, LinkType::ETHERNET, SNAPLEN)
            .map_err(|e| SinkError::os(format!("cannot write {}", path.display()), e))?;
        Ok(PcapSink {
            path: path.to_path_buf(),
            writer: Some(writer),
            last_flush: Instant::now(),
        })
    }

    fn io(&self, e: std::io::Error) -> SinkError {
        SinkError::os(format!("writing {}", self.path.display()), e)
    }

    fn writer(&mut self) -> Result<&mut PcapWriter<Output>, SinkError> {
        let path = &self.path;
        self.writer
            .as_mut()
            .ok_or_else(|| SinkError::Config(format!("{} is already finished", path.display())))
    }

    /// Writes the rest and, if the file holds a frame, puts it in place:
    /// over the target, or (`incomplete`, with a file there) beside it,
    /// named on stderr.
    fn close(&mut self, incomplete: bool) -> Result<(), SinkError> {
        let Some(mut w) = self.writer.take() else {
            return Ok(());
        };
        let flushed = w.flush();
        if flushed.is_err() {
            Self::cut(&mut w);
        }
        let packets = w.packets();
        let out = w.into_written();
        if packets > 0 && !incomplete {
            out.commit()?;
        } else if packets > 0 {
            let went = out.commit_partial()?;
            if went != self.path {
                use std::io::Write as _;
                let _ = writeln!(
                    std::io::stderr(),
                    "sluice: the run did not complete: {} keeps what it held; this run's {packets} \
                     packets are in {}",
                    self.path.display(),
                    went.display()
                );
            }
        }
        flushed.map_err(|e| self.io(e))
    }

    /// Cuts the file back to its last whole record after a failed write.
    fn cut(w: &mut PcapWriter<Output>) {
        let len = w.written();
        let f: &mut File = w.get_mut().file();
        let _ = f.set_len(len);
    }
}

impl Sink for PcapSink {
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.send_parts(frame, &[], stamp_ns)
    }

    fn send_parts(&mut self, head: &[u8], body: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        let len = (head.len() + body.len()) as u32;
        let w = self.writer()?;
        if let Err(e) = w.write_packet_parts(stamp_ns, &[head, body], len) {
            Self::cut(w);
            return Err(self.io(e));
        }
        Ok(())
    }

    /// Records reach the file at least once a second (a flush per batch
    /// would cost a system call per batch).
    fn flush(&mut self) -> Result<(), SinkError> {
        if self.last_flush.elapsed() < DURABLE_EVERY {
            return Ok(());
        }
        self.last_flush = Instant::now();
        let w = self.writer()?;
        if let Err(e) = w.flush() {
            Self::cut(w);
            return Err(self.io(e));
        }
        Ok(())
    }

    /// Writes the rest and renames the file into place, if it holds a
    /// frame; else the temporary file goes and the target stays as it was.
    fn finish(&mut self) -> Result<(), SinkError> {
        self.close(false)
    }

    /// A run cut short: the frames it wrote replace no existing file.
    fn finish_incomplete(&mut self) -> Result<(), SinkError> {
        self.close(true)
    }

    fn describe(&self) -> String {
        format!("pcap:{}", self.path.display())
    }
}
