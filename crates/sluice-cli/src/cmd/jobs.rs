//! `sluice jobs`: submit, list, watch, change and stop a worker's local
//! jobs (`sluice_control::jobs_client`).

use crate::args::{ChangeArgs, JobsArgs, JobsCommand, SubmitArgs};
use crate::cmd::distributed::control_failure;
use crate::{bad_input, exit, Failure};
use anyhow::anyhow;
use sluice_control::jobs_client as jc;
use sluice_control::pb::{self, change_request::Change};
use std::path::PathBuf;

pub fn jobs(a: JobsArgs) -> Result<u8, Failure> {
    let worker = a.worker.clone().ok_or_else(|| {
        bad_input(anyhow!(
            "--worker: unix:PATH or HOST:PORT (with --tls) expected"
        ))
    })?;
    crate::cmd::distributed::runtime()?.block_on(async move {
        let mut c = jc::open(&worker, a.tls.as_deref())
            .await
            .map_err(|e| control_failure(e.about(&worker)))?;
        match a.command {
            JobsCommand::List { json } => list(&mut c, json).await,
            JobsCommand::Submit(s) => submit(&mut c, s).await,
            JobsCommand::Watch { id } => watch(&mut c, id).await,
            JobsCommand::Change(ch) => change(&mut c, ch).await,
            JobsCommand::Stop { id } => {
                let info = jc::stop(&mut c, id).await.map_err(control_failure)?;
                outln!("{}", line(&info))?;
                Ok(exit::OK)
            }
        }
    })
}

/// One job, one line.
pub fn line(j: &pb::JobInfo) -> String {
    format!(
        "job {} '{}': {} to {}, {}, rate {}, {} packets, {:.0} pps, {:.1} s",
        j.id,
        j.name,
        j.command,
        j.to,
        j.state,
        rate_text(j),
        j.packets,
        j.pps,
        j.elapsed_s
    )
}

/// A job's rate in its own unit, with an SI prefix as the options take
/// it (or "top speed"), and whether it is paused.
pub fn rate_text(j: &pb::JobInfo) -> String {
    let r = match j.rate {
        Some(r) if j.unit == "x" => format!("x{r:.3}"),
        Some(r) if r >= 1e9 => format!("{:.3}G {}", r / 1e9, j.unit),
        Some(r) if r >= 1e6 => format!("{:.3}M {}", r / 1e6, j.unit),
        Some(r) if r >= 1e3 => format!("{:.3}k {}", r / 1e3, j.unit),
        Some(r) => format!("{r:.3} {}", j.unit),
        None => "top speed".into(),
    };
    if j.paused {
        format!("{r} (paused)")
    } else {
        r
    }
}

/// One job as JSON.
pub fn json(j: &pb::JobInfo) -> serde_json::Value {
    serde_json::json!({
        "id": j.id, "name": j.name, "state": j.state, "command": j.command, "to": j.to,
        "scale": j.scale, "rate": j.rate, "unit": j.unit, "paused": j.paused,
        "elapsed_s": j.elapsed_s, "packets": j.packets, "pps": j.pps,
        "changed_at_ns": j.changed_at_ns, "error": j.error,
        "eps_p50_ns": j.eps_p50_ns, "eps_p99_ns": j.eps_p99_ns,
        "rx_received": j.rx_received, "rx_lost": j.rx_lost,
        "rx_latency_p50_ns": j.rx_latency_p50_ns,
    })
}

async fn list(c: &mut jc::Client, as_json: bool) -> Result<u8, Failure> {
    for j in jc::list(c).await.map_err(control_failure)? {
        if as_json {
            outln!("{}", json(&j))?;
        } else {
            outln!("{}", line(&j))?;
        }
    }
    Ok(exit::OK)
}

async fn submit(c: &mut jc::Client, s: SubmitArgs) -> Result<u8, Failure> {
    let mut words = s.words.into_iter();
    let command = match words.next().as_deref() {
        Some("replay") => pb::Command::Replay,
        Some("flows") => pb::Command::Flows,
        Some("series") => pb::Command::Series,
        Some("profile") => pb::Command::Profile,
        other => {
            return Err(bad_input(anyhow!(
                "the job: replay, flows, series or profile expected, not {other:?}"
            )))
        }
    };
    let file: PathBuf = words
        .next()
        .ok_or_else(|| {
            bad_input(anyhow!(
                "the job: its file (a trace, session, archive or profile) expected"
            ))
        })?
        .into();
    let plan = sluice_control::plan::Plan {
        workers: Vec::new(),
        command,
        file: file.clone(),
        files: Vec::new(),
        args: words.collect(),
        duration_ns: 0,
        split: pb::Split::Unspecified,
    };
    let job = crate::job::words_job(&plan).map_err(bad_input)?;
    let info = jc::submit(c, &job, &file, &s.to, &s.name, s.rx.as_deref(), s.paused)
        .await
        .map_err(control_failure)?;
    outln!("{}", line(&info))?;
    if s.watch {
        return watch(c, info.id).await;
    }
    Ok(exit::OK)
}

async fn watch(c: &mut jc::Client, id: u64) -> Result<u8, Failure> {
    let mut failed = None;
    let end = jc::watch(c, id, |l| {
        if failed.is_none() {
            failed = outln!("{l}").err();
        }
    })
    .await
    .map_err(control_failure)?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    match end {
        pb::update::Kind::Finished(summary) => {
            outln!("{summary}")?;
            Ok(exit::OK)
        }
        pb::update::Kind::Failed(e) | pb::update::Kind::Refused(e) => {
            Err(Failure::from(anyhow!("job {id}: {e}")))
        }
        _ => Ok(exit::OK),
    }
}

async fn change(c: &mut jc::Client, a: ChangeArgs) -> Result<u8, Failure> {
    let what = match (a.rate, a.ramp, a.pause, a.resume) {
        (Some(r), ..) => Change::Rate(r),
        (_, Some(r), ..) => Change::Ramp(r),
        (_, _, true, _) => Change::Pause(true),
        _ => Change::Resume(true),
    };
    let info = jc::change(c, a.id, what, a.at.map_or(0, |n| n.0))
        .await
        .map_err(control_failure)?;
    let at = info
        .changed_at_ns
        .map(|n| format!(" from {} after its start", sluice_core::Nanos(n)))
        .unwrap_or_default();
    outln!("{}{at}", line(&info))?;
    Ok(exit::OK)
}
