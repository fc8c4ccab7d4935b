//! `--dualfile`: two traces, one per port, merged by timestamp (tcpreplay's
//! `send_dual_packets`): the next packet is the second trace's when the
//! first is used up or its next packet is later, else the first's (ties
//! go to the first). The first trace leaves by `--to`, the second by
//! `--to2`.

use sluice_capture::{CaptureError, CaptureReader, LinkType, Packet};
use std::path::{Path, PathBuf};

/// A packet read ahead, owned (the reader's buffer moves on).
struct Ahead {
    data: Vec<u8>,
    ts_ns: u64,
    orig_len: u32,
    linktype: LinkType,
    interface: u32,
}

/// One of the two traces and its next packet.
struct Side {
    path: PathBuf,
    reader: CaptureReader,
    ahead: Ahead,
    /// Whether `ahead` holds the next packet.
    full: bool,
    /// The trace is used up (or ended at a truncated record).
    done: bool,
    /// Records read (numbers from 1 in each pass).
    record: u64,
}

impl Side {
    fn open(path: &Path) -> Result<Self, CaptureError> {
        Ok(Side {
            path: path.to_path_buf(),
            reader: CaptureReader::open(path)?,
            ahead: Ahead {
                data: Vec::new(),
                ts_ns: 0,
                orig_len: 0,
                linktype: LinkType(1),
                interface: 0,
            },
            full: false,
            done: false,
            record: 0,
        })
    }

    /// Reads ahead unless a packet is waiting; a truncated record ends the
    /// trace and is returned once.
    fn fill(&mut self) -> Result<Option<String>, CaptureError> {
        if self.full || self.done {
            return Ok(None);
        }
        match self.reader.next_packet() {
            Ok(Some(p)) => {
                self.ahead.data.clear();
                self.ahead.data.extend_from_slice(p.data);
                self.ahead.ts_ns = p.ts_ns;
                self.ahead.orig_len = p.orig_len;
                self.ahead.linktype = p.linktype;
                self.ahead.interface = p.interface;
                self.full = true;
                Ok(None)
            }
            Ok(None) => {
                self.done = true;
                Ok(None)
            }
            Err(e) if e.is_truncation() => {
                self.done = true;
                Ok(Some(e.to_string()))
            }
            Err(e) => Err(e),
        }
    }
}

/// The two traces of `--dualfile`.
pub struct Dual {
    sides: [Side; 2],
}

impl Dual {
    pub fn open(first: &Path, second: &Path) -> Result<Self, CaptureError> {
        Ok(Dual {
            sides: [Side::open(first)?, Side::open(second)?],
        })
    }

    /// Starts both traces again (the next pass).
    pub fn rewind(&mut self) -> Result<(), CaptureError> {
        for s in &mut self.sides {
            *s = Side::open(&s.path.clone())?;
        }
        Ok(())
    }

    /// The next packet of the merge: its side (0 or 1), its number in its
    /// trace (from 1), the trace's name, and the packet; None when both are
    /// used up. A truncated record is reported through `truncated`.
    pub fn next(
        &mut self,
        truncated: &mut Option<String>,
    ) -> Result<Option<(u8, u64, &str, Packet<'_>)>, CaptureError> {
        for s in &mut self.sides {
            if let Some(t) = s.fill()? {
                truncated.get_or_insert(t);
            }
        }
        let [a, b] = &self.sides;
        let k = match (a.full, b.full) {
            (false, false) => return Ok(None),
            (true, false) => 0,
            (false, true) => 1,
            (true, true) => usize::from(a.ahead.ts_ns > b.ahead.ts_ns),
        };
        let s = &mut self.sides[k];
        s.full = false;
        s.record += 1;
        Ok(Some((
            k as u8,
            s.record,
            s.reader.name(),
            Packet {
                ts_ns: s.ahead.ts_ns,
                data: &s.ahead.data,
                orig_len: s.ahead.orig_len,
                linktype: s.ahead.linktype,
                interface: s.ahead.interface,
            },
        )))
    }
}
