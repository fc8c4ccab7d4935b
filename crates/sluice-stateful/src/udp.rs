//! UDP conversations: each turn one datagram. The client sends a turn
//! again when no answer came within its time-out (doubling, as a DNS
//! resolver does) and gives up after the retries; the server answers each
//! turn and, once the conversation is done, keeps its record a while to
//! answer a request sent again (its answer was lost), then forgets it.

use crate::config::TICK_NS;
use crate::conn::{advance, Conn, Next, St};
use crate::counters::record;
use crate::ctx::{Ctx, Outcome};
use crate::frame::{push_udp, UdpDgram};
use crate::program::Side;
use crate::rxparse::{Fed, RxParse};
use std::sync::Arc;

const MS: u64 = TICK_NS;
/// Largest UDP payload in one frame of MTU 1500.
pub const MAX_DATAGRAM: u64 = 1472;

fn emit_turn(c: &mut Conn, x: &mut Ctx, turn: usize) {
    let progs = Arc::clone(&x.progs);
    let p = &progs[usize::from(c.prog)];
    let Some(t) = p.turns.get(turn) else {
        return;
    };
    let len = p.turn_len(t, &c.drawn, c.asked).min(MAX_DATAGRAM) as usize;
    let e = x.ends(c);
    let id = x.next_id();
    push_udp(&mut x.out.buf, &e, id, len, |out| {
        p.write_turn(t, &c.drawn, c.asked, 0, out)
    });
    x.out.close_frame();
    let k = &mut x.counts[usize::from(c.prog)];
    k.segments_tx += 1;
    k.bytes_tx += len as u64;
}

/// Sends the turns now due; settles a finished conversation.
fn speak(c: &mut Conn, x: &mut Ctx, now: u64) -> Outcome {
    let progs = Arc::clone(&x.progs);
    let p = &progs[usize::from(c.prog)];
    let from = usize::from(c.turn);
    let next = advance(c, p, now, |_, _| {});
    for i in from..usize::from(c.turn) {
        emit_turn(c, x, i);
        // The last turn sent is the one to send again.
        c.map_turn = i as u32;
    }
    let k = usize::from(c.prog);
    match next {
        Next::Done => {
            x.counts[k].completed += 1;
            record(&mut x.times[k].complete, now - c.opened_at);
            c.rto_at = 0;
            c.pause_at = 0;
            c.idle_at = 0;
            if c.side == Side::Client {
                return Outcome::Free;
            }
            c.end_at = now + x.cfg.tcp.udp_linger_ms * MS;
        }
        Next::Receive | Next::Sent => {
            if c.side == Side::Client {
                c.rto_at = now + u64::from(c.rto_ms) * MS;
            }
            c.idle_at = now + x.cfg.tcp.idle_ms * MS;
        }
        Next::Paused(_) => {}
    }
    Outcome::Keep
}

/// Opens a client conversation: sends its first turn.
pub fn open(c: &mut Conn, x: &mut Ctx, now: u64) -> Outcome {
    c.state = St::Datagrams;
    c.rto_ms = x.cfg.tcp.udp_rto_ms as u32;
    speak(c, x, now)
}

/// Handles one datagram of a conversation.
pub fn datagram(c: &mut Conn, x: &mut Ctx, d: &UdpDgram<'_>, now: u64) -> Outcome {
    let k = usize::from(c.prog);
    x.counts[k].segments_rx += 1;
    x.counts[k].bytes_rx += d.payload.len() as u64;
    if c.side == Side::Client && !c.first_byte {
        c.first_byte = true;
        x.counts[k].established += 1;
        record(&mut x.times[k].connect, now - c.opened_at);
        record(&mut x.times[k].first_byte, now - c.opened_at);
    }
    let progs = Arc::clone(&x.progs);
    let p = &progs[k];
    let ours_next = p
        .turns
        .get(usize::from(c.turn))
        .is_none_or(|t| t.from == c.side);
    if c.done || ours_next {
        // The peer said its turn again: our answer was lost (server), or
        // an answer came twice (client).
        if c.side == Side::Server && c.turn > 0 {
            let last = c.map_turn as usize;
            emit_turn(c, x, last);
            x.counts[k].retransmitted += 1;
            if c.done {
                c.end_at = now + x.cfg.tcp.udp_linger_ms * MS;
            }
        }
        return Outcome::Keep;
    }
    let mut rx = RxParse::new();
    if let Fed::Bad(_) = rx.feed(crate::program::Expect::Datagram, d.payload) {
        x.counts[k].aborted += 1;
        return Outcome::Free;
    }
    c.turn += 1;
    c.rto_at = 0;
    c.udp_tries = 0;
    c.rto_ms = x.cfg.tcp.udp_rto_ms as u32;
    speak(c, x, now)
}

/// Runs the conversation's deadlines due by `now`.
pub fn timer(c: &mut Conn, x: &mut Ctx, now: u64) -> Outcome {
    let k = usize::from(c.prog);
    if c.end_at != 0 && now >= c.end_at {
        return Outcome::Free;
    }
    if c.pause_at != 0 && now >= c.pause_at && speak(c, x, now) == Outcome::Free {
        return Outcome::Free;
    }
    if c.rto_at != 0 && now >= c.rto_at {
        c.udp_tries += 1;
        x.counts[k].timeouts_rto += 1;
        if c.udp_tries > x.cfg.tcp.syn_retries {
            x.counts[k].timed_out += 1;
            return Outcome::Free;
        }
        let last = c.map_turn as usize;
        emit_turn(c, x, last);
        x.counts[k].retransmitted += 1;
        c.rto_ms = c.rto_ms.saturating_mul(2).min(x.cfg.tcp.rto_max_ms);
        c.rto_at = now + u64::from(c.rto_ms) * MS;
    }
    if c.idle_at != 0 && now >= c.idle_at {
        x.counts[k].timed_out += 1;
        return Outcome::Free;
    }
    Outcome::Keep
}
