//! A live rate timeline: due times read through it, order kept, the
//! duration in real time, a pause held.

use super::*;
use crate::live::LiveRate;
use sluice_pace::{Change, Timeline};

fn on(b: &mut Bench, t: Timeline) -> Arc<LiveRate> {
    let live = LiveRate::new(t);
    b.cfg.live = Some(live.clone());
    live
}

#[test]
fn every_frame_leaves_when_the_timeline_says() {
    // 0 → 2× over 200 µs, then 2× on; a step to 0.5× at 300 µs.
    let mut t = Timeline::from_points(&[(0, 0.0), (200_000, 2.0)]).unwrap();
    t.change(300_000, Change::Scale(0.5)).unwrap();
    let mut b = Bench::new(1);
    on(&mut b, t.clone());
    let out = b.run(Script::new(steady(500, 0, 1_000, 1)));
    assert_eq!(out.summary().packets, 500);
    let f = &out.sent[0];
    for (i, s) in f.iter().enumerate() {
        assert_eq!(s.seq, i as u64, "in order");
        let due = t.real_of(i as u64 * 1_000, &mut 0).expect("reached");
        assert_eq!(s.at, due, "frame {i}");
    }
    // The ramp's end: D(200 µs) = 200 µs nominal, frame 200 at 200 µs.
    assert_eq!(f[200].at, 200_000);
    // 2× to 300 µs: frame 400 at 300 µs; then 0.5×: frame 401 2 µs later.
    assert_eq!((f[400].at, f[401].at), (300_000, 302_000));
}

#[test]
fn a_pause_shifts_what_follows_and_nothing_before() {
    let mut t = Timeline::constant(1.0);
    t.change(50_000, Change::Pause).unwrap();
    t.change(150_000, Change::Resume).unwrap();
    let mut b = Bench::new(1);
    on(&mut b, t);
    let out = b.run(Script::new(steady(100, 0, 1_000, 4)));
    let mut all: Vec<&Sent> = out.sent.iter().flatten().collect();
    assert_eq!(all.len(), 100);
    all.sort_by_key(|s| s.seq);
    for s in &all {
        let want = if s.seq <= 50 {
            s.seq * 1_000
        } else {
            100_000 + s.seq * 1_000
        };
        assert_eq!(s.at, want, "frame {}", s.seq);
    }
    // Each flow stays on one thread, in order.
    for thread in &out.sent {
        let mut last = [None::<u64>; 4];
        for s in thread {
            let flow = (s.seq % 4) as usize;
            assert!(last[flow] < Some(s.seq), "flow {flow} out of order");
            last[flow] = Some(s.seq);
        }
    }
}

#[test]
fn on_a_live_timeline_the_duration_is_real_time() {
    let mut b = Bench::new(1);
    on(&mut b, Timeline::constant(2.0));
    b.cfg.duration = Some(Nanos(100_000));
    let out = b.run(Script::new(steady(1_000, 0, 1_000, 1)));
    // Due at nominal i µs is real i/2 µs: frames 0..=200 fit in 100 µs.
    assert_eq!(out.summary().packets, 201);
    assert_eq!(out.sent[0].last().map(|s| s.at), Some(100_000));
}

#[test]
fn a_change_before_the_start_applies_from_it() {
    let mut b = Bench::new(1);
    let live = on(&mut b, Timeline::constant(1.0));
    live.change(Change::Scale(4.0), None).unwrap();
    let out = b.run(Script::new(steady(10, 0, 4_000, 1)));
    let at: Vec<u64> = out.sent[0].iter().map(|s| s.at).collect();
    assert_eq!(at, (0..10).map(|i| i * 1_000).collect::<Vec<_>>());
}
