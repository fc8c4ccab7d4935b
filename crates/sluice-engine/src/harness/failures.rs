//! Errors, their fault class, stops and what the summary keeps.

use super::*;
use sluice_source::Fault;
use std::sync::atomic::{AtomicBool, Ordering};

fn bad_packet() -> SourceError {
    SourceError::BadPacket {
        file: "t.pcap".into(),
        packet: 300,
        reason: "scripted".into(),
    }
}

fn device_gone() -> SourceError {
    SourceError::Device {
        what: "tap0".into(),
        error: std::io::Error::from_raw_os_error(19),
    }
}

#[test]
fn an_input_error_after_sending_keeps_what_was_sent() {
    let mut script = Script::new(steady(2_000, 0, 100, 1));
    script.fail_at = Some((1_500, bad_packet));
    let out = Bench::new(1).run(script);
    let e = out.result.as_ref().expect_err("the run fails");
    assert_eq!(e.fault(), Fault::Input);
    match e {
        EngineError::AfterSending { error, summary } => {
            assert!(error.to_string().contains("t.pcap: packet 300"), "{error}");
            // What was pushed before the error went out.
            assert_eq!(summary.packets, 1_500);
        }
        other => panic!("expected a summary with the error: {other}"),
    }
    assert_eq!(out.sent[0].len(), 1_500);
}

#[test]
fn an_error_before_any_packet_has_no_summary() {
    let mut script = Script::new(steady(10, 0, 100, 1));
    script.fail_at = Some((0, bad_packet));
    let out = Bench::new(1).run(script);
    assert!(matches!(out.result, Err(EngineError::Source(_))));
}

#[test]
fn a_device_failing_is_the_environments_fault() {
    let mut script = Script::new(steady(100, 0, 100, 1));
    script.origin = Origin::Live;
    script.fail_at = Some((50, device_gone));
    let out = Bench::new(1).run(script);
    let e = out.result.as_ref().expect_err("fails");
    assert_eq!(e.fault(), Fault::Environment);
}

#[test]
fn a_sink_failing_stops_the_run_and_names_the_sink() {
    let mut b = Bench::new(1);
    b.sinks[0].fail_at = Some(700);
    let out = b.run(Script::new(steady(2_000, 0, 100, 1)));
    let e = out.result.as_ref().expect_err("fails");
    assert_eq!(e.fault(), Fault::Environment);
    assert!(e.to_string().contains("rec0: failed on purpose"), "{e}");
    match e {
        EngineError::AfterSending { summary, .. } => assert_eq!(summary.packets, 700),
        other => panic!("{other}"),
    }
}

#[test]
fn one_thread_failing_stops_the_others() {
    let mut b = Bench::new(2);
    b.sinks[1].fail_at = Some(10);
    let out = b.run(Script::new(steady(100_000, 0, 100, 4)));
    assert!(out.result.is_err());
    let sent: usize = out.sent.iter().map(Vec::len).sum();
    assert!(sent < 100_000, "the run went on after a fatal error");
}

#[test]
fn oversize_frames_are_counted_and_skipped() {
    let mut b = Bench::new(1);
    b.sinks[0].mtu = Some(100);
    let steps: Vec<Step> = (0..50u64)
        .map(|i| {
            let mut f = frame(i);
            if i % 5 == 0 {
                f.resize(200, 0);
            }
            Step {
                frame: f,
                due: Due::at(Nanos(i * 100)),
                flow: 0,
            }
        })
        .collect();
    let out = b.run(Script::new(steps));
    let s = out.summary();
    assert_eq!((s.packets, s.oversize), (40, 10));
    assert!(out.sent[0].iter().all(|f| f.seq % 5 != 0));
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("larger than the interface")),
        "{:?}",
        s.warnings
    );
}

/// `packets` steady packets, the stop flag raised by the sink after its
/// 1 234th send (as SIGINT would); the flag comes back with the outcome.
fn stopped(topspeed: bool, packets: u64) -> (Outcome, Arc<AtomicBool>) {
    let mut b = Bench::new(1);
    b.cfg.topspeed = topspeed;
    let stop = Arc::new(AtomicBool::new(false));
    b.cfg.stop = stop.clone();
    b.sinks[0].stop_after = Some((1_234, stop.clone()));
    (b.run(Script::new(steady(packets, 0, 100, 1))), stop)
}

#[test]
fn a_stop_ends_the_run_cleanly_and_says_interrupted() {
    let (out, stop) = stopped(false, 1_000_000);
    let s = out.summary();
    assert!(s.interrupted);
    assert!(stop.load(Ordering::Relaxed));
    assert_eq!(s.packets, out.sent[0].len() as u64);
    assert!(s.packets >= 1_234 && s.packets < 1_000_000);
}

#[test]
fn the_sources_report_reaches_the_summary() {
    let mut script = Script::new(steady(10, 0, 100, 1));
    script.report = SourceReport {
        skipped_unsupported: 3,
        rewritten: 7,
        truncation: Some("t.pcap: last record cut".into()),
        notes: vec!["a note".into()],
        counters: vec![("arrived", 42)],
    };
    let out = Bench::new(1).run(script);
    let s = out.summary();
    assert_eq!((s.skipped_unsupported, s.rewritten), (3, 7));
    assert_eq!(s.source.get("arrived"), Some(&42));
    assert!(s
        .warnings
        .iter()
        .any(|w| w.starts_with("t.pcap: last record cut")));
    assert!(s.warnings.iter().any(|w| w == "a note"));
}

/// At top speed packets skip pacing, not the checks: a failed sink and a
/// stop end the unit at the packet they happen on.
#[test]
fn at_top_speed_a_failure_and_a_stop_end_the_unit_at_once() {
    let mut b = Bench::new(1);
    b.cfg.topspeed = true;
    b.sinks[0].fail_at = Some(700);
    let out = b.run(Script::new(steady(2_000, 0, 100, 1)));
    match out.result.as_ref().expect_err("fails") {
        EngineError::AfterSending { summary, .. } => assert_eq!(summary.packets, 700),
        other => panic!("{other}"),
    }
    assert_eq!(out.sent[0].len(), 700, "nothing after the failure");

    let (out, _) = stopped(true, 100_000);
    let s = out.summary();
    assert!(s.interrupted);
    assert_eq!(s.packets, 1_234, "the stop ends the unit at that packet");
    assert_eq!(out.seqs()[0], (0..1_234).collect::<Vec<_>>());
}
