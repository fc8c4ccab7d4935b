//! tcpprep's cache file, version 04 (tcpreplay's `src/common/cache.[ch]`),
//! read and written byte for byte as tcpprep does.
//!
//! A 24-byte header, every number big-endian: `tcpprep\0` (8 bytes), the
//! version `04\0\0` (4), the packet count (u64), packets per byte (u16,
//! always 4), the comment's length (u16); then the comment (no NUL), then
//! two bits per packet: packet k (1-based) in byte (k − 1) / 4, its send
//! bit at ((k − 1) mod 4)·2 + 1 and its interface bit just below (1:
//! primary, client to server, `--to`; 0: secondary, `--to2`). A packet
//! whose send bit is 0 is not sent. Unused pairs of the last byte are 0.

/// How tcpprep places one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Client to server: the first port (`--to`, tcpreplay's `-i`).
    Primary,
    /// Server to client: the second port (`--to2`, tcpreplay's `-I`).
    Secondary,
    /// Not sent (tcpprep's include/exclude).
    Skip,
}

impl Dir {
    /// The side replay sends it from (0: `--to`, 1: `--to2`), or None.
    pub fn side(self) -> Option<u8> {
        match self {
            Dir::Primary => Some(0),
            Dir::Secondary => Some(1),
            Dir::Skip => None,
        }
    }
}

const MAGIC: &[u8; 8] = b"tcpprep\0";
const HEADER: usize = 24;
const PER_BYTE: u16 = 4;

/// A tcpprep cache, in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpprepCache {
    pub packets: u64,
    /// tcpprep's comment: its command line unless `--no-arg-comment`,
    /// then "\n" and `-C`'s text.
    pub comment: Vec<u8>,
    data: Vec<u8>,
}

impl TcpprepCache {
    /// Appends the next packet's direction.
    pub fn push(&mut self, dir: Dir) {
        let k = self.packets;
        if k.is_multiple_of(4) {
            self.data.push(0);
        }
        let send_bit = (k % 4) * 2 + 1;
        let byte = self.data.last_mut().expect("pushed");
        match dir {
            Dir::Primary => *byte |= 0b11 << (send_bit - 1),
            Dir::Secondary => *byte |= 0b10 << (send_bit - 1),
            Dir::Skip => {}
        }
        self.packets += 1;
    }

    /// The direction of packet `index` (0-based), None past the end.
    pub fn dir(&self, index: u64) -> Option<Dir> {
        if index >= self.packets {
            return None;
        }
        let pair = (self.data[(index / 4) as usize] >> ((index % 4) * 2)) & 0b11;
        // tcpreplay tests the send bit first: 01 is not sent either.
        Some(match pair {
            0b11 => Dir::Primary,
            0b10 => Dir::Secondary,
            _ => Dir::Skip,
        })
    }

    /// The file tcpprep writes for these directions and this comment.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.comment.len() + self.data.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(b"04\0\0");
        out.extend_from_slice(&self.packets.to_be_bytes());
        out.extend_from_slice(&PER_BYTE.to_be_bytes());
        let len = u16::try_from(self.comment.len()).unwrap_or(u16::MAX);
        out.extend_from_slice(&len.to_be_bytes());
        out.extend_from_slice(&self.comment[..usize::from(len)]);
        out.extend_from_slice(&self.data);
        out
    }

    /// Parses a cache file's bytes; errors name the offset. Stricter than
    /// tcpreplay where it would misread: the version must be 4, packets
    /// per byte 4, and the data exactly as long as the count says.
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() < HEADER {
            return Err(format!(
                "offset 0: {} bytes, shorter than a tcpprep cache header ({HEADER})",
                bytes.len()
            ));
        }
        if &bytes[..8] != MAGIC {
            return Err("offset 0: not a tcpprep cache file (no 'tcpprep' magic)".into());
        }
        let version = &bytes[8..12];
        let digits: Vec<u8> = version.iter().copied().take_while(|b| *b != 0).collect();
        if std::str::from_utf8(&digits)
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
            != Some(4)
        {
            return Err(format!(
                "offset 8: cache version {:?}, this reads version 04 (tcpreplay 3.3 and later)",
                String::from_utf8_lossy(&digits)
            ));
        }
        let packets = u64::from_be_bytes(bytes[12..20].try_into().expect("8 bytes"));
        let per_byte = u16::from_be_bytes([bytes[20], bytes[21]]);
        if per_byte != PER_BYTE {
            return Err(format!(
                "offset 20: {per_byte} packets per byte, tcpprep writes {PER_BYTE}"
            ));
        }
        let comment_len = usize::from(u16::from_be_bytes([bytes[22], bytes[23]]));
        let body = &bytes[HEADER..];
        if body.len() < comment_len {
            return Err(format!(
                "offset {HEADER}: a comment of {comment_len} bytes, the file ends after {}",
                body.len()
            ));
        }
        let want = packets.div_ceil(4);
        let data = &body[comment_len..];
        if data.len() as u64 != want {
            return Err(format!(
                "offset {}: {} bytes of directions for {packets} packets, expected {want}",
                HEADER + comment_len,
                data.len()
            ));
        }
        Ok(TcpprepCache {
            packets,
            comment: body[..comment_len].to_vec(),
            data: data.to_vec(),
        })
    }

    /// Reads a cache file; errors name the file and the offset. The
    /// header says how long the file is, so no more than that (and one
    /// byte to see the end) is read, whatever the path names: a device
    /// that never ends or a FIFO fed for ever costs no memory.
    pub fn read(path: &std::path::Path) -> Result<Self, String> {
        let name = path.display();
        let bytes = super::read_sized(path, "tcpprep cache", HEADER, |h| {
            if &h[..8] != MAGIC {
                return Ok(None);
            }
            let packets = u64::from_be_bytes(h[12..20].try_into().expect("8 bytes"));
            let comment = u64::from(u16::from_be_bytes([h[22], h[23]]));
            // 2 bits a packet: a cache of a trace of 2^32 packets is
            // 1 GiB; a header that claims more is not one.
            if packets > 1 << 32 {
                return Err(format!(
                    "offset 12: {packets} packets, more than a tcpprep cache holds (2^32)"
                ));
            }
            Ok(Some(comment + packets.div_ceil(4)))
        })?;
        Self::parse(&bytes).map_err(|e| format!("{name}: {e}"))
    }

    /// Primary, secondary and skipped packets (tcpprep `--print-stats`).
    pub fn counts(&self) -> [u64; 3] {
        let mut c = [0; 3];
        for k in 0..self.packets {
            c[match self.dir(k).expect("in range") {
                Dir::Primary => 0,
                Dir::Secondary => 1,
                Dir::Skip => 2,
            }] += 1;
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_sit_as_tcpprep_puts_them() {
        let mut c = TcpprepCache::default();
        for d in [
            Dir::Primary,
            Dir::Primary,
            Dir::Secondary,
            Dir::Primary,
            Dir::Skip,
        ] {
            c.push(d);
        }
        let b = c.to_bytes();
        assert_eq!(&b[..12], b"tcpprep\0\x30\x34\0\0");
        assert_eq!(&b[12..24], &[0, 0, 0, 0, 0, 0, 0, 5, 0, 4, 0, 0]);
        // P,P,S,P = 0b11_10_11_11 (packet 1 in the low bits), then a skip.
        assert_eq!(&b[24..], &[0xef, 0x00]);
        let back = TcpprepCache::parse(&b).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.dir(2), Some(Dir::Secondary));
        assert_eq!(back.dir(4), Some(Dir::Skip));
        assert_eq!(back.dir(5), None);
        assert_eq!(back.counts(), [3, 1, 1]);
    }

    #[test]
    fn a_wrong_truncated_or_foreign_cache_is_refused_at_its_offset() {
        let mut c = TcpprepCache {
            comment: b"\nhello".to_vec(),
            ..Default::default()
        };
        (0..9).for_each(|_| c.push(Dir::Secondary));
        let good = c.to_bytes();
        assert_eq!(TcpprepCache::parse(&good).unwrap().comment, b"\nhello");
        let err = |b: &[u8]| TcpprepCache::parse(b).unwrap_err();
        assert!(err(&good[..10]).starts_with("offset 0:"));
        assert!(err(b"SLCSPLT1 and more than twenty-four bytes").contains("not a tcpprep"));
        let mut v3 = good.clone();
        v3[9] = b'3';
        assert!(err(&v3).starts_with("offset 8:"));
        let mut ppb = good.clone();
        ppb[21] = 8;
        assert!(err(&ppb).starts_with("offset 20:"));
        assert!(err(&good[..good.len() - 1]).starts_with("offset 30:"));
        assert!(err(&good[..26]).contains("comment of 6 bytes"));
        let mut long = good.clone();
        long.push(0);
        assert!(err(&long).contains("expected 3"));
    }
}
