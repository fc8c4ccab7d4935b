//! `analyze --capture IFACE --duration T`: frames arriving on (and leaving
//! by) an interface, with the kernel's receive times, into a nanosecond
//! pcap written atomically, so a run can be judged without tcpdump.

use crate::{exit, signals, Failure};
use anyhow::{anyhow, Context};
use sluice_capture::{LinkType, PcapWriter};
use sluice_core::Nanos;
use sluice_sys::output::Output;
use sluice_sys::packet_rx::PacketRx;
use std::io::BufWriter;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Captures on `iface` for `period` (or until SIGINT/SIGTERM) into `out`.
pub fn capture(iface: &str, period: Nanos, out: &Path) -> Result<(), Failure> {
    let stop = signals::install().context("installing signal handlers")?;
    let rx = PacketRx::capture(iface).map_err(crate::open_failure)?;
    let file = Output::create(out).map_err(crate::dest::output_failure)?;
    let mut w = PcapWriter::new(BufWriter::new(file), LinkType::ETHERNET, 65_535)
        .with_context(|| format!("writing {}", out.display()))?;
    let _ = rx.drops(); // counts from here
    eoutln!(
        "analyze: capturing on {iface} for {:.3} s (SIGINT ends it sooner), {}",
        period.0 as f64 / 1e9,
        if rx.hardware_stamps() {
            "hardware receive stamps asked of the NIC"
        } else {
            "software receive stamps (the driver has no hardware ones)"
        }
    );
    let mut hardware = 0u64;
    let end = Instant::now() + Duration::from_nanos(period.0);
    let mut buf = vec![0u8; 65_535];
    loop {
        let now = Instant::now();
        if now >= end || stop.load(Ordering::Relaxed) {
            break;
        }
        let wait = (end - now).min(Duration::from_millis(50));
        let Some(r) = rx.recv(&mut buf, wait).map_err(|e| Failure {
            code: exit::FATAL,
            error: anyhow!(e),
        })?
        else {
            continue;
        };
        let ts = r.ts_ns.unwrap_or_else(sluice_sys::clock::realtime_ns);
        hardware += u64::from(r.hardware);
        w.write_packet(ts, &buf[..r.len], r.orig_len as u32)
            .with_context(|| format!("writing {}", out.display()))?;
    }
    let drops = rx.drops().unwrap_or(0);
    let frames = w.packets();
    let file = w
        .into_inner()
        .and_then(|b| b.into_inner().map_err(|e| e.into_error()))
        .with_context(|| format!("writing {}", out.display()))?;
    file.commit()
        .map_err(|e| anyhow!("writing {}: {e}", out.display()))?;
    eoutln!(
        "analyze: captured {frames} frames on {iface}, {drops} dropped by the kernel; \
         stamps: {hardware} hardware (NIC), {} software (kernel)",
        frames - hardware
    );
    if drops > 0 {
        eoutln!("sluice: warning: the kernel dropped {drops} frames before the capture read them: the analysis misses them");
    }
    Ok(())
}
