//! `sluice series`: time-series archives (convert from CSV, dump to CSV,
//! play).

use crate::args::{ConvertArgs, DumpArgs, SeriesArgs, SeriesCommand};
use crate::dest::{self, Dest};
use crate::{bad_input, exit, Failure};
use sluice_archive::{convert_csv, dump, ConvertStats, DumpError};
use std::io;

pub fn run(a: SeriesArgs) -> Result<u8, Failure> {
    match a.command {
        SeriesCommand::Convert(c) => run_convert(c),
        SeriesCommand::Dump(d) => run_dump(d),
        SeriesCommand::Play(p) => sluice_run::command(sluice_run::Job::Series(*p)),
    }
}

fn run_convert(a: ConvertArgs) -> Result<u8, Failure> {
    let stats = convert_csv(&a.input, &a.output, a.data).map_err(|e| {
        if e.is_output_error() {
            Failure::from(e)
        } else {
            bad_input(e)
        }
    })?;
    eoutln!("{}", summary(&a, &stats));
    if stats.out_of_order > 0 {
        eoutln!(
            "sluice: warning: {} records are earlier than the record before them \
             (a player expects non-decreasing times)",
            stats.out_of_order
        );
    }
    Ok(exit::OK)
}

/// One line: records, devices, time span, bytes.
fn summary(a: &ConvertArgs, s: &ConvertStats) -> String {
    let span = match (s.first, s.last) {
        (Some(first), Some(last)) => {
            format!("{:.6} s ({first} .. {last})", s.span_micros() as f64 / 1e6)
        }
        _ => "0 s".to_owned(),
    };
    format!(
        "sluice: {} -> {}: {}, {}, span {span}, {} bytes ({} data)",
        a.input.display(),
        a.output.display(),
        count(s.records, "record"),
        count(s.devices, "device"),
        s.bytes,
        a.data,
    )
}

fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn run_dump(a: DumpArgs) -> Result<u8, Failure> {
    let result = match &a.output {
        Some(path) => {
            let spec = path.to_string_lossy();
            dest::check(&[&a.archive], &[&spec])?;
            let mut out = Dest::open(&spec)?;
            dump(&a.archive, &mut out, a.data).and_then(|n| {
                out.commit().map_err(DumpError::Write)?;
                Ok(n)
            })
        }
        None => dump(&a.archive, &mut io::stdout().lock(), a.data),
    };
    match result {
        Ok(_) => Ok(exit::OK),
        Err(DumpError::Archive(e)) => Err(bad_input(e)),
        // Keep the io::Error in the chain: a closed pipe is not an error.
        Err(DumpError::Write(e)) => Err(anyhow::Error::new(e).context("writing the dump").into()),
    }
}
