//! Where a received turn ends, read byte by byte as segments arrive (a
//! head or a length split across segments is fine): a fixed length, an
//! HTTP/1.1 message (its head, then Content-Length bytes of body), or a
//! length-prefixed message. A few bytes of state per connection, no
//! buffer.

pub use crate::program::SIZED_HEAD;
use crate::program::{fnv, Expect, FNV_START};

/// A head longer than this is not HTTP: the turn fails.
const MAX_HEAD: u64 = 64 * 1024;

const CONTENT_LENGTH: &[u8] = b"\ncontent-length:";
const CONN_CLOSE: &[u8] = b"\nconnection: close";

#[derive(Debug, Clone, Copy, Default)]
pub struct RxParse {
    /// Bytes of the turn received.
    pub got: u64,
    /// The turn's length once known (0: not yet).
    need: u64,
    crlf: u8,
    cl_match: u8,
    cl_state: u8,
    cl: u64,
    close_match: u8,
    /// The message asked the connection to close (HTTP).
    pub close: bool,
    /// Length the message asks of its answer (length-prefixed).
    pub asked: u32,
    /// FNV-1a of the HTTP body (or of the whole turn otherwise).
    pub hash: u64,
    head_left: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// All bytes belong to the turn; it goes on.
    More,
    /// The turn ended after this many of the bytes given.
    Done(usize),
    /// Not the message the turn expects.
    Bad(&'static str),
}

impl RxParse {
    pub fn new() -> RxParse {
        RxParse {
            hash: FNV_START,
            head_left: SIZED_HEAD as u8,
            ..RxParse::default()
        }
    }

    /// HTTP body bytes (0 until the head is read).
    pub fn body_len(&self) -> u64 {
        self.cl
    }

    /// Feeds the turn's next bytes.
    pub fn feed(&mut self, expect: Expect, bytes: &[u8]) -> Fed {
        match expect {
            Expect::Len(n) => self.counted(u64::from(n), bytes),
            Expect::Datagram => {
                self.got += bytes.len() as u64;
                self.hash = fnv(self.hash, bytes);
                Fed::Done(bytes.len())
            }
            Expect::Sized => {
                let mut i = 0;
                while self.head_left > 0 && i < bytes.len() {
                    let at = SIZED_HEAD - usize::from(self.head_left);
                    // Own length in bytes 0..4, the answer's in 4..8.
                    if at < 4 {
                        self.need = (self.need << 8) | u64::from(bytes[i]);
                    } else {
                        self.asked = (self.asked << 8) | u32::from(bytes[i]);
                    }
                    self.head_left -= 1;
                    self.got += 1;
                    i += 1;
                }
                if self.head_left == 0 && self.need < SIZED_HEAD as u64 {
                    return Fed::Bad("a length-prefixed message shorter than its header");
                }
                if self.head_left > 0 {
                    return Fed::More;
                }
                match self.counted(self.need, &bytes[i..]) {
                    Fed::Done(n) => Fed::Done(n + i),
                    f => f,
                }
            }
            Expect::Http => self.http(bytes),
        }
    }

    fn counted(&mut self, need: u64, bytes: &[u8]) -> Fed {
        let take = (need - self.got.min(need)).min(bytes.len() as u64) as usize;
        self.got += take as u64;
        self.hash = fnv(self.hash, &bytes[..take]);
        if self.got >= need {
            Fed::Done(take)
        } else {
            Fed::More
        }
    }

    fn http(&mut self, bytes: &[u8]) -> Fed {
        let mut i = 0;
        // The head, to its blank line.
        while self.need == 0 && i < bytes.len() {
            let b = bytes[i].to_ascii_lowercase();
            i += 1;
            self.got += 1;
            self.crlf = match (self.crlf, b) {
                (0 | 2, b'\r') => self.crlf + 1,
                (1 | 3, b'\n') => self.crlf + 1,
                (_, b'\r') => 1,
                _ => 0,
            };
            step_match(&mut self.close_match, CONN_CLOSE, b);
            if usize::from(self.close_match) == CONN_CLOSE.len() {
                self.close = true;
                self.close_match = 0;
            }
            match self.cl_state {
                0 => {
                    step_match(&mut self.cl_match, CONTENT_LENGTH, b);
                    if usize::from(self.cl_match) == CONTENT_LENGTH.len() {
                        self.cl_state = 1;
                        self.cl_match = 0;
                    }
                }
                1 if b == b' ' || b == b'\t' => {}
                1 | 2 if b.is_ascii_digit() => {
                    self.cl_state = 2;
                    self.cl = self
                        .cl
                        .saturating_mul(10)
                        .saturating_add(u64::from(b - b'0'));
                }
                1 | 2 => self.cl_state = 3,
                _ => {}
            }
            if self.crlf == 4 {
                // Body bytes follow the head: `need` counts both.
                self.need = self.got + self.cl;
                self.hash = FNV_START;
                break;
            }
            if self.got > MAX_HEAD {
                return Fed::Bad("an HTTP head longer than 64 KiB");
            }
        }
        if self.need == 0 {
            // The head alone started: the "\n" of a first line in the
            // match buffer would be the only way to see line starts.
            return Fed::More;
        }
        let take = (self.need - self.got).min((bytes.len() - i) as u64) as usize;
        self.hash = fnv(self.hash, &bytes[i..i + take]);
        self.got += take as u64;
        if self.got >= self.need {
            Fed::Done(i + take)
        } else {
            Fed::More
        }
    }
}

fn step_match(m: &mut u8, pat: &[u8], b: u8) {
    if pat[usize::from(*m)] == b {
        *m += 1;
    } else {
        *m = u8::from(pat[0] == b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_all(p: &mut RxParse, e: Expect, data: &[u8], piece: usize) -> Option<usize> {
        let mut at = 0;
        for c in data.chunks(piece) {
            match p.feed(e, c) {
                Fed::Done(n) => return Some(at + n),
                Fed::More => at += c.len(),
                Fed::Bad(w) => panic!("{w}"),
            }
        }
        None
    }

    #[test]
    fn an_http_response_ends_after_its_content_length_in_any_split() {
        let body = b"0123456789";
        let msg = [
            &b"HTTP/1.1 200 OK\r\nServer: x\r\nContent-Length:  10\r\nConnection: close\r\n\r\n"[..],
            body,
            b"NEXT",
        ]
        .concat();
        for piece in [1, 2, 3, 7, 64, 1000] {
            let mut p = RxParse::new();
            let end = feed_all(&mut p, Expect::Http, &msg, piece).expect("ends");
            assert_eq!(end, msg.len() - 4, "piece {piece}");
            assert_eq!(p.body_len(), 10);
            assert_eq!(p.hash, fnv(FNV_START, body));
            assert!(p.close);
        }
    }

    #[test]
    fn a_get_without_body_ends_at_its_blank_line() {
        let msg = b"GET /x HTTP/1.1\r\nHost: a\r\n\r\nGET /y";
        let mut p = RxParse::new();
        assert_eq!(feed_all(&mut p, Expect::Http, msg, 5), Some(28));
        assert!(!p.close);
    }

    #[test]
    fn a_length_prefixed_message_reads_its_lengths_from_its_header() {
        let mut msg = vec![0, 0, 0, 20, 0, 0, 1, 0];
        msg.extend(std::iter::repeat_n(b'a', 12));
        msg.extend(b"extra");
        let mut p = RxParse::new();
        assert_eq!(feed_all(&mut p, Expect::Sized, &msg, 3), Some(20));
        assert_eq!(p.asked, 256);
        let mut bad = RxParse::new();
        assert!(matches!(
            bad.feed(Expect::Sized, &[0, 0, 0, 2, 0, 0, 0, 0]),
            Fed::Bad(_)
        ));
    }

    #[test]
    fn a_head_that_never_ends_is_refused() {
        let mut p = RxParse::new();
        let junk = vec![b'x'; 70 * 1024];
        assert!(matches!(p.feed(Expect::Http, &junk), Fed::Bad(_)));
    }
}
