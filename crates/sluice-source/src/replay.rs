//! Trace replay (TCPivo): frames of a pcap/pcapng trace with their recorded
//! timing (or scaled, fixed-rate, top speed), with payloads kept, zeroed or
//! truncated, keyed by flow (symmetric 5-tuple hash). Passes, limits,
//! preloading and the split over TX threads are the engine's.
//!
//! Link types other than Ethernet get an Ethernet header synthesized
//! (raw IPv4/IPv6, Linux SLL/SLL2, NULL/LOOP); the rest are refused, or
//! skipped and counted with `skip_unsupported`.

use crate::seam::{Due, End, Origin, Outbox, Source, SourceError, SourceReport};
use crate::select::Select;
use crate::split::{Split, Splitter};
use sluice_capture::CaptureReader;
use sluice_core::Nanos;
use sluice_pace::{Schedule, TimingMode};
use sluice_wire::{
    flow_hash, framing_of_linktype, rewrite_payload, to_ethernet, HeaderRewrite, LinkFraming,
    MacAddr, PayloadMode, Rewritten,
};
use std::path::PathBuf;

#[derive(Clone, Debug)]
pub struct ReplayConfig {
    pub path: PathBuf,
    /// Further traces, played after `path` in this order in every pass
    /// (tcpreplay's several files): each one's timing restarts at its
    /// first packet, right after the last packet of the one before, and
    /// its packets are numbered from 1 again (`select`, split caches).
    pub more: Vec<PathBuf>,
    /// `--dualfile`: every trace (`path` first), in pairs; each pair is
    /// merged by timestamp, its first trace leaving by the first port and
    /// its second by the second; the pairs play one after the other.
    pub dual: Vec<PathBuf>,
    pub timing: TimingMode,
    pub payload: PayloadMode,
    pub src_mac: MacAddr,
    pub dst_mac: MacAddr,
    pub skip_unsupported: bool,
    /// `src_mac`/`dst_mac` were given by the user: an error on a trace
    /// whose frames carry their own Ethernet header (they would be
    /// ignored; `rewrite.enet_*` is what rewrites those).
    pub link_macs_given: bool,
    /// Header rewriting (tcprewrite's options), after the payload mode.
    pub rewrite: HeaderRewrite,
    /// Two-port split: each packet's side (port 0 or 1, and the side of
    /// per-side rewriting; a tcpprep cache may skip packets). None: every
    /// packet is side 0.
    pub split: Option<Split>,
    /// `--include` / `--exclude`: packets not selected are not sent (and
    /// take no place in the schedule).
    pub select: Option<Select>,
    /// `--loopdelay`: a pause between passes.
    pub loop_delay: Option<Nanos>,
    /// Recorded gaps longer than this are shortened to it (None: kept;
    /// the first over an hour is reported).
    pub max_gap: Option<Nanos>,
    /// A distributed run's share: only flows (symmetric 5-tuple) whose key
    /// falls to it are sent; the others keep their place in the schedule.
    pub share: Option<crate::Share>,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            path: PathBuf::new(),
            more: Vec::new(),
            dual: Vec::new(),
            timing: TimingMode::Recorded { multiplier: 1.0 },
            payload: PayloadMode::Keep,
            src_mac: MacAddr::LOCAL_SRC,
            dst_mac: MacAddr::LOCAL_DST,
            skip_unsupported: false,
            link_macs_given: false,
            rewrite: HeaderRewrite::default(),
            split: None,
            select: None,
            loop_delay: None,
            max_gap: None,
            share: None,
        }
    }
}

pub struct ReplaySource {
    cfg: ReplayConfig,
    reader: CaptureReader,
    schedule: Schedule,
    report: SourceReport,
    headers_rewritten: u64,
    splitter: Option<Splitter>,
    /// Packets sent by side 1.
    side_1: u64,
    /// Packets left out by `--include`/`--exclude` or a tcpprep cache.
    skipped: Skipped,
    /// Cut frames dropped by `--fixlen del`.
    dropped_cut: u64,
    /// Packets of the current pass.
    pass_packets: u64,
    /// Passes that reached the end of the trace.
    passes: u64,
    /// Frame under construction when it must be rebuilt before placement.
    scratch: Vec<u8>,
    /// Packet records read from the current pass (1-based in messages).
    record: u64,
    /// The trace's name for error messages (kept once, not per packet).
    file: String,
    /// Which trace of the pass is being read (0: `path`, then `more`).
    trace: usize,
    /// `--dualfile`'s two traces (then `reader` is not read).
    dual: Option<crate::dual::Dual>,
    /// No header rewriting asked for (`HeaderRewrite::is_empty`, which
    /// compares the whole configuration: asked once, not per packet).
    no_rewrite: bool,
}

impl ReplaySource {
    pub fn open(cfg: ReplayConfig) -> Result<Self, SourceError> {
        let reader = CaptureReader::open(&cfg.path)?;
        let cfg_dual = cfg.dual.clone();
        if !cfg.dual.is_empty()
            && (cfg.split.is_some() || !cfg.more.is_empty() || !cfg.dual.len().is_multiple_of(2))
        {
            return Err(SourceError::Split(
                "--dualfile gives each trace its port: no --split, and traces in pairs".into(),
            ));
        }
        let file = reader.name().to_string();
        if let Some(s) = cfg.split.as_ref().filter(|_| !cfg.more.is_empty()) {
            if matches!(
                s.mode,
                crate::SplitMode::Cache(_)
                    | crate::SplitMode::Tcpprep(_)
                    | crate::SplitMode::TcpAuto(_)
            ) {
                return Err(SourceError::Split(
                    "this --split is made for one trace; with several, give cidr:, regex:, mac:, port or auto".into(),
                ));
            }
        }
        let splitter = match &cfg.split {
            Some(m) => Some(Splitter::new(m.clone(), &cfg.path).map_err(SourceError::Split)?),
            None => None,
        };
        Ok(ReplaySource {
            no_rewrite: cfg.rewrite.is_empty(),
            splitter,
            side_1: 0,
            skipped: Skipped::default(),
            schedule: Schedule::with_max_gap(cfg.timing, cfg.max_gap)
                .with_loop_delay(cfg.loop_delay.unwrap_or(Nanos(0))),
            cfg,
            reader,
            report: SourceReport::default(),
            headers_rewritten: 0,
            dropped_cut: 0,
            pass_packets: 0,
            passes: 0,
            scratch: Vec::with_capacity(65_536),
            record: 0,
            file,
            trace: 0,
            dual: if cfg_dual.is_empty() {
                None
            } else {
                Some(crate::dual::Dual::open(&cfg_dual)?)
            },
        })
    }

    /// The traces of a pass, in order.
    fn traces(&self) -> impl Iterator<Item = &std::path::Path> {
        std::iter::once(self.cfg.path.as_path()).chain(self.cfg.more.iter().map(PathBuf::as_path))
    }

    /// Moves to the next trace of the pass; false after the last.
    fn next_trace(&mut self) -> Result<bool, SourceError> {
        let Some(path) = self
            .traces()
            .nth(self.trace + 1)
            .map(std::path::Path::to_path_buf)
        else {
            return Ok(false);
        };
        self.reader = CaptureReader::open(&path)?;
        self.file = self.reader.name().to_string();
        self.trace += 1;
        self.record = 0;
        self.schedule.next_file();
        Ok(true)
    }

    /// Reads one packet into `out`. Returns None at the end of the pass,
    /// else whether `out` took it (or skipped it).
    fn next_into(&mut self, out: &mut Outbox<'_>) -> Result<Option<bool>, SourceError> {
        let mut forced_side = None;
        let packet = if let Some(d) = self.dual.as_mut() {
            match d.next(&mut self.report.truncation)? {
                Some(m) => {
                    forced_side = Some(m.side);
                    // Numbered in its own trace (from 1 each pass).
                    self.record = m.record - 1;
                    if self.file != m.file {
                        self.file.clear();
                        self.file.push_str(m.file);
                    }
                    if m.new_pair {
                        self.schedule.next_file();
                    }
                    m.packet
                }
                None => return Ok(None),
            }
        } else {
            loop {
                match self.reader.next_packet() {
                    Ok(Some(p)) => break p,
                    Ok(None) => {}
                    Err(e) if e.is_truncation() => {
                        if self.report.truncation.is_none() {
                            self.report.truncation = Some(e.to_string());
                        }
                    }
                    Err(e) => return Err(e.into()),
                }
                // This trace is done: the next one of the pass, or the end.
                if !self.next_trace()? {
                    return Ok(None);
                }
            }
        };
        self.record += 1;
        let index = self.record;
        let Some(framing) = framing_of_linktype(packet.linktype.0) else {
            if self.cfg.skip_unsupported {
                self.report.skipped_unsupported += 1;
                return Ok(Some(true));
            }
            return Err(SourceError::UnsupportedLinkType {
                file: self.file.clone(),
                packet: index,
                linktype: packet.linktype,
            });
        };
        out.set_first_ts(packet.ts_ns);
        let ts = packet.ts_ns;
        // Fast path: Ethernet frames kept as they are go straight from the
        // reader's buffer into the batch (one copy). Everything else is built
        // in the scratch buffer first.
        if framing == LinkFraming::Ethernet && self.cfg.link_macs_given {
            return Err(SourceError::BadPacket {
                file: self.file.clone(),
                packet: index,
                reason: "--src-mac/--dst-mac fill in the Ethernet header of link types without one; this frame has its own: use --enet-smac/--enet-dmac to rewrite it".into(),
            });
        }
        let side: u8;
        let frame: &[u8] = if framing == LinkFraming::Ethernet
            && self.cfg.payload == PayloadMode::Keep
            && self.no_rewrite
        {
            let sel = self.cfg.select.as_ref();
            let at = (forced_side, index, packet.data);
            match place(sel, &mut self.splitter, &self.file, &mut self.skipped, at)? {
                Some(s) => side = s,
                None => return Ok(Some(true)),
            }
            packet.data
        } else {
            let buf = &mut self.scratch;
            if let Err(e) = to_ethernet(
                framing,
                packet.data,
                self.cfg.src_mac,
                self.cfg.dst_mac,
                buf,
            ) {
                if self.cfg.skip_unsupported {
                    self.report.skipped_unsupported += 1;
                    return Ok(Some(true));
                }
                return Err(SourceError::BadPacket {
                    file: self.file.clone(),
                    packet: index,
                    reason: e.to_string(),
                });
            }
            // The selection and the side come from the recorded headers,
            // before rewriting.
            let sel = self.cfg.select.as_ref();
            let at = (forced_side, index, &buf[..]);
            match place(sel, &mut self.splitter, &self.file, &mut self.skipped, at)? {
                Some(s) => side = s,
                None => return Ok(Some(true)),
            }
            if self.cfg.payload != PayloadMode::Keep {
                let rw = rewrite_payload(buf, self.cfg.payload);
                if rw.changed {
                    self.report.rewritten += 1;
                    buf.truncate(rw.new_len);
                }
            }
            if !self.no_rewrite {
                // The original length counts from the Ethernet header
                // built above (link headers of other types differ).
                // (A trace may claim an original length below the
                // captured one: that frame is not cut.)
                let orig = (packet.orig_len as usize).max(packet.data.len()) + buf.len()
                    - packet.data.len();
                match self.cfg.rewrite.apply_frame(buf, orig, self.passes, side) {
                    Rewritten::Changed => self.headers_rewritten += 1,
                    Rewritten::Unchanged => {}
                    Rewritten::Dropped => {
                        self.dropped_cut += 1;
                        return Ok(Some(true));
                    }
                }
            }
            buf
        };
        let due = self.schedule.due(ts, frame.len());
        if let Some(share) = self.cfg.share {
            let key = crate::share::stable_hash(&[&flow_hash(frame).to_le_bytes()]);
            if !share.takes(key) {
                self.pass_packets += 1;
                return Ok(Some(true));
            }
        }
        let lane = out.lane(|| flow_hash(frame));
        if !out.push(lane, Due::at(due).on_port(side), |b| {
            b.extend_from_slice(frame)
        }) {
            return Ok(Some(false));
        }
        self.side_1 += u64::from(side);
        self.pass_packets += 1;
        Ok(Some(true))
    }
}

impl Source for ReplaySource {
    fn fill(&mut self, out: &mut Outbox<'_>) -> Result<End, SourceError> {
        loop {
            match self.next_into(out)? {
                Some(true) => {}
                Some(false) => return Ok(End::Done),
                None => break,
            }
        }
        self.passes += 1;
        if self.pass_packets == 0 && self.passes == 1 && self.report.skipped_unsupported == 0 {
            return Err(SourceError::Empty {
                file: self.reader.name().to_string(),
            });
        }
        Ok(End::Pass)
    }

    fn rewind(&mut self) -> Result<bool, SourceError> {
        if self.pass_packets == 0 {
            // A pass without packets would loop forever.
            return Ok(false);
        }
        if let Some(d) = self.dual.as_mut() {
            d.rewind()?;
        } else {
            self.reader = CaptureReader::open(&self.cfg.path)?;
            self.file = self.reader.name().to_string();
        }
        self.trace = 0;
        self.schedule.next_loop();
        self.pass_packets = 0;
        self.record = 0;
        Ok(true)
    }

    fn pass_period(&self) -> Option<f64> {
        Some(self.schedule.first_pass_period())
    }

    fn origin(&self) -> Origin {
        Origin::File
    }

    fn report(&self) -> SourceReport {
        let mut r = self.report.clone();
        if self.cfg.select.is_some() {
            r.counters.push(("skipped_by_select", self.skipped.select));
        }
        if !self.cfg.rewrite.is_empty() {
            r.counters
                .push(("headers_rewritten", self.headers_rewritten));
            if self.cfg.rewrite.fixlen == Some(sluice_wire::FixLen::Del) {
                r.counters.push(("dropped_cut_frames", self.dropped_cut));
            }
        }
        if let Some(sp) = &self.splitter {
            r.counters.push(("server_to_client_packets", self.side_1));
            if self.skipped.split > 0 {
                r.counters.push(("skipped_by_split", self.skipped.split));
            }
            if sp.by_port > 0 {
                r.notes.push(format!(
                    "--split auto: the trace has more than {} flows; {} packets of the flows beyond were split by port",
                    crate::split::MAX_FLOWS,
                    sp.by_port
                ));
            }
        }
        r.notes
            .extend(self.schedule.gaps.notes(&self.file, "packet", true));
        r
    }
}

/// Packets left out, by what left them out.
#[derive(Default)]
struct Skipped {
    /// By `--include` / `--exclude`.
    select: u64,
    /// By a tcpprep cache.
    split: u64,
}

/// Whether record `index` (1-based) of `frame` is sent, and by which
/// side (`forced` for `--dualfile`, else the splitter's): None when the
/// selection or a tcpprep cache leaves it out, counted in `skipped`.
fn place(
    select: Option<&Select>,
    splitter: &mut Option<Splitter>,
    file: &str,
    skipped: &mut Skipped,
    (forced, index, frame): (Option<u8>, u64, &[u8]),
) -> Result<Option<u8>, SourceError> {
    if select.is_some_and(|s| !s.keeps(index, Some(frame))) {
        skipped.select += 1;
        return Ok(None);
    }
    let side = match (forced, splitter) {
        (Some(s), _) => Some(s),
        (None, Some(sp)) => sp
            .side(index - 1, frame)
            .map_err(|reason| SourceError::BadPacket {
                file: file.to_string(),
                packet: index,
                reason,
            })?,
        (None, None) => Some(0),
    };
    if side.is_none() {
        skipped.split += 1;
    }
    Ok(side)
}
