//! `sluice tcprewrite`: tcprewrite's command line over sluice's header
//! rewriting (`sluice_wire::HeaderRewrite`, what `replay` applies while it
//! sends), from one file into another. The output is what tcprewrite
//! writes: a microsecond pcap with a snap length of 65535, the input's
//! link type and timestamps, each record's original length moved by what
//! the rewrite added or cut; packets a `-c` cache skips are written as
//! they are, so the cache still indexes the output.

use super::opts::{arg, flag, Opt, Parsed};
use super::{refuse, replay_args, Words};
use crate::dest;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use sluice_capture::{CaptureReader, LinkType, PcapWriter, Stamps};
use sluice_source::{Dir, TcpprepCache};
use sluice_sys::output::Output;
use sluice_wire::{parse_layers, tcpedit_checksums, HeaderRewrite, Ip, MacAddr, Rewritten, TtlOp};
use std::path::Path;

/// tcprewrite 4.5's options (tcprewrite_opts.def, tcpedit_opts.def and
/// its DLT plugins'), with their most-times and relations.
pub static TABLE: &[Opt] = &[
    arg("dbug", Some('d')),
    arg("infile", Some('i')),
    arg("outfile", Some('o')),
    arg("cachefile", Some('c')),
    flag("verbose", Some('v')),
    arg("decode", Some('A')).needs(&["verbose"]),
    arg("fragroute", None),
    arg("fragdir", None).needs(&["cachefile"]),
    flag("skip-soft-errors", None),
    flag("version", Some('V')),
    flag("less-help", Some('h')),
    flag("suppress-warnings", Some('w')),
    arg("portmap", Some('r')).times(9999),
    arg("seed", Some('s')).excludes(&["fuzz-seed"]),
    arg("pnat", Some('N')).times(2).excludes(&["srcipmap"]),
    arg("srcipmap", Some('S')).excludes(&["pnat"]),
    arg("dstipmap", Some('D')).excludes(&["pnat"]),
    arg("endpoints", Some('e')).needs(&["cachefile"]),
    arg("tcp-sequence", None),
    flag("skipbroadcast", Some('b')),
    flag("fixcsum", Some('C')),
    flag("fixhdrlen", None),
    arg("mtu", Some('m')),
    flag("mtu-trunc", None),
    flag("efcs", Some('E')),
    arg("ttl", None),
    arg("tos", None),
    arg("tclass", None),
    arg("flowlabel", None),
    arg("fixlen", Some('F')),
    arg("fuzz-seed", None),
    arg("fuzz-factor", None).needs(&["fuzz-seed"]),
    flag("skipl2broadcast", None),
    arg("dlt", None),
    arg("enet-dmac", None),
    arg("enet-smac", None),
    arg("enet-subsmac", None).times(9999),
    arg("enet-mac-seed", None).excludes(&["enet-smac"]),
    arg("enet-mac-seed-keep-bytes", None).needs(&["enet-mac-seed"]),
    arg("enet-vlan", None),
    arg("enet-vlan-tag", None).needs(&["enet-vlan"]),
    arg("enet-vlan-cfi", None).needs(&["enet-vlan"]),
    arg("enet-vlan-pri", None).needs(&["enet-vlan"]),
    arg("enet-vlan-proto", None),
    arg("hdlc-control", None),
    arg("hdlc-address", None),
    arg("user-dlt", None),
    arg("user-dlink", None).times(2),
];

/// The `sluice replay` words of each option that has them.
fn translate(p: &Parsed, w: &mut Words) -> Result<(), String> {
    let cache = p.has("cachefile");
    for (name, value) in &p.opts {
        let v = value.as_deref().unwrap_or("");
        match *name {
            // Read here, or no effect on the output file.
            "infile" | "outfile" | "cachefile" | "skip-soft-errors" | "suppress-warnings"
            | "dbug" | "no-load-opts" => {}
            "portmap" => w.two("--portmap", v),
            "seed" => w.two("--seed", v),
            "pnat" if p.values("pnat").len() > 1 => {
                return Err(refuse(
                    "--pnat",
                    "one --pnat list for both sides only",
                    "sluice replay --srcipmap/--dstipmap",
                ))
            }
            "pnat" => w.two("--pnat", v),
            "srcipmap" => w.two("--srcipmap", v),
            "dstipmap" => w.two("--dstipmap", v),
            "endpoints" => w.two("--endpoints", v),
            // Checksums are computed here, where tcprewrite computes them;
            // the FCS is cut and MACs substituted here too.
            "fixcsum" | "efcs" | "enet-subsmac" => {}
            "mtu" => w.two("--mtu", v),
            "mtu-trunc" => w.one("--mtu-trunc"),
            "ttl" => w.two("--ttl", v),
            "tos" => w.two("--tos", v),
            "fixlen" => w.two("--fixlen", v),
            // Without a cache every packet is client to server: the
            // second MAC is never used (tcprewrite ignores it too).
            "enet-dmac" | "enet-smac" => {
                let v = if cache {
                    v
                } else {
                    v.split(',').next().unwrap_or(v)
                };
                w.two(&format!("--{name}"), v)
            }
            "enet-vlan" | "enet-vlan-tag" | "enet-vlan-cfi" | "enet-vlan-pri"
            | "enet-vlan-proto" => w.two(&format!("--{name}"), v),
            "verbose" | "decode" => {
                return Err(refuse(
                    name,
                    "sluice prints no packets",
                    "sluice analyze FILE, or tshark -r FILE",
                ))
            }
            "fragroute" | "fragdir" => {
                return Err(refuse(
                    name,
                    "sluice has no fragroute engine",
                    "fragment before with scapy's fragment() or fragroute itself",
                ))
            }
            other => {
                return Err(refuse(
                    other,
                    "not implemented by sluice yet",
                    "sluice replay --help lists the rewrites it has",
                ))
            }
        }
    }
    if cache {
        w.two(
            "--split",
            &format!("tcpprep:{}", p.value("cachefile").unwrap_or("")),
        );
    }
    Ok(())
}

pub fn run(args: &[String]) -> Result<u8, Failure> {
    let p = match super::parse_or_info("tcprewrite", TABLE, args)? {
        Some(p) => p,
        None => return Ok(exit::OK),
    };
    if let Some(extra) = p.operands.first() {
        return Err(bad_input(anyhow!(
            "tcprewrite: '{extra}': no operands are taken (the input is -i FILE)"
        )));
    }
    let (Some(input), Some(output)) = (p.value("infile"), p.value("outfile")) else {
        return Err(bad_input(anyhow!(
            "tcprewrite: both -i/--infile and -o/--outfile are needed"
        )));
    };
    let mut w = Words::new(&["replay", input, "--to", "null"]);
    translate(&p, &mut w).map_err(|e| bad_input(anyhow!(e)))?;
    let rewrite = replay_args(&w)?
        .rewrite()
        .map_err(|e| bad_input(anyhow!("tcprewrite: {e}")))?;
    let cache_path = p.value("cachefile").map(Path::new);
    let mut ins = vec![Path::new(input)];
    ins.extend(cache_path);
    dest::check(&ins, &[output])?;
    let cache = cache_path
        .map(|c| TcpprepCache::read(c).map_err(|e| bad_input(anyhow!(e))))
        .transpose()?;

    let mut reader = CaptureReader::open(input).map_err(|e| bad_input(anyhow!(e)))?;
    let first = reader
        .next_packet()
        .map_err(|e| bad_input(anyhow!(e)))?
        .map(|pk| pk.linktype);
    let linktype = first.or(reader.linktype()).unwrap_or(LinkType::ETHERNET);
    if linktype != LinkType::ETHERNET {
        return Err(bad_input(anyhow!(
            "tcprewrite: {input}: link type {} is not Ethernet; sluice tcprewrite edits \
             Ethernet traces (sluice replay --to pcap:FILE gives other link types an \
             Ethernet header)",
            linktype.0
        )));
    }
    // Start again from the first packet (it was read for its link type).
    let mut reader = CaptureReader::open(input).map_err(|e| bad_input(anyhow!(e)))?;
    let out = Output::create(Path::new(output)).map_err(dest::output_failure)?;
    let mut writer = PcapWriter::with_stamps(out, linktype, 65_535, Stamps::Micros)
        .with_context(|| format!("writing {output}"))
        .map_err(fatal)?;
    let subs = subsmacs(&p.values("enet-subsmac")).map_err(|e| bad_input(anyhow!(e)))?;
    let efcs = p.has("efcs");
    let recalc = Recalc {
        fixcsum: p.has("fixcsum"),
        rewrite: rewrite.clone(),
    };
    let mut n = 0u64;
    let mut frame = Vec::new();
    while let Some(pk) = reader.next_packet().map_err(|e| bad_input(anyhow!(e)))? {
        n += 1;
        if pk.linktype != linktype {
            return Err(bad_input(anyhow!(
                "tcprewrite: {input}: packet {n} changes the link type; tcprewrite writes one"
            )));
        }
        let dir = cache.as_ref().map_or(Some(Dir::Primary), |c| c.dir(n - 1));
        let Some(dir) = dir else {
            return Err(bad_input(anyhow!(
                "tcprewrite: {}: the cache ends before packet {n} of {input}",
                cache_path.map_or(String::new(), |c| c.display().to_string())
            )));
        };
        frame.clear();
        frame.extend_from_slice(pk.data);
        let mut orig = pk.orig_len as usize;
        // --efcs: the last four bytes of the frame are its FCS.
        if efcs && dir.side().is_some() && orig > 4 {
            if frame.len() == orig {
                frame.truncate(orig - 4);
            }
            orig -= 4;
        }
        let caplen = frame.len();
        let mut len = orig;
        if let Some(side) = dir.side() {
            if rewrite.apply_frame(&mut frame, orig, 0, side) == Rewritten::Dropped {
                continue;
            }
            substitute(&mut frame, &subs);
            len = new_len(caplen, orig, frame.len(), &rewrite);
            if recalc.needed(pk.data, &frame, orig > caplen) {
                let whole = len == frame.len();
                tcpedit_checksums(&mut frame, whole);
            }
        }
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        writer
            .write_packet(pk.ts_ns, &frame, len)
            .with_context(|| format!("writing {output}"))
            .map_err(fatal)?;
    }
    let out = writer
        .into_inner()
        .with_context(|| format!("writing {output}"))
        .map_err(fatal)?;
    out.commit()
        .map_err(|e| anyhow!(e))
        .with_context(|| format!("writing {output}"))
        .map_err(fatal)?;
    Ok(exit::OK)
}

/// The record's original length after the rewrite, as tcpedit sets it: a
/// whole frame's is its new length; a cut frame's moves with what was
/// added or removed, unless `--fixlen` or `--mtu-trunc` made the two agree.
fn new_len(caplen: usize, orig: usize, now: usize, r: &HeaderRewrite) -> usize {
    let mtu_cut = r.mtu_trunc.is_some() && now < caplen;
    if orig <= caplen || r.fixlen.is_some() || mtu_cut {
        now
    } else {
        (orig + now).saturating_sub(caplen)
    }
}

/// A MAC and the one that replaces it.
type MacPair = ([u8; 6], [u8; 6]);

/// `--enet-subsmac FROM,TO[,FROM,TO...]` (any number of times): pairs.
fn subsmacs(values: &[&str]) -> Result<Vec<MacPair>, String> {
    let mut out = Vec::new();
    for v in values {
        let macs: Vec<&str> = v.split(',').collect();
        if !macs.len().is_multiple_of(2) {
            return Err(format!("--enet-subsmac {v}: expected pairs FROM,TO"));
        }
        for pair in macs.chunks(2) {
            let mac = |m: &str| {
                m.parse::<MacAddr>()
                    .map(|a| a.0)
                    .map_err(|e| format!("--enet-subsmac {v}: {e}"))
            };
            out.push((mac(pair[0])?, mac(pair[1])?));
        }
    }
    Ok(out)
}

/// Each pair in turn replaces its first MAC by its second, as the
/// destination and as the source (tcpedit's order: after --enet-dmac/smac).
fn substitute(frame: &mut [u8], subs: &[MacPair]) {
    if frame.len() < 12 {
        return;
    }
    for (from, to) in subs {
        for at in [0, 6] {
            if frame[at..at + 6] == from[..] {
                frame[at..at + 6].copy_from_slice(to);
            }
        }
    }
}

/// When tcprewrite computes a packet's checksums anew (tcpedit's
/// `needtorecalc`) instead of leaving them or updating them for the words
/// that changed (as it does for addresses, ports and TOS): `--fixcsum`;
/// any IP packet under `--mtu-trunc`, or cut by the capture under
/// `--fixlen`; a TTL or hop limit moved up or down, or set to a new value.
struct Recalc {
    fixcsum: bool,
    rewrite: HeaderRewrite,
}

impl Recalc {
    fn needed(&self, before: &[u8], after: &[u8], cut: bool) -> bool {
        let (b, a) = (parse_layers(before), parse_layers(after));
        let Some(ip) = a.ip else {
            return false;
        };
        // The TTL (IPv4) or hop limit (IPv6) byte.
        let at = match ip {
            Ip::V4 { .. } => 8,
            Ip::V6 { .. } => 7,
        };
        let r = &self.rewrite;
        let ttl_moved = match r.ttl {
            None => false,
            Some(TtlOp::Add(_) | TtlOp::Sub(_)) => true,
            Some(TtlOp::Set(_)) => before.get(b.l3_offset + at) != after.get(a.l3_offset + at),
        };
        self.fixcsum || r.mtu_trunc.is_some() || (r.fixlen.is_some() && cut) || ttl_moved
    }
}

fn fatal(e: anyhow::Error) -> Failure {
    Failure {
        code: exit::FATAL,
        error: e,
    }
}

#[cfg(test)]
mod tests {
    use super::new_len;
    use sluice_wire::{FixLen, HeaderRewrite};

    #[test]
    fn original_lengths_follow_tcpedit() {
        let plain = HeaderRewrite::default();
        let fixlen = HeaderRewrite {
            fixlen: Some(FixLen::Pad),
            ..Default::default()
        };
        let mtu = HeaderRewrite {
            mtu_trunc: Some(300),
            ..Default::default()
        };
        assert_eq!(new_len(60, 60, 64, &plain), 64, "whole frame, tag added");
        assert_eq!(new_len(60, 100, 64, &plain), 104, "cut frame keeps its cut");
        assert_eq!(new_len(60, 100, 100, &fixlen), 100, "padded");
        assert_eq!(new_len(60, 100, 60, &fixlen), 60, "fixlen trunc");
        assert_eq!(new_len(400, 1000, 314, &mtu), 314, "mtu cut");
    }
}
