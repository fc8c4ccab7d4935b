//! `series play --max-gap`: the archive's gaps longer than the cap, found
//! before the run by reading its timestamps once. Workers index chunks of
//! the archive in parallel, so none of them can know how much time the
//! chunks before its own removed; the cuts say it for every record.

use super::SeriesError;
use sluice_archive::ArchiveReader;
use sluice_core::Nanos;
use std::path::Path;

/// Most gaps a cap may shorten (16 bytes each): a cap far below the
/// archive's record spacing is refused, not held.
pub const MAX_CUTS: usize = 1 << 20;

/// (first record after a long gap, 1-based; time removed from that record
/// on), in record order.
#[derive(Clone, Debug, Default)]
pub struct GapCuts {
    /// The cap (None: none, nothing cut).
    pub max_gap: Option<Nanos>,
    cuts: Vec<(u64, u64)>,
}

impl GapCuts {
    /// Reads every record's time of the archive at `path` (first record at
    /// `t_g` µs) and notes each gap longer than `max_gap`, as the indexer
    /// measures it (relative ns, a step back moving the reference too).
    pub fn scan(path: &Path, t_g: i64, max_gap: Nanos) -> Result<GapCuts, SeriesError> {
        let file = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|error| SeriesError::Io {
            file: file.clone(),
            error,
        })?;
        let mut r = ArchiveReader::from_reader(file.clone(), f);
        let (mut cuts, mut removed, mut prev) = (Vec::new(), 0u64, None::<u64>);
        let mut record = 0u64;
        loop {
            let rec = match r.next_record() {
                Ok(Some(rec)) => rec,
                Ok(None) => break,
                // The archive's own error names the record and offset; its
                // message already starts with the file name.
                Err(e) => {
                    return Err(SeriesError::Record {
                        file,
                        record: e.record,
                        offset: e.offset,
                        what: e.kind.to_string(),
                    })
                }
            };
            record += 1;
            let rel_ns = rec.unix_micros().saturating_sub(t_g).max(0) as u64 * 1000;
            if let Some(p) = prev {
                if rel_ns > p && rel_ns - p > max_gap.0 {
                    if cuts.len() == MAX_CUTS {
                        return Err(SeriesError::Record {
                            file,
                            record,
                            offset: rec.offset,
                            what: format!(
                                "more than {MAX_CUTS} gaps longer than --max-gap {max_gap}: \
                                 give a larger cap"
                            ),
                        });
                    }
                    removed += rel_ns - p - max_gap.0;
                    cuts.push((record, removed));
                }
            }
            prev = Some(rel_ns);
        }
        Ok(GapCuts {
            max_gap: Some(max_gap),
            cuts,
        })
    }

    /// The first gap cut: (record after it, the gap in ns).
    pub fn first(&self) -> Option<(u64, u64)> {
        let cap = self.max_gap?.0;
        self.cuts.first().map(|&(r, removed)| (r, removed + cap))
    }

    /// Gaps shortened.
    pub fn len(&self) -> usize {
        self.cuts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cuts.is_empty()
    }

    /// Time removed from the schedule of record `record` (1-based).
    #[inline]
    pub fn removed(&self, record: u64) -> u64 {
        match self.cuts.partition_point(|&(r, _)| r <= record) {
            0 => 0,
            i => self.cuts[i - 1].1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_archive::{ArchiveWriter, Stamp};

    #[test]
    fn gaps_over_the_cap_are_cut_for_every_later_record() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a.arc");
        let mut w = ArchiveWriter::new(std::fs::File::create(&p).unwrap());
        let base = 1_700_000_000_000_000i64;
        // Records at 0 s, 1 s, 11 s, 12 s, 10 s (a step back), 40 s.
        for s in [0i64, 1, 11, 12, 10, 40] {
            let t = Stamp::from_unix_micros(base + s * 1_000_000, 0).unwrap();
            w.write_str(&t, "dev", b"x").unwrap();
        }
        w.finish().unwrap();
        let c = GapCuts::scan(&p, base, Nanos::from_secs(5)).unwrap();
        assert_eq!(c.len(), 2);
        let s = 1_000_000_000;
        assert_eq!(
            [1, 2, 3, 4, 5, 6].map(|r| c.removed(r)),
            [0, 0, 5 * s, 5 * s, 5 * s, 30 * s]
        );
    }
}
