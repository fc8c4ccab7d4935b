//! The reader's own input buffer: one `Vec<u8>` window over the stream,
//! refilled by moving the unread tail to the front and `read`ing behind it.
//!
//! Design: records are parsed in place and handed out as slices of this
//! buffer, so the per-packet cost is a few bounds checks and no copy. The
//! buffer starts at [`INITIAL_CAPACITY`] (cheap for tiny inputs) and doubles
//! to [`STEADY_CAPACITY`] once the stream proves longer, so large files are
//! read in 1 MiB `read` calls. Beyond that it grows only when one record or
//! block does not fit, and then only while bytes actually arrive: a garbage
//! length field near the end of a small file costs no large allocation,
//! because the buffer doubles only once it is full of real data.

use std::io::{self, Read};

/// Starting size of the window.
pub(crate) const INITIAL_CAPACITY: usize = 64 << 10;
/// Size the window grows to once the stream is longer than it; also the
/// usual size of one `read` call on large files.
pub(crate) const STEADY_CAPACITY: usize = 1 << 20;

/// A window over a byte stream for parsers that read records in place:
/// bounded memory, one `read` per refill, stream offsets for error messages.
pub struct StreamBuf {
    src: Box<dyn Read + Send>,
    /// Backing storage; `buf.len()` is the capacity in use.
    buf: Vec<u8>,
    /// Unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
}

impl StreamBuf {
    pub fn new(src: Box<dyn Read + Send>) -> StreamBuf {
        StreamBuf::with_capacity(src, INITIAL_CAPACITY)
    }

    pub fn with_capacity(src: Box<dyn Read + Send>, cap: usize) -> StreamBuf {
        StreamBuf {
            src,
            buf: vec![0; cap.max(64)],
            start: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    /// Stream offset of the first unread byte (= bytes consumed so far).
    #[inline]
    pub fn offset(&self) -> u64 {
        self.base + self.start as u64
    }

    /// The unread bytes currently buffered.
    #[inline]
    pub fn avail(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Index of the first unread byte in the backing storage (for building
    /// slices that outlive a [`consume`](Self::consume)).
    #[inline]
    pub fn pos(&self) -> usize {
        self.start
    }

    /// The backing storage (see [`pos`](Self::pos)).
    #[inline]
    pub fn storage(&self) -> &[u8] {
        &self.buf
    }

    /// Makes at least `n` unread bytes available if the stream has them.
    /// Returns how many are available: `>= n`, or fewer at end of stream.
    #[inline]
    pub fn fill(&mut self, n: usize) -> io::Result<usize> {
        let have = self.end - self.start;
        if have >= n {
            return Ok(have);
        }
        self.fill_slow(n)
    }

    #[cold]
    fn fill_slow(&mut self, n: usize) -> io::Result<usize> {
        while self.end - self.start < n && !self.eof {
            let short = n - (self.end - self.start);
            if self.buf.len() - self.end < short && self.start > 0 {
                // Not enough room behind the data: move it to the front. If
                // the buffer was full, the stream is longer than the buffer:
                // step up towards the steady size.
                let was_full = self.end == self.buf.len();
                let len = self.buf.len();
                let cap = if was_full && len < STEADY_CAPACITY {
                    (len * 2).min(STEADY_CAPACITY)
                } else {
                    len
                };
                self.relocate(cap);
            }
            if self.end == self.buf.len() {
                // Full of real data (`start == 0`) and still short, so
                // `n > buf.len()`: grow, doubling but never past `n`.
                let cap = self.buf.len().saturating_mul(2).min(n);
                self.relocate(cap);
            }
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k.min(self.buf.len() - self.end),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(self.end - self.start)
    }

    /// Moves the unread bytes to the front of a buffer of `cap` bytes
    /// (`cap >= end - start`), reusing the current one if the size stays.
    fn relocate(&mut self, cap: usize) {
        let live = self.end - self.start;
        if cap == self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
        } else {
            // A fresh zeroed allocation (calloc) plus one copy of the live
            // bytes is cheaper than `resize`, which also copies the dead ones.
            let mut bigger = vec![0; cap];
            bigger[..live].copy_from_slice(&self.buf[self.start..self.end]);
            self.buf = bigger;
        }
        self.base += self.start as u64;
        self.start = 0;
        self.end = live;
    }

    /// Marks `n` buffered bytes as read. `n` must not exceed `avail().len()`.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.end - self.start);
        self.start += n.min(self.end - self.start);
    }

    /// Takes the buffer apart: the unread bytes and the source positioned
    /// after them.
    pub fn into_parts(self) -> (Vec<u8>, Box<dyn Read + Send>) {
        let mut v = self.buf;
        v.truncate(self.end);
        v.drain(..self.start);
        (v, self.src)
    }

    /// Discards up to `n` bytes, reading through the stream in buffer-sized
    /// steps without growing the buffer. Returns how many were discarded
    /// (fewer than `n` only at end of stream).
    pub fn skip(&mut self, n: u64) -> io::Result<u64> {
        let mut left = n;
        loop {
            let have = (self.end - self.start) as u64;
            let take = have.min(left);
            self.start += take as usize;
            left -= take;
            if left == 0 {
                return Ok(n);
            }
            // Buffer drained: refill from the front.
            self.base += self.end as u64;
            self.start = 0;
            self.end = 0;
            if self.fill(1)? == 0 {
                return Ok(n - left);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `chunk` bytes per call.
    struct Trickle {
        data: Vec<u8>,
        pos: usize,
        chunk: usize,
    }

    impl Read for Trickle {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let k = out.len().min(self.chunk).min(self.data.len() - self.pos);
            out[..k].copy_from_slice(&self.data[self.pos..self.pos + k]);
            self.pos += k;
            Ok(k)
        }
    }

    fn trickle(len: usize, chunk: usize) -> Box<dyn Read + Send> {
        let data = (0..len).map(|i| (i % 251) as u8).collect();
        Box::new(Trickle {
            data,
            pos: 0,
            chunk,
        })
    }

    #[test]
    fn fill_consume_and_offsets_across_refills() {
        let mut b = StreamBuf::with_capacity(trickle(1000, 7), 64);
        let mut off = 0u64;
        while b.fill(10).unwrap() >= 10 {
            assert_eq!(b.offset(), off);
            assert_eq!(b.avail()[0], (off % 251) as u8);
            b.consume(10);
            off += 10;
        }
        assert_eq!(off, 1000);
        assert_eq!(b.fill(10).unwrap(), 0);
    }

    #[test]
    fn grows_only_for_a_larger_request_and_only_with_data() {
        let mut b = StreamBuf::with_capacity(trickle(300, 13), 64);
        assert!(b.fill(200).unwrap() >= 200);
        assert!(b.storage().len() >= 200);
        assert_eq!(b.avail()[199], 199);

        // A huge request against a short stream stops at end of stream and
        // does not allocate anything near the request.
        let mut b = StreamBuf::with_capacity(trickle(100, 100), 64);
        assert_eq!(b.fill(usize::MAX / 2).unwrap(), 100);
        assert!(b.storage().len() <= 256);
    }

    #[test]
    fn skip_streams_past_the_buffer() {
        let mut b = StreamBuf::with_capacity(trickle(10_000, 1000), 64);
        b.fill(5).unwrap();
        assert_eq!(b.skip(9_000).unwrap(), 9_000);
        assert_eq!(b.offset(), 9_000);
        assert!(b.fill(1).unwrap() > 0);
        assert_eq!(b.avail()[0], (9_000 % 251) as u8);
        assert_eq!(b.skip(5_000).unwrap(), 1_000);
        assert_eq!(b.offset(), 10_000);
        assert!(b.storage().len() == 64);
    }
}
