//! Trace replay (TCPivo): frames of a pcap/pcapng trace with their recorded
//! timing (or scaled, fixed-rate, top speed), looped, limited, with payloads
//! kept, zeroed or truncated, split over TX threads by flow.
//!
//! Link types other than Ethernet get an Ethernet header synthesized
//! (raw IPv4/IPv6, Linux SLL/SLL2, NULL/LOOP); the rest are refused, or
//! skipped and counted with `skip_unsupported`.

use crate::spread::Spreader;
use sluice_capture::{CaptureError, CaptureReader, LinkType};
use sluice_core::{Batch, Nanos};
use sluice_pace::{Schedule, TimingMode};
use sluice_wire::{
    encap_for_linktype, flow_hash, rewrite_payload, to_ethernet, Encap, MacAddr, PayloadMode,
};
use std::path::PathBuf;

/// A partial batch is handed over once the trace time it covers exceeds this,
/// so a TX thread with few flows is never starved behind a busier one.
const MAX_BATCH_SPAN: Nanos = Nanos::from_millis(2);

#[derive(Clone, Debug)]
pub struct ReplayConfig {
    pub path: PathBuf,
    pub timing: TimingMode,
    /// Passes over the trace; 0 = forever.
    pub loops: u64,
    /// Stop after this many packets (over all passes).
    pub limit: Option<u64>,
    /// Stop producing packets due later than this.
    pub max_due: Option<Nanos>,
    pub payload: PayloadMode,
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    pub skip_unsupported: bool,
    /// TX threads to split the trace over, by flow hash.
    pub threads: usize,
    /// Read one pass only and let the caller repeat it from memory (see
    /// [`ReplaySource::repeat_plan`]); [`ReplaySource::stream_rest`] reverts
    /// to reading the file on every pass.
    pub preload: bool,
}

/// How to repeat a preloaded first pass: pass `k` (0-based) is the first
/// pass with every due offset moved by [`RepeatPlan::offset`]`(k)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RepeatPlan {
    /// Passes in all, the loaded one included; 0 = forever.
    pub passes: u64,
    /// Length of one pass in ns (unrounded).
    pub period_ns: f64,
    /// Packets over all passes, if limited.
    pub limit: Option<u64>,
    /// No packet due later than this.
    pub max_due: Option<Nanos>,
}

impl RepeatPlan {
    pub fn offset(&self, pass: u64) -> Nanos {
        Nanos((pass as f64 * self.period_ns) as u64)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("{file}: packet {packet}: link type {linktype} is not supported for replay (use --skip-unsupported to skip such packets)")]
    UnsupportedLinkType {
        file: String,
        packet: u64,
        linktype: LinkType,
    },
    #[error("{file}: packet {packet}: {reason}")]
    BadPacket {
        file: String,
        packet: u64,
        reason: String,
    },
    #[error("{file}: contains no packets")]
    Empty { file: String },
    #[error("{0}")]
    Flows(String),
}

/// What happened while reading, for the summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayCounters {
    /// Packets handed to TX threads.
    pub produced: u64,
    pub bytes: u64,
    /// Packets skipped for an unsupported link type.
    pub skipped_unsupported: u64,
    /// Packets whose bytes changed under `--payload`.
    pub rewritten: u64,
    /// Completed passes over the trace.
    pub passes: u64,
    /// A truncated last record, reported once (earlier packets were used).
    pub truncation: Option<String>,
    /// Other things the summary should mention.
    pub notes: Vec<String>,
}

/// Result of one [`ReplaySource::fill`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// At least one batch is ready to hand over (see `ready`).
    Ready,
    /// The source is exhausted; hand over what is left.
    Done,
}

pub struct ReplaySource {
    cfg: ReplayConfig,
    reader: CaptureReader,
    schedule: Schedule,
    counters: ReplayCounters,
    pass_packets: u64,
    first_ts: Option<u64>,
    done: bool,
    /// Frame under construction when it must be hashed before placement.
    scratch: Vec<u8>,
    /// Packet records read from the current pass (1-based in messages).
    record: u64,
    /// The trace's name for error messages (kept once, not per packet).
    file: String,
    /// Preloading: the first pass ended at the end of the file (not at a
    /// limit), so it may be repeated.
    pass_complete: bool,
    spread: Spreader,
}

impl ReplaySource {
    pub fn open(cfg: ReplayConfig) -> Result<Self, SourceError> {
        let reader = CaptureReader::open(&cfg.path)?;
        let file = reader.name().to_string();
        let cfg_threads = cfg.threads;
        Ok(ReplaySource {
            schedule: Schedule::new(cfg.timing),
            cfg,
            reader,
            counters: ReplayCounters::default(),
            pass_packets: 0,
            first_ts: None,
            done: false,
            scratch: Vec::with_capacity(65_536),
            record: 0,
            file,
            pass_complete: false,
            spread: Spreader::new(cfg_threads),
        })
    }

    /// Whether the first pass is read into memory (see [`ReplayConfig::preload`]).
    pub fn preloading(&self) -> bool {
        self.cfg.preload
    }

    /// After a preloaded first pass: how to repeat it, or None when nothing
    /// is left to repeat (a single pass, or the pass ended at a limit).
    pub fn repeat_plan(&self) -> Option<RepeatPlan> {
        if !self.pass_complete || self.cfg.loops == 1 {
            return None;
        }
        Some(RepeatPlan {
            passes: self.cfg.loops,
            period_ns: self.schedule.first_pass_period(),
            limit: self.cfg.limit,
            max_due: self.cfg.max_due,
        })
    }

    /// Gives up preloading part-way through the first pass: the source goes
    /// on reading the file, pass after pass, as if it had never preloaded.
    pub fn stream_rest(&mut self) {
        self.cfg.preload = false;
    }

    pub fn counters(&self) -> &ReplayCounters {
        &self.counters
    }

    /// Capture timestamp of the first packet (ns since the epoch), once read.
    pub fn first_ts(&self) -> Option<u64> {
        self.first_ts
    }

    /// Appends frames to `batches` (one per TX thread) until one of them is
    /// ready to send (full, or spanning more than 2 ms of trace time), or the
    /// source ends. `ready[i]` is set for batches that should be handed over.
    pub fn fill(&mut self, batches: &mut [Batch], ready: &mut [bool]) -> Result<Fill, SourceError> {
        debug_assert_eq!(batches.len(), self.cfg.threads.max(1));
        loop {
            if self.done {
                return Ok(Fill::Done);
            }
            if let Some(limit) = self.cfg.limit {
                if self.counters.produced >= limit {
                    self.done = true;
                    continue;
                }
            }
            let Some(due) = self.next_into(batches)? else {
                continue;
            };
            let mut any = false;
            for (i, b) in batches.iter().enumerate() {
                let stale = b
                    .first_due()
                    .is_some_and(|first| due.saturating_sub(first) > MAX_BATCH_SPAN);
                if b.is_full() || stale {
                    ready[i] = true;
                    any = true;
                }
            }
            if any {
                return Ok(Fill::Ready);
            }
        }
    }

    /// Reads one packet into the batch of its flow's thread. Returns its due
    /// offset, or None when it was skipped or a pass ended.
    fn next_into(&mut self, batches: &mut [Batch]) -> Result<Option<Nanos>, SourceError> {
        let packet = match self.reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => {
                self.end_pass()?;
                return Ok(None);
            }
            Err(e) if e.is_truncation() => {
                if self.counters.truncation.is_none() {
                    self.counters.truncation = Some(e.to_string());
                }
                self.end_pass()?;
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        self.record += 1;
        let index = self.record;
        let Some(encap) = encap_for_linktype(packet.linktype.0) else {
            if self.cfg.skip_unsupported {
                self.counters.skipped_unsupported += 1;
                return Ok(None);
            }
            return Err(SourceError::UnsupportedLinkType {
                file: self.file.clone(),
                packet: index,
                linktype: packet.linktype,
            });
        };
        self.first_ts.get_or_insert(packet.ts_ns);
        let ts = packet.ts_ns;
        // Fast path: Ethernet frames kept as they are go straight from the
        // reader's buffer into the batch (one copy). Everything else is built
        // in the scratch buffer first.
        let frame: &[u8] = if encap == Encap::Ethernet && self.cfg.payload == PayloadMode::Keep {
            packet.data
        } else {
            let out = &mut self.scratch;
            if let Err(e) = to_ethernet(encap, packet.data, self.cfg.src_mac, self.cfg.dst_mac, out)
            {
                if self.cfg.skip_unsupported {
                    self.counters.skipped_unsupported += 1;
                    return Ok(None);
                }
                return Err(SourceError::BadPacket {
                    file: self.file.clone(),
                    packet: index,
                    reason: e.to_string(),
                });
            }
            if self.cfg.payload != PayloadMode::Keep {
                let rw = rewrite_payload(out, self.cfg.payload);
                if rw.changed {
                    self.counters.rewritten += 1;
                    out.truncate(rw.new_len);
                }
            }
            out
        };
        let thread = if batches.len() > 1 {
            self.spread.thread(flow_hash(frame))
        } else {
            0
        };
        let batch = &mut batches[thread];
        let start = batch.data.len();
        batch.data.extend_from_slice(frame);
        let len = batch.data.len() - start;
        let due = self.schedule.due(ts, len);
        if self.cfg.max_due.is_some_and(|max| due > max) {
            batch.data.truncate(start);
            self.done = true;
            return Ok(None);
        }
        batch.commit(start, due);
        self.counters.produced += 1;
        self.counters.bytes += len as u64;
        self.pass_packets += 1;
        Ok(Some(due))
    }

    fn end_pass(&mut self) -> Result<(), SourceError> {
        self.counters.passes += 1;
        if self.pass_packets == 0 {
            // A pass without packets would loop forever.
            self.done = true;
            if self.counters.passes == 1 && self.counters.skipped_unsupported == 0 {
                return Err(SourceError::Empty {
                    file: self.reader.name().to_string(),
                });
            }
            return Ok(());
        }
        if self.cfg.loops != 0 && self.counters.passes >= self.cfg.loops {
            self.done = true;
            return Ok(());
        }
        if self.cfg.preload {
            self.pass_complete = true;
            self.done = true;
            return Ok(());
        }
        self.reader = CaptureReader::open(&self.cfg.path)?;
        self.schedule.next_loop();
        self.pass_packets = 0;
        self.record = 0;
        Ok(())
    }
}

impl crate::Source for ReplaySource {
    fn fill(&mut self, batches: &mut [Batch], ready: &mut [bool]) -> Result<Fill, SourceError> {
        ReplaySource::fill(self, batches, ready)
    }
    fn first_ts(&self) -> Option<u64> {
        ReplaySource::first_ts(self)
    }
    fn counters(&self) -> &ReplayCounters {
        ReplaySource::counters(self)
    }
    fn preloading(&self) -> bool {
        ReplaySource::preloading(self)
    }
    fn repeat_plan(&self) -> Option<RepeatPlan> {
        ReplaySource::repeat_plan(self)
    }
    fn stream_rest(&mut self) {
        ReplaySource::stream_rest(self)
    }
}
