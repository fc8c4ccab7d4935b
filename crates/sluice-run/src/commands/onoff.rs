//! `sluice profile onoff`: superposed ON/OFF flows, periods and gaps drawn
//! from any law.

use crate::plan::SendPlan;
use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_engine::run_source;
use sluice_job::command::OnOffArgs;
use sluice_profile::{OnOffConfig, OnOffSource, PacketSpec};
use sluice_sink::SinkSpec;

/// The ON/OFF flows' plan and source (`run::prepare`).
pub fn prepare(a: &mut OnOffArgs) -> Result<crate::plan::Prepared<'_>, Failure> {
    let a = &*a;
    a.opts.check().map_err(|e| bad_input(anyhow!(e)))?;
    let plan = SendPlan::new(&a.run, false)?.rate(sluice_job::rate::Nominal::Multiplier(1.0))?;
    if matches!(a.run.to, SinkSpec::Pcap(_))
        && a.run.send.limit.is_none()
        && a.run.send.duration.is_none()
    {
        return Err(bad_input(anyhow!(
            "--to {}: an ON/OFF source never ends: give --duration or --limit",
            a.run.to
        )));
    }
    let packet = PacketSpec {
        proto: if a.opts.src.is_ipv6() { "udp6" } else { "udp4" }.into(),
        src: a.opts.src,
        dst: a.opts.dst,
        sport: a.opts.sport,
        dport: a.opts.dport,
        flows: a.opts.flows,
        encap: a.opts.encap.clone(),
        ipv6_ext: a.opts.ipv6_ext.clone(),
        fields: a.opts.fields.clone(),
    };
    if a.opts.src.is_ipv6() != a.opts.dst.is_ipv6() {
        return Err(bad_input(anyhow!(
            "--src {} and --dst {}: both IPv4 or both IPv6",
            a.opts.src,
            a.opts.dst
        )));
    }
    let source = OnOffSource::new(OnOffConfig {
        on: a.opts.on.law.clone(),
        off: a.opts.off.law.clone(),
        gap: a.opts.gap.law.clone(),
        size: a.opts.size,
        packet,
        src_mac: a.opts.src_mac,
        dst_mac: a.opts.dst_mac,
        seed: a.opts.seed,
    })
    .map_err(bad_input)?;
    Ok(crate::plan::Prepared {
        plan,
        go: Box::new(|sinks, cfg, progress| run_source(source, sinks, cfg, progress)),
    })
}
