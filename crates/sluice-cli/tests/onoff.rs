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
