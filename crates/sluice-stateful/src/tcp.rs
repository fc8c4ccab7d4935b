//! TCP as a real stack does it (RFC 9293), for one connection at a time:
//! the handshake with MSS and window scale, sliding windows, RTO (RFC
//! 6298) with Karn's rule and exponential back-off, slow start and
//! congestion avoidance, fast retransmit and NewReno recovery (RFC 5681,
//! RFC 6582), delayed ACKs, FIN in both orders, TIME-WAIT, RST, idle
//! time-outs and keep-alive.
//!
//! What it leaves out, on purpose: no out-of-order queue (a segment past
//! `rcv_nxt` is dropped and answered with a duplicate ACK, so the sender
//! retransmits it: correct, and no receive buffer per connection), no
//! SACK, no timestamps, no urgent data.

use crate::config::TICK_NS;
use crate::conn::{advance, write_stream, Conn, Next, St};
use crate::counters::record;
use crate::ctx::{Ctx, Outcome};
use crate::frame::{push_tcp, TcpHead, TcpSeg, ACK, FIN, NO_WSCALE, PSH, RST, SYN};
use crate::program::{Expect, Side};
use crate::rxparse::{Fed, RxParse};
use std::sync::Arc;

const MS: u64 = TICK_NS;

fn lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

fn le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}

/// The receive window field to announce.
fn wnd_field(c: &Conn, x: &Ctx) -> u16 {
    if c.ws_ok {
        (x.cfg.tcp.rcv_wnd >> x.cfg.tcp.wscale).min(65535) as u16
    } else {
        x.cfg.tcp.rcv_wnd.min(65535) as u16
    }
}

fn emit(c: &mut Conn, x: &mut Ctx, seq: u32, flags: u8, off: u64, len: usize) {
    let progs = Arc::clone(&x.progs);
    let p = &progs[usize::from(c.prog)];
    let e = x.ends(c);
    let h = TcpHead {
        seq,
        ack: if flags & ACK != 0 { c.rcv_nxt } else { 0 },
        flags,
        wnd: wnd_field(c, x),
        syn_opts: None,
    };
    let id = x.next_id();
    push_tcp(&mut x.out.buf, &e, &h, id, len, |out| {
        write_stream(c, p, off, out)
    });
    x.out.close_frame();
    let k = &mut x.counts[usize::from(c.prog)];
    k.segments_tx += 1;
    k.bytes_tx += len as u64;
    c.ack_now = false;
    c.unacked_segs = 0;
    c.delack_at = 0;
}

/// Queues a segment without payload (SYN, SYN-ACK, RST).
fn push_bare(x: &mut Ctx, e: &crate::frame::Ends, h: &TcpHead) {
    let id = x.next_id();
    push_tcp(&mut x.out.buf, e, h, id, 0, |_| {});
    x.out.close_frame();
}

fn send_syn(c: &mut Conn, x: &mut Ctx) {
    let server = c.side == Side::Server;
    let ws = if !server || c.ws_ok {
        x.cfg.tcp.wscale
    } else {
        NO_WSCALE
    };
    let e = x.ends(c);
    let h = TcpHead {
        seq: c.iss,
        ack: if server { c.rcv_nxt } else { 0 },
        flags: if server { SYN | ACK } else { SYN },
        wnd: x.cfg.tcp.rcv_wnd.min(65535) as u16,
        syn_opts: Some((x.cfg.tcp.mss, ws)),
    };
    push_bare(x, &e, &h);
    x.counts[usize::from(c.prog)].segments_tx += 1;
}

/// A reset for the connection's current sequence (we give up on it).
pub fn send_rst(c: &mut Conn, x: &mut Ctx) {
    let e = x.ends(c);
    let h = TcpHead {
        seq: c.snd_nxt,
        ack: c.rcv_nxt,
        flags: RST | ACK,
        wnd: 0,
        syn_opts: None,
    };
    push_bare(x, &e, &h);
    x.counts[usize::from(c.prog)].segments_tx += 1;
}

/// Answers a segment of no connection with a reset (RFC 9293 §3.10.7.1).
pub fn reset_stray(x: &mut Ctx, s: &TcpSeg<'_>) {
    let e = crate::frame::Ends {
        src_mac: x.cfg.mac,
        dst_mac: x.gw_mac.unwrap_or(crate::frame::BROADCAST),
        src: s.dst,
        dst: s.src,
        sport: s.dport,
        dport: s.sport,
    };
    let seg_len =
        s.payload.len() as u32 + u32::from(s.flags & SYN != 0) + u32::from(s.flags & FIN != 0);
    let h = if s.flags & ACK != 0 {
        TcpHead {
            seq: s.ack,
            ack: 0,
            flags: RST,
            wnd: 0,
            syn_opts: None,
        }
    } else {
        TcpHead {
            seq: 0,
            ack: s.seq.wrapping_add(seg_len),
            flags: RST | ACK,
            wnd: 0,
            syn_opts: None,
        }
    };
    push_bare(x, &e, &h);
}

fn rto_ns(c: &Conn) -> u64 {
    u64::from(c.rto_ms) * MS
}

/// When a connection waiting for its peer gives up; none while the
/// program itself pauses (an idle connection on purpose: only keep-alive
/// probes, if asked for, check on it then).
fn idle_deadline(c: &Conn, x: &Ctx, now: u64) -> u64 {
    if c.pause_at != 0 {
        return match x.cfg.tcp.keepalive {
            Some(_) => now + x.cfg.tcp.idle_ms * MS,
            None => 0,
        };
    }
    now + x.cfg.tcp.idle_ms * MS
}

/// Opens a client connection: sends its SYN.
/// An initial sequence number as RFC 6528 makes it: a 4 µs clock plus a
/// keyed hash of the 4-tuple, so a tuple used again starts above where
/// its last connection ended (a peer's TIME-WAIT then takes the new SYN).
fn isn(c: &Conn, x: &Ctx, now: u64) -> u32 {
    let mut h = x.isn_key;
    for v in [
        u64::from(c.local_ip),
        u64::from(c.peer_ip),
        u64::from(c.local_port) << 16 | u64::from(c.peer_port),
    ] {
        h = (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 31;
    }
    (((x.cfg.clock_base + now) / 4000) as u32).wrapping_add(h as u32)
}

pub fn open(c: &mut Conn, x: &mut Ctx, now: u64) -> Outcome {
    c.iss = isn(c, x, now);
    c.snd_una = c.iss;
    c.snd_nxt = c.iss.wrapping_add(1);
    c.snd_max = c.snd_nxt;
    c.rto_ms = x.cfg.tcp.rto_init_ms;
    c.state = St::SynSent;
    send_syn(c, x);
    c.rto_at = now + rto_ns(c);
    Outcome::Keep
}

/// Accepts a SYN on a listened port: answers SYN-ACK.
pub fn accept(c: &mut Conn, x: &mut Ctx, s: &TcpSeg<'_>, now: u64) -> Outcome {
    let p = usize::from(c.prog);
    x.counts[p].attempted += 1;
    x.counts[p].segments_rx += 1;
    c.irs = s.seq;
    c.rcv_nxt = s.seq.wrapping_add(1);
    take_syn_options(c, x, s);
    c.iss = isn(c, x, now);
    c.snd_una = c.iss;
    c.snd_nxt = c.iss.wrapping_add(1);
    c.snd_max = c.snd_nxt;
    c.rto_ms = x.cfg.tcp.rto_init_ms;
    c.state = St::SynRcvd;
    send_syn(c, x);
    c.rto_at = now + rto_ns(c);
    Outcome::Keep
}

fn take_syn_options(c: &mut Conn, x: &Ctx, s: &TcpSeg<'_>) {
    c.mss = x.cfg.tcp.mss.min(s.mss.unwrap_or(536)).max(64);
    c.ws_ok = s.wscale.is_some();
    c.peer_ws = s.wscale.unwrap_or(0);
    // The window in a SYN is never scaled.
    c.snd_wnd = u32::from(s.wnd);
}

fn established(c: &mut Conn, x: &mut Ctx, now: u64) {
    c.state = St::Established;
    c.cwnd = x.cfg.tcp.init_cwnd * u32::from(c.mss);
    c.retries = 0;
    c.rto_at = 0;
    c.idle_at = idle_deadline(c, x, now);
    let p = usize::from(c.prog);
    x.counts[p].established += 1;
    record(&mut x.times[p].connect, now - c.opened_at);
}

fn rtt_sample(c: &mut Conn, x: &Ctx, sample_ns: u64) {
    let r = (sample_ns / 1000).min(u64::from(u32::MAX)) as u32;
    if c.srtt_us == 0 {
        c.srtt_us = r.max(1);
        c.rttvar_us = r / 2;
    } else {
        let d = c.srtt_us.abs_diff(r);
        c.rttvar_us = (3 * u64::from(c.rttvar_us) / 4 + u64::from(d) / 4) as u32;
        c.srtt_us = (7 * u64::from(c.srtt_us) / 8 + u64::from(r) / 8) as u32;
    }
    let rto_us = u64::from(c.srtt_us) + (4 * u64::from(c.rttvar_us)).max(1000);
    c.rto_ms = ((rto_us / 1000) as u32).clamp(x.cfg.tcp.rto_min_ms, x.cfg.tcp.rto_max_ms);
}

/// Handles one segment of an existing connection.
pub fn segment(c: &mut Conn, x: &mut Ctx, s: &TcpSeg<'_>, now: u64) -> Outcome {
    let p = usize::from(c.prog);
    x.counts[p].segments_rx += 1;
    if s.flags & RST != 0 {
        let valid = match c.state {
            St::SynSent => s.flags & ACK != 0 && s.ack == c.snd_nxt,
            _ => {
                let wnd = x.cfg.tcp.rcv_wnd;
                le(c.rcv_nxt, s.seq) && lt(s.seq, c.rcv_nxt.wrapping_add(wnd.max(1)))
            }
        };
        if !valid {
            return Outcome::Keep;
        }
        if c.state != St::TimeWait {
            x.counts[p].reset_by_peer += 1;
        }
        return Outcome::Free;
    }
    match c.state {
        St::SynSent => return syn_sent(c, x, s, now),
        St::SynRcvd => {
            if s.flags & SYN != 0 && s.flags & ACK == 0 {
                // Our SYN-ACK was lost: say it again.
                send_syn(c, x);
                return Outcome::Keep;
            }
            if s.flags & ACK == 0 {
                return Outcome::Keep;
            }
            if s.ack != c.iss.wrapping_add(1) {
                reset_stray(x, s);
                return Outcome::Keep;
            }
            c.snd_una = s.ack;
            established(c, x, now);
            // The server's program may speak first.
            after_receive(c, x, now);
        }
        St::TimeWait => {
            if s.flags & FIN != 0 {
                c.ack_now = true;
                emit_ack(c, x);
                c.end_at = now + x.cfg.tcp.time_wait_ms * MS;
            }
            return Outcome::Keep;
        }
        St::Datagrams => return Outcome::Keep,
        St::Established => {}
    }
    if s.flags & SYN != 0 {
        // A SYN-ACK again: our ACK of it was lost.
        c.ack_now = true;
        emit_ack(c, x);
        return Outcome::Keep;
    }
    if s.flags & ACK == 0 {
        return Outcome::Keep;
    }
    c.probes = 0;
    c.idle_at = idle_deadline(c, x, now);
    if lt(c.snd_max, s.ack) {
        // An ACK of data never sent.
        c.ack_now = true;
        output(c, x, now);
        return Outcome::Keep;
    }
    on_ack(c, x, s, now);
    if let Some(o) = on_data(c, x, s, now) {
        return o;
    }
    output(c, x, now);
    closing(c, x, now)
}

fn syn_sent(c: &mut Conn, x: &mut Ctx, s: &TcpSeg<'_>, now: u64) -> Outcome {
    if s.flags & ACK != 0 && s.ack != c.iss.wrapping_add(1) {
        // Not an answer to our SYN (a peer's old connection in TIME-WAIT
        // answers with its own ACK): a reset clears it, and our SYN sent
        // again then opens (RFC 9293 §3.10.7.3).
        reset_stray(x, s);
        return Outcome::Keep;
    }
    if s.flags & (SYN | ACK) != (SYN | ACK) {
        return Outcome::Keep;
    }
    c.irs = s.seq;
    c.rcv_nxt = s.seq.wrapping_add(1);
    c.snd_una = s.ack;
    take_syn_options(c, x, s);
    if c.retries == 0 {
        rtt_sample(c, x, now - c.opened_at);
    } else {
        c.rto_ms = x.cfg.tcp.rto_init_ms;
    }
    established(c, x, now);
    c.ack_now = true;
    after_receive(c, x, now);
    output(c, x, now);
    closing(c, x, now)
}

fn on_ack(c: &mut Conn, x: &mut Ctx, s: &TcpSeg<'_>, now: u64) {
    let p = usize::from(c.prog);
    let mss = u32::from(c.mss);
    let new_wnd = u32::from(s.wnd) << if c.ws_ok { c.peer_ws } else { 0 };
    if lt(c.snd_una, s.ack) {
        let acked = s.ack.wrapping_sub(c.snd_una);
        if c.timing && le(c.rtt_seq, s.ack) {
            rtt_sample(c, x, now - c.rtt_at);
            c.timing = false;
        }
        c.snd_una = s.ack;
        if lt(c.snd_nxt, c.snd_una) {
            c.snd_nxt = c.snd_una;
        }
        c.retries = 0;
        if c.in_recovery {
            if le(c.recover, s.ack) {
                c.in_recovery = false;
                c.cwnd = c.ssthresh;
            } else {
                // A partial ACK: the next hole, at once (NewReno).
                retransmit_one(c, x, now);
                x.counts[p].retransmitted += 1;
                c.cwnd = c.cwnd.saturating_sub(acked).saturating_add(mss);
            }
        } else if c.cwnd < c.ssthresh {
            c.cwnd = c.cwnd.saturating_add(acked.min(mss));
        } else {
            c.cwnd = c.cwnd.saturating_add((mss * mss / c.cwnd.max(1)).max(1));
        }
        c.dupacks = 0;
        c.rto_at = if c.snd_una == c.snd_max {
            0
        } else {
            now + rto_ns(c)
        };
    } else if s.ack == c.snd_una
        && s.payload.is_empty()
        && s.flags & FIN == 0
        && c.snd_max != c.snd_una
        && new_wnd == c.snd_wnd
    {
        c.dupacks = c.dupacks.saturating_add(1);
        if c.dupacks == 3 && !c.in_recovery {
            let flight = c.snd_max.wrapping_sub(c.snd_una);
            c.ssthresh = (flight / 2).max(2 * mss);
            c.recover = c.snd_max;
            c.in_recovery = true;
            retransmit_one(c, x, now);
            x.counts[p].retransmitted += 1;
            x.counts[p].fast_retransmits += 1;
            c.cwnd = c.ssthresh + 3 * mss;
        } else if c.in_recovery {
            c.cwnd = c.cwnd.saturating_add(mss);
        }
    }
    c.snd_wnd = new_wnd;
}

/// Returns an outcome when the data ends the connection.
fn on_data(c: &mut Conn, x: &mut Ctx, s: &TcpSeg<'_>, now: u64) -> Option<Outcome> {
    let fin = s.flags & FIN != 0;
    if s.payload.is_empty() && !fin {
        return None;
    }
    let p = usize::from(c.prog);
    let mut payload = s.payload;
    let mut seq = s.seq;
    if lt(seq, c.rcv_nxt) {
        // Bytes we have: keep only what is new.
        let old = c.rcv_nxt.wrapping_sub(seq) as usize;
        if old >= payload.len() {
            c.ack_now = true;
            // A FIN sent again after its data: ACK it again.
            if fin
                && seq.wrapping_add(payload.len() as u32) == c.rcv_nxt.wrapping_sub(1)
                && c.peer_fin
            {
                c.ack_now = true;
            }
            output(c, x, now);
            return None;
        }
        payload = &payload[old..];
        seq = c.rcv_nxt;
    }
    if seq != c.rcv_nxt {
        // Out of order: a duplicate ACK tells the sender where the hole is.
        c.ack_now = true;
        return None;
    }
    if !payload.is_empty() {
        c.rcv_nxt = c.rcv_nxt.wrapping_add(payload.len() as u32);
        x.counts[p].bytes_rx += payload.len() as u64;
        c.unacked_segs = c.unacked_segs.saturating_add(1);
        if let Err(why) = take_payload(c, x, payload, now) {
            let _ = why;
            x.counts[p].aborted += 1;
            send_rst(c, x);
            return Some(Outcome::Free);
        }
    }
    if fin {
        c.rcv_nxt = c.rcv_nxt.wrapping_add(1);
        c.peer_fin = true;
        c.ack_now = true;
        if !c.done {
            let prog = &x.progs[p];
            // A server that repeats, waiting for the next request, is done
            // when the client closes; anyone else was cut short.
            let idle_repeat = prog.repeat && c.side == Side::Server && c.turn == 0 && c.rx.got == 0;
            if idle_repeat {
                c.done = true;
            } else {
                x.counts[p].aborted += 1;
                send_rst(c, x);
                return Some(Outcome::Free);
            }
        }
        if c.done {
            c.fin_wanted = true;
        }
    }
    if c.unacked_segs >= 2 {
        c.ack_now = true;
    } else if c.delack_at == 0 && !c.ack_now {
        c.delack_at = now + x.cfg.tcp.delack_ms * MS;
    }
    None
}

/// Feeds received bytes to the program's receive turns.
fn take_payload(c: &mut Conn, x: &mut Ctx, mut b: &[u8], now: u64) -> Result<(), &'static str> {
    let p = usize::from(c.prog);
    let progs = Arc::clone(&x.progs);
    let prog = &progs[p];
    if !c.first_byte && c.side == Side::Client {
        c.first_byte = true;
        record(&mut x.times[p].first_byte, now - c.opened_at);
    }
    while !b.is_empty() {
        if c.done {
            return Err("data after the program's end");
        }
        let Some(t) = prog.turns.get(usize::from(c.turn)) else {
            return Err("data after the program's end");
        };
        if t.from == c.side {
            return Err("data while the program sends");
        }
        match c.rx.feed(t.expect, b) {
            Fed::More => return Ok(()),
            Fed::Bad(w) => return Err(w),
            Fed::Done(n) => {
                if c.side == Side::Client && t.expect == Expect::Http {
                    if let Some(v) = prog.verify {
                        if c.rx.body_len() == v.len && c.rx.hash == v.fnv {
                            x.counts[p].verified += 1;
                        } else {
                            x.counts[p].mismatched += 1;
                        }
                    }
                }
                c.asked = c.rx.asked;
                c.close_asked = c.rx.close;
                c.rx = RxParse::new();
                c.turn += 1;
                // Answering at once: the ACK rides on the answer.
                c.ack_now = true;
                after_receive(c, x, now);
                b = &b[n..];
            }
        }
    }
    Ok(())
}

/// Runs the program forward after a turn was received (or the
/// connection opened): makes the next turns' bytes available.
fn after_receive(c: &mut Conn, x: &mut Ctx, now: u64) {
    let progs = Arc::clone(&x.progs);
    let prog = &progs[usize::from(c.prog)];
    let next = advance(c, prog, now, |c, len| {
        // Everything before is acked: retransmissions start here.
        if c.off_of(c.snd_una) >= c.tx_avail || c.snd_una == c.iss {
            c.map_turn = u32::from(c.turn);
            c.map_off = c.tx_avail;
        }
        c.tx_avail += len;
    });
    match next {
        Next::Paused(_) => c.idle_at = idle_deadline(c, x, now),
        Next::Sent | Next::Receive if c.idle_at == 0 && c.state == St::Established => {
            c.idle_at = idle_deadline(c, x, now)
        }
        _ => {}
    }
    if let Next::Done = next {
        // A server closes where its client asked it to (HTTP); a client
        // told the server will close waits for the server's FIN.
        let asked = c.close_asked && c.side == Side::Server;
        if prog.closer == c.side || c.peer_fin || asked {
            c.fin_wanted = true;
        }
    }
}

fn emit_ack(c: &mut Conn, x: &mut Ctx) {
    let seq = c.snd_nxt;
    emit(c, x, seq, ACK, 0, 0);
}

/// Sends what the windows allow: new data, our FIN, or an ACK due.
pub fn output(c: &mut Conn, x: &mut Ctx, now: u64) {
    if c.state != St::Established {
        return;
    }
    let p = usize::from(c.prog);
    let mss = u32::from(c.mss);
    // Bounded by the bytes available: each pass sends at least one.
    loop {
        let off = c.off_of(c.snd_nxt);
        let flight = c.snd_nxt.wrapping_sub(c.snd_una);
        let wnd = c.cwnd.min(c.snd_wnd);
        let retrans = lt(c.snd_nxt, c.snd_max);
        if off < c.tx_avail {
            let room = wnd.saturating_sub(flight);
            let left = c.tx_avail - off;
            if room == 0 {
                if flight == 0 && c.rto_at == 0 {
                    // A zero window: the RTO timer probes it.
                    c.rto_at = now + rto_ns(c);
                }
                break;
            }
            let n = (mss.min(room) as u64).min(left) as u32;
            // No small segment while one is in flight, unless it is the
            // last of what is available (Nagle, as the window allows).
            if n < mss && u64::from(n) < left && flight > 0 {
                break;
            }
            let fin = c.fin_wanted && off + u64::from(n) == c.tx_avail;
            let flags =
                ACK | if u64::from(n) == left { PSH } else { 0 } | if fin { FIN } else { 0 };
            let seq = c.snd_nxt;
            emit(c, x, seq, flags, off, n as usize);
            if retrans {
                x.counts[p].retransmitted += 1;
            }
            c.snd_nxt = c.snd_nxt.wrapping_add(n + u32::from(fin));
            if fin && !c.peer_fin {
                c.active_close = true;
            }
            sent(c, now, retrans);
        } else if c.fin_wanted && c.snd_nxt == c.fin_seq() {
            let seq = c.snd_nxt;
            emit(c, x, seq, ACK | FIN, 0, 0);
            if retrans {
                x.counts[p].retransmitted += 1;
            }
            c.snd_nxt = c.snd_nxt.wrapping_add(1);
            if !c.peer_fin {
                c.active_close = true;
            }
            sent(c, now, retrans);
        } else {
            break;
        }
    }
    if c.ack_now {
        emit_ack(c, x);
    }
}

fn sent(c: &mut Conn, now: u64, retrans: bool) {
    if lt(c.snd_max, c.snd_nxt) {
        c.snd_max = c.snd_nxt;
    }
    if !c.timing && !retrans {
        c.timing = true;
        c.rtt_seq = c.snd_nxt;
        c.rtt_at = now;
    }
    if c.rto_at == 0 {
        c.rto_at = now + rto_ns(c);
    }
}

/// Sends the segment at `snd_una` again (fast retransmit, partial ACK).
fn retransmit_one(c: &mut Conn, x: &mut Ctx, now: u64) {
    let off = c.off_of(c.snd_una);
    let seq = c.snd_una;
    if off < c.tx_avail {
        let n = (u64::from(c.mss)).min(c.tx_avail - off) as usize;
        let fin = c.fin_wanted && off + n as u64 == c.tx_avail;
        emit(c, x, seq, ACK | PSH | if fin { FIN } else { 0 }, off, n);
    } else if c.fin_wanted {
        emit(c, x, seq, ACK | FIN, 0, 0);
    }
    c.timing = false;
    c.rto_at = now + rto_ns(c);
}

/// Whether the connection is over: both FINs acked.
fn closing(c: &mut Conn, x: &mut Ctx, now: u64) -> Outcome {
    if !(c.fin_wanted && c.peer_fin && c.snd_una == c.fin_seq().wrapping_add(1)) {
        return Outcome::Keep;
    }
    let p = usize::from(c.prog);
    x.counts[p].completed += 1;
    record(&mut x.times[p].complete, now - c.opened_at);
    if c.active_close {
        c.state = St::TimeWait;
        c.rto_at = 0;
        c.delack_at = 0;
        c.idle_at = 0;
        c.pause_at = 0;
        c.end_at = now + x.cfg.tcp.time_wait_ms * MS;
        Outcome::Keep
    } else {
        Outcome::Free
    }
}

/// Runs the connection's deadlines due by `now`.
pub fn timer(c: &mut Conn, x: &mut Ctx, now: u64) -> Outcome {
    let p = usize::from(c.prog);
    if c.end_at != 0 && now >= c.end_at {
        return Outcome::Free;
    }
    if c.pause_at != 0 && now >= c.pause_at {
        after_receive(c, x, now);
        output(c, x, now);
    }
    if c.delack_at != 0 && now >= c.delack_at {
        c.delack_at = 0;
        c.ack_now = true;
        output(c, x, now);
    }
    if c.rto_at != 0 && now >= c.rto_at {
        c.retries += 1;
        x.counts[p].timeouts_rto += 1;
        let limit = match c.state {
            St::SynSent | St::SynRcvd => x.cfg.tcp.syn_retries,
            _ => x.cfg.tcp.retries,
        };
        if c.retries > limit {
            x.counts[p].timed_out += 1;
            send_rst(c, x);
            return Outcome::Free;
        }
        c.rto_ms = c.rto_ms.saturating_mul(2).min(x.cfg.tcp.rto_max_ms);
        c.timing = false;
        c.rto_at = now + rto_ns(c);
        match c.state {
            St::SynSent | St::SynRcvd => {
                send_syn(c, x);
                x.counts[p].retransmitted += 1;
            }
            _ => {
                let mss = u32::from(c.mss);
                let flight = c.snd_max.wrapping_sub(c.snd_una);
                if flight == 0 && c.off_of(c.snd_nxt) < c.tx_avail {
                    // A zero-window probe: one byte past the window.
                    let (seq, off) = (c.snd_nxt, c.off_of(c.snd_nxt));
                    emit(c, x, seq, ACK, off, 1);
                    c.snd_nxt = c.snd_nxt.wrapping_add(1);
                    sent(c, now, false);
                } else {
                    c.ssthresh = (flight / 2).max(2 * mss);
                    c.cwnd = mss;
                    c.in_recovery = false;
                    c.dupacks = 0;
                    // Go back to the first unacked byte.
                    c.snd_nxt = c.snd_una;
                    output(c, x, now);
                }
            }
        }
    }
    if c.idle_at != 0 && now >= c.idle_at {
        match x.cfg.tcp.keepalive {
            Some((every, probes)) if c.state == St::Established && c.probes < probes => {
                // A keep-alive probe: one old sequence number, no data.
                c.probes += 1;
                let seq = c.snd_una.wrapping_sub(1);
                emit(c, x, seq, ACK, 0, 0);
                c.idle_at = now + every * MS;
            }
            _ => {
                x.counts[p].timed_out += 1;
                send_rst(c, x);
                return Outcome::Free;
            }
        }
    }
    closing(c, x, now)
}
