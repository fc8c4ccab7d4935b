//! `sluice inject`: frames described by clients, sent at their times and
//! acknowledged with their departures.

use crate::dest::Dest;
use crate::plan::SendPlan;
use crate::{bad_input, Failure};
use anyhow::anyhow;
use sluice_engine::run_source;
use sluice_job::command::InjectArgs;
use sluice_live::inject::{InjectConfig, InjectSource, Listen, Listener, LoggedAck, RequestLog};
use sluice_sink::SinkSpec;
use sluice_sys::packet_rx::PacketRx;

/// The live source's plan (`run::prepare`).
pub fn prepare(a: &mut InjectArgs) -> Result<crate::plan::Prepared<'_>, Failure> {
    let a = &*a;
    a.opts.check().map_err(|e| bad_input(anyhow!(e)))?;
    if a.run.send.threads != 1 {
        return Err(bad_input(anyhow!(
            "inject runs one TX thread: acknowledgements follow the order frames leave in"
        )));
    }
    let mut plan = SendPlan::new(&a.run, false)?.rate(sluice_job::rate::Nominal::None(
        "inject (frames leave when their clients say)",
    ))?;
    if let Some(p) = &a.log_requested {
        plan = plan.writes(p);
    }
    // The token is read (or made): no output may be it.
    if let Some(f) = &a.token_file {
        plan = plan.reads(f);
    }
    // Checked before the listener is bound.
    plan.check_files()?;
    let src_mac = match (&a.opts.src_mac, &a.run.to) {
        (Some(m), _) => m.0,
        (None, to @ (SinkSpec::AfPacket(i) | SinkSpec::Xdp(i) | SinkSpec::Iface(i))) => {
            sluice_sys::tap::interface_mac(i).map_err(|e| bad_input(anyhow!("--to {to}: {e}")))?
        }
        _ => [2, 0, 0, 0, 0, 1],
    };
    let dst_mac = a.opts.dst_mac.map_or([0xff; 6], |m| m.0);
    let rx = a
        .return_iface
        .as_deref()
        .map(|i| {
            PacketRx::open(i)
                .map_err(|e| crate::open_failure(anyhow!(e).context(format!("--return {i}"))))
        })
        .transpose()?;
    let token = match (&a.listen, &a.token_file, a.insecure_tcp) {
        (Listen::Tcp(_), Some(f), _) => Some(crate::token::read_or_make(f, "--token-file")?),
        (Listen::Tcp(_), None, false) => {
            return Err(bad_input(anyhow!(
                "--listen {}: every local user can connect to a TCP port: give \
                 --token-file FILE (a secret clients send in HELLO; made if missing) \
                 or, knowingly, --insecure-tcp",
                a.listen
            )))
        }
        (Listen::Unix(_), Some(_), _) | (Listen::Unix(_), None, true) => {
            return Err(bad_input(anyhow!(
                "--token-file and --insecure-tcp are for tcp: (a unix socket checks its peer's uid)"
            )))
        }
        _ => None,
    };
    let listener = Listener::bind(&a.listen).map_err(crate::open_failure)?;
    let bound = listener.bound();
    if matches!(&a.listen, Listen::Tcp(t) if t.port() == 0) {
        // The port the kernel chose: clients cannot find it otherwise.
        eoutln!("sluice: listening on {bound}");
    }
    let cfg = InjectConfig {
        queue_limit: usize::try_from(a.opts.queue_limit).unwrap_or(usize::MAX),
        window: a.opts.window,
        sessions: a.opts.sessions,
        macs: (src_mac, dst_mac),
        token,
        queue_bytes: usize::try_from(
            a.opts
                .queue_bytes
                .unwrap_or_else(|| sluice_sys::mem::default_budget().min(256 << 20)),
        )
        .unwrap_or(usize::MAX),
        max_clients: usize::try_from(a.opts.max_clients)
            .unwrap_or(usize::MAX)
            .max(1),
        late_threshold_ns: a.run.send.late_threshold.0,
        lead_ns: a.opts.lead.0,
    };
    let mut source = InjectSource::new(listener, cfg);
    if let Some(p) = &a.log_requested {
        source = source.with_log(Box::new(CsvLog::open(p)?));
    }
    if let Some(rx) = rx {
        source = source.with_return(rx);
    }
    if !a.run.quiet {
        let access = match &a.listen {
            Listen::Unix(_) => "a unix socket only its owner may use",
            Listen::Tcp(_) if token.is_some() => "loopback, clients need the token",
            Listen::Tcp(_) => "loopback only, unauthenticated: --insecure-tcp",
        };
        eoutln!(
            "sluice: injecting to {} for clients on {bound} ({access}; Ctrl-C stops)",
            a.run.to
        );
    }
    Ok(crate::plan::Prepared {
        plan,
        go: Box::new(|sinks, cfg, progress| run_source(source, sinks, cfg, progress)),
    })
}

/// `--log-requested`: CSV, kept only once the run has ended (a failed
/// run never replaces a good log).
struct CsvLog(Option<std::io::BufWriter<Dest>>);

impl CsvLog {
    fn open(spec: &str) -> Result<Self, Failure> {
        use std::io::Write;
        let mut w = std::io::BufWriter::new(Dest::open(spec)?);
        writeln!(w, "session,seq,requested_ns,departure_ns,status")
            .map_err(|e| anyhow!("--log-requested {spec}: {e}"))?;
        Ok(CsvLog(Some(w)))
    }
}

impl RequestLog for CsvLog {
    fn record(&mut self, l: &LoggedAck) -> std::io::Result<()> {
        use std::io::Write;
        match &mut self.0 {
            Some(w) => writeln!(
                w,
                "{},{},{},{},{}",
                l.session,
                l.seq,
                l.requested,
                l.departure,
                l.status.name()
            ),
            None => Ok(()),
        }
    }

    fn finish(&mut self) -> std::io::Result<()> {
        match self.0.take() {
            Some(w) => w.into_inner().map_err(|e| e.into_error())?.commit(),
            None => Ok(()),
        }
    }
}
