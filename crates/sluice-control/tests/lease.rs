//! A worker serves only what it was given, to the controller holding its
//! lease: real gRPC over the worker's real unix socket, in process.

use sluice_control::control::{connect, SessionKey};
use sluice_control::pb::worker_client::WorkerClient;
use sluice_control::pb::{self, FileChunk};
use sluice_control::worker::{serve, WorkerConfig, WorkerListen};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

type Client = WorkerClient<InterceptedService<Channel, SessionKey>>;

/// A worker on a unix socket in `dir`, uploads capped at `max_upload`.
fn worker(rt: &tokio::runtime::Runtime, dir: &Path, max_upload: u64, idle: Duration) -> PathBuf {
    let sock = dir.join("worker.sock");
    let cfg = WorkerConfig {
        listen: WorkerListen::Unix(sock.clone()),
        tls: None,
        clock_offset_ns: 0,
        clock_drift_ppm: 0.0,
        exe: PathBuf::from("/bin/false"),
        max_upload,
        work_dir: Some(dir.to_path_buf()),
        lease_idle: idle,
        local: None,
        clock_service: sluice_control::clocksvc::ClockServiceSpec::None,
    };
    rt.spawn(async move { serve(cfg).await.unwrap() });
    for _ in 0..500 {
        if sock.exists() {
            return sock;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the worker never bound {}", sock.display());
}

async fn client(sock: &Path) -> (Client, SessionKey) {
    let ch = connect(&format!("unix:{}", sock.display()), None)
        .await
        .unwrap();
    let lease = SessionKey::default();
    (WorkerClient::with_interceptor(ch, lease.clone()), lease)
}

async fn register(c: &mut Client, lease: &SessionKey, name: &str) -> Result<(), tonic::Status> {
    let r = c
        .register(pb::RegisterRequest { name: name.into() })
        .await?
        .into_inner();
    assert_eq!(r.session.len(), 32, "{r:?}");
    lease.set(&r.session).unwrap();
    Ok(())
}

async fn upload(c: &mut Client, name: &str, data: Vec<u8>) -> Result<String, tonic::Status> {
    let chunks = vec![FileChunk {
        name: name.into(),
        data,
    }];
    Ok(c.upload(tokio_stream::iter(chunks)).await?.into_inner().id)
}

/// The files under the worker's private directory inside `dir`.
fn uploads(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if !e
            .file_name()
            .to_string_lossy()
            .starts_with("sluice-worker-")
        {
            continue;
        }
        let mode = e.metadata().unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", e.path().display());
        for l in std::fs::read_dir(e.path()).unwrap().flatten() {
            for f in std::fs::read_dir(l.path()).unwrap().flatten() {
                out.push(f.path());
            }
        }
    }
    out
}

#[test]
fn a_lease_belongs_to_the_controller_that_registered() {
    let d = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sock = worker(&rt, d.path(), 1 << 20, Duration::from_secs(30));
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    rt.block_on(async {
        let (mut a, la) = client(&sock).await;
        let (mut b, lb) = client(&sock).await;
        register(&mut a, &la, "alice\nsluice worker: forged")
            .await
            .unwrap();
        // Held: another controller cannot register, nor act unregistered
        // or with a made-up session.
        let e = register(&mut b, &lb, "bob").await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unavailable, "{e:?}");
        assert!(e.message().contains("alice\\nsluice worker"), "{e:?}");
        let map = pb::PortMap {
            ports: vec![pb::GlobalPort {
                id: 0,
                worker: "bob".into(),
                sink: "null".into(),
            }],
        };
        for forged in [None, Some("00000000000000000000000000000000")] {
            if let Some(f) = forged {
                lb.set(f).unwrap();
            }
            let e = b.publish_ports(map.clone()).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
            let e = b.stop(pb::StopRequest {}).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
            let e = upload(&mut b, "x.pcap", vec![1]).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
        }
        // The holder's own port map may name only sinks it announced.
        let mut own = map.clone();
        own.ports[0].worker = "alice\\nsluice worker: forged".into();
        own.ports[0].sink = "pcap:/etc/passwd".into();
        let e = a.publish_ports(own.clone()).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        own.ports[0].sink = "null".into();
        a.publish_ports(own).await.unwrap();
        // Uploads: plain names only, each once, capped in all; a refused
        // one leaves no file behind.
        assert_eq!(
            upload(&mut a, "job.pcap", vec![0; 1000]).await.unwrap(),
            "job.pcap"
        );
        for bad in ["../x.pcap", ".hidden", "a/b", ""] {
            let e = upload(&mut a, bad, vec![1]).await.unwrap_err();
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{bad}: {e:?}");
        }
        let e = upload(&mut a, "job.pcap", vec![1]).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::AlreadyExists, "{e:?}");
        let e = upload(&mut a, "big.pcap", vec![0; 1 << 20])
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e:?}");
        let names: Vec<_> = uploads(d.path())
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["job.pcap"]);
        // A task naming a file of the host, or a job that does, is refused
        // by its types and echoes no content. (A job has no field for a
        // sink, an output or a path: `jobwire`'s and `sluice-job`'s tests.)
        let task = |file: &str, job: &str| pb::Task {
            file_id: file.into(),
            job: Some(serde_json::from_str(job).unwrap()),
            port: 0,
            start_ns: i64::MAX / 2,
            deadline_ns: i64::MAX / 2,
            ..Default::default()
        };
        for (t, want) in [
            (task("/etc/shadow", SERIES), "no uploaded file"),
            (
                task("job.pcap", r#"{"work":{"series":{"map":"/etc/shadow"}}}"#),
                "plain name",
            ),
            (
                task("job.pcap", r#"{"work":{"series":{"map":"m.csv"}}}"#),
                "no uploaded file 'm.csv'",
            ),
            (
                task("job.pcap", r#"{"work":{"replay":{"ttl":"++1"}}}"#),
                "expected N, +N or -N",
            ),
            (
                pb::Task {
                    job: None,
                    ..task("job.pcap", "{}")
                },
                "holds no job",
            ),
        ] {
            let e = a.run(t).await.expect_err("refused");
            assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
            assert!(e.message().contains(want), "{e:?}");
            assert!(!e.message().contains("root:"), "{e:?}");
        }
        // Released: its uploads are gone and another controller may
        // register.
        a.release(pb::ReleaseRequest {}).await.unwrap();
        assert!(uploads(d.path()).is_empty());
        let e = a.publish_ports(map.clone()).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
        register(&mut b, &lb, "bob").await.unwrap();
        b.publish_ports(map).await.unwrap();
    });
}

/// A series job with no options.
const SERIES: &str = r#"{"work":{"series":{}}}"#;

#[test]
fn an_unused_lease_expires_and_its_uploads_go() {
    let d = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let sock = worker(&rt, d.path(), 1 << 20, Duration::from_secs(2));
    rt.block_on(async {
        let (mut a, la) = client(&sock).await;
        register(&mut a, &la, "a").await.unwrap();
        upload(&mut a, "job.pcap", vec![0; 100]).await.unwrap();
        assert_eq!(uploads(d.path()).len(), 1);
        // Not run: the sweep removes it once the lease is idle.
        let mut waited = Duration::ZERO;
        while !uploads(d.path()).is_empty() {
            assert!(waited < Duration::from_secs(30), "never removed");
            tokio::time::sleep(Duration::from_millis(100)).await;
            waited += Duration::from_millis(100);
        }
        let e = a.stop(pb::StopRequest {}).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
        let (mut b, lb) = client(&sock).await;
        register(&mut b, &lb, "b").await.unwrap();
    });
}
