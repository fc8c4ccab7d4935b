//! Feeds hostile control-plane messages to a real worker, in process, over
//! its own unix socket: each input is a sequence of calls (a byte picks
//! the call, a length byte and that many bytes are its protobuf request,
//! decoded leniently) sent with whatever lease the sequence got. The same
//! bytes are parsed as a plan and as job options. Every call must answer
//! (a reply or a status) within seconds, the worker must never panic, and
//! it may never run anything but the job binary it was given (here
//! `/bin/false`: nothing is sent).
#![no_main]

use libfuzzer_sys::fuzz_target;
use prost::Message;
use sluice_control::control::{connect, SessionKey};
use sluice_control::pb::{self, worker_client::WorkerClient};
use sluice_control::worker::{serve, WorkerConfig, WorkerListen};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

struct World {
    rt: tokio::runtime::Runtime,
    sock: PathBuf,
    _dir: tempfile::TempDir,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        // As in sluice's own binary (Rust's runtime does it before main,
        // libFuzzer's main does not): a peer that closed its socket is an
        // error to the writer, not a signal that ends the process.
        // SAFETY: setting a signal's disposition to SIG_IGN installs no
        // handler and touches no memory; done once, before any thread.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        }
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("w.sock");
        let rt = tokio::runtime::Runtime::new().unwrap();
        let cfg = WorkerConfig {
            listen: WorkerListen::Unix(sock.clone()),
            tls: None,
            clock_offset_ns: 0,
            clock_drift_ppm: 0.0,
            exe: PathBuf::from("/bin/false"),
            max_upload: 1 << 20,
            clock_service: sluice_control::clocksvc::ClockServiceSpec::None,
            work_dir: Some(dir.path().to_path_buf()),
            lease_idle: Duration::from_secs(30),
            local: None,
        };
        rt.spawn(async move { serve(cfg).await.unwrap() });
        while !sock.exists() {
            std::thread::sleep(Duration::from_millis(5));
        }
        World {
            rt,
            sock,
            _dir: dir,
        }
    })
}

async fn calls(sock: &Path, data: &[u8]) {
    let ch = connect(&format!("unix:{}", sock.display()), None)
        .await
        .expect("the worker answers");
    let lease = SessionKey::default();
    let mut c = WorkerClient::with_interceptor(ch, lease.clone());
    let mut rest = data;
    while rest.len() >= 2 {
        let (kind, len) = (rest[0], usize::from(rest[1]));
        let end = (2 + len).min(rest.len());
        let body = &rest[2..end];
        rest = &rest[end..];
        match kind % 7 {
            0 => {
                let name = String::from_utf8_lossy(body).into_owned();
                if let Ok(r) = c.register(pb::RegisterRequest { name }).await {
                    let _ = lease.set(&r.into_inner().session);
                }
            }
            1 => {
                if let Ok(m) = pb::PortMap::decode(body) {
                    let _ = c.publish_ports(m).await;
                }
            }
            2 => {
                if let Ok(m) = pb::FileChunk::decode(body) {
                    let _ = c.upload(tokio_stream::iter(vec![m])).await;
                }
            }
            3 => {
                if let Ok(mut t) = pb::Task::decode(body) {
                    // A start in reach: the job (/bin/false) ends at once.
                    t.start_ns = sluice_control::now_ns() + 1_000_000;
                    t.deadline_ns = t.start_ns + 1_000_000_000;
                    if let Ok(s) = c.run(t).await {
                        let mut s = s.into_inner();
                        while let Ok(Some(_)) = s.message().await {}
                    }
                }
            }
            4 => {
                let _ = c.stop(pb::StopRequest {}).await;
            }
            5 => {
                let _ = c.release(pb::ReleaseRequest {}).await;
            }
            _ => {
                if let Ok(m) = pb::ClockRequest::decode(body) {
                    if let Ok(r) = c.clock(tokio_stream::iter(vec![m])).await {
                        let mut r = r.into_inner();
                        while let Ok(Some(_)) = r.message().await {}
                    }
                }
            }
        }
    }
    // The next input finds the worker free.
    let _ = c.release(pb::ReleaseRequest {}).await;
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = sluice_control::plan::parse("fuzz", text, Path::new("/nonexistent"));
        // A job from a peer: what its types take reads back the same,
        // and every upload it names is a plain name.
        if let Ok(job) = sluice_job::RemoteJob::from_json(text) {
            let again = sluice_job::RemoteJob::from_json(&job.to_json()).expect("reads back");
            assert_eq!(again, job);
            for u in job.uploads() {
                assert!(sluice_job::remote::plain_name(u.as_str()), "{u:?}");
            }
        }
    }
    let w = world();
    w.rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(20), calls(&w.sock, data))
            .await
            .expect("the worker answered every call in time");
    });
});
