//! The benches' helpers on known inputs: bench/realign.py (per-worker
//! realignment, Fig. 14), bench/nmse_table.py (Figs. 16-17, Table 7),
//! bench/sync_sim.py (Fig. 18's simulated workers), bench/sendloop.py
//! (TCPivo Table 3) and bench/caliper_schedule.py (Caliper Figs. 4, 6).

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

/// A perf report of known samples: each line lands in its part by thread
/// and symbol, and per-packet time is samples / frequency / packets.
#[test]
fn sendloop_puts_each_sample_in_its_part() {
    if !sluice_testkit::require("python3", "bench/sendloop.py") {
        return;
    }
    let report = "\
# comment\n\
    50.00%  1000  sluice-tx0  [kernel.kallsyms]  [k] packet_sendmsg\n\
    20.00%   400  sluice-tx0  [kernel.kallsyms]  [k] net_rx_action\n\
    10.00%   200  sluice-tx0  sluice             [.] <sluice_sink::afpacket::AfPacketSink as sluice_sink::Sink>::send_parts\n\
    10.00%   200  sluice-io   sluice             [.] sluice_capture::reader::CaptureReader::next_packet\n\
     5.00%   100  sluice-io   sluice             [.] sluice_wire::payload::rewrite_payload\n\
     5.00%   100  sluice      libc.so.6          [.] malloc\n";
    let o = Command::new("python3")
        .arg(bench_script("sendloop.py"))
        .args(["1000", "1000", "--json"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write as _;
            c.stdin.take().unwrap().write_all(report.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // 1000 Hz, 1000 packets: a sample is 1 us per packet.
    for (part, us) in [
        ("send: kernel", 1000.0),
        ("sink receive", 400.0),
        ("send: user", 200.0),
        ("trace read", 200.0),
        ("build", 100.0),
        ("other", 100.0),
        ("loop (ours, without the sink)", 1500.0),
    ] {
        let got = v[part]["us_per_packet"].as_f64().unwrap();
        assert!((got - us).abs() < 1e-6, "{part}: {got}");
    }
    assert!((v["send: kernel"]["share"].as_f64().unwrap() - 0.5).abs() < 1e-9);
}

/// The spike-bump schedule and its reference trace agree frame for frame:
/// gaperr.py finds no error of the reference against itself, the gaps are
/// the schedule's, and the sizes and gaps have the law's mix.
#[test]
fn caliper_schedule_writes_a_schedule_and_its_reference() {
    if !sluice_testkit::require("python3", "bench/caliper_schedule.py") {
        return;
    }
    let d = tmpdir("caliper-schedule");
    let (sched, reference) = (d.join("s.txt"), d.join("r.pcap"));
    let (s, r) = (sched.to_str().unwrap(), reference.to_str().unwrap());
    python("caliper_schedule.py", &[s, r, "4000", "spikebump", "6"]);
    let rows: Vec<(u64, usize)> = std::fs::read_to_string(&sched)
        .unwrap()
        .lines()
        .map(|l| {
            let mut w = l.split_whitespace();
            (
                w.next().unwrap().parse().unwrap(),
                w.next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows.len(), 4000);
    let frames = read_all(&reference);
    assert_eq!(frames.len(), 4000);
    for (i, ((ts, f), (gap, size))) in frames.iter().zip(&rows).enumerate() {
        assert_eq!(f.len(), *size, "frame {i}");
        assert_eq!(u64::from_be_bytes(f[42..50].try_into().unwrap()), i as u64);
        if i > 0 {
            assert_eq!(ts - frames[i - 1].0, *gap, "gap before frame {i}");
        }
    }
    let share =
        |p: &dyn Fn(&(u64, usize)) -> bool| rows.iter().filter(|r| p(r)).count() as f64 / 4000.0;
    // Binomial shares of 4000 draws: 5 sd is about 0.04.
    assert!((share(&|r| r.1 == 1514) - 0.5).abs() < 0.04);
    assert!((share(&|r| r.1 == 608) - 0.1).abs() < 0.04);
    assert!((share(&|r| r.0 == 20_000) - 0.6).abs() < 0.04);
    let judged = python("gaperr.py", &[r, r, "--oneline"]);
    assert!(
        judged.contains("received=4000") && judged.contains("max_ns=0"),
        "{judged}"
    );
}
