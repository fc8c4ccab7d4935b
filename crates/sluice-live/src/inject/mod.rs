//! `sluice inject`: a live source fed by programs over a socket. Clients
//! stream packet descriptions ([`proto`]); each is built ([`build`]),
//! held until shortly before its departure time, handed to the engine,
//! and acknowledged with the time it actually left (the TX thread's
//! [`Fates`], matched to descriptions by order: one TX thread).
//! Frames arriving on the return interface go back to the clients that
//! asked for them, stamped with their arrival time.

mod build;
mod listen;
mod payloads;
mod proto;
mod session;

pub use build::walk_stream;
pub use listen::{Listen, Listener};
pub use proto::{Status, TOKEN_LEN};

use proto::{Message, ProtoError, TimeBase};
use session::Session;
use sluice_core::{Clock, MonoTime, MonotonicClock, Nanos};
use sluice_source::seam::{
    End, Fate, Fates, Lane, Origin, Outbox, RunContext, Source, SourceError, SourceReport,
};
use sluice_sys::packet_rx::PacketRx;
use sluice_sys::poll::{PollSet, READ, WRITE};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

/// How long before its departure a frame is handed to the TX thread, by
/// default (`--lead`).
pub const DEFAULT_LEAD_NS: u64 = 200_000;
/// Descriptions built between two looks at what fell due.
const RELEASE_EVERY: usize = 64;
/// Longest wait with nothing due, so that a stop is noticed.
const IDLE_WAIT: Duration = Duration::from_millis(20);
/// Longest wait while frames are in flight: their acknowledgements wait
/// for the next look at the departures.
const ACK_WAIT: Duration = Duration::from_micros(200);
/// A connection must say HELLO within this long, or it is closed.
const HELLO_WITHIN_NS: u64 = 5_000_000_000;
/// Connections that have not said HELLO yet, at most at once: more are
/// closed as they come (an idle flood cannot hold the descriptors).
const MAX_UNGREETED: usize = 16;
/// After an accept error (the fd limit: EMFILE, ENFILE) the listener is
/// left alone this long instead of spinning on it.
const ACCEPT_BACKOFF_NS: u64 = 100_000_000;
/// Frame buffers kept for reuse, at most, and the largest kept.
const POOL_MAX: usize = 1024;
const POOL_FRAME_MAX: usize = 16 * 1024;

/// What `sluice inject` is told.
#[derive(Clone, Debug)]
pub struct InjectConfig {
    /// Descriptions waiting to leave (all clients) past which a new one
    /// is dropped and acknowledged as such.
    pub queue_limit: usize,
    /// Descriptions a client may have unacknowledged before it is not
    /// read (its socket then pushes back).
    pub window: u64,
    /// End the run after this many sessions have ended.
    pub sessions: Option<u64>,
    /// Default MACs of frames built from fields.
    pub macs: ([u8; 6], [u8; 6]),
    /// The secret every HELLO must carry (a TCP listener's token file);
    /// None: no secret (a unix socket, or `--insecure-tcp`).
    pub token: Option<[u8; proto::TOKEN_LEN]>,
    /// Bytes of built frames held waiting (all clients) past which a new
    /// description is dropped and acknowledged as such.
    pub queue_bytes: usize,
    /// Clients connected at once, at most; more are closed as they come.
    pub max_clients: usize,
    /// A frame sent later than this after its time is acknowledged
    /// `left_late`, never `sent` (`--late-threshold`), ns.
    pub late_threshold_ns: u64,
    /// How long before its departure a frame is handed to the TX thread
    /// (`--lead`): the IO thread's wake-up must fit in it, and a
    /// description arriving this close to its time, due before frames
    /// already handed over, leaves behind them.
    pub lead_ns: u64,
}

/// Where `--log-requested` goes: one line per acknowledged description,
/// its requested time beside its departure (Caliper's log of requested
/// and actual times), both in the session's time base.
pub trait RequestLog: Send {
    /// Records one acknowledgement.
    fn record(&mut self, line: &LoggedAck) -> std::io::Result<()>;
    /// Ends the log (the run is over): flushed and kept.
    fn finish(&mut self) -> std::io::Result<()>;
}

/// One line of the request log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoggedAck {
    /// The server's number of the session (in order of connection).
    pub session: u64,
    pub seq: u64,
    /// The time the client asked for, in its session's time base.
    pub requested: u64,
    /// The acknowledged time (departure, or when it was dropped), in the
    /// same base.
    pub departure: u64,
    pub status: Status,
}

/// A description waiting for its time.
struct Waiting {
    due: u64,
    /// The time its client asked for, in the session's base.
    requested: u64,
    order: u64,
    session: u64,
    seq: u64,
    late: bool,
    frame: Vec<u8>,
}

impl PartialEq for Waiting {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.order) == (o.due, o.order)
    }
}
impl Eq for Waiting {}
impl PartialOrd for Waiting {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Waiting {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.order).cmp(&(o.due, o.order))
    }
}

/// A frame handed to the engine, waiting for its fate.
struct InFlight {
    session: u64,
    seq: u64,
    requested: u64,
    late: bool,
    /// When it was due, as an offset from the run's start.
    due: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    sessions: u64,
    ended: u64,
    descriptions: u64,
    late: u64,
    dropped_queue_full: u64,
    refused: u64,
    dropped_late: u64,
    returned: u64,
    errors: u64,
    /// Frames handed to the engine after their time (this thread was late).
    released_late: u64,
    /// Frames the engine sent later than the late threshold after their
    /// time (acknowledged `left_late`).
    left_late: u64,
    /// Descriptions dropped because the held frames' bytes were at
    /// --queue-bytes.
    dropped_queue_bytes: u64,
    /// Held descriptions of clients that went away without BYE.
    dropped_departed: u64,
    /// Returned frames not queued for a client that does not read them.
    returned_dropped: u64,
    /// Connections closed at once: over --max-clients or too many
    /// without HELLO.
    clients_refused: u64,
    /// Connections closed for saying no HELLO in time.
    hello_timeouts: u64,
}

pub struct InjectSource {
    listener: Listener,
    cfg: InjectConfig,
    rx: Option<PacketRx>,
    /// What became of each frame pushed, in order (the engine's; see
    /// [`Source::begin`]).
    fates: Arc<Fates>,
    sessions: Vec<Session>,
    next_id: u64,
    waiting: BinaryHeap<Reverse<Waiting>>,
    in_flight: VecDeque<InFlight>,
    order: u64,
    pool: Vec<Vec<u8>>,
    clock: MonotonicClock,
    start: MonoTime,
    /// Stop accepting this long after the start: the run's duration, from
    /// `begin`.
    duration: Option<Nanos>,
    /// CLOCK_MONOTONIC and CLOCK_REALTIME ns at the run's start.
    mono0: u64,
    real0: u64,
    counts: Counts,
    notes: Vec<String>,
    poll: PollSet,
    rx_buf: Vec<u8>,
    /// Bytes of the frames in `waiting`.
    held_bytes: usize,
    /// Run offset before which the listener is not accepted on.
    accept_after: u64,
    /// `--log-requested`, and the first error writing it.
    log: Option<Box<dyn RequestLog>>,
    log_failed: Option<String>,
}

impl InjectSource {
    /// A source serving clients on `listener`; the engine hands it the
    /// departure fates of its frames in [`Source::begin`].
    pub fn new(listener: Listener, cfg: InjectConfig) -> Self {
        let clock = MonotonicClock::new();
        InjectSource {
            listener,
            cfg,
            rx: None,
            fates: Arc::default(),
            sessions: Vec::new(),
            next_id: 0,
            waiting: BinaryHeap::new(),
            in_flight: VecDeque::new(),
            order: 0,
            pool: Vec::new(),
            start: clock.now(),
            duration: None,
            clock,
            mono0: 0,
            real0: 0,
            counts: Counts::default(),
            notes: Vec::new(),
            poll: PollSet::new(),
            rx_buf: vec![0; 65_536],
            held_bytes: 0,
            accept_after: 0,
            log: None,
            log_failed: None,
        }
    }

    /// Logs every acknowledgement with the time its client asked for.
    pub fn with_log(mut self, log: Box<dyn RequestLog>) -> Self {
        self.log = Some(log);
        self
    }

    /// Hands frames arriving on this socket's interface to the clients.
    pub fn with_return(mut self, rx: PacketRx) -> Self {
        self.rx = Some(rx);
        self
    }

    fn now(&self) -> u64 {
        self.clock.now().since(self.start).0
    }

    /// Run offset of time `t` of a session.
    fn to_run(s: &Session, mono0: u64, real0: u64, t: u64) -> u64 {
        match s.hello.map_or(TimeBase::Session, |h| h.base) {
            TimeBase::Session => s.t0.saturating_add(t),
            TimeBase::Monotonic => t.saturating_sub(mono0),
            TimeBase::Realtime => t.saturating_sub(real0),
        }
    }

    /// Time of run offset `r` in a session's time base.
    fn from_run(s: &Session, mono0: u64, real0: u64, r: u64) -> u64 {
        match s.hello.map_or(TimeBase::Session, |h| h.base) {
            TimeBase::Session => r.saturating_sub(s.t0),
            TimeBase::Monotonic => mono0 + r,
            TimeBase::Realtime => real0 + r,
        }
    }

    fn session(&mut self, id: u64) -> Option<&mut Session> {
        self.sessions.iter_mut().find(|s| s.id == id)
    }

    fn accept(&mut self) {
        let now = self.now();
        if now < self.accept_after {
            return;
        }
        loop {
            match self.listener.accept() {
                Ok(Some((stream, name))) => {
                    // Connections that never said HELLO make room for new
                    // ones, oldest first: an idle flood cannot lock a real
                    // client out, nor hold more than a few descriptors.
                    let ungreeted = || {
                        self.sessions
                            .iter()
                            .filter(|s| s.hello.is_none() && !s.closing)
                    };
                    if ungreeted().count() >= MAX_UNGREETED {
                        // Dropped (closed) at once: it has nothing to be
                        // told, and must not count against --max-clients.
                        if let Some(oldest) = ungreeted().map(|s| s.id).min() {
                            self.sessions.retain(|s| s.id != oldest);
                            self.counts.clients_refused += 1;
                        }
                    }
                    if self.sessions.len() >= self.cfg.max_clients {
                        // Closed at once (dropped): the cap bounds memory
                        // and descriptors, whoever connects.
                        self.counts.clients_refused += 1;
                        drop(stream);
                        continue;
                    }
                    self.next_id += 1;
                    self.sessions.push(Session::new(
                        self.next_id,
                        format!("{name} #{}", self.next_id),
                        stream,
                        now,
                    ));
                }
                Ok(None) => return,
                Err(e) => {
                    if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
                        self.accept_after = now + ACCEPT_BACKOFF_NS;
                    }
                    self.note(format!("accepting a client: {e}"));
                    return;
                }
            }
        }
    }

    /// Drops what client `id` still had waiting (it went away without
    /// BYE): nobody is left to acknowledge it to.
    fn depart(&mut self, id: u64) {
        let mut dropped = 0u64;
        let mut freed = 0usize;
        let mut kept = std::mem::take(&mut self.waiting).into_vec();
        kept.retain(|w| {
            if w.0.session == id {
                dropped += 1;
                freed += w.0.frame.capacity();
                false
            } else {
                true
            }
        });
        self.waiting = BinaryHeap::from(kept);
        self.held_bytes -= freed;
        self.counts.dropped_departed += dropped;
        if let Some(s) = self.session(id) {
            s.outstanding = s.outstanding.saturating_sub(dropped);
            s.departed = true;
        }
    }

    /// A frame buffer back to the pool, if the pool wants it.
    fn recycle(&mut self, frame: Vec<u8>) {
        if self.pool.len() < POOL_MAX && frame.capacity() <= POOL_FRAME_MAX {
            self.pool.push(frame);
        }
    }

    fn note(&mut self, n: String) {
        if self.notes.len() < 20 {
            self.notes.push(n);
        }
    }

    /// Reads and handles what client `i` sent.
    fn serve(&mut self, i: usize, out: &mut Outbox<'_>) -> bool {
        if let Err(e) = self.sessions[i].read() {
            let s = &mut self.sessions[i];
            s.eof = true;
            let n = format!("{}: {e}", s.name);
            self.note(n);
            return true;
        }
        loop {
            let (mono0, real0, now) = (self.mono0, self.real0, self.now());
            let s = &mut self.sessions[i];
            let hello_seen = s.hello.is_some();
            let msg = match s.next_message() {
                Ok(None) => return true,
                Ok(Some(f)) => proto::decode(f.kind, f.body, f.at, hello_seen).map(|m| match m {
                    Message::Hello(h) => Msg::Hello(h, f.at),
                    Message::Descs { .. } => Msg::Descs(f.body.to_vec(), f.at),
                    Message::Bye => Msg::Bye,
                    Message::Payload { id, bytes } => Msg::Payload(id, bytes.to_vec(), f.at),
                }),
                Err(e) => Err(e),
            };
            match msg {
                Err(e) => {
                    self.fail(i, &e);
                    return true;
                }
                Ok(Msg::Hello(h, at)) => {
                    if let Some(want) = &self.cfg.token {
                        if !proto::token_matches(want, h.token.as_ref()) {
                            let e = ProtoError {
                                offset: at + proto::HELLO_LEN as u64,
                                field: "token",
                                reason: "missing or wrong: this server needs the secret \
                                         of its --token-file after HELLO's body"
                                    .into(),
                            };
                            self.fail(i, &e);
                            return true;
                        }
                    }
                    self.counts.sessions += 1;
                    let s = &mut self.sessions[i];
                    s.hello = Some(h);
                    s.t0 = now;
                    s.macs = (
                        h.src_mac.unwrap_or(self.cfg.macs.0),
                        h.dst_mac.unwrap_or(self.cfg.macs.1),
                    );
                    let (src, dst) = s.macs;
                    proto::welcome(s.out(), mono0 + now, real0 + now, src, dst);
                }
                Ok(Msg::Bye) => self.sessions[i].bye = true,
                Ok(Msg::Payload(id, bytes, at)) => {
                    if let Err(e) = self.sessions[i].payloads.store(id, bytes, at) {
                        self.fail(i, &e);
                        return true;
                    }
                }
                Ok(Msg::Descs(body, at)) => {
                    // Every stored payload named is there and fits before
                    // any description of the message is scheduled.
                    if let Err(e) = self.sessions[i].payloads.check(&body, at) {
                        self.fail(i, &e);
                        return true;
                    }
                    let payloads = std::mem::take(&mut self.sessions[i].payloads);
                    let more = self.accept_descs(i, &body, &payloads, out);
                    self.sessions[i].payloads = payloads;
                    if !more {
                        return false;
                    }
                }
            }
        }
    }

    /// Schedules a DESCS body's descriptions; false when the outbox
    /// refused a frame (the run is over).
    fn accept_descs(
        &mut self,
        i: usize,
        body: &[u8],
        payloads: &payloads::Payloads,
        out: &mut Outbox<'_>,
    ) -> bool {
        let (mono0, real0) = (self.mono0, self.real0);
        let mut now = self.now();
        for (k, d) in proto::descs(body).enumerate() {
            let d = proto::Desc {
                prefix: payloads.prefix(&d),
                ..d
            };
            // A long message is built in slices, between which what fell
            // due meanwhile leaves.
            if k % RELEASE_EVERY == RELEASE_EVERY - 1 {
                now = self.now();
                if !self.release(out, now) {
                    return false;
                }
            }
            let s = &mut self.sessions[i];
            s.accepted += 1;
            s.outstanding += 1;
            self.counts.descriptions += 1;
            let id = s.id;
            if self.waiting.len() + self.in_flight.len() >= self.cfg.queue_limit {
                self.counts.dropped_queue_full += 1;
                self.answer(id, d.seq, d.time, now, Status::DroppedQueueFull);
                continue;
            }
            if self.held_bytes >= self.cfg.queue_bytes {
                self.counts.dropped_queue_bytes += 1;
                self.answer(id, d.seq, d.time, now, Status::DroppedQueueFull);
                continue;
            }
            let mut due = Self::to_run(s, mono0, real0, d.time);
            let late = due < now;
            if late {
                self.counts.late += 1;
                due = now;
            }
            let macs = s.macs;
            if self.waiting.is_empty() && due <= now + self.cfg.lead_ns {
                // Nothing held before it: straight to the engine.
                if !out.push(Lane(0), Nanos(due), |b| build::build(b, &d, macs)) {
                    return false;
                }
                self.in_flight.push_back(InFlight {
                    session: id,
                    seq: d.seq,
                    requested: d.time,
                    late,
                    due,
                });
                continue;
            }
            let mut frame = self.pool.pop().unwrap_or_default();
            frame.clear();
            build::build(&mut frame, &d, macs);
            self.held_bytes += frame.capacity();
            self.order += 1;
            self.waiting.push(Reverse(Waiting {
                due,
                requested: d.time,
                order: self.order,
                session: id,
                seq: d.seq,
                late,
                frame,
            }));
        }
        true
    }

    /// Ends client `i`'s session with an error naming the offset and field.
    fn fail(&mut self, i: usize, e: &ProtoError) {
        self.counts.errors += 1;
        let s = &mut self.sessions[i];
        let n = format!("{}: {e}", s.name);
        s.seal_acks();
        proto::error(s.out(), e);
        s.closing = true;
        s.eof = true;
        self.note(n);
    }

    /// Hands every held frame due within the lead to the engine.
    fn release(&mut self, out: &mut Outbox<'_>, now: u64) -> bool {
        let mut any = false;
        while self
            .waiting
            .peek()
            .is_some_and(|w| w.0.due <= now + self.cfg.lead_ns)
        {
            let Reverse(w) = self.waiting.pop().expect("peeked");
            self.held_bytes -= w.frame.capacity();
            if self.sessions.iter().all(|s| s.id != w.session) {
                self.recycle(w.frame);
                continue;
            }
            if w.due < now {
                self.counts.released_late += 1;
            }
            if !out.push(Lane(0), Nanos(w.due), |b| b.extend_from_slice(&w.frame)) {
                return false;
            }
            any = true;
            self.in_flight.push_back(InFlight {
                session: w.session,
                seq: w.seq,
                requested: w.requested,
                late: w.late,
                due: w.due,
            });
            self.recycle(w.frame);
        }
        (!any || out.flush()) && !out.stopped()
    }

    /// Acknowledges every frame whose fate the TX thread recorded.
    fn acknowledge(&mut self) {
        while let Some(fate) = self.fates.take() {
            let Some(f) = self.in_flight.pop_front() else {
                self.note("a departure without a description (more than one TX thread?)".into());
                continue;
            };
            let (t, status) = match fate {
                Fate::Sent(at) if f.late => (at.0, Status::SentLate),
                // On time as described, late by the engine's own doing (a
                // stall, a busy machine): never acknowledged as `sent`.
                Fate::Sent(at) if at.0.saturating_sub(f.due) > self.cfg.late_threshold_ns => {
                    self.counts.left_late += 1;
                    (at.0, Status::LeftLate)
                }
                Fate::Sent(at) => (at.0, Status::Sent),
                Fate::Dropped => {
                    self.counts.dropped_late += 1;
                    (self.now(), Status::DroppedLate)
                }
                Fate::Refused => {
                    self.counts.refused += 1;
                    (self.now(), Status::Refused)
                }
            };
            self.answer(f.session, f.seq, f.requested, t, status);
        }
    }

    /// Hands frames that arrived on the return interface to the clients
    /// that asked for them.
    fn hand_back(&mut self) -> Result<(), SourceError> {
        let Some(rx) = &self.rx else { return Ok(()) };
        for _ in 0..256 {
            let got =
                rx.recv(&mut self.rx_buf, Duration::ZERO)
                    .map_err(|e| SourceError::Device {
                        what: "the return interface".into(),
                        error: e,
                    })?;
            let Some(r) = got else { break };
            let arrival = self.clock.now().since(self.start).0;
            let frame = &mut self.rx_buf[..r.len];
            if r.partial_checksum {
                sluice_wire::complete_checksum(frame);
            }
            self.counts.returned += 1;
            for s in &mut self.sessions {
                if s.hello.is_some_and(|h| h.want_frames) && !s.closing {
                    if s.backlog() >= session::RETURN_BACKLOG {
                        self.counts.returned_dropped += 1;
                        continue;
                    }
                    let t = Self::from_run(s, self.mono0, self.real0, arrival);
                    proto::frame(s.out(), t, frame);
                }
            }
        }
        Ok(())
    }

    /// Writes answers, ends sessions that are complete, drops closed ones.
    fn tend(&mut self) {
        let now = self.now();
        let gone: Vec<u64> = self
            .sessions
            .iter()
            .filter(|s| s.eof && !s.bye && !s.departed)
            .map(|s| s.id)
            .collect();
        for id in gone {
            self.depart(id);
        }
        for s in &mut self.sessions {
            if s.hello.is_none() && !s.closing && now.saturating_sub(s.opened) > HELLO_WITHIN_NS {
                self.counts.hello_timeouts += 1;
                s.abandon();
                continue;
            }
            if !s.closing && (s.bye || s.eof) && s.outstanding == 0 {
                s.seal_acks();
                if s.bye {
                    let n = s.accepted;
                    proto::done(s.out(), n);
                }
                s.closing = true;
            }
            s.seal_acks();
            if s.wants_write() {
                if let Err(e) = s.write() {
                    if self.notes.len() < 20 {
                        self.notes.push(format!("{}: {e}", s.name));
                    }
                    s.abandon();
                }
            }
        }
        // A connection that never said HELLO (a probe) is no session.
        let ended = &mut self.counts.ended;
        self.sessions.retain(|s| {
            let over = s.finished();
            if over && s.hello.is_some() {
                *ended += 1;
            }
            !over
        });
    }

    fn all_done(&self) -> bool {
        self.cfg.sessions.is_some_and(|n| self.counts.ended >= n)
            && self.sessions.is_empty()
            && self.waiting.is_empty()
            && self.in_flight.is_empty()
    }

    fn wait(&mut self, now: u64) -> Result<(), SourceError> {
        let mut timeout = match self.waiting.peek() {
            Some(w) => {
                Duration::from_nanos(w.0.due.saturating_sub(now + self.cfg.lead_ns)).min(IDLE_WAIT)
            }
            None => IDLE_WAIT,
        };
        if !self.in_flight.is_empty() {
            timeout = timeout.min(ACK_WAIT);
        }
        if timeout.is_zero() {
            return Ok(());
        }
        self.poll.clear();
        if now >= self.accept_after {
            self.poll.add(self.listener.fd(), READ);
        } else {
            timeout = timeout.min(Duration::from_nanos(self.accept_after - now));
        }
        for s in &self.sessions {
            let mut ev = 0;
            if s.wants_read(self.cfg.window) {
                ev |= READ;
            }
            if s.wants_write() {
                ev |= WRITE;
            }
            if ev != 0 {
                self.poll.add(s.stream.fd(), ev);
            }
        }
        if let Some(rx) = &self.rx {
            self.poll.add(rx.fd(), READ);
        }
        self.poll.wait(timeout).map_err(|e| SourceError::Device {
            what: "waiting for clients".into(),
            error: e,
        })
    }

    fn run(&mut self, out: &mut Outbox<'_>) -> Result<(), SourceError> {
        loop {
            let now = self.now();
            if self.duration.is_some_and(|d| now >= d.0) || out.stopped() {
                return Ok(());
            }
            self.accept();
            for i in 0..self.sessions.len() {
                if self.sessions[i].wants_read(self.cfg.window) && !self.serve(i, out) {
                    return Ok(());
                }
            }
            let now = self.now();
            if !self.release(out, now) {
                return Ok(());
            }
            if !out.flush() {
                return Ok(());
            }
            self.acknowledge();
            self.hand_back()?;
            self.tend();
            if self.all_done() {
                return Ok(());
            }
            self.wait(now)?;
        }
    }

    /// Acknowledges description `seq` of session `id` (requested at
    /// `requested` in its time base) with run time `at`, and logs it. A
    /// session already gone gets nothing.
    fn answer(&mut self, id: u64, seq: u64, requested: u64, at: u64, status: Status) {
        let (mono0, real0) = (self.mono0, self.real0);
        let Some(s) = self.session(id) else { return };
        let t = Self::from_run(s, mono0, real0, at);
        s.ack(seq, t, status);
        self.log_ack(&LoggedAck {
            session: id,
            seq,
            requested,
            departure: t,
            status,
        });
    }

    /// Writes one line of the request log; the first error stops it (and
    /// is noted at the end), never the run.
    fn log_ack(&mut self, line: &LoggedAck) {
        if let Some(log) = self.log.as_mut() {
            if let Err(e) = log.record(line) {
                self.log_failed = Some(e.to_string());
                self.log = None;
            }
        }
    }

    /// At the end: what is still held is acknowledged as not sent, what
    /// the TX thread reported is acknowledged, and the answers are written
    /// (briefly waiting for slow readers).
    fn wind_up(&mut self) {
        let now = self.now();
        while let Some(Reverse(w)) = self.waiting.pop() {
            self.held_bytes -= w.frame.capacity();
            self.answer(w.session, w.seq, w.requested, now, Status::NotSent);
        }
        self.acknowledge();
        if let Some(mut log) = self.log.take() {
            if let Err(e) = log.finish() {
                self.log_failed.get_or_insert(e.to_string());
            }
        }
        if let Some(e) = self.log_failed.take() {
            self.note(format!("--log-requested: {e} (the log is incomplete)"));
        }
        let deadline = std::time::Instant::now() + Duration::from_millis(500);
        for s in &mut self.sessions {
            s.seal_acks();
            while s.wants_write() && std::time::Instant::now() < deadline {
                if s.write().is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
}

/// A decoded message, owned, so the session may be borrowed again.
enum Msg {
    Hello(proto::Hello, u64),
    /// The body and its stream offset.
    Descs(Vec<u8>, u64),
    Bye,
    /// A payload to store: id, bytes, the body's stream offset.
    Payload(u32, Vec<u8>, u64),
}

impl Source for InjectSource {
    fn fill(&mut self, out: &mut Outbox<'_>) -> Result<End, SourceError> {
        let _ = sluice_sys::sched::set_timer_slack(1);
        let result = self.run(out);
        self.wind_up();
        result.map(|()| End::Done)
    }

    fn origin(&self) -> Origin {
        Origin::Live
    }

    fn wants_fates(&self) -> bool {
        true
    }

    fn begin(&mut self, cx: &RunContext) {
        let (clock, start) = (cx.clock, cx.start.unwrap_or_else(|| cx.clock.now()));
        if let Some(f) = &cx.fates {
            self.fates = f.clone();
        }
        self.clock = clock;
        self.start = start;
        self.duration = cx.duration;
        let at = |read: fn() -> u64| sluice_source::seam::at_start(&clock, start, read);
        self.mono0 = at(sluice_sys::clock::monotonic_ns);
        // The engine's origin when it gives one: the pcap output is
        // stamped from it, so realtime acks equal its stamps.
        self.real0 = cx
            .realtime_start
            .unwrap_or_else(|| at(sluice_sys::clock::realtime_ns));
    }

    fn report(&self) -> SourceReport {
        let c = &self.counts;
        let mut notes = self.notes.clone();
        if c.dropped_queue_full > 0 {
            notes.push(format!(
                "{} descriptions arrived to a full queue (--queue-limit) and were dropped",
                c.dropped_queue_full
            ));
        }
        if c.dropped_queue_bytes > 0 {
            notes.push(format!(
                "{} descriptions arrived while the held frames filled --queue-bytes and were dropped",
                c.dropped_queue_bytes
            ));
        }
        if c.dropped_departed > 0 {
            notes.push(format!(
                "{} held descriptions of clients that left without BYE were dropped",
                c.dropped_departed
            ));
        }
        if c.returned_dropped > 0 {
            notes.push(format!(
                "{} returned frames were not queued for clients that did not read them",
                c.returned_dropped
            ));
        }
        if c.clients_refused + c.hello_timeouts > 0 {
            notes.push(format!(
                "{} connections closed over --max-clients or the cap on connections without HELLO, \
                 {} for saying no HELLO within {} s",
                c.clients_refused,
                c.hello_timeouts,
                HELLO_WITHIN_NS / 1_000_000_000
            ));
        }
        SourceReport {
            notes,
            counters: vec![
                ("sessions", c.sessions),
                ("descriptions", c.descriptions),
                ("late_descriptions", c.late),
                ("dropped_queue_full", c.dropped_queue_full),
                ("refused", c.refused),
                ("dropped_late", c.dropped_late),
                ("returned", c.returned),
                ("released_late", c.released_late),
                ("left_late", c.left_late),
                ("protocol_errors", c.errors),
                ("dropped_queue_bytes", c.dropped_queue_bytes),
                ("dropped_departed", c.dropped_departed),
                ("returned_dropped", c.returned_dropped),
                ("clients_refused", c.clients_refused),
                ("hello_timeouts", c.hello_timeouts),
            ],
            ..SourceReport::default()
        }
    }
}
