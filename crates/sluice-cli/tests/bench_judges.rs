//! The distributed bench's helpers on known inputs: bench/realign.py
//! (per-worker realignment, Fig. 14), bench/nmse_table.py (Figs. 16-17,
//! Table 7) and bench/sync_sim.py (Fig. 18's simulated workers).

mod common;
use common::*;
use sluice_testkit::bench_script;
use std::process::Command;

fn python(script: &str, args: &[&str]) -> String {
    let o = Command::new("python3")
        .arg(bench_script(script))
        .args(args)
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// Three workers' shares of one stream (packet k to worker k mod 3, 1 ms
/// apart), captured on clocks 0, +7 us and -3 us off: realigned, the
/// merge is the stream again, in order, 1 ms apart.
#[test]
fn realign_puts_each_worker_back_on_the_common_start() {
    if !sluice_testkit::require("python3", "bench/realign.py") {
        return;
    }
    let d = tmpdir("realign");
    let skew = [0i64, 7_000, -3_000];
    let t0 = 1_000_000_000_000u64;
    let mut caps = Vec::new();
    for (w, s) in skew.iter().enumerate() {
        let frames: Vec<(u64, Vec<u8>)> = (0..30u64)
            .filter(|k| k % 3 == w as u64)
            .map(|k| (((t0 + k * 1_000_000) as i64 + s) as u64, frame(k, 64)))
            .collect();
        let p = d.join(format!("cap{w}.pcap"));
        write_frames(&p, &frames);
        caps.push(p);
    }
    let out = d.join("re.pcap");
    let mut args = vec![out.to_str().unwrap()];
    args.extend(caps.iter().map(|p| p.to_str().unwrap()));
    // First frames together: worker 1 starts 1 ms after worker 0 in the
    // stream, so aligning first frames is not this; offsets are.
    let shifts = python(
        "realign.py",
        &[&args[..], &["--offsets", "0,7000,-3000"]].concat(),
    );
    assert_eq!(shifts.trim(), "shift_ns=0,-7000,3000");
    let got = read_all(&out);
    assert_eq!(got.len(), 30);
    for (k, (t, f)) in got.iter().enumerate() {
        assert_eq!(*t, t0 + k as u64 * 1_000_000, "frame {k}");
        assert_eq!(f, &frame(k as u64, 64));
    }
    // Without offsets the first frames are put together.
    let shifts = python("realign.py", &args);
    assert_eq!(shifts.trim(), "shift_ns=0,-1007000,-1997000");
}

#[test]
fn nmse_table_normalizes_to_one_worker_and_finds_the_highest_load() {
    if !sluice_testkit::require("python3", "bench/nmse_table.py") {
        return;
    }
    let d = tmpdir("nmse-table");
    let rows = d.join("rows.txt");
    // load workers split hist hist_realigned series series_realigned
    std::fs::write(
        &rows,
        "0.3 1 packets 1e-3 1e-3 2e-2 2e-2\n\
         0.3 2 packets 8e-4 5e-4 1e-2 1e-2\n\
         0.6 1 packets 4e-3 4e-3 3e-2 3e-2\n\
         0.6 2 packets 2e-3 9e-4 2e-2 1e-2\n\
         0.9 2 packets 5e-3 2e-3 2e-2 1e-2\n",
    )
    .unwrap();
    let out = python("nmse_table.py", &[rows.to_str().unwrap()]);
    assert!(
        out.contains("packets load 0.3: 1: 1.00/1.00/1.00  2: 0.80/0.50/0.50"),
        "{out}"
    );
    assert!(
        out.contains("packets load 0.6: 1: 1.00/1.00/1.00  2: 0.50/0.22/0.33"),
        "{out}"
    );
    // Threshold: one worker's realigned hist NMSE at 0.3 (1e-3); one
    // worker exceeds it at 0.6, two stay within it up to 0.6.
    assert!(
        out.contains("packets: threshold 1.000e-03; 1 workers: 0.3  2 workers: 0.6"),
        "{out}"
    );
}

/// Fig. 18's simulated workers: queue q (UDP source port 1024 + q) is
/// worker q; a worker's capability delays a packet due too soon after its
/// last one, and a start error moves a worker's packets together, gaps
/// kept; every packet comes out once, in time order.
#[test]
fn sync_sim_delays_past_the_capability_and_moves_whole_workers() {
    if !sluice_testkit::require("python3", "bench/sync_sim.py") {
        return;
    }
    let d = tmpdir("sync-sim");
    let t0 = 1_000_000_000_000u64;
    let on = |q: u8, seq: u64| {
        let mut f = frame(seq, 64);
        f[35] = q;
        f
    };
    let input = d.join("f.pcap");
    let frames = vec![
        (t0, on(0, 0)),
        (t0, on(1, 3)),
        (t0 + 1_000, on(0, 1)),
        (t0 + 2_000, on(0, 2)),
        (t0 + 50_000, on(1, 4)),
    ];
    write_frames(&input, &frames);
    let out = d.join("m.pcap");
    let (i, o) = (input.to_str().unwrap(), out.to_str().unwrap());
    // 100 kpps: a packet every 10 us at most.
    let line = python("sync_sim.py", &[i, "2", o, "--cap", "100000"]);
    assert!(
        line.contains("workers=2") && line.contains("delayed=2"),
        "{line}"
    );
    let got: Vec<(u64, u64)> = read_all(&out)
        .iter()
        .map(|(t, f)| (t - t0, u64::from_be_bytes(f[42..50].try_into().unwrap())))
        .collect();
    assert_eq!(got, [(0, 0), (0, 3), (10_000, 1), (20_000, 2), (50_000, 4)]);
    // A start error per worker, no drift: each worker's own gaps stay.
    let line = python(
        "sync_sim.py",
        &[i, "2", o, "--start-us", "1000", "--seed", "3"],
    );
    assert!(line.contains("delayed=0"), "{line}");
    let got = read_all(&out);
    assert_eq!(got.len(), 5);
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0), "time order");
    let at = |seq: u64| {
        got.iter()
            .find(|(_, f)| f[42..50] == seq.to_be_bytes())
            .unwrap()
            .0
    };
    assert_eq!(
        (at(1) - at(0), at(2) - at(1), at(4) - at(3)),
        (1_000, 1_000, 50_000)
    );
    assert_ne!(at(3), at(0), "the two workers' starts differ");
    // A port that is no queue of the run is refused.
    let o2 = Command::new("python3")
        .arg(bench_script("sync_sim.py"))
        .args([i, "1", o])
        .output()
        .unwrap();
    assert!(!o2.status.success());
    assert!(String::from_utf8_lossy(&o2.stderr).contains("source port 1025"));
}
