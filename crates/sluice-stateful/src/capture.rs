//! Programs from a capture: each TCP conversation (from its SYN) and each
//! UDP conversation becomes a program of turns, who sent how many bytes
//! in what order, with the pauses between turns kept, scaled or dropped.
//! The payload bytes are the capture's, sent over fresh connections from
//! the client pool to the server address (the capture's addresses are
//! not reused; the server's port is).
//!
//! TCP payload is read in sequence order: a segment sent again is taken
//! once, and a conversation with a hole (bytes the capture missed) is
//! left out and counted, as is one without a handshake.

use crate::frame::{self, Parsed, ACK, SYN};
use crate::program::{Body, Expect, Program, Proto, Side, Turn};
use sluice_capture::CaptureReader;
use sluice_wire::ethernet::{framing_of_linktype, to_ethernet, MacAddr};
use std::collections::HashMap;
use std::sync::Arc;

/// Most conversations read from one capture.
pub const MAX_CONVERSATIONS: usize = 100_000;
/// Most payload bytes kept from one capture (all conversations).
pub const MAX_BYTES: usize = 256 << 20;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pauses {
    Keep,
    None,
    Scale(f64),
}

type End = (u32, u16);

struct Conv {
    proto: Proto,
    client: End,
    server: End,
    /// Next sequence number expected from the client, the server (TCP).
    next: [Option<u32>; 2],
    turns: Vec<(Side, Vec<u8>, u64)>,
    last_ts: u64,
    broken: bool,
    /// The first to send a FIN.
    closer: Option<Side>,
}

#[derive(Default, Debug)]
struct Skipped {
    no_handshake: u64,
    holes: u64,
    empty: u64,
    not_ip: u64,
}

fn canon(a: End, b: End) -> (End, End) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

/// Reads `spec` (`FILE[,pauses=keep|none|F]`) into one program per
/// complete conversation.
pub fn programs(spec: &str) -> Result<Vec<Program>, String> {
    let mut parts = spec.split(',');
    let file = parts.next().unwrap_or_default();
    let mut pauses = Pauses::Keep;
    for p in parts {
        match p.split_once('=') {
            Some(("pauses", "keep")) => pauses = Pauses::Keep,
            Some(("pauses", "none")) => pauses = Pauses::None,
            Some(("pauses", f)) => {
                let f: f64 = f
                    .parse()
                    .ok()
                    .filter(|f: &f64| f.is_finite() && *f >= 0.0)
                    .ok_or_else(|| format!("capture:{spec}: pauses={f}: keep, none or a factor"))?;
                pauses = Pauses::Scale(f);
            }
            _ => return Err(format!("capture:{spec}: unknown key {p:?} (known: pauses)")),
        }
    }
    read(file, pauses)
}

/// Where in a capture an error is: its file and byte offset (written
/// out only when there is an error).
struct At<'a>(&'a str, u64);

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: at byte {}", self.0, self.1)
    }
}

/// One packet of a conversation, as `frame` reads it.
struct Seen<'a> {
    proto: Proto,
    src: End,
    dst: End,
    flags: u8,
    seq: u32,
    payload: &'a [u8],
    ts: u64,
}

/// The conversations of one capture, as its packets are read.
#[derive(Default)]
struct Assembly {
    convs: Vec<Conv>,
    index: HashMap<(u8, End, End), usize>,
    skipped: Skipped,
    bytes: usize,
}

impl Assembly {
    /// The conversation `p` belongs to (a new one at a client's SYN or a
    /// first datagram), or None when it starts none.
    fn conversation(&mut self, p: &Seen, at: &At) -> Result<Option<usize>, String> {
        let (a, b) = canon(p.src, p.dst);
        let k = (if p.proto == Proto::Tcp { 6 } else { 17 }, a, b);
        if let Some(&i) = self.index.get(&k) {
            return Ok(Some(i));
        }
        // A TCP conversation starts with its client's SYN.
        if p.proto == Proto::Tcp && p.flags & (SYN | ACK) != SYN {
            self.skipped.no_handshake += 1;
            return Ok(None);
        }
        if self.convs.len() >= MAX_CONVERSATIONS {
            return Err(format!(
                "{at}: more than {MAX_CONVERSATIONS} conversations; split the capture"
            ));
        }
        self.convs.push(Conv {
            proto: p.proto,
            client: p.src,
            server: p.dst,
            next: [None, None],
            turns: Vec::new(),
            last_ts: p.ts,
            broken: false,
            closer: None,
        });
        self.index.insert(k, self.convs.len() - 1);
        Ok(Some(self.convs.len() - 1))
    }

    /// Adds one packet's payload, in sequence order, to its conversation.
    fn packet(&mut self, p: &Seen, at: &At) -> Result<(), String> {
        let Some(i) = self.conversation(p, at)? else {
            return Ok(());
        };
        let c = &mut self.convs[i];
        if c.broken {
            return Ok(());
        }
        let side = if p.src == c.client {
            Side::Client
        } else {
            Side::Server
        };
        let d = side as usize;
        let mut data = p.payload;
        if p.proto == Proto::Tcp {
            if p.flags & SYN != 0 {
                c.next[d] = Some(p.seq.wrapping_add(1));
                return Ok(());
            }
            let Some(next) = c.next[d] else {
                c.broken = true;
                self.skipped.no_handshake += 1;
                return Ok(());
            };
            let behind = next.wrapping_sub(p.seq);
            if (behind as i32) < 0 {
                c.broken = true;
                self.skipped.holes += 1;
                return Ok(());
            }
            data = data.get(behind as usize..).unwrap_or(&[]);
            let fin = p.flags & frame::FIN != 0;
            // A FIN takes a sequence number after the data.
            c.next[d] = Some(next.wrapping_add(data.len() as u32 + u32::from(fin)));
            if fin {
                c.closer.get_or_insert(side);
            }
        }
        if data.is_empty() {
            return Ok(());
        }
        self.bytes += data.len();
        if self.bytes > MAX_BYTES {
            return Err(format!(
                "{at}: more than {} MiB of payload; use a shorter capture",
                MAX_BYTES >> 20
            ));
        }
        let pause = p.ts.saturating_sub(c.last_ts);
        c.last_ts = p.ts;
        match c.turns.last_mut() {
            Some((s, buf, _)) if *s == side && p.proto == Proto::Tcp => buf.extend_from_slice(data),
            _ => c.turns.push((side, data.to_vec(), pause)),
        }
        Ok(())
    }

    /// A program per complete conversation.
    fn programs(mut self, file: &str, pauses: Pauses) -> Result<Vec<Program>, String> {
        let mut out = Vec::new();
        for (n, c) in std::mem::take(&mut self.convs).into_iter().enumerate() {
            if c.broken {
                continue;
            }
            if c.turns.is_empty() {
                self.skipped.empty += 1;
                continue;
            }
            out.push(program(file, n, c, pauses));
        }
        if out.is_empty() {
            let s = &self.skipped;
            return Err(format!(
                "{file}: no complete TCP or UDP conversation ({} TCP without their handshake, {} with bytes the capture missed, {} with no payload, {} packets neither TCP nor UDP over IPv4)",
                s.no_handshake, s.holes, s.empty, s.not_ip
            ));
        }
        Ok(out)
    }
}

/// Conversation `n` of `file` as a program.
fn program(file: &str, n: usize, c: Conv, pauses: Pauses) -> Program {
    let mut data = Vec::new();
    let mut turns = Vec::new();
    for (i, (side, bytes, pause)) in c.turns.into_iter().enumerate() {
        let (start, len) = (data.len() as u32, bytes.len() as u32);
        data.extend_from_slice(&bytes);
        let pause_ns = match pauses {
            _ if i == 0 => 0,
            Pauses::Keep => pause,
            Pauses::None => 0,
            Pauses::Scale(f) => (pause as f64 * f) as u64,
        };
        turns.push(Turn {
            from: side,
            body: Body::Literal { start, len },
            expect: if c.proto == Proto::Tcp {
                Expect::Len(len)
            } else {
                Expect::Datagram
            },
            pause_ns,
        });
    }
    let proto = if c.proto == Proto::Tcp { "tcp" } else { "udp" };
    let (cl, sv) = (c.client, c.server);
    Program {
        name: format!(
            "{file}#{n} {proto} {}:{} > {}:{}",
            crate::addr::show(cl.0),
            cl.1,
            crate::addr::show(sv.0),
            sv.1
        ),
        proto: c.proto,
        port: sv.1,
        turns,
        closer: c.closer.unwrap_or(Side::Client),
        repeat: false,
        data: Arc::from(data),
        laws: Vec::new(),
        weight: 1,
        verify: None,
        max_rounds: None,
        http_close: false,
    }
}

/// Reads the conversations of capture `file`.
pub fn read(file: &str, pauses: Pauses) -> Result<Vec<Program>, String> {
    let mut r = CaptureReader::open(file).map_err(|e| format!("{file}: {e}"))?;
    let mut asm = Assembly::default();
    let mut eth = Vec::new();
    loop {
        let offset = r.offset();
        let at = At(file, offset);
        let pkt = match r.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Err(format!("{at}: {e}")),
        };
        let Some(framing) = framing_of_linktype(pkt.linktype.0) else {
            return Err(format!(
                "{file}: link type {} is not one sluice reads",
                pkt.linktype.0
            ));
        };
        let ts = pkt.ts_ns;
        if to_ethernet(
            framing,
            pkt.data,
            MacAddr([0; 6]),
            MacAddr([0; 6]),
            &mut eth,
        )
        .is_err()
        {
            asm.skipped.not_ip += 1;
            continue;
        }
        let seen = match frame::parse(&eth) {
            Parsed::Tcp(t) => Seen {
                proto: Proto::Tcp,
                src: (t.src, t.sport),
                dst: (t.dst, t.dport),
                flags: t.flags,
                seq: t.seq,
                payload: t.payload,
                ts,
            },
            Parsed::Udp(u) => Seen {
                proto: Proto::Udp,
                src: (u.src, u.sport),
                dst: (u.dst, u.dport),
                flags: 0,
                seq: 0,
                payload: u.payload,
                ts,
            },
            _ => {
                asm.skipped.not_ip += 1;
                continue;
            }
        };
        asm.packet(&seen, &at)?;
    }
    asm.programs(file, pauses)
}
