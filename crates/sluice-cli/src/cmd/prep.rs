//! `sluice prep`: a trace's two-port split, computed once and kept in a
//! cache file (tcpprep's job): sluice's own for `replay --split
//! cache:FILE`, or tcpprep's for `--split tcpprep:FILE` and tcpreplay.

use crate::args::{PrepArgs, PrepFormat};
use crate::dest::{self, Dest};
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use sluice_source::SplitCache;
use std::io::Write;

/// Longest comment a tcpprep cache holds (tcpprep's own limit).
const COMMENT_MAX: usize = 65_535 - 1_024;

pub fn run(a: PrepArgs) -> Result<u8, Failure> {
    // tcpprep --no-arg-comment -C TEXT stores "\nTEXT".
    let comment = a.comment.as_ref().map(|c| format!("\n{c}").into_bytes());
    write(a, comment)
}

/// Writes the cache `a` asks for; a tcpprep cache holds `comment` as it
/// is (`tcpprep`'s own words, from `sluice tcpprep`).
pub fn write(a: PrepArgs, comment: Option<Vec<u8>>) -> Result<u8, Failure> {
    let out = a.output.to_string_lossy().into_owned();
    dest::check(&[&a.trace], &[&out])?;
    if comment.as_ref().is_some_and(|c| c.len() > COMMENT_MAX) {
        return Err(bad_input(anyhow!(
            "--comment: longer than the {COMMENT_MAX} bytes a tcpprep cache holds"
        )));
    }
    if comment.is_some() && a.format != PrepFormat::Tcpprep {
        return Err(bad_input(anyhow!(
            "--comment is stored in tcpprep caches only: add --format tcpprep"
        )));
    }
    let split = a
        .split_opts
        .split(a.split)
        .map_err(|e| bad_input(anyhow!(e)))?;
    let (mut cache, trace_bytes, truncated) =
        sluice_source::prep(&a.trace, split, a.select.select().as_ref()).map_err(bad_input)?;
    if let Some(t) = truncated {
        eoutln!(
            "sluice: warning: {t}; the cache covers the {} packets before it",
            cache.packets
        );
    }
    let [primary, secondary, _] = cache.counts();
    let bytes = match a.format {
        PrepFormat::Tcpprep => {
            if let Some(c) = comment {
                cache.comment = c;
            }
            cache.to_bytes()
        }
        PrepFormat::Sluice => SplitCache::from_tcpprep(&cache, trace_bytes)
            .map_err(|e| bad_input(anyhow!("{}: {e}", a.trace.display())))?
            .to_bytes(),
    };
    let mut dest = Dest::open(&out)?;
    dest.write_all(&bytes)
        .and_then(|()| dest.commit())
        .with_context(|| format!("writing {out}"))
        .map_err(|e| Failure {
            code: exit::FATAL,
            error: e,
        })?;
    eoutln!(
        "{}: {} packets, {primary} client to server (--to), {secondary} server to client (--to2) -> {out}",
        a.trace.display(),
        cache.packets,
    );
    Ok(exit::OK)
}
