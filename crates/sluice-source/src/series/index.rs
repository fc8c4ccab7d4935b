//! Worker-side record processing (paper §V-B.2): a buffer of whole records
//! becomes queue entries — (offset, size, flow, due) — without copying a
//! record. Timestamps are decoded here, the due time computed for the
//! timing mode, the device mapped to its flow(s), and records picked for
//! out-of-order delivery get a random extra delay in [0, T_w].

use super::chunker::Filled;
use super::devices::{device_name, DeviceId, DeviceTable};
use super::select::DeviceSelect;
use super::GapCuts;
use super::SeriesError;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sluice_archive::{decode_micros, HEADER_LEN};
use sluice_core::Nanos;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One record (or one simulated copy of it) to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DueRecord {
    /// Offset of the record in its buffer.
    pub offset: u32,
    /// Record length (header included).
    pub len: u16,
    pub flow: u32,
    pub due: Nanos,
}

/// How record timestamps map to send times.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SeriesTiming {
    /// As recorded: due = T_n − T_g.
    Conforming,
    /// Scaled: due = (T_n − T_g) / factor.
    FastForward(f64),
    /// Timestamps ignored: record i is due at i × interval (0 = blast).
    TightLoop(Nanos),
}

/// Out-of-order simulation (paper §V-C.1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ooo {
    /// Probability P that a record goes out of order.
    pub prob: f64,
    /// Window T_w: such a record leaves at a random time in [T_0, T_0 + T_w].
    pub window: Nanos,
}

impl Default for Ooo {
    /// No record out of order; a window of 1 ms once there are.
    fn default() -> Self {
        Ooo {
            prob: 0.0,
            window: Nanos::from_millis(1),
        }
    }
}

/// Per-worker state for turning buffers into entries.
pub struct Indexer {
    file: String,
    timing: SeriesTiming,
    /// T_g: the first record's time (UTC µs).
    t_g: i64,
    ooo: Option<Ooo>,
    rng: SmallRng,
    table: Arc<Mutex<DeviceTable>>,
    cache: HashMap<DeviceId, Option<u32>>,
    copies: u32,
    /// Records left out by `--devices N` or `--device-filter`.
    pub filtered: u64,
    /// Long gaps and steps back in the records' time (reported).
    pub gaps: sluice_pace::GapWatch,
    /// `--max-gap` and the time it removes before each record.
    cuts: Arc<GapCuts>,
    /// A distributed run's share: records of other devices are left out
    /// (counted as filtered) after their device got its flow, so flow
    /// addresses are those of the whole run.
    pub share: Option<crate::Share>,
    /// `--device-filter` and `--device-steps`.
    pub select: Arc<DeviceSelect>,
    /// Records (copies) of simulated devices `--device-steps` had not
    /// made live at their due time.
    pub inactive: u64,
}

/// Where an entry goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    InOrder,
    OutOfOrder,
}

impl Indexer {
    pub fn new(
        file: &str,
        timing: SeriesTiming,
        t_g: i64,
        ooo: Option<Ooo>,
        seed: u64,
        table: Arc<Mutex<DeviceTable>>,
        cuts: Arc<GapCuts>,
    ) -> Self {
        let copies = table.lock().map(|t| t.copies()).unwrap_or(1);
        Indexer {
            file: file.to_string(),
            timing,
            t_g,
            ooo: ooo.filter(|o| o.prob > 0.0),
            rng: SmallRng::seed_from_u64(seed),
            table,
            cache: HashMap::new(),
            copies,
            filtered: 0,
            gaps: sluice_pace::GapWatch::new(cuts.max_gap),
            cuts,
            share: None,
            select: Arc::default(),
            inactive: 0,
        }
    }

    fn flow_base(&mut self, id: &DeviceId) -> Result<Option<u32>, String> {
        if let Some(&f) = self.cache.get(id) {
            return Ok(f);
        }
        // Checked once per device: the id `series convert` would write.
        sluice_archive::pack_device(sluice_archive::trim_device(id)).map_err(|e| e.to_string())?;
        // A filtered device never gets an index: `--devices N` counts
        // the devices the filter admits.
        let admitted = self.select.filter.admits(&device_name(id));
        let dev = match self.table.lock() {
            Ok(mut t) if admitted => t.assign(id)?,
            _ => None,
        };
        // Below MAX_DEVICE_FLOWS (2^26): the product fits.
        let mine = self.share.is_none_or(|s| {
            s.takes(crate::share::stable_hash(&[sluice_archive::trim_device(
                id,
            )]))
        });
        let base = dev.filter(|_| mine).map(|d| d * self.copies);
        self.cache.insert(*id, base);
        Ok(base)
    }

    /// Calls `emit` for every record of `buf` (once per simulated copy), in
    /// file order. `emit` returns false to stop early (the run is ending).
    /// Returns false if stopped early.
    pub fn index(
        &mut self,
        buf: &Filled,
        mut emit: impl FnMut(DueRecord, Lane) -> bool,
    ) -> Result<bool, SeriesError> {
        let data = buf.bytes();
        let mut at = 0usize;
        for i in 0..u64::from(buf.records) {
            let len = usize::from(u16::from_be_bytes([data[at], data[at + 1]]));
            let stamp: &[u8; 12] = data[at + 2..at + 14].try_into().expect("12 bytes");
            let device: &DeviceId = data[at + 14..at + HEADER_LEN].try_into().expect("16 bytes");
            let t = decode_micros(stamp).map_err(|e| SeriesError::Record {
                file: self.file.clone(),
                record: buf.first_record + i + 1,
                offset: buf.file_offset + at as u64,
                what: e.to_string(),
            })?;
            let record = buf.first_record + i + 1;
            let mut rel_ns = t.saturating_sub(self.t_g).max(0) as u64 * 1000;
            self.gaps.observe(rel_ns, record);
            if !self.cuts.is_empty() {
                // A step back after a cut gap may fall below what was cut.
                rel_ns = rel_ns.saturating_sub(self.cuts.removed(record));
            }
            let due = match self.timing {
                SeriesTiming::Conforming => Nanos(rel_ns),
                SeriesTiming::FastForward(f) => Nanos((rel_ns as f64 / f) as u64),
                SeriesTiming::TightLoop(iv) => Nanos((buf.first_record + i).saturating_mul(iv.0)),
            };
            let base = self.flow_base(device).map_err(|what| SeriesError::Record {
                file: self.file.clone(),
                record: buf.first_record + i + 1,
                offset: buf.file_offset + at as u64,
                what,
            })?;
            let Some(base) = base else {
                self.filtered += 1;
                at += len;
                continue;
            };
            let live = match &self.select.steps {
                Some(steps) => steps.live_at(due),
                None => u32::MAX,
            };
            for copy in 0..self.copies {
                if base + copy >= live {
                    self.inactive += 1;
                    continue;
                }
                let mut e = DueRecord {
                    offset: at as u32,
                    len: len as u16,
                    flow: base + copy,
                    due,
                };
                let mut lane = Lane::InOrder;
                if let Some(o) = self.ooo {
                    if self.rng.random_bool(o.prob.min(1.0)) {
                        lane = Lane::OutOfOrder;
                        e.due += Nanos(self.rng.random_range(0..=o.window.0));
                    }
                }
                if !emit(e, lane) {
                    return Ok(false);
                }
            }
            at += len;
        }
        Ok(true)
    }
}
