//! Sinks open themselves: a [`SinkSpec`] and the run's [`SinkOptions`]
//! are checked against each other before anything opens, name the files
//! they will write, and open one sink per TX thread. A new sink option is
//! a field here, its use in the backend, and its declaration on the
//! command line (`sluice_job::SendOpts::sink_options`).

use crate::{
    AfPacketSink, LaunchTime, NullSink, PcapSink, Sink, SinkError, SinkSpec, TxMode, UdpSink,
    XdpMode, XdpSink,
};
use std::path::{Path, PathBuf};

/// Most TX threads (and so sinks) a run may have.
pub const MAX_THREADS: usize = 256;

/// What opens the sinks of a run besides the spec.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SinkOptions {
    /// TX threads: one sink each.
    pub threads: usize,
    /// How frames reach an afpacket interface.
    pub tx_mode: TxMode,
    /// TCP and UDP checksums left to the device (afpacket).
    pub csum_offload: bool,
    /// How an xdp interface is bound.
    pub xdp_mode: XdpMode,
    /// An xdp sink's interface queue per TX thread (default: thread k on
    /// queue k).
    pub tx_queues: Option<Vec<usize>>,
    /// Departures timed by the NIC.
    pub launch_time: LaunchTime,
    /// Bytes an xdp sink keeps room for in its UMEM, for the frames of a
    /// preloaded trace: placed once, then sent with no copy.
    pub xdp_keep: u64,
}

impl SinkSpec {
    /// `pcap:DIR/` (a path ending in `/`): one file per TX thread,
    /// `DIR/tx-K.pcap`, written by that thread alone.
    fn pcap_dir(p: &Path) -> bool {
        p.as_os_str().as_encoded_bytes().ends_with(b"/")
    }

    /// The pcap file TX thread `k` writes under `pcap:P`.
    fn pcap_path(p: &Path, k: usize) -> PathBuf {
        if Self::pcap_dir(p) {
            p.join(format!("tx-{k}.pcap"))
        } else {
            p.to_path_buf()
        }
    }

    /// The files `threads` sinks of this spec write (none but for pcap).
    pub fn outputs(&self, threads: usize) -> Vec<PathBuf> {
        match self {
            SinkSpec::Pcap(p) => (0..threads).map(|k| Self::pcap_path(p, k)).collect(),
            _ => Vec::new(),
        }
    }

    /// Checks the options against this sink before anything opens; the
    /// error names the option.
    pub fn check(&self, o: &SinkOptions) -> Result<(), String> {
        if o.threads == 0 || o.threads > MAX_THREADS {
            return Err(format!("--threads must be between 1 and {MAX_THREADS}"));
        }
        if let SinkSpec::Pcap(p) = self {
            if o.threads > 1 && !Self::pcap_dir(p) {
                return Err(
                    "--threads > 1 needs a network or null sink, or pcap:DIR/ (one file per TX thread): one pcap file cannot take several writers".into()
                );
            }
            if Self::pcap_dir(p) && !p.is_dir() {
                return Err(format!(
                    "--to pcap:{}: not a directory (pcap:DIR/ writes DIR/tx-K.pcap per TX thread)",
                    p.display()
                ));
            }
        }
        if let Some(q) = &o.tx_queues {
            if !matches!(self, SinkSpec::Xdp(_) | SinkSpec::Iface(_)) {
                return Err("--tx-queues needs an xdp:IFACE sink".into());
            }
            if q.len() != o.threads {
                return Err(format!(
                    "--tx-queues names {} queue(s) for {} TX thread(s): give one per thread",
                    q.len(),
                    o.threads
                ));
            }
            let mut seen = q.clone();
            seen.sort_unstable();
            seen.dedup();
            if seen.len() != q.len() {
                return Err(
                    "--tx-queues names a queue twice: an interface queue takes one XDP socket"
                        .into(),
                );
            }
        }
        if o.csum_offload && !matches!(self, SinkSpec::AfPacket(_) | SinkSpec::Iface(_)) {
            return Err(
                "--csum-offload needs an afpacket:IFACE sink (a file or null has no device to compute checksums; xdp has no checksum offload on this path)".into()
            );
        }
        crate::launch::check(o.launch_time, self, o.xdp_mode)
    }

    /// The sink of TX thread `k` (the options were checked by
    /// [`SinkSpec::check`]).
    pub fn open(&self, k: usize, o: &SinkOptions) -> Result<Box<dyn Sink>, SinkError> {
        Ok(match self {
            SinkSpec::Null => Box::new(NullSink::default()),
            SinkSpec::Pcap(p) => Box::new(PcapSink::create(&Self::pcap_path(p, k))?),
            SinkSpec::AfPacket(iface) => {
                Box::new(AfPacketSink::open(iface, o.tx_mode, o.csum_offload)?)
            }
            SinkSpec::Xdp(iface) => Box::new(xdp(iface, k, o)?),
            SinkSpec::Iface(iface) => fastest(iface, k, o)?,
            SinkSpec::Udp(target) => Box::new(UdpSink::open(target)?),
        })
    }
}

/// The interface queue of TX thread `k` (`--tx-queues`, else queue k).
fn queue(k: usize, o: &SinkOptions) -> u32 {
    o.tx_queues
        .as_ref()
        .and_then(|q| q.get(k))
        .copied()
        .unwrap_or(k) as u32
}

/// TX thread `k`'s XDP socket, with room for kept frames where the UMEM
/// may grow by it (its pages are pinned: RLIMIT_MEMLOCK may refuse a large
/// one to a user without CAP_IPC_LOCK), else without (every frame copied).
fn xdp(iface: &str, k: usize, o: &SinkOptions) -> Result<XdpSink, SinkError> {
    XdpSink::open(iface, queue(k, o), o.xdp_mode, o.xdp_keep).or_else(|e| {
        if o.xdp_keep == 0 {
            return Err(e);
        }
        XdpSink::open(iface, queue(k, o), o.xdp_mode, 0)
    })
}

/// A bare `--to IFACE`: AF_XDP where the options allow it and the socket
/// binds, else the AF_PACKET ring; the sink's description says which and
/// why.
fn fastest(iface: &str, k: usize, o: &SinkOptions) -> Result<Box<dyn Sink>, SinkError> {
    let queues = sluice_sys::net::queues(iface, "tx").unwrap_or(1).max(1);
    let not_xdp = if o.csum_offload {
        Some("--csum-offload is the ring's".to_string())
    } else if o.tx_mode != TxMode::Auto {
        Some(format!("--tx-mode {} is the ring's", o.tx_mode))
    } else if o.tx_queues.is_none() && queues < o.threads {
        Some(format!(
            "AF_XDP takes a TX queue per thread and {iface} has {queues} for {} threads",
            o.threads
        ))
    } else {
        None
    };
    let why = match not_xdp {
        None => match xdp(iface, k, o) {
            Ok(x) => return Ok(Box::new(x.picked(format!("the fastest path to {iface}")))),
            Err(e) => format!("AF_XDP refused: {e}"),
        },
        Some(why) => why,
    };
    let a = AfPacketSink::open(iface, o.tx_mode, o.csum_offload)?;
    Ok(Box::new(a.picked(format!("picked for {iface}: {why}"))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(threads: usize) -> SinkOptions {
        SinkOptions {
            threads,
            ..SinkOptions::default()
        }
    }

    #[test]
    fn options_that_do_not_fit_the_sink_are_refused_naming_the_option() {
        let file = SinkSpec::Pcap("out.pcap".into());
        assert!(file.check(&opts(1)).is_ok());
        assert!(file.check(&opts(2)).unwrap_err().contains("--threads > 1"));
        assert!(SinkSpec::Null
            .check(&opts(0))
            .unwrap_err()
            .contains("--threads"));
        let q = SinkOptions {
            tx_queues: Some(vec![0, 1]),
            ..opts(2)
        };
        assert!(SinkSpec::Null
            .check(&q)
            .unwrap_err()
            .contains("--tx-queues needs an xdp"));
        let x = SinkSpec::Xdp("va".into());
        assert!(x.check(&q).is_ok());
        let twice = SinkOptions {
            tx_queues: Some(vec![1, 1]),
            ..opts(2)
        };
        assert!(x.check(&twice).unwrap_err().contains("twice"));
        let csum = SinkOptions {
            csum_offload: true,
            ..opts(1)
        };
        assert!(x.check(&csum).unwrap_err().contains("--csum-offload"));
    }

    #[test]
    fn a_pcap_directory_takes_one_file_per_thread() {
        let d = std::env::temp_dir().join(format!("sluice-open-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let spec = SinkSpec::Pcap(PathBuf::from(format!("{}/", d.display())));
        assert!(spec.check(&opts(3)).is_ok());
        assert_eq!(spec.outputs(2), [d.join("tx-0.pcap"), d.join("tx-1.pcap")]);
        assert!(SinkSpec::Null.outputs(4).is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
