//! `sluice pace`: frames from a TAP device, released at requested gaps.

use crate::dest::Dest;
use crate::plan::SendPlan;
use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_engine::run_source;
use sluice_job::command::PaceArgs;
use sluice_live::tap::{Departures, GapLog, PaceLaw, PaceSource, Relay};
use sluice_profile::Profile;
use sluice_sys::tap::Tap;
use std::io::{self, Write};
use std::sync::Arc;

/// `--log-requested`: written atomically, committed when the run ends.
struct LogOut(Option<Dest>);

impl GapLog for LogOut {
    fn gap(&mut self, ns: u64) -> io::Result<()> {
        match self.0.as_mut() {
            Some(d) => writeln!(d, "{ns}"),
            None => Ok(()),
        }
    }
    fn finish(&mut self) -> io::Result<()> {
        self.0.take().map_or(Ok(()), Dest::commit)
    }
}

fn law(a: &PaceArgs) -> Result<PaceLaw, Failure> {
    let positive = |v: f64, what: &str| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(bad_input(anyhow!("{what} must be more than 0")))
        }
    };
    Ok(if let Some(g) = a.opts.gap {
        PaceLaw::Gap(g.0 as f64)
    } else if let Some(p) = a.opts.pps {
        PaceLaw::Gap(1e9 / positive(p, "--pps")?)
    } else if let Some(m) = a.opts.mbps {
        // Mbit/s = 1e-3 bit/ns.
        PaceLaw::BitRate(positive(m, "--mbps")? * 1e-3)
    } else if let Some(path) = &a.ipd {
        let p = Profile::load(path, 1.0).map_err(bad_input)?;
        let seed = a.opts.seed.unwrap_or(p.seed);
        PaceLaw::drawn(p.gap, seed)
    } else {
        unreachable!("clap requires one of --gap, --pps, --mbps, --ipd")
    })
}

/// The live source's plan (`run::prepare`).
pub fn prepare(a: &mut PaceArgs) -> Result<crate::plan::Prepared<'_>, Failure> {
    let a = &*a;
    a.opts
        .check(a.ipd.is_some())
        .map_err(|e| bad_input(anyhow!(e)))?;
    if a.run.send.threads != 1 {
        return Err(bad_input(anyhow!(
            "pace runs one TX thread: the frames of a TAP leave in one order"
        )));
    }
    let law = law(a)?;
    let iface = a.run.to.iface().map(str::to_string);
    if a.opts.return_path && iface.is_none() {
        return Err(bad_input(anyhow!(
            "--return relays frames from the --to interface: give --to afpacket:IFACE or xdp:IFACE"
        )));
    }
    let mut plan = SendPlan::new(&a.run, false)?.rate(sluice_job::rate::Nominal::None(
        "pace (frames leave as the TAP hands them over)",
    ))?;
    if let Some(ipd) = &a.ipd {
        plan = plan.reads(ipd);
    }
    if let Some(log) = &a.log_requested {
        plan = plan.writes(log);
    }
    // --log-requested is opened before the run's outputs.
    plan.check_files()?;
    let log = a.log_requested.as_deref().map(Dest::open).transpose()?;
    let tap = Arc::new(Tap::open(&a.tap).map_err(crate::open_failure)?);
    let sched = Departures::new(
        law,
        a.opts.per_flow,
        u32::try_from(a.opts.burst).unwrap_or(u32::MAX),
        usize::try_from(a.opts.queue_limit).unwrap_or(usize::MAX),
    );
    let mut source = PaceSource::new(Box::new(tap.clone()), sched, a.opts.per_flow);
    if let Some(log) = log {
        source = source.with_log(Box::new(LogOut(Some(log))));
    }
    if let Some(t) = a.opts.tick {
        source = source.with_tick(t);
    }
    if a.opts.return_path {
        let iface = iface.as_deref().expect("checked above");
        let relay = Relay::open(iface, tap.clone())
            .map_err(|e| bad_input(anyhow!("--return on {iface}: {e}")))?;
        source = source.with_relay(relay);
    }
    if !a.run.quiet {
        eoutln!(
            "sluice: pacing frames from TAP {} to {} (Ctrl-C stops)",
            tap.name(),
            a.run.to
        );
    }
    Ok(crate::plan::Prepared {
        plan,
        go: Box::new(|sinks, cfg, progress| run_source(source, sinks, cfg, progress)),
    })
}
