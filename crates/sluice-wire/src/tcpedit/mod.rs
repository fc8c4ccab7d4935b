//! One packet through tcprewrite's editor (tcpreplay's libtcpedit), on
//! sluice's header rewrite: what `HeaderRewrite` does is tcpedit's field
//! by field; this adds what tcpedit does around it, so the output is its
//! byte for byte: the FCS cut first (`--efcs`), frames its decoder gives up
//! on left alone, MACs substituted and randomised after the override
//! (`--enet-subsmac`, `--enet-mac-seed`), the multicast MAC of a multicast
//! destination, IP lengths fixed (`--fixhdrlen`), and checksums computed
//! where tcpedit computes them.

mod checksum;
pub mod dlt;
pub mod fuzz;

use crate::{
    group_mac, parse_layers, tcpr_random, CidrMap, HeaderRewrite, Ip, MacAddr, Rewritten, TtlOp,
};
use checksum::tcpedit_checksums;

/// A MAC and the one that replaces it.
pub type MacPair = ([u8; 6], [u8; 6]);

/// What becomes of one packet.
pub enum Edited {
    /// Write it, with this original length.
    Write(u32),
    /// `--fixlen del` on a cut frame, or a soft error with
    /// `--skip-soft-errors`: leave it out.
    Drop,
}

#[derive(Default)]
pub struct Tcpedit {
    /// The rewrite of each side (client to server, server to client): the
    /// same but for a second `--pnat` list.
    pub rewrite: [HeaderRewrite; 2],
    pub efcs: bool,
    pub fixcsum: bool,
    pub fixhdrlen: bool,
    pub subs: Vec<MacPair>,
    /// `--enet-mac-seed`: the XOR mask of each MAC byte, and the bytes
    /// kept (`--enet-mac-seed-keep-bytes`).
    pub mac_mask: Option<([u8; 6], usize)>,
    /// `--skipl2broadcast`: MACs that are not unicast keep their value.
    pub skip_l2_broadcast: bool,
    pub skip_soft_errors: bool,
    /// The two address maps tcpedit rewrites ARP with (`--pnat`'s lists,
    /// or `--endpoints`' 0.0.0.0/0 to each end); the rewrite's own maps
    /// do not touch ARP here.
    pub arp_maps: Option<[Vec<CidrMap>; 2]>,
    /// The rewrite of ARP frames: `non_ip` without its address maps.
    pub arp_rewrite: [HeaderRewrite; 2],
    /// The rewrite of other frames that are not IP: `rewrite` without
    /// `--fixlen`, which tcpedit applies to IP packets only.
    pub non_ip: [HeaderRewrite; 2],
    /// `--dlt user|hdlc`: the link-layer header that replaces Ethernet's.
    pub l2: Option<L2Out>,
    /// `--fuzz-seed`, `--fuzz-factor`.
    pub fuzz: Option<fuzz::Fuzz>,
}

/// The link-layer header written instead of Ethernet's (`--dlt`).
#[derive(Clone, Debug)]
pub enum L2Out {
    /// `--dlt user --user-dlink BYTES[ --user-dlink BYTES]`: the bytes of
    /// client-to-server packets and of server-to-client ones.
    User { client: Vec<u8>, server: Vec<u8> },
    /// `--dlt hdlc`: Cisco HDLC's address, control and the L3 protocol.
    Hdlc { address: u8, control: u8 },
}

impl L2Out {
    /// Replaces `frame`'s link-layer header (all before its L3 header, as
    /// tcpedit's decoder counts it); the bytes it added (or removed). The
    /// protocol HDLC names is the type field of the Ethernet header at
    /// `eth` (a pseudowire's inner one), as tcpedit takes it: a VLAN or
    /// MPLS type where one follows.
    fn replace(&self, frame: &mut Vec<u8>, side: u8, eth: usize) -> isize {
        let l = parse_layers(frame);
        let proto = u16::from_be_bytes([frame[eth + 12], frame[eth + 13]]);
        let head = match self {
            L2Out::User { client, server } => {
                if side == 0 {
                    client.clone()
                } else {
                    server.clone()
                }
            }
            L2Out::Hdlc { address, control } => {
                let p = proto.to_be_bytes();
                vec![*address, *control, p[0], p[1]]
            }
        };
        let old = l.l3_offset.min(frame.len());
        frame.splice(..old, head.iter().copied());
        head.len() as isize - old as isize
    }
}

impl Tcpedit {
    /// `--efcs`: the frame's last 4 bytes cut (from the captured bytes when
    /// they are whole); the original length after.
    pub fn cut_fcs(&self, frame: &mut Vec<u8>, orig: usize) -> usize {
        if self.efcs && orig > 4 {
            if frame.len() == orig {
                frame.truncate(orig - 4);
            }
            return orig - 4;
        }
        orig
    }

    /// Edits `frame` (captured bytes; `orig` its original length) of
    /// `side`.
    pub fn packet(&self, frame: &mut Vec<u8>, orig: usize, side: u8) -> Edited {
        // The FCS goes before anything looks at the frame.
        let orig = self.cut_fcs(frame, orig);
        let soft = |orig: usize| {
            if self.skip_soft_errors {
                Edited::Drop
            } else {
                Edited::Write(orig as u32)
            }
        };
        // An Ethernet pseudowire's inner frame is the one tcpedit edits.
        let pw = pseudowire(frame);
        let edited = match pw {
            Err(()) => return soft(orig),
            Ok(None) => self.ethernet(frame, orig, side, 0),
            Ok(Some(at)) => {
                let mut inner = frame.split_off(at);
                let r = self.ethernet(&mut inner, orig.saturating_sub(at), side, at);
                frame.extend_from_slice(&inner);
                match r {
                    Some(Edited::Write(len)) => Some(Edited::Write(len + at as u32)),
                    other => other,
                }
            }
        };
        match (edited, &self.l2) {
            (None, _) => soft(orig),
            (Some(Edited::Write(len)), Some(l2)) => {
                let moved = l2.replace(frame, side, pw.ok().flatten().unwrap_or(0));
                Edited::Write((len as isize + moved).max(0) as u32)
            }
            (Some(e), _) => e,
        }
    }

    /// One Ethernet frame through the editor; None where tcpedit's decoder
    /// gives up (a soft error): an 802.3 frame (a length, not a type,
    /// after the MACs) or one shorter than its header.
    /// `outer`: the bytes before `frame` (a pseudowire's outer headers).
    fn ethernet(&self, frame: &mut Vec<u8>, orig: usize, side: u8, outer: usize) -> Option<Edited> {
        if frame.len() < 14 || u16::from_be_bytes([frame[12], frame[13]]) < 0x0600 {
            return None;
        }
        let caplen = frame.len();
        let l = parse_layers(frame);
        // What the edits may change and the checks after them compare:
        // the MACs and the TTL (hop limit) byte, not a copy of the frame.
        let mut macs = [0u8; 12];
        macs.copy_from_slice(&frame[..12]);
        let ttl_before = match l.ip {
            Some(Ip::V4 { .. }) => frame.get(l.l3_offset + 8).copied(),
            Some(Ip::V6 { .. }) => frame.get(l.l3_offset + 7).copied(),
            None => None,
        };
        let arp = l.ip.is_none() && l.ethertype == 0x0806;
        let s = usize::from(side.min(1));
        let r = if arp {
            &self.arp_rewrite[s]
        } else if l.ip.is_none() {
            &self.non_ip[s]
        } else {
            &self.rewrite[s]
        };
        if r.apply_frame(frame, orig, 0, side) == Rewritten::Dropped {
            return Some(Edited::Drop);
        }
        if let (true, Some(maps)) = (arp, &self.arp_maps) {
            arp_addresses(frame, l.l3_offset, maps, side, r.skip_multicast);
        }
        if self.skip_l2_broadcast {
            for at in [0, 6] {
                if !is_unicast(&macs[at..at + 6]) {
                    frame[at..at + 6].copy_from_slice(&macs[at..at + 6]);
                }
            }
        }
        substitute(frame, &self.subs);
        if let Some((mask, keep)) = self.mac_mask {
            randomize_macs(frame, &mask, keep);
        }
        let mut len = new_len(caplen, orig, frame.len(), r);
        let mut fuzzed = false;
        if let Some(f) = &self.fuzz {
            let l = parse_layers(frame);
            let ip = l.ip.map(|ip| match ip {
                Ip::V4 { .. } => 4,
                Ip::V6 { .. } => 6,
            });
            match f.packet(frame, &mut len, l.l3_offset, ip, outer) {
                fuzz::Fuzzed::Dropped => return Some(Edited::Drop),
                fuzz::Fuzzed::Changed => fuzzed = true,
                fuzz::Fuzzed::Untouched => {}
            }
            // tcpedit reads the fuzzed packet again from its start: one
            // cut too short for its headers is a soft error, written as
            // it is.
            if fuzzed && !fuzz::headers_whole(frame, l.l3_offset, ip) {
                return Some(if self.skip_soft_errors {
                    Edited::Drop
                } else {
                    Edited::Write(len as u32)
                });
            }
        }
        if self.l2.is_none() {
            // The layers as parsed before the edits, unless a VLAN edit
            // moved them (the rest keep every header where it was).
            if r.vlan.is_none() {
                multicast_dmac(frame, &l);
            } else {
                let moved = parse_layers(frame);
                multicast_dmac(frame, &moved);
            }
        }
        // tcpedit's untrunc step (--mtu-trunc, or --fixlen on a cut frame)
        // asks for checksums unless the packet is an IPv4 fragment; a
        // first fragment of UDP loses its checksum (0: none) there.
        let untrunc = (r.mtu_trunc.is_some() || (r.fixlen.is_some() && orig > caplen))
            && untrunc_fragments(frame);
        let fixed = self.fixhdrlen && fix_ip_length(frame, len);
        if fixed || untrunc || fuzzed || self.recalc(r, ttl_before, frame) {
            let whole = len == frame.len();
            tcpedit_checksums(frame, whole);
        }
        Some(Edited::Write(u32::try_from(len).unwrap_or(u32::MAX)))
    }

    /// When tcpedit computes a packet's checksums anew (`needtorecalc`)
    /// instead of leaving them or updating them for the words that changed
    /// (as it does for addresses, ports, TOS and sequence numbers):
    /// `--fixcsum`, a TTL or hop limit moved up or down or set to a new
    /// value (the untrunc step and `--fixhdrlen` are the caller's).
    fn recalc(&self, r: &HeaderRewrite, ttl_before: Option<u8>, after: &[u8]) -> bool {
        if self.fixcsum {
            // Computed anew whatever else changed (the checksum pass leaves
            // a frame that is not IP as it is).
            return true;
        }
        let a = parse_layers(after);
        let Some(ip) = a.ip else {
            return false;
        };
        // The TTL (IPv4) or hop limit (IPv6) byte.
        let at = match ip {
            Ip::V4 { .. } => 8,
            Ip::V6 { .. } => 7,
        };
        let ttl_moved = match r.ttl {
            None => false,
            Some(TtlOp::Add(_) | TtlOp::Sub(_)) => true,
            Some(TtlOp::Set(_)) => ttl_before != after.get(a.l3_offset + at).copied(),
        };
        // --portmap on a TCP or UDP header not captured whole: tcpedit's
        // warning counts as a change.
        let short_ports = !r.portmap.is_empty()
            && match ip {
                Ip::V4 { header_len, .. } => {
                    let l3 = a.l3_offset;
                    let left = after.len().saturating_sub(l3 + header_len);
                    match after.get(l3 + 9) {
                        Some(&6) => left < 20,
                        Some(&17) => left < 8,
                        _ => false,
                    }
                }
                Ip::V6 { .. } => false,
            };
        ttl_moved || short_ports
    }
}

/// tcpedit's `rewrite_iparp`: an IPv4 ARP request's sender address is
/// mapped by the other side's maps and its target's by this side's (a
/// reply the other way round), the two lists walked in step until both
/// are done or both end.
fn arp_addresses(frame: &mut [u8], l3: usize, maps: &[Vec<CidrMap>; 2], side: u8, skip: bool) {
    let Some(h) = frame.get(l3..l3 + 8) else {
        return;
    };
    let (pro, hln, pln, op) = (
        u16::from_be_bytes([h[2], h[3]]),
        usize::from(h[4]),
        usize::from(h[5]),
        u16::from_be_bytes([h[6], h[7]]),
    );
    if pro != 0x0800 || !matches!(op, 1 | 2) {
        return;
    }
    let ip1 = l3 + 8 + hln;
    let ip2 = ip1 + pln + hln;
    if ip2 + 4 > frame.len() || ip1 + 4 > frame.len() {
        return;
    }
    let (m1, m2) = if side == 0 {
        (&maps[0], &maps[1])
    } else {
        (&maps[1], &maps[0])
    };
    if m1.is_empty() || m2.is_empty() {
        return;
    }
    // The request's (destination, source) positions; a reply swaps them.
    let (dst_at, src_at) = if op == 1 { (ip1, ip2) } else { (ip2, ip1) };
    let (mut i1, mut i2) = (0, 0);
    let (mut did_src, mut did_dst) = (false, false);
    let get = |f: &[u8], at: usize| [f[at], f[at + 1], f[at + 2], f[at + 3]];
    loop {
        for (done, at, m) in [
            (&mut did_dst, dst_at, &m2[i2]),
            (&mut did_src, src_at, &m1[i1]),
        ] {
            let a = get(frame, at);
            if !*done && m.matches(&a) {
                if !(skip && a[0] & 0xf0 == 0xe0) {
                    let n = m.map_v4(a).unwrap_or(a);
                    frame[at..at + 4].copy_from_slice(&n);
                }
                *done = true;
            }
        }
        let last = i1 + 1 >= m1.len() && i2 + 1 >= m2.len();
        if (did_src && did_dst) || last {
            break;
        }
        i1 = (i1 + 1).min(m1.len() - 1);
        i2 = (i2 + 1).min(m2.len() - 1);
    }
}

/// Where an Ethernet pseudowire's inner frame starts (past VLAN tags,
/// the MPLS label stack and the control word), as tcpreplay's
/// `parse_mpls` finds it; None for any other frame; Err where it gives up
/// (a GACH label, a payload neither IP nor a control word, a cut stack).
fn pseudowire(frame: &[u8]) -> Result<Option<usize>, ()> {
    let ty = |at: usize| {
        frame
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
    };
    let mut at = 12;
    while matches!(ty(at), Some(0x8100 | 0x88a8 | 0x9100)) {
        at += 4;
    }
    if !matches!(ty(at), Some(0x8847 | 0x8848)) {
        return Ok(None);
    }
    at += 2;
    loop {
        let l = frame.get(at..at + 4).ok_or(())?;
        let entry = u32::from_be_bytes([l[0], l[1], l[2], l[3]]);
        at += 4;
        if entry >> 12 == 13 {
            return Err(());
        }
        if entry & 0x100 != 0 {
            break;
        }
    }
    match frame.get(at).ok_or(())? >> 4 {
        4 | 6 => Ok(None),
        0 if frame.len() >= at + 4 + 14 => Ok(Some(at + 4)),
        _ => Err(()),
    }
}

/// The record's original length after the rewrite, as tcpedit sets it: a
/// whole frame's is its new length; a cut frame's moves with what was
/// added or removed, unless `--fixlen` or `--mtu-trunc` made the two agree.
pub fn new_len(caplen: usize, orig: usize, now: usize, r: &HeaderRewrite) -> usize {
    let mtu_cut = r.mtu_trunc.is_some() && now < caplen;
    let fixed = r.fixlen.is_some() && orig > caplen;
    if orig == caplen || fixed || mtu_cut {
        now
    } else {
        (orig + now).saturating_sub(caplen)
    }
}

/// `--enet-subsmac FROM,TO[,FROM,TO...]` (any number of times): pairs.
pub fn subsmacs(values: &[&str]) -> Result<Vec<MacPair>, String> {
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
/// destination and as the source (tcpedit's order: after the override).
fn substitute(frame: &mut [u8], subs: &[MacPair]) {
    for (from, to) in subs {
        for at in [0, 6] {
            if frame[at..at + 6] == from[..] {
                frame[at..at + 6].copy_from_slice(to);
            }
        }
    }
}

/// tcpedit's `--enet-mac-seed` mask: six distinct bytes drawn from the
/// seed with tcpreplay's generator.
pub fn mac_mask(seed: u32) -> [u8; 6] {
    let mut s = seed;
    let mut mask = [0u8; 6];
    let mut i = 0;
    while i < 6 {
        let b = (tcpr_random(&mut s) % 256) as u8;
        if !mask[..i].contains(&b) {
            mask[i] = b;
            i += 1;
        }
    }
    mask
}

/// tcpedit's `is_unicast_ethernet`, quirks kept: broadcast, 01:00:5e,
/// 33:33 and its VRRP prefixes (00:00:50:00:01, 00:00:50:00:02) are not.
fn is_unicast(mac: &[u8]) -> bool {
    !(mac == [0xff; 6]
        || mac[..3] == [0x01, 0x00, 0x5e]
        || mac[..2] == [0x33, 0x33]
        || mac[..5] == [0x00, 0x00, 0x50, 0x00, 0x01]
        || mac[..5] == [0x00, 0x00, 0x50, 0x00, 0x02])
}

/// `--enet-mac-seed`: each byte from `keep` on of a unicast MAC mixed with
/// the mask as tcpedit mixes it; without kept bytes a unicast MAC stays
/// unicast.
fn randomize_macs(frame: &mut [u8], mask: &[u8; 6], keep: usize) {
    for at in [6, 0] {
        let unicast = is_unicast(&frame[at..at + 6]);
        if !unicast {
            continue;
        }
        for i in keep.min(6)..6 {
            let (o, m) = (frame[at + i], mask[i]);
            frame[at + i] = (o ^ m).wrapping_sub(o & m);
        }
        if keep == 0 {
            frame[at] &= !0x01;
        }
    }
}

/// An IP packet to a multicast group gets the group's MAC, whatever the
/// MAC options said (tcpedit does so since its issue 563); not through
/// MPLS.
fn multicast_dmac(frame: &mut [u8], l: &crate::Layers) {
    let plain = matches!(
        u16::from_be_bytes([frame[12], frame[13]]),
        0x0800 | 0x86dd | 0x8100 | 0x88a8
    );
    let (Some(ip), true) = (l.ip, plain) else {
        return;
    };
    let dst = match ip {
        Ip::V4 { .. } => l.l3_offset + 16..l.l3_offset + 20,
        Ip::V6 { .. } => l.l3_offset + 24..l.l3_offset + 40,
    };
    if let Some(m) = frame.get(dst).and_then(group_mac) {
        frame[..6].copy_from_slice(&m);
    }
}

/// tcpedit's `untrunc_packet` on fragments: true (compute the checksums)
/// for an IP packet that is no IPv4 fragment; a first IPv4 fragment of UDP
/// gets checksum 0 and false; a later one false.
fn untrunc_fragments(frame: &mut [u8]) -> bool {
    let l = parse_layers(frame);
    let l3 = l.l3_offset;
    match l.ip {
        Some(Ip::V4 { header_len, .. }) => {
            let off = u16::from_be_bytes([frame[l3 + 6], frame[l3 + 7]]);
            if off & 0x1fff != 0 {
                return false;
            }
            if frame[l3 + 9] == 17 && off & 0x2000 != 0 {
                let at = l3 + header_len + 6;
                if at + 2 <= frame.len() {
                    frame[at..at + 2].copy_from_slice(&[0, 0]);
                }
                return false;
            }
            true
        }
        Some(Ip::V6 { .. }) => true,
        None => false,
    }
}

/// `--fixhdrlen`: the IP length is made what the record's length says (an
/// IPv4 fragment keeps its own); true when it changed.
fn fix_ip_length(frame: &mut [u8], len: usize) -> bool {
    let l = parse_layers(frame);
    let l3 = l.l3_offset;
    match l.ip {
        Some(Ip::V4 { .. }) if frame.len() >= l3 + 20 => {
            let off = u16::from_be_bytes([frame[l3 + 6], frame[l3 + 7]]);
            let want = (len.saturating_sub(l3)) as u16;
            let now = u16::from_be_bytes([frame[l3 + 2], frame[l3 + 3]]);
            if off & 0x3fff == 0 && now != want {
                frame[l3 + 2..l3 + 4].copy_from_slice(&want.to_be_bytes());
                return true;
            }
            false
        }
        Some(Ip::V6 { .. }) if frame.len() >= l3 + 40 => {
            let want = (len.saturating_sub(l3 + 40)) as u16;
            let now = u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]);
            if now != want {
                frame[l3 + 4..l3 + 6].copy_from_slice(&want.to_be_bytes());
                return true;
            }
            false
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FixLen;

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
        assert_eq!(
            new_len(31, 28, 31, &plain),
            28,
            "a length under the captured bytes stays"
        );
    }

    #[test]
    fn mac_masks_are_six_distinct_bytes_and_keep_unicast() {
        let m = mac_mask(42);
        for i in 0..6 {
            assert!(!m[..i].contains(&m[i]), "{m:?}");
        }
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[0x00, 0x11, 0x22, 0x33, 0x44, 0x55]);
        randomize_macs(&mut f, &m, 0);
        assert_eq!(f[..6], [0xff; 6], "broadcast kept");
        assert_eq!(f[6] & 1, 0, "unicast stays unicast");
        let mut g = f.clone();
        g[6..12].copy_from_slice(&[0x00, 0x11, 0x22, 0x33, 0x44, 0x55]);
        randomize_macs(&mut g, &m, 3);
        assert_eq!(g[6..9], [0x00, 0x11, 0x22], "kept bytes");
    }
}
