//! The run context a source is told, and departure fates.

use super::*;
use sluice_source::Fate;

#[test]
fn every_source_begins_with_its_lanes_and_no_start_unless_live() {
    let script = Script::new(steady(10, 0, 100, 1));
    let seen = script.seen.clone();
    Bench::new(3).run(script).summary();
    assert_eq!(seen.lock().unwrap().begun, Some((None, 3, false)));
}

#[test]
fn a_live_source_is_told_the_start_before_it_runs() {
    let mut script = Script::new(steady(10, 0, 100, 1));
    script.origin = Origin::Live;
    let seen = script.seen.clone();
    let out = Bench::new(1).run(script);
    assert_eq!(out.summary().packets, 10);
    let begun = seen.lock().unwrap().begun;
    assert_eq!(begun, Some((Some(MonoTime(0)), 1, false)));
}

#[test]
fn a_live_source_ends_itself_at_the_duration_the_others_are_cut() {
    // Frames due every 1 µs for 10 µs; the run's duration is 4.5 µs.
    let run = |origin| {
        let mut b = Bench::new(1);
        b.cfg.duration = Some(Nanos(4_500));
        let mut script = Script::new(steady(10, 0, 1_000, 1));
        script.origin = origin;
        let seen = script.seen.clone();
        let packets = b.run(script).summary().packets;
        let told = seen.lock().unwrap().duration;
        (packets, told)
    };
    assert_eq!(run(Origin::Memory), (5, None), "the engine cuts at 4.5 µs");
    // The script does not stop itself, so every frame it pushed leaves:
    // the engine neither refuses them nor stops the TX thread.
    assert_eq!(run(Origin::Live), (10, Some(Nanos(4_500))));
}

#[test]
fn fates_come_back_in_push_order_with_departure_times() {
    let mut b = Bench::new(1);
    b.cfg.drift = Some(Nanos(5_000));
    b.sinks[0].stall = Some((3, Nanos(20_000)));
    let mut script = Script::new(steady(40, 0, 1_000, 1));
    script.fates = true;
    let seen = script.seen.clone();
    let out = b.run(script);
    let s = out.summary();
    let fates = seen
        .lock()
        .unwrap()
        .fates
        .clone()
        .expect("fates handed over");
    let mut got = Vec::new();
    while let Some(f) = fates.take() {
        got.push(f);
    }
    assert_eq!(got.len(), 40, "one fate per frame pushed");
    let dropped = got.iter().filter(|f| **f == Fate::Dropped).count() as u64;
    assert_eq!(dropped, s.dropped);
    assert!(dropped > 0, "the stall put frames past T_d");
    // A sent frame's fate is its departure on the run's time base: the
    // moment the sink took it (after the stall inside its send), flushed.
    let sent: Vec<u64> = got
        .iter()
        .filter_map(|f| match f {
            Fate::Sent(t) => Some(t.0),
            _ => None,
        })
        .collect();
    let left: Vec<u64> = out.sent[0].iter().map(|f| f.at).collect();
    assert_eq!(sent, left);
}

#[test]
fn a_source_that_wants_fates_runs_on_one_thread_only() {
    let mut script = Script::new(steady(10, 0, 100, 1));
    script.fates = true;
    let out = Bench::new(2).run(script);
    match out.result {
        Err(EngineError::FatesOnOneThread(2)) => {}
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("two threads accepted"),
    }
}

#[test]
fn fates_flush_each_frame_as_it_leaves() {
    let b = Bench::new(1);
    let flushes = b.sinks[0].flushes.clone();
    let mut script = Script::new(steady(100, 0, 1_000, 1));
    script.fates = true;
    b.run(script).summary();
    assert!(*flushes.lock().unwrap() >= 100);
}
