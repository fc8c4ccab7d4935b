//! Two-port split (tcpprep's job): which side of a conversation each
//! packet of a trace is on. Side 0 is tcpprep's primary, client to server
//! (the first port, `--to`); side 1 its secondary, server to client
//! (`--to2`).
//!
//! Modes, with tcpprep's rules exactly (tcpreplay's `tcpprep.c`,
//! `process_raw_packets`):
//! - `cidr:NETS` (`tcpprep -c`): a source address in NETS is primary;
//! - `regex:RE` (`-r`): a source address (dotted quad, or IPv6 in its
//!   compressed form) that RE matches anywhere is primary;
//! - `mac:MACS` (`-e`): a source MAC in MACS is primary, IP or not;
//! - `port` (`-p`): a TCP or UDP destination port of 0–1023 is primary;
//! - `auto:bridge|router|client|server|first` (`-a`): hosts classified
//!   over the whole trace first (see `auto.rs`);
//! - `tcpprep:FILE`: a tcpprep cache, which may also skip packets;
//! - `auto` (sluice's own): per flow, the end that opened it is the
//!   client (the sender of a TCP SYN, else of the flow's first packet);
//! - `cache:FILE`: a split written by `sluice prep`.
//!
//! `reverse` swaps primary and secondary in cidr and mac modes; in regex
//! mode it makes every packet secondary, as tcpprep's does (it flips a
//! match to secondary and leaves a miss where it was). Non-IP packets (and
//! in port mode IP packets without TCP or UDP) are secondary, or primary
//! with `nonip` (tcpprep `--nonip`); `reverse` never moves them. In `auto`
//! mode they are client packets.
//!
//! The `sluice prep` cache file, little-endian: `SLCSPLT1` (8 bytes), the
//! packet count (u64), the trace file's size in bytes (u64, so a cache made
//! for another trace is refused), then one bit per packet from the lowest
//! bit of the first byte: 1 = side 1.

mod auto;
mod tcpprep;

pub use auto::AutoKind;
pub use tcpprep::{Dir, TcpprepCache};

use sluice_wire::layers::{PROTO_TCP, PROTO_UDP};
use sluice_wire::{flow_hash, parse_layers, CidrMap};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub const MAGIC: &[u8; 8] = b"SLCSPLT1";
const HEADER: usize = 24;

/// How to split (`--split`).
#[derive(Clone, Debug, PartialEq)]
pub enum SplitMode {
    Auto,
    /// Networks whose sources are primary (each maps onto itself).
    Cidr(Vec<CidrMap>),
    /// A regular expression over the source address.
    Regex(String),
    /// MACs whose frames are primary.
    Mac(Vec<[u8; 6]>),
    Port,
    /// tcpprep's auto modes.
    TcpAuto(AutoKind),
    Cache(PathBuf),
    Tcpprep(PathBuf),
}

impl SplitMode {
    /// The file the mode reads, if any.
    pub fn file(&self) -> Option<&Path> {
        match self {
            SplitMode::Cache(f) | SplitMode::Tcpprep(f) => Some(f),
            _ => None,
        }
    }
}

impl FromStr for SplitMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.split_once(':') {
            None if s == "auto" => Ok(SplitMode::Auto),
            None if s == "port" => Ok(SplitMode::Port),
            Some(("cidr", nets)) => crate::select::cidr_list(nets)
                .map(SplitMode::Cidr)
                .map_err(|e| format!("--split cidr: {e}")),
            Some(("regex", re)) if !re.is_empty() => regex::Regex::new(re)
                .map(|_| SplitMode::Regex(re.to_string()))
                .map_err(|e| format!("--split regex:{re}: {e}")),
            Some(("mac", macs)) => macs
                .split(',')
                .map(parse_mac)
                .collect::<Result<Vec<_>, _>>()
                .map(SplitMode::Mac),
            Some(("cache", f)) if !f.is_empty() => Ok(SplitMode::Cache(f.into())),
            Some(("tcpprep", f)) if !f.is_empty() => Ok(SplitMode::Tcpprep(f.into())),
            Some(("auto", kind)) => kind.parse().map(SplitMode::TcpAuto),
            _ => Err(format!(
                "'{s}': expected auto, auto:bridge|router|client|server|first, port, cidr:NET[,NET...], regex:RE, mac:MAC[,MAC...], tcpprep:FILE or cache:FILE"
            )),
        }
    }
}

fn parse_mac(m: &str) -> Result<[u8; 6], String> {
    let bytes: Vec<u8> = m
        .split(':')
        .map(|b| {
            let hex = !b.is_empty() && b.len() <= 2 && b.bytes().all(|c| c.is_ascii_hexdigit());
            hex.then(|| u8::from_str_radix(b, 16).ok())
                .flatten()
                .ok_or(())
        })
        .collect::<Result<_, _>>()
        .map_err(|_| format!("--split mac: '{m}' is not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
    bytes
        .try_into()
        .map_err(|_| format!("--split mac: '{m}' is not a MAC address (six octets)"))
}

/// A split: the mode and tcpprep's two modifiers.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    pub mode: SplitMode,
    /// Swap primary and secondary (tcpprep `--reverse`; see the module docs).
    pub reverse: bool,
    /// Non-IP packets are primary (tcpprep `--nonip`).
    pub nonip: bool,
    /// auto modes: a host is a server when it looks one at least this many
    /// times as often as a client (tcpprep `--ratio`, default 2).
    pub ratio: f64,
}

impl From<SplitMode> for Split {
    fn from(mode: SplitMode) -> Self {
        Split {
            mode,
            reverse: false,
            nonip: false,
            ratio: 2.0,
        }
    }
}

/// Every record of `trace` as an Ethernet frame, in order (None for a
/// record of a link type replay cannot send), until `f` fails. A truncated
/// last record ends the walk: its error is returned beside the count.
fn each_frame(
    trace: &Path,
    mut f: impl FnMut(u64, Option<&[u8]>) -> Result<(), String>,
) -> Result<(u64, Option<String>), crate::SourceError> {
    use sluice_wire::{framing_of_linktype, to_ethernet, LinkFraming, MacAddr};
    let mut reader = sluice_capture::CaptureReader::open(trace)?;
    let file = reader.name().to_string();
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        let p = match reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) if e.is_truncation() => return Ok((n, Some(e.to_string()))),
            Err(e) => return Err(e.into()),
        };
        let frame = match framing_of_linktype(p.linktype.0) {
            Some(LinkFraming::Ethernet) => Some(p.data),
            Some(e) => to_ethernet(e, p.data, MacAddr::LOCAL_SRC, MacAddr::LOCAL_DST, &mut buf)
                .ok()
                .map(|()| &buf[..]),
            None => None,
        };
        f(n, frame).map_err(|reason| crate::SourceError::BadPacket {
            file: file.clone(),
            packet: n + 1,
            reason,
        })?;
        n += 1;
    }
    Ok((n, None))
}

/// A `sluice prep` cache, in memory.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitCache {
    pub packets: u64,
    pub trace_bytes: u64,
    pub bits: Vec<u8>,
}

/// Reads a cache file of `what` whose `header` bytes say how long the
/// rest is (`body`: its length, None for a header that is not one, which
/// the caller's parser then names, or an error at an offset): no more than
/// that and one byte to see the end is read, whatever the path names, so
/// a device that never ends or a FIFO fed for ever costs no memory.
pub(crate) fn read_sized(
    path: &Path,
    what: &str,
    header: usize,
    body: impl Fn(&[u8]) -> Result<Option<u64>, String>,
) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let name = path.display();
    let fail = |e: std::io::Error| format!("{name}: {e}");
    let file = std::fs::File::open(path).map_err(fail)?;
    if file.metadata().map_err(fail)?.is_dir() {
        return Err(format!("{name}: a directory, not a {what}"));
    }
    let mut data = Vec::with_capacity(header);
    let mut file = file.take(header as u64);
    file.read_to_end(&mut data).map_err(fail)?;
    if data.len() == header {
        if let Some(len) = body(&data).map_err(|e| format!("{name}: {e}"))? {
            file.set_limit(len.saturating_add(1));
            file.read_to_end(&mut data).map_err(fail)?;
        }
    }
    Ok(data)
}

impl SplitCache {
    pub fn side(&self, index: u64) -> Option<u8> {
        (index < self.packets).then(|| (self.bits[(index / 8) as usize] >> (index % 8)) & 1)
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.bits.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.packets.to_le_bytes());
        out.extend_from_slice(&self.trace_bytes.to_le_bytes());
        out.extend_from_slice(&self.bits);
        out
    }

    /// Reads a cache; errors name the file and the offset.
    pub fn read(path: &Path) -> Result<Self, String> {
        let name = path.display();
        let data = read_sized(path, "split cache", HEADER, |h| {
            if &h[..8] != MAGIC {
                return Ok(None);
            }
            let packets = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
            if packets > 1 << 36 {
                return Err(format!(
                    "offset 8: {packets} packets, more than a split cache holds (2^36)"
                ));
            }
            Ok(Some(packets.div_ceil(8)))
        })?;
        if data.len() < HEADER || &data[..8] != MAGIC {
            return Err(format!(
                "{name}: offset 0: not a sluice split cache (made by `sluice prep`)"
            ));
        }
        let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
        let (packets, trace_bytes) = (u64_at(8), u64_at(16));
        let want = packets.div_ceil(8);
        if (data.len() - HEADER) as u64 != want {
            return Err(format!(
                "{name}: offset {HEADER}: {} bytes of sides for {packets} packets, expected {want}",
                data.len() - HEADER
            ));
        }
        Ok(SplitCache {
            packets,
            trace_bytes,
            bits: data[HEADER..].to_vec(),
        })
    }
}

/// Classifies packets one after the other (state: the flows seen, in
/// `auto` mode).
pub struct Splitter {
    split: Split,
    regex: Option<regex::Regex>,
    hosts: Option<auto::Hosts>,
    cache: Option<SplitCache>,
    tcpprep: Option<TcpprepCache>,
    cache_name: String,
    /// Flow hash -> the client's address and port.
    clients: HashMap<u64, End>,
    /// Packets of flows `auto` had no room to remember, split by port.
    pub by_port: u64,
    max_flows: usize,
}

/// Most flows `auto` remembers (tens of bytes each): a trace with more
/// splits the flows beyond them by port, so memory stays bounded.
pub const MAX_FLOWS: usize = 4 << 20;

/// One end of a packet: address (IPv4 in the first 4 bytes), port (0
/// without TCP/UDP).
type End = ([u8; 16], u16);

/// What a frame's headers say, for splitting.
struct Ends {
    src: End,
    dst: End,
    v4: bool,
    /// TCP or UDP (ports known).
    ports: bool,
    tcp_flags: Option<u8>,
}

/// A frame's ends, source then destination, and its TCP flags.
fn ends(frame: &[u8]) -> Option<Ends> {
    let l = parse_layers(frame);
    let (s, d) = crate::select::addresses(frame, &l)?;
    let v4 = s.len() == 4;
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src[..s.len()].copy_from_slice(s);
    dst[..d.len()].copy_from_slice(d);
    let (mut sp, mut dp, mut tcp_flags, mut ports) = (0, 0, None, false);
    if let Some(l4) = l.l4.filter(|l4| matches!(l4.proto, PROTO_TCP | PROTO_UDP)) {
        let o = l4.offset;
        sp = u16::from_be_bytes([frame[o], frame[o + 1]]);
        dp = u16::from_be_bytes([frame[o + 2], frame[o + 3]]);
        ports = true;
        if l4.proto == PROTO_TCP {
            tcp_flags = frame.get(o + 13).copied();
        }
    }
    Some(Ends {
        src: (src, sp),
        dst: (dst, dp),
        v4,
        ports,
        tcp_flags,
    })
}

/// What tcpprep's port mode finds in an IP packet.
enum PortLook {
    /// A TCP or UDP destination port.
    Port(u16),
    /// Too short to know: secondary, whatever `--nonip` says.
    Short,
    /// Not TCP or UDP: the non-IP side.
    Other,
}

/// tcpprep's `check_dst_port`: for IPv4 the protocol and the port at the
/// header's length, whether or not the packet is a later fragment (tcpprep
/// reads a fragment's payload as ports); for IPv6 the parsed ports
/// (`parsed`; tcpprep's own walk of extension headers is not followed).
fn port_look(frame: &[u8], v4: bool, parsed: Option<u16>) -> PortLook {
    if !v4 {
        return parsed.map_or(PortLook::Other, PortLook::Port);
    }
    let at = parse_layers(frame).l3_offset;
    let ip = &frame[at.min(frame.len())..];
    if ip.len() < 20 {
        return PortLook::Short;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ip.len() < ihl + 4 {
        return PortLook::Short;
    }
    let l4 = &ip[ihl..];
    let need = match ip[9] {
        PROTO_TCP => 20,
        PROTO_UDP => 8,
        _ => return PortLook::Other,
    };
    if l4.len() < need {
        return PortLook::Short;
    }
    PortLook::Port(u16::from_be_bytes([l4[2], l4[3]]))
}

/// The lower of two TCP/UDP ports is the server's (`auto`'s fallback).
fn by_port(src: End, dst: End) -> u8 {
    u8::from(src.1 != 0 && dst.1 != 0 && src.1 < dst.1)
}

/// Primary (side 0) when `yes`, else secondary (side 1).
fn primary_if(yes: bool) -> u8 {
    u8::from(!yes)
}

impl Splitter {
    /// `trace` is the file a `sluice prep` cache must have been made for.
    pub fn new(split: impl Into<Split>, trace: &Path) -> Result<Self, String> {
        let split = split.into();
        let mut sp = Splitter {
            regex: None,
            hosts: None,
            cache: None,
            tcpprep: None,
            cache_name: String::new(),
            clients: HashMap::new(),
            by_port: 0,
            max_flows: MAX_FLOWS,
            split,
        };
        match &sp.split.mode {
            SplitMode::Cache(f) => {
                let c = SplitCache::read(f)?;
                let size = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
                if c.trace_bytes != size {
                    return Err(format!(
                        "{}: made for a trace of {} bytes, {} has {size} (run `sluice prep` on it again)",
                        f.display(),
                        c.trace_bytes,
                        trace.display()
                    ));
                }
                sp.cache = Some(c);
                sp.cache_name = f.display().to_string();
            }
            SplitMode::Tcpprep(f) => {
                sp.tcpprep = Some(TcpprepCache::read(f)?);
                sp.cache_name = f.display().to_string();
            }
            SplitMode::TcpAuto(kind) => {
                let kind = *kind;
                if !(sp.split.ratio >= 0.0 && sp.split.ratio.is_finite()) {
                    return Err(format!("--ratio {}: a non-negative number", sp.split.ratio));
                }
                // tcpprep's first pass: every host of the trace.
                let mut hosts = auto::Hosts::default();
                each_frame(trace, |_, frame| match frame {
                    Some(f) => hosts.learn(kind, f),
                    None => Ok(()),
                })
                .map_err(|e| e.to_string())?;
                hosts.settle(kind, sp.split.ratio)?;
                sp.hosts = Some(hosts);
            }
            SplitMode::Regex(re) => {
                sp.regex =
                    Some(regex::Regex::new(re).map_err(|e| format!("--split regex:{re}: {e}"))?);
            }
            _ => {}
        }
        if sp.split.reverse
            && !matches!(
                sp.split.mode,
                SplitMode::Cidr(_) | SplitMode::Regex(_) | SplitMode::Mac(_)
            )
        {
            return Err(
                "--reverse applies to cidr:, regex: and mac: splits (as in tcpprep)".into(),
            );
        }
        Ok(sp)
    }

    /// The side of packet `index` (0-based in its pass), an Ethernet frame:
    /// 0 (`--to`), 1 (`--to2`), or None when a tcpprep cache skips it.
    pub fn side(&mut self, index: u64, frame: &[u8]) -> Result<Option<u8>, String> {
        if let Some(c) = &self.cache {
            return c
                .side(index)
                .map(Some)
                .ok_or_else(|| self.beyond(c.packets));
        }
        if let Some(c) = &self.tcpprep {
            return c
                .dir(index)
                .map(Dir::side)
                .ok_or_else(|| self.beyond(c.packets));
        }
        let nonip = self.non_ip_side();
        let reverse = self.split.reverse;
        if let SplitMode::Mac(macs) = &self.split.mode {
            // MAC mode reads no IP header: every frame by its source MAC.
            let src = frame.get(6..12).unwrap_or_default();
            let listed = macs.iter().any(|m| m[..] == *src);
            return Ok(Some(primary_if(listed != reverse)));
        }
        if let (SplitMode::TcpAuto(kind), Some(h)) = (&self.split.mode, &self.hosts) {
            return Ok(Some(match h.primary(*kind, self.split.nonip, frame) {
                Some(p) => primary_if(p),
                None => nonip,
            }));
        }
        let Some(e) = ends(frame) else {
            return Ok(Some(nonip));
        };
        let addr = |end: &End| -> IpAddr {
            if e.v4 {
                IpAddr::V4(Ipv4Addr::new(end.0[0], end.0[1], end.0[2], end.0[3]))
            } else {
                IpAddr::V6(Ipv6Addr::from(end.0))
            }
        };
        Ok(Some(match &self.split.mode {
            SplitMode::Cidr(nets) => {
                let a = if e.v4 { &e.src.0[..4] } else { &e.src.0[..] };
                primary_if(nets.iter().any(|n| n.matches(a)) != reverse)
            }
            SplitMode::Regex(_) => {
                let re = self.regex.as_ref().expect("compiled in new");
                let hit = re.is_match(&addr(&e.src).to_string());
                // tcpprep's --reverse turns a match to secondary and
                // leaves a miss secondary too.
                primary_if(hit && !reverse)
            }
            SplitMode::Port => match port_look(frame, e.v4, e.ports.then_some(e.dst.1)) {
                PortLook::Port(p) => primary_if(p <= 1023),
                PortLook::Short => 1,
                PortLook::Other => nonip,
            },
            _ => {
                let key = flow_hash(frame);
                if self.clients.len() >= self.max_flows && !self.clients.contains_key(&key) {
                    self.by_port += 1;
                    return Ok(Some(by_port(e.src, e.dst)));
                }
                // A SYN-ACK seen first: its destination opened the flow.
                let synack = e.tcp_flags.is_some_and(|f| f & 0x12 == 0x12);
                let client = *self
                    .clients
                    .entry(key)
                    .or_insert(if synack { e.dst } else { e.src });
                u8::from(client != e.src)
            }
        }))
    }

    /// The side of a packet without IP: secondary, or primary with
    /// `nonip` (tcpprep's); a client packet in sluice's own `auto`.
    fn non_ip_side(&self) -> u8 {
        match self.split.mode {
            SplitMode::Auto => 0,
            _ => primary_if(self.split.nonip),
        }
    }

    fn beyond(&self, packets: u64) -> String {
        format!(
            "{}: holds the sides of {packets} packets, the trace has more",
            self.cache_name
        )
    }
}

/// `sluice prep`: the direction of every packet of `trace` (not sent when
/// `select` leaves it out; records of
/// link types replay cannot send count as non-IP packets, so indices
/// match a replay with `--skip-unsupported`), as a tcpprep cache (without
/// a comment), the trace's size in bytes, and the truncation that ended
/// the trace early, if one did (the cache covers the records before it).
pub fn prep(
    trace: &Path,
    split: Split,
    select: Option<&crate::Select>,
) -> Result<(TcpprepCache, u64, Option<String>), crate::SourceError> {
    if split.mode.file().is_some() {
        return Err(crate::SourceError::Split(
            "prep makes a cache; give it auto, auto:KIND, port, cidr:, regex: or mac:".into(),
        ));
    }
    let mut sp = Splitter::new(split, trace).map_err(crate::SourceError::Split)?;
    let unsendable = sp.non_ip_side();
    let mut cache = TcpprepCache::default();
    let (_, truncated) = each_frame(trace, |n, frame| {
        let side = match frame {
            // tcpprep's include/exclude: a packet left out is not sent.
            _ if select.is_some_and(|s| !s.keeps(n + 1, frame)) => None,
            Some(f) => sp.side(n, f)?,
            None => Some(unsendable),
        };
        cache.push(match side {
            Some(0) => Dir::Primary,
            Some(_) => Dir::Secondary,
            None => Dir::Skip,
        });
        Ok(())
    })?;
    let trace_bytes = std::fs::metadata(trace).map(|m| m.len()).unwrap_or(0);
    Ok((cache, trace_bytes, truncated))
}

impl SplitCache {
    /// A `sluice prep` cache of `tcpprep`'s directions (it has no skip: a
    /// skipped packet would be lost).
    pub fn from_tcpprep(c: &TcpprepCache, trace_bytes: u64) -> Result<Self, String> {
        let mut bits = vec![0u8; c.packets.div_ceil(8) as usize];
        for k in 0..c.packets {
            match c.dir(k).expect("in range") {
                Dir::Primary => {}
                Dir::Secondary => bits[(k / 8) as usize] |= 1 << (k % 8),
                Dir::Skip => {
                    return Err(format!(
                        "packet {}: skipped, which only the tcpprep format can say",
                        k + 1
                    ))
                }
            }
        }
        Ok(SplitCache {
            packets: c.packets,
            trace_bytes,
            bits,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(src: [u8; 4], sp: u16, dst: [u8; 4], dp: u16, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 54];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&40u16.to_be_bytes());
        f[23] = 6;
        f[26..30].copy_from_slice(&src);
        f[30..34].copy_from_slice(&dst);
        f[34..36].copy_from_slice(&sp.to_be_bytes());
        f[36..38].copy_from_slice(&dp.to_be_bytes());
        f[46] = 0x50;
        f[47] = flags;
        f
    }

    #[test]
    fn modes_agree_on_a_handshake() {
        let c = [10, 0, 0, 1];
        let s = [192, 168, 1, 9];
        let syn = tcp(c, 40000, s, 80, 0x02);
        let synack = tcp(s, 80, c, 40000, 0x12);
        let t = Path::new("/nonexistent");
        // tcpprep's cidr: lists the networks whose sources are primary
        // (client to server): here the client's.
        for mode in ["auto", "port", "cidr:10.0.0.0/8", "regex:^10\\."] {
            let mut sp = Splitter::new(mode.parse::<SplitMode>().unwrap(), t).unwrap();
            assert_eq!(sp.side(0, &syn).unwrap(), Some(0), "{mode}");
            assert_eq!(sp.side(1, &synack).unwrap(), Some(1), "{mode}");
        }
        // auto: a flow first seen at its SYN-ACK still knows its client.
        let mut sp = Splitter::new(SplitMode::Auto, t).unwrap();
        assert_eq!(sp.side(0, &synack).unwrap(), Some(1));
        assert_eq!(sp.side(1, &syn).unwrap(), Some(0));
        // Non-IP: client side.
        assert_eq!(sp.side(2, &[0u8; 20]).unwrap(), Some(0));
    }

    #[test]
    fn auto_remembers_a_bounded_number_of_flows_then_splits_by_port() {
        let mut sp = Splitter::new(SplitMode::Auto, Path::new("/nonexistent")).unwrap();
        sp.max_flows = 2;
        let s = [192, 168, 1, 9];
        for i in 0..2u8 {
            // A flow first seen from its server's side: remembered as such.
            let reply = tcp(s, 80, [10, 0, 0, i], 40000, 0x10);
            assert_eq!(sp.side(0, &reply).unwrap(), Some(0));
            assert_eq!(sp.side(1, &reply).unwrap(), Some(0));
        }
        // A third flow: no room, so the lower port (80) is the server's.
        let reply = tcp(s, 80, [10, 0, 0, 7], 40000, 0x10);
        assert_eq!(sp.side(2, &reply).unwrap(), Some(1));
        assert_eq!((sp.clients.len(), sp.by_port), (2, 1));
    }

    #[test]
    fn cache_round_trips_and_refuses_garbage_with_offsets() {
        let c = SplitCache {
            packets: 10,
            trace_bytes: 123,
            bits: vec![0b1010_0110, 0b10],
        };
        let d = std::env::temp_dir().join(format!("sluice-split-{}", std::process::id()));
        std::fs::write(&d, c.to_bytes()).unwrap();
        let r = SplitCache::read(&d).unwrap();
        assert_eq!(r, c);
        assert_eq!(
            (0..10).map(|i| r.side(i).unwrap()).collect::<Vec<_>>(),
            [0, 1, 1, 0, 0, 1, 0, 1, 0, 1]
        );
        assert_eq!(r.side(10), None);
        let mut bad = c.to_bytes();
        bad.pop();
        std::fs::write(&d, &bad).unwrap();
        assert!(SplitCache::read(&d).unwrap_err().contains("offset 24"));
        std::fs::write(&d, b"pcap").unwrap();
        assert!(SplitCache::read(&d).unwrap_err().contains("offset 0"));
        std::fs::remove_file(&d).unwrap();
    }
}
