//! The controller's stages against an in-process worker on a unix socket
//! (its job a script that answers as `sluice` would): register, ports,
//! clocks, upload, start and gather, each on its own.

use super::results::totals;
use super::session::{measure_clocks, publish_ports, register_all, same_version, upload_all};
use super::*;
use crate::plan::Plan;
use crate::worker::{serve, WorkerConfig, WorkerListen};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A worker serving on a socket in `dir`, its jobs run by `exe`.
async fn worker(dir: &Path, exe: &Path) -> String {
    let sock = dir.join("w.sock");
    let cfg = WorkerConfig {
        listen: WorkerListen::Unix(sock.clone()),
        tls: None,
        clock_offset_ns: 0,
        clock_drift_ppm: 0.0,
        exe: exe.to_path_buf(),
        max_upload: 1 << 20,
        clock_service: crate::clocksvc::ClockServiceSpec::None,
        work_dir: Some(dir.to_path_buf()),
        lease_idle: Duration::from_secs(30),
        local: None,
    };
    tokio::spawn(serve(cfg));
    for _ in 0..500 {
        if sock.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    format!("unix:{}", sock.display())
}

/// A job script: one statistics line, then `summary` written where the
/// worker's job file (`job FILE`) says. With `summary` empty it fails as bad input and
/// says so in a failure line; with `summary` "crash" it dies with only
/// prose on stderr.
fn job(dir: &Path, summary: &str) -> PathBuf {
    let p = dir.join("job.sh");
    let body = if summary.is_empty() {
        "[ -n \"$SLUICE_FAILURE_JSON\" ] && echo '{\"schema\":\"sluice.failure/1\",\"exit\":2,\"fault\":\"usage\",\"error\":\"--bogus is not an option\"}'\n\
         echo 'error: prose a worker should not need' >&2; exit 2"
            .to_string()
    } else if summary == "crash" {
        "echo 'thread main panicked' >&2; exit 101".to_string()
    } else {
        format!(
            "[ \"$1\" = job ] || exit 3\n\
             out=$(sed -n 's/.*\"summary_json\":\"\\([^\"]*\\)\".*/\\1/p' \"$2\")\n\
             echo '{{\"packets\": 3, \"pps\": 10}}'\n\
             echo '{summary}' > \"$out\""
        )
    };
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// A worker whose job script keeps the job file the worker wrote for it
/// (in `kept.json`) and answers with a summary: (address, kept file).
async fn keeping_worker(dir: &Path) -> (String, PathBuf) {
    let exe = dir.join("job.sh");
    let kept = dir.join("kept.json");
    std::fs::write(
        &exe,
        format!(
            "#!/bin/sh\ncp \"$2\" {}\n\
             out=$(sed -n 's/.*\"summary_json\":\"\\([^\"]*\\)\".*/\\1/p' \"$2\")\n\
             echo '{{\"packets\": 1}}' > \"$out\"\n",
            kept.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (worker(dir, &exe).await, kept)
}

fn config(dir: &Path, address: &str, to: &str) -> ControlConfig {
    let file = dir.join("t.pcap");
    std::fs::write(&file, b"the job's input").unwrap();
    ControlConfig {
        plan: Plan {
            workers: vec![crate::plan::WorkerEntry {
                name: "w1".into(),
                address: address.into(),
                to: to.into(),
                also_to: Vec::new(),
                rx: None,
            }],
            command: pb::Command::Replay,
            file,
            files: Vec::new(),
            args: Vec::new(),
            duration_ns: 200_000_000,
            split: pb::Split::default(),
        },
        job: sluice_job::RemoteJob {
            work: sluice_job::Work::Replay(Default::default()),
            send: Default::default(),
        },
        tls: None,
        start_in: Some(Duration::from_millis(300)),
        max_skew_ns: 1_000_000_000,
        on_loss: OnLoss::Abort,
        correct: true,
        rounds: 4,
        stop: Arc::default(),
        on_stats: Box::new(|_, _, _| {}),
        clock_every: None,
        on_clock: Box::new(|_, _, _| {}),
        on_status: Box::new(|_| {}),
    }
}

/// A worker whose jobs answer with `summary` (see [`job`]), and a
/// controller's config sending through its port `to`; the directory holds
/// both and goes with the test.
async fn setup(to: &str, summary: &str) -> (tempfile::TempDir, ControlConfig) {
    let d = tempfile::tempdir().unwrap();
    let addr = worker(d.path(), &job(d.path(), summary)).await;
    let cfg = config(d.path(), &addr, to);
    (d, cfg)
}

#[tokio::test]
async fn register_takes_the_lease_and_a_second_controller_is_turned_away() {
    let (_d, cfg) = setup("null", "{}").await;
    let mut conns = Vec::new();
    register_all(&cfg, &mut conns).await.unwrap();
    assert_eq!(conns.len(), 1);
    let r = &conns[0].result;
    assert_eq!(
        (r.name.as_str(), r.port, r.sink.as_str()),
        ("w1", 0, "null")
    );
    assert_eq!(r.clock_service, None, "no clock service was asked for");
    let mut others = Vec::new();
    let e = register_all(&cfg, &mut others).await.unwrap_err();
    assert!(e.is_environment(), "{e}");
    release_all(&mut conns).await;
    // Released: the next controller gets it.
    register_all(&cfg, &mut others).await.unwrap();
    release_all(&mut others).await;
}

#[tokio::test]
async fn a_port_the_worker_lacks_is_refused_naming_what_it_has() {
    let (_d, cfg) = setup("afpacket:sl-no-such-if", "{}").await;
    let mut conns = Vec::new();
    let e = register_all(&cfg, &mut conns)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no port afpacket:sl-no-such-if (it has null"),
        "{e}"
    );
    release_all(&mut conns).await;
}

#[tokio::test]
async fn the_measured_offset_lies_within_its_bound_and_max_skew_refuses() {
    let (_d, mut cfg) = setup("null", "{}").await;
    let mut conns = Vec::new();
    register_all(&cfg, &mut conns).await.unwrap();
    publish_ports(&mut conns).await.unwrap();
    let rtt = measure_clocks(&cfg, &mut conns).await.unwrap();
    let r = &conns[0].result;
    // One clock on both ends: the true offset, 0, is within ± half the
    // minimum round trip by the four-timestamp formula.
    assert!(
        r.offset_ns.unsigned_abs() <= r.offset_uncertainty_ns + 1,
        "{r:?}"
    );
    assert_eq!(rtt, 2 * r.offset_uncertainty_ns);
    cfg.max_skew_ns = 0;
    let e = measure_clocks(&cfg, &mut conns).await.unwrap_err();
    assert!(e.to_string().contains("above --max-skew 0 ns"), "{e}");
    release_all(&mut conns).await;
}

#[tokio::test]
async fn uploads_land_under_their_plain_names() {
    let (_d, cfg) = setup("null", "{}").await;
    let mut conns = Vec::new();
    register_all(&cfg, &mut conns).await.unwrap();
    let ids = upload_all(&cfg.plan, &mut conns).await.unwrap();
    assert_eq!(ids, vec!["t.pcap".to_string()]);
    release_all(&mut conns).await;
}

#[tokio::test]
async fn a_run_gathers_each_workers_statistics_and_summary() {
    let summary =
        r#"{"packets": 7, "frame_bytes": 448, "late": 1, "dropped": 2, "duration_s": 0.5}"#;
    let (_d, mut cfg) = setup("null", summary).await;
    let stats = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = stats.clone();
    cfg.on_stats = Box::new(move |w, port, v| {
        seen.lock()
            .unwrap()
            .push((w.to_string(), port, v["packets"].as_u64()));
    });
    let s = run(cfg).await.unwrap();
    let w = &s.workers[0];
    assert_eq!(w.error, None);
    assert_eq!(w.last_packets, Some(3));
    assert!(w.start_ns.is_some(), "the worker accepted a start");
    assert_eq!(
        (s.total.finished, s.total.packets, s.total.frame_bytes),
        (1, 7, 448)
    );
    assert_eq!((s.total.late, s.total.dropped), (1, 2));
    assert_eq!(s.total.pps, Some(14.0));
    assert_eq!(*stats.lock().unwrap(), vec![("w1".to_string(), 0, Some(3))]);
}

#[tokio::test]
async fn a_job_refused_as_bad_input_says_why_and_counts_nothing() {
    let (_d, cfg) = setup("null", "").await;
    let s = run(cfg).await.unwrap();
    let w = &s.workers[0];
    assert!(w.refused, "{w:?}");
    let e = w.error.as_deref().unwrap_or_default();
    assert!(e.contains("worker 'w1': --bogus is not an option"), "{e}");
    assert!(!e.contains("prose"), "{e}");
    assert_eq!((s.total.finished, s.total.packets), (0, 0));
}

#[tokio::test]
async fn a_job_that_dies_without_a_failure_line_is_failed_with_its_stderr() {
    let (_d, cfg) = setup("null", "crash").await;
    let s = run(cfg).await.unwrap();
    let w = &s.workers[0];
    assert!(!w.refused, "{w:?}");
    let e = w.error.as_deref().unwrap_or_default();
    assert!(e.contains("thread main panicked (exit status: 101)"), "{e}");
    assert_eq!((s.total.finished, s.total.packets), (0, 0));
}

/// `Task` has no seed: the field was never set (always 0) while its
/// comment called it the shared seed. Workers share a seed through the
/// job they all run (the profile's or session's `seed`, or `--seed` in the
/// plan's args); the number and the name stay reserved, and a task from an
/// older controller that set field 11 still decodes.
#[test]
fn a_task_carries_no_seed_and_keeps_its_number_reserved() {
    use prost::Message;
    let proto = include_str!("../../../../proto/sluice/control/v1/worker.proto");
    let start = proto.find("message Task {").expect("Task is declared");
    let end = proto[start..].find("\n}\n").expect("Task ends");
    let task = &proto[start..start + end];
    let lines: Vec<&str> = task
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .collect();
    assert!(!lines.iter().any(|l| l.contains(" seed = ")), "{task}");
    assert!(
        lines.contains(&"reserved 11;") && lines.contains(&"reserved \"seed\";"),
        "{task}"
    );
    let mut old = pb::Task {
        file_id: "f".into(),
        ..Default::default()
    }
    .encode_to_vec();
    old.extend([11 << 3, 7]);
    let t = pb::Task::decode(old.as_slice()).expect("an old task decodes");
    assert_eq!(t.file_id, "f");
}

/// A worker whose connection broke mid-run (killed, or frozen past the
/// keep-alive) is lost, not merely failed, and what it last reported is
/// counted in the totals, which are then marked as lower bounds.
#[test]
fn a_lost_worker_is_lost_and_counted_at_least_as_it_last_reported() {
    let d = tempfile::tempdir().unwrap();
    let mut cfg = config(d.path(), "unix:/nowhere", "null");
    let entry = |name: &str| crate::plan::WorkerEntry {
        name: name.into(),
        address: "unix:/nowhere".into(),
        to: "null".into(),
        also_to: Vec::new(),
        rx: None,
    };
    let reply = pb::RegisterReply::default();
    let mut done = WorkerResult::registered(&entry("w0"), 0, &reply);
    let mut frozen = WorkerResult::registered(&entry("w1"), 1, &reply);
    let mut g = Gather::new(2, i64::MAX / 2, Vec::new());
    let line = r#"{"schema":"sluice.interval/1","t":0.5,"packets":21,"frame_bytes":1344,"late":1,"dropped":0}"#;
    g.on_event(&mut cfg, &mut frozen, 1, Event::Stats(line.into()));
    g.on_event(
        &mut cfg,
        &mut done,
        0,
        Event::Finished(
            r#"{"packets": 100, "frame_bytes": 6400, "late": 0, "dropped": 0, "duration_s": 1.0}"#
                .into(),
        ),
    );
    g.on_event(
        &mut cfg,
        &mut frozen,
        1,
        Event::lost("its connection broke: keep-alive timed out"),
    );
    assert!(frozen.lost, "{frozen:?}");
    assert_eq!(frozen.last_packets, Some(21));
    let e = frozen.error.as_deref().unwrap_or_default();
    assert!(
        e.contains("worker 'w1': lost: its connection broke")
            && e.contains("at least 21 packets sent"),
        "{e}"
    );
    let t = totals([(&done, &None), (&frozen, &g.last[1])].into_iter());
    assert_eq!(
        (t.workers, t.finished, t.lost, t.at_least),
        (2, 1, 1, true),
        "{t:?}"
    );
    assert_eq!((t.packets, t.frame_bytes, t.late), (121, 7744, 1), "{t:?}");
    let v = serde_json::to_value(&t).unwrap();
    assert_eq!(
        (&v["at_least"], &v["lost"]),
        (&Value::Bool(true), &Value::from(1))
    );
    // A job that failed on a live worker is not lost.
    let mut failed = WorkerResult::registered(&entry("w2"), 2, &reply);
    let mut g = Gather::new(1, i64::MAX / 2, Vec::new());
    g.on_event(&mut cfg, &mut failed, 0, Event::failed("exit status: 1"));
    assert!(!failed.lost && failed.error.is_some(), "{failed:?}");
    // Every worker finished: the totals are exact.
    let t = totals([(&done, &None)].into_iter());
    assert_eq!((t.packets, t.lost, t.at_least), (100, 0, false));
}

#[test]
fn a_worker_of_another_version_is_refused_naming_both() {
    assert!(same_version("w1", env!("CARGO_PKG_VERSION")).is_ok());
    let e = same_version("w1", "0.0.1-old").unwrap_err().to_string();
    assert!(
        e.contains("'w1'") && e.contains("0.0.1-old") && e.contains(env!("CARGO_PKG_VERSION")),
        "{e}"
    );
}

/// A split by components (the paper's §4.4): the controller decomposes
/// the profile once and the task carries the worker's components; a
/// worker refuses a task of that split without them, with them on
/// another split, and with values no controller writes.
#[tokio::test]
async fn a_split_by_components_ships_the_components_and_workers_check_them() {
    let d = tempfile::tempdir().unwrap();
    let (addr, kept) = keeping_worker(d.path()).await;
    let mut cfg = config(d.path(), &addr, "null");
    let profile = d.path().join("p.yaml");
    std::fs::write(
        &profile,
        "seed: 5\nduration: 200ms\nrate: 20k\nipd: {dist: poisson}\n",
    )
    .unwrap();
    cfg.plan.file = profile.clone();
    cfg.plan.command = pb::Command::Profile;
    cfg.plan.split = pb::Split::Components;
    let mut opts = sluice_job::profile::ProfileOpts {
        mode: sluice_job::profile::Mode::Fourier,
        queues: 2,
        ..Default::default()
    };
    opts.select.keep = Some(12);
    cfg.job.work = sluice_job::Work::Profile(opts);
    let s = run(cfg).await.unwrap();
    assert_eq!(s.workers[0].error, None, "{s:?}");
    let job: sluice_job::WorkerJob =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    let c = job.fourier.expect("the task carried components");
    // One worker: both queues, the 12 kept components between them, the
    // profile's seed, 200 bins of 1 ms.
    assert_eq!((c.queue_count, c.queues.len(), c.carried()), (2, 2, 12));
    assert_eq!(
        (c.seed, c.bins, c.sample_ns, c.kept),
        (5, 200, 1_000_000, 12)
    );
    let p = sluice_profile::Profile::load(&profile, 1.0).unwrap();
    let want =
        sluice_profile::Components::of(&p, 1_000_000, sluice_profile::Selection::Keep(12), 2, None)
            .unwrap();
    assert_eq!(c, want, "the controller's decomposition, bit for bit");

    // Tasks no controller of ours sends.
    let cfg = config(d.path(), &addr, "null");
    let mut conns = Vec::new();
    register_all(&cfg, &mut conns).await.unwrap();
    publish_ports(&mut conns).await.unwrap();
    let ids = upload_all(&cfg.plan, &mut conns).await.unwrap();
    let mut job = cfg.job.clone();
    job.work = sluice_job::Work::Profile(sluice_job::profile::ProfileOpts {
        mode: sluice_job::profile::Mode::Fourier,
        ..Default::default()
    });
    job.send.duration = Some(sluice_job::Nanos(200_000_000));
    let task = |split: pb::Split, fourier: Option<pb::Fourier>| pb::Task {
        file_id: ids[0].clone(),
        job: Some(crate::jobwire::to_proto(&job)),
        split: split as i32,
        start_ns: now_ns() + 5_000_000_000,
        deadline_ns: now_ns() + 10_000_000_000,
        share_count: 1,
        fourier,
        ..Default::default()
    };
    let mut bad = crate::jobwire::fourier_to_proto(&want.share(0, 1));
    bad.queues[1].components[0].k = 101;
    let shipped = crate::jobwire::fourier_to_proto(&want);
    for (t, says) in [
        (
            task(pb::Split::Components, None),
            "carries no Fourier components",
        ),
        (
            task(pb::Split::Packets, Some(shipped)),
            "with split COMPONENTS only",
        ),
        (
            task(pb::Split::Components, Some(bad)),
            "fourier.queues[1].components[0].k: 101",
        ),
    ] {
        let e = conns[0].client.run(t).await.expect_err(says);
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains(says), "{says}: {}", e.message());
    }
    release_all(&mut conns).await;
}

/// A worker with several generating ports gets them as `--also-to`; it
/// refuses further ports that are not its own, or for a job of one port.
#[tokio::test]
async fn a_worker_of_two_ports_gets_both_and_refuses_ports_not_its_own() {
    let d = tempfile::tempdir().unwrap();
    let (addr, kept) = keeping_worker(d.path()).await;
    let mut cfg = config(d.path(), &addr, "null");
    cfg.plan.workers[0].also_to = vec!["afpacket:lo".into()];
    cfg.plan.command = pb::Command::Profile;
    cfg.job.work = sluice_job::Work::Profile(Default::default());
    let s = run(cfg).await.unwrap();
    assert_eq!(s.workers[0].error, None, "{s:?}");
    assert_eq!(
        (s.workers[0].port, s.workers[0].also_to[0].port),
        (0, 1),
        "{s:?}"
    );
    let job: sluice_job::WorkerJob =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    assert_eq!(job.to.to_string(), "null");
    let also: Vec<String> = job.also_to.iter().map(|s| s.to_string()).collect();
    assert_eq!(also, ["afpacket:lo"]);

    let mut cfg = config(d.path(), &addr, "null");
    cfg.plan.workers[0].also_to = vec!["afpacket:lo".into()];
    let mut conns = Vec::new();
    register_all(&cfg, &mut conns).await.unwrap();
    publish_ports(&mut conns).await.unwrap();
    let ids = upload_all(&cfg.plan, &mut conns).await.unwrap();
    let task = |work: sluice_job::Work, also_ports: Vec<u32>| {
        let mut job = cfg.job.clone();
        job.work = work;
        job.send.duration = Some(sluice_job::Nanos(200_000_000));
        pb::Task {
            file_id: ids[0].clone(),
            job: Some(crate::jobwire::to_proto(&job)),
            start_ns: now_ns() + 5_000_000_000,
            deadline_ns: now_ns() + 10_000_000_000,
            share_count: 1,
            also_ports,
            ..Default::default()
        }
    };
    let profile = || sluice_job::Work::Profile(Default::default());
    for (t, says) in [
        (
            task(cfg.job.work.clone(), vec![1]),
            "a replay job sends by one port",
        ),
        (task(profile(), vec![7]), "port 7 is not in the port map"),
        (
            task(profile(), vec![0]),
            "also_ports[0]: port 0 is not another port",
        ),
    ] {
        let e = conns[0].client.run(t).await.expect_err(says);
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains(says), "{says}: {}", e.message());
    }
    release_all(&mut conns).await;
}

/// A correction needs a running job that takes them.
#[tokio::test]
async fn a_correction_without_a_job_that_takes_them_is_refused() {
    let (d, cfg) = setup("null", "{}").await;
    let mut conns = Vec::new();
    register_all(&cfg, &mut conns).await.unwrap();
    let c = &mut conns[0].client;
    let e = c
        .correct(pb::Correction { shift_ns: 1_000 })
        .await
        .expect_err("no job runs");
    assert_eq!(e.code(), tonic::Code::FailedPrecondition, "{e:?}");
    assert!(
        e.message().contains("no job that takes clock corrections"),
        "{e:?}"
    );
    release_all(&mut conns).await;
    drop(d);
}
