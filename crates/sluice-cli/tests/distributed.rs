//! Distributed generation on one host, as CI can: workers are separate
//! `sluice worker` processes, each in its own network namespace with a
//! veth into a shared sink namespace (a bridge there) and a control link
//! to the root namespace, where `sluice control run` drives them over
//! mutual TLS. Captures in the sink namespace (tcpdump, on each worker's
//! port) judge the result.

mod common;
mod netns;

use common::*;
use netns::sh;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PPS: u64 = 2000;

/// One test at a time: timing on two CPUs does not survive three labs at
/// once (their names and control subnets are each lab's own).
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits until a worker's log says it listens.
fn listening(log: &Path) {
    let t0 = Instant::now();
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .contains("listening")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{}: no worker started",
            log.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A TLS worker on 127.0.0.1:`port` with the keys of `keys`, its stderr in
/// `log`, returned once it listens (reaped when dropped).
fn loopback_worker(port: u16, keys: &Path, log: &Path) -> Reaped {
    let worker = Reaped(
        sluice()
            .args(["worker", "--listen", &format!("127.0.0.1:{port}"), "--tls"])
            .arg(keys)
            .arg("--work-dir")
            .arg(log.parent().unwrap())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .unwrap(),
    );
    listening(log);
    worker
}

/// Sink namespace with a bridge, and one namespace per worker.
struct Lab {
    tag: String,
    /// Worker i's control link: a /24 the host does not use, held while
    /// the lab exists (its root-namespace end has an address).
    nets: Vec<sluice_testkit::SubnetLease>,
    workers: Vec<Child>,
    logs: Vec<PathBuf>,
}

impl Lab {
    fn sink(&self) -> String {
        format!("s{}", self.tag)
    }
    fn wns(&self, i: usize) -> String {
        format!("w{i}{}", self.tag)
    }
    /// The worker's sending interface (in its namespace).
    fn tx(&self, i: usize) -> String {
        format!("t{i}{}a", self.tag)
    }
    /// Its peer in the sink namespace, a bridge port.
    fn rx(&self, i: usize) -> String {
        format!("t{i}{}b", self.tag)
    }
    fn addr(&self, i: usize) -> String {
        format!("{}:7700", self.nets[i].host(2))
    }

    fn up(n: usize) -> Lab {
        // Names no one on the host has (so only the lab's own are made
        // and deleted), and control subnets the host does not route.
        let stem = format!("{}", std::process::id() % 100_000);
        let names = |t: &str| {
            let mut v = vec![format!("s{t}")];
            for i in 0..n {
                v.extend([format!("w{i}{t}"), format!("c{i}{t}r"), format!("c{i}{t}w")]);
                v.extend([format!("t{i}{t}a"), format!("t{i}{t}b")]);
                v.extend([format!("u{i}{t}a"), format!("u{i}{t}b")]);
            }
            v
        };
        let tag = std::iter::once(stem.clone())
            .chain(('c'..='z').map(|c| format!("{stem}{c}")))
            .find(|t| names(t).iter().all(|n| sluice_testkit::name_free(n)))
            .unwrap_or_else(|| panic!("lab names {stem}..{stem}z are all taken on this host"));
        let nets = (0..n)
            .map(|_| sluice_testkit::free_subnet(sluice_testkit::Subnet([10, 78, 0])))
            .collect();
        let lab = Lab {
            tag,
            nets,
            workers: Vec::new(),
            logs: Vec::new(),
        };
        let s = lab.sink();
        sh(&["ip", "netns", "add", &s]);
        let ns = |ns: &str, args: &[&str]| {
            let mut v = vec!["ip", "netns", "exec", ns];
            v.extend_from_slice(args);
            sh(&v);
        };
        ns(&s, &["ip", "link", "add", "br0", "type", "bridge"]);
        ns(&s, &["ip", "link", "set", "br0", "up"]);
        for i in 0..n {
            let (w, tx, rx) = (lab.wns(i), lab.tx(i), lab.rx(i));
            let (cr, cw) = (format!("c{i}{}r", lab.tag), format!("c{i}{}w", lab.tag));
            sh(&["ip", "netns", "add", &w]);
            sh(&[
                "ip", "link", "add", &tx, "type", "veth", "peer", "name", &rx,
            ]);
            sh(&["ip", "link", "set", &tx, "netns", &w]);
            sh(&["ip", "link", "set", &rx, "netns", &s]);
            sh(&[
                "ip", "link", "add", &cr, "type", "veth", "peer", "name", &cw,
            ]);
            sh(&["ip", "link", "set", &cw, "netns", &w]);
            sh(&["ip", "addr", "add", &lab.nets[i].cidr(1), "dev", &cr]);
            sh(&["ip", "link", "set", &cr, "up"]);
            ns(&w, &["ip", "addr", "add", &lab.nets[i].cidr(2), "dev", &cw]);
            for dev in [&cw, &tx, &"lo".to_string()] {
                ns(&w, &["ip", "link", "set", dev, "up"]);
            }
            ns(
                &w,
                &[
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{tx}.disable_ipv6=1"),
                ],
            );
            ns(
                &s,
                &[
                    "sysctl",
                    "-qw",
                    &format!("net.ipv6.conf.{rx}.disable_ipv6=1"),
                ],
            );
            ns(&s, &["ip", "link", "set", &rx, "master", "br0"]);
            ns(&s, &["ip", "link", "set", &rx, "up"]);
        }
        lab
    }

    /// Starts worker i with `extra` options; its log goes to `dir`.
    fn worker(&mut self, i: usize, dir: &Path, extra: &[&str]) {
        let n = self.logs.iter().filter(|l| l.starts_with(dir)).count();
        let log = dir.join(format!("worker{i}-{n}.log"));
        if let Some(old) = self.workers.get_mut(i) {
            // A worker started again in its place: the old one lets go of
            // the address first (a new one binding first would fail).
            let _ = old.kill();
            let _ = old.wait();
        }
        let child = Command::new("ip")
            .args(["netns", "exec", &self.wns(i)])
            .arg(env!("CARGO_BIN_EXE_sluice"))
            .args(["worker", "--listen", &self.addr(i)])
            .arg("--work-dir")
            .arg(dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        if i < self.workers.len() {
            self.workers[i] = child;
            self.logs[i] = log.clone();
        } else {
            self.workers.push(child);
            self.logs.push(log.clone());
        }
        listening(&log);
    }

    fn capture(&self, i: usize, out: &Path) -> Child {
        netns::tcpdump(&self.sink(), &self.rx(i), out, &["-Q", "in", "-s", "2048"])
    }

    /// Worker i's second sending interface (`u{i}…a`, made by
    /// [`second_port`](Self::second_port)).
    fn tx2(&self, i: usize) -> String {
        format!("u{i}{}a", self.tag)
    }

    /// A second link from worker i's namespace to the sink's bridge.
    fn second_port(&self, i: usize) {
        let (w, s) = (self.wns(i), self.sink());
        let (tx, rx) = (self.tx2(i), format!("u{i}{}b", self.tag));
        sh(&[
            "ip", "link", "add", &tx, "type", "veth", "peer", "name", &rx,
        ]);
        sh(&["ip", "link", "set", &tx, "netns", &w]);
        sh(&["ip", "link", "set", &rx, "netns", &s]);
        for (ns, dev) in [(&w, &tx), (&s, &rx)] {
            let v6 = format!("net.ipv6.conf.{dev}.disable_ipv6=1");
            sh(&["ip", "netns", "exec", ns, "sysctl", "-qw", &v6]);
        }
        sh(&[
            "ip", "netns", "exec", &s, "ip", "link", "set", &rx, "master", "br0",
        ]);
        sh(&["ip", "netns", "exec", &s, "ip", "link", "set", &rx, "up"]);
        sh(&["ip", "netns", "exec", &w, "ip", "link", "set", &tx, "up"]);
    }

    fn capture2(&self, i: usize, out: &Path) -> Child {
        let rx = format!("u{i}{}b", self.tag);
        netns::tcpdump(&self.sink(), &rx, out, &["-Q", "in", "-s", "2048"])
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(&self.logs[i]).unwrap_or_default()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for w in &mut self.workers {
            let _ = w.kill();
            let _ = w.wait();
        }
        for i in 0..self.nets.len() {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.wns(i)])
                .output();
        }
        let _ = Command::new("ip")
            .args(["netns", "del", &self.sink()])
            .output();
    }
}

/// A trace of `n` UDP frames of 600 flows (source port 1000 + i mod 600),
/// the sequence number at byte 42.
fn flows_trace(path: &Path, n: u64) {
    let frames: Vec<(u64, Vec<u8>)> = (0..n)
        .map(|i| {
            let mut f = frame(i, 100);
            let sport = 1000 + (i % 600) as u16;
            f[34..36].copy_from_slice(&sport.to_be_bytes());
            (1_000_000_000 + i * 1_000, f)
        })
        .collect();
    write_frames(path, &frames);
}

/// A test directory with keys (`keygen`) and a trace of `frames` frames
/// (`flows_trace`): (directory, keys, trace).
fn keyed(tag: &str, frames: u64) -> (Scratch, PathBuf, PathBuf) {
    let d = tmpdir(tag);
    let keys = d.join("keys");
    assert!(run(&["keygen", keys.to_str().unwrap()]).status.success());
    let trace = d.join("t.pcap");
    flows_trace(&trace, frames);
    (d, keys, trace)
}

fn seq(f: &[u8]) -> u64 {
    u64::from_be_bytes(f[42..50].try_into().unwrap())
}

fn plan(dir: &Path, lab: &Lab, n: usize, trace: &str, args: &[&str], duration: &str) -> PathBuf {
    job_plan(dir, lab, n, "replay", trace, args, duration, None)
}

/// The sink kind the workers of [`job_plan`] send on (`afpacket` unless a
/// test says otherwise).
static SINK_KIND: std::sync::Mutex<&str> = std::sync::Mutex::new("afpacket");

#[allow(clippy::too_many_arguments)]
fn job_plan(
    dir: &Path,
    lab: &Lab,
    n: usize,
    command: &str,
    file: &str,
    args: &[&str],
    duration: &str,
    split: Option<&str>,
) -> PathBuf {
    let mut y = String::from("workers:\n");
    let kind = *SINK_KIND.lock().unwrap_or_else(|e| e.into_inner());
    for i in 0..n {
        y += &format!(
            "  - {{name: w{i}, address: \"{}\", to: \"{kind}:{}\"}}\n",
            lab.addr(i),
            lab.tx(i)
        );
    }
    let args: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    y += &format!(
        "job:\n  command: {command}\n  file: {file}\n  args: [{}]\n  duration: {duration}\n",
        args.join(", ")
    );
    if let Some(sp) = split {
        y += &format!("split: {sp}\n");
    }
    let p = dir.join("plan.yaml");
    std::fs::write(&p, y).unwrap();
    p
}

fn control(
    plan: &Path,
    keys: &Path,
    summary: &Path,
    extra: &[&str],
) -> (std::process::Output, Value) {
    let o = sluice()
        .args(["control", "run"])
        .arg(plan)
        .arg("--tls")
        .arg(keys)
        .arg("--summary-json")
        .arg(summary)
        .arg("-q")
        .args(extra)
        // The default (100 µs) refuses a run whose clock exchange a loaded
        // machine slowed; a test that is about the skew passes its own.
        .args(if extra.contains(&"--max-skew") {
            &[][..]
        } else {
            &["--max-skew", "5ms"][..]
        })
        .output()
        .unwrap();
    let v = std::fs::read(summary)
        .map(|b| sluice_testkit::checked_json(&b))
        .unwrap_or(Value::Null);
    (o, v)
}

/// Per worker: when its schedule started on the host's clock, as the
/// capture shows it: the smallest (capture time − due time) over its
/// frames. A frame is never early, only late (a wake-up, a VM pause, the
/// other workers on the same two CPUs), so the smallest is the one sent on
/// time; the first frame alone carries its own lateness (printed too).
fn starts(caps: &[Vec<(u64, Vec<u8>)>]) -> (Vec<i64>, Vec<i64>) {
    let at = |(ts, f): &(u64, Vec<u8>)| *ts as i64 - (seq(f) * 1_000_000_000 / PPS) as i64;
    let first = caps.iter().map(|c| at(&c[0])).collect();
    let best = caps
        .iter()
        .map(|c| c.iter().map(at).min().unwrap())
        .collect();
    (best, first)
}

fn spread(v: &[i64]) -> i64 {
    v.iter().max().unwrap() - v.iter().min().unwrap()
}

#[test]
fn three_workers_split_a_replay_exactly_once_on_corrected_clocks() {
    if !netns::can_run() {
        return;
    }
    let _one = serial();
    let d = tmpdir("distributed");
    let keys = d.join("keys");
    let o = run(&["keygen", keys.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = d.join("t.pcap");
    const N: u64 = 3000;
    flows_trace(&trace, N);
    let mut lab = Lab::up(3);
    let injected = [-5_000_000i64, 0, 3_000_000];
    for (i, off) in injected.iter().enumerate() {
        let k = keys.to_str().unwrap().to_string();
        lab.worker(i, &d, &["--tls", &k, "--clock-offset", &format!("{off}ns")]);
    }
    let p = plan(
        &d,
        &lab,
        3,
        "t.pcap",
        &["--pps", "2k", "--spin", "200us"],
        "3s",
    );
    let run_once = |extra: &[&str], tag: &str| {
        let caps: Vec<PathBuf> = (0..3).map(|i| d.join(format!("{tag}{i}.pcap"))).collect();
        let dumps: Vec<Child> = (0..3).map(|i| lab.capture(i, &caps[i])).collect();
        let (o, s) = control(&p, &keys, &d.join(format!("{tag}.json")), extra);
        for c in dumps {
            netns::stop(c);
        }
        assert!(o.status.success(), "{}", stderr(&o));
        let frames: Vec<Vec<(u64, Vec<u8>)>> = caps.iter().map(|c| read_all(c)).collect();
        (s, frames)
    };

    let (s, caps) = run_once(&[], "c");
    // Offsets measured over the control channel, against the injected ones.
    for (w, off) in s["workers"].as_array().unwrap().iter().zip(injected) {
        let m = w["offset_ns"].as_i64().unwrap();
        assert!(
            // Bounded by the best round trip's half delay, which load
            // stretches; the injected offsets are milliseconds apart.
            (m - off).abs() <= 1_000_000,
            "{}: measured {m}, injected {off}",
            w["name"]
        );
        assert!(w["error"].is_null(), "{w}");
    }
    // Every frame exactly once, each flow's frames in order on one worker.
    let mut all: Vec<u64> = caps.iter().flatten().map(|(_, f)| seq(f)).collect();
    all.sort_unstable();
    assert_eq!(all, (0..N).collect::<Vec<_>>(), "every frame exactly once");
    for c in &caps {
        let mut last = std::collections::HashMap::new();
        for (_, f) in c {
            let flow = u16::from_be_bytes([f[34], f[35]]);
            let prev = last.insert(flow, seq(f));
            assert!(prev.is_none_or(|p| p < seq(f)), "flow {flow} out of order");
        }
        assert!(c.len() > 500, "each worker has a share: {}", c.len());
    }
    assert_eq!(s["total"]["packets"], N);
    let (st, first) = starts(&caps);
    let skew = spread(&st);
    eprintln!(
        "corrected: start skew {skew} ns, first frames {} ns apart",
        spread(&first)
    );
    // bench/distributed.sh skew measures it (µs on a quiet machine); the
    // bound here only tells corrected from uncorrected (8 ms) under load.
    assert!(skew <= 2_000_000, "corrected start skew {skew} ns ({st:?})");

    // Without correction the injected offsets show: 8 ms apart.
    let (_, caps) = run_once(&["--no-clock-correction"], "u");
    let (st, first) = starts(&caps);
    let skew = spread(&st);
    eprintln!(
        "uncorrected: start skew {skew} ns, first frames {} ns apart",
        spread(&first)
    );
    assert!(skew > 5_000_000, "uncorrected start skew {skew} ns");
}

/// Clocks kept in step during the run (Fourier §6.3.1): a worker whose
/// clock runs 4 000 ppm fast (its job's schedule as fast) is measured
/// every 100 ms and its job moved by the drift; tcpdump's times, against
/// t_tos plus each frame's planned offset, judge. Corrected, no frame
/// after the first half second leaves earlier than the bound the summary
/// states (lateness is the machine's, never earliness); uncorrected, the
/// frames run milliseconds early.
#[test]
fn a_drifting_worker_is_kept_in_step_by_corrections_within_the_stated_bound() {
    if !netns::can_run() {
        return;
    }
    let _one = serial();
    let d = tmpdir("distributed-drift");
    let keys = d.join("keys");
    assert!(run(&["keygen", keys.to_str().unwrap()]).status.success());
    let trace = d.join("t.pcap");
    const N: u64 = 2500;
    flows_trace(&trace, N);
    let mut lab = Lab::up(1);
    let k = keys.to_str().unwrap().to_string();
    lab.worker(0, &d, &["--tls", &k, "--clock-drift-ppm", "4000"]);
    let p = plan(
        &d,
        &lab,
        1,
        "t.pcap",
        &["--pps", "1k", "--spin", "200us"],
        "4s",
    );
    // The earliest a frame from 0.5 s on left, against t_tos + seq / PPS
    // (ns; negative: early).
    let run_once = |extra: &[&str], tag: &str| {
        let cap = d.join(format!("{tag}.pcap"));
        let dump = lab.capture(0, &cap);
        let mut args = vec!["--clock-every", "100ms"];
        args.extend_from_slice(extra);
        let (o, s) = control(&p, &keys, &d.join(format!("{tag}.json")), &args);
        netns::stop(dump);
        assert!(o.status.success(), "{tag}: {}\n{}", stderr(&o), lab.log(0));
        let t_tos = s["start_ns"].as_i64().expect("t_tos in the summary");
        let frames = read_all(&cap);
        assert_eq!(frames.len() as u64, N, "{tag}: every frame");
        let early = frames
            .iter()
            .filter(|(_, f)| seq(f) >= 500)
            .map(|(ts, f)| *ts as i64 - (t_tos + (seq(f) * 1_000_000) as i64))
            .min()
            .unwrap();
        (s, early)
    };
    let (s, early) = run_once(&[], "c");
    let w = &s["workers"][0];
    let corrections = w["drift_corrections"].as_u64().unwrap();
    let bound = w["drift_residual_bound_ns"].as_i64().expect("a bound");
    eprintln!(
        "corrected: {corrections} corrections, bound {bound} ns, earliest {early} ns, drift {}",
        w["drift_ns"]
    );
    assert!(corrections >= 3, "{w}");
    // The drift it corrected: 4 ms a second.
    assert!(w["drift_ns"].as_i64().unwrap() > 4_000_000, "{w}");
    assert!(
        early >= -(bound + 500_000),
        "a frame {early} ns early, the bound {bound} ns"
    );

    let (s, early) = run_once(&["--no-clock-correction"], "u");
    let w = &s["workers"][0];
    eprintln!("uncorrected: earliest {early} ns, drift {}", w["drift_ns"]);
    assert_eq!(w["drift_corrections"], 0, "{w}");
    assert!(
        early < -5_000_000,
        "uncorrected, frames run early: {early} ns"
    );
}

/// One-way latency across hosts: two workers send stamped frames onto
/// one bridge, which floods each one's frames to the other, and each
/// counts the other's on its own interface (`rx:` in the plan). Worker 1's
/// clock reads 20 ms ahead (of its stamps and receive times alike): the
/// controller measures both offsets and has each receiver move the other's
/// stamps onto its own clock, so the latency is the path's (µs), with a
/// bound; uncorrected, worker 1 sees 20 ms and worker 0 sees frames
/// arrive before they left.
#[test]
fn receiving_workers_correct_one_way_latency_by_the_measured_offsets() {
    if !netns::can_run() {
        return;
    }
    let _one = serial();
    const N: u64 = 2000;
    let (d, keys, trace) = keyed("distributed-rx", N);
    // The bridge checks IPv4 headers (br_netfilter): checksums right.
    let frames: Vec<(u64, Vec<u8>)> = read_all(&trace)
        .into_iter()
        .map(|(t, mut f)| {
            let c = sluice_wire::ipv4_header_checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
            (t, f)
        })
        .collect();
    write_frames(&trace, &frames);
    let mut lab = Lab::up(2);
    let shift = 20_000_000i64;
    for i in 0..2 {
        let k = keys.to_str().unwrap().to_string();
        let off = format!("{}ns", if i == 1 { shift } else { 0 });
        lab.worker(i, &d, &["--tls", &k, "--clock-offset", &off]);
    }
    let mut y = String::from("workers:\n");
    for i in 0..2 {
        let (addr, tx) = (lab.addr(i), lab.tx(i));
        y += &format!("  - {{name: w{i}, address: \"{addr}\", to: \"afpacket:{tx}\", rx: {tx}}}\n");
    }
    y += "job:\n  command: replay\n  file: t.pcap\n  args: [\"--pps\", \"2k\"]\n  duration: 2s\n";
    let p = d.join("plan.yaml");
    std::fs::write(&p, y).unwrap();
    let ms = |v: &Value| v.as_f64().unwrap() / 1e6;
    // (worker, its streams from the other): one per TX thread.
    let streams = |s: &Value, i: usize| -> Vec<Value> {
        let w = &s["workers"][i];
        assert!(w["error"].is_null(), "{w}");
        w["summary"]["rx"]["streams"].as_array().unwrap().clone()
    };

    // Offsets measured again every 500 ms while the job runs: the drift
    // of two clocks of one host stays within the checks' uncertainty.
    let lines = d.join("c.jsonl");
    let (o, s) = control(
        &p,
        &keys,
        &d.join("c.json"),
        &[
            "--clock-every",
            "500ms",
            "--stats-json",
            lines.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let lines = sluice_testkit::checked_json_lines(&std::fs::read(&lines).unwrap());
    let checks: Vec<&Value> = lines
        .iter()
        .filter(|l| l["schema"] == "sluice.control-clock/1")
        .collect();
    let w = s["workers"].as_array().unwrap();
    for (i, wk) in w.iter().enumerate() {
        let mine: Vec<&&Value> = checks
            .iter()
            .filter(|c| c["worker"] == format!("w{i}"))
            .collect();
        assert!(!mine.is_empty(), "no clock check of w{i}: {lines:?}");
        assert_eq!(wk["clock_checks"].as_u64().unwrap(), mine.len() as u64);
        for c in &mine {
            let c = &c["check"];
            let off = c["offset_ns"].as_i64().unwrap();
            assert_eq!(
                c["drift_ns"].as_i64().unwrap(),
                off - wk["offset_ns"].as_i64().unwrap()
            );
            assert!(c["drift_ns"].as_i64().unwrap().abs() < 2_000_000, "{c}");
        }
        assert_eq!(wk["drift_ns"], mine.last().unwrap()["check"]["drift_ns"]);
    }
    // A receiving worker's lines ride along as its stats.
    assert!(lines.iter().any(|l| l["stats"]["schema"] == "sluice.rx/1"));
    let measured = w[1]["offset_ns"].as_i64().unwrap() - w[0]["offset_ns"].as_i64().unwrap();
    assert!((measured - shift).abs() < 1_000_000, "{measured}");
    for (i, from) in [(0, 1024), (1, 0)] {
        let st = streams(&s, i);
        assert_eq!(
            st.len(),
            1,
            "one stream from the other: {}",
            w[i]["summary"]["rx"]
        );
        let st = &st[0];
        assert_eq!(st["stream"], from);
        // Every frame the other sent came (a bridge floods; no loss on
        // the way); as many as the other's summary says it sent.
        let sent = w[1 - i]["summary"]["packets"].as_u64().unwrap();
        assert_eq!(
            st["received"].as_u64().unwrap() + st["lost"].as_u64().unwrap(),
            sent
        );
        // The correction is known to ± its bound: a frame faster than the
        // correction's error may still look early, the bulk may not.
        let early = st["early"].as_u64().unwrap();
        assert!(early * 4 < st["received"].as_u64().unwrap(), "{st}");
        let p50 = ms(&st["latency"]["percentiles"]["p50_ns"]);
        assert!(
            p50 > 0.0 && p50 < 10.0,
            "corrected one-way p50 {p50} ms: {st}"
        );
        // The correction the receiver took is the measured one, its bound
        // the two uncertainties'.
        let ahead = if i == 0 { measured } else { -measured };
        assert_eq!(st["clock_correction_ns"].as_i64().unwrap(), ahead, "{st}");
        let c = &w[i]["rx_clocks"][1 - i];
        assert_eq!(
            (c["from"].as_str().unwrap(), c["ahead_ns"].as_i64().unwrap()),
            (format!("w{}", 1 - i).as_str(), ahead)
        );
        let bound = w[0]["offset_uncertainty_ns"].as_u64().unwrap()
            + w[1]["offset_uncertainty_ns"].as_u64().unwrap();
        assert_eq!(c["bound_ns"], bound);
    }
    assert!(stderr(&o).contains("stream 1024 from w1"), "{}", stderr(&o));

    // Uncorrected, the 20 ms shows: worker 1 sees it as latency, worker 0
    // sees every frame arrive before it left.
    let (o, s) = control(&p, &keys, &d.join("u.json"), &["--no-clock-correction"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let late = &streams(&s, 1)[0];
    assert!(
        ms(&late["latency"]["percentiles"]["p50_ns"]) > 15.0,
        "{late}"
    );
    let early = &streams(&s, 0)[0];
    assert_eq!(early["early"], early["received"], "{early}");
}

/// Workers send on `xdp:` as well (AF_XDP copy mode on their veths):
/// every frame exactly once across them, each saying which mode ran.
#[test]
fn two_workers_split_a_replay_over_xdp_exactly_once() {
    if !netns::can_run() {
        return;
    }
    let _one = serial();
    const N: u64 = 2000;
    let (d, keys, _) = keyed("distributed-xdp", N);
    let mut lab = Lab::up(2);
    for i in 0..2 {
        let k = keys.to_str().unwrap().to_string();
        lab.worker(i, &d, &["--tls", &k]);
    }
    let p = {
        let mut kind = SINK_KIND.lock().unwrap_or_else(|e| e.into_inner());
        *kind = "xdp";
        drop(kind);
        let p = plan(&d, &lab, 2, "t.pcap", &["--pps", "4k"], "3s");
        *SINK_KIND.lock().unwrap_or_else(|e| e.into_inner()) = "afpacket";
        p
    };
    let caps: Vec<PathBuf> = (0..2).map(|i| d.join(format!("x{i}.pcap"))).collect();
    let dumps: Vec<Child> = (0..2).map(|i| lab.capture(i, &caps[i])).collect();
    let (o, s) = control(&p, &keys, &d.join("x.json"), &[]);
    for c in dumps {
        netns::stop(c);
    }
    assert!(o.status.success(), "{}", stderr(&o));
    let mut all: Vec<u64> = caps
        .iter()
        .flat_map(|c| read_all(c))
        .map(|(_, f)| seq(&f))
        .collect();
    all.sort_unstable();
    assert_eq!(all, (0..N).collect::<Vec<_>>(), "every frame exactly once");
    for w in s["workers"].as_array().unwrap() {
        let sink = w["summary"]["sink"].as_str().unwrap_or_default();
        assert!(sink.contains("xdp:") && sink.contains("copy mode"), "{w}");
        assert_eq!(w["summary"]["tx_path"], "xdp-copy", "{w}");
    }
}

#[test]
fn only_a_controller_of_the_ca_can_make_a_worker_send() {
    if !netns::can_run() {
        return;
    }
    let _one = serial();
    let d = tmpdir("distributed-auth");
    let (good, other) = (d.join("good"), d.join("other"));
    for k in [&good, &other] {
        assert!(run(&["keygen", k.to_str().unwrap()]).status.success());
    }
    // A worker's own certificate presented as a controller's.
    let stolen = d.join("stolen");
    std::fs::create_dir_all(&stolen).unwrap();
    for (from, to) in [
        ("ca.pem", "ca.pem"),
        ("worker.pem", "controller.pem"),
        ("worker.key", "controller.key"),
    ] {
        std::fs::copy(good.join(from), stolen.join(to)).unwrap();
    }
    let trace = d.join("t.pcap");
    flows_trace(&trace, 100);
    let mut lab = Lab::up(1);
    lab.worker(0, &d, &["--tls", good.to_str().unwrap()]);
    let p = plan(&d, &lab, 1, "t.pcap", &["--pps", "1k"], "1s");
    let cap = d.join("cap.pcap");
    let dump = lab.capture(0, &cap);
    for (keys, what) in [
        (&other, "an untrusted CA"),
        (&stolen, "a worker certificate"),
    ] {
        let (o, _) = control(&p, keys, &d.join("s.json"), &[]);
        assert_eq!(o.status.code(), Some(2), "{what}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("w0"),
            "{what}: the worker is named: {}",
            stderr(&o)
        );
    }
    // No keys: the controller itself refuses TCP (a worker without keys
    // serves a unix socket), and a plain client is refused by the worker.
    let o = sluice()
        .args(["control", "run"])
        .arg(&p)
        .arg("-q")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "plain TCP: {}", stderr(&o));
    assert!(stderr(&o).contains("TCP needs --tls"), "{}", stderr(&o));
    let mut plain = std::net::TcpStream::connect(lab.addr(0)).unwrap();
    plain
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    std::io::Write::write_all(&mut plain, b"GET / HTTP/1.1\r\nHost: w0\r\n\r\n").unwrap();
    let _ = std::io::Read::read_to_end(&mut plain, &mut Vec::new());
    netns::stop(dump);
    let log = lab.log(0);
    // Each refusal is logged with its reason (a client may try twice).
    assert!(log.matches("refused").count() >= 3, "{log}");
    for why in [
        "extended key usage for client authentication",
        "corrupt message",
    ] {
        assert!(log.contains(why), "{why}: {log}");
    }
    assert!(!log.contains("starting"), "no job ran: {log}");
    assert!(read_all(&cap).is_empty(), "nothing was sent");
    // The right controller is served.
    let (o, s) = control(&p, &good, &d.join("s.json"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(s["total"]["packets"], 100);
}

#[test]
fn a_lost_worker_stops_the_others_or_not_and_a_lost_controller_stops_all() {
    if !netns::can_run() {
        return;
    }
    let _one = serial();
    let d = tmpdir("distributed-faults");
    let keys = d.join("keys");
    assert!(run(&["keygen", keys.to_str().unwrap()]).status.success());
    let trace = d.join("t.pcap");
    flows_trace(&trace, 60_000);
    let mut lab = Lab::up(3);
    let k = keys.to_str().unwrap().to_string();
    for i in 0..3 {
        lab.worker(i, &d, &["--tls", &k]);
    }
    // 8 s jobs: every bound below leaves seconds between "stopped early"
    // and "ran to its end", room for a loaded machine's slow starts.
    let p = plan(&d, &lab, 3, "t.pcap", &["--pps", "2k", "--spin", "0"], "8s");
    let faulty = |on_loss: &str, victim: u32| {
        let summary = d.join(format!("{on_loss}.json"));
        let mut ctl = sluice()
            .args(["control", "run"])
            .arg(&p)
            .args([
                "--tls",
                &k,
                "-q",
                "--on-worker-loss",
                on_loss,
                "--start-in",
                "1s",
                "--max-skew",
                "5ms",
            ])
            .arg("--summary-json")
            .arg(&summary)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(2500));
        let t0 = Instant::now();
        sh(&["kill", "-KILL", &victim.to_string()]);
        let status = ctl.wait().unwrap();
        let took = t0.elapsed();
        let mut err = String::new();
        std::io::Read::read_to_string(&mut ctl.stderr.take().unwrap(), &mut err).unwrap();
        let s = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
        (status, took, err, s)
    };
    let (status, took, err, s) = faulty("abort", lab.workers[1].id());
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("worker 'w1'"),
        "the lost worker is named: {err}"
    );
    assert!(
        took < Duration::from_secs(5),
        "the others stopped long before their end: {took:?}"
    );
    assert!(s["workers"][1]["error"].is_string(), "{s}");
    for i in [0, 2] {
        let sent = s["workers"][i]["summary"]["duration_s"].as_f64().unwrap();
        assert!(sent < 6.0, "w{i} stopped early: {sent} s");
    }
    // The killed worker back, then: continue lets the others finish.
    lab.worker(1, &d, &["--tls", &k]);
    let (status, _, err, s) = faulty("continue", lab.workers[1].id());
    assert_eq!(status.code(), Some(1), "{err}");
    for i in [0, 2] {
        let sent = s["workers"][i]["summary"]["duration_s"].as_f64().unwrap();
        assert!(sent > 7.5, "w{i} finished its 8 s: {sent} s");
    }

    // SIGINT on the controller stops every worker and still summarises.
    lab.worker(1, &d, &["--tls", &k]);
    let summary = d.join("int.json");
    let mut ctl = sluice()
        .args(["control", "run"])
        .arg(&p)
        .args(["--tls", &k, "-q", "--start-in", "1s", "--max-skew", "5ms"])
        .arg("--summary-json")
        .arg(&summary)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    let t0 = Instant::now();
    sh(&["kill", "-INT", &ctl.id().to_string()]);
    let status = ctl.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let s = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    assert_eq!(s["interrupted"], true);
    for w in s["workers"].as_array().unwrap() {
        assert_eq!(w["summary"]["interrupted"], true, "{w}");
    }

    // A controller killed mid-run: every worker still ends its job by the
    // deadline (t_tos + 8 s + 3 s grace).
    let mut ctl = sluice()
        .args(["control", "run"])
        .arg(&p)
        .args(["--tls", &k, "-q", "--start-in", "1s", "--max-skew", "5ms"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2000));
    ctl.kill().unwrap();
    ctl.wait().unwrap();
    let t0 = Instant::now();
    loop {
        // Workers 0 and 2 ran three jobs, the restarted 1 one.
        let ended =
            (0..3).all(|i| lab.log(i).matches("job ended").count() == if i == 1 { 1 } else { 3 });
        if ended {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "a worker still runs its job"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every capture's frames in one time-ordered pcap (the aggregate the
/// sink namespace received).
fn merged(caps: &[PathBuf], out: &Path) -> Vec<(u64, Vec<u8>)> {
    let mut all: Vec<(u64, Vec<u8>)> = caps.iter().flat_map(|c| read_all(c)).collect();
    all.sort_by_key(|(t, _)| *t);
    write_frames(out, &all);
    all
}

#[test]
fn profiles_and_sessions_split_over_three_workers_come_out_whole() {
    if !netns::can_run() || !sluice_testkit::require("python3", "ratejudge.py") {
        return;
    }
    let _one = serial();
    let d = tmpdir("distributed-jobs");
    let keys = d.join("keys");
    assert!(run(&["keygen", keys.to_str().unwrap()]).status.success());
    let k = keys.to_str().unwrap().to_string();
    let mut lab = Lab::up(3);
    for i in 0..3 {
        lab.worker(i, &d, &["--tls", &k]);
    }
    let go = |plan: &Path, tag: &str| {
        let caps: Vec<PathBuf> = (0..3).map(|i| d.join(format!("{tag}{i}.pcap"))).collect();
        let dumps: Vec<Child> = (0..3).map(|i| lab.capture(i, &caps[i])).collect();
        let stats = d.join(format!("{tag}.jsonl"));
        let (o, s) = control(
            plan,
            &keys,
            &d.join(format!("{tag}.json")),
            &["--stats-json", stats.to_str().unwrap()],
        );
        for c in dumps {
            netns::stop(c);
        }
        assert!(o.status.success(), "{tag}: {}", stderr(&o));
        let lines = sluice_testkit::checked_json_lines(&std::fs::read(&stats).unwrap());
        assert!(
            lines.iter().any(|l| l["worker"] == "w2"),
            "{tag}: every worker reports"
        );
        let all = d.join(format!("{tag}-all.pcap"));
        let frames = merged(&caps, &all);
        (s, all, frames)
    };

    // A Poisson profile, packets split: each worker sends its own Poisson
    // stream at a third of the rate (it plans only its share), so the
    // aggregate is the profile's Poisson process in law, judged by
    // ratejudge.py against profile synth.
    let prof = d.join("p.yaml");
    std::fs::write(
        &prof,
        "seed: 7\nduration: 1s\nrate: 4k\nipd: {dist: poisson}\nsize: {dist: imix}\npacket: {flows: 8}\n",
    )
    .unwrap();
    let target = d.join("target.pcap");
    let o = run(&[
        "profile",
        "synth",
        prof.to_str().unwrap(),
        "-o",
        target.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = job_plan(
        &d,
        &lab,
        3,
        "profile",
        "p.yaml",
        &["--spin", "100us"],
        "2s",
        Some("packets"),
    );
    let (s, all, _) = go(&p, "pk");
    let j = ratejudge(&target, &all);
    eprintln!("packets split: {j:?}");
    // A Poisson count of mean 4000 (sd 63): six sd never fail by chance.
    let (got, want) = (j["generated_packets"], j["target_packets"]);
    assert!((got - want).abs() <= 6.0 * want.sqrt(), "{j:?}");
    assert_eq!(s["total"]["packets"].as_f64(), Some(got));
    // How closely the rate follows the target (Pearson, NMSE) depends on
    // the CPUs the workers get: bench/distributed.sh split measures it.
    // Sizes are the shares' own draws: two samples of one law, within the
    // two-sample KS critical value at 0.1 % (1.95 √(2/n)).
    assert!(j["ks_size"] <= 1.95 * (2.0 / want).sqrt(), "{j:?}");

    // The same profile by components: three Fourier queues, one each.
    let p = job_plan(
        &d,
        &lab,
        3,
        "profile",
        "p.yaml",
        &[
            "--mode", "fourier", "--queues", "3", "--keep", "60", "--spin", "100us",
        ],
        "2s",
        Some("components"),
    );
    let (_, all, frames) = go(&p, "cp");
    let j = ratejudge(&target, &all);
    eprintln!("components split: {j:?}");
    assert!(
        (j["generated_packets"] / j["target_packets"] - 1.0).abs() < 0.05,
        "the rate is kept: {j:?}"
    );
    // The controller decomposed once and shipped each worker its queue
    // (a worker refuses the split without them): the three queues
    // together are one host's Fourier run, frame for frame but for the
    // IP identification and checksum (each sender counts its own).
    let local = d.join("cp-local.pcap");
    let o = run(&[
        "profile",
        "run",
        prof.to_str().unwrap(),
        "--mode",
        "fourier",
        "--queues",
        "3",
        "--keep",
        "60",
        "--clock",
        "virtual",
        "--to",
        &format!("pcap:{}", local.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (ours, one) = (masked(frames), masked(read_all(&local)));
    assert!(
        !one.is_empty() && ours == one,
        "{} frames from the workers, {} from one host",
        ours.len(),
        one.len()
    );

    // A flow session: every flow with its exact packet count.
    let session = sluice_testkit::repo_root().join("examples/sessions/mixed.yaml");
    std::fs::copy(&session, d.join("mixed.yaml")).unwrap();
    let p = job_plan(
        &d,
        &lab,
        3,
        "flows",
        "mixed.yaml",
        &["--spin", "100us"],
        "2s",
        None,
    );
    let (s, all, frames) = go(&p, "fl");
    assert_eq!(frames.len(), 1078, "{s}");
    let o = run(&[
        "analyze",
        all.to_str().unwrap(),
        "--flows",
        "--session",
        d.join("mixed.yaml").to_str().unwrap(),
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = sluice_testkit::checked_json(&o.stdout);
    let c = &v["session"];
    assert_eq!(
        (c["missing"].as_u64(), c["packet_mismatches"].as_u64()),
        (Some(0), Some(0)),
        "{c}"
    );
    assert_eq!(c["matched"], c["expected"], "{c}");
}

/// The frames of a capture, sorted, the IP identification and checksum
/// zeroed (each sender counts its own).
fn masked(v: Vec<(u64, Vec<u8>)>) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = v
        .into_iter()
        .map(|(_, mut f)| {
            f[18..20].fill(0);
            f[24..26].fill(0);
            f
        })
        .collect();
    v.sort();
    v
}

/// The Fourier paper's generating ports (§5.2): a worker given two sinks
/// in the plan sends its two Fourier queues one by each, the other worker
/// its two by its one port; tcpdump on every link is the judge. Each
/// link carries exactly the queues one host's run puts on that output
/// (`--also-to`, queue q on output q).
#[test]
fn a_worker_with_two_ports_sends_one_fourier_queue_by_each() {
    if !netns::can_run() {
        return;
    }
    let _one = serial();
    let d = tmpdir("distributed-ports");
    let keys = d.join("keys");
    assert!(run(&["keygen", keys.to_str().unwrap()]).status.success());
    let k = keys.to_str().unwrap().to_string();
    let mut lab = Lab::up(2);
    lab.second_port(0);
    for i in 0..2 {
        lab.worker(i, &d, &["--tls", &k]);
    }
    let prof = d.join("p.yaml");
    std::fs::write(
        &prof,
        "seed: 11\nduration: 1s\nrate: 3k\nipd: {dist: poisson}\nsize: {dist: imix}\npacket: {flows: 8}\n",
    )
    .unwrap();
    let args = ["--mode", "fourier", "--queues", "4", "--keep", "40"];
    let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    let plan = d.join("plan.yaml");
    std::fs::write(
        &plan,
        format!(
            "workers:\n  - {{name: w0, address: \"{}\", to: [\"afpacket:{}\", \"afpacket:{}\"]}}\n  \
             - {{name: w1, address: \"{}\", to: \"afpacket:{}\"}}\n\
             job:\n  command: profile\n  file: p.yaml\n  args: [{}, \"--spin\", \"100us\"]\n  duration: 2s\n\
             split: components\n",
            lab.addr(0),
            lab.tx(0),
            lab.tx2(0),
            lab.addr(1),
            lab.tx(1),
            quoted.join(", ")
        ),
    )
    .unwrap();
    let caps: Vec<PathBuf> = ["w0a", "w0b", "w1"]
        .iter()
        .map(|t| d.join(format!("{t}.pcap")))
        .collect();
    let dumps = vec![
        lab.capture(0, &caps[0]),
        lab.capture2(0, &caps[1]),
        lab.capture(1, &caps[2]),
    ];
    let (o, s) = control(&plan, &keys, &d.join("ports.json"), &[]);
    for c in dumps {
        netns::stop(c);
    }
    assert!(o.status.success(), "{}\n{}", stderr(&o), lab.log(0));
    // Global port IDs: w0's two, then w1's.
    let w = &s["workers"];
    assert_eq!(w[0]["port"], 0, "{s}");
    assert_eq!(w[0]["also_to"][0]["port"], 1, "{s}");
    assert_eq!(
        w[0]["also_to"][0]["sink"].as_str(),
        Some(format!("afpacket:{}", lab.tx2(0)).as_str())
    );
    assert_eq!(
        (
            w[1]["port"].as_u64(),
            w[1]["also_to"].as_array().map(Vec::len)
        ),
        (Some(2), Some(0))
    );

    // One host: queue q by output q.
    let outs: Vec<PathBuf> = (0..4).map(|q| d.join(format!("q{q}.pcap"))).collect();
    let mut words: Vec<String> = ["profile", "run", prof.to_str().unwrap()]
        .iter()
        .chain(&args)
        .map(|s| s.to_string())
        .collect();
    words.extend(["--clock".into(), "virtual".into()]);
    for (q, out) in outs.iter().enumerate() {
        words.push(if q == 0 { "--to" } else { "--also-to" }.into());
        words.push(format!("pcap:{}", out.display()));
    }
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let o = run(&words);
    assert!(o.status.success(), "{}", stderr(&o));
    let q: Vec<Vec<Vec<u8>>> = outs.iter().map(|p| masked(read_all(p))).collect();
    assert!(q.iter().all(|f| !f.is_empty()), "every queue sends");
    let got: Vec<Vec<Vec<u8>>> = caps.iter().map(|p| masked(read_all(p))).collect();
    // w0 takes queues 0 and 2 (index mod 2 = 0): one by each port.
    assert!(
        got[0] == q[0],
        "w0's first port: {} frames, queue 0 {}",
        got[0].len(),
        q[0].len()
    );
    assert!(
        got[1] == q[2],
        "w0's second port: {} frames, queue 2 {}",
        got[1].len(),
        q[2].len()
    );
    let mut w1: Vec<Vec<u8>> = q[1].iter().chain(&q[3]).cloned().collect();
    w1.sort();
    assert!(
        got[2] == w1,
        "w1: {} frames, queues 1 and 3 {}",
        got[2].len(),
        w1.len()
    );
}

/// python3 with grpcio and grpcio-tools (and `extra` modules), or SKIPPED
/// (a failure under CI).
fn python_with(extra: &str, what: &str) -> bool {
    if !sluice_testkit::require("python3", what) {
        return false;
    }
    let ok = Command::new("python3")
        .args(["-c", &format!("import grpc, grpc_tools{extra}")])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        sluice_testkit::skip(what, &format!("python3 with grpcio, grpcio-tools{extra}"));
    }
    ok
}

/// `pip install` of a copy of python/ and proto/ (the checkout stays
/// clean) into `d/site`; returns that directory.
fn install_python_package(d: &Path) -> PathBuf {
    let root = sluice_testkit::repo_root();
    let src = d.join("src");
    let _ = std::fs::remove_dir_all(&src);
    std::fs::create_dir_all(&src).unwrap();
    for dir in ["python", "proto"] {
        sh(&[
            "cp",
            "-r",
            root.join(dir).to_str().unwrap(),
            src.to_str().unwrap(),
        ]);
    }
    let _ = std::fs::remove_dir_all(src.join("python/build"));
    let site = d.join("site");
    let o = Command::new("python3")
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--no-build-isolation",
            "--no-deps",
            "--target",
        ])
        .arg(&site)
        .arg(src.join("python"))
        .output()
        .unwrap();
    assert!(o.status.success(), "pip install: {}", stderr(&o));
    site
}

#[test]
fn the_python_client_installs_as_a_package_with_its_stubs() {
    if !python_with(", setuptools", "installing the Python client") {
        return;
    }
    let _one = serial();
    let d = tmpdir("python-package");
    let root = sluice_testkit::repo_root();
    let site = install_python_package(&d);
    let packed = site.join("sluice_control/proto/sluice/control/v1/worker.proto");
    assert_eq!(
        std::fs::read(&packed).unwrap(),
        std::fs::read(root.join("proto/sluice/control/v1/worker.proto")).unwrap(),
        "the package carries the repository's proto"
    );
    // The stubs were compiled at build time, into the package itself.
    for stub in ["worker_pb2.py", "worker_pb2_grpc.py"] {
        assert!(site.join("sluice_control").join(stub).is_file(), "{stub}");
    }
    // Imported from the install, away from the checkout, with TMPDIR
    // pointing at a directory that must stay empty: nothing is compiled
    // (or imported from) a temporary directory on import. Both clients
    // come with the package.
    let tmp = d.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let o = Command::new("python3")
        .current_dir(&site)
        .env("PYTHONPATH", &site)
        .env("TMPDIR", &tmp)
        .args([
            "-c",
            "import sys, sluice_control as s, sluice_inject as i; print(s.__file__); \
             print(i.__file__); print(s.pb.__file__); \
             print(' '.join(sorted(m for m in dir(s.pb_grpc.WorkerServicer) if not m.startswith('_')))); \
             print(' '.join(p for p in sys.path if 'sluice-control-py' in p))",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "import: {}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    for l in &lines[..3] {
        assert!(l.starts_with(site.to_str().unwrap()), "{out}");
    }
    let proto = std::fs::read_to_string(&packed).unwrap();
    for rpc in lines[3].split(' ') {
        assert!(
            proto.contains(&format!("rpc {rpc}(")),
            "{rpc} not in the proto: {out}"
        );
    }
    assert!(lines[3].split(' ').count() >= 6, "{out}");
    assert_eq!(lines.get(4).copied().unwrap_or(""), "", "sys.path: {out}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "TMPDIR used");

    // The installed sluice_inject against a real inject server: every
    // description acknowledged, every frame in the server's pcap.
    let sock = d.join("inject.sock");
    let out = d.join("injected.pcap");
    let mut server = sluice()
        .args(["inject", "--listen", &format!("unix:{}", sock.display())])
        .args([
            "--to",
            &format!("pcap:{}", out.display()),
            "--sessions",
            "1",
            "-q",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !sock.exists() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = Command::new("python3")
        .current_dir(&site)
        .env("PYTHONPATH", &site)
        .arg("-c")
        .arg(
            "import sys, sluice_inject as si\n\
             c = si.Client.connect('unix:' + sys.argv[1], timeout=30)\n\
             c.hello()\n\
             ds = [si.fields(i, 1_000_000 + i * 10_000, '10.0.0.1', '10.0.0.2', 4000, 9, 100)\n\
                   for i in range(50)]\n\
             for m in si.batches(ds): c.send_bytes(m)\n\
             c.bye()\n\
             n = 0\n\
             while True:\n\
             \x20   kind, v = c.read_message()\n\
             \x20   if kind == 'acks': n += len(v)\n\
             \x20   elif kind in ('done', 'eof'): break\n\
             print(n)\n",
        )
        .arg(&sock)
        .output()
        .unwrap();
    let status = server.wait().unwrap();
    assert!(o.status.success(), "client: {}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "50");
    assert!(status.success(), "inject: {status}");
    assert_eq!(read_all(&out).len(), 50);
}

#[test]
fn the_python_client_drives_workers_over_mutual_tls() {
    if !python_with(", setuptools", "the Python control client") {
        return;
    }
    let _one = serial();
    let d = tmpdir("distributed-python");
    let keys = d.join("keys");
    assert!(run(&["keygen", keys.to_str().unwrap()]).status.success());
    let trace = d.join("t.pcap");
    flows_trace(&trace, 1000);
    let base = 17_000 + (std::process::id() % 1000) as u16 * 2;
    let mut workers = Vec::new();
    let mut specs = Vec::new();
    for i in 0..2u16 {
        let addr = format!("127.0.0.1:{}", base + i);
        let log = d.join(format!("py-worker{i}.log"));
        workers.push(Reaped(
            sluice()
                .args(["worker", "--listen", &addr, "--tls", keys.to_str().unwrap()])
                .arg("--work-dir")
                .arg(&*d)
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap(),
        ));
        listening(&log);
        specs.push(format!("--worker=w{i}={addr}=null"));
    }
    // The client as users get it: installed, run away from the checkout.
    let site = install_python_package(&d);
    let example = sluice_testkit::repo_root().join("python/examples/control_run.py");
    let py = |specs: &[String], file: &Path, extra: &[&str]| {
        Command::new("python3")
            .current_dir(&site)
            .env("PYTHONPATH", &site)
            .arg(&example)
            .args(specs)
            .args(["--command", "replay", "--duration", "2s"])
            // Python stamps its clock exchanges slower than sluice does.
            .arg("--max-skew-ns=20000000")
            .arg("--file")
            .arg(file)
            .arg("--tls")
            .arg(&keys)
            .args(extra)
            .output()
            .unwrap()
    };
    let stats = d.join("py.jsonl");
    let o = py(
        &specs,
        &trace,
        &[r#"--job={"pps": "2k"}"#, "--stats", stats.to_str().unwrap()],
    );
    // A job the workers refuse: JobRefused, one line, exit 2.
    let garbage = d.join("garbage.pcap");
    std::fs::write(&garbage, b"this is not a capture").unwrap();
    let refused = py(&specs, &garbage, &[]);
    // A worker nobody serves: one line naming it, exit 1.
    let gone = format!("--worker=w9=127.0.0.1:{}=null", base + 2);
    let unreachable = py(&[gone], &trace, &[]);
    // A worker killed while its job runs: lost, and the totals a lower
    // bound, as the CLI reports them.
    let log1 = d.join("py-worker1.log");
    let starts = || {
        std::fs::read_to_string(&log1)
            .unwrap_or_default()
            .matches("': starting")
            .count()
    };
    let before = starts();
    let long = Command::new("python3")
        .current_dir(&site)
        .env("PYTHONPATH", &site)
        .arg(&example)
        .args(&specs)
        .args([
            "--command",
            "replay",
            "--duration",
            "6s",
            r#"--job={"pps": "100"}"#,
        ])
        .arg("--max-skew-ns=20000000")
        .arg("--file")
        .arg(&trace)
        .arg("--tls")
        .arg(&keys)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while starts() == before {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "w1 never started the job"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Past the start (1.5 s after the task), into the run.
    std::thread::sleep(Duration::from_millis(2500));
    let _ = workers[1].kill();
    let _ = workers[1].wait();
    let killed = long.wait_with_output().unwrap();
    // A hostile controller (holding a certificate of the CA): a sink the
    // worker did not announce is refused; a job cannot name a file (the
    // message has no such field) and a malformed value is refused.
    let evil = d.join("evil");
    let hostile = Command::new("python3")
        .current_dir(&site)
        .env("PYTHONPATH", &site)
        .arg("-c")
        .arg(
            "import sys, grpc, sluice_control as s\n\
             addr, keys, trace, evil = sys.argv[1:]\n\
             w = s.Worker('w0', addr, 'null', tls_dir=keys)\n\
             w.register()\n\
             other = s.Worker('w0', addr, 'null', tls_dir=keys)\n\
             try:\n\
             \x20   other.register(); print('registered twice')\n\
             except grpc.RpcError as e:\n\
             \x20   print('register', e.code().name)\n\
             try:\n\
             \x20   other.stop(); print('stopped')\n\
             except grpc.RpcError as e:\n\
             \x20   print('stop', e.code().name)\n\
             pm = lambda sink: s.pb.PortMap(ports=[s.pb.GlobalPort(id=0, worker='w0', sink=sink)])\n\
             try:\n\
             \x20   w.stub.PublishPorts(pm('pcap:' + evil), timeout=5, metadata=w.meta); print('published')\n\
             except grpc.RpcError as e:\n\
             \x20   print('ports', e.code().name)\n\
             w.stub.PublishPorts(pm('null'), timeout=5, metadata=w.meta)\n\
             fid = w.upload(trace)\n\
             t = s.now_ns()\n\
             try:\n\
             \x20   s.job_message('replay', {}, {'summary_json': evil}); print('built')\n\
             except s.JobRefused:\n\
             \x20   print('job refused')\n\
             job = s.job_message('replay', {'ttl': '++1'})\n\
             task = s.pb.Task(job=job, file_id=fid, port=0, share_count=1,\n\
             \x20   start_ns=t + 10**9, deadline_ns=t + 5 * 10**9)\n\
             try:\n\
             \x20   [u for u in w.stub.Run(task, metadata=w.meta)]; print('ran')\n\
             except grpc.RpcError as e:\n\
             \x20   print('args', e.code().name)\n",
        )
        .arg(format!("127.0.0.1:{base}"))
        .arg(&keys)
        .arg(&trace)
        .arg(&evil)
        .output()
        .unwrap();
    drop(workers);
    assert_eq!(killed.status.code(), Some(1), "{}", stderr(&killed));
    let r: serde_json::Value = serde_json::from_slice(&killed.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&killed.stdout)));
    let t = &r["total"];
    assert_eq!(t["lost"], 1, "{r}");
    assert_eq!(t["at_least"], true, "{r}");
    assert_eq!(r["workers"][1]["lost"], true, "{r}");
    let w0 = r["workers"][0]["summary"]["packets"]
        .as_u64()
        .expect("w0 finished");
    assert!(t["packets"].as_u64().unwrap() >= w0, "{r}");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{err}");
    assert!(
        err.contains("refused the job") && err.contains("'w0'"),
        "{err}"
    );
    assert!(!err.contains("Traceback"), "{err}");
    let err = stderr(&unreachable);
    assert_eq!(unreachable.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("'w9'") && err.contains("unreachable"), "{err}");
    let said = String::from_utf8_lossy(&hostile.stdout);
    assert_eq!(
        said.lines().collect::<Vec<_>>(),
        [
            "register UNAVAILABLE",
            "stop PERMISSION_DENIED",
            "ports INVALID_ARGUMENT",
            "job refused",
            "args INVALID_ARGUMENT"
        ],
        "{said}{}",
        stderr(&hostile)
    );
    assert!(
        !evil.exists(),
        "the worker wrote a file the controller named"
    );
    let lines = std::fs::read_to_string(&stats).unwrap();
    assert!(lines.lines().count() >= 2, "statistics streamed: {lines}");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["total"]["lost"], 0, "{r}");
    assert_eq!(r["total"]["at_least"], false, "{r}");
}

/// Polls `cmd` (in namespace `ns`) until its output satisfies `ready`.
fn wait_for(ns: &str, cmd: &[&str], ready: impl Fn(&str) -> bool, what: &str) {
    let t0 = Instant::now();
    loop {
        let o = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(cmd)
            .output()
            .unwrap();
        if ready(&String::from_utf8_lossy(&o.stdout)) {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(40),
            "{what} never synchronised: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Daemons started for a test and their namespace: killed and removed
/// also when the test fails.
struct Daemons(Vec<Child>, String);

impl Drop for Daemons {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.1]).output();
    }
}

#[test]
fn workers_report_what_chrony_and_linuxptp_say_of_their_clocks() {
    use sluice_testkit::require;
    if !netns::can_run()
        || !require("chronyd", "clock service test")
        || !require("ptp4l", "clock service test")
        || !require("pmc", "clock service test")
    {
        return;
    }
    let _one = serial();
    let d = tmpdir("distributed-clocksvc");
    // ptp4l's and chronyd's sockets live here: private to root.
    sh(&["chmod", "700", d.to_str().unwrap()]);
    let keys = d.join("keys");
    assert!(run(&["keygen", keys.to_str().unwrap()]).status.success());
    let mut lab = Lab::up(2);
    // A time-server namespace with a veth to each worker: an NTP server
    // (chronyd, local stratum 8) for worker 0, a PTP grandmaster (ptp4l,
    // software timestamps, layer 2) for worker 1. Neither daemon steers
    // the host's clock (chronyd -x, ptp4l free_running).
    let ts = format!("k{}", lab.tag);
    for n in [
        ts.clone(),
        format!("k0{}s", lab.tag),
        format!("k1{}s", lab.tag),
    ] {
        assert!(sluice_testkit::name_free(&n), "{n} is already on this host");
    }
    sh(&["ip", "netns", "add", &ts]);
    let mut daemons = Daemons(Vec::new(), ts.clone());
    let ns = |n: &str, args: &[&str]| {
        let mut v = vec!["ip", "netns", "exec", n];
        v.extend_from_slice(args);
        sh(&v);
    };
    for i in 0..2 {
        let (s, c) = (format!("k{i}{}s", lab.tag), format!("k{i}{}c", lab.tag));
        sh(&["ip", "link", "add", &s, "type", "veth", "peer", "name", &c]);
        sh(&["ip", "link", "set", &s, "netns", &ts]);
        sh(&["ip", "link", "set", &c, "netns", &lab.wns(i)]);
        ns(&ts, &["ip", "link", "set", &s, "up"]);
        ns(&lab.wns(i), &["ip", "link", "set", &c, "up"]);
    }
    let (ks, kc) = (format!("k0{}s", lab.tag), format!("k0{}c", lab.tag));
    ns(&ts, &["ip", "addr", "add", "10.78.250.1/24", "dev", &ks]);
    ns(
        &lab.wns(0),
        &["ip", "addr", "add", "10.78.250.2/24", "dev", &kc],
    );
    let conf = |name: &str, text: String| {
        let p = d.join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    let dd = d.display();
    let server = conf(
        "server.conf",
        format!("local stratum 8\nallow all\nbindaddress 10.78.250.1\ncmdport 0\nbindcmdaddress /\npidfile {dd}/server.pid\n"),
    );
    let client = conf(
        "client.conf",
        format!("server 10.78.250.1 iburst minpoll -4 maxpoll -4\nbindcmdaddress 127.0.0.1\nbindcmdaddress /\npidfile {dd}/client.pid\n"),
    );
    let fast = "logSyncInterval -4\nlogMinDelayReqInterval -4\nlogAnnounceInterval -2\nannounceReceiptTimeout 2\n";
    let gm = conf(
        "gm.conf",
        format!("[global]\npriority1 1\nuds_address {dd}/ptp-gm\n{fast}"),
    );
    let slave = conf(
        "slave.conf",
        format!("[global]\nslaveOnly 1\nfree_running 1\nuds_address {dd}/ptp-w1\n{fast}"),
    );
    let daemon = |n: &str, args: &[&str], log: &str| {
        Command::new("ip")
            .args(["netns", "exec", n])
            .args(args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join(log)).unwrap())
            .spawn()
            .unwrap()
    };
    let p = |p: &PathBuf| p.to_str().unwrap().to_string();
    let (server, client, gm, slave) = (p(&server), p(&client), p(&gm), p(&slave));
    let (p1s, p1c) = (format!("k1{}s", lab.tag), format!("k1{}c", lab.tag));
    daemons.0.extend([
        daemon(
            &ts,
            &["chronyd", "-x", "-n", "-u", "root", "-f", &server],
            "server.log",
        ),
        daemon(
            &lab.wns(0),
            &["chronyd", "-x", "-n", "-u", "root", "-f", &client],
            "client.log",
        ),
        daemon(&ts, &["ptp4l", "-2", "-S", "-i", &p1s, "-f", &gm], "gm.log"),
        daemon(
            &lab.wns(1),
            &["ptp4l", "-2", "-S", "-i", &p1c, "-f", &slave],
            "slave.log",
        ),
    ]);
    wait_for(
        &lab.wns(0),
        &["chronyc", "-h", "127.0.0.1", "-c", "tracking"],
        |t| t.contains("10.78.250.1,9,"),
        "chronyd",
    );
    let uds = format!("{dd}/ptp-w1");
    wait_for(
        &lab.wns(1),
        &["pmc", "-u", "-b", "0", "-s", &uds, "GET TIME_STATUS_NP"],
        // A grandmaster, and a measurement from it.
        |t| {
            let field = |f: &str| {
                t.lines()
                    .find_map(|l| l.trim().strip_prefix(f).map(|v| v.trim().to_string()))
            };
            // ptp4l leaves master_offset at 0 until its first delay
            // measurement; software timestamps are never exactly 0 apart.
            field("gmPresent").as_deref() == Some("true")
                && field("ingress_time").is_some_and(|v| v != "0")
                && field("master_offset").is_some_and(|v| v != "0")
        },
        "ptp4l",
    );
    let k = keys.to_str().unwrap();
    lab.worker(0, &d, &["--tls", k, "--clock-service", "chrony:127.0.0.1"]);
    lab.worker(
        1,
        &d,
        &["--tls", k, "--clock-service", &format!("ptp:{uds}")],
    );
    let trace = d.join("t.pcap");
    flows_trace(&trace, 20);
    let p = plan(&d, &lab, 2, "t.pcap", &["--pps", "1k"], "1s");
    let (o, s) = control(&p, &keys, &d.join("s.json"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let w = &s["workers"];
    let chrony = w[0]["clock_service"].as_str().unwrap_or_default();
    assert!(
        chrony.starts_with("chrony: reference 10.78.250.1 stratum 9"),
        "{s}"
    );
    let ptp = w[1]["clock_service"].as_str().unwrap_or_default();
    assert!(ptp.starts_with("linuxptp: grandmaster "), "{s}");
    for (i, what) in [(0, "chrony"), (1, "linuxptp")] {
        let off = w[i]["clock_service_offset_ns"].as_i64().unwrap();
        let bound = w[i]["clock_service_bound_ns"].as_u64().unwrap();
        eprintln!(
            "{what}: offset {off} ns, bound {bound} ns; sluice measured {} ns ± {} ns",
            w[i]["offset_ns"], w[i]["offset_uncertainty_ns"]
        );
        // Both references are this host's own clock: a correct reading is
        // within its bound and small, and not 0: chrony's root delay and
        // dispersion are positive, software PTP timestamps are never
        // exactly equal.
        assert!(
            off.unsigned_abs() <= bound,
            "{what}: {off} ns beyond {bound} ns"
        );
        assert!(bound > 0 && bound < 50_000_000, "{what}: bound {bound} ns");
    }
    // The printed summary shows them under each worker's own offset.
    let out = stderr(&o);
    assert!(
        out.contains("chrony: reference") && out.contains("bound"),
        "{out}"
    );
    assert!(out.contains("linuxptp: grandmaster"), "{out}");
    // No service asked: nothing reported.
    lab.worker(0, &d, &["--tls", k, "--clock-service", "none"]);
    let (o, s) = control(&p, &keys, &d.join("s.json"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s["workers"][0]["clock_service"].is_null(), "{s}");
}

#[test]
fn unreachable_refusing_and_badly_clocked_workers_are_named() {
    let _one = serial();
    let (d, keys, trace) = keyed("distributed-refusals", 100);
    let port = 19_000 + (std::process::id() % 1000) as u16 * 2;
    let log = d.join("worker.log");
    let worker = loopback_worker(port, &keys, &log);
    let plan = |name: &str, workers: &[(&str, u16)], args: &str| {
        let mut y = String::from("workers:\n");
        for (w, p) in workers {
            y += &format!("  - {{name: {w}, address: \"127.0.0.1:{p}\", to: \"null\"}}\n");
        }
        y += &format!(
            "job: {{command: replay, file: {}, args: [{args}], duration: 1s}}\n",
            trace.display()
        );
        let p = d.join(name);
        std::fs::write(&p, y).unwrap();
        p
    };
    let summary = d.join("s.json");
    // Nothing listens on port + 1: the environment's fault, exit 1.
    let p = plan("gone.yaml", &[("w0", port), ("w1", port + 1)], "");
    let (o, _) = control(&p, &keys, &summary, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("worker 'w1'") && stderr(&o).contains("unreachable"),
        "{}",
        stderr(&o)
    );
    // Options the CLI refuses: the controller parses the job's command
    // line itself before contacting any worker, so it is exit 2 every
    // time, even beside a worker that cannot be reached.
    let _ = std::fs::remove_file(&summary);
    let p = plan(
        "bad.yaml",
        &[("w0", port), ("w1", port + 1)],
        "\"--pps\", \"banana\"",
    );
    for _ in 0..3 {
        let (o, _) = control(&p, &keys, &summary, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains("banana") && err.contains("before any worker"),
            "{err}"
        );
        assert!(
            !err.contains("--help") && !err.contains("unreachable"),
            "{err}"
        );
    }
    // Options that name a file on the worker: refused by the controller
    // (and by the worker), the file's content never echoed.
    for (name, args, says) in [
        // replay has no --map: the command line's own parser refuses it.
        (
            "shadow.yaml",
            "\"--map\", \"/etc/shadow\"",
            "unexpected argument '--map'",
        ),
        // An output is each worker's own: not in a job's types.
        (
            "summary.yaml",
            "\"--summary-json\", \"/etc/shadow\"",
            "--summary-json is each worker's own",
        ),
    ] {
        let p = plan(name, &[("w0", port)], args);
        let (o, _) = control(&p, &keys, &summary, &[]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(says) && !err.contains("root:"), "{err}");
    }
    // An input the job refuses (no trace at all): the worker's error, its
    // name, exit 2.
    let garbage = d.join("garbage.pcap");
    std::fs::write(&garbage, b"this is not a capture").unwrap();
    let y = format!(
        "workers:\n  - {{name: w0, address: \"127.0.0.1:{port}\", to: \"null\"}}\n\
         job: {{command: replay, file: {}, duration: 1s}}\n",
        garbage.display()
    );
    let p = d.join("garbage.yaml");
    std::fs::write(&p, y).unwrap();
    let (o, s) = control(&p, &keys, &summary, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("worker 'w0'"), "{}", stderr(&o));
    let w = &s["workers"][0];
    assert_eq!(w["refused"], true, "{s}");
    assert!(!w["error"].as_str().unwrap().contains("--help"), "{s}");
    assert_eq!(s["total"]["packets"], 0, "{s}");
    // A clock offset known worse than --max-skew: refused before the
    // start, the worker named, exit 1.
    let p = plan("ok.yaml", &[("w0", port)], "\"--pps\", \"1k\"");
    let (o, _) = control(&p, &keys, &summary, &["--max-skew", "1ns"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("worker 'w0'") && stderr(&o).contains("--max-skew"),
        "{}",
        stderr(&o)
    );
    // And the same worker, a sane plan: it runs.
    let (o, s) = control(&p, &keys, &summary, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(s["total"]["packets"], 100, "{s}");
    assert_eq!(s["workers"][0]["refused"], false, "{s}");
    // Each task's uploaded input is deleted when its job ends: a
    // long-lived worker does not fill its disk.
    let text = std::fs::read_to_string(&log).unwrap();
    let inputs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split("starting replay ").nth(1))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(inputs.len(), 2, "{text}");
    for f in inputs {
        assert!(!Path::new(f).exists(), "{f} is still there");
    }
    drop(worker);
}

#[test]
fn a_frozen_or_silent_worker_is_given_up_and_the_first_sigint_ends_the_wait() {
    let _one = serial();
    let (d, keys, trace) = keyed("distributed-frozen", 100_000);
    let port = 21_000 + (std::process::id() % 1000) as u16 * 2;
    let plan = |name: &str, p: u16, duration: &str| {
        let y = format!(
            "workers:\n  - {{name: w0, address: \"127.0.0.1:{p}\", to: \"null\"}}\n\
             job: {{command: replay, file: {}, args: [\"--pps\", \"1k\"], duration: {duration}}}\n",
            trace.display()
        );
        let f = d.join(name);
        std::fs::write(&f, y).unwrap();
        f
    };
    let start = |plan: &Path, summary: &Path, stats: Option<&Path>| {
        let mut c = sluice();
        c.args(["control", "run"])
            .arg(plan)
            .arg("--tls")
            .arg(&keys)
            .args(["-q", "--max-skew", "5ms", "--start-in", "1s"])
            .arg("--summary-json")
            .arg(summary);
        if let Some(p) = stats {
            c.arg("--stats-json").arg(p);
        }
        c.stderr(Stdio::piped()).spawn().unwrap()
    };
    let err_of = |c: &mut Child| {
        let mut e = String::new();
        std::io::Read::read_to_string(&mut c.stderr.take().unwrap(), &mut e).unwrap();
        e
    };

    // An address that accepts TCP and never speaks TLS: given up (the
    // connect, handshake and Register have 10 s together), exit 1.
    let silent = std::net::TcpListener::bind(("127.0.0.1", port + 1)).unwrap();
    let mut ctl = start(
        &plan("silent.yaml", port + 1, "2s"),
        &d.join("silent.json"),
        None,
    );
    let status = wait_within(&mut ctl, Duration::from_secs(60));
    let err = err_of(&mut ctl);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("worker 'w0'") && err.contains("no answer"),
        "{err}"
    );
    drop(silent);

    // A worker frozen mid-run (SIGSTOP), once it has reported: lost at
    // its deadline plus a margin or when the keep-alive finds it (which
    // comes first is the machine's business: lost either way), with what
    // it last said counted, as a lower bound.
    let log = d.join("worker.log");
    // SIGKILL ends it even while stopped, should the test fail midway.
    let worker = loopback_worker(port, &keys, &log);
    let pid = worker.id().to_string();
    let summary = d.join("frozen.json");
    let stats = d.join("frozen.jsonl");
    let mut ctl = start(&plan("frozen.yaml", port, "3s"), &summary, Some(&stats));
    let t0 = Instant::now();
    while !std::fs::read_to_string(&stats)
        .unwrap_or_default()
        .contains("sluice.interval/1")
    {
        assert!(t0.elapsed() < Duration::from_secs(30), "no statistics line");
        std::thread::sleep(Duration::from_millis(20));
    }
    sh(&["kill", "-STOP", &pid]);
    let status = wait_within(&mut ctl, Duration::from_secs(90));
    let err = err_of(&mut ctl);
    sh(&["kill", "-CONT", &pid]);
    assert_eq!(status.code(), Some(1), "{err}");
    let s = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    let w = &s["workers"][0];
    assert!(w["error"].as_str().unwrap().contains("w0"), "{s}");
    assert!(w["summary"].is_null(), "{s}");
    assert_eq!(w["lost"], true, "{s}");
    let last = w["last_packets"].as_u64().expect("it reported");
    assert!(last > 0, "{s}");
    let t = &s["total"];
    assert_eq!(t["lost"], 1, "{s}");
    assert_eq!(t["at_least"], true, "{s}");
    assert_eq!(t["packets"].as_u64(), Some(last), "{s}");
    assert!(
        err.contains(&format!("LOST: at least {last} packets"))
            && err.contains(&format!("at least {last} packets,")),
        "{err}"
    );
    // Its job still ends on the worker, by the deadline, and the lease
    // with it: the next controller is served.
    let t0 = Instant::now();
    while !std::fs::read_to_string(&log).unwrap().contains("job ended") {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the job never ended"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // The first SIGINT ends the wait even when a worker cannot answer:
    // the summary is written, the worker reported lost.
    let summary = d.join("int.json");
    let mut ctl = start(&plan("long.yaml", port, "60s"), &summary, None);
    std::thread::sleep(Duration::from_millis(2500));
    sh(&["kill", "-STOP", &pid]);
    sh(&["kill", "-INT", &ctl.id().to_string()]);
    let status = wait_within(&mut ctl, Duration::from_secs(30));
    let err = err_of(&mut ctl);
    sh(&["kill", "-CONT", &pid]);
    assert_eq!(status.code(), Some(130), "{err}");
    let s = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    assert_eq!(s["interrupted"], true, "{s}");
    assert_eq!(s["workers"][0]["lost"], true, "{s}");
    assert!(err.contains("lost"), "{err}");
    drop(worker);
}

#[test]
fn a_keyless_worker_serves_its_owner_on_a_unix_socket_and_reads_only_uploads() {
    let _one = serial();
    let d = tmpdir("distributed-unix");
    let trace = d.join("t.pcap");
    flows_trace(&trace, 100);
    // TCP without keys is refused outright.
    let o = sluice()
        .args(["worker", "--listen", "127.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("TCP needs --tls"), "{}", stderr(&o));
    let sock = d.join("w.sock");
    let log = d.join("worker.log");
    let worker = Reaped(
        sluice()
            .args(["worker", "--listen", &format!("unix:{}", sock.display())])
            .arg("--work-dir")
            .arg(&*d)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    listening(&log);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&sock).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let plan_with = |name: &str, command: &str, file: &str, files: &str, args: &str| {
        let y = format!(
            "workers:\n  - {{name: w0, address: \"unix:{}\", to: \"null\"}}\n\
             job: {{command: {command}, file: {file}, files: [{files}], args: [{args}], duration: 1s}}\n",
            sock.display()
        );
        let f = d.join(name);
        std::fs::write(&f, y).unwrap();
        f
    };
    let plan = |name: &str, command: &str, file: &str, files: &str| {
        plan_with(name, command, file, files, "")
    };
    let ctl = |plan: &Path| {
        sluice()
            .args(["control", "run"])
            .arg(plan)
            .args(["-q", "--max-skew", "5ms", "--summary-json"])
            .arg(d.join("s.json"))
            .output()
            .unwrap()
    };
    // A profile reads its capture from an upload, named by its plain name.
    std::fs::write(
        d.join("p.yaml"),
        "duration: 1s\nipd: {dist: empirical, from: t.pcap}\nsize: {dist: empirical, from: t.pcap}\n",
    )
    .unwrap();
    let o = ctl(&plan("ok.yaml", "profile", "p.yaml", "t.pcap"));
    assert!(o.status.success(), "{}", stderr(&o));
    let s = sluice_testkit::checked_json(&std::fs::read(d.join("s.json")).unwrap());
    assert!(s["total"]["packets"].as_u64().unwrap() > 0, "{s}");
    // How a job sends reaches the worker typed: --loss drops there, and
    // its summary counts the frames dropped and not sent.
    let p = plan_with(
        "loss.yaml",
        "replay",
        "t.pcap",
        "",
        "\"--loss\", \"50\", \"--topspeed\"",
    );
    let o = ctl(&p);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = sluice_testkit::checked_json(&std::fs::read(d.join("s.json")).unwrap());
    let w = &s["workers"][0]["summary"];
    let (sent, lost) = (
        w["packets"].as_u64().unwrap(),
        w["loss_dropped"].as_u64().unwrap(),
    );
    assert_eq!(sent + lost, 100, "{s}");
    assert!(lost > 0 && sent > 0, "{s}");
    // A path of the worker's host is refused, whatever the profile says.
    std::fs::write(
        d.join("evil.yaml"),
        format!(
            "duration: 1s\nipd: {{dist: empirical, from: {}}}\n",
            trace.display()
        ),
    )
    .unwrap();
    let o = ctl(&plan("evil-plan.yaml", "profile", "evil.yaml", ""));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("uploaded files"), "{}", stderr(&o));
    // Another uid is refused even when the socket is opened to all.
    std::fs::set_permissions(&sock, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let nobody = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["/usr/bin/python3", "-c"])
        .arg(
            "import socket, sys\n\
             s = socket.socket(socket.AF_UNIX)\n\
             s.connect(sys.argv[1])\n\
             s.settimeout(10)\n\
             try:\n    s.sendall(b'PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n')\n    print('refused' if s.recv(100) == b'' else 'served')\n\
             except OSError:\n    print('refused')\n",
        )
        .arg(&sock)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&nobody.stdout);
    assert!(said.starts_with("refused"), "{said}{}", stderr(&nobody));
    drop(worker);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("refused a client of uid 65534"), "{text}");
}
