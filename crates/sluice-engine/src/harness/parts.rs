//! A stream planned in parts, one planner (IO) thread each.

use super::*;
use std::sync::mpsc;
use std::time::Duration;

/// `n` packets of part `k` (sequence numbers `k << 32 | i`), `flows` flows.
fn part(k: u64, n: u64, flows: u64) -> Box<dyn Source> {
    let steps = (0..n)
        .map(|i| Step {
            frame: frame(k << 32 | i),
            due: Due::at(Nanos(i * 10)),
            flow: i % flows,
        })
        .collect();
    Box::new(Script::new(steps))
}

/// Runs `bench` on `parts` on a thread of its own; a run that has not
/// ended within a minute is a deadlock (it takes milliseconds).
fn run_within(bench: Bench, parts: Vec<Box<dyn Source>>) -> Outcome {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(Box::new(bench.run_parts(parts)));
    });
    *rx.recv_timeout(Duration::from_secs(60))
        .expect("the run ended (no planner starves another)")
}

#[test]
fn each_part_feeds_its_own_threads_and_a_short_part_starves_none() {
    // Part 0 ends at once; part 1 needs its batch pool many times over
    // (it must get back every batch its TX threads return).
    let mut bench = Bench::new(4);
    bench.cfg.topspeed = true;
    let out = run_within(bench, vec![part(0, 10, 2), part(1, 300_000, 64)]);
    assert_eq!(out.summary().packets, 300_010);
    for (t, frames) in out.sent.iter().enumerate() {
        // Lane t belongs to part t mod 2, in that part's order per flow.
        assert!(
            frames.iter().all(|f| f.seq >> 32 == t as u64 % 2),
            "lane {t}"
        );
        let mut last = std::collections::HashMap::new();
        for f in frames {
            let i = f.seq & 0xffff_ffff;
            let flows = if t % 2 == 0 { 2 } else { 64 };
            let prev = last.insert(i % flows, i);
            assert!(prev.is_none_or(|p| p < i), "lane {t}: flow reordered");
        }
    }
    let got = |t: usize| out.sent[t].len() + out.sent[t + 2].len();
    assert_eq!((got(0), got(1)), (10, 300_000));
}

#[test]
fn reports_of_the_parts_are_summed() {
    let mut a = Script::new(steady(100, 0, 10, 1));
    let mut b = Script::new(steady(50, 0, 10, 1));
    a.report.counters = vec![("built", 100)];
    b.report.counters = vec![("built", 50)];
    b.report.notes = vec!["from b".into()];
    let out = run_within(Bench::new(2), vec![Box::new(a), Box::new(b)]);
    assert_eq!(out.summary().packets, 150);
    let want: std::collections::BTreeMap<String, u64> = [("built".to_string(), 150)].into();
    assert_eq!(out.summary().source, want);
}

#[test]
fn parts_need_threads_and_no_packet_limit() {
    let out = run_within(Bench::new(1), vec![part(0, 5, 1), part(1, 5, 1)]);
    assert!(matches!(
        out.result,
        Err(EngineError::Parts { parts: 2, lanes: 1 })
    ));
    let mut bench = Bench::new(2);
    bench.cfg.limit = Some(3);
    let out = run_within(bench, vec![part(0, 5, 1), part(1, 5, 1)]);
    assert!(matches!(out.result, Err(EngineError::PartsWithLimit(2))));
}
