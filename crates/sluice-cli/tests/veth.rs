//! Replay through a real veth pair into a network namespace, captured there
//! by tcpdump (an independent receiver): every frame must arrive
//! byte-identical and in order. Needs root (CI runs as root); skipped with a
//! note otherwise, except under CI where skipping is a failure.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

fn sh(args: &[&str]) {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// One veth test at a time: concurrent replays and captures on a 2-core
/// machine starve the receiver, which then drops frames that did arrive.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn can_run() -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    let tools = Command::new("tcpdump").arg("--version").output().is_ok();
    if !(root && tools) {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the veth tests as root with tcpdump"
        );
        eprintln!("skipped: needs root and tcpdump");
    }
    root && tools
}

/// A veth pair `<tag>a` (here) ↔ `<tag>b` (in namespace `<tag>`), removed on drop.
struct Net {
    tag: String,
}

impl Net {
    fn up(tag: &str) -> Net {
        let tag = format!("{tag}{}", std::process::id() % 100_000);
        let (a, b) = (format!("{tag}a"), format!("{tag}b"));
        let _ = Command::new("ip").args(["link", "del", &a]).output();
        let _ = Command::new("ip").args(["netns", "del", &tag]).output();
        sh(&["ip", "netns", "add", &tag]);
        let net = Net { tag: tag.clone() };
        sh(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &b]);
        sh(&["ip", "link", "set", &b, "netns", &tag]);
        // No IPv6 autoconfiguration traffic in the capture.
        sh(&[
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{a}.disable_ipv6=1"),
        ]);
        sh(&[
            "ip",
            "netns",
            "exec",
            &tag,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{b}.disable_ipv6=1"),
        ]);
        sh(&["ip", "link", "set", &a, "up"]);
        sh(&["ip", "netns", "exec", &tag, "ip", "link", "set", &b, "up"]);
        net
    }

    fn tx(&self) -> String {
        format!("{}a", self.tag)
    }

    fn capture(&self, out: &Path) -> Child {
        let mut child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.tag,
                "tcpdump",
                "-i",
                &format!("{}b", self.tag),
            ])
            .args([
                "-n",
                "-U",
                "--immediate-mode",
                "-B",
                "65536",
                "--time-stamp-precision=nano",
                "-w",
            ])
            .arg(out)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut r = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        while r.read_line(&mut line).unwrap() > 0 && !line.contains("listening") {
            line.clear();
        }
        assert!(line.contains("listening"), "tcpdump: {line}");
        child
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.tx()])
            .output();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.tag])
            .output();
    }
}

fn stop(mut dump: Child) {
    std::thread::sleep(std::time::Duration::from_millis(300));
    sh(&["kill", "-INT", &dump.id().to_string()]);
    dump.wait().unwrap();
}

fn replay_through(net: &Net, trace: &Path, out: &Path, extra: &[&str]) {
    let dump = net.capture(out);
    let to = format!("afpacket:{}", net.tx());
    let mut args = vec!["replay", trace.to_str().unwrap(), "--to", &to, "-q"];
    args.extend_from_slice(extra);
    let o = run(&args);
    stop(dump);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn real_trace_arrives_byte_identical_and_in_order() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let net = Net::up("slv");
    let d = tmpdir("veth-real");
    let out = d.join("cap.pcap");
    let trace = testdata("tcpreplay__test.pcap");
    replay_through(&net, &trace, &out, &["--pps", "10k"]);
    let sent: Vec<Vec<u8>> = read_all(&trace).into_iter().map(|p| p.1).collect();
    let got: Vec<Vec<u8>> = read_all(&out).into_iter().map(|p| p.1).collect();
    assert_eq!(got.len(), sent.len());
    assert!(got == sent, "frames differ or are out of order");
}

#[test]
fn every_generated_frame_arrives_in_order_with_the_ring_and_with_sendmmsg() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let net = Net::up("slg");
    let d = tmpdir("veth-gen");
    let trace = d.join("t.pcap");
    write_trace(&trace, 20_000, 20_000, 64);
    for mode in ["ring", "sendmmsg"] {
        let out = d.join(format!("cap-{mode}.pcap"));
        replay_through(&net, &trace, &out, &["--pps", "50k", "--tx-mode", mode]);
        let got = read_all(&out);
        assert_eq!(got.len(), 20_000, "{mode}");
        for (i, (_, f)) in got.iter().enumerate() {
            assert_eq!(f, &frame(i as u64, 64), "{mode}: frame {i}");
        }
    }
}

#[test]
fn two_threads_keep_per_flow_order() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let net = Net::up("slf");
    let d = tmpdir("veth-flows");
    let trace = d.join("t.pcap");
    // 16 flows (UDP source ports), interleaved.
    let file = std::fs::File::create(&trace).unwrap();
    let mut w =
        sluice_capture::PcapWriter::new(file, sluice_capture::LinkType::ETHERNET, 65535).unwrap();
    for i in 0..8000u64 {
        let mut f = frame(i, 64);
        f[34..36].copy_from_slice(&(1000 + (i % 16) as u16).to_be_bytes());
        w.write_packet(i * 1000, &f, 64).unwrap();
    }
    w.into_inner().unwrap();
    let out = d.join("cap.pcap");
    replay_through(
        &net,
        &trace,
        &out,
        &["--pps", "20k", "--threads", "2", "--spin", "20us"],
    );
    let got = read_all(&out);
    assert_eq!(got.len(), 8000);
    let mut last = [None::<u64>; 16];
    for (_, f) in &got {
        let flow = (u16::from_be_bytes([f[34], f[35]]) - 1000) as usize;
        let seq = u64::from_be_bytes(f[42..50].try_into().unwrap());
        assert!(
            last[flow].is_none_or(|l| l < seq),
            "flow {flow} reordered at {seq}"
        );
        last[flow] = Some(seq);
    }
}
