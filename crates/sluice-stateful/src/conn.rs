//! One connection's record and its place in the program. A record is
//! plain data of fixed size (see `record_is_small`): addresses, the TCP
//! sequence space, windows, the RTT estimate, deadlines, the program
//! cursor and the receive parser. Payload is never held: what is sent is
//! written from the program each time, again on a retransmission.

use crate::program::{Program, Side};
use crate::rxparse::RxParse;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum St {
    SynSent,
    SynRcvd,
    Established,
    /// Both FINs acked; the record answers a FIN sent again until its
    /// deadline.
    TimeWait,
    /// UDP: a conversation (the server's record stays to answer a
    /// request sent again until it has been idle).
    Datagrams,
}

#[derive(Debug, Clone)]
pub struct Conn {
    pub local_ip: u32,
    pub peer_ip: u32,
    pub local_port: u16,
    pub peer_port: u16,
    pub state: St,
    pub side: Side,
    pub prog: u16,
    // Program cursor.
    pub turn: u16,
    /// The program's turns are done on this side.
    pub done: bool,
    /// First turn (and its stream offset) whose bytes may be unacked.
    pub map_turn: u32,
    pub map_off: u64,
    /// Stream bytes the program has made available to send.
    pub tx_avail: u64,
    pub rx: RxParse,
    /// The length the peer's last length-prefixed message asked for.
    pub asked: u32,
    pub drawn: [u32; 2],
    // Send sequence space (RFC 9293 names).
    pub iss: u32,
    pub snd_una: u32,
    pub snd_nxt: u32,
    pub snd_max: u32,
    pub snd_wnd: u32,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub recover: u32,
    pub mss: u16,
    pub peer_ws: u8,
    /// Both SYNs carried a window scale option.
    pub ws_ok: bool,
    /// Keep-alive probes sent since the peer was last heard.
    pub probes: u8,
    /// The peer's last message asked to close the connection (HTTP).
    pub close_asked: bool,
    pub dupacks: u8,
    pub in_recovery: bool,
    /// We send a FIN once the available bytes are out.
    pub fin_wanted: bool,
    /// The peer's FIN arrived (and is counted in `rcv_nxt`).
    pub peer_fin: bool,
    /// Our FIN went out before the peer's arrived: we wait in TIME-WAIT.
    pub active_close: bool,
    pub ack_now: bool,
    pub unacked_segs: u8,
    pub retries: u8,
    // Receive sequence space.
    pub irs: u32,
    pub rcv_nxt: u32,
    // RTT estimate (RFC 6298), µs; one segment timed at a time.
    pub srtt_us: u32,
    pub rttvar_us: u32,
    pub rto_ms: u32,
    pub rtt_seq: u32,
    pub rtt_at: u64,
    pub timing: bool,
    // Deadlines, ns of the run's clock; 0 when none.
    pub rto_at: u64,
    pub delack_at: u64,
    pub pause_at: u64,
    pub idle_at: u64,
    pub end_at: u64,
    // Times, ns.
    pub opened_at: u64,
    pub first_byte: bool,
    /// UDP: tries of the datagram last sent (client).
    pub udp_tries: u8,
    /// Counted among the host's lingering records (TIME-WAIT, a UDP
    /// server's finished conversation): held, but no longer open.
    pub lingering: bool,
    /// Rounds of a repeating program done.
    pub rounds: u32,
}

impl Conn {
    pub fn new(side: Side, prog: u16, local: (u32, u16), peer: (u32, u16), now: u64) -> Conn {
        Conn {
            local_ip: local.0,
            local_port: local.1,
            peer_ip: peer.0,
            peer_port: peer.1,
            state: St::SynSent,
            side,
            prog,
            turn: 0,
            done: false,
            map_turn: 0,
            map_off: 0,
            tx_avail: 0,
            rx: RxParse::new(),
            asked: 0,
            drawn: [0; 2],
            iss: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            snd_wnd: 0,
            cwnd: 0,
            ssthresh: u32::MAX,
            recover: 0,
            mss: 536,
            peer_ws: 0,
            ws_ok: false,
            probes: 0,
            close_asked: false,
            dupacks: 0,
            in_recovery: false,
            fin_wanted: false,
            peer_fin: false,
            active_close: false,
            ack_now: false,
            unacked_segs: 0,
            retries: 0,
            irs: 0,
            rcv_nxt: 0,
            srtt_us: 0,
            rttvar_us: 0,
            rto_ms: 0,
            rtt_seq: 0,
            rtt_at: 0,
            timing: false,
            rto_at: 0,
            delack_at: 0,
            pause_at: 0,
            idle_at: 0,
            end_at: 0,
            opened_at: now,
            first_byte: false,
            udp_tries: 0,
            lingering: false,
            rounds: 0,
        }
    }

    /// Whether the connection is over and only answers repeats.
    pub fn lingers(&self) -> bool {
        self.state == St::TimeWait || (self.state == St::Datagrams && self.done)
    }

    /// The earliest deadline set, if any.
    pub fn next_deadline(&self) -> Option<u64> {
        [
            self.rto_at,
            self.delack_at,
            self.pause_at,
            self.idle_at,
            self.end_at,
        ]
        .into_iter()
        .filter(|&d| d != 0)
        .min()
    }

    /// Stream offset of sequence number `seq` (our data).
    pub fn off_of(&self, seq: u32) -> u64 {
        u64::from(seq.wrapping_sub(self.iss.wrapping_add(1)))
    }

    /// Sequence number our FIN takes, once wanted.
    pub fn fin_seq(&self) -> u32 {
        self.iss.wrapping_add(1).wrapping_add(self.tx_avail as u32)
    }
}

/// What the program says next, from a connection's side.
pub enum Next {
    /// Bytes were made available to send (or a datagram is due).
    Sent,
    /// The next turn waits for a pause to end.
    Paused(u64),
    /// Waiting for the peer's turn.
    Receive,
    /// Every turn is done.
    Done,
}

/// Moves the cursor over the turns this side sends, making their bytes
/// available, until a turn of the peer's, a pause, or the end.
pub fn advance(
    c: &mut Conn,
    p: &Program,
    now: u64,
    mut on_send: impl FnMut(&mut Conn, u64),
) -> Next {
    let mut sent = false;
    loop {
        let i = usize::from(c.turn);
        if i >= p.turns.len() {
            if p.repeat && c.side == Side::Server && !c.close_asked {
                c.rounds += 1;
                if p.max_rounds.is_some_and(|m| c.rounds >= m) {
                    c.done = true;
                    return Next::Done;
                }
                c.turn = 0;
                if sent {
                    return Next::Sent;
                }
                return Next::Receive;
            }
            c.done = true;
            return Next::Done;
        }
        let t = &p.turns[i];
        if t.from != c.side {
            return if sent { Next::Sent } else { Next::Receive };
        }
        if t.pause_ns > 0 {
            if c.pause_at == 0 {
                c.pause_at = now + t.pause_ns;
            }
            if now < c.pause_at {
                return Next::Paused(c.pause_at);
            }
            c.pause_at = 0;
        }
        let len = p.turn_len(t, &c.drawn, c.asked);
        on_send(c, len);
        c.turn += 1;
        sent = true;
    }
}

/// Writes our stream's bytes `off..off + out.len()` from the program's
/// turns, starting the walk at the connection's map point.
pub fn write_stream(c: &Conn, p: &Program, off: u64, out: &mut [u8]) {
    let mut turn = c.map_turn as usize;
    let mut start = c.map_off;
    let mut at = 0usize;
    let n = p.turns.len();
    // Bounded: each pass moves past one turn; a program with no turn of
    // ours leaves nothing to write.
    let mut guard = 0usize;
    while at < out.len() && n > 0 && guard < 4 * n + out.len() {
        guard += 1;
        let t = &p.turns[turn % n];
        turn += 1;
        if t.from != c.side {
            continue;
        }
        let len = p.turn_len(t, &c.drawn, c.asked);
        let want = off + at as u64;
        if want >= start + len {
            start += len;
            continue;
        }
        let from = want - start;
        let take = ((len - from) as usize).min(out.len() - at);
        p.write_turn(t, &c.drawn, c.asked, from, &mut out[at..at + take]);
        at += take;
        start += len;
    }
    // Past the program's bytes (cannot happen for bytes made available):
    // zeroes, never garbage.
    out[at..].fill(0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_is_small() {
        // The record stays under the 1 KiB a connection may cost outside
        // its buffers (it has none), with room to spare.
        let n = std::mem::size_of::<Conn>();
        assert!(n <= 256, "a connection record is {n} bytes");
    }
}
