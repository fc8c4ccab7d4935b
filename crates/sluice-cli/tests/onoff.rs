//! `sluice profile onoff`: superposed ON/OFF flows, end to end on a
//! virtual clock into a pcap, read back frame by frame.

mod common;
use common::*;
use std::collections::BTreeMap;

/// Source port → send times (ns) of its frames.
fn by_flow(frames: &[(u64, Vec<u8>)]) -> BTreeMap<u16, Vec<u64>> {
    let mut m: BTreeMap<u16, Vec<u64>> = BTreeMap::new();
    for (t, f) in frames {
        m.entry(u16::from_be_bytes([f[34], f[35]]))
            .or_default()
            .push(*t);
    }
    m
}

#[test]
fn flows_send_at_their_gap_while_on_and_keep_quiet_while_off() {
    let d = tmpdir("onoff");
    let out = d.join("o.pcap");
    let o = run(&[
        "profile",
        "onoff",
        "--on",
        "poisson:2ms",
        "--off",
        "poisson:6ms",
        "--gap",
        "constant:10us",
        "--flows",
        "16",
        "--size",
        "100",
        "--duration",
        "2s",
        "--seed",
        "3",
        "--clock",
        "virtual",
        "--to",
        &format!("pcap:{}", out.display()),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("on_periods"), "{}", stderr(&o));
    let frames = read_all(&out);
    assert!(frames.iter().all(|(_, f)| f.len() == 100));
    let flows = by_flow(&frames);
    assert_eq!(
        flows.keys().copied().collect::<Vec<_>>(),
        (1024..1040).collect::<Vec<_>>()
    );
    let mut on_ns = 0u64;
    for (port, times) in &flows {
        let gaps: Vec<u64> = times.windows(2).map(|w| w[1] - w[0]).collect();
        // Inside an ON period exactly the gap; across an OFF period the
        // time left of the ON period plus the OFF period's length.
        let (on, off): (Vec<u64>, Vec<u64>) = gaps.iter().partition(|&&g| g == 10_000);
        assert!(
            off.len() >= 50,
            "flow {port}: {} OFF periods in 2 s",
            off.len()
        );
        on_ns += on.iter().sum::<u64>();
    }
    // E[on] / (E[on] + E[off]) = 1/4 of 16 flows × 2 s.
    let share = on_ns as f64 / (16.0 * 2e9);
    assert!((share - 0.25).abs() < 0.05, "ON share {share}");
}

#[test]
fn the_seed_makes_runs_repeat() {
    let d = tmpdir("onoff-seed");
    let send = |seed: &str, name: &str| {
        let out = d.join(name);
        let o = run(&[
            "profile",
            "onoff",
            "--on",
            "pareto:1ms,shape=1.5",
            "--off",
            "pareto:3ms,shape=1.5",
            "--gap",
            "poisson:50us",
            "--flows",
            "4",
            "--limit",
            "2000",
            "--seed",
            seed,
            "--clock",
            "virtual",
            "--to",
            &format!("pcap:{}", out.display()),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        read_all(&out)
    };
    let a = send("5", "a.pcap");
    assert_eq!(a.len(), 2000);
    assert_eq!(a, send("5", "b.pcap"));
    assert_ne!(a, send("6", "c.pcap"));
}

/// `--encap`: the frames behind an S-tag and an MPLS label, within
/// `--size`, the IP packet the same as without; a bad layer is refused
/// naming the option.
#[test]
fn encap_layers_go_in_front_of_the_ip_header_within_the_size() {
    let d = tmpdir("onoff-encap");
    let send = |extra: &[&str], name: &str| {
        let out = d.join(name);
        let mut args = onoff_1ms(&["--size", "200", "--limit", "50", "--clock", "virtual"]);
        args.extend_from_slice(extra);
        let to = format!("pcap:{}", out.display());
        args.extend_from_slice(&["--to", &to]);
        let o = run(&args);
        (o, out)
    };
    let (o, plain) = send(&[], "plain.pcap");
    assert!(o.status.success(), "{}", stderr(&o));
    let (o, tagged) = send(
        &["--encap", "svlan:5:3", "--encap", "mpls:16:0:9"],
        "tagged.pcap",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (read_all(&plain), read_all(&tagged));
    assert_eq!(a.len(), 50);
    for ((_, p), (_, t)) in a.iter().zip(&b) {
        assert_eq!(t.len(), 200, "--size holds the layers");
        // S-tag (PCP 3, VID 5), MPLS, one label: 16, bottom, TTL 9.
        assert_eq!(&t[12..22], &[0x88, 0xa8, 0x60, 5, 0x88, 0x47, 0, 1, 1, 9]);
        // The IP packet: the same header (its length 8 bytes less).
        assert_eq!(t[22] >> 4, 4);
        assert_eq!(
            u16::from_be_bytes([t[24], t[25]]) + 8,
            u16::from_be_bytes([p[16], p[17]])
        );
        assert_eq!(&t[34..42], &p[26..34], "the addresses");
    }
    let (o, _) = send(&["--encap", "mpls:2000000"], "bad.pcap");
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--encap"), "{}", stderr(&o));
}

#[test]
fn bad_laws_and_endless_files_are_refused_naming_the_option() {
    let d = tmpdir("onoff-bad");
    let pcap = format!("pcap:{}", d.join("x.pcap").display());
    let ok = ["poisson:1ms", "poisson:1ms", "constant:1us"];
    for (laws, extra, says) in [
        (["zipf:1ms", ok[1], ok[2]], &[][..], "--on"),
        ([ok[0], "normal:1ms", ok[2]], &[], "needs std"),
        (ok, &["--size", "20"], "--size 20"),
        (ok, &["--to", &pcap], "never ends"),
    ] {
        let mut all = vec!["profile", "onoff", "--on", laws[0], "--off", laws[1]];
        all.extend(["--gap", laws[2]]);
        all.extend(extra);
        let o = run(&all);
        assert_eq!(o.status.code(), Some(2), "{all:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{all:?}: {}", stderr(&o));
    }
    assert!(!d.join("x.pcap").exists());
}
