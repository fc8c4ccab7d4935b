//! What both upload services (the worker's lease, the Jobs service)
//! share: an upload received chunk by chunk and its name checked. (The
//! writer of uploads, and their removal, is `sluice_sys::secret`'s.)

use crate::pb;
use crate::shown::shown;
use sluice_sys::secret::NewFile;
use std::path::PathBuf;
use tokio_stream::StreamExt;
use tonic::{Status, Streaming};

/// Receives one upload: its name checked (plain), its file made by
/// `open(name)` at the first chunk, each chunk's bytes admitted by
/// `admit(name, bytes)` before they are written, then synced. Its name,
/// path and size; on any failure, or a stream dropped, nothing is left.
pub(crate) async fn receive(
    chunks: &mut Streaming<pb::FileChunk>,
    mut open: impl FnMut(&str) -> Result<NewFile, Status>,
    mut admit: impl FnMut(&str, u64) -> Result<(), Status>,
) -> Result<(String, PathBuf, u64), Status> {
    let mut file: Option<NewFile> = None;
    let mut name = String::new();
    let mut total = 0u64;
    while let Some(c) = chunks.next().await {
        let c = c?;
        if file.is_none() {
            plain_name(&c.name)?;
            name = c.name.clone();
            file = Some(open(&name)?);
        }
        total += c.data.len() as u64;
        admit(&name, c.data.len() as u64)?;
        let f = file.as_mut().expect("opened above");
        f.write(&c.data)
            .map_err(|e| Status::internal(format!("upload '{}': {e}", shown(&name))))?;
    }
    let Some(f) = file else {
        return Err(Status::invalid_argument("an empty upload"));
    };
    let path = f.finish().map_err(|e| Status::internal(e.to_string()))?;
    Ok((name, path, total))
}

/// An upload's name, refused unless plain (no directory, no leading dot,
/// at most 128 characters): the job reads it under that name.
pub(crate) fn plain_name(name: &str) -> Result<(), tonic::Status> {
    if sluice_job::remote::plain_name(name) {
        return Ok(());
    }
    Err(tonic::Status::invalid_argument(format!(
        "upload '{}': not a plain file name (no directory, no leading dot, \
         at most 128 characters)",
        crate::shown::shown(name)
    )))
}
