//! `sluice replay` arguments.

use super::common::{RunOpts, ShareOpts};
use crate::replay::ReplayOpts;
use clap::Args;
use sluice_sink::SinkSpec;
use sluice_source::SplitMode;
use sluice_wire::HeaderRewrite;
use std::net::IpAddr;
use std::path::PathBuf;

/// `IP1:IP2` (IPv6 in brackets: `[2001:db8::1]:[2001:db8::2]`), one family.
fn endpoints(s: &str) -> Result<(IpAddr, IpAddr), String> {
    let bad = || format!("'{s}': expected IP1:IP2 of one family (IPv6 as [A]:[B])");
    let (a, b) = if let Some(rest) = s.strip_prefix('[') {
        let (a, rest) = rest.split_once("]:").ok_or_else(bad)?;
        (a, rest.trim_start_matches('[').trim_end_matches(']'))
    } else {
        s.split_once(':').ok_or_else(bad)?
    };
    let (a, b): (IpAddr, IpAddr) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a.is_ipv4() != b.is_ipv4() {
        return Err(bad());
    }
    Ok((a, b))
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// Traces to replay (pcap or pcapng, optionally gzip-compressed), one after the other in every pass.
    #[arg(required = true, num_args = 1.., value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// Second output for two-port replay: server-to-client packets of --split (or the second trace of --dualfile) leave here, client-to-server by --to.
    #[arg(long, help_heading = "Two ports")]
    pub to2: Option<SinkSpec>,
    /// Traces in pairs, each pair merged by timestamp: its first leaves by --to, its second by --to2 (tcpreplay's option of that name).
    #[arg(
        long,
        requires = "to2",
        conflicts_with = "split",
        help_heading = "Two ports"
    )]
    pub dualfile: bool,
    /// Which side each packet is on, by tcpprep's rules: cidr:NET[,NET] (sources in NET are client to server, --to), regex:RE (on the source address), mac:MAC[,MAC] (source MACs), port (TCP/UDP destination port 0-1023), auto:bridge|router|client|server|first, tcpprep:FILE (a tcpprep cache; it may skip packets); or auto (per flow, its opener is the client), cache:FILE (from sluice prep).
    #[arg(long, value_name = "MODE", help_heading = "Two ports")]
    pub split: Option<SplitMode>,
    #[command(flatten)]
    pub split_opts: super::split::SplitOpts,
    #[command(flatten)]
    pub select: super::select::SelectOpts,

    #[command(flatten)]
    pub opts: ReplayOpts,
    /// With --split: client-to-server packets go from IP1 to IP2, server-to-client from IP2 to IP1.
    #[arg(long, value_name = "IP1:IP2", value_parser = endpoints, requires = "split", help_heading = "Rewriting (tcprewrite's options)")]
    pub endpoints: Option<(IpAddr, IpAddr)>,

    #[command(flatten)]
    pub run: RunOpts,
    #[command(flatten)]
    pub part: ShareOpts,
}

impl ReplayArgs {
    /// A replay of `traces` with `opts`, sent as `run` says: one port, no
    /// split, no packet selection, no share (what demo, RFC 2544 trials
    /// and a worker's job run).
    pub fn of(traces: Vec<std::path::PathBuf>, opts: ReplayOpts, run: RunOpts) -> ReplayArgs {
        ReplayArgs {
            traces,
            to2: None,
            dualfile: false,
            split: None,
            split_opts: Default::default(),
            select: Default::default(),
            opts,
            endpoints: None,
            run,
            part: Default::default(),
        }
    }

    /// The header rewriting these options ask for.
    pub fn rewrite(&self) -> Result<HeaderRewrite, String> {
        let o = &self.opts;
        for (name, macs) in [("--enet-dmac", &o.enet_dmac), ("--enet-smac", &o.enet_smac)] {
            if macs.len() > 2 || (macs.len() == 2 && self.split.is_none()) {
                return Err(format!(
                    "{name} takes one MAC, or two (client side, server side) with --split"
                ));
            }
        }
        let (src, dst) = if o.pnat.is_empty() {
            (o.srcipmap.clone(), o.dstipmap.clone())
        } else {
            (o.pnat.clone(), o.pnat.clone())
        };
        Ok(HeaderRewrite {
            enet_dmac: o.enet_dmac.first().copied(),
            enet_smac: o.enet_smac.first().copied(),
            enet_dmac_2: o.enet_dmac.get(1).copied(),
            enet_smac_2: o.enet_smac.get(1).copied(),
            endpoints: self.endpoints,
            vlan: o.vlan()?,
            srcipmap: src,
            dstipmap: dst,
            portmap: o.portmap.clone(),
            ttl: o.ttl,
            tos: o.tos,
            mtu_trunc: o.mtu_trunc.then_some(o.mtu),
            fixlen: o.fixlen(),
            seed: o.seed,
            skip_multicast: false,
            tcp_seq: None,
            tclass: None,
            flowlabel: None,
            unique_ip: o.unique_ip,
            fixcsum: o.fixcsum,
            l4_csum_by_device: self.run.send.csum_offload,
            tunnel: o.tunnel.parse()?,
        })
    }
}
