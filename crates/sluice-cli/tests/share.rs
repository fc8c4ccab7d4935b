//! `--share K/N` (what a distributed run gives each worker): the N shares
//! of a job together are the one-host job, frame for frame, each unit
//! (flow, device, packet) in exactly one share. With the virtual clock
//! every frame is stamped with its due time, so the shares merged by time
//! must equal the whole run exactly.

mod common;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// (due time, frame) of every frame of a run.
type Frames = Vec<(u64, Vec<u8>)>;

/// The frames of each of the 3 shares, and of the whole job.
fn shares(cmd: &[&str], d: &Path, tag: &str, extra: &[&str]) -> (Vec<Frames>, Frames) {
    let whole = d.join(format!("{tag}-all.pcap"));
    let o = run_to_pcap(cmd, &whole, extra);
    assert!(o.status.success(), "{}", stderr(&o));
    let parts = (1..=3)
        .map(|k| {
            let out = d.join(format!("{tag}-{k}.pcap"));
            let share = format!("{k}/3");
            let mut args = extra.to_vec();
            args.extend_from_slice(&["--share", &share]);
            let o = run_to_pcap(cmd, &out, &args);
            assert!(o.status.success(), "{}", stderr(&o));
            read_all(&out)
        })
        .collect();
    (parts, read_all(&whole))
}

fn merged(parts: &[Vec<(u64, Vec<u8>)>]) -> Vec<(u64, Vec<u8>)> {
    let mut all: Vec<(u64, Vec<u8>)> = parts.iter().flatten().cloned().collect();
    all.sort();
    all
}

fn sorted(mut v: Vec<(u64, Vec<u8>)>) -> Vec<(u64, Vec<u8>)> {
    v.sort();
    v
}

/// Each key (as `key` finds it in a frame) belongs to one share only.
fn disjoint<K: Ord + std::fmt::Debug>(parts: &[Vec<(u64, Vec<u8>)>], key: impl Fn(&[u8]) -> K) {
    let mut owner: BTreeMap<K, usize> = BTreeMap::new();
    for (i, p) in parts.iter().enumerate() {
        assert!(!p.is_empty(), "share {} is empty", i + 1);
        for (_, f) in p {
            let k = key(f);
            let prev = *owner.entry(k).or_insert(i);
            assert_eq!(prev, i, "a unit in two shares");
        }
    }
}

#[test]
fn replay_shares_are_the_whole_trace_split_by_flow() {
    let d = tmpdir("share-replay");
    let trace = testdata("DERIVED__tcpreplay_test_cut-mid-packet.pcap");
    let t = trace.to_str().unwrap();
    for timing in [&["--pps", "5k"][..], &[][..]] {
        let (parts, whole) = shares(&["replay", t], &d, "r", timing);
        let (m, w) = (merged(&parts), sorted(whole));
        assert!(
            m == w,
            "{timing:?}: {} frames from the shares, {} from the whole",
            m.len(),
            w.len()
        );
        // Both directions of a connection in the same share.
        disjoint(&parts, |f| {
            let (a, b) = (&f[26..30], &f[30..34]);
            let (pa, pb) = (&f[34..36], &f[36..38]);
            if (a, pa) <= (b, pb) {
                (a.to_vec(), pa.to_vec(), b.to_vec(), pb.to_vec())
            } else {
                (b.to_vec(), pb.to_vec(), a.to_vec(), pa.to_vec())
            }
        });
    }
}

#[test]
fn flow_session_shares_are_the_whole_session() {
    let d = tmpdir("share-flows");
    let s = sluice_testkit::repo_root().join("examples/sessions/mixed.yaml");
    let (parts, whole) = shares(&["flows", "run", s.to_str().unwrap()], &d, "f", &[]);
    assert_eq!(merged(&parts).len(), whole.len());
    // Frames are the same but for the capture stamps' base (the wall
    // clock at each run's start): compare offsets from each first frame.
    let rel = |v: Vec<(u64, Vec<u8>)>| {
        let t0 = v.iter().map(|x| x.0).min().unwrap_or(0);
        sorted(v.into_iter().map(|(t, f)| (t - t0, f)).collect())
    };
    let base: Vec<u64> = parts
        .iter()
        .map(|p| p.iter().map(|x| x.0).min().unwrap())
        .collect();
    let whole_rel = rel(whole);
    let parts_rel: Vec<(u64, Vec<u8>)> = {
        let mut v: Vec<(u64, Vec<u8>)> = parts
            .iter()
            .zip(&base)
            .flat_map(|(p, b)| p.iter().map(move |(t, f)| (t - b, f.clone())))
            .collect();
        v.sort();
        v
    };
    // Each share's first frame is its first flow's start, not 0: compare
    // the frames, and the times within each share's own flows.
    let frames = |v: &[(u64, Vec<u8>)]| v.iter().map(|x| x.1.clone()).collect::<BTreeSet<_>>();
    assert_eq!(frames(&parts_rel), frames(&whole_rel));
}

#[test]
fn profile_shares_are_the_one_global_schedule() {
    let d = tmpdir("share-profile");
    let p = d.join("p.yaml");
    std::fs::write(
        &p,
        "seed: 3\nduration: 200ms\nrate: 20k\nipd: {dist: pareto, shape: 1.5}\nsize: {dist: imix}\npacket: {flows: 4}\n",
    )
    .unwrap();
    let (parts, whole) = shares(&["profile", "run", p.to_str().unwrap()], &d, "p", &[]);
    // Stamped from the wall clock at the start: compare from the first.
    let rel = |v: &[(u64, Vec<u8>)], t0: u64| {
        v.iter()
            .map(|(t, f)| (t - t0, f.clone()))
            .collect::<Vec<_>>()
    };
    let t0 = whole[0].0;
    let mut joined = Vec::new();
    for part in &parts {
        // A share's first packet is packet k−1 of the plan: its due time
        // is whole[k−1]'s.
        let first = whole.iter().position(|x| x.1 == part[0].1).unwrap();
        joined.extend(rel(part, part[0].0 - (whole[first].0 - t0)));
    }
    joined.sort();
    let w = sorted(rel(&whole, t0));
    assert!(
        joined == w,
        "packet j of the plan in share j mod 3: {} vs {} frames",
        joined.len(),
        w.len()
    );
    let o = run(&[
        "profile",
        "run",
        p.to_str().unwrap(),
        "--share",
        "1/3",
        "--share-by",
        "components",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--mode fourier"), "{}", stderr(&o));
}

#[test]
fn series_shares_split_devices() {
    let d = tmpdir("share-series");
    let mut csv = String::from("timestamp,device_id,value\n");
    for i in 0..600 {
        csv += &format!(
            "2024-01-01T00:00:00.{:06}Z,DEV{},{}\n",
            i * 1000,
            i % 12,
            "x".repeat(1 + i % 7)
        );
    }
    let arc = convert_csv(&d, "s", &csv);
    let (parts, whole) = shares(&["series", "play", arc.to_str().unwrap()], &d, "s", &[]);
    // The IP identification counts each sender's own datagrams (and the
    // IP checksum covers it): equal but for those.
    let masked = |v: Vec<(u64, Vec<u8>)>| {
        let mut v: Vec<(u64, Vec<u8>)> = v
            .into_iter()
            .map(|(t, mut f)| {
                f[18..20].fill(0);
                f[24..26].fill(0);
                (t, f)
            })
            .collect();
        v.sort();
        v
    };
    let (m, w) = (masked(merged(&parts)), masked(whole));
    assert!(
        m.len() == w.len() && m == w,
        "{} frames from the shares, {} from the whole",
        m.len(),
        w.len()
    );
    // A device's records go to one flow (its source address): one share each.
    disjoint(&parts, |f| f[26..30].to_vec());
}

#[test]
fn a_bad_share_is_refused() {
    let t = testdata("DERIVED__tcpreplay_test_cut-mid-packet.pcap");
    for bad in ["0/3", "4/3", "1/0", "x"] {
        let o = run(&[
            "replay",
            t.to_str().unwrap(),
            "--to",
            "null",
            "--share",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains("--share"), "{bad}: {}", stderr(&o));
    }
}
