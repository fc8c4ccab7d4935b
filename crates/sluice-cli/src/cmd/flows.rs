//! `sluice flows run` (sessions of flows and meta-flows) and
//! `sluice flows import` (flow records → a session) and `sluice flows
//! edit` (a session changed and saved).

use crate::args::{EditArgs, FlowsArgs, FlowsCommand, ImportArgs};
use crate::dest::{self, Dest};
use crate::{bad_input, Failure};
use anyhow::{anyhow, Context};
use sluice_flows::{import_csv, ImportError};
use std::io::{BufReader, BufWriter, Read};

pub fn run(a: FlowsArgs) -> Result<u8, Failure> {
    match a.command {
        FlowsCommand::Run(r) => sluice_run::command(sluice_run::Job::Flows(*r)),
        FlowsCommand::Import(i) => import(i),
        FlowsCommand::Edit(e) => edit(e),
    }
}

fn edit(a: EditArgs) -> Result<u8, Failure> {
    use sluice_flows::{Edit, EditError};
    dest::check(&[&a.session], &[&a.output])?;
    let name = a.session.display().to_string();
    let text = sluice_source::text::read_bounded(&a.session, sluice_flows::MAX_EDIT)
        .map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    let mut edits = Vec::new();
    for s in &a.set {
        let (path, value) = s
            .split_once('=')
            .ok_or_else(|| bad_input(anyhow!("--set {s}: expected PATH=VALUE")))?;
        edits.push(Edit::Set(path.trim().into(), value.into()));
    }
    edits.extend(a.delete.iter().map(|p| Edit::Delete(p.trim().into())));
    edits.extend(a.append.iter().map(|e| Edit::Append(e.clone())));
    let in_yaml = sluice_source::is_yaml(&a.session);
    let out_yaml = match a.output.as_str() {
        "-" => in_yaml,
        o => sluice_source::is_yaml(o.as_ref()),
    };
    let (out_text, session) = sluice_flows::edit::edit(
        &name, &text, in_yaml, &edits, &a.output, out_yaml,
    )
    .map_err(|e| match e {
        EditError::Session(s) => bad_input(anyhow!(s)),
        e => bad_input(anyhow!(e)),
    })?;
    let mut out = Dest::open(&a.output)?;
    std::io::Write::write_all(&mut out, out_text.as_bytes())
        .and_then(|()| out.commit())
        .with_context(|| format!("cannot write {}", a.output))?;
    eoutln!(
        "sluice: {name} -> {}: {} entries, {} flows ({} set, {} deleted, {} appended)",
        a.output,
        session.flows.len(),
        session.flows.iter().map(|f| f.flows()).sum::<u64>(),
        a.set.len(),
        a.delete.len(),
        a.append.len()
    );
    Ok(crate::exit::OK)
}

/// Largest flow-record file `flows import` reads.
const IMPORT_MAX: u64 = 1 << 30;

fn import(a: ImportArgs) -> Result<u8, Failure> {
    let out_spec = a.output.to_string_lossy();
    dest::check(&[&a.records], &[&out_spec])?;
    let out = Dest::open(&out_spec)?;
    let name = a.records.display().to_string();
    // Records are read twice (earliest start, then the flows), line by
    // line: bounded in size like every text input, never held in memory.
    let meta = std::fs::metadata(&a.records).map_err(|e| bad_input(anyhow!("{name}: {e}")))?;
    if !meta.is_file() {
        return Err(bad_input(anyhow!(
            "{name}: not a regular file (flows import reads it twice)"
        )));
    }
    let size = meta.len();
    if size > IMPORT_MAX {
        return Err(bad_input(anyhow!(
            "{name}: {size} bytes, more than the {} MiB flows import reads",
            IMPORT_MAX >> 20
        )));
    }
    let open = || {
        Ok(BufReader::new(
            std::fs::File::open(&a.records)?.take(IMPORT_MAX + 1),
        ))
    };
    let mut w = BufWriter::new(out);
    let s = match import_csv(&name, open, &mut w) {
        Ok(s) => s,
        Err(ImportError::Input(e)) => return Err(bad_input(anyhow!(e))),
        Err(ImportError::Io(e)) => {
            return Err(anyhow!(e)
                .context(format!("{name} -> {}", a.output.display()))
                .into())
        }
    };
    w.into_inner()
        .map_err(|e| e.into_error())
        .and_then(Dest::commit)
        .with_context(|| format!("cannot write {}", a.output.display()))?;
    eoutln!(
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
