//! docs/MIGRATING.md: every `sluice` command of its tables runs, with
//! `eth0` and `eth1` replaced by veth pairs into namespaces of the test's
//! own, the placeholder files by real ones; a command that sends to an
//! interface must get frames to the far end.

mod common;
mod netns;
use common::*;

/// The second cell of each table row whose code starts with `sluice `.
fn sluice_lines(doc: &str) -> Vec<String> {
    doc.lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| l.split('|').nth(2))
        .map(|c| c.trim().trim_matches('`').to_string())
        .filter(|c| c.starts_with("sluice "))
        .collect()
}

#[test]
fn every_sluice_line_of_the_migration_guide_runs() {
    if !netns::can_run() {
        return;
    }
    let root = sluice_testkit::repo_root();
    let doc = std::fs::read_to_string(root.join("docs/MIGRATING.md")).unwrap();
    let lines = sluice_lines(&doc);
    assert!(lines.len() >= 20, "{} lines", lines.len());
    let (n0, n1) = (netns::Net::up("mga"), netns::Net::up("mgb"));
    let d = tmpdir("migrating");
    let trace = testdata("tcpreplay__test.pcap");
    let cache = d.join("trace.cache");
    let o = run(&[
        "tcpprep",
        "-a",
        "client",
        "-i",
        trace.to_str().unwrap(),
        "-o",
        cache.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for line in &lines {
        let cmd = line
            .replace("trace.pcap", trace.to_str().unwrap())
            .replace("trace.cache", cache.to_str().unwrap())
            .replace("out.pcap", d.join("out.pcap").to_str().unwrap())
            .replace("examples/", &format!("{}/examples/", root.display()))
            .replace("eth0", &n0.tx())
            .replace("eth1", &n1.tx());
        let words: Vec<&str> = cmd.split_whitespace().skip(1).collect();
        let before = netns::far_rx(&n0);
        let o = run(&words);
        assert!(o.status.success(), "{line}\n{cmd}\n{}", stderr(&o));
        if cmd.contains(&n0.tx()) && !cmd.contains(" -w ") {
            assert!(
                netns::far_rx(&n0) > before,
                "{line}: nothing reached {}b",
                n0.tag
            );
        }
    }
}
