//! sluice embedded in a program: a capture replayed into a pcap file at
//! ten times its recorded speed, through `sluice_run` alone (no `sluice`
//! binary, no command line), and the run's typed report printed.
//!
//!     cargo run -p sluice-run --example embed -- IN.pcap OUT.pcap
//!
//! The job is the same typed value a command line, a plan file or a
//! worker builds (`sluice_job::Job`); `run_job` prepares it (every check
//! the command line makes), runs it in this process and hands back its
//! `Report`: the summary `--summary-json` writes.

use sluice_job::command::{ReplayArgs, RunOpts};
use sluice_job::replay::ReplayOpts;
use sluice_job::{Job, SendOpts, SinkSpec};
use sluice_run::{run_job, Failure, Report};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Replays `input` into the pcap `output` at `multiplier` × its speed.
fn replay(input: PathBuf, output: PathBuf, multiplier: f64) -> Result<Report, Failure> {
    let mut run = RunOpts::new(SinkSpec::Pcap(output), SendOpts::default());
    run.quiet = true;
    let opts = ReplayOpts {
        multiplier: Some(multiplier),
        ..ReplayOpts::default()
    };
    let job = Job::Replay(ReplayArgs::of(vec![input], opts, run));
    // Set `stop` from any thread to end the run early (its report still
    // comes back, marked interrupted).
    let stop = Arc::new(AtomicBool::new(false));
    run_job(job, stop, None)?.report()
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = &args[..] else {
        eprintln!("usage: embed IN.pcap OUT.pcap");
        return std::process::ExitCode::from(2);
    };
    match replay(input.into(), output.into(), 10.0) {
        Ok(r) => {
            let s = &r.summary;
            println!(
                "{} packets, {} bytes in {:.3} s; send-time error p99 {}",
                s.packets,
                s.bytes,
                s.duration_s,
                s.eps
                    .as_ref()
                    .map_or("-".to_string(), |e| format!("{} ns", e.percentiles.p99_ns))
            );
            match serde_json::to_string_pretty(&r.document()) {
                Ok(j) => println!("{j}"),
                Err(e) => eprintln!("embed: {e}"),
            }
            std::process::ExitCode::SUCCESS
        }
        Err(f) => {
            eprintln!("embed: {:#}", f.error);
            std::process::ExitCode::from(f.code)
        }
    }
}

/// The example runs in the tests: the trace's every packet reaches the
/// output, byte for byte, and the report counts them.
#[test]
fn a_program_replays_a_trace_into_a_pcap_and_reads_its_report() {
    let root = sluice_testkit::repo_root();
    let input = root.join("testdata/traces/libtrace__100_packets.pcap");
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.pcap");
    let r =
        replay(input.clone(), output.clone(), 1000.0).unwrap_or_else(|f| panic!("{:#}", f.error));
    assert_eq!(r.summary.packets, 100);
    assert!(!r.summary.interrupted);
    let frames = |p: &std::path::Path| -> Vec<Vec<u8>> {
        let mut rd = sluice_capture::CaptureReader::open(p).unwrap();
        let mut out = Vec::new();
        while let Some(pkt) = rd.next_packet().unwrap() {
            out.push(pkt.data.to_vec());
        }
        out
    };
    assert_eq!(frames(&output), frames(&input));
    assert_eq!(
        r.summary.bytes,
        frames(&input).iter().map(|f| f.len() as u64).sum::<u64>()
    );
}
