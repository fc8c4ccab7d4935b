//! The pcap sink: a nanosecond pcap file, stamped with send times.
//!
//! The file is written atomically (`sluice_sys::output`): into a temporary
//! file beside the target, put in place by [`Sink::settle`] once the whole
//! run's outcome is known: renamed over the target when the run completed
//! with at least one frame written, kept beside an existing target as
//! `NAME.partial` when anything failed or stopped it (another thread, the
//! source, a helper, a signal), so a failed run never replaces a good
//! file; a run that sends nothing leaves an existing file as it was.
//! Records reach the file whole, at least once a second and at every
//! stop; after a failed write the file is cut back to its last whole
//! record, and the count named is that of the records in the file.

use crate::{Sink, SinkError};
use sluice_capture::{LinkType, PcapWriter, MAX_SNAPLEN};
use sluice_sys::output::Output;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Longest buffered records wait for the file.
const DURABLE_EVERY: Duration = Duration::from_secs(1);

pub struct PcapSink {
    path: PathBuf,
    /// None once finished.
    writer: Option<PcapWriter<Output>>,
    last_flush: Instant,
    /// This thread's own part failed or was stopped (`finish_incomplete`,
    /// or a failed last flush).
    incomplete: bool,
    /// The record (and its bytes) whose send failed after the writer took
    /// it: the engine never counted it as sent.
    uncounted: (u64, u64),
}

impl PcapSink {
    pub fn create(path: &Path) -> Result<Self, SinkError> {
        let out = Output::create(path)?;
        let writer = PcapWriter::new(out, LinkType::ETHERNET, MAX_SNAPLEN)
            .map_err(|e| SinkError::os(format!("cannot write {}", path.display()), e))?;
        Ok(PcapSink {
            path: path.to_path_buf(),
            writer: Some(writer),
            last_flush: Instant::now(),
            incomplete: false,
            uncounted: (0, 0),
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

    /// Writes every buffered record to the file (the file stays hidden
    /// until [`Sink::settle`]).
    fn end(&mut self, incomplete: bool) -> Result<(), SinkError> {
        self.incomplete |= incomplete;
        let Some(w) = self.writer.as_mut() else {
            return Ok(());
        };
        if let Err(e) = w.flush() {
            Self::cut(w);
            self.incomplete = true;
            return Err(self.io(e));
        }
        Ok(())
    }

    /// If the file holds a frame, puts it in place: over the target, or
    /// (`incomplete`) beside an existing target, named on stderr with the
    /// number of records it holds.
    fn close(&mut self, incomplete: bool) -> Result<(), SinkError> {
        let flushed = self.end(incomplete);
        let Some(w) = self.writer.take() else {
            return flushed;
        };
        let incomplete = self.incomplete;
        // Whole records in the file: those still buffered after a failed
        // write are not.
        let packets = w.packets_written();
        let lost = w.packets() - packets;
        let out = w.into_written();
        if packets == 0 && lost > 0 {
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "sluice: none of this run's {lost} packets reached {}: it was left as it was",
                self.path.display()
            );
        }
        if packets > 0 && !incomplete {
            out.commit()?;
        } else if packets > 0 {
            let went = out.commit_partial()?;
            use std::io::Write as _;
            let _ = if went != self.path {
                writeln!(
                    std::io::stderr(),
                    "sluice: the run did not complete: {} keeps what it held; this run's \
                     {packets} packets are in {}",
                    self.path.display(),
                    went.display()
                )
            } else {
                writeln!(
                    std::io::stderr(),
                    "sluice: the run did not complete: {} holds the {packets} packets it sent",
                    went.display()
                )
            };
        }
        flushed
    }

    /// Cuts the file back to its last whole record after a failed write.
    fn cut(w: &mut PcapWriter<Output>) {
        let len = w.written();
        let f: &mut File = w.get_mut().file();
        let _ = f.set_len(len);
    }
}

/// A sink dropped before it was settled (a panic, a path that never
/// learned the outcome) keeps its frames as an incomplete run's: nothing
/// existing is replaced, nothing written is lost.
impl Drop for PcapSink {
    fn drop(&mut self) {
        let _ = self.close(true);
    }
}

impl Sink for PcapSink {
    fn send(&mut self, frame: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        self.send_parts(frame, &[], stamp_ns)
    }

    fn send_parts(&mut self, head: &[u8], body: &[u8], stamp_ns: u64) -> Result<(), SinkError> {
        let len = (head.len() + body.len()) as u32;
        let w = self.writer()?;
        let before = w.packets();
        if let Err(e) = w.write_packet_parts(stamp_ns, &[head, body], len) {
            if w.packets() > before {
                self.uncounted.0 += 1;
                self.uncounted.1 += u64::from(len);
            }
            let w = self.writer()?;
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

    /// Writes the rest; [`Sink::settle`] puts the file in place.
    fn finish(&mut self) -> Result<(), SinkError> {
        self.end(false)
    }

    /// A run cut short: the frames it wrote replace no existing file.
    fn finish_incomplete(&mut self) -> Result<(), SinkError> {
        self.end(true)
    }

    fn settle(&mut self, complete: bool) -> Result<(), SinkError> {
        let incomplete = !complete || self.incomplete;
        self.close(incomplete)
    }

    fn describe(&self) -> String {
        format!("pcap:{}", self.path.display())
    }

    /// Records not in the file yet: buffered (they reach it within a
    /// second), or lost to a failed write (a full disk): a run counts
    /// what its file holds.
    fn unsent(&self) -> (u64, u64) {
        let (n, bytes) = self.writer.as_ref().map_or((0, 0), PcapWriter::unwritten);
        (
            n.saturating_sub(self.uncounted.0),
            bytes.saturating_sub(self.uncounted.1),
        )
    }
}
