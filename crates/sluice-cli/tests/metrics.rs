//! `--metrics`: a running job's statistics scraped over real HTTP on
//! loopback, mid-run, refused without the token, valid under
//! `promtool check metrics`, and gone when the run ends.

mod common;
mod netns;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One GET of `path` with `token` (if any): (status code, body).
fn get(addr: &str, path: &str, token: Option<&str>) -> std::io::Result<(u16, String)> {
    let mut c = TcpStream::connect(addr)?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(c, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}\r\n")?;
    let mut text = String::new();
    c.read_to_string(&mut text)?;
    let code = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    Ok((code, body.to_string()))
}

/// The value of the sample line starting `name` (labels included), 0
/// where there is none.
fn sample(body: &str, name: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// `job` run with `--metrics 0` (a bare port: on loopback) and the token
/// in `token_file`; the job and the address it says it listens on.
fn serving(job: &mut Command, token_file: &Path) -> (Reaped, String) {
    let mut job = Reaped(
        job.args(["--metrics", "0", "--metrics-token-file"])
            .arg(token_file)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // It says where it listens (the kernel chose the port).
    let mut err = BufReader::new(job.stderr.take().unwrap());
    let mut said = String::new();
    for _ in 0..10 {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        said += &line;
        if let Some(rest) = line.split("http://").nth(1) {
            let addr = rest.split("/metrics").next().unwrap().to_string();
            return (job, addr);
        }
    }
    panic!("no metrics address in: {said}");
}

/// Scrapes (each 200) until `name`'s sample is above 0, mid-run.
fn scrape_until(addr: &str, token: &str, name: &str) -> String {
    let t0 = Instant::now();
    loop {
        let (code, body) = get(addr, "/metrics", Some(token)).unwrap();
        assert_eq!(code, 200, "{body}");
        if sample(&body, name) > 0.0 {
            return body;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "no {name}: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `promtool check metrics` accepts `body`.
fn promtool_accepts(body: &str) {
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    check
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let o = check.wait_with_output().unwrap();
    assert!(
        o.status.success(),
        "promtool: {}{}\n{body}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn token_of(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap().trim().to_string()
}

#[test]
fn a_running_job_is_scraped_with_its_token_only_and_its_metrics_are_valid() {
    if !sluice_testkit::require("promtool", "metrics test") {
        return;
    }
    let d = tmpdir("metrics");
    let token_file = d.join("metrics.token");
    let (mut job, addr) = serving(
        sluice().args([
            "profile",
            "onoff",
            "--on",
            "constant:1s",
            "--off",
            "constant:1ms",
            "--gap",
            "constant:1ms",
            "--duration",
            "4s",
            "--to",
            "null",
            "-q",
        ]),
        &token_file,
    );
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    // The token file was made for it, readable by its owner only.
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&token_file).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600);
    let token = token_of(&token_file);
    // Without the token, or with another, nothing is told.
    let (code, body) = get(&addr, "/metrics", None).unwrap();
    assert_eq!((code, body.as_str()), (401, ""));
    let other = "0".repeat(64);
    assert_eq!(get(&addr, "/metrics", Some(&other)).unwrap().0, 401);
    assert_eq!(get(&addr, "/", Some(&token)).unwrap().0, 404);
    // A request never finished is answered 408 once its time is up
    // (the one server thread is not held).
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    let mut answer = String::new();
    slow.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    // Mid-run, once the first interval is in, a scrape counts packets.
    let body = scrape_until(&addr, &token, "sluice_packets_total");
    assert!(
        body.contains("# TYPE sluice_packets_total counter"),
        "{body}"
    );
    assert!(
        body.contains("sluice_send_error_seconds{percentile=\"99\"}"),
        "{body}"
    );
    promtool_accepts(&body);
    // The run ends as it would without metrics, and the port with it.
    let status = job.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(get(&addr, "/metrics", Some(&token)).is_err());
}

/// The token file is checked as every secret file is, and --metrics
/// needs one.
#[test]
fn metrics_without_a_private_token_file_are_refused() {
    let d = tmpdir("metrics-refused");
    let o = run(&["replay", "t.pcap", "--metrics", "127.0.0.1:0"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--metrics-token-file"),
        "{}",
        stderr(&o)
    );
    let open = d.join("open.token");
    std::fs::write(&open, "ab".repeat(32)).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let trace = d.join("t.pcap");
    write_trace(&trace, 10, 1000, 64);
    let o = sluice()
        .arg("replay")
        .arg(&trace)
        .args([
            "--to",
            "null",
            "-q",
            "--metrics",
            "127.0.0.1:0",
            "--metrics-token-file",
        ])
        .arg(&open)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("others may read it"), "{}", stderr(&o));
}

/// With `--rx`, a scrape also gives what the receiver counts, per stream,
/// while the run goes on.
#[test]
fn a_receiver_beside_the_run_is_scraped_per_stream() {
    use sluice_testkit::{require, require_root};
    if !(require_root("metrics rx test")
        && require("ip", "metrics rx test")
        && require("promtool", "metrics rx test"))
    {
        return;
    }
    let d = tmpdir("metrics-rx");
    let trace = d.join("t.pcap");
    write_trace(&trace, 1000, 1_000_000, 200);
    let pair = netns::Pair::up("mx");
    let token_file = d.join("m.token");
    let (mut job, addr) = serving(
        sluice()
            .arg("replay")
            .arg(&trace)
            .args(["--to", &format!("afpacket:{}a", pair.t)])
            .args(["--rx", &format!("{}b", pair.t)])
            .args(["--loop", "0", "--duration", "4s", "-q"]),
        &token_file,
    );
    let body = scrape_until(
        &addr,
        &token_of(&token_file),
        "sluice_rx_frames_total{stream=\"0\"}",
    );
    assert!(
        body.contains("sluice_rx_latency_seconds{stream=\"0\",percentile=\"99\"}"),
        "{body}"
    );
    assert!(
        body.contains("sluice_rx_ip_fragments_total{outcome=\"reassembled\"} 0\n"),
        "{body}"
    );
    promtool_accepts(&body);
    assert!(job.wait().unwrap().success());
}

/// Clients that connect and say nothing, or a byte of a request, hold no
/// scrape off: served one at a time (2 s each), these 80 would keep the
/// scrape waiting 160 s; each has a thread of its own, the longest-held
/// cut off for newcomers past the cap.
#[test]
fn clients_that_say_nothing_cannot_hold_a_scrape_off() {
    let d = tmpdir("metrics-hold");
    let trace = d.join("t.pcap");
    write_trace(&trace, 100, 1_000_000, 64);
    let token_file = d.join("m.token");
    let (_job, addr) = serving(
        sluice()
            .arg("replay")
            .arg(&trace)
            .args(["--to", "null", "--loop", "0", "--pps", "1k", "-q"])
            .args(["--duration", "120s"]),
        &token_file,
    );
    let mut held = Vec::new();
    for k in 0..80 {
        let mut c = TcpStream::connect(&addr).unwrap();
        if k % 4 == 0 {
            c.write_all(b"G").unwrap();
        }
        held.push(c);
    }
    let (code, body) = get(&addr, "/metrics", Some(&token_of(&token_file))).unwrap();
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("sluice_"), "{body}");
    drop(held);
}
