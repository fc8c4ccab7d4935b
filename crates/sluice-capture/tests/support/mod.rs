//! Shared by the mutation tests of the capture readers and of the archive.
#![allow(dead_code)]

use std::io::{self, Cursor, Read};

/// splitmix64: small, seedable, good enough for picking mutations.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// A reader that hands out at most `chunk` bytes per call (exercises the
/// refill paths).
pub struct Trickle {
    pub data: Cursor<Vec<u8>>,
    pub chunk: usize,
}

impl Read for Trickle {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(self.chunk);
        self.data.read(&mut out[..n])
    }
}
