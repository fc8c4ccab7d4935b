//! IP fragments put back together, so that a stamped datagram larger than
//! the link's MTU (time series paper §IV-B: records sent as datagrams the
//! network fragments) is counted once, when its last piece arrives.
//!
//! Fragments are keyed as RFC 791 and RFC 8200 key them (addresses,
//! identification, and for IPv4 the protocol). A datagram is whole when
//! the pieces cover it from offset 0 to the end the last piece (M clear)
//! gives; it is then rebuilt as one unfragmented frame (the first piece's
//! link and IP headers, lengths set, the fragment fields or header
//! removed) for the stamp reader. Pieces that overlap other than as an
//! exact duplicate make the datagram fail (RFC 5722's rule, applied to
//! IPv4 too); so does one that would pass 65 535 bytes.
//!
//! Memory is bounded: a datagram is held at most [`TIMEOUT_NS`] (the
//! kernel's `ipfrag_time`) after its first piece, and at most
//! [`MAX_HELD`] datagrams and [`MAX_BYTES`] bytes are held; past either
//! bound the oldest fails. What is still held at the end counts as timed
//! out.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How long a datagram's pieces wait for the rest, ns.
pub const TIMEOUT_NS: u64 = 30_000_000_000;
/// Most datagrams held at once.
pub const MAX_HELD: usize = 4096;
/// Most bytes held at once (pieces' data).
pub const MAX_BYTES: usize = 64 << 20;
/// Largest datagram payload (offsets are 13 bits of 8-byte units).
const MAX_DATA: usize = 65_535;

/// What the receiver did with IP fragments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragStats {
    /// Fragments received (duplicates included).
    pub fragments: u64,
    /// Datagrams put back together (then counted as frames).
    pub reassembled: u64,
    /// Datagrams whose pieces stopped coming: held past the timeout, or
    /// still incomplete when the count ended.
    pub timed_out: u64,
    /// Datagrams given up: overlapping pieces, past 65 535 bytes, or the
    /// oldest held when the bounds were reached.
    pub failed: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    src: [u8; 16],
    dst: [u8; 16],
    id: u32,
    /// IPv4: the protocol; IPv6: 0x100 (its key has no protocol).
    proto: u16,
}

/// One datagram being put back together.
#[derive(Debug)]
struct Held {
    first_ns: u64,
    /// Link and IP headers of the piece at offset 0 (the fragment fields
    /// still in), once it came; and where its fragmentable part starts.
    head: Option<(Vec<u8>, Shape)>,
    data: Vec<u8>,
    /// 8-byte blocks received.
    have: Vec<u64>,
    /// The datagram's data length, once the last piece came.
    total: Option<usize>,
}

impl Held {
    /// Whether 8-byte block `b` has come.
    fn has(&self, b: usize) -> bool {
        self.have[b / 64] >> (b % 64) & 1 == 1
    }
}

/// How to rebuild the unfragmented header.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// IPv4 at `l3`, header `hl` bytes.
    V4 { l3: usize, hl: usize },
    /// IPv6 at `l3`; the fragment header at `frag` (from the frame's
    /// start); `next_at` the byte naming it; `proto` what it carries.
    V6 {
        l3: usize,
        frag: usize,
        next_at: usize,
        proto: u8,
    },
}

/// One piece as read from a frame.
struct Piece<'a> {
    key: Key,
    offset: usize,
    more: bool,
    data: &'a [u8],
    shape: Shape,
}

/// Reassembles IP fragments; see the module documentation.
#[derive(Debug, Default)]
pub struct Reassembler {
    held: HashMap<Key, Held>,
    bytes: usize,
    next_sweep_ns: u64,
    pub stats: FragStats,
}

impl Reassembler {
    /// Takes `frame` if it is an IP fragment (false otherwise); `whole`
    /// gets the rebuilt datagram when this piece completes one.
    pub fn push(&mut self, frame: &[u8], rx_ns: u64, whole: impl FnOnce(&[u8])) -> bool {
        let Some(p) = piece(frame) else {
            return false;
        };
        self.stats.fragments += 1;
        if rx_ns >= self.next_sweep_ns {
            self.expire(rx_ns.saturating_sub(TIMEOUT_NS));
            self.next_sweep_ns = rx_ns.saturating_add(TIMEOUT_NS / 8);
        }
        let end = p.offset + p.data.len();
        // A piece's data is a multiple of 8 bytes unless it is the last.
        if end > MAX_DATA || (p.more && p.data.len() % 8 != 0) {
            self.fail(p.key);
            return true;
        }
        if !self.held.contains_key(&p.key) {
            self.make_room(end);
        }
        let h = self.held.entry(p.key).or_insert_with(|| Held {
            first_ns: rx_ns,
            head: None,
            data: Vec::new(),
            have: vec![0; MAX_DATA.div_ceil(8).div_ceil(64)],
            total: None,
        });
        let (b0, b1) = (p.offset / 8, end.div_ceil(8));
        let seen = (b0..b1).filter(|&b| h.has(b)).count();
        if seen == b1 - b0 && b1 > b0 {
            // An exact duplicate (or a piece wholly inside others): the
            // bytes must agree, or the datagram is ambiguous.
            if h.data.get(p.offset..end) == Some(p.data) {
                return true;
            }
            self.fail(p.key);
            return true;
        }
        let ends_early = !p.more && h.total.is_some_and(|t| t != end);
        let past_end = h.total.is_some_and(|t| end > t);
        if seen > 0 || ends_early || past_end {
            self.fail(p.key);
            return true;
        }
        if !p.more {
            h.total = Some(end);
        }
        if h.data.len() < end {
            self.bytes += end - h.data.len();
            h.data.resize(end, 0);
        }
        h.data[p.offset..end].copy_from_slice(p.data);
        for b in b0..b1 {
            h.have[b / 64] |= 1 << (b % 64);
        }
        if p.offset == 0 {
            let head_len = match p.shape {
                Shape::V4 { l3, hl } => l3 + hl,
                Shape::V6 { frag, .. } => frag,
            };
            h.head = Some((frame[..head_len].to_vec(), p.shape));
        }
        let Some(total) = h.total else { return true };
        let blocks = total.div_ceil(8);
        if h.head.is_none() || !(0..blocks).all(|b| h.has(b)) {
            return true;
        }
        let h = self.held.remove(&p.key).expect("held above");
        self.bytes -= h.data.len();
        self.stats.reassembled += 1;
        let (head, shape) = h.head.expect("checked");
        whole(&rebuild(&head, shape, &h.data));
        true
    }

    /// Ends the count: what is still held timed out.
    pub fn finish(&mut self) {
        self.stats.timed_out += self.held.len() as u64;
        self.held.clear();
        self.bytes = 0;
    }

    /// Datagrams whose first piece came before `before_ns` time out.
    fn expire(&mut self, before_ns: u64) {
        let (mut gone, mut freed) = (0, 0);
        self.held.retain(|_, h| {
            let keep = h.first_ns >= before_ns;
            if !keep {
                gone += 1;
                freed += h.data.len();
            }
            keep
        });
        self.stats.timed_out += gone;
        self.bytes -= freed;
    }

    fn fail(&mut self, key: Key) {
        if let Some(h) = self.held.remove(&key) {
            self.bytes -= h.data.len();
        }
        self.stats.failed += 1;
    }

    /// Gives up the oldest datagrams until one more of `need` bytes fits.
    fn make_room(&mut self, need: usize) {
        while !self.held.is_empty()
            && (self.held.len() >= MAX_HELD || self.bytes + need > MAX_BYTES)
        {
            let oldest = *self
                .held
                .iter()
                .min_by_key(|(_, h)| h.first_ns)
                .map(|(k, _)| k)
                .expect("not empty");
            self.fail(oldest);
        }
    }
}

/// The fragment `frame` carries, if it is one.
fn piece(frame: &[u8]) -> Option<Piece<'_>> {
    let (layers, v6_frag) = sluice_wire::layers::parse_with_fragment_header(frame);
    let ip = layers.ip?;
    if !ip.is_fragment() {
        return None;
    }
    let l3 = layers.l3_offset;
    let end = layers.ip_end()?;
    let addr = |at: usize, n: usize| -> [u8; 16] {
        let mut a = [0u8; 16];
        a[..n].copy_from_slice(&frame[at..at + n]);
        a
    };
    match ip {
        sluice_wire::Ip::V4 { header_len, .. } => {
            let h = frame.get(l3..l3 + header_len)?;
            let ff = u16::from_be_bytes([h[6], h[7]]);
            Some(Piece {
                key: Key {
                    src: addr(l3 + 12, 4),
                    dst: addr(l3 + 16, 4),
                    id: u32::from(u16::from_be_bytes([h[4], h[5]])),
                    proto: u16::from(h[9]),
                },
                offset: usize::from(ff & 0x1fff) * 8,
                more: ff & 0x2000 != 0,
                data: frame.get(l3 + header_len..end)?,
                shape: Shape::V4 { l3, hl: header_len },
            })
        }
        sluice_wire::Ip::V6 { .. } => {
            let (at, next_at) = v6_frag?;
            let f = frame.get(at..at + 8)?;
            let om = u16::from_be_bytes([f[2], f[3]]);
            Some(Piece {
                key: Key {
                    src: addr(l3 + 8, 16),
                    dst: addr(l3 + 24, 16),
                    id: u32::from_be_bytes([f[4], f[5], f[6], f[7]]),
                    proto: 0x100,
                },
                offset: usize::from(om >> 3) * 8,
                more: om & 1 == 1,
                data: frame.get(at + 8..end)?,
                shape: Shape::V6 {
                    l3,
                    frag: at,
                    next_at,
                    proto: f[0],
                },
            })
        }
    }
}

/// The unfragmented frame: `head` (link and IP headers of the first
/// piece) with lengths set and fragment fields or header gone, then `data`.
fn rebuild(head: &[u8], shape: Shape, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.len() + data.len());
    out.extend_from_slice(head);
    out.extend_from_slice(data);
    match shape {
        Shape::V4 { l3, hl } => {
            let total = (hl + data.len()).min(0xffff) as u16;
            out[l3 + 2..l3 + 4].copy_from_slice(&total.to_be_bytes());
            out[l3 + 6..l3 + 8].fill(0);
            out[l3 + 10..l3 + 12].fill(0);
            let sum = sluice_wire::ipv4_header_checksum(&out[l3..l3 + hl]);
            out[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
        }
        Shape::V6 {
            l3,
            frag,
            next_at,
            proto,
        } => {
            out[next_at] = proto;
            let payload = (frag - (l3 + 40) + data.len()).min(0xffff) as u16;
            out[l3 + 4..l3 + 6].copy_from_slice(&payload.to_be_bytes());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_wire::rxstamp::{read, stamp_payload, RxStamp};
    use sluice_wire::{MacAddr, Udp4Flow, Udp4Template};

    fn stamp(seq: u64) -> RxStamp {
        RxStamp {
            stream: 3,
            seq,
            tx_ns: 1_000 + seq,
            short: false,
        }
    }

    /// The IPv4 fragments of a stamped datagram of `len` payload bytes.
    fn v4(seq: u64, len: usize, mtu: usize) -> Vec<Vec<u8>> {
        let t = Udp4Template::new(
            MacAddr([2, 0, 0, 0, 0, 1]),
            MacAddr([2, 0, 0, 0, 0, 2]),
            Udp4Flow {
                src_ip: [10, 0, 0, 1],
                dst_ip: [10, 0, 0, 2],
                src_port: 4000,
                dst_port: 5000,
            },
            64,
        );
        let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let mut p = Vec::new();
        assert!(stamp_payload(&mut p, &body, false, || stamp(seq)));
        let mut f = t.fragments(&p, seq as u16, mtu).unwrap();
        let mut out = Vec::new();
        while let Some((h, b)) = f.next_fragment() {
            out.push([h, b].concat());
        }
        out
    }

    /// An IPv6/UDP datagram of `len` stamped payload bytes cut into pieces
    /// of `per` bytes (a multiple of 8), behind a destination options
    /// header before the fragment header.
    fn v6(seq: u64, len: usize, per: usize) -> Vec<Vec<u8>> {
        let body: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
        let mut p = Vec::new();
        assert!(stamp_payload(&mut p, &body, false, || stamp(seq)));
        let mut dgram = vec![0x0f, 0xa0, 0x13, 0x88];
        dgram.extend_from_slice(&((8 + p.len()) as u16).to_be_bytes());
        dgram.extend_from_slice(&[0, 0]);
        dgram.extend_from_slice(&p);
        let mut out = Vec::new();
        for (k, piece) in dgram.chunks(per).enumerate() {
            let more = (k + 1) * per < dgram.len();
            let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
            f.extend_from_slice(&[0x60, 0, 0, 0]);
            f.extend_from_slice(&((8 + 8 + piece.len()) as u16).to_be_bytes());
            f.extend_from_slice(&[60, 64]);
            f.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
            f.extend_from_slice(&[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
            f.extend_from_slice(&[44, 0, 1, 4, 0, 0, 0, 0]); // dest opts: PadN
            let om = ((k * per / 8) as u16) << 3 | u16::from(more);
            f.extend_from_slice(&[17, 0]);
            f.extend_from_slice(&om.to_be_bytes());
            f.extend_from_slice(&(0x1000 + seq as u32).to_be_bytes());
            f.extend_from_slice(piece);
            out.push(f);
        }
        out
    }

    fn feed(r: &mut Reassembler, frames: &[Vec<u8>]) -> Vec<RxStamp> {
        let mut got = Vec::new();
        for (i, f) in frames.iter().enumerate() {
            assert!(r.push(f, i as u64, |w| got.push(read(w).expect("stamped"))));
        }
        got
    }

    #[test]
    fn pieces_in_any_order_make_one_stamped_datagram() {
        let mut r = Reassembler::default();
        let mut a = v4(1, 4000, 1500);
        assert_eq!(a.len(), 3);
        // No piece alone carries a stamp.
        assert!(a.iter().all(|f| read(f).is_none()));
        a.swap(0, 2);
        let b = v6(2, 3000, 1232);
        let mut all = a.clone();
        all.extend(b.iter().rev().cloned());
        let got = feed(&mut r, &all);
        assert_eq!(got, [stamp(1), stamp(2)]);
        assert_eq!(
            r.stats,
            FragStats {
                fragments: 6,
                reassembled: 2,
                timed_out: 0,
                failed: 0
            }
        );
        // The rebuilt IPv4 datagram is the unfragmented one.
        let mut whole = Vec::new();
        for f in &v4(1, 4000, 1500) {
            r.push(f, 9, |w| whole = w.to_vec());
        }
        assert_eq!(whole, v4(1, 4000, 9000)[0]);
        assert!(!r.push(&whole, 10, |_| panic!("not a fragment")));
    }

    #[test]
    fn missing_duplicated_and_overlapping_pieces_are_counted() {
        let mut r = Reassembler::default();
        // A duplicate piece is ignored; a missing one times out at the end.
        let a = v4(1, 4000, 1500);
        let got = feed(&mut r, &[a[0].clone(), a[0].clone(), a[2].clone()]);
        assert!(got.is_empty());
        r.finish();
        assert_eq!((r.stats.timed_out, r.stats.reassembled), (1, 0));
        // A piece overlapping another with other bytes fails the datagram.
        let mut r = Reassembler::default();
        let mut bad = a[1].clone();
        let n = bad.len();
        bad[n - 1] ^= 0xff;
        feed(&mut r, &[a[1].clone(), bad]);
        assert_eq!(r.stats.failed, 1);
        // Pieces of another cut (mtu 1000) overlap those of 1500.
        let c = v4(1, 4000, 1000);
        feed(&mut r, &[a[0].clone(), c[1].clone()]);
        assert_eq!(r.stats.failed, 2);
        assert!(r.held.is_empty() && r.bytes == 0);
    }

    #[test]
    fn held_datagrams_time_out_and_memory_stays_bounded() {
        let mut r = Reassembler::default();
        for seq in 0..(MAX_HELD as u64 + 10) {
            let a = v4(seq, 2000, 1500);
            r.push(&a[0], seq, |_| panic!("incomplete"));
        }
        assert_eq!(r.held.len(), MAX_HELD);
        assert_eq!(r.stats.failed, 10, "the oldest gave way");
        // Past the timeout, the next piece sweeps them all out.
        let a = v4(99_999, 2000, 1500);
        r.push(&a[0], TIMEOUT_NS + 1_000_000, |_| {});
        assert_eq!(r.stats.timed_out, MAX_HELD as u64);
        assert_eq!(r.held.len(), 1);
        assert_eq!(
            r.bytes,
            r.held.values().map(|h| h.data.len()).sum::<usize>()
        );
    }
}
