//! `sluice inject`: frames described by clients, sent at their times and
//! acknowledged with their departures.

use crate::args::InjectArgs;
use crate::plan::{engine_config, run_outputs, send};
use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_core::Departures;
use sluice_engine::{run_source, EngineConfig};
use sluice_sink::SinkSpec;
use sluice_source::inject::{InjectConfig, InjectSource, Listen, Listener};
use sluice_sys::packet_rx::PacketRx;
use std::sync::Arc;

pub fn run(a: InjectArgs) -> Result<u8, Failure> {
    if a.run.threads != 1 {
        return Err(bad_input(anyhow!(
            "inject runs one TX thread: acknowledgements follow the order frames leave in"
        )));
    }
    let outputs = run_outputs(&a.run, &a.to);
    let outputs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    crate::dest::check(&[], &outputs)?;
    let src_mac = match (&a.src_mac, &a.to) {
        (Some(m), _) => m.0,
        (None, SinkSpec::AfPacket(i)) => sluice_sys::tap::interface_mac(i)
            .map_err(|e| bad_input(anyhow!("--to afpacket:{i}: {e}")))?,
        _ => [2, 0, 0, 0, 0, 1],
    };
    let dst_mac = a.dst_mac.map_or([0xff; 6], |m| m.0);
    let rx = a
        .return_iface
        .as_deref()
        .map(|i| {
            PacketRx::open(i)
                .map_err(|e| crate::open_failure(anyhow!(e).context(format!("--return {i}"))))
        })
        .transpose()?;
    let listener = Listener::bind(&a.listen).map_err(crate::open_failure)?;
    let departures = Arc::new(Departures::new());
    let cfg = InjectConfig {
        queue_limit: usize::try_from(a.queue_limit).unwrap_or(usize::MAX),
        window: a.window,
        sessions: a.sessions,
        macs: (src_mac, dst_mac),
        duration: a.duration,
    };
    let mut source = InjectSource::new(listener, cfg, departures.clone());
    if let Some(rx) = rx {
        source = source.with_return(rx);
    }
    if !a.run.quiet {
        let access = match &a.listen {
            Listen::Unix(_) => "a unix socket only its owner may use",
            Listen::Tcp(_) => "loopback only, unauthenticated",
        };
        eoutln!(
            "sluice: injecting to {} for clients on {} ({access}; Ctrl-C stops)",
            a.to,
            a.listen
        );
    }
    let cfg = EngineConfig {
        limit: a.limit,
        departures: Some(departures),
        ..engine_config(&a.run, false)
    };
    send(&a.run, &a.to, false, &[], cfg, |sinks, cfg, progress| {
        run_source(source, sinks, cfg, progress)
    })
}
