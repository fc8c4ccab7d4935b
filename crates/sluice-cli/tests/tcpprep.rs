//! tcpprep compatibility: `sluice prep --format tcpprep` writes what
//! tcpprep writes (tcpreplay's own golden caches, and the installed
//! tcpprep on the vendored traces), and `replay --split tcpprep:FILE`
//! sends each packet by its cache: primary by `--to`, secondary by
//! `--to2`, skipped not at all.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn golden(name: &str) -> PathBuf {
    sluice_testkit::testdata("tcpreplay-suite").join(name)
}

/// `sluice prep TRACE --format tcpprep -o OUT ARGS...`: the cache's bytes.
fn prep(d: &Path, trace: &Path, args: &[&str]) -> Vec<u8> {
    let out = d.join("out.cache");
    let _ = std::fs::remove_file(&out);
    let mut all = vec!["prep", trace.to_str().unwrap(), "--format", "tcpprep", "-o"];
    all.push(out.to_str().unwrap());
    all.extend_from_slice(args);
    let o = run(&all);
    assert!(o.status.success(), "prep {args:?}: {}", stderr(&o));
    std::fs::read(&out).unwrap()
}

/// The directions a tcpprep cache holds: 'P', 'S' or '-' per packet.
fn dirs(cache: &[u8]) -> String {
    let n = u64::from_be_bytes(cache[12..20].try_into().unwrap());
    let comment = usize::from(u16::from_be_bytes([cache[22], cache[23]]));
    let data = &cache[24 + comment..];
    (0..n)
        .map(|k| match (data[(k / 4) as usize] >> ((k % 4) * 2)) & 3 {
            3 => 'P',
            2 => 'S',
            _ => '-',
        })
        .collect()
}

/// tcpreplay's test suite (test/Makefile.am, `tcpprep --no-arg-comment
/// -i test.pcap`): each golden cache, from the same mode.
const GOLDENS: &[(&str, &[&str])] = &[
    ("test.cidr", &["--split", "cidr:96.17.211.0/24"]),
    (
        "test.cidr_reverse",
        &["--split", "cidr:96.17.211.0/24", "--reverse"],
    ),
    ("test.regex", &["--split", "regex:96.17.211.*"]),
    (
        "test.regex_reverse",
        &["--split", "regex:96.17.211.*", "--reverse"],
    ),
    ("test.mac", &["--split", "mac:00:1f:f3:3c:e1:13"]),
    (
        "test.mac_reverse",
        &["--split", "mac:00:1f:f3:3c:e1:13", "--reverse"],
    ),
    ("test.port", &["--split", "port"]),
    (
        "test.comment",
        &["--split", "port", "--comment", "This is a comment"],
    ),
    ("test.auto_bridge", &["--split", "auto:bridge"]),
    ("test.auto_client", &["--split", "auto:client"]),
    ("test.auto_server", &["--split", "auto:server"]),
    ("test.auto_router", &["--split", "auto:router"]),
    ("test.auto_first", &["--split", "auto:first"]),
    (
        "test.include_packets",
        &[
            "--split",
            "cidr:96.17.211.0/24",
            "--include",
            "P:61-65,88-91",
        ],
    ),
    (
        "test.exclude_packets",
        &[
            "--split",
            "cidr:96.17.211.0/24",
            "--exclude",
            "P:61-65,88-91",
        ],
    ),
    (
        "test.include_source",
        &[
            "--split",
            "cidr:96.17.211.0/24",
            "--include",
            "S:96.0.0.0/8",
        ],
    ),
    (
        "test.include_dest",
        &[
            "--split",
            "cidr:96.17.211.0/24",
            "--include",
            "D:96.0.0.0/8",
        ],
    ),
];

#[test]
fn tcpreplays_golden_caches_are_written_byte_for_byte() {
    let d = tmpdir("tcpprep-golden");
    let trace = testdata("tcpreplay__test.pcap");
    for (name, args) in GOLDENS {
        let want = std::fs::read(golden(name)).unwrap();
        let got = prep(&d, &trace, args);
        assert_eq!(dirs(&got), dirs(&want), "{name}: directions");
        assert_eq!(got, want, "{name}: bytes");
    }
    // The cidr rule in plain words: sources in the network go by --to.
    let cidr = dirs(&std::fs::read(golden("test.cidr")).unwrap());
    assert_eq!(cidr.matches('P').count(), 19);
    assert_eq!(&cidr[51..52], "P", "packet 52, from 96.17.211.172");
}

/// Classic pcap files of Ethernet frames among the vendored traces.
fn ethernet_traces() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(sluice_testkit::testdata("pcap"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let Ok(b) = std::fs::read(p) else {
                return false;
            };
            let linktype = |le: bool| {
                let f: [u8; 4] = b[20..24].try_into().unwrap();
                if le {
                    u32::from_le_bytes(f)
                } else {
                    u32::from_be_bytes(f)
                }
            };
            b.len() >= 24
                && match b[..4] {
                    [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => linktype(true) == 1,
                    [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => linktype(false) == 1,
                    _ => false,
                }
        })
        .collect();
    out.sort();
    out
}

/// Where sluice deliberately differs (docs/CLI.md, "tcpprep"): tcpprep's
/// own walk of IPv6 extension headers in port mode, and its MAC mode
/// writing no entry for a frame shorter than an Ethernet header.
const KNOWN: &[(&str, &str)] = &[
    ("tcpdump__ipv6-routing-header.pcap", "port"),
    ("zeek__ipv6-http-atomic-frag.pcap", "port"),
    ("zeek__trunc_trunc-hdr.pcap", "mac:00:1f:f3:3c:e1:13"),
];

#[test]
fn the_installed_tcpprep_agrees_on_every_vendored_ethernet_trace() {
    if !sluice_testkit::require("tcpprep", "tcpprep agreement") {
        return;
    }
    let d = tmpdir("tcpprep-agree");
    let modes: &[(&[&str], &str)] = &[
        (
            &["-c", "10.0.0.0/8,192.168.0.0/16"],
            "cidr:10.0.0.0/8,192.168.0.0/16",
        ),
        (&["-r", "^1"], "regex:^1"),
        (&["-e", "00:1f:f3:3c:e1:13"], "mac:00:1f:f3:3c:e1:13"),
        (&["-p"], "port"),
        (&["-a", "client"], "auto:client"),
        (&["-a", "server"], "auto:server"),
        (&["-a", "bridge"], "auto:bridge"),
        (&["-a", "first"], "auto:first"),
    ];
    let (mut compared, mut refused) = (0, 0);
    for trace in ethernet_traces() {
        let name = trace.file_name().unwrap().to_string_lossy().into_owned();
        for (theirs, ours) in modes {
            let out = d.join("tcpprep.cache");
            let _ = std::fs::remove_file(&out);
            let o = Command::new("tcpprep")
                .args(["--no-arg-comment", "-i"])
                .arg(&trace)
                .arg("-o")
                .arg(&out)
                .args(*theirs)
                .output()
                .expect("tcpprep runs");
            if !o.status.success() {
                // tcpprep refuses it (a truncated header it cannot
                // classify): nothing to compare with.
                refused += 1;
                continue;
            }
            let want = std::fs::read(&out).unwrap();
            let p = d.join("sluice.cache");
            let o = run(&[
                "prep",
                trace.to_str().unwrap(),
                "--split",
                ours,
                "--format",
                "tcpprep",
                "-o",
                p.to_str().unwrap(),
            ]);
            if !o.status.success() {
                // sluice ends at a truncated record; tcpprep reads past it.
                assert!(
                    stderr(&o).contains("truncated"),
                    "{name} {ours}: {}",
                    stderr(&o)
                );
                continue;
            }
            let got = std::fs::read(&p).unwrap();
            if KNOWN.contains(&(name.as_str(), *ours)) {
                continue;
            }
            assert_eq!(dirs(&got), dirs(&want), "{name} {ours}: directions");
            assert_eq!(got, want, "{name} {ours}: bytes");
            compared += 1;
        }
    }
    eprintln!("{compared} caches identical, {refused} refused by tcpprep");
    assert!(compared > 100, "only {compared} caches compared");
}

#[test]
fn replay_sends_each_packet_where_a_tcpprep_cache_says() {
    let d = tmpdir("tcpprep-replay");
    let trace = testdata("tcpreplay__test.pcap");
    let t = trace.to_str().unwrap();
    // tcpprep -c 96.17.211.0/24 --exclude P:61-65,88-91: 9 packets skipped.
    let cache = golden("test.exclude_packets");
    let want = dirs(&std::fs::read(&cache).unwrap());
    assert_eq!(want.matches('-').count(), 9);
    let (a, b) = (d.join("a.pcap"), d.join("b.pcap"));
    let to2 = format!("pcap:{}", b.display());
    let split = format!("tcpprep:{}", cache.display());
    let summary = d.join("summary.json");
    let o = run_to_pcap(
        &["replay", t],
        &a,
        &[
            "--to2",
            &to2,
            "--split",
            &split,
            "--summary-json",
            summary.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let frames = frames_of(&trace);
    let pick = |c: char| -> Vec<Vec<u8>> {
        frames
            .iter()
            .zip(want.chars())
            .filter(|(_, d)| *d == c)
            .map(|(f, _)| f.clone())
            .collect()
    };
    assert_eq!(frames_of(&a), pick('P'), "primary by --to, in order");
    assert_eq!(frames_of(&b), pick('S'), "secondary by --to2, in order");
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(s["packets"], 170, "{s}");
    assert_eq!(s["source"]["skipped_by_split"], 9, "{s}");
    // Every pass, preloaded or not, reads the cache from its first packet.
    for mode in [&[][..], &["--preload"]] {
        let mut extra = vec!["--to2", &to2, "--split", &split, "--loop", "2"];
        extra.extend_from_slice(mode);
        let o = run_to_pcap(&["replay", t], &a, &extra);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(frames_of(&a), [pick('P'), pick('P')].concat(), "{mode:?}");
        assert_eq!(frames_of(&b), [pick('S'), pick('S')].concat(), "{mode:?}");
    }
}

#[test]
fn a_wrong_truncated_or_foreign_cache_is_refused_naming_the_offset() {
    let d = tmpdir("tcpprep-bad");
    let trace = testdata("tcpreplay__test.pcap");
    let t = trace.to_str().unwrap();
    let good = std::fs::read(golden("test.cidr")).unwrap();
    let out = d.join("out.pcap");
    let try_cache = |bytes: &[u8], trace: &str| {
        let c = d.join("c.cache");
        std::fs::write(&c, bytes).unwrap();
        let split = format!("tcpprep:{}", c.display());
        let o = run_to_pcap(&["replay", trace], &out, &["--split", &split]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        stderr(&o)
    };
    assert!(try_cache(&good[..good.len() - 1], t).contains("offset 24"));
    assert!(try_cache(&good[..10], t).contains("offset 0"));
    let mut v3 = good.clone();
    v3[9] = b'3';
    assert!(try_cache(&v3, t).contains("offset 8"));
    let pcap = std::fs::read(&trace).unwrap();
    assert!(try_cache(&pcap[..200], t).contains("not a tcpprep cache"));
    // A cache of 179 packets for a longer trace.
    let longer = testdata("zeek__http_bro.org.pcap");
    let e = try_cache(&good, longer.to_str().unwrap());
    assert!(e.contains("holds the sides of 179 packets"), "{e}");
}

#[test]
fn options_that_tcpprep_would_refuse_exit_2_naming_them() {
    let d = tmpdir("tcpprep-opts");
    let t = testdata("tcpreplay__test.pcap");
    let t = t.to_str().unwrap();
    let o = d.join("o.cache");
    let o = o.to_str().unwrap();
    for (args, says) in [
        (&["--split", "port", "--reverse"][..], "--reverse"),
        (&["--split", "cidr:10.0.0.0/8", "--ratio", "3"], "--ratio"),
        (
            &[
                "--split",
                "auto:client",
                "--minmask",
                "8",
                "--maxmask",
                "30",
            ],
            "--minmask",
        ),
        (&["--split", "auto:client", "--ratio=-1"], "--ratio"),
        (&["--split", "auto:sometimes"], "auto:sometimes"),
        (&["--split", "mac:00:11:22"], "00:11:22"),
        (&["--split", "regex:("], "regex:("),
        (&["--split", "port", "--comment", "hi"], "--format tcpprep"),
    ] {
        let mut all = vec!["prep", t, "-o", o];
        all.extend_from_slice(args);
        let r = run(&all);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        assert!(stderr(&r).contains(says), "{args:?}: {}", stderr(&r));
    }
    assert!(!Path::new(o).exists(), "nothing written");
}

#[test]
fn include_and_exclude_pick_packets_as_tcpreplay_does_in_every_pass() {
    let d = tmpdir("tcpprep-select");
    let trace = testdata("tcpreplay__test.pcap");
    let t = trace.to_str().unwrap();
    let frames = frames_of(&trace);
    let numbered = |ns: &[u64]| -> Vec<Vec<u8>> {
        ns.iter().map(|&n| frames[n as usize - 1].clone()).collect()
    };
    let out = d.join("out.pcap");
    let summary = d.join("s.json");
    let s = summary.to_str().unwrap();
    // tcpreplay's own tests (test/Makefile.am: replay_include, replay_exclude).
    let include: Vec<u64> = [7, 11, 20, 21, 22, 23]
        .into_iter()
        .chain(174..=179)
        .collect();
    let o = run_to_pcap(
        &["replay", t],
        &out,
        &["--include", "7,11,20-23,174-", "--summary-json", s],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames_of(&out), numbered(&include));
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
    assert_eq!(j["source"]["skipped_by_select"], 179 - 12, "{j}");
    let o = run_to_pcap(&["replay", t], &out, &["--exclude", "23-,11-20,2,3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        frames_of(&out),
        numbered(&[1, 4, 5, 6, 7, 8, 9, 10, 21, 22])
    );
    // Numbers start again at 1 in every pass.
    let o = run_to_pcap(&["replay", t], &out, &["--include", "P:1-2", "--loop", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames_of(&out), numbered(&[1, 2, 1, 2, 1, 2]));
    // An address rule: packets from 96/8, and those without IP.
    let o = run_to_pcap(&["replay", t], &out, &["--include", "S:96.0.0.0/8"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        frames_of(&out).len(),
        19 + 3,
        "19 from 96.17.211.172, 3 without IP"
    );
    // Both at once, or a bad rule: exit 2 naming it.
    let o = run_to_pcap(&["replay", t], &out, &["--include", "1", "--exclude", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let o = run_to_pcap(&["replay", t], &out, &["--include", "9-3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("'9-3'"), "{}", stderr(&o));
}

#[test]
fn loopdelay_pauses_between_passes_as_tcpreplay_does() {
    let d = tmpdir("tcpprep-loopdelay");
    let trace = testdata("tcpreplay__test.pcap");
    let t = trace.to_str().unwrap();
    let out = d.join("out.pcap");
    let stamps = |extra: &[&str]| -> Vec<u64> {
        let o = run_to_pcap(&["replay", t, "--pps", "1000", "--loop", "2"], &out, extra);
        assert!(o.status.success(), "{}", stderr(&o));
        read_all(&out).into_iter().map(|(ts, _)| ts).collect()
    };
    let plain = stamps(&[]);
    assert_eq!(plain.len(), 2 * 179);
    // At 1 kpps the passes are 1 ms apart at the seam; with the delay,
    // 125 ms more (the schedule is the virtual clock's, exact).
    let seam = |s: &[u64]| s[179] - s[178];
    assert_eq!(seam(&plain), 1_000_000);
    for extra in [
        &["--loopdelay", "125ms"][..],
        &["--loopdelay-ms", "125"],
        &["--loopdelay-ns", "125000000"],
    ] {
        let s = stamps(extra);
        assert_eq!(seam(&s), 126_000_000, "{extra:?}");
        assert_eq!(s[..179], plain[..179], "the first pass is unchanged");
    }
    for bad in [
        &["--loopdelay", "1s", "--loop", "1"][..],
        &["--loopdelay", "1s", "--topspeed"],
    ] {
        let o = run_to_pcap(&["replay", t], &out, bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("loopdelay"), "{bad:?}: {}", stderr(&o));
    }
}

#[test]
fn several_traces_play_one_after_the_other_each_on_its_own_timing() {
    let d = tmpdir("tcpprep-several");
    let (a, b) = (
        testdata("tcpreplay__test.pcap"),
        testdata("tcpdump__dns_tcp.pcap"),
    );
    let (ta, tb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let out = d.join("out.pcap");
    let o = run_to_pcap(&["replay", ta, tb], &out, &["--loop", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (fa, fb) = (read_all(&a), read_all(&b));
    let got = read_all(&out);
    let frames: Vec<&Vec<u8>> = got.iter().map(|(_, f)| f).collect();
    let want: Vec<&Vec<u8>> = fa
        .iter()
        .chain(&fb)
        .chain(&fa)
        .chain(&fb)
        .map(|(_, f)| f)
        .collect();
    assert_eq!(frames, want, "a, b, a, b");
    // b starts right after a's last packet (tcpreplay does not keep the
    // gap between files) and keeps its own gaps.
    let ts: Vec<u64> = got.iter().map(|(t, _)| *t).collect();
    let n = fa.len();
    assert_eq!(ts[n], ts[n - 1], "no gap at the seam of the files");
    for k in 1..fb.len() {
        assert_eq!(
            ts[n + k] - ts[n + k - 1],
            fb[k].0 - fb[k - 1].0,
            "b's gap {k}"
        );
    }
    // Packet numbers start at 1 in each trace.
    let o = run_to_pcap(&["replay", ta, tb], &out, &["--include", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(frames_of(&out), vec![fa[0].1.clone(), fb[0].1.clone()]);
    // A split made for one trace is refused with several.
    let split = format!("tcpprep:{}", golden("test.cidr").display());
    let o = run_to_pcap(&["replay", ta, tb], &out, &["--split", &split]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("one trace"), "{}", stderr(&o));
}

#[test]
fn dualfile_merges_two_traces_by_time_one_per_port() {
    let d = tmpdir("tcpprep-dual");
    let a = testdata("tcpreplay__test.pcap");
    let fa = read_all(&a);
    // The second trace: the first's frames reversed in order, stamped
    // 1 µs after each of the first's (so the merge alternates), and one
    // stamped equal (a tie goes to the first trace).
    let b = d.join("b.pcap");
    let mut fb: Vec<(u64, Vec<u8>)> = fa
        .iter()
        .rev()
        .zip(&fa)
        .map(|(f, t)| (t.0 + 1_000, f.1.clone()))
        .collect();
    fb[0].0 = fa[0].0;
    write_frames(&b, &fb);
    let (oa, ob) = (d.join("oa.pcap"), d.join("ob.pcap"));
    let to2 = format!("pcap:{}", ob.display());
    let o = run_to_pcap(
        &["replay", a.to_str().unwrap(), b.to_str().unwrap()],
        &oa,
        &["--dualfile", "--to2", &to2],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (ga, gb) = (read_all(&oa), read_all(&ob));
    let frames = |v: &[(u64, Vec<u8>)]| v.iter().map(|(_, f)| f.clone()).collect::<Vec<_>>();
    assert_eq!(
        frames(&ga),
        frames(&fa),
        "the first trace by --to, in order"
    );
    assert_eq!(frames(&gb), frames(&fb), "the second by --to2, in order");
    // One schedule: each second-trace frame leaves 1 µs after its partner
    // (the tie at the start: together).
    assert_eq!(gb[0].0, ga[0].0);
    for k in 1..fa.len() {
        assert_eq!(gb[k].0 - ga[k].0, 1_000, "pair {k}");
    }
    // Two traces exactly, and not with a split.
    let t = a.to_str().unwrap();
    // Two pairs play one after the other, each its own merge; the second
    // pair starts right after the first one's last packet.
    let (ta, tb) = (a.to_str().unwrap(), b.to_str().unwrap());
    let o = run_to_pcap(
        &["replay", ta, tb, ta, tb],
        &oa,
        &["--dualfile", "--to2", &to2],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (ga2, gb2) = (read_all(&oa), read_all(&ob));
    assert_eq!(frames(&ga2), [frames(&fa), frames(&fa)].concat());
    assert_eq!(frames(&gb2), [frames(&fb), frames(&fb)].concat());
    let n = fa.len();
    let last_of_first = gb2[n - 1].0.max(ga2[n - 1].0);
    assert_eq!(ga2[n].0, last_of_first, "the second pair starts at once");
    for (bad, says) in [
        (&["replay", t, "--dualfile"][..], "in pairs"),
        (&["replay", t, t, t, "--dualfile"], "in pairs"),
        (
            &["replay", t, t, "--dualfile", "--split", "auto"],
            "--split",
        ),
    ] {
        let o = run_to_pcap(bad, &oa, &["--to2", &to2]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{bad:?}: {}", stderr(&o));
    }
}
