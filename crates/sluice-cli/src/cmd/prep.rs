//! `sluice prep`: a trace's two-port split, computed once and kept in a
//! cache file (tcpprep's job) for `replay --split cache:FILE`.

use crate::args::PrepArgs;
use crate::dest::{self, Dest};
use crate::{bad_input, exit, Failure};
use anyhow::Context;
use std::io::Write;

pub fn run(a: PrepArgs) -> Result<u8, Failure> {
    let out = a.output.to_string_lossy().into_owned();
    dest::check(&[&a.trace], &[&out])?;
    let mut dest = Dest::open(&out)?;
    let (cache, side_1) = sluice_source::prep(&a.trace, a.split).map_err(bad_input)?;
    dest.write_all(&cache.to_bytes())
        .and_then(|()| dest.commit())
        .with_context(|| format!("writing {out}"))
        .map_err(|e| Failure {
            code: exit::FATAL,
            error: e,
        })?;
    eoutln!(
        "{}: {} packets, {} client to server (--to), {} server to client (--to2) -> {out}",
        a.trace.display(),
        cache.packets,
        cache.packets - side_1,
        side_1
    );
    Ok(exit::OK)
}
