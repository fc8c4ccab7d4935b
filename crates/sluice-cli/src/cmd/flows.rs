//! `sluice flows run` (sessions of flows and meta-flows) and
//! `sluice flows import` (flow records → a session).

use crate::args::{FlowsArgs, FlowsCommand, ImportArgs, RunArgs};
use crate::dest::{self, Dest};
use crate::plan::{check_threads, engine_config, send};
use crate::{bad_input, Failure};
use anyhow::{anyhow, Context};
use sluice_engine::{run_source, EngineConfig};
use sluice_source::flows::{import_csv, FlowConfig, FlowSource};
use std::io::Write;

pub fn run(a: FlowsArgs) -> Result<u8, Failure> {
    match a.command {
        FlowsCommand::Run(r) => run_session(*r),
        FlowsCommand::Import(i) => import(i),
    }
}

fn run_session(a: RunArgs) -> Result<u8, Failure> {
    check_threads(&a.run, &a.to)?;
    let source = FlowSource::open(
        &a.session,
        FlowConfig {
            seed: a.seed,
            src_mac: a.src_mac,
            dst_mac: a.dst_mac,
            stamp: a.stamp,
            planner: a.planner,
        },
    )
    .map_err(bad_input)?;
    let cfg = EngineConfig {
        duration: a.duration,
        limit: a.limit,
        ..engine_config(&a.run, a.topspeed)
    };
    send(
        &a.run,
        &a.to,
        false,
        &[&a.session],
        cfg,
        |sinks, cfg, progress| run_source(source, sinks, cfg, progress),
    )
}

/// Largest flow-record file `flows import` reads.
const IMPORT_MAX: u64 = 1 << 30;

fn import(a: ImportArgs) -> Result<u8, Failure> {
    let out_spec = a.output.to_string_lossy();
    dest::check(&[&a.records], &[&out_spec])?;
    let mut out = Dest::open(&out_spec)?;
    let name = a.records.display().to_string();
    // Flow records are kept in memory with the session written from them:
    // bounded like every text input (a device file is not read forever).
    let text = sluice_source::text::read_bounded(&a.records, IMPORT_MAX)
        .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    let (yaml, s) = import_csv(&name, &text).map_err(|e| bad_input(anyhow!(e)))?;
    out.write_all(yaml.as_bytes())
        .and_then(|()| out.commit())
        .with_context(|| format!("cannot write {}", a.output.display()))?;
    eprintln!(
        "sluice: {name} -> {}: {} records, {} flows; skipped (protocol) {}, skipped (no packets) {}, without duration (1 s apart) {}, bytes raised to the headers' minimum {}, bytes lowered to 65535 per packet {}",
        a.output.display(),
        s.records,
        s.flows,
        s.skipped_protocol,
        s.no_packets,
        s.no_duration,
        s.short_bytes,
        s.long_bytes
    );
    Ok(crate::exit::OK)
}
