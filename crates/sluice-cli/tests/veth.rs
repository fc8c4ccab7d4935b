//! Replay through a real veth pair into a network namespace, captured there
//! by tcpdump (an independent receiver): every frame must arrive
//! byte-identical and in order. Needs root (CI runs as root); skipped with a
//! note otherwise, except under CI where skipping is a failure.

mod common;
mod netns;
use common::*;
use netns::*;
use std::path::Path;

/// One veth test at a time: concurrent replays and captures on a machine
/// with few cores starve the receiver, which then drops frames that did
/// arrive.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn replay_through(net: &Net, trace: &Path, out: &Path, extra: &[&str]) {
    replay_into(net, net.capture(out), trace, extra);
}

/// As [`replay_through`], captured with small ring slots: every frame of a
/// 20 000-frame run fits in the ring even if tcpdump gets no CPU until the
/// end (a loaded machine), so counts do not depend on the load.
fn replay_small_through(net: &Net, trace: &Path, out: &Path, extra: &[&str]) {
    replay_into(net, net.capture_small(out), trace, extra);
}

/// Replays `trace` onto the veth while `dump` captures, then stops it.
fn replay_into(net: &Net, dump: std::process::Child, trace: &Path, extra: &[&str]) {
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
        replay_small_through(&net, &trace, &out, &["--pps", "50k", "--tx-mode", mode]);
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
    write_16_flows(&trace, 8000);
    let out = d.join("cap.pcap");
    replay_small_through(
        &net,
        &trace,
        &out,
        &["--pps", "20k", "--threads", "2", "--spin", "20us"],
    );
    let got = read_all(&out);
    assert_eq!(got.len(), 8000);
    assert_16_flows_in_order(&got);
}

/// 3 devices × `per` records, 200 µs apart, values `size` bytes long.
fn series_archive(d: &Path, per: usize, size: usize) -> std::path::PathBuf {
    let mut s = String::from("timestamp,device_id,value\n");
    for i in 0..3 * per {
        let us = i * 200;
        s.push_str(&format!(
            "2024-02-29T12:00:{:02}.{:06}Z,SENSOR{},{}{}\n",
            us / 1_000_000,
            us % 1_000_000,
            i % 3,
            i,
            "v".repeat(size)
        ));
    }
    convert_csv(d, "in", &s)
}

/// (source port, payload) of every datagram the receiver got.
fn received(path: &Path) -> Vec<(u16, Vec<u8>)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let hex = f[2];
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            (f[1].parse().unwrap(), bytes)
        })
        .collect()
}

/// Plays `arc` with `args` while the namespace's UDP receiver listens;
/// returns what it received and the run's summary.
fn play_into_receiver(
    net: &Net,
    d: &Path,
    arc: &Path,
    args: &[&str],
) -> (Vec<(u16, Vec<u8>)>, serde_json::Value) {
    let got_path = d.join("rx.txt");
    let mut rx = net.udp_receiver(&got_path);
    let summary = d.join("s.json");
    let (arc, summary_arg) = (arc.to_str().unwrap(), summary.to_str().unwrap());
    let mut all = vec!["series", "play", arc, "-q", "--summary-json", summary_arg];
    all.extend_from_slice(args);
    let o = run(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(rx.wait().unwrap().success());
    let v = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    (received(&got_path), v)
}

fn summary_flows(v: &serde_json::Value) -> Vec<(String, u64)> {
    v["series"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["device"].as_str().unwrap().to_string(),
                f["sent"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn series_udp_sink_reaches_a_real_receiver_intact_with_per_flow_counts() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut net = Net::up("slu");
    net.address();
    let d = tmpdir("veth-series-udp");
    let arc = series_archive(&d, 500, 20);
    let to = format!("udp:{}:9000", net.ip(2));
    let (got, summary) = play_into_receiver(
        &net,
        &d,
        &arc,
        &["--to", &to, "--payload", "record", "--fast-forward", "2"],
    );
    let sent = archive_records(&arc);
    let got: Vec<Vec<u8>> = got.into_iter().map(|r| r.1).collect();
    assert_eq!(got.len(), sent.len(), "every record arrives");
    assert!(got == sent, "records arrive intact and in order");
    // Per-flow counts: the receiver's, by the device ID in each record,
    // against the summary's.
    let mut by_device = std::collections::BTreeMap::<String, u64>::new();
    for r in &got {
        let id = String::from_utf8_lossy(&r[14..30])
            .trim_end_matches('\0')
            .to_string();
        *by_device.entry(id).or_default() += 1;
    }
    let mut flows = summary_flows(&summary);
    flows.sort();
    assert_eq!(flows, by_device.into_iter().collect::<Vec<_>>());
    assert_eq!(flows.len(), 3);
}

#[test]
fn series_frames_through_afpacket_are_reassembled_by_the_receivers_kernel() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut net = Net::up("slr");
    let mac = net.address();
    let d = tmpdir("veth-series-frag");
    // 3000-byte values: every datagram is 3 IP fragments at MTU 1500.
    let arc = series_archive(&d, 100, 3000);
    let map = d.join("map.csv");
    let (src, dst) = (net.ip(1), net.ip(2));
    std::fs::write(
        &map,
        format!(
            "device_id,src_ip,dst_ip,src_port,dst_port\nSENSOR0,{src},{dst},4000,9000\nSENSOR1,{src},{dst},4001,9000\nSENSOR2,{src},{dst},4002,9000\n"
        ),
    )
    .unwrap();
    let to = format!("afpacket:{}", net.tx());
    let map_arg = map.to_str().unwrap();
    let (got, v) = play_into_receiver(
        &net,
        &d,
        &arc,
        &["--to", &to, "--dst-mac", &mac, "--map", map_arg],
    );
    let sent = archive_records(&arc);
    assert_eq!(
        got.len(),
        sent.len(),
        "every datagram reassembled and delivered"
    );
    for (i, (port, data)) in got.iter().enumerate() {
        assert_eq!(data[..], sent[i][30..], "record {i} data");
        assert_eq!(*port, 4000 + (i % 3) as u16, "record {i} flow");
    }
    assert_eq!(v["series"]["frames"], 900, "3 fragments per datagram");
}

/// Frames the interface cannot take are skipped and counted by reason; the
/// rest of the trace is sent (one refused frame used to end the run).
fn skipped_frames_do_not_stop(trace: &Path, tag: &str) -> (serde_json::Value, usize) {
    let net = Net::up(tag);
    let d = tmpdir(&format!("veth-skip-{tag}"));
    let out = d.join("cap.pcap");
    let sum = d.join("s.json");
    let dump = net.capture(&out);
    let to = format!("afpacket:{}", net.tx());
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--to",
        &to,
        "--topspeed",
        "-q",
        "--summary-json",
        sum.to_str().unwrap(),
    ]);
    stop(dump);
    assert_eq!(
        o.status.code(),
        Some(3),
        "frames skipped: exit 3; {}",
        stderr(&o)
    );
    let s: serde_json::Value = sluice_testkit::checked_json(&std::fs::read(&sum).unwrap());
    (s, read_all(&out).len())
}

#[test]
fn qinq_frames_one_tag_over_the_mtu_are_skipped_and_the_rest_sent() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // 802.1ad frames of MTU + 18 bytes: the kernel allows the 4 extra bytes
    // to 802.1Q only.
    let trace = testdata("tcpreplay__test.rewrite_vlan802.1ad.pcap");
    let (s, captured) = skipped_frames_do_not_stop(&trace, "slq");
    let (sent, oversize) = (
        s["packets"].as_u64().unwrap(),
        s["oversize"].as_u64().unwrap(),
    );
    assert!(oversize > 0, "{s}");
    assert_eq!(sent + oversize, 179, "{s}");
    assert_eq!(captured as u64, sent);
}

#[test]
fn a_frame_shorter_than_a_link_header_is_skipped_and_counted() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let trace = testdata("zeek__trunc_trunc-hdr.pcap");
    let (s, captured) = skipped_frames_do_not_stop(&trace, "slt");
    assert!(s["too_short"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(captured as u64, s["packets"].as_u64().unwrap());
}

/// Through kernel UDP sockets every mapped device used to leave from one
/// kernel-chosen port while the summary listed its mapped ports: now each
/// device's datagrams carry the mapping's source port, and the summary
/// says what was sent.
#[test]
fn series_udp_sink_sends_each_mapped_device_from_its_own_port() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut net = Net::up("slp");
    net.address();
    let d = tmpdir("veth-series-udp-ports");
    let arc = series_archive(&d, 100, 20);
    let map = d.join("map.csv");
    let (src, dst) = (net.ip(1), net.ip(2));
    // SENSOR2 is left to the defaults: the kernel's address, port 20000.
    std::fs::write(
        &map,
        format!(
            "device_id,src_ip,dst_ip,src_port,dst_port\nSENSOR0,{src},{dst},4000,9000\nSENSOR1,{src},{dst},4001,9000\n"
        ),
    )
    .unwrap();
    let to = format!("udp:{dst}:9000");
    let (got, summary) = play_into_receiver(
        &net,
        &d,
        &arc,
        &[
            "--to",
            &to,
            "--map",
            map.to_str().unwrap(),
            "--payload",
            "record",
            "--threads",
            "2",
        ],
    );
    assert_eq!(got.len(), 300, "every record arrives");
    for (port, rec) in &got {
        let device = String::from_utf8_lossy(&rec[14..30])
            .trim_end_matches('\0')
            .to_string();
        let want = match device.as_str() {
            "SENSOR0" => 4000,
            "SENSOR1" => 4001,
            _ => 20_000,
        };
        assert_eq!(*port, want, "{device} left from port {port}");
    }
    let flows: Vec<(String, String)> = summary["series"]["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["device"].as_str().unwrap().to_string(),
                f["src"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        flows.contains(&("SENSOR0".into(), format!("{src}:4000"))),
        "{flows:?}"
    );
    assert!(
        flows.contains(&("SENSOR2".into(), "0.0.0.0:20000".into())),
        "{flows:?}"
    );
}

/// A device that takes no frame (a TAP nobody reads has no carrier) once
/// held the TX thread in the full-ring loop for ever: now the run ends
/// with an error naming the device, and the summary is still printed.
#[test]
fn a_device_that_takes_nothing_ends_the_run_with_an_error() {
    if !can_run() {
        return;
    }
    // Its top-speed spin would starve the timed veth tests beside it.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tap = format!("sldead{}", std::process::id() % 10_000);
    let _ = std::process::Command::new("ip")
        .args(["link", "del", &tap])
        .output();
    sh(&["ip", "tuntap", "add", "dev", &tap, "mode", "tap"]);
    sh(&["ip", "link", "set", &tap, "up"]);
    let d = tmpdir("veth-dead-device");
    let trace = d.join("t.pcap");
    write_trace(&trace, 1000, 1000, 64);
    let t = std::time::Instant::now();
    let out = sluice()
        .arg("replay")
        .arg(&trace)
        .args(["--to", &format!("afpacket:{tap}"), "--topspeed"])
        .args(["--loop", "100000", "--duration", "30s"])
        .output()
        .unwrap();
    let _ = std::process::Command::new("ip")
        .args(["link", "del", &tap])
        .output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains(&format!("send on {tap}")) && err.contains("took no frame"),
        "{err}"
    );
    assert!(err.contains("sent "), "no summary: {err}");
    // The stall limit is 2 s; --duration (30 s) would end a run that hangs.
    assert!(t.elapsed() < std::time::Duration::from_secs(29), "{err}");
}

/// A veth pair `tag` <-> `tag`p, down, any leftover of that name gone.
fn fresh_veth(tag: &str) {
    let _ = std::process::Command::new("ip")
        .args(["link", "del", tag])
        .output();
    sh(&[
        "ip",
        "link",
        "add",
        tag,
        "type",
        "veth",
        "peer",
        "name",
        &format!("{tag}p"),
    ]);
}

/// The environment's faults exit 1, the input's 2: an interface that is
/// down or a user without CAP_NET_RAW is not a bad command line.
#[test]
fn environment_failures_exit_1_and_bad_input_exits_2() {
    if !can_run() {
        return;
    }
    let d = tmpdir("veth-exit-codes");
    let trace = d.join("t.pcap");
    write_trace(&trace, 10, 1000, 64);
    let t = trace.to_str().unwrap();

    let tag = format!("sldn{}", std::process::id() % 10_000);
    fresh_veth(&tag);
    let down = run(&["replay", t, "--to", &format!("afpacket:{tag}"), "-q"]);
    let _ = std::process::Command::new("ip")
        .args(["link", "del", &tag])
        .output();
    assert_eq!(down.status.code(), Some(1), "{}", stderr(&down));
    assert!(
        stderr(&down).contains(&format!("ip link set {tag} up")),
        "{}",
        stderr(&down)
    );

    let missing = run(&["replay", t, "--to", "afpacket:sl-no-such-if", "-q"]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));

    // An unprivileged user: a copy of the binary and trace it may read.
    use std::os::unix::fs::PermissionsExt;
    let bin = d.join("sluice");
    std::fs::copy(env!("CARGO_BIN_EXE_sluice"), &bin).unwrap();
    for (p, mode) in [(&*d, 0o755), (&bin, 0o755), (&trace, 0o644)] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    if !sluice_testkit::require("setpriv", "the unprivileged case") {
        return;
    }
    let o = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&bin)
        .args(["replay", t, "--to", "afpacket:lo", "-q"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("CAP_NET_RAW"), "{}", stderr(&o));
}

/// `analyze --capture IFACE`: sluice's own capture in the sink namespace
/// judges a run with no tcpdump, and what it saved holds exactly the frames
/// the trace has, in order (checked here byte for byte, not by the
/// analyzer).
#[test]
fn analyze_capture_judges_a_run_without_tcpdump() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    use std::io::{BufRead, BufReader};
    let net = Net::up("slc");
    let d = tmpdir("live-capture");
    let trace = d.join("t.pcap");
    write_trace(&trace, 3000, 20_000, 64);
    let saved = d.join("saved.pcap");
    let mut cap = std::process::Command::new("ip")
        .args(["netns", "exec", &net.tag])
        .arg(env!("CARGO_BIN_EXE_sluice"))
        .args([
            "analyze",
            "--capture",
            &format!("{}b", net.tag),
            // The replay takes 60 ms; the rest is room for a loaded machine.
            "--duration",
            "6s",
            "--json",
        ])
        .arg("-r")
        .arg(&trace)
        .arg("--save")
        .arg(&saved)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(cap.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("capturing on"), "{line}");
    // veth has no hardware stamps: asked for, refused, said so.
    assert!(line.contains("software receive stamps"), "{line}");
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--to",
        &format!("afpacket:{}", net.tx()),
        "-q",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = cap.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(out.status.success(), "{line}{rest}");
    assert!(rest.contains("captured 3000 frames"), "{rest}");
    assert!(
        rest.contains("0 hardware (NIC), 3000 software (kernel)"),
        "{rest}"
    );
    let j: serde_json::Value = sluice_testkit::checked_json(&out.stdout);
    assert_eq!(j["comparison"]["received"], 3000, "{j}");
    assert_eq!(j["comparison"]["lost"], 0);
    assert_eq!(frames_of(&saved), frames_of(&trace));
    // Kernel timestamps, not the trace's (which start 1000 s after the
    // epoch): the saved frames are stamped with today's time, in order.
    let times: Vec<u64> = read_all(&saved).into_iter().map(|(t, _)| t).collect();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    assert!(now - times[0] < 600_000_000_000, "first stamp {}", times[0]);
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "stamps out of order"
    );
}

/// The exit-code table holds for a device that goes away mid-run: a veth
/// deleted while replay sends on it is the environment's fault (exit 1),
/// named, with the summary of what was sent before it.
#[test]
fn a_veth_deleted_mid_run_exits_1_with_what_was_sent() {
    if !can_run() {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tag = format!("slgone{}", std::process::id() % 10_000);
    fresh_veth(&tag);
    sh(&["ip", "link", "set", &tag, "up"]);
    sh(&["ip", "link", "set", &format!("{tag}p"), "up"]);
    let d = tmpdir("veth-gone-mid-run");
    let trace = d.join("t.pcap");
    write_trace(&trace, 1000, 1000, 64);
    let summary = d.join("s.json");
    let mut child = sluice()
        .arg("replay")
        .arg(&trace)
        .args(["--to", &format!("afpacket:{tag}"), "--pps", "20k"])
        .args(["--loop", "0", "--duration", "60s", "-q", "--summary-json"])
        .arg(&summary)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Deleted once frames are leaving (its counter moves).
    let tx = format!("/sys/class/net/{tag}/statistics/tx_packets");
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(&tx)
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(0)
        < 1000
    {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(20),
            "nothing sent"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    sh(&["ip", "link", "del", &tag]);
    let status = wait_within(&mut child, std::time::Duration::from_secs(30));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains(&tag), "the device is named: {err}");
    assert!(err.contains("sent "), "no summary of what was sent: {err}");
}

/// `--csum-offload`: the TCP and UDP checksums are left to the device.
/// With the veth's tx-checksumming off the kernel computes them, and every
/// one the capture holds is right; with it on, the veth hands them on
/// uncomputed (the capture shows the pseudo-header sums) and the
/// namespace's own UDP stack still takes every datagram.
#[test]
fn checksums_left_to_the_device_are_computed_or_trusted_downstream() {
    if !can_run() || !sluice_testkit::require("ethtool", "checksum offload test") {
        return;
    }
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut net = Net::up("slk");
    let mac = net.address();
    let d = tmpdir("veth-csum");
    let session = d.join("s.yaml");
    let (src, dst) = (net.ip(1), net.ip(2));
    // To the receiver (NET.2:9000): 40 UDP flows; beside it, TCP and
    // IPv6 flows of random sizes and a prefixed UDP flow.
    std::fs::write(
        &session,
        format!(
            "flows:\n\
         - {{proto: udp4, src: {src}, dst: {dst}, sport: 5000, dport: 9000, start: 0, \
            packets: 10, pps: 1000, payload: [1, 1400], count: 40, step: {{sport: 1}}}}\n\
         - {{proto: tcp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1000, dport: 80, start: 0, \
            packets: 10, pps: 1000, payload: [0, 1400], count: 20, step: {{src: 1, sport: 1}}}}\n\
         - {{proto: udp6, src: '2001:db8::1', dst: '2001:db8::2', sport: 1000, dport: 53, \
            start: 0, packets: 10, pps: 1000, payload: [0, 1200], count: 20, step: {{sport: 1}}}}\n\
         - {{proto: udp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 7, dport: 53, start: 0, \
            packets: 10, pps: 1000, payload: 33, prefix: 'odd-length prefix', count: 1}}\n"
        ),
    )
    .unwrap();
    let send = |cap: &Path| {
        let dump = net.capture_small(cap);
        let to = format!("afpacket:{}", net.tx());
        let o = run(&[
            "flows",
            "run",
            session.to_str().unwrap(),
            "--to",
            &to,
            "--dst-mac",
            &mac,
            "--csum-offload",
            "-q",
            "--summary-json",
            "-",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stop(dump);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["packets"], 810, "{v}");
        // Only what sluice sent (its source MAC), not the kernels' own
        // traffic (ARP, ICMP port unreachable while nothing listens).
        read_all(cap)
            .into_iter()
            .filter(|(_, f)| f[6..12] == sluice_wire::MacAddr::LOCAL_SRC.0)
            .collect::<Vec<_>>()
    };
    let l4 = |f: &[u8]| sluice_wire::parse_layers(f).l4.map(|l| l.proto);

    // The kernel computes them.
    sh(&["ethtool", "-K", &net.tx(), "tx", "off"]);
    let got = send(&d.join("kernel.pcap"));
    assert_eq!(got.len(), 810);
    for (i, (_, f)) in got.iter().enumerate() {
        assert!(matches!(l4(f), Some(6 | 17)), "frame {i}");
        sluice_wire::verify_checksums(f).unwrap_or_else(|e| panic!("frame {i}: {e:?}"));
    }

    // The device (veth) leaves them; the receiving stack trusts them.
    sh(&["ethtool", "-K", &net.tx(), "tx", "on"]);
    let out = d.join("rx.txt");
    let rx = net.udp_receiver(&out);
    let got = send(&d.join("device.pcap"));
    let mut rx = Reaped(rx);
    assert!(rx.wait().unwrap().success());
    let lines = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        lines.lines().count(),
        400,
        "datagrams the namespace's UDP stack took"
    );
    let partial = got
        .iter()
        .filter(|(_, f)| sluice_wire::verify_checksums(f).is_err())
        .count();
    // A pseudo-header sum may equal the right checksum by chance (1 in 65 536).
    assert!(
        partial >= 800,
        "{partial} of {} frames left partial",
        got.len()
    );
}
