//! Order, lanes, ports, limits and batching through the whole engine.

use super::*;

#[test]
fn frames_leave_in_order_at_their_due_times() {
    let out = Bench::new(1).run(Script::new(steady(1_000, 0, 1_000, 1)));
    let s = out.summary();
    assert_eq!((s.packets, s.bytes), (1_000, 64_000));
    assert_eq!(out.seqs(), vec![(0..1_000).collect::<Vec<_>>()]);
    for (i, f) in out.sent[0].iter().enumerate() {
        assert_eq!(f.stamp, i as u64 * 1_000, "frame {i}");
        assert_eq!(f.at, i as u64 * 1_000, "frame {i} left at its due time");
    }
    assert_eq!((s.late, s.dropped), (0, 0));
    let eps = s.eps.as_ref().expect("paced runs report ε");
    assert_eq!((eps.count, eps.percentiles.max_ns), (1_000, 0));
}

#[test]
fn frames_spanning_many_batches_arrive_whole() {
    // 3 000 jumbo frames: batches fill by bytes long before 512 packets.
    let steps: Vec<Step> = (0..3_000u64)
        .map(|i| {
            let mut f = frame(i);
            f.resize(9_000, i as u8);
            Step {
                frame: f,
                due: Due::at(Nanos(i * 100)),
                flow: 0,
            }
        })
        .collect();
    let out = Bench::new(1).run(Script::new(steps));
    assert_eq!(out.summary().bytes, 3_000 * 9_000);
    assert!(out.sent[0].iter().all(|f| f.len == 9_000));
    assert_eq!(out.seqs()[0], (0..3_000).collect::<Vec<_>>());
}

#[test]
fn a_flow_keeps_its_thread_and_its_order() {
    let out = Bench::new(2).run(Script::new(steady(4_000, 0, 1_000, 8)));
    assert_eq!(out.summary().packets, 4_000);
    assert_eq!(out.summary().threads, 2);
    let mut owner = std::collections::HashMap::new();
    for (t, frames) in out.sent.iter().enumerate() {
        let mut last = std::collections::HashMap::new();
        for f in frames {
            let flow = f.seq % 8;
            assert_eq!(*owner.entry(flow).or_insert(t), t, "flow {flow} moved");
            let prev = last.insert(flow, f.seq);
            assert!(prev.is_none_or(|p| p < f.seq), "flow {flow} reordered");
        }
    }
}

#[test]
fn flows_spread_evenly_over_threads() {
    let out = Bench::new(4).run(Script::new(steady(8_000, 0, 100, 16)));
    let per: Vec<usize> = out.sent.iter().map(Vec::len).collect();
    assert_eq!(per, vec![2_000; 4], "16 equal flows over 4 threads");
}

#[test]
fn one_lane_needs_no_flow_keys() {
    // Every packet its own flow: with one thread they all stay on it.
    let out = Bench::new(1).run(Script::new(steady(600, 0, 10, 600)));
    assert_eq!(out.sent[0].len(), 600);
}

#[test]
fn ports_reach_the_sink() {
    let steps: Vec<Step> = (0..100u64)
        .map(|i| Step {
            frame: frame(i),
            due: Due::at(Nanos(i * 10)).on_port((i % 3 == 0) as u8),
            flow: 0,
        })
        .collect();
    for topspeed in [false, true] {
        let mut b = Bench::new(1);
        b.cfg.topspeed = topspeed;
        let out = b.run(Script::new(steps.clone()));
        assert_eq!(out.sent[0].len(), 100);
        for f in &out.sent[0] {
            assert_eq!(f.port, (f.seq % 3 == 0) as u8, "frame {}", f.seq);
        }
    }
}

#[test]
fn a_limit_ends_the_run_at_that_packet() {
    let mut b = Bench::new(1);
    b.cfg.limit = Some(777);
    let out = b.run(Script::new(steady(5_000, 0, 10, 1)));
    assert_eq!(out.summary().packets, 777);
    assert_eq!(out.seqs()[0], (0..777).collect::<Vec<_>>());
}

#[test]
fn a_limit_counts_packets_over_all_threads() {
    let mut b = Bench::new(3);
    b.cfg.limit = Some(1_000);
    let out = b.run(Script::new(steady(5_000, 0, 10, 9)));
    assert_eq!(out.summary().packets, 1_000);
    let mut all: Vec<u64> = out.seqs().concat();
    all.sort_unstable();
    assert_eq!(all, (0..1_000).collect::<Vec<_>>());
}

#[test]
fn the_duration_cuts_packets_due_later() {
    let mut b = Bench::new(1);
    b.cfg.duration = Some(Nanos(50_000));
    let out = b.run(Script::new(steady(1_000, 0, 1_000, 1)));
    // Due 0, 1 µs … 50 µs: 51 packets.
    assert_eq!(out.summary().packets, 51);
    assert_eq!(out.sent[0].last().map(|f| f.stamp), Some(50_000));
}

#[test]
fn stamps_count_from_the_captures_first_timestamp() {
    let mut script = Script::new(steady(10, 0, 1_000, 1));
    script.first_ts = Some(1_700_000_000_000_000_000);
    let out = Bench::new(1).run(script);
    for (i, f) in out.sent[0].iter().enumerate() {
        assert_eq!(f.stamp, 1_700_000_000_000_000_000 + i as u64 * 1_000);
    }
}

#[test]
fn packets_due_together_leave_together_in_push_order() {
    // A burst of 1 000 packets all due at 5 µs.
    let steps: Vec<Step> = (0..1_000u64)
        .map(|i| Step {
            frame: frame(i),
            due: Due::at(Nanos(5_000)),
            flow: 0,
        })
        .collect();
    let out = Bench::new(1).run(Script::new(steps));
    assert_eq!(out.seqs()[0], (0..1_000).collect::<Vec<_>>());
    assert!(out.sent[0].iter().all(|f| f.stamp == 5_000));
}

#[test]
fn an_empty_source_is_an_empty_run() {
    let out = Bench::new(2).run(Script::new(Vec::new()));
    let s = out.summary();
    assert_eq!((s.packets, s.bytes, s.late), (0, 0, 0));
    assert!(out.sent.iter().all(Vec::is_empty));
}

#[test]
fn top_speed_sends_everything_without_pacing() {
    let mut b = Bench::new(1);
    b.cfg.topspeed = true;
    let out = b.run(Script::new(steady(2_000, 0, 1_000_000, 1)));
    let s = out.summary();
    assert_eq!(s.packets, 2_000);
    assert!(s.eps.is_none(), "no ε at top speed");
    // The virtual clock never moved: nothing waited for a due time.
    assert!(out.sent[0].iter().all(|f| f.at == 0));
}
