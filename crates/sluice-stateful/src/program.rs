//! Programs: what the two ends of one conversation say, in turns. Each
//! turn is sent by one side and received by the other; the client runs
//! the program from its side and the server from its own, so one program
//! drives both. Payload bytes live once in the program (or are a
//! pattern), never per connection: a connection holds a cursor.

use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Client,
    Server,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    Tcp,
    Udp,
}

/// What a turn's sender sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Bytes `start..start + len` of the program's `data`.
    Literal { start: u32, len: u32 },
    /// `len` bytes of the pattern.
    Pattern(u32),
    /// An HTTP/1.1 response head naming `len` body bytes, then the body
    /// from the pattern (the server side of an HTTP template).
    HttpResponse(u32),
    /// A length-prefixed message whose length the connection drew from
    /// law `law` of the program (the `rr` template): 8 bytes of header
    /// (its own length, the length asked of the answer) then the pattern.
    Drawn { law: u8, answer_law: Option<u8> },
    /// A length-prefixed answer whose length the request named.
    Answer,
}

/// How a turn's receiver knows the turn is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Exactly this many bytes.
    Len(u32),
    /// An HTTP/1.1 message: the head to its blank line, then as many body
    /// bytes as its Content-Length says.
    Http,
    /// A length-prefixed message (the `rr` template's header).
    Sized,
    /// One datagram (UDP).
    Datagram,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub from: Side,
    pub body: Body,
    pub expect: Expect,
    /// The sender waits this long before sending the turn (a capture's
    /// pause, kept or compressed).
    pub pause_ns: u64,
}

/// A law connections draw a message length from.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeLaw {
    Fixed(u32),
    Uniform(u32, u32),
    /// Exponential with this mean, capped at 16 MiB.
    Exp(f64),
}

impl SizeLaw {
    pub fn draw(&self, rng: &mut impl rand::Rng) -> u32 {
        let v = match *self {
            SizeLaw::Fixed(n) => n,
            SizeLaw::Uniform(a, b) => rng.random_range(a..=b),
            SizeLaw::Exp(mean) => {
                let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
                (-u.ln() * mean).round().min(16.0 * 1048576.0) as u32
            }
        };
        // A length-prefixed message holds at least its header.
        v.max(SIZED_HEAD as u32)
    }
}

/// Bytes of a length-prefixed message's header (the `rr` template): its
/// own length and the length it asks of the answer, both u32 big-endian.
pub const SIZED_HEAD: usize = 8;

/// What a client checks of the last HTTP response body it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verify {
    pub len: u64,
    pub fnv: u64,
}

#[derive(Debug, Clone)]
pub struct Program {
    pub name: String,
    pub proto: Proto,
    /// The server's port.
    pub port: u16,
    pub turns: Vec<Turn>,
    /// Who closes once the turns are done (TCP).
    pub closer: Side,
    /// The server answers turns again and again until the client closes
    /// (an HTTP server under h2load or wrk).
    pub repeat: bool,
    pub data: Arc<[u8]>,
    pub laws: Vec<SizeLaw>,
    /// Share of the connections opened (relative to the other programs').
    pub weight: u32,
    pub verify: Option<Verify>,
    /// A repeating server closes after this many rounds of turns (an
    /// HTTP server's keepalive_requests).
    pub max_rounds: Option<u32>,
    /// HTTP answers say `Connection: close`.
    pub http_close: bool,
}

/// The bytes a pattern body is made of: printable, so a capture of the
/// conversation reads as text, and with no CR/LF pair, so no HTTP parser
/// sees a blank line in a body.
pub fn pattern_byte(off: u64) -> u8 {
    b"abcdefghijklmnopqrstuvwxyz0123456789"[(off % 36) as usize]
}

/// FNV-1a, 64 bits: a response body's digest, carried across segments.
pub const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

pub fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The head of an HTTP response of `len` body bytes.
pub fn http_head(len: u32, close: bool) -> String {
    let conn = if close { "Connection: close\r\n" } else { "" };
    format!("HTTP/1.1 200 OK\r\nServer: sluice\r\nContent-Type: application/octet-stream\r\nContent-Length: {len}\r\n{conn}\r\n")
}

impl Program {
    /// Bytes turn `t` sends, given the connection's drawn lengths and
    /// the answer length its peer asked for.
    pub fn turn_len(&self, t: &Turn, drawn: &[u32; 2], asked: u32) -> u64 {
        match t.body {
            Body::Literal { len, .. } => u64::from(len),
            Body::Pattern(n) => u64::from(n),
            Body::HttpResponse(n) => http_head(n, self.http_close).len() as u64 + u64::from(n),
            Body::Drawn { law, .. } => u64::from(drawn[usize::from(law).min(1)]),
            Body::Answer => u64::from(asked.max(SIZED_HEAD as u32)),
        }
    }

    /// Writes bytes `off..off + out.len()` of turn `t` into `out`.
    pub fn write_turn(&self, t: &Turn, drawn: &[u32; 2], asked: u32, off: u64, out: &mut [u8]) {
        match t.body {
            Body::Literal { start, .. } => {
                let s = start as usize + off as usize;
                out.copy_from_slice(&self.data[s..s + out.len()]);
            }
            Body::Pattern(_) => fill_pattern(off, out),
            Body::HttpResponse(n) => {
                let head = http_head(n, self.http_close);
                let head = head.as_bytes();
                for (i, b) in out.iter_mut().enumerate() {
                    let o = off as usize + i;
                    *b = if o < head.len() {
                        head[o]
                    } else {
                        pattern_byte((o - head.len()) as u64)
                    };
                }
            }
            Body::Drawn { law, answer_law } => {
                let own = drawn[usize::from(law).min(1)];
                let ask = answer_law.map_or(0, |l| drawn[usize::from(l).min(1)]);
                sized(own, ask, off, out)
            }
            Body::Answer => sized(asked.max(SIZED_HEAD as u32), 0, off, out),
        }
    }
}

fn fill_pattern(off: u64, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        *b = pattern_byte(off + i as u64);
    }
}

fn sized(own: u32, ask: u32, off: u64, out: &mut [u8]) {
    let mut head = [0u8; SIZED_HEAD];
    head[0..4].copy_from_slice(&own.to_be_bytes());
    head[4..8].copy_from_slice(&ask.to_be_bytes());
    for (i, b) in out.iter_mut().enumerate() {
        let o = off as usize + i;
        *b = if o < head.len() {
            head[o]
        } else {
            pattern_byte(o as u64)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_response_turn_writes_its_head_then_its_body_in_any_pieces() {
        let p = Program {
            name: "t".into(),
            proto: Proto::Tcp,
            port: 80,
            turns: vec![],
            closer: Side::Server,
            repeat: false,
            data: Arc::from(&b""[..]),
            laws: vec![],
            weight: 1,
            verify: None,
            max_rounds: None,
            http_close: false,
        };
        let t = Turn {
            from: Side::Server,
            body: Body::HttpResponse(100),
            expect: Expect::Http,
            pause_ns: 0,
        };
        let n = p.turn_len(&t, &[0, 0], 0) as usize;
        let mut whole = vec![0u8; n];
        p.write_turn(&t, &[0, 0], 0, 0, &mut whole);
        let mut pieces = vec![0u8; n];
        for (i, c) in pieces.chunks_mut(7).enumerate() {
            p.write_turn(&t, &[0, 0], 0, (i * 7) as u64, c);
        }
        assert_eq!(whole, pieces);
        let text = String::from_utf8(whole).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(text.contains("Content-Length: 100\r\n\r\n"));
        assert!(!text[text.find("\r\n\r\n").unwrap() + 4..].contains('\r'));
    }
}
