//! `sluice tcprewrite`: tcprewrite's command line over sluice's header
//! rewriting (`sluice_wire::HeaderRewrite`, what `replay` applies while it
//! sends), from one file into another. The output is what tcprewrite
//! writes: a microsecond pcap with a snap length of 65535, the input's
//! link type and timestamps, each record's original length moved by what
//! the rewrite added or cut; packets a `-c` cache skips are written as
//! they are, so the cache still indexes the output.

use super::{number, parse_c_number, refuse, replay_args, Words};
use crate::dest;
use crate::{bad_input, exit, Failure};
use anyhow::{anyhow, Context};
use sluice_capture::{CaptureReader, LinkType, PcapWriter, Stamps};
use sluice_job::autoopts::{arg, flag, Opt, Parsed};
use sluice_source::{Dir, TcpprepCache};
use sluice_sys::output::Output;
use sluice_wire::tcpedit::dlt::Decoder;
use sluice_wire::tcpedit::{mac_mask, subsmacs, Edited, L2Out, Tcpedit};
use sluice_wire::CidrMap;
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

/// The `sluice replay` words of each option that has them, for the
/// packets of `side` (0: client to server); `pnat` is that side's
/// `--pnat` list.
fn translate(p: &Parsed, w: &mut Words, side: usize, pnat: Option<&str>) -> Result<(), String> {
    for (name, value) in &p.opts {
        let v = value.as_deref().unwrap_or("");
        match *name {
            // Read here, or no effect on the output file.
            "infile" | "outfile" | "cachefile" | "skip-soft-errors" | "suppress-warnings"
            | "dbug" | "no-load-opts" => {}
            // tcpedit's own, done in `Tcpedit` or set on the rewrite below.
            "fixcsum"
            | "efcs"
            | "enet-subsmac"
            | "enet-mac-seed"
            | "enet-mac-seed-keep-bytes"
            | "skipl2broadcast"
            | "fixhdrlen"
            | "skipbroadcast"
            | "tcp-sequence"
            | "tclass"
            | "flowlabel"
            | "fuzz-seed"
            | "fuzz-factor" => {}
            "portmap" => w.two("--portmap", v),
            "seed" => w.two("--seed", v),
            "pnat" => {}
            "srcipmap" => w.two("--srcipmap", v),
            "dstipmap" => w.two("--dstipmap", v),
            "endpoints" => w.two("--endpoints", v),
            "mtu" => w.two("--mtu", v),
            "mtu-trunc" => w.one("--mtu-trunc"),
            "ttl" => w.two("--ttl", v),
            "tos" => w.two("--tos", v),
            "fixlen" => w.two("--fixlen", v),
            // MAC[,MAC]: the first for client-to-server packets, the second
            // for server-to-client ones, which keep theirs without it
            // (without a cache every packet is client to server).
            "enet-dmac" | "enet-smac" => {
                if let Some(m) = v.split(',').nth(side).filter(|m| !m.is_empty()) {
                    w.two(&format!("--{name}"), m)
                }
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
            // The output link type: `L2Out`, below.
            "dlt" | "user-dlt" | "user-dlink" | "hdlc-control" | "hdlc-address" => {}
            other => {
                return Err(refuse(
                    other,
                    "not implemented by sluice yet",
                    "sluice replay --help lists the rewrites it has",
                ))
            }
        }
    }
    if let Some(n) = pnat {
        w.two("--pnat", n);
    }
    // --endpoints needs a split; the cache's directions are read here.
    if let Some(c) = p.value("cachefile") {
        w.two("--split", &format!("tcpprep:{c}"));
    }
    Ok(())
}

/// The editor the options ask for.
fn editor(p: &Parsed, input: &str) -> Result<Tcpedit, Failure> {
    let pnats = p.values("pnat");
    let mut rewrite = [Default::default(), Default::default()];
    for (side, r) in rewrite.iter_mut().enumerate() {
        let mut w = Words::new(&["replay", input, "--to", "null"]);
        // One --pnat list serves both sides; a second is the server's.
        let pnat = pnats.get(side).or(pnats.first()).copied();
        translate(p, &mut w, side, pnat).map_err(|e| bad_input(anyhow!(e)))?;
        let mut one: sluice_wire::HeaderRewrite = replay_args(&w)?
            .rewrite()
            .map_err(|e| bad_input(anyhow!("tcprewrite: {e}")))?;
        one.skip_multicast = p.has("skipbroadcast");
        one.tcp_seq = number::<u32>(p, "tcp-sequence")?.map(sluice_wire::tcp_sequence_offset);
        one.tclass = number::<u8>(p, "tclass")?;
        one.flowlabel = number::<u32>(p, "flowlabel")?;
        *r = one;
    }
    let keep = number::<usize>(p, "enet-mac-seed-keep-bytes")?.unwrap_or(0);
    if keep > 6 {
        return Err(bad_input(anyhow!(
            "--enet-mac-seed-keep-bytes: {keep}: a MAC has 6 bytes"
        )));
    }
    // ARP: tcpedit maps it with --pnat's lists or --endpoints' ends only.
    let arp_maps = arp_maps(p)?;
    // tcpedit pads, cuts or drops cut IP packets only (--fixlen).
    let non_ip = rewrite.clone().map(|mut r| {
        r.fixlen = None;
        r
    });
    let arp_rewrite = non_ip.clone().map(|mut r| {
        r.srcipmap.clear();
        r.dstipmap.clear();
        r.endpoints = None;
        r
    });
    Ok(Tcpedit {
        non_ip,
        l2: l2_out(p)?,
        arp_maps,
        arp_rewrite,
        rewrite,
        efcs: p.has("efcs"),
        fixcsum: p.has("fixcsum"),
        fixhdrlen: p.has("fixhdrlen"),
        subs: subsmacs(&p.values("enet-subsmac")).map_err(|e| bad_input(anyhow!(e)))?,
        mac_mask: number::<u32>(p, "enet-mac-seed")?.map(|s| (mac_mask(s), keep)),
        skip_l2_broadcast: p.has("skipl2broadcast"),
        skip_soft_errors: p.has("skip-soft-errors"),
        fuzz: fuzz(p)?,
    })
}

/// `--fuzz-seed N` (0 and up) with `--fuzz-factor F` (1 and up, 8 by
/// default): tcpedit's fuzzer.
fn fuzz(p: &Parsed) -> Result<Option<sluice_wire::tcpedit::fuzz::Fuzz>, Failure> {
    let Some(seed) = number::<u32>(p, "fuzz-seed")? else {
        return Ok(None);
    };
    let factor = number::<u32>(p, "fuzz-factor")?.unwrap_or(8);
    if factor == 0 {
        return Err(bad_input(anyhow!(
            "--fuzz-factor 0: out of range, it must be 1 or more"
        )));
    }
    Ok(Some(sluice_wire::tcpedit::fuzz::Fuzz::new(seed, factor)))
}

/// `--dlt`: Ethernet stays Ethernet (`enet`); `user` writes
/// `--user-dlink`'s bytes (hex, comma separated; a second list for the
/// client's side), `hdlc` Cisco HDLC with `--hdlc-address` and
/// `--hdlc-control`.
fn l2_out(p: &Parsed) -> Result<Option<L2Out>, Failure> {
    let dlt = p.value("dlt");
    for o in ["user-dlt", "user-dlink"] {
        if p.has(o) && dlt != Some("user") {
            return Err(bad_input(anyhow!("--{o} applies to --dlt user")));
        }
    }
    for o in ["hdlc-address", "hdlc-control"] {
        if p.has(o) && dlt != Some("hdlc") {
            return Err(bad_input(anyhow!("--{o} applies to --dlt hdlc")));
        }
    }
    let Some(dlt) = dlt else {
        return Ok(None);
    };
    if dlt != "enet" && p.opts.iter().any(|(n, _)| n.starts_with("enet-")) {
        return Err(bad_input(anyhow!(
            "--dlt {dlt}: the --enet-* options edit an Ethernet header, which --dlt {dlt} replaces"
        )));
    }
    let byte = |o: &str, v: &str| -> Result<u8, Failure> {
        let n = parse_c_number(v).filter(|n| *n <= 0xff);
        n.map(|n| n as u8)
            .ok_or_else(|| bad_input(anyhow!("--{o}: '{v}' is not a byte (0-255)")))
    };
    match dlt {
        "enet" => Ok(None),
        "user" => {
            let lists = p.values("user-dlink");
            let hex = |v: &str| -> Result<Vec<u8>, Failure> {
                v.split(',')
                    .map(|b| {
                        let t = b.trim().trim_start_matches("0x").trim_start_matches("0X");
                        u8::from_str_radix(t, 16).map_err(|_| {
                            bad_input(anyhow!("--user-dlink {v}: '{b}' is not a hex byte"))
                        })
                    })
                    .collect()
            };
            let Some(first) = lists.first() else {
                return Err(bad_input(anyhow!("--dlt user needs --user-dlink BYTES")));
            };
            let server = hex(first)?;
            let client = match lists.get(1) {
                Some(second) => hex(second)?,
                None => server.clone(),
            };
            if client.len() != server.len() {
                return Err(bad_input(anyhow!(
                    "--user-dlink: both lists must hold the same number of bytes"
                )));
            }
            Ok(Some(L2Out::User { client, server }))
        }
        "hdlc" => {
            let (Some(a), Some(c)) = (p.value("hdlc-address"), p.value("hdlc-control")) else {
                return Err(bad_input(anyhow!(
                    "--dlt hdlc: an Ethernet trace needs --hdlc-address and --hdlc-control"
                )));
            };
            Ok(Some(L2Out::Hdlc {
                address: byte("hdlc-address", a)?,
                control: byte("hdlc-control", c)?,
            }))
        }
        other => Err(bad_input(anyhow!(refuse(
            &format!("dlt {other}"),
            "sluice writes Ethernet, user and hdlc link types",
            "--dlt enet, user or hdlc"
        )))),
    }
}

/// The link type of the output: `--user-dlt` or the input's for `--dlt
/// user`, Cisco HDLC (104) for `--dlt hdlc`.
fn out_linktype(p: &Parsed, input: LinkType) -> Result<LinkType, Failure> {
    match p.value("dlt") {
        Some("enet") => Ok(LinkType::ETHERNET),
        Some("hdlc") => Ok(LinkType(104)),
        Some("user") => Ok(number::<u32>(p, "user-dlt")?.map_or(input, LinkType)),
        _ => Ok(input),
    }
}

/// The two maps tcpedit rewrites ARP addresses with: `--endpoints IP1:IP2`
/// is 0.0.0.0/0 to IP1 and 0.0.0.0/0 to IP2; else `--pnat`'s first list
/// and its second (or the first again).
fn arp_maps(p: &Parsed) -> Result<Option<[Vec<CidrMap>; 2]>, Failure> {
    let list = |v: &str| -> Result<Vec<CidrMap>, Failure> {
        v.split(',')
            .map(|m| {
                m.parse::<CidrMap>()
                    .map_err(|e| bad_input(anyhow!("{v}: {e}")))
            })
            .collect()
    };
    if let Some(e) = p.value("endpoints") {
        if let Some((a, b)) = e.split_once(':').filter(|_| !e.starts_with('[')) {
            return Ok(Some([
                list(&format!("0.0.0.0/0:{a}/32"))?,
                list(&format!("0.0.0.0/0:{b}/32"))?,
            ]));
        }
        return Ok(None);
    }
    let pnats = p.values("pnat");
    match pnats.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some([list(one)?, list(one)?])),
        [one, two, ..] => Ok(Some([list(one)?, list(two)?])),
    }
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
    // tcprewrite writes standard output for `-o -`.
    let output = if output == "-" { "/dev/stdout" } else { output };
    let edit = editor(&p, input)?;
    let cache_path = p.value("cachefile").map(Path::new);
    let mut ins = vec![Path::new(input)];
    ins.extend(cache_path);
    dest::check(&ins, &[output])?;
    let cache = cache_path
        .map(|c| TcpprepCache::read(c).map_err(|e| bad_input(anyhow!(e))))
        .transpose()?;

    // Before the output opens: a FIFO's wait for its reader ends on SIGINT.
    let stop = crate::signals::install()
        .context("installing signal handlers")
        .map_err(Failure::from)?;
    let mut reader =
        CaptureReader::open_stoppable(input, stop.clone()).map_err(|e| bad_input(anyhow!(e)))?;
    let snap = super::libpcap_snap(&reader);
    // Opened with the first packet's link type (a pcapng file has one per
    // interface), which must be Ethernet and stay so.
    let mut writer: Option<(PcapWriter<Output>, Layer, LinkType)> = None;
    let mut n = 0u64;
    let mut frame = Vec::new();
    let mut converted = Vec::new();
    let mut written = 0u64;
    loop {
        let pk = match super::next_packet(&mut reader, &stop)? {
            super::Next::Packet(pk) => pk,
            super::Next::End => break,
            super::Next::Stopped => {
                if let Some((w, ..)) = writer {
                    super::pcap_interrupted(w, output, written)?;
                }
                return Ok(exit::INTERRUPTED);
            }
        };
        n += 1;
        let (w, layer) = match &mut writer {
            Some((w, layer, lt)) if *lt == pk.linktype => (w, *layer),
            Some(_) => {
                return Err(bad_input(anyhow!(
                    "tcprewrite: {input}: packet {n} changes the link type; tcprewrite writes one"
                )))
            }
            None => {
                let layer = layer_of(&p, input, pk.linktype)?;
                let w = open_output(&p, output, pk.linktype, layer)?;
                let (w, layer, _) = writer.insert((w, layer, pk.linktype));
                (w, *layer)
            }
        };
        let dir = cache.as_ref().map_or(Some(Dir::Primary), |c| c.dir(n - 1));
        let Some(dir) = dir else {
            return Err(bad_input(anyhow!(
                "tcprewrite: {}: the cache ends before packet {n} of {input}",
                cache_path.map_or(String::new(), |c| c.display().to_string())
            )));
        };
        frame.clear();
        frame.extend_from_slice(&pk.data[..pk.data.len().min(snap)]);
        let mut orig = pk.orig_len as usize;
        // A packet tcpedit's decoder gives up on (and every packet of a
        // link type it cannot write) is a soft error: written as it is,
        // or left out with --skip-soft-errors.
        let soft = match (layer, dir.side()) {
            (_, None) | (Layer::Ethernet, _) => false,
            (Layer::Kept, Some(_)) => true,
            // The FCS goes first, as tcpedit cuts it before decoding.
            (Layer::Converted(d), Some(_)) => match d.to_ethernet(&frame, &mut converted) {
                Ok(grew) => {
                    std::mem::swap(&mut frame, &mut converted);
                    orig = orig.saturating_add_signed(grew);
                    false
                }
                Err(_) => true,
            },
        };
        if soft && edit.skip_soft_errors {
            continue;
        }
        // A packet the cache skips is written as it is, so the cache still
        // indexes the output.
        let len = match dir.side() {
            None => pk.orig_len,
            Some(_) if soft => edit.cut_fcs(&mut frame, orig) as u32,
            Some(side) => match edit.packet(&mut frame, orig, side) {
                Edited::Write(len) => len,
                Edited::Drop => continue,
            },
        };
        w.write_packet(pk.ts_ns, &frame, len)
            .with_context(|| format!("writing {output}"))?;
        written += 1;
    }
    let writer = match writer {
        Some((w, ..)) => w,
        // No packet: the file header alone, with the file's link type.
        None => {
            let lt = reader.linktype().unwrap_or(LinkType::ETHERNET);
            open_output(&p, output, lt, layer_of(&p, input, lt)?)?
        }
    };
    super::pcap_commit(writer, output)?;
    Ok(exit::OK)
}

/// How a trace's link layer is edited.
#[derive(Clone, Copy, Debug)]
enum Layer {
    /// Ethernet: the editor's own.
    Ethernet,
    /// Decoded but never encoded (no `--dlt`): each packet is a soft error.
    Kept,
    /// Made Ethernet, then edited (`--dlt enet`, `user` or `hdlc`).
    Converted(Decoder),
}

/// The layer of a trace of link type `lt`, or why tcprewrite cannot edit
/// it.
fn layer_of(p: &Parsed, input: &str, lt: LinkType) -> Result<Layer, Failure> {
    if lt == LinkType::ETHERNET {
        return Ok(Layer::Ethernet);
    }
    let Some(d) = Decoder::of(lt.0) else {
        return Err(bad_input(anyhow!(
            "tcprewrite: {input}: link type {} has no tcpedit decoder; sluice tcprewrite \
             edits Ethernet, Linux cooked (SLL, SLL2), raw IP and null/loopback traces, as \
             tcprewrite does (sluice replay --to pcap:FILE gives other link types an \
             Ethernet header)",
            lt.0
        )));
    };
    match p.value("dlt") {
        None => Ok(Layer::Kept),
        Some("enet") if !d.has_source() => {
            // tcpedit would shift each packet and fail it after: garbage.
            for o in ["enet-smac", "enet-dmac"] {
                if !p.has(o) {
                    return Err(bad_input(anyhow!(
                        "tcprewrite: {input}: --dlt enet from a {} trace needs --enet-smac \
                         and --enet-dmac (it carries no MAC)",
                        d.name()
                    )));
                }
            }
            Ok(Layer::Converted(d))
        }
        Some(_) => Ok(Layer::Converted(d)),
    }
}

/// The output pcap for an input of `linktype`: a microsecond file with
/// snap length 65535 and the link type `--dlt` gives, else the input's
/// (tcprewrite's `pcap_open_dead(DLT, 65535)`).
fn open_output(
    p: &Parsed,
    output: &str,
    linktype: LinkType,
    layer: Layer,
) -> Result<PcapWriter<Output>, Failure> {
    let lt = match layer {
        Layer::Kept => linktype,
        Layer::Ethernet | Layer::Converted(_) => out_linktype(p, linktype)?,
    };
    super::pcap_out(output, lt, 65_535, Stamps::Micros)
}
