//! `--dualfile`: traces in pairs, each pair merged by timestamp (tcpreplay's
//! `send_dual_packets`): the next packet is the second trace's when the
//! first is used up or its next packet is later, else the first's (ties
//! go to the first). The first trace of a pair leaves by `--to`, the
//! second by `--to2`; the pairs play one after the other.

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

/// The traces of `--dualfile`, the pair being played open.
pub struct Dual {
    /// Every trace, in pairs: (0, 1), (2, 3), ...
    paths: Vec<PathBuf>,
    /// The pair being played (its first trace's index in `paths`).
    at: usize,
    sides: [Side; 2],
}

/// One packet of the merge.
pub struct Merged<'a> {
    /// 0: the pair's first trace (`--to`); 1: its second (`--to2`).
    pub side: u8,
    /// Its number in its trace, from 1 in each pass.
    pub record: u64,
    /// Its trace's name.
    pub file: &'a str,
    /// The first packet of a pair after the first: its timing restarts.
    pub new_pair: bool,
    pub packet: Packet<'a>,
}

impl Dual {
    /// `paths` in pairs (an even count, at least two).
    pub fn open(paths: &[PathBuf]) -> Result<Self, CaptureError> {
        assert!(
            paths.len() >= 2 && paths.len().is_multiple_of(2),
            "checked by the caller"
        );
        Ok(Dual {
            sides: [Side::open(&paths[0])?, Side::open(&paths[1])?],
            paths: paths.to_vec(),
            at: 0,
        })
    }

    /// Starts the first pair again (the next pass).
    pub fn rewind(&mut self) -> Result<(), CaptureError> {
        self.at = 0;
        self.sides = [Side::open(&self.paths[0])?, Side::open(&self.paths[1])?];
        Ok(())
    }

    /// The next packet of the merge; None when every pair is used up. A
    /// truncated record is reported through `truncated`.
    pub fn next(
        &mut self,
        truncated: &mut Option<String>,
    ) -> Result<Option<Merged<'_>>, CaptureError> {
        let mut new_pair = false;
        loop {
            for s in &mut self.sides {
                if let Some(t) = s.fill()? {
                    truncated.get_or_insert(t);
                }
            }
            if self.sides.iter().any(|s| s.full) || self.at + 2 >= self.paths.len() {
                break;
            }
            // This pair is done: the next one.
            self.at += 2;
            self.sides = [
                Side::open(&self.paths[self.at])?,
                Side::open(&self.paths[self.at + 1])?,
            ];
            new_pair = true;
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
        Ok(Some(Merged {
            side: k as u8,
            record: s.record,
            file: s.reader.name(),
            new_pair,
            packet: Packet {
                ts_ns: s.ahead.ts_ns,
                data: &s.ahead.data,
                orig_len: s.ahead.orig_len,
                linktype: s.ahead.linktype,
                interface: s.ahead.interface,
            },
        }))
    }
}
