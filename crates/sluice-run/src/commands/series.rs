//! `sluice series play`: time-series records as UDP datagrams, on time.

use crate::plan::SendPlan;
use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_core::Nanos;
use sluice_engine::{run_series, SeriesConfig};
use sluice_job::command::PlayArgs;
use sluice_job::values::Size;
use sluice_sink::SinkSpec;
use sluice_source::series::{
    DeviceCount, DeviceFilter, DeviceSelect, FlowMap, Ooo, SeriesTiming, MIN_BUFFER,
};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;

/// Largest IO buffer (two per worker); larger ones only cost memory.
const MAX_BUFFER: usize = 1 << 30;

/// The play's plan and source (`run::prepare`).
pub fn prepare(a: &mut PlayArgs) -> Result<crate::plan::Prepared<'_>, Failure> {
    let a = &*a;
    a.opts.check().map_err(|e| bad_input(anyhow!(e)))?;
    let timing = match (a.opts.tight_loop, a.opts.fast_forward) {
        (Some(iv), _) => SeriesTiming::TightLoop(iv),
        (_, Some(f)) if f.is_finite() && f > 0.0 => SeriesTiming::FastForward(f),
        (_, Some(f)) => {
            return Err(bad_input(anyhow!(
                "--fast-forward must be a positive number, got {f}"
            )))
        }
        _ => SeriesTiming::Conforming,
    };
    let topspeed = timing == SeriesTiming::TightLoop(Nanos(0));
    if let Some(b) = a.run.send.bursts {
        return Err(bad_input(anyhow!(
            "--bursts {b}: series play keeps each record's own time; bursts are for replayed and generated traffic"
        )));
    }
    let mut plan = SendPlan::new(&a.run, topspeed)?
        .planners(a.opts.workers.max(1))?
        .datagrams()
        .reads(&a.archive)
        .rate(match timing {
            SeriesTiming::FastForward(f) => sluice_job::rate::Nominal::Multiplier(f),
            _ => sluice_job::rate::Nominal::Multiplier(1.0),
        })?;
    if let Some(map) = &a.map {
        plan = plan.reads(map);
    }
    plan = plan.also_to(&a.also_to)?;
    plan.engine.preload = a.opts.preload;
    plan.engine.preload_budget = a.opts.preload_max;
    plan.engine.start_at = a.part.start_at;
    let buffer_size = a.opts.buffer_size.0;
    if !(MIN_BUFFER..=MAX_BUFFER).contains(&buffer_size) {
        return Err(bad_input(anyhow!(
            "--buffer-size must be between {} (one record of the largest size) and {}",
            Size(MIN_BUFFER),
            Size(MAX_BUFFER)
        )));
    }
    if a.opts.workers == 0 || a.opts.workers > 64 {
        return Err(bad_input(anyhow!("--workers must be between 1 and 64")));
    }
    let flows = flow_map(a)?;
    let mtu = match (a.opts.mtu, &a.run.to) {
        (Some(m), _) => m,
        (None, to) if to.iface().is_some() => {
            sluice_sys::net::interface_mtu(to.iface().unwrap_or_default()).unwrap_or(1500)
        }
        _ => 1500,
    };
    if !(68..=65_535).contains(&mtu) {
        return Err(bad_input(anyhow!(
            "--mtu must be between 68 and 65535, got {mtu}"
        )));
    }
    let select = DeviceSelect {
        filter: DeviceFilter::new(&a.opts.device_filter)
            .map_err(|e| bad_input(anyhow!("--device-filter: {e}")))?,
        steps: a.opts.device_steps.clone(),
    };
    select
        .filter
        .check_archive(&a.archive)
        .map_err(|e| bad_input(anyhow!("--device-filter {e}")))?;
    let cfg = SeriesConfig {
        buffer_size,
        workers: a.opts.workers,
        queues: a.opts.queues.max(1),
        timing,
        ooo: (a.opts.ooo_prob > 0.0).then_some(Ooo {
            prob: a.opts.ooo_prob,
            window: a.opts.ooo_window,
        }),
        ooo_threads: a.opts.ooo_threads,
        devices: a.opts.devices.unwrap_or(DeviceCount::All),
        select,
        payload: a.opts.payload,
        mtu,
        src_mac: a.opts.src_mac,
        dst_mac: a.opts.dst_mac,
        seed: a.opts.seed,
        rescue_after: (!a.opts.no_rescue).then_some(a.opts.rescue_after),
        max_gap: a.opts.max_gap,
        share: a.part.share,
        ..SeriesConfig::new(a.archive.clone(), flows)
    };
    Ok(crate::plan::Prepared {
        plan,
        go: Box::new(move |sinks, ecfg, progress| {
            run_series(cfg, sinks, ecfg, progress).map(|mut s| {
                s.timing = Some(timing.into());
                s
            })
        }),
    })
}

/// Every source and destination the flows use, checked against this
/// host's routes before anything is sent: the error names the rule (and
/// the mapping file), the addresses and the kernel's reason.
fn check_routes(flows: &FlowMap, map: Option<&Path>) -> Result<(), Failure> {
    let mut seen = std::collections::HashSet::new();
    for (rule, from, to) in flows.endpoints() {
        if !seen.insert((from, to)) {
            continue;
        }
        if let Err(e) = sluice_sink::udp::check_route(from, to) {
            let whose = match map {
                Some(m) => format!("{}: {rule}", m.display()),
                None => "--to".to_string(),
            };
            return Err(crate::open_failure(anyhow::Error::new(e).context(whose)));
        }
    }
    Ok(())
}

/// The address `udp:HOST:PORT` names.
fn udp_target(target: &str) -> Result<SocketAddr, Failure> {
    target
        .to_socket_addrs()
        .map_err(|e| bad_input(anyhow!("udp:{target}: cannot resolve: {e}")))?
        .next()
        .ok_or_else(|| bad_input(anyhow!("udp:{target}: no address")))
}

/// The flows the records go by: the device map (`--map`) over the
/// default destination, checked against this host's routes when the
/// kernel sends them.
fn flow_map(a: &PlayArgs) -> Result<FlowMap, Failure> {
    // Through kernel UDP sockets, the target is the destination of flows
    // the mapping leaves open, and their source is the kernel's choice.
    let mut flows = match &a.run.to {
        SinkSpec::Udp(target) => match udp_target(target)? {
            SocketAddr::V4(t) => FlowMap::new(*t.ip(), t.port()).with_kernel_sources(),
            SocketAddr::V6(t) => {
                return Err(bad_input(anyhow!(
                    "udp:{target}: series play sends UDP/IPv4 flows; give an IPv4 target ({t})"
                )))
            }
        },
        _ => FlowMap::new(a.opts.dst_ip, a.opts.dst_port),
    };
    if let Some(m) = &a.map {
        flows = flows.load(m).map_err(bad_input)?;
    }
    if matches!(a.run.to, SinkSpec::Udp(_)) {
        check_routes(&flows, a.map.as_deref())?;
    }
    Ok(flows)
}
