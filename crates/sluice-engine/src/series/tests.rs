//! Rescue between TX threads, end to end on real time: one thread's sink
//! stalls, the other sends that thread's records, and every record still
//! leaves exactly once.

use super::*;
use crate::stats::IntervalStats;
use sluice_archive::{ArchiveWriter, Stamp};
use sluice_core::Nanos;
use sluice_sink::{SinkError, Takes};
use std::time::Duration;

const RECORDS: u32 = 1_000;
const STEP_US: i64 = 20;
/// Ten times the whole run (1 000 records x 20 µs): a loaded machine may
/// keep the rescuing thread off its CPU for milliseconds, never for half of
/// this, so the bounds on ε below hold under load.
const STALL: Duration = Duration::from_millis(200);

/// Takes datagrams (the record's Data: its number), or whole frames, and
/// notes the record numbers (or the frames' IPv4 IDs); stalls once, on its
/// first send, when told to.
struct Recorder {
    sent: Arc<Mutex<Vec<u32>>>,
    stall: Option<Duration>,
    frames: bool,
}

impl Sink for Recorder {
    fn send(&mut self, payload: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        if let Some(d) = self.stall.take() {
            thread::sleep(d);
        }
        let n = if self.frames {
            u32::from(u16::from_be_bytes([payload[18], payload[19]]))
        } else {
            u32::from_le_bytes(payload.try_into().expect("4-byte data"))
        };
        self.sent.lock().expect("recorder").push(n);
        Ok(())
    }
    fn takes(&self) -> Takes {
        if self.frames {
            Takes::Frames
        } else {
            Takes::Datagrams
        }
    }
    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
    fn describe(&self) -> String {
        "recorder".into()
    }
}

struct Quiet;
impl Observer for Quiet {
    fn interval(&mut self, _: &IntervalStats) {}
}

fn archive(dir: &tempfile::TempDir) -> std::path::PathBuf {
    let path = dir.path().join("a.arc");
    let mut w = ArchiveWriter::create(&path).expect("archive");
    for i in 0..RECORDS {
        let stamp = Stamp::from_unix_micros(1_700_000_000_000_000 + i64::from(i) * STEP_US, 0)
            .expect("stamp");
        w.write_str(&stamp, "DEV", &i.to_le_bytes())
            .expect("record");
    }
    w.finish().expect("archive");
    path
}

use crate::ONE_AT_A_TIME;

fn play(rescue_after: Option<Nanos>, frames: bool) -> (Summary, Vec<u32>) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = SeriesConfig {
        rescue_after,
        ..SeriesConfig::new(
            archive(&dir),
            sluice_source::series::FlowMap::new(Ipv4Addr::new(10, 0, 0, 2), 9000),
        )
    };
    let sent = Arc::new(Mutex::new(Vec::new()));
    // Thread 0 stalls on its first send for as long as the whole run
    // lasts (1 000 records x 20 µs): every record of the chunk it holds
    // then (128 x 20 µs = 2.6 ms) is due during the stall.
    let sinks: Vec<Box<dyn Sink>> = vec![
        Box::new(Recorder {
            sent: sent.clone(),
            stall: Some(STALL),
            frames,
        }),
        Box::new(Recorder {
            sent: sent.clone(),
            stall: None,
            frames,
        }),
    ];
    let ecfg = EngineConfig {
        preload: true,
        ..EngineConfig::default()
    };
    let summary = run_series(cfg, sinks, &ecfg, &mut Quiet).expect("play");
    let sent = sent.lock().expect("recorder").clone();
    (summary, sent)
}

#[test]
fn a_stalled_threads_records_are_sent_by_another_exactly_once() {
    let (s, mut sent) = play(Some(Nanos::from_micros(2)), false);
    sent.sort_unstable();
    assert_eq!(sent, (0..RECORDS).collect::<Vec<_>>(), "each record once");
    let series = s.series.as_ref().expect("a series section");
    let rescued = series.rescued.expect("rescue was on");
    // The stalled chunk's records after the first (127) were due during
    // the stall: the other thread sent them, on time or, if it lost its
    // CPU for a moment on a busy machine, that moment late, never as late
    // as the stall.
    assert!(rescued >= 64, "rescued {rescued}");
    let max = s.eps.expect("paced").percentiles.max_ns;
    assert!(max < STALL.as_nanos() as u64 / 2, "ε max {max} ns");
    // Per-flow counts add up over both threads, rescued records included.
    assert_eq!(series.flows.len(), 1);
    assert_eq!(series.flows[0].sent, u64::from(RECORDS));
    assert_eq!(series.flows[0].bytes, 4 * u64::from(RECORDS));
    assert_eq!(series.flows[0].late, s.late);

    // The paper's behaviour: the records wait for their own thread.
    let (s, mut sent) = play(None, false);
    sent.sort_unstable();
    assert_eq!(sent, (0..RECORDS).collect::<Vec<_>>(), "each record once");
    assert_eq!(s.series.as_ref().and_then(|x| x.rescued), None);
    assert!(s.late >= 127, "late {}", s.late);
    let max = s.eps.expect("paced").percentiles.max_ns;
    assert!(max > STALL.as_nanos() as u64 / 2, "ε max {max} ns");
}

/// Both threads send records of the one flow: their IPv4 IDs must not
/// collide (fragment reassembly keys on them).
#[test]
fn threads_number_datagrams_apart() {
    let (s, mut ids) = play(Some(Nanos::from_micros(2)), true);
    assert!(s.series.and_then(|x| x.rescued).is_some_and(|r| r > 0));
    assert_eq!(ids.len(), RECORDS as usize);
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), RECORDS as usize, "an IPv4 ID used twice");
}
