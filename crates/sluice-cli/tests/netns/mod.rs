//! Test networks: a veth pair from this namespace into a namespace of
//! its own, with a capture there (tcpdump, an independent receiver).
//! Each test binary that includes it uses only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

pub fn sh(args: &[&str]) {
    let o = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

pub fn can_run() -> bool {
    use sluice_testkit::{require, require_root};
    require_root("veth tests") && require("ip", "veth tests") && require("tcpdump", "veth tests")
}

/// A veth pair `<tag>a` (here) ↔ `<tag>b` (in namespace `<tag>`), removed on drop.
pub struct Net {
    pub tag: String,
    /// The /24 of [`Net::address`], held while the pair exists.
    subnet: Option<sluice_testkit::SubnetLease>,
}

impl Net {
    pub fn up(tag: &str) -> Net {
        Net::with_queues(tag, 1)
    }

    /// As [`Net::up`], each side with `queues` TX and RX queues (one per
    /// XDP socket, so one per TX thread on `xdp:`).
    pub fn with_queues(tag: &str, queues: usize) -> Net {
        let tag = free_tag(tag);
        let (a, b) = (format!("{tag}a"), format!("{tag}b"));
        sh(&["ip", "netns", "add", &tag]);
        let net = Net {
            tag: tag.clone(),
            subnet: None,
        };
        let q = queues.to_string();
        sh(&[
            "ip",
            "link",
            "add",
            &a,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            &b,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ]);
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

    pub fn tx(&self) -> String {
        format!("{}a", self.tag)
    }

    /// Addresses NET.1/24 (here) and NET.2/24 (in the namespace), NET a
    /// /24 the host does not use (10.77.0 where free: [`Net::ip`] says
    /// which); returns the namespace side's MAC address.
    pub fn address(&mut self) -> String {
        let b = format!("{}b", self.tag);
        let net = self
            .subnet
            .insert(sluice_testkit::free_subnet(sluice_testkit::Subnet([
                10, 77, 0,
            ])));
        let (here, there) = (net.cidr(1), net.cidr(2));
        sh(&["ip", "addr", "add", &here, "dev", &self.tx()]);
        sh(&[
            "ip", "netns", "exec", &self.tag, "ip", "addr", "add", &there, "dev", &b,
        ]);
        sh(&[
            "ip", "netns", "exec", &self.tag, "ip", "link", "set", "lo", "up",
        ]);
        let o = Command::new("ip")
            .args(["netns", "exec", &self.tag, "cat"])
            .arg(format!("/sys/class/net/{b}/address"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// Host `n` of the pair's /24 (1 here, 2 in the namespace), once
    /// [`Net::address`] gave them.
    pub fn ip(&self, n: u8) -> String {
        self.subnet.as_ref().expect("Net::address first").host(n)
    }

    /// A UDP server on NET.2:9000 in the namespace (Python, the kernel's
    /// own UDP stack and reassembly) writing `src_ip src_port hex` per
    /// datagram to `out`; it exits after 2 s without traffic (60 s before
    /// the first datagram).
    pub fn udp_receiver(&self, out: &Path) -> Child {
        let script = r#"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
s.bind((sys.argv[2], 9000))
# The first datagram may take long on a loaded machine; then 2 s of
# silence ends the stream.
s.settimeout(60.0)
print("listening", flush=True)
with open(sys.argv[1], "w") as out:
    while True:
        try:
            d, a = s.recvfrom(70000)
        except socket.timeout:
            break
        s.settimeout(2.0)
        out.write("%s %d %s\n" % (a[0], a[1], d.hex()))
"#;
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.tag, "python3", "-c", script])
            .arg(out)
            .arg(self.ip(2))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut r = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert!(line.contains("listening"), "receiver: {line}");
        child
    }

    pub fn capture(&self, out: &Path) -> Child {
        tcpdump(&self.tag, &format!("{}b", self.tag), out, &[])
    }

    /// A capture of frames up to 2 KiB: in immediate mode each ring slot
    /// holds a whole snap length, so the default (256 KiB) leaves a 64 MiB
    /// buffer 256 slots, which a burst at 50 kpps overflows while tcpdump
    /// waits for a CPU.
    pub fn capture_small(&self, out: &Path) -> Child {
        tcpdump(&self.tag, &format!("{}b", self.tag), out, &["-s", "2048"])
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

/// `<base><pid>`, or with a letter after it where that is taken: a tag
/// whose namespace and interfaces (`<tag>a`, `<tag>b`) no one on the host
/// has, so the pair never replaces, nor its drop deletes, anyone else's.
pub fn free_tag(base: &str) -> String {
    let stem = format!("{base}{}", std::process::id() % 100_000);
    let free = |t: &String| {
        [t.clone(), format!("{t}a"), format!("{t}b")]
            .iter()
            .all(|n| sluice_testkit::name_free(n))
    };
    std::iter::once(stem.clone())
        .chain(('c'..='z').map(|c| format!("{stem}{c}")))
        .find(free)
        .unwrap_or_else(|| panic!("{stem}: every tag up to {stem}z is taken on this host"))
}

/// Frames the far end (`<tag>b`, in its namespace) has received.
pub fn far_rx(net: &Net) -> u64 {
    let o = Command::new("ip")
        .args(["netns", "exec", &net.tag, "cat"])
        .arg(format!("/sys/class/net/{}b/statistics/rx_packets", net.tag))
        .output()
        .unwrap();
    String::from_utf8_lossy(&o.stdout)
        .trim()
        .parse()
        .unwrap_or(0)
}

/// tcpdump on IFACE in namespace NS writing OUT (nanosecond stamps,
/// unbuffered), returned once it listens.
pub fn tcpdump(ns: &str, iface: &str, out: &Path, extra: &[&str]) -> Child {
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "tcpdump", "-i", iface])
        .args(["-n", "-U", "--immediate-mode", "-B", "65536"])
        .args(["--time-stamp-precision=nano"])
        .args(extra)
        .arg("-w")
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

pub fn stop(mut dump: Child) {
    std::thread::sleep(std::time::Duration::from_millis(300));
    sh(&["kill", "-INT", &dump.id().to_string()]);
    dump.wait().unwrap();
}

/// A veth pair `<tag><pid>a` ↔ `<tag><pid>b`, both ends in this
/// namespace; removed on drop.
pub struct Pair {
    /// The ends are `{t}a` and `{t}b`.
    pub t: String,
}

impl Pair {
    pub fn up(tag: &str) -> Pair {
        let t = format!("{tag}{}", std::process::id() % 100_000);
        let (a, b) = (format!("{t}a"), format!("{t}b"));
        let _ = Command::new("ip").args(["link", "del", &a]).output();
        sh(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &b]);
        let p = Pair { t };
        for end in [&a, &b] {
            sh(&[
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{end}.disable_ipv6=1"),
            ]);
            sh(&["ip", "link", "set", end, "up"]);
        }
        p
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &format!("{}a", self.t)])
            .output();
    }
}
