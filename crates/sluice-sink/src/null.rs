//! The null sink: counts frames and bytes, sends nothing. With it the
//! engine's own cost is measured (no syscalls on the data path).

use crate::{Sink, SinkError};

#[derive(Debug, Default)]
pub struct NullSink {
    pub packets: u64,
    pub bytes: u64,
    /// XOR of the first byte of every frame: keeps the optimiser from
    /// discarding the frame reads, so the benchmark measures real work.
    pub touch: u8,
}

impl Sink for NullSink {
    #[inline]
    fn send(&mut self, frame: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        self.packets += 1;
        self.bytes += frame.len() as u64;
        self.touch ^= frame.first().copied().unwrap_or(0);
        Ok(())
    }

    #[inline]
    fn send_parts(&mut self, head: &[u8], body: &[u8], _stamp_ns: u64) -> Result<(), SinkError> {
        self.packets += 1;
        self.bytes += (head.len() + body.len()) as u64;
        self.touch ^= head.first().or(body.first()).copied().unwrap_or(0);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SinkError> {
        Ok(())
    }

    fn describe(&self) -> String {
        "null".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        let mut s = NullSink::default();
        s.send(&[1, 2, 3], 0).unwrap();
        s.send(&[3], 0).unwrap();
        assert_eq!((s.packets, s.bytes, s.touch), (2, 4, 2));
    }
}
