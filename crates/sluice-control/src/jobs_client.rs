//! A client of a worker's `Jobs` service (`sluice jobs`, `sluice top`):
//! upload a job's input, submit, list, watch, change and stop jobs.

use crate::control::connect;
use crate::error::{input, ControlError, Result};
use crate::pb::{self, jobs_client::JobsClient};
use sluice_job::RemoteJob;
use std::path::Path;
use tonic::transport::Channel;

pub type Client = JobsClient<Channel>;

/// A client of the worker at `address` (unix:PATH, or HOST:PORT with
/// the key directory `tls`).
pub async fn open(address: &str, tls: Option<&Path>) -> Result<Client> {
    let tls = tls.map(crate::tls::client_config).transpose()?;
    let ch = connect(address, tls.as_ref()).await?;
    Ok(JobsClient::new(ch).max_decoding_message_size(16 << 20))
}

/// A refused call, one line.
fn refused(what: &str, s: tonic::Status) -> ControlError {
    match s.code() {
        tonic::Code::InvalidArgument
        | tonic::Code::NotFound
        | tonic::Code::FailedPrecondition
        | tonic::Code::ResourceExhausted => input!("{what}: {}", s.message()),
        _ => ControlError::Environment(format!("{what}: {} ({:?})", s.message(), s.code())),
    }
}

/// Uploads `path` under its plain name, streamed as the controller does;
/// its id.
pub async fn upload(client: &mut Client, path: &Path) -> Result<String> {
    let (chunks, reader) = crate::control::file_chunks(path).await?;
    let reply = client
        .upload(chunks)
        .await
        .map_err(|e| refused(&format!("upload {}", path.display()), e))?;
    crate::control::read_whole(reader, path).await?;
    Ok(reply.into_inner().id)
}

/// Uploads `file` and submits `job` on it, sending to `to`.
pub async fn submit(
    client: &mut Client,
    job: &RemoteJob,
    file: &Path,
    to: &str,
    name: &str,
    rx: Option<&str>,
    paused: bool,
) -> Result<pb::JobInfo> {
    let file_id = upload(client, file).await?;
    let reply = client
        .submit(pb::Submission {
            job: Some(crate::jobwire::to_proto(job)),
            file_id,
            to: to.into(),
            name: name.into(),
            rx: rx.unwrap_or_default().into(),
            paused,
        })
        .await
        .map_err(|e| refused("submit", e))?;
    Ok(reply.into_inner())
}

pub async fn list(client: &mut Client) -> Result<Vec<pb::JobInfo>> {
    Ok(client
        .list(pb::ListRequest {})
        .await
        .map_err(|e| refused("list", e))?
        .into_inner()
        .jobs)
}

/// Changes job `id`; `at_ns`: its offset from the job's start (0: as
/// soon as it can).
pub async fn change(
    client: &mut Client,
    id: u64,
    change: pb::change_request::Change,
    at_ns: u64,
) -> Result<pb::JobInfo> {
    Ok(client
        .change(pb::ChangeRequest {
            id,
            change: Some(change),
            at_ns,
        })
        .await
        .map_err(|e| refused(&format!("job {id}"), e))?
        .into_inner())
}

pub async fn stop(client: &mut Client, id: u64) -> Result<pb::JobInfo> {
    Ok(client
        .stop(pb::JobRef { id })
        .await
        .map_err(|e| refused(&format!("job {id}"), e))?
        .into_inner())
}

/// Job `id`'s updates as they come, to `each`, until its end (returned).
pub async fn watch(
    client: &mut Client,
    id: u64,
    mut each: impl FnMut(&str),
) -> Result<pb::update::Kind> {
    let mut s = client
        .watch(pb::JobRef { id })
        .await
        .map_err(|e| refused(&format!("job {id}"), e))?
        .into_inner();
    while let Some(u) = s
        .message()
        .await
        .map_err(|e| refused(&format!("job {id}"), e))?
    {
        match u.kind {
            Some(pb::update::Kind::Stats(line)) => each(&line),
            Some(end) => return Ok(end),
            None => {}
        }
    }
    Err(ControlError::Environment(format!(
        "job {id}: the worker ended the stream before the job's end"
    )))
}
