//! `--fuzz-seed` and `--fuzz-factor`: tcpedit's fuzzing
//! (`src/tcpedit/fuzzing.c`, tcpreplay 4.5), draw for draw. One draw of
//! `tcpr_random` per packet edited; one packet in `factor` (those whose
//! draw divides by it) gets one of eleven changes past its L4 header:
//! dropped, cut short, or a run of 1 to 15 bytes at its start, inside or
//! at its end set to 0x00, 0xFF or XORed with a byte of the draw.
//! Lengths change in the record only (never in IP or UDP), and a changed
//! packet has its checksums computed anew.
//!
//! Kept from tcpedit as it is: the span fuzzed ends at the L4 header's
//! offset *from the frame's start* (not at the payload's end), so a change
//! may fall past the captured bytes and show nowhere. Not kept: tcpedit
//! runs its TTL, port and sequence edits a second time on every packet
//! when it fuzzes (a `goto` back over them); sluice runs them once. An
//! IPv6 packet with extension headers is left alone (its draw taken).

use crate::tcpr_random;
use std::cell::Cell;

/// The fuzzer's state: tcpedit's global seed, and one packet in `factor`.
pub struct Fuzz {
    state: Cell<u32>,
    factor: u32,
}

/// What the fuzzer did to a packet.
#[derive(Debug, PartialEq, Eq)]
pub enum Fuzzed {
    Untouched,
    /// Bytes or the length changed: checksums are computed anew.
    Changed,
    /// Cut to nothing: not written.
    Dropped,
}

impl Fuzz {
    /// `--fuzz-seed SEED --fuzz-factor FACTOR` (FACTOR ≥ 1): the seed
    /// stepped by five draws, as tcpedit's option parsing leaves it.
    pub fn new(seed: u32, factor: u32) -> Fuzz {
        let mut s = seed;
        for _ in 0..5 {
            tcpr_random(&mut s);
        }
        Fuzz {
            state: Cell::new(s),
            factor: factor.max(1),
        }
    }

    /// Fuzzes the Ethernet `frame` (its captured bytes; `len` its original
    /// length, both changed by a cut) whose L3 header starts at `l3`, of IP
    /// version `ip` (None: not IP). `outer`: the bytes before `frame` in
    /// the packet (a pseudowire's outer headers), which tcpedit counts in
    /// its offsets.
    pub fn packet(
        &self,
        frame: &mut Vec<u8>,
        len: &mut usize,
        l3: usize,
        ip: Option<u8>,
        outer: usize,
    ) -> Fuzzed {
        let mut s = self.state.get();
        let mut r = tcpr_random(&mut s);
        self.state.set(s);
        if !r.is_multiple_of(self.factor) || frame.len() < l3 {
            return Fuzzed::Untouched;
        }
        let caplen = frame.len();
        // The L4 header's offset in the frame, and its protocol.
        let (mut l4data, proto) = match ip {
            Some(4) => {
                let Some(&vihl) = frame.get(l3) else {
                    return Fuzzed::Untouched;
                };
                let at = l3 + usize::from(vihl & 0x0f) * 4;
                if at > caplen {
                    return Fuzzed::Untouched;
                }
                (at, frame.get(l3 + 9).copied().unwrap_or(0))
            }
            Some(_) => {
                let at = l3 + 40;
                let nh = frame.get(l3 + 6).copied().unwrap_or(0);
                // Extension headers (tcpedit walks them; see the top).
                if at > caplen || matches!(nh, 0 | 43 | 44 | 50 | 51 | 60 | 41) {
                    return Fuzzed::Untouched;
                }
                (at, nh)
            }
            _ => (l3, 255),
        };
        // tcpedit's l4len: the L4 header's offset from the frame's start
        // for IP, the bytes after the L2 header otherwise.
        let mut l4len = match ip {
            Some(_) => (outer + l4data) as i64,
            None => (caplen - l3) as i64,
        };
        match proto {
            6 => {
                l4len -= 20;
                l4data += 20;
            }
            17 => {
                l4len -= 8;
                l4data += 8;
            }
            _ => {}
        }
        if l4len <= 1 || l4data > caplen {
            return Fuzzed::Untouched;
        }
        r ^= r >> 16;
        let x = (r >> 4) as u8;
        let sgt = |n: i64| -> i64 {
            match n {
                0 => 0,
                1..=16 => 1,
                _ => 1 + i64::from(r % 15),
            }
        };
        // Sets (or XORs) bytes `from..from + n` of the L4 data, as far as
        // the captured bytes go (tcpedit writes past them, unseen).
        let mut fill = |from: i64, n: i64, how: Option<u8>| {
            for i in from.max(0)..from + n {
                if let Some(b) = frame.get_mut(l4data + i as usize) {
                    *b = how.unwrap_or(*b ^ x);
                }
            }
        };
        match r % 11 {
            // Dropped: tcpedit cuts it to 0 bytes, which is not written.
            0 => {
                if *len < caplen {
                    return Fuzzed::Untouched;
                }
                return Fuzzed::Dropped;
            }
            1 => {
                let new = (i64::from(r) % (l4len - 1) + 1) as usize;
                if *len < caplen || new > outer + caplen {
                    return Fuzzed::Untouched;
                }
                let new = new.saturating_sub(outer);
                frame.truncate(new);
                *len = new;
            }
            2 => fill(0, sgt(l4len), Some(0x00)),
            3 => fill(0, sgt(l4len), None),
            4 => fill(0, sgt(l4len), Some(0xff)),
            k @ 5..=7 => {
                if k != 6 && l4len <= 2 {
                    return Fuzzed::Untouched;
                }
                let off = i64::from(r >> 16) % (l4len - 1) + 1;
                let n = sgt(l4len - off);
                if n == 0 || (k == 6 && n > l4len) {
                    return Fuzzed::Untouched;
                }
                let how = match k {
                    5 => Some(0x00),
                    7 => Some(0xff),
                    _ => None,
                };
                fill(off, n, how);
            }
            k => {
                let n = sgt(l4len);
                if n == 0 || n > l4len {
                    return Fuzzed::Untouched;
                }
                let how = match k {
                    8 => Some(0x00),
                    9 => None,
                    _ => Some(0xff),
                };
                fill(l4len - n, n, how);
            }
        }
        Fuzzed::Changed
    }
}

/// Whether tcpedit, reading a fuzzed frame again, still finds its L2
/// header, and for IP its L3 header and where L4 starts.
pub fn headers_whole(frame: &[u8], l3: usize, ip: Option<u8>) -> bool {
    if frame.len() < 14 || frame.len() < l3 {
        return false;
    }
    match ip {
        Some(4) => frame.len() >= l3 + 20 && l3 + usize::from(frame[l3] & 0x0f) * 4 <= frame.len(),
        Some(_) => frame.len() >= l3 + 40,
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_packet_in_factor_and_its_bytes_past_the_l4_header() {
        let f = Fuzz::new(42, 1);
        let mut changed = 0;
        for k in 0..200u32 {
            // Ethernet, IPv4 (IHL 5), UDP, 40 payload bytes.
            let mut frame = vec![0u8; 14 + 20 + 8 + 40];
            frame[14] = 0x45;
            frame[14 + 9] = 17;
            for (i, b) in frame.iter_mut().enumerate().skip(42) {
                *b = (i as u32 + k) as u8;
            }
            let before = frame.clone();
            let mut len = frame.len();
            match f.packet(&mut frame, &mut len, 14, Some(4), 0) {
                Fuzzed::Untouched => assert_eq!(frame, before),
                Fuzzed::Dropped => {}
                Fuzzed::Changed => {
                    changed += 1;
                    assert_eq!(len, frame.len());
                    // Headers are never touched (a cut may end inside them).
                    let h = frame.len().min(42);
                    assert_eq!(frame[..h], before[..h]);
                }
            }
        }
        // Factor 1: every draw fuzzes; few changes fall past the bytes.
        assert!(changed > 100, "{changed}");
        let g = Fuzz::new(42, 1000);
        let mut frame = vec![0u8; 100];
        let mut len = 100;
        let untouched = (0..50)
            .filter(|_| g.packet(&mut frame, &mut len, 14, Some(4), 0) == Fuzzed::Untouched)
            .count();
        assert!(untouched >= 45, "{untouched}");
    }
}
