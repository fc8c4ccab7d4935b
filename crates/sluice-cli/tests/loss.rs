//! `--loss PCT`: frames dropped on purpose as they leave, seeded and
//! counted, end to end through the command line on a virtual clock.

mod common;
use common::*;

/// Replays `trace` 100 times to `out` with `--loss`, returning the
/// summary.
fn lossy(trace: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let to = format!("pcap:{}", out.display());
    let mut args = vec!["--loop", "100", "--topspeed", "--to", &to];
    args.extend_from_slice(extra);
    let (o, v) = replay_summary(trace, &args);
    assert!(o.status.success(), "{}", stderr(&o));
    v
}

#[test]
fn ten_percent_of_100000_frames_are_dropped_within_4_sigma_and_the_seed_picks_them() {
    let d = tmpdir("loss");
    let trace = d.join("t.pcap");
    write_trace(&trace, 1000, 1_000, 64);
    let (a, b, c) = (d.join("a.pcap"), d.join("b.pcap"), d.join("c.pcap"));
    let s = lossy(&trace, &a, &["--loss", "10"]);
    let (sent, lost) = (
        s["packets"].as_u64().unwrap(),
        s["loss_dropped"].as_u64().unwrap(),
    );
    assert_eq!(sent + lost, 100_000, "{s}");
    // Binomial(100000, 0.1): mean 10000, σ ≈ 94.9.
    let sigma = (100_000f64 * 0.1 * 0.9).sqrt();
    assert!(
        (lost as f64 - 10_000.0).abs() <= 4.0 * sigma,
        "{lost} dropped"
    );
    assert_eq!(
        frames_of(&a).len() as u64,
        sent,
        "what the summary counts left"
    );
    // The same seed drops the same frames; another seed others.
    lossy(&trace, &b, &["--loss", "10%"]);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    lossy(&trace, &c, &["--loss", "10", "--loss-seed", "7"]);
    assert_ne!(frames_of(&a), frames_of(&c));
    // 0 drops nothing, 100 everything; beyond is refused.
    assert_eq!(lossy(&trace, &c, &["--loss", "0"])["loss_dropped"], 0);
    let s = lossy(&trace, &c, &["--loss", "100"]);
    assert_eq!(
        (s["packets"].as_u64(), s["loss_dropped"].as_u64()),
        (Some(0), Some(100_000))
    );
    let o = run(&["replay", trace.to_str().unwrap(), "--loss", "101"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("between 0 and 100"), "{}", stderr(&o));
}
