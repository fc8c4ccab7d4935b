//! `--eps-log`: every packet's send time and send-time error ε, one CSV
//! row each (TCPivo Figs. 2-9 plot ε per packet over time), agreeing
//! with the summary's own counts.

mod common;
use common::*;

#[test]
fn every_packet_has_its_row_and_the_rows_agree_with_the_summary() {
    let d = tmpdir("eps-log");
    let trace = d.join("t.pcap");
    write_16_flows(&trace, 3000);
    let (log, summary) = (d.join("eps.csv"), d.join("s.json"));
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--to",
        "null",
        "--pps",
        "20000",
        "--threads",
        "2",
        "-q",
        "--eps-log",
        log.to_str().unwrap(),
        "--summary-json",
        summary.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = sluice_testkit::checked_json(&std::fs::read(&summary).unwrap());
    let text = std::fs::read_to_string(&log).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("thread,packet,t_ns,eps_ns"));
    let rows: Vec<(u32, u64, u64, i64)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
                f[3].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows.len() as u64, s["packets"].as_u64().unwrap());
    assert_eq!(rows.len(), 3000);
    // Each thread's packets numbered from 0 in order, their times rising.
    for t in 0..2u32 {
        let mine: Vec<_> = rows.iter().filter(|r| r.0 == t).collect();
        assert!(!mine.is_empty(), "thread {t}");
        for (k, r) in mine.iter().enumerate() {
            assert_eq!(r.1, k as u64, "thread {t}");
        }
        assert!(mine.windows(2).all(|w| w[0].2 <= w[1].2), "thread {t}");
    }
    // Late packets are the rows past the threshold (10 µs by default).
    let late = rows.iter().filter(|r| r.3 > 10_000).count() as u64;
    assert_eq!(late, s["late"].as_u64().unwrap(), "{s}");
    assert!(s["warnings"].as_array().unwrap().is_empty(), "{s}");

    // A top-speed run has no ε: refused before anything is written.
    let o = run(&[
        "replay",
        trace.to_str().unwrap(),
        "--to",
        "null",
        "--topspeed",
        "-q",
        "--eps-log",
        log.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--eps-log"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        text,
        "left as it was"
    );
}
