//! `sluice converse --metrics`: the counters as Prometheus families.

use sluice_stateful::report::{self, Snap};

/// A label value in the exposition format: backslash, quote and newline
/// escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The counters as Prometheus families (`--metrics`).
pub fn prometheus(snaps: &[Snap], secs: f64) -> String {
    use sluice_run::metrics::write_family as family;
    let sides = report::merge(snaps);
    let mut out = String::new();
    family(
        &mut out,
        "sluice_converse_elapsed_seconds",
        "gauge",
        "Seconds since the run started.",
        [("", secs)],
    );
    let mut conns = Vec::new();
    let mut bytes = Vec::new();
    let mut segs = Vec::new();
    let mut retx = Vec::new();
    let mut open = Vec::new();
    let mut times = Vec::new();
    for s in &sides {
        let side = s.side;
        open.push((format!("{{side=\"{side}\"}}"), s.open as f64));
        let mut each: Vec<(String, sluice_stateful::counters::Counts)> = s
            .names
            .iter()
            .zip(&s.counts)
            .map(|(n, c)| (label(n), c.clone()))
            .collect();
        each.push(("total".into(), s.total()));
        for (p, c) in &each {
            let l = |extra: &str| format!("{{side=\"{side}\",program=\"{p}\"{extra}}}");
            for (outcome, v) in [
                ("attempted", c.attempted),
                ("established", c.established),
                ("completed", c.completed),
                ("reset_by_peer", c.reset_by_peer),
                ("reset_by_us", c.reset_by_us),
                ("timed_out", c.timed_out),
                ("aborted", c.aborted),
                ("unfinished", c.unfinished),
            ] {
                conns.push((l(&format!(",outcome=\"{outcome}\"")), v as f64));
            }
            bytes.push((l(",direction=\"tx\""), c.bytes_tx as f64));
            bytes.push((l(",direction=\"rx\""), c.bytes_rx as f64));
            segs.push((l(",direction=\"tx\""), c.segments_tx as f64));
            segs.push((l(",direction=\"rx\""), c.segments_rx as f64));
            retx.push((l(""), c.retransmitted as f64));
        }
        let mut all = sluice_stateful::counters::Times::default();
        for t in &s.times {
            all.add(t);
        }
        times.push((side, all));
    }
    family(
        &mut out,
        "sluice_converse_connections_total",
        "counter",
        "Connections by outcome.",
        conns,
    );
    family(
        &mut out,
        "sluice_converse_open_connections",
        "gauge",
        "Connections open now.",
        open,
    );
    family(
        &mut out,
        "sluice_converse_payload_bytes_total",
        "counter",
        "Payload bytes sent (tx, retransmissions included) and received in order (rx).",
        bytes,
    );
    family(
        &mut out,
        "sluice_converse_segments_total",
        "counter",
        "TCP segments or UDP datagrams sent and received.",
        segs,
    );
    family(
        &mut out,
        "sluice_converse_retransmitted_total",
        "counter",
        "Segments sent again.",
        retx,
    );
    time_summaries(&mut out, &times);
    out
}

/// Each time a summary: quantiles over the run, its sum and count.
fn time_summaries(out: &mut String, times: &[(&str, sluice_stateful::counters::Times)]) {
    use sluice_run::metrics::write_family as family;
    for (what, help) in [
        (
            "connect",
            "Time from the SYN (or first datagram) to the handshake's end.",
        ),
        (
            "first_byte",
            "Time from the SYN to the first payload byte received (client).",
        ),
        ("complete", "Time from the SYN to completion."),
    ] {
        let name = format!("sluice_converse_{what}_seconds");
        let mut samples = Vec::new();
        let mut tail = String::new();
        for (side, t) in times {
            let h = match what {
                "connect" => &t.connect,
                "first_byte" => &t.first_byte,
                _ => &t.complete,
            };
            for q in [0.5, 0.9, 0.99] {
                let v = if h.is_empty() {
                    0.0
                } else {
                    h.value_at_quantile(q) as f64 / 1e6
                };
                samples.push((format!("{{side=\"{side}\",quantile=\"{q}\"}}"), v));
            }
            let sum = h.mean() * h.len() as f64 / 1e6;
            tail += &format!(
                "{name}_sum{{side=\"{side}\"}} {sum}\n{name}_count{{side=\"{side}\"}} {}\n",
                h.len()
            );
        }
        family(out, &name, "summary", help, samples);
        *out += &tail;
    }
}
