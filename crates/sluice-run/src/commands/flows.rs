//! `sluice flows run`: sessions of flows and meta-flows, their plan and
//! sources.

use crate::plan::SendPlan;
use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_engine::run_sources;
use sluice_flows::{FlowConfig, FlowSource, Session};
use sluice_job::command::RunArgs;
use sluice_source::{Share, Source};

/// The session's plan and sources (`run::prepare`).
pub fn prepare(a: &mut RunArgs) -> Result<crate::plan::Prepared<'_>, Failure> {
    a.opts.check().map_err(|e| bad_input(anyhow!(e)))?;
    let planners = a.opts.planners;
    if planners > 1 && a.run.send.limit.is_some() {
        return Err(bad_input(anyhow!(
            "--limit needs --planners 1: with {planners} planners no one of them knows which packets are the first N in time (use --duration)"
        )));
    }
    // Each planner feeds TX threads of its own.
    a.run.send.threads = a.run.send.threads.max(planners as usize);
    let a = &*a;
    let mut plan = SendPlan::new(&a.run, a.opts.topspeed)?
        .planners(planners as usize)?
        .reads(&a.session)
        .rate(sluice_job::rate::Nominal::Multiplier(1.0))?;
    plan.engine.start_at = a.part.start_at;
    if a.confine_inputs {
        sluice_flows::confine_inputs();
    }
    let session = Session::load(&a.session).map_err(bad_input)?;
    let sources = (0..planners)
        .map(|k| -> Result<Box<dyn Source>, Failure> {
            let cfg = FlowConfig {
                seed: a.opts.seed,
                src_mac: a.opts.src_mac,
                dst_mac: a.opts.dst_mac,
                stamp: a.opts.stamp,
                planner: a.opts.planner,
                share: a.part.share,
                part: (planners > 1).then_some(Share {
                    index: k,
                    count: planners,
                }),
                stamp_from: a.part.start_at,
            };
            Ok(Box::new(
                FlowSource::new(session.clone(), cfg).map_err(bad_input)?,
            ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(crate::plan::Prepared {
        plan,
        go: Box::new(|sinks, cfg, progress| run_sources(sources, sinks, cfg, progress)),
    })
}
