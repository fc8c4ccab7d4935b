//! Lateness, drift drops, gaps kept and catch-up, on a clock the sink
//! moves.

use super::*;

#[test]
fn a_slow_link_makes_frames_late_and_the_summary_says_so() {
    let mut b = Bench::new(1);
    // Each frame costs 3 µs of a 2 µs gap: lateness grows by 1 µs a frame.
    b.sinks[0].cost = Nanos(3_000);
    b.cfg.late_threshold = Nanos(10_000);
    let out = b.run(Script::new(steady(100, 0, 2_000, 1)));
    let s = out.summary();
    assert_eq!(s.packets, 100);
    // Frame k leaves k µs late (its ε): late once k > 10.
    assert_eq!(s.late, 100 - 11);
    let eps = s.eps.as_ref().expect("ε");
    let max = eps.percentiles.max_ns;
    assert!(max.abs_diff(99_000) <= 100, "max ε {max}");
}

#[test]
fn past_the_drift_window_frames_are_dropped_not_sent() {
    let mut b = Bench::new(1);
    b.cfg.drift = Some(Nanos(20_000));
    // The 10th frame stalls the link for 100 µs.
    b.sinks[0].stall = Some((10, Nanos(100_000)));
    let out = b.run(Script::new(steady(200, 0, 1_000, 1)));
    let s = out.summary();
    // Frame 10 goes out at 110 µs; frames due before 90 µs are > T_d late.
    let sent: Vec<u64> = out.seqs()[0].clone();
    assert!(sent.contains(&10) && sent.contains(&90) && sent.contains(&199));
    let dropped: Vec<u64> = (11..90).collect();
    assert!(dropped.iter().all(|d| !sent.contains(d)), "{sent:?}");
    assert_eq!(s.dropped, dropped.len() as u64);
    assert_eq!(s.packets + s.dropped, 200);
}

#[test]
fn without_a_drift_window_late_frames_catch_up_at_once() {
    let mut b = Bench::new(1);
    b.sinks[0].stall = Some((10, Nanos(100_000)));
    let out = b.run(Script::new(steady(200, 0, 1_000, 1)));
    let f = &out.sent[0];
    assert_eq!(f.len(), 200);
    // Frames 11 … 109 were due by 110 µs: they leave back to back.
    assert!(
        f[11..110].iter().all(|x| x.at == 110_000),
        "{:?}",
        &f[11..14]
    );
    // Then the schedule holds again.
    assert_eq!(f[150].at, 150_000);
}

#[test]
fn a_chained_gap_holds_and_catches_up_only_after_a_stall() {
    let mut b = Bench::new(1);
    b.sinks[0].stall = Some((10, Nanos(100_000)));
    // Every frame keeps 10 µs after the one before it (sluice pace).
    let steps: Vec<Step> = (0..150u64)
        .map(|i| Step {
            frame: frame(i),
            due: Due::at(Nanos(i * 10_000)).with_spacing(10_000),
            flow: 0,
        })
        .collect();
    let out = b.run(Script::new(steps));
    let f = &out.sent[0];
    assert_eq!(f.len(), 150);
    // The first frame keeps its gap after the start: each leaves 10 µs
    // after its plan, a steady lateness (up to STALL_NS) that no gap
    // gives anything up for.
    assert_eq!((f[0].at, f[9].at), (10_000, 100_000));
    for w in f[..10].windows(2) {
        assert_eq!(w[1].at - w[0].at, 10_000);
    }
    // Frame 10 was let go at 110 µs and stalled the link inside its send
    // until 210 µs; frame 11, whose spacing put it at 120 µs, leaves then,
    // its chain 90 µs behind.
    assert_eq!(f[11].at, 210_000);
    // Past MAX_CHAIN_LATE_NS the stall's excess is given up: the chain is
    // 50 µs behind. Then each gap gives up a tenth (1 µs) until it is back
    // to STALL_NS behind (frame 51), never in a burst; then gaps are whole.
    for (k, w) in f[11..].windows(2).enumerate() {
        let want = if k + 12 <= 51 { 9_000 } else { 10_000 };
        assert_eq!(
            w[1].at - w[0].at,
            want,
            "frames {} and {}",
            w[0].seq,
            w[1].seq
        );
    }
    assert_eq!(f[149].at, 210_000 + 40 * 9_000 + 98 * 10_000);
}

#[test]
fn a_gap_is_kept_only_where_asked() {
    let mut b = Bench::new(1);
    b.sinks[0].stall = Some((5, Nanos(10_000)));
    let steps: Vec<Step> = (0..20u64)
        .map(|i| Step {
            frame: frame(i),
            due: if i == 12 {
                Due::at(Nanos(i * 1_000)).with_spacing(4_000)
            } else {
                Due::at(Nanos(i * 1_000))
            },
            flow: 0,
        })
        .collect();
    let out = b.run(Script::new(steps));
    let f = &out.sent[0];
    // 6 … 11 catch up at 15 µs; 12 keeps 4 µs after 11.
    assert_eq!(f[11].at, 15_000);
    assert_eq!(f[12].at, 19_000);
}

#[test]
fn intervals_report_growing_counts_and_rates() {
    let mut b = Bench::new(1);
    b.cfg.stats_interval = Nanos::from_millis(1);
    // 10 ms of packets every 10 µs.
    let out = b.run(Script::new(steady(1_000, 0, 10_000, 1)));
    assert!(!out.intervals.is_empty());
    for w in out.intervals.windows(2) {
        assert!(w[1].packets >= w[0].packets);
        assert!(w[1].t >= w[0].t);
    }
    assert_eq!(out.intervals.last().map(|i| i.packets), Some(1_000));
}

#[test]
fn the_summary_rate_is_packets_over_the_sending_time() {
    let out = Bench::new(1).run(Script::new(steady(1_001, 0, 1_000, 1)));
    let s = out.summary();
    // 1 001 packets over exactly 1 ms.
    assert!((s.duration_s - 0.001).abs() < 1e-12, "{}", s.duration_s);
    let pps = s.pps.expect("pps");
    assert!((pps - 1_001_000.0).abs() < 1.0, "{pps}");
}
