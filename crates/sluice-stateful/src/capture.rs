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

/// Reads the conversations of capture `file`.
pub fn read(file: &str, pauses: Pauses) -> Result<Vec<Program>, String> {
    let mut r = CaptureReader::open(file).map_err(|e| format!("{file}: {e}"))?;
    let mut convs: Vec<Conv> = Vec::new();
    let mut index: HashMap<(u8, End, End), usize> = HashMap::new();
    let mut skipped = Skipped::default();
    let mut bytes = 0usize;
    let mut eth = Vec::new();
    loop {
        let offset = r.offset();
        let pkt = match r.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(e) => return Err(format!("{file}: at byte {offset}: {e}")),
        };
        let ts = pkt.ts_ns;
        let Some(framing) = framing_of_linktype(pkt.linktype.0) else {
            return Err(format!(
                "{file}: link type {} is not one sluice reads",
                pkt.linktype.0
            ));
        };
        if to_ethernet(
            framing,
            pkt.data,
            MacAddr([0; 6]),
            MacAddr([0; 6]),
            &mut eth,
        )
        .is_err()
        {
            skipped.not_ip += 1;
            continue;
        }
        let (proto, src, dst, flags, seq, payload) = match frame::parse(&eth) {
            Parsed::Tcp(t) => (
                Proto::Tcp,
                (t.src, t.sport),
                (t.dst, t.dport),
                t.flags,
                t.seq,
                t.payload,
            ),
            Parsed::Udp(u) => (
                Proto::Udp,
                (u.src, u.sport),
                (u.dst, u.dport),
                0,
                0,
                u.payload,
            ),
            _ => {
                skipped.not_ip += 1;
                continue;
            }
        };
        let (a, b) = canon(src, dst);
        let pnum = if proto == Proto::Tcp { 6 } else { 17 };
        let k = (pnum, a, b);
        let i = match index.get(&k) {
            Some(&i) => i,
            None => {
                // A TCP conversation starts with its client's SYN.
                if proto == Proto::Tcp && flags & (SYN | ACK) != SYN {
                    skipped.no_handshake += 1;
                    continue;
                }
                if convs.len() >= MAX_CONVERSATIONS {
                    return Err(format!(
                        "{file}: at byte {offset}: more than {MAX_CONVERSATIONS} conversations; split the capture"
                    ));
                }
                convs.push(Conv {
                    proto,
                    client: src,
                    server: dst,
                    next: [None, None],
                    turns: Vec::new(),
                    last_ts: ts,
                    broken: false,
                    closer: None,
                });
                index.insert(k, convs.len() - 1);
                convs.len() - 1
            }
        };
        let c = &mut convs[i];
        if c.broken {
            continue;
        }
        let side = if src == c.client {
            Side::Client
        } else {
            Side::Server
        };
        let d = side as usize;
        let mut data = payload;
        if proto == Proto::Tcp {
            if flags & SYN != 0 {
                c.next[d] = Some(seq.wrapping_add(1));
                continue;
            }
            let Some(next) = c.next[d] else {
                c.broken = true;
                skipped.no_handshake += 1;
                continue;
            };
            let behind = next.wrapping_sub(seq);
            if (behind as i32) < 0 {
                c.broken = true;
                skipped.holes += 1;
                continue;
            }
            data = data.get(behind as usize..).unwrap_or(&[]);
            let fin = flags & frame::FIN != 0;
            // A FIN takes a sequence number after the data.
            c.next[d] = Some(next.wrapping_add(data.len() as u32 + u32::from(fin)));
            if fin {
                c.closer.get_or_insert(side);
            }
        }
        if data.is_empty() {
            continue;
        }
        bytes += data.len();
        if bytes > MAX_BYTES {
            return Err(format!(
                "{file}: at byte {offset}: more than {} MiB of payload; use a shorter capture",
                MAX_BYTES >> 20
            ));
        }
        let pause = ts.saturating_sub(c.last_ts);
        c.last_ts = ts;
        match c.turns.last_mut() {
            Some((s, buf, _)) if *s == side && proto == Proto::Tcp => buf.extend_from_slice(data),
            _ => c.turns.push((side, data.to_vec(), pause)),
        }
    }
    let mut out = Vec::new();
    for (n, c) in convs.into_iter().enumerate() {
        if c.broken {
            continue;
        }
        if c.turns.is_empty() {
            skipped.empty += 1;
            continue;
        }
        let mut data = Vec::new();
        let mut turns = Vec::new();
        for (i, (side, bytes, pause)) in c.turns.into_iter().enumerate() {
            let start = data.len() as u32;
            let len = bytes.len() as u32;
            data.extend_from_slice(&bytes);
            let pause_ns = if i == 0 {
                0
            } else {
                match pauses {
                    Pauses::Keep => pause,
                    Pauses::None => 0,
                    Pauses::Scale(f) => (pause as f64 * f) as u64,
                }
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
        out.push(Program {
            name: format!(
                "{file}#{n} {} {}:{} > {}:{}",
                if c.proto == Proto::Tcp { "tcp" } else { "udp" },
                crate::addr::show(c.client.0),
                c.client.1,
                crate::addr::show(c.server.0),
                c.server.1
            ),
            proto: c.proto,
            port: c.server.1,
            turns,
            closer: c.closer.unwrap_or(Side::Client),
            repeat: false,
            data: Arc::from(data),
            laws: Vec::new(),
            weight: 1,
            verify: None,
            max_rounds: None,
            http_close: false,
        });
    }
    if out.is_empty() {
        return Err(format!(
            "{file}: no complete TCP or UDP conversation ({} TCP without their handshake, {} with bytes the capture missed, {} with no payload, {} packets neither TCP nor UDP over IPv4)",
            skipped.no_handshake, skipped.holes, skipped.empty, skipped.not_ip
        ));
    }
    Ok(out)
}
