//! `sluice converse` through a real router: a client namespace, a router
//! namespace whose nftables rules track every connection (`ct state`),
//! and a server namespace, joined by veth pairs. The judges are the
//! kernel's conntrack, a real nginx, h2load and wrk, and tshark's
//! `follow` of what crossed each end.

mod common;
mod netns;

use common::{stderr, tmpdir};
use netns::sh;
use serde_json::Value;
use sluice_stateful::frame::{self, Ends, TcpHead, ACK, FIN, PSH, SYN};
use sluice_testkit::{
    checked_json, checked_json_lines, require, require_root, Subnet, SubnetLease,
};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn can_run(what: &[&str]) -> bool {
    require_root("converse tests")
        && ["ip", "nft", "conntrack"]
            .iter()
            .chain(what)
            .all(|t| require(t, "converse tests"))
}

/// Client namespace `<tag>c` (interface `<tag>c0`), router `<tag>r`
/// (`<tag>r0`, `<tag>r1`, forwarding, conntrack counters), server `<tag>s`
/// (`<tag>s0`); two /24s, the router .254 on each.
struct Routed {
    tag: String,
    c: SubnetLease,
    s: SubnetLease,
}

impl Routed {
    fn up(base: &str) -> Routed {
        let tag = netns::free_tag(base);
        let c = sluice_testkit::free_subnet(Subnet([10, 78, 1]));
        let s = sluice_testkit::free_subnet(Subnet([10, 78, 2]));
        let r = Routed { tag, c, s };
        let t = &r.tag;
        for n in ["c", "r", "s"] {
            sh(&["ip", "netns", "add", &format!("{t}{n}")]);
        }
        for (a, b, na, nb) in [("c0", "r0", "c", "r"), ("s0", "r1", "s", "r")] {
            let (a, b) = (format!("{t}{a}"), format!("{t}{b}"));
            sh(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &b]);
            sh(&["ip", "link", "set", &a, "netns", &format!("{t}{na}")]);
            sh(&["ip", "link", "set", &b, "netns", &format!("{t}{nb}")]);
            for (ns, i) in [(na, &a), (nb, &b)] {
                let ns = format!("{t}{ns}");
                sh(&["ip", "-n", &ns, "link", "set", i, "up"]);
                sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            }
        }
        let rt = r.ns('r');
        sh(&[
            "ip",
            "-n",
            &rt,
            "addr",
            "add",
            &r.c.cidr(254),
            "dev",
            &format!("{t}r0"),
        ]);
        sh(&[
            "ip",
            "-n",
            &rt,
            "addr",
            "add",
            &r.s.cidr(254),
            "dev",
            &format!("{t}r1"),
        ]);
        sh(&[
            "ip",
            "netns",
            "exec",
            &rt,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ]);
        r.nft(
            "table inet judge {
               counter c_invalid {}
               counter c_new {}
               chain judged {
                 type filter hook forward priority 0; policy accept;
                 ct state invalid counter name c_invalid drop
                 ct state new counter name c_new
               }
             }",
        );
        r
    }

    fn ns(&self, n: char) -> String {
        format!("{}{n}", self.tag)
    }

    fn nft(&self, rules: &str) {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.ns('r'), "nft", "-f", "-"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(rules.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success(), "nft: {rules}");
    }

    /// Packets an nft counter (`c_new`, `c_invalid`, or a rule's) saw.
    fn counter(&self, name: &str) -> u64 {
        let o = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns('r'),
                "nft",
                "list",
                "counter",
                "inet",
                "judge",
                name,
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout);
        text.split_whitespace()
            .skip_while(|w| *w != "packets")
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("counter {name}: {text}"))
    }

    /// Connections conntrack holds for `proto` to port `dport`.
    fn conntrack(&self, proto: &str, dport: u16) -> u64 {
        let o = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns('r'),
                "conntrack",
                "-L",
                "-p",
                proto,
                "--dport",
            ])
            .arg(dport.to_string())
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).lines().count() as u64
    }

    fn pool(&self) -> String {
        format!("{}-{}", self.c.host(10), self.c.host(200))
    }

    fn server_ip(&self) -> String {
        self.s.host(1)
    }

    /// `sluice converse` as the server side, in the server namespace.
    fn server(&self, progs: &[&str], summary: &Path, extra: &[&str]) -> Child {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns('s'), SLUICE, "converse", "-q"])
            .args([
                "--server",
                &format!("{}s0", self.tag),
                "--listen",
                &self.server_ip(),
            ])
            .args(["--server-gateway", &self.s.host(254)])
            .args(["--summary-json"])
            .arg(summary)
            .args(extra);
        for p in progs {
            cmd.args(["-p", p]);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Ready once it says so (its port is open).
        let mut r = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        use std::io::BufRead;
        while r.read_line(&mut line).unwrap() > 0 && !line.contains("answers") {
            line.clear();
        }
        assert!(line.contains("answers"), "server: {line}");
        child.stderr = Some(r.into_inner());
        child
    }

    /// `sluice converse` as the client side, to its end.
    fn client(&self, progs: &[&str], extra: &[&str]) -> Output {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns('c'), SLUICE, "converse", "-q"])
            .args([
                "--client",
                &format!("{}c0", self.tag),
                "--pool",
                &self.pool(),
            ])
            .args(["--to", &self.server_ip(), "--gateway", &self.c.host(254)])
            .args(extra);
        for p in progs {
            cmd.args(["-p", p]);
        }
        cmd.output().unwrap()
    }

    /// An address and a default route for the kernel's own stack in
    /// namespace `n` (`c`: .1 of the client net; `s`: the server address).
    fn kernel_address(&self, n: char) {
        let (net, i) = if n == 'c' { (&self.c, 1) } else { (&self.s, 1) };
        let ns = self.ns(n);
        sh(&[
            "ip",
            "-n",
            &ns,
            "addr",
            "add",
            &net.cidr(i),
            "dev",
            &format!("{}{n}0", self.tag),
        ]);
        sh(&[
            "ip",
            "-n",
            &ns,
            "route",
            "add",
            "default",
            "via",
            &net.host(254),
        ]);
    }
}

impl Drop for Routed {
    fn drop(&mut self) {
        for n in ['c', 'r', 's'] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(n)])
                .output();
        }
    }
}

/// Ends a server side with SIGINT and returns its summary.
fn stop_server(mut child: Child, summary: &Path) -> Value {
    sh(&["kill", "-INT", &child.id().to_string()]);
    let status = common::wait_within(&mut child, Duration::from_secs(30));
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "server: {err}");
    checked_json(&std::fs::read(summary).unwrap_or_else(|e| panic!("{e}: {err}")))
}

/// Waits until a side's `--stats-json` lines say it holds no connection
/// (its peer's last FIN or reset handled), in a line written two or
/// more lines after the call: the lines are a second apart and their
/// counts up to a second old, so that one counts what came before.
fn wait_all_closed(lines: &Path) {
    let read = || -> Vec<Value> {
        let text = std::fs::read_to_string(lines).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let from = read().len() + 2;
    let t0 = std::time::Instant::now();
    loop {
        let all = read();
        if all.len() > from && all[from..].iter().any(|v| v["sides"][0]["active"] == 0) {
            return;
        }
        let last = all.last().map(|v| v["sides"][0]["active"].clone());
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "still held: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn side<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["sides"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["side"] == name)
        .unwrap_or_else(|| panic!("no {name} side: {doc}"))
}

fn n(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("{key}: {v}"))
}

#[test]
fn every_conversation_through_a_conntrack_router_is_valid_and_counted() {
    if !can_run(&[]) {
        return;
    }
    let net = Routed::up("cv");
    let d = tmpdir("converse-ct");
    let (ssum, csum, stats) = (d.join("s.json"), d.join("c.json"), d.join("c.jsonl"));
    let progs = [
        "http:size=20k",
        "rr:req=uniform(10,2000),resp=exp(3000),turns=3",
        "dns",
    ];
    let server = net.server(&progs, &ssum, &[]);
    let o = net.client(
        &progs,
        &[
            "--cps",
            "300",
            "-n",
            "600",
            "--summary-json",
            csum.to_str().unwrap(),
            "--stats-json",
            stats.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sdoc = stop_server(server, &ssum);
    let cdoc = checked_json(&std::fs::read(&csum).unwrap());
    let lines = checked_json_lines(&std::fs::read(&stats).unwrap());
    assert_eq!(lines.last().unwrap()["final"], false);
    let (c, s) = (
        &side(&cdoc, "client")["total"],
        &side(&sdoc, "server")["total"],
    );
    for k in ["attempted", "established", "completed"] {
        assert_eq!(n(c, k), 600, "client {k}: {c}");
        assert_eq!(n(s, k), 600, "server {k}: {s}");
    }
    assert_eq!(n(c, "bytes_tx"), n(s, "bytes_rx"));
    assert_eq!(n(s, "bytes_tx"), n(c, "bytes_rx"));
    // The router's judgement: nothing invalid, one new connection each.
    assert_eq!(net.counter("c_invalid"), 0);
    // A SYN (or a first datagram) sent again is counted new again.
    let new = net.counter("c_new");
    assert!(
        (600..=600 + n(c, "retransmitted")).contains(&new),
        "{new} new"
    );
    let programs = side(&cdoc, "client")["programs"]
        .as_array()
        .unwrap()
        .clone();
    let tcp_done = n(&programs[0], "completed") + n(&programs[1], "completed");
    assert_eq!(
        net.conntrack("tcp", 80) + net.conntrack("tcp", 9000),
        tcp_done
    );
    assert_eq!(net.conntrack("udp", 53), n(&programs[2], "completed"));
    assert!(n(&programs[0]["connect"], "count") > 0);
}

#[test]
fn one_segment_in_a_hundred_dropped_by_the_router_still_completes_all() {
    if !can_run(&[]) {
        return;
    }
    let net = Routed::up("cl");
    net.nft(
        "table inet judge {
           counter c_lost {}
           chain lossy {
             type filter hook forward priority -10; policy accept;
             meta l4proto tcp numgen random mod 100 == 0 counter name c_lost drop
           }
         }",
    );
    let d = tmpdir("converse-loss");
    let (ssum, csum) = (d.join("s.json"), d.join("c.json"));
    // Two threads a side: each owns the connections of its client ports.
    let server = net.server(&["http:size=60k"], &ssum, &["--threads", "2"]);
    let o = net.client(
        &["http:size=60k"],
        &[
            "--cps",
            "200",
            "-n",
            "300",
            "--summary-json",
            csum.to_str().unwrap(),
            "--drain",
            "60s",
            "--threads",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sdoc = stop_server(server, &ssum);
    let cdoc = checked_json(&std::fs::read(&csum).unwrap());
    let (c, s) = (
        &side(&cdoc, "client")["total"],
        &side(&sdoc, "server")["total"],
    );
    assert_eq!(n(c, "completed"), 300, "{c}");
    assert_eq!(n(s, "completed"), 300, "{s}");
    assert!(net.counter("c_lost") > 0);
    assert!(n(c, "retransmitted") + n(s, "retransmitted") > 0);
    assert_eq!(net.counter("c_invalid"), 0);
    let head = sluice_stateful::templates::server_head(60_000).len() as u64;
    assert_eq!(n(c, "bytes_rx"), 300 * (head + 60_000));
    for doc in [&cdoc, &sdoc] {
        let per: Vec<u64> = doc["sides"][0]["thread_completed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(per.len(), 2);
        assert!(per.iter().all(|&c| c > 50), "{per:?}");
        assert_eq!(per.iter().sum::<u64>(), 300);
        // The kernel handed every frame to the thread that owns it.
        assert_eq!(n(&doc["sides"][0]["host"], "rx_stray"), 0);
    }
}

#[test]
fn gets_from_a_real_nginx_bring_each_file_whole() {
    if !can_run(&["nginx"]) {
        return;
    }
    let net = Routed::up("cn");
    net.kernel_address('s');
    let d = tmpdir("converse-nginx");
    let www = d.join("www");
    std::fs::create_dir_all(&www).unwrap();
    let mut rng = sluice_testkit::Rng(42);
    for (name, len) in [("small", 1024usize), ("large", 300_000)] {
        let body: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        std::fs::write(www.join(name), body).unwrap();
    }
    let conf = d.join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "worker_processes 1; pid {d}/nginx.pid; error_log {d}/error.log; daemon off;
             events {{ worker_connections 4096; }}
             http {{ access_log off; keepalive_requests 1;
               client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f; uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
               server {{ listen {ip}:80; root {www}; }} }}",
            d = d.display(),
            ip = net.server_ip(),
            www = www.display()
        ),
    )
    .unwrap();
    let nginx = Nginx(
        Command::new("ip")
            .args(["netns", "exec", &net.ns('s'), "nginx", "-c"])
            .arg(&conf)
            .arg("-p")
            .arg(&*d)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(500));
    let csum = d.join("c.json");
    let small = format!("http:path=/small,verify={}", www.join("small").display());
    let large = format!("http:path=/large,verify={}", www.join("large").display());
    let o = net.client(
        &[&small, &large],
        &[
            "--cps",
            "200",
            "-n",
            "400",
            "--summary-json",
            csum.to_str().unwrap(),
        ],
    );
    drop(nginx);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = checked_json(&std::fs::read(&csum).unwrap());
    for p in side(&doc, "client")["programs"].as_array().unwrap() {
        assert_eq!(n(p, "completed"), 200, "{p}");
        assert_eq!(n(p, "verified"), 200, "{p}");
        assert_eq!(n(p, "mismatched"), 0, "{p}");
    }
    assert_eq!(net.counter("c_invalid"), 0);
    assert_eq!(net.conntrack("tcp", 80), 400);
}

/// nginx's master, ended with SIGTERM (its workers end with it; SIGKILL
/// would leave them running) when the test ends, passed or not.
struct Nginx(Child);

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}

fn ns_output(ns: &str, args: &[&str]) -> String {
    let o = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn h2load_and_wrk_are_served_every_request() {
    if !can_run(&["h2load", "wrk"]) {
        return;
    }
    let net = Routed::up("ch");
    net.kernel_address('c');
    let d = tmpdir("converse-h2load");
    let ssum = d.join("s.json");
    let url = format!("http://{}/", net.server_ip());
    let lines = d.join("s.jsonl");
    let server = net.server(
        &["http-server:size=1k"],
        &ssum,
        &["--stats-json", lines.to_str().unwrap()],
    );
    let h2 = ns_output(
        &net.ns('c'),
        &["h2load", "--h1", "-n", "2000", "-c", "20", "-m", "1", &url],
    );
    assert!(h2.contains("2000 succeeded, 0 failed, 0 errored"), "{h2}");
    wait_all_closed(&lines);
    let doc = stop_server(server, &ssum);
    let s = &side(&doc, "server")["total"];
    // h2load's 20 connections, each closed in order.
    assert_eq!(n(s, "attempted"), 20, "{s}");
    assert_eq!(n(s, "completed"), 20, "{s}");
    let ssum = d.join("s2.json");
    let lines = d.join("s2.jsonl");
    let server = net.server(
        &["http-server:size=1k"],
        &ssum,
        &["--stats-json", lines.to_str().unwrap()],
    );
    let wrk = ns_output(&net.ns('c'), &["wrk", "-t1", "-c10", "-d2s", &url]);
    assert!(
        !wrk.contains("Non-2xx") && !wrk.contains("Socket errors"),
        "{wrk}"
    );
    let served: u64 = wrk
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{wrk}"));
    assert!(served > 0);
    wait_all_closed(&lines);
    let doc = stop_server(server, &ssum);
    let s = &side(&doc, "server")["total"];
    // wrk's 10 connections (and the one it tries first) close as it
    // ends, with a reset where an answer was still unread: none failed
    // on the server's side.
    assert!((10..=11).contains(&n(s, "attempted")), "{s}");
    assert_eq!(
        n(s, "completed") + n(s, "reset_by_peer"),
        n(s, "attempted"),
        "{s}"
    );
    assert_eq!(n(s, "aborted") + n(s, "timed_out"), 0, "{s}");
    assert_eq!(net.counter("c_invalid"), 0);
}

/// A capture of one HTTP conversation (two requests; the second answer in
/// three segments, one of them sent twice), one DNS exchange, and a TCP
/// conversation whose handshake the capture missed.
fn write_conversations(path: &Path) -> (Vec<u8>, Vec<u8>) {
    let (cm, sm) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let (cip, sip) = (0xc000_0264u32, 0xc633_6407u32);
    let mut frames: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut t = 1_000_000_000_000u64;
    let mut tcp =
        |frames: &mut Vec<(u64, Vec<u8>)>, up: bool, seq: u32, ack: u32, flags: u8, data: &[u8]| {
            let e = if up {
                Ends {
                    src_mac: cm,
                    dst_mac: sm,
                    src: cip,
                    dst: sip,
                    sport: 43210,
                    dport: 80,
                }
            } else {
                Ends {
                    src_mac: sm,
                    dst_mac: cm,
                    src: sip,
                    dst: cip,
                    sport: 80,
                    dport: 43210,
                }
            };
            let h = TcpHead {
                seq,
                ack,
                flags,
                wnd: 500,
                syn_opts: None,
            };
            let mut f = Vec::new();
            frame::push_tcp(&mut f, &e, &h, 1, data.len(), |o| o.copy_from_slice(data));
            t += 1_000_000;
            frames.push((t, f));
        };
    let req1 = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    let req2 = b"GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec();
    let resp1 = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec();
    let resp2: Vec<u8> = [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n"[..],
        &vec![b'z'; 3000],
    ]
    .concat();
    let (c0, s0) = (1000u32, 5000u32);
    tcp(&mut frames, true, c0, 0, SYN, &[]);
    tcp(&mut frames, false, s0, c0 + 1, SYN | ACK, &[]);
    tcp(&mut frames, true, c0 + 1, s0 + 1, ACK, &[]);
    let mut cs = c0 + 1;
    let mut ss = s0 + 1;
    tcp(&mut frames, true, cs, ss, ACK | PSH, &req1);
    cs += req1.len() as u32;
    tcp(&mut frames, false, ss, cs, ACK | PSH, &resp1);
    ss += resp1.len() as u32;
    tcp(&mut frames, true, cs, ss, ACK | PSH, &req2);
    cs += req2.len() as u32;
    for (i, chunk) in resp2.chunks(1200).enumerate() {
        tcp(&mut frames, false, ss, cs, ACK, chunk);
        if i == 1 {
            // Sent again: the capture holds it twice.
            tcp(&mut frames, false, ss, cs, ACK, chunk);
        }
        ss += chunk.len() as u32;
    }
    tcp(&mut frames, false, ss, cs, ACK | FIN, &[]);
    tcp(&mut frames, true, cs, ss + 1, ACK | FIN, &[]);
    tcp(&mut frames, false, ss + 1, cs + 1, ACK, &[]);
    // A conversation already under way when the capture started.
    let e = Ends {
        src_mac: cm,
        dst_mac: sm,
        src: cip,
        dst: sip,
        sport: 43211,
        dport: 80,
    };
    let mut f = Vec::new();
    frame::push_tcp(
        &mut f,
        &e,
        &TcpHead {
            seq: 9,
            ack: 9,
            flags: ACK | PSH,
            wnd: 500,
            syn_opts: None,
        },
        1,
        4,
        |o| o.copy_from_slice(b"late"),
    );
    frames.push((t + 1, f));
    // DNS.
    let q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x07example\x03com\x00\x00\x01\x00\x01".to_vec();
    let mut a = q.clone();
    a[2] = 0x81;
    a[3] = 0x80;
    a[7] = 1;
    a.extend_from_slice(&[0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 9]);
    for (up, p) in [(true, &q), (false, &a)] {
        let e = if up {
            Ends {
                src_mac: cm,
                dst_mac: sm,
                src: cip,
                dst: sip,
                sport: 5353,
                dport: 53,
            }
        } else {
            Ends {
                src_mac: sm,
                dst_mac: cm,
                src: sip,
                dst: cip,
                sport: 53,
                dport: 5353,
            }
        };
        let mut f = Vec::new();
        frame::push_udp(&mut f, &e, 1, p.len(), |o| o.copy_from_slice(p));
        frames.push((t + 2, f));
    }
    common::write_frames(path, &frames);
    ([req1, req2].concat(), [resp1, resp2].concat())
}

/// Both directions' bytes of conversation `n` of a capture, by tshark.
fn follow(capture: &Path, proto: &str, n: usize) -> (Vec<u8>, Vec<u8>) {
    let o = Command::new("tshark")
        .args(["-r"])
        .arg(capture)
        .args(["-q", "-z", &format!("follow,{proto},raw,{n}")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let (mut up, mut down) = (Vec::new(), Vec::new());
    let hex = |s: &str| -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    };
    let mut started = false;
    for l in text.lines() {
        if l.starts_with("Node 1:") {
            started = true;
            continue;
        }
        if !started || l.starts_with('=') || l.trim().is_empty() {
            continue;
        }
        if let Some(h) = l.strip_prefix('\t') {
            down.extend(hex(h.trim()));
        } else {
            up.extend(hex(l.trim()));
        }
    }
    (up, down)
}

#[test]
fn a_captures_conversations_cross_the_router_byte_for_byte() {
    if !can_run(&["tshark", "tcpdump"]) {
        return;
    }
    let net = Routed::up("cc");
    let d = tmpdir("converse-capture");
    let cap = d.join("conv.pcap");
    let (up, down) = write_conversations(&cap);
    let spec = format!("capture:{},pauses=none", cap.display());
    let (ssum, csum) = (d.join("s.json"), d.join("c.json"));
    let (cdump, sdump) = (d.join("c.pcap"), d.join("s.pcap"));
    let cd = netns::tcpdump(
        &net.ns('c'),
        &format!("{}c0", net.tag),
        &cdump,
        &["tcp or udp"],
    );
    let sd = netns::tcpdump(
        &net.ns('s'),
        &format!("{}s0", net.tag),
        &sdump,
        &["tcp or udp"],
    );
    let server = net.server(&[&spec], &ssum, &[]);
    let o = net.client(
        &[&spec],
        &[
            "-n",
            "2",
            "--cps",
            "10",
            "--summary-json",
            csum.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sdoc = stop_server(server, &ssum);
    netns::stop(cd);
    netns::stop(sd);
    let cdoc = checked_json(&std::fs::read(&csum).unwrap());
    assert_eq!(n(&side(&cdoc, "client")["total"], "completed"), 2);
    assert_eq!(n(&side(&sdoc, "server")["total"], "completed"), 2);
    // The original's streams, then each end's, by tshark.
    assert_eq!(follow(&cap, "tcp", 0), (up.clone(), down.clone()));
    for dump in [&cdump, &sdump] {
        assert_eq!(
            follow(dump, "tcp", 0),
            (up.clone(), down.clone()),
            "{}",
            dump.display()
        );
        let (q, a) = follow(dump, "udp", 0);
        assert_eq!((q.len(), a.len()), (33, 49), "{}", dump.display());
    }
    assert_eq!(net.counter("c_invalid"), 0);
}

#[test]
fn a_blackhole_times_out_and_a_reset_is_counted_in_bounded_time() {
    if !can_run(&[]) {
        return;
    }
    let net = Routed::up("cb");
    net.nft(
        "table inet judge {
           chain dut {
             type filter hook forward priority -10; policy accept;
             tcp dport 80 drop
             tcp dport 81 reject with tcp reset
           }
         }",
    );
    let t0 = std::time::Instant::now();
    let o = net.client(
        &["http", "http:port=81"],
        &[
            "--cps",
            "100",
            "-n",
            "20",
            "--syn-retries",
            "1",
            "--drain",
            "30s",
        ],
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    // 10 to the blackhole, given up after one SYN sent again (1 s, 2 s).
    assert!(err.contains("10 timed out"), "{err}");
    assert!(err.contains("10 reset by peer"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(25), "{:?}", t0.elapsed());
}

#[test]
fn impossible_requests_are_refused_naming_what_is_wrong() {
    let d = tmpdir("converse-refusals");
    let run = |args: &[&str]| -> Output { common::run(&[&["converse"], args].concat()) };
    let o = run(&[
        "--client",
        "lo",
        "--pool",
        "10.9.0.1",
        "--ports",
        "1000-1001",
        "--to",
        "10.9.1.1",
        "-n",
        "5",
        "--concurrency",
        "5",
        "-p",
        "http",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("more than the pool holds"),
        "{}",
        stderr(&o)
    );
    let o = run(&[
        "--client",
        "lo",
        "--pool",
        "10.9.0.1",
        "--to",
        "10.9.1.1",
        "-n",
        "5",
        "-p",
        "http:sise=3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("\"sise\""), "{}", stderr(&o));
    let o = run(&[
        "--client",
        "no-such-if9",
        "--pool",
        "10.9.0.1",
        "--to",
        "10.9.1.1",
        "-n",
        "5",
        "-p",
        "http",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no-such-if9"), "{}", stderr(&o));
    // A capture with no complete conversation: only a stray segment.
    let cap = d.join("stray.pcap");
    let e = Ends {
        src_mac: [2; 6],
        dst_mac: [4; 6],
        src: 1,
        dst: 2,
        sport: 3,
        dport: 4,
    };
    let mut f = Vec::new();
    frame::push_tcp(
        &mut f,
        &e,
        &TcpHead {
            seq: 1,
            ack: 1,
            flags: ACK,
            wnd: 1,
            syn_opts: None,
        },
        1,
        3,
        |o| o.fill(b'x'),
    );
    common::write_frames(&cap, &[(1, f)]);
    let o = run(&[
        "--server",
        "lo",
        "--listen",
        "10.9.1.1",
        "--server-gateway",
        "10.9.1.2",
        "-p",
        &format!("capture:{}", cap.display()),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no complete TCP or UDP conversation (1 TCP without their handshake"),
        "{}",
        stderr(&o)
    );
    let bad = d.join("bad.pcap");
    std::fs::write(&bad, b"not a capture at all").unwrap();
    let o = run(&[
        "--server",
        "lo",
        "--listen",
        "10.9.1.1",
        "--server-gateway",
        "10.9.1.2",
        "-p",
        &format!("capture:{}", bad.display()),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.pcap"), "{}", stderr(&o));
}

#[test]
fn a_signal_resets_every_open_connection_and_still_writes_the_summary() {
    if !can_run(&[]) {
        return;
    }
    let net = Routed::up("cs");
    let d = tmpdir("converse-signal");
    let (ssum, csum) = (d.join("s.json"), d.join("c.json"));
    // Connections that open, then wait a minute before they speak.
    let progs = ["http:size=1k,wait=60s"];
    let server = net.server(&progs, &ssum, &[]);
    let mut client = Command::new("ip")
        .args(["netns", "exec", &net.ns('c'), SLUICE, "converse", "-q"])
        .args(["--client", &format!("{}c0", net.tag), "--pool", &net.pool()])
        .args(["--to", &net.server_ip(), "--gateway", &net.c.host(254)])
        .args([
            "-p", progs[0], "--cps", "1000", "-n", "200", "--drain", "120s",
        ])
        .arg("--summary-json")
        .arg(&csum)
        .arg("--stats-json")
        .arg(d.join("c.jsonl"))
        .args(["--metrics", "127.0.0.1:0", "--metrics-token-file"])
        .arg(d.join("token"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The metrics server says where it listens (port 0: any free one).
    let mut err = std::io::BufReader::new(client.stderr.take().unwrap());
    let mut line = String::new();
    use std::io::BufRead;
    while err.read_line(&mut line).unwrap() > 0 && !line.contains("metrics on") {
        line.clear();
    }
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    // Every connection established (the client's lines say so), then
    // SIGINT.
    let established = || -> u64 {
        let text = std::fs::read_to_string(d.join("c.jsonl")).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter_map(|v| v["sides"][0]["total"]["established"].as_u64())
            .max()
            .unwrap_or(0)
    };
    let t0 = std::time::Instant::now();
    while established() < 200 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{} established",
            established()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Scraped where the client runs, with its token.
    let token = std::fs::read_to_string(d.join("token")).unwrap();
    let text = ns_output(
        &net.ns('c'),
        &[
            "curl",
            "-sf",
            "-H",
            &format!("Authorization: Bearer {}", token.trim()),
            &url,
        ],
    );
    assert!(
        text.contains("sluice_converse_connections_total{side=\"client\",program=\"total\",outcome=\"established\"} 200"),
        "{text}"
    );
    assert!(
        text.contains("sluice_converse_open_connections{side=\"client\"} 200"),
        "{text}"
    );
    if sluice_testkit::require("promtool", "converse metrics") {
        let p = d.join("scrape.txt");
        std::fs::write(&p, &text).unwrap();
        let o = Command::new("sh")
            .arg("-c")
            .arg(format!("promtool check metrics < {}", p.display()))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "promtool: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    sh(&["kill", "-INT", &client.id().to_string()]);
    let status = common::wait_within(&mut client, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130));
    let c = checked_json(&std::fs::read(&csum).unwrap());
    let c = &side(&c, "client")["total"];
    assert_eq!(n(c, "attempted"), 200, "{c}");
    assert_eq!(n(c, "unfinished"), 200, "{c}");
    assert_eq!(n(c, "completed"), 0, "{c}");
    std::thread::sleep(Duration::from_millis(300));
    let s = stop_server(server, &ssum);
    // The device holds nothing of them: each was reset.
    assert_eq!(n(&side(&s, "server")["total"], "reset_by_peer"), 200);
}
