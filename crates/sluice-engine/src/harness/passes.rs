//! Passes, preload and the hand-over between them.

use super::*;

fn stamps(out: &Outcome) -> Vec<(u64, u64)> {
    out.sent[0].iter().map(|f| (f.seq, f.stamp)).collect()
}

#[test]
fn passes_repeat_the_source_with_time_running_on() {
    let mut b = Bench::new(1);
    b.cfg.passes = 3;
    let out = b.run(Script::new(steady(100, 0, 1_000, 1)).passes(3, 100_000));
    let s = out.summary();
    assert_eq!((s.packets, s.passes), (300, 3));
    let got = stamps(&out);
    for (k, (seq, stamp)) in got.iter().enumerate() {
        assert_eq!(*seq, k as u64 % 100);
        assert_eq!(*stamp, k as u64 * 1_000, "frame {k}");
    }
}

#[test]
fn a_preloaded_run_sends_what_a_streamed_one_does() {
    let run = |preload| {
        let mut b = Bench::new(1);
        b.cfg.passes = 4;
        b.cfg.preload = preload;
        b.run(Script::new(steady(1_500, 0, 700, 1)).passes(4, 1_050_000))
    };
    let (streamed, preloaded) = (run(false), run(true));
    assert_eq!(preloaded.summary().packets, 6_000);
    assert_eq!(stamps(&streamed), stamps(&preloaded));
}

#[test]
fn a_preloaded_source_is_filled_once() {
    let script = Script::new(steady(1_000, 0, 100, 1)).passes(5, 100_000);
    let seen = script.seen.clone();
    let mut b = Bench::new(1);
    b.cfg.passes = 5;
    b.cfg.preload = true;
    let out = b.run(script);
    assert_eq!(out.summary().packets, 5_000);
    assert_eq!(
        seen.lock().unwrap().fills,
        1,
        "later passes come from memory"
    );
}

#[test]
fn a_limit_inside_a_preloaded_pass_cuts_it_there() {
    let mut b = Bench::new(1);
    b.cfg.passes = 0;
    b.cfg.preload = true;
    b.cfg.limit = Some(2_345);
    let out = b.run(Script::new(steady(1_000, 0, 100, 1)).passes(0, 100_000));
    assert_eq!(out.summary().packets, 2_345);
    let seqs = &out.seqs()[0];
    assert_eq!(seqs[2_344], 344);
    assert_eq!(out.sent[0][2_344].stamp, 234_400);
}

#[test]
fn endless_passes_stop_at_the_duration() {
    let mut b = Bench::new(1);
    b.cfg.passes = 0;
    b.cfg.duration = Some(Nanos(1_000_000));
    let out = b.run(Script::new(steady(10, 0, 10_000, 1)).passes(0, 100_000));
    // One packet every 10 µs from 0 to 1 ms inclusive.
    assert_eq!(out.summary().packets, 101);
}

#[test]
fn a_preloaded_run_over_several_threads_keeps_each_flows_order() {
    let mut b = Bench::new(2);
    b.cfg.passes = 3;
    b.cfg.preload = true;
    let out = b.run(Script::new(steady(900, 0, 100, 6)).passes(3, 90_000));
    assert_eq!(out.summary().packets, 2_700);
    // Two threads share one virtual clock, so stamps may tie; the order
    // of each flow's frames is what must hold: its packets, pass by pass.
    for frames in &out.sent {
        for flow in 0..6 {
            let got: Vec<u64> = frames
                .iter()
                .map(|f| f.seq)
                .filter(|s| s % 6 == flow)
                .collect();
            if got.is_empty() {
                continue;
            }
            let pass: Vec<u64> = (0..900).filter(|s| s % 6 == flow).collect();
            assert_eq!(got, pass.repeat(3), "flow {flow}");
        }
    }
}
