//! `sluice doctor --iface`: what the interface offers the fast path
//! (AF_XDP modes, queues, per-queue rate limits, launch time, hardware
//! timestamps, checksum offload), each with what to do about it. Probes
//! only: an XDP socket is bound and closed without sending.

use super::finding::{finding, Finding, Level};
use sluice_sink::{launch, Sink, SinkSpec, XdpMode, XdpSink};

pub(super) fn fast_path(name: &str, out: &mut Vec<Finding>) {
    let queues = |direction| sluice_sys::net::queues(name, direction).unwrap_or(0);
    let (tx, rx) = (queues("tx"), queues("rx"));
    out.push(finding(
        Level::Ok,
        "queues",
        format!("{name}: {tx} TX, {rx} RX: xdp: binds TX thread k to queue k, so up to {tx} TX thread(s)"),
        "",
    ));
    let zerocopy = xdp(name, out);
    maxrate(name, out);
    let mode = if zerocopy {
        XdpMode::ZeroCopy
    } else {
        XdpMode::Copy
    };
    for to in [SinkSpec::AfPacket(name.into()), SinkSpec::Xdp(name.into())] {
        let why = launch::unavailable(&to, mode);
        out.push(finding(
            if why.is_none() {
                Level::Ok
            } else {
                Level::Warn
            },
            "launch time",
            why.unwrap_or_else(|| format!("{to}: available")),
            "departures are timed by sluice's pacer (ε in the summary); NIC launch time needs \
             an ETF qdisc with offload or an AF_XDP zero-copy driver with launch time (igc), \
             and a sluice that hands frames to them, which is not built yet",
        ));
    }
    timestamps(name, out);
    match sluice_sys::ethtool::tx_checksum(name) {
        Ok(on) => out.push(finding(
            Level::Ok,
            "checksum offload",
            format!("{name}: TX checksumming {}", if on { "on" } else { "off" }),
            "",
        )),
        Err(e) => out.push(finding(
            Level::Ok,
            "checksum offload",
            format!("{name}: the driver does not say ({e}); sluice computes checksums in software"),
            "",
        )),
    }
}

/// Binds zero-copy, else copy mode; returns whether zero-copy bound.
fn xdp(name: &str, out: &mut Vec<Finding>) -> bool {
    match XdpSink::open(name, 0, XdpMode::ZeroCopy, 0) {
        Ok(s) => {
            out.push(finding(
                Level::Ok,
                "AF_XDP",
                format!(
                    "{}: zero-copy (native XDP: the NIC reads frames from the UMEM)",
                    s.describe()
                ),
                "",
            ));
            return true;
        }
        Err(zc) => match XdpSink::open(name, 0, XdpMode::Copy, 0) {
            Ok(_) => out.push(finding(
                Level::Warn,
                "AF_XDP",
                format!(
                    "{name}: copy mode only (generic XDP): the kernel copies each frame into an \
                     skb; zero-copy refused: {zc}"
                ),
                "xdp: still passes the qdisc and the socket layer by; for zero-copy use a NIC \
                 whose driver has it (ice, i40e, ixgbe, mlx5, igc, ...)",
            )),
            Err(e) => out.push(finding(
                Level::Warn,
                "AF_XDP",
                format!("{name}: no XDP socket: {e}"),
                &format!("send with afpacket:{name}"),
            )),
        },
    }
    false
}

/// A per-queue rate limit exists where writing a queue's `tx_maxrate`
/// back (unchanged) is accepted.
fn maxrate(name: &str, out: &mut Vec<Finding>) {
    let path = format!("/sys/class/net/{name}/queues/tx-0/tx_maxrate");
    let detail = match std::fs::read_to_string(&path) {
        Err(_) => Err(format!("{name}: no {path}")),
        Ok(cur) => match std::fs::write(&path, cur.trim()) {
            Ok(()) => Ok(format!(
                "{name}: the driver limits each TX queue's rate (tx_maxrate, Mbit/s; now {})",
                cur.trim()
            )),
            Err(e) => Err(format!(
                "{name}: the driver has no per-queue rate limit ({e})"
            )),
        },
    };
    out.push(match detail {
        Ok(d) => finding(Level::Ok, "per-queue rate limit", d, ""),
        Err(d) => finding(
            Level::Warn,
            "per-queue rate limit",
            d,
            "rates are paced in software (the Fourier queues' rates by sluice's pacer)",
        ),
    });
}

fn timestamps(name: &str, out: &mut Vec<Finding>) {
    let fix = "analyze --capture and the engine's ε use software stamps; hardware stamps need \
               a NIC with a PTP clock (ethtool -T IFACE lists what it has)";
    match sluice_sys::ethtool::ts_info(name) {
        Ok(ts) => {
            let (rx, tx) = (ts.hardware_rx(), ts.hardware_tx());
            let phc = ts.phc_index.map_or("no PTP clock".to_string(), |i| {
                format!("PTP clock /dev/ptp{i}")
            });
            out.push(finding(
                if rx && tx { Level::Ok } else { Level::Warn },
                "hardware timestamps",
                format!(
                    "{name}: receive {}, transmit {}, {phc}",
                    if rx { "hardware" } else { "software only" },
                    if tx { "hardware" } else { "software only" }
                ),
                fix,
            ));
        }
        Err(e) => out.push(finding(
            Level::Warn,
            "hardware timestamps",
            format!("{name}: the driver does not say ({e})"),
            fix,
        )),
    }
}
