//! Helpers shared by the CLI integration tests.
#![allow(dead_code)]

use sluice_capture::{CaptureReader, LinkType, PcapWriter};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

pub fn run(args: &[&str]) -> Output {
    sluice().args(args).output().expect("run sluice")
}

/// `profile onoff`, on and off 1 ms each with 100 µs gaps, then `extra`.
pub fn onoff_1ms<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "profile",
        "onoff",
        "--on",
        "constant:1ms",
        "--off",
        "constant:1ms",
        "--gap",
        "constant:100us",
    ];
    args.extend_from_slice(extra);
    args
}

pub fn testdata(name: &str) -> PathBuf {
    sluice_testkit::testdata("pcap").join(name)
}

/// Waits for `child` up to `limit`; kills it and fails if it is still
/// running (a hang, not a slow machine: callers' limits are far above the
/// bound the code sets).
pub fn wait_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
) -> std::process::ExitStatus {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A child process ended (killed, reaped) when the guard goes, so a test
/// that fails midway leaves no service running behind it.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Reaped {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Reaped {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// A test's scratch directory, removed with everything in it when the
/// guard goes (also when the test fails), so repeated runs do not fill the
/// disk. Set `SLUICE_KEEP_TMP=1` to keep it for a post-mortem.
pub struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("SLUICE_KEEP_TMP").is_some() {
            return;
        }
        // A process the test killed may still be finishing a file here
        // (a worker's job ends a moment after its worker): try again.
        for _ in 0..20 {
            if std::fs::remove_dir_all(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl std::ops::Deref for Scratch {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

pub fn tmpdir(tag: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("sluice-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// (timestamp ns, bytes) of every packet in a capture.
pub fn read_all(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let mut r = CaptureReader::open(path).unwrap_or_else(|e| panic!("{e}"));
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().unwrap_or_else(|e| panic!("{e}")) {
        out.push((p.ts_ns, p.data.to_vec()));
    }
    out
}

/// The bytes of every packet in a capture.
pub fn frames_of(path: &Path) -> Vec<Vec<u8>> {
    read_all(path).into_iter().map(|(_, f)| f).collect()
}

/// A UDP/IPv4 frame with `seq` at offset 42 (mktrace.py's layout).
pub fn frame(seq: u64, len: usize) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 0x99, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let ip_len = (len - 14) as u16;
    f.extend_from_slice(&[
        0x45,
        0,
        (ip_len >> 8) as u8,
        ip_len as u8,
        0,
        0,
        0,
        0,
        64,
        17,
        0,
        0,
    ]);
    f.extend_from_slice(&[10, 99, 0, 1, 10, 99, 0, 2, 4, 0, 0, 9]);
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&seq.to_be_bytes());
    f.resize(len, 0);
    f
}

/// Writes `count` frames spaced `gap_ns` apart.
pub fn write_trace(path: &Path, count: u64, gap_ns: u64, len: usize) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(std::io::BufWriter::new(file), LinkType::ETHERNET, 65535).unwrap();
    for i in 0..count {
        w.write_packet(1_000_000_000_000 + i * gap_ns, &frame(i, len), len as u32)
            .unwrap();
    }
    w.into_inner().unwrap();
}

/// Writes (timestamp ns, frame) pairs as a pcap.
pub fn write_frames(path: &Path, frames: &[(u64, Vec<u8>)]) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(std::io::BufWriter::new(file), LinkType::ETHERNET, 65535).unwrap();
    for (t, f) in frames {
        w.write_packet(*t, f, f.len() as u32).unwrap();
    }
    w.into_inner().unwrap();
}

pub fn gaps(pkts: &[(u64, Vec<u8>)]) -> Vec<u64> {
    pkts.windows(2).map(|w| w[1].0 - w[0].0).collect()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The records of a time-series archive, in file order (each with its
/// 30-byte header).
pub fn archive_records(arc: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(arc).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let len = u16::from_be_bytes([b[at], b[at + 1]]) as usize;
        out.push(b[at..at + len].to_vec());
        at += len;
    }
    out
}

/// Runs `sluice CMD... --to pcap:OUT --clock virtual -q EXTRA...`.
pub fn run_to_pcap(cmd: &[&str], out: &Path, extra: &[&str]) -> Output {
    let to = format!("pcap:{}", out.display());
    let mut args = cmd.to_vec();
    args.extend_from_slice(&["--to", &to, "--clock", "virtual", "-q"]);
    args.extend_from_slice(extra);
    run(&args)
}

/// Writes `csv` to `DIR/NAME.csv` and converts it with `sluice series
/// convert` into `DIR/NAME.arc`, which it returns.
pub fn convert_csv(dir: &Path, name: &str, csv: &str) -> PathBuf {
    let src = dir.join(format!("{name}.csv"));
    std::fs::write(&src, csv).unwrap();
    let arc = dir.join(format!("{name}.arc"));
    let o = run(&[
        "series",
        "convert",
        src.to_str().unwrap(),
        arc.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    arc
}

/// Runs `sluice replay TRACE --clock virtual -q --summary-json ... EXTRA...`;
/// returns the run and its summary (`null` when none was written).
pub fn replay_summary(trace: &Path, extra: &[&str]) -> (Output, serde_json::Value) {
    let sum = trace.with_extension("summary.json");
    let _ = std::fs::remove_file(&sum);
    let mut args = vec![
        "replay",
        trace.to_str().unwrap(),
        "--clock",
        "virtual",
        "-q",
        "--summary-json",
        sum.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = run(&args);
    let v = std::fs::read(&sum)
        .ok()
        .map(|b| sluice_testkit::checked_json(&b))
        .unwrap_or(serde_json::Value::Null);
    (o, v)
}

/// bench/ratejudge.py's figures (`--oneline`) of CAPTURE against TARGET,
/// by name.
pub fn ratejudge(target: &Path, capture: &Path) -> std::collections::BTreeMap<String, f64> {
    let o = Command::new("python3")
        .arg(sluice_testkit::bench_script("ratejudge.py"))
        .arg(target)
        .arg(capture)
        .arg("--oneline")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse::<f64>().ok()?)))
        .collect()
}

/// Writes `n` frames of 16 interleaved flows (UDP source ports 1000..1015,
/// sequence numbers as [`frame`]), 1 µs apart, to `path`.
pub fn write_16_flows(path: &Path, n: u64) {
    let file = std::fs::File::create(path).unwrap();
    let mut w = PcapWriter::new(file, LinkType::ETHERNET, 65535).unwrap();
    for i in 0..n {
        let mut f = frame(i, 64);
        f[34..36].copy_from_slice(&(1000 + (i % 16) as u16).to_be_bytes());
        w.write_packet(i * 1000, &f, 64).unwrap();
    }
    w.into_inner().unwrap();
}

/// Every flow of [`write_16_flows`] arrived in its own order.
pub fn assert_16_flows_in_order(got: &[(u64, Vec<u8>)]) {
    let mut last = [None::<u64>; 16];
    for (_, f) in got {
        let flow = (u16::from_be_bytes([f[34], f[35]]) - 1000) as usize;
        let seq = u64::from_be_bytes(f[42..50].try_into().unwrap());
        assert!(
            last[flow].is_none_or(|l| l < seq),
            "flow {flow} reordered at {seq}"
        );
        last[flow] = Some(seq);
    }
}

/// A bench script's first result row by column name: its output's first
/// non-blank line names the columns, the next holds the values.
pub fn bench_row(text: &str) -> std::collections::HashMap<String, String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let names: Vec<&str> = lines.next().expect("a header").split_whitespace().collect();
    let row: Vec<&str> = lines.next().expect("a row").split_whitespace().collect();
    assert_eq!(names.len(), row.len(), "{text}");
    names
        .iter()
        .zip(&row)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A time-series CSV of `n` records of device BIG, `gap_us` apart from
/// 2024-05-01T10:00:00 at UTC offset `tz` (`Z`, `+02:00`), record i
/// holding 1000 + 400 i bytes: longer than an Ethernet MTU from the third.
pub fn long_records_csv(n: usize, gap_us: usize, tz: &str) -> String {
    let mut s = String::from("timestamp,device_id,value\n");
    for i in 0..n {
        s.push_str(&format!(
            "2024-05-01T10:00:00.{:06}{tz},BIG,{}\n",
            i * gap_us,
            "x".repeat(1000 + i * 400)
        ));
    }
    s
}

/// Sends `sig` ("-INT", "-TERM") to process `pid` (one this test started).
pub fn signal(pid: u32, sig: &str) {
    assert!(std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success());
}
