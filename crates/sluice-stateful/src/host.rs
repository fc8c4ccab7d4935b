//! A host: one port's user-space stack. It answers ARP for its addresses,
//! owns the connections of those addresses (a table of fixed-size records
//! found by 5-tuple, a timing wheel), opens client connections at the
//! planned rate and accepts server connections on the programs' ports.
//! It never reads the clock: `now` (ns of the run's clock) comes with
//! every call, so the same host runs on the wall clock or a virtual one.

pub use crate::config::{ClientConfig, HostConfig, Rate, TcpConfig, TICK_NS};
use crate::conn::{Conn, St};
use crate::counters::{Counts, HostCounts, Times};
pub use crate::ctx::{Ctx, Outcome, Outq};
use crate::frame::{self, Parsed, TcpSeg, UdpDgram, ACK, RST, SYN};
use crate::program::{Program, Proto, Side};
use crate::wheel::Wheel;
use crate::{tcp, udp};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A 5-tuple (the protocol in the top bits) as one key.
fn key(proto: Proto, local: u32, peer: u32, lport: u16, pport: u16) -> u128 {
    let p = match proto {
        Proto::Tcp => 6u128,
        Proto::Udp => 17,
    };
    (p << 96)
        | (u128::from(local) << 64)
        | (u128::from(peer) << 32)
        | (u128::from(lport) << 16)
        | u128::from(pport)
}

/// Multiply-and-fold hashing of a 5-tuple key: the table's keys are not
/// chosen by an attacker who could make them collide on purpose beyond
/// what the pool's own addresses allow, and SipHash per frame costs more
/// than the rest of the lookup.
#[derive(Default)]
pub struct TupleHasher(u64);

impl Hasher for TupleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    fn write_u128(&mut self, v: u128) {
        let m = (v as u64 ^ ((v >> 64) as u64).rotate_left(29)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = m ^ (m >> 29);
    }
}

type Table = HashMap<u128, u32, BuildHasherDefault<TupleHasher>>;

pub struct Host {
    conns: Vec<Conn>,
    live: Vec<bool>,
    free: Vec<u32>,
    table: Table,
    wheel: Wheel,
    fired: Vec<u32>,
    pub x: Ctx,
    active: u64,
    /// Records held that only linger (see [`Conn::lingers`]).
    lingering: u64,
    // Client state.
    opened: u64,
    next_open: u64,
    next_tuple: u64,
    wrr: Vec<i64>,
    arp_at: u64,
    started: u64,
    /// Programs by server port: where several share one, the client's
    /// port says which (its port ≡ the program's place, modulo their
    /// number), so both sides run the same program without a word.
    groups: HashMap<(Proto, u16), Vec<usize>>,
}

impl Host {
    pub fn new(cfg: HostConfig, progs: Arc<Vec<Program>>, now: u64) -> Host {
        let n = progs.len();
        let mut rng = SmallRng::seed_from_u64(cfg.seed);
        let isn_key = rng.random();
        // Runs after one another start at other places of the pool.
        let next_tuple = u64::from(rng.random::<u32>()) ^ (cfg.clock_base >> 10);
        let gw_mac = cfg.gateway_mac;
        let mut groups: HashMap<(Proto, u16), Vec<usize>> = HashMap::new();
        for (i, p) in progs.iter().enumerate() {
            groups.entry((p.proto, p.port)).or_default().push(i);
        }
        Host {
            groups,
            conns: Vec::new(),
            live: Vec::new(),
            free: Vec::new(),
            table: Table::default(),
            wheel: Wheel::new(4096, now / TICK_NS),
            fired: Vec::new(),
            x: Ctx {
                cfg,
                progs,
                out: Outq::default(),
                counts: vec![Counts::default(); n],
                times: vec![Times::default(); n],
                host: HostCounts::default(),
                rng,
                ip_id: 0,
                gw_mac,
                isn_key,
            },
            active: 0,
            lingering: 0,
            opened: 0,
            next_open: now,
            next_tuple,
            wrr: vec![0; n],
            arp_at: now,
            started: now,
        }
    }

    /// Connections held (TIME-WAIT and lingering ones included).
    pub fn active(&self) -> u64 {
        self.active
    }

    /// Connections open: held, less those that only linger.
    pub fn open_now(&self) -> u64 {
        self.active - self.lingering
    }

    pub fn opened(&self) -> u64 {
        self.opened
    }

    /// Bytes of records and their table entries per connection held (the
    /// slab's capacity, the table's, the wheel's links).
    pub fn state_bytes(&self) -> usize {
        self.conns.capacity() * (std::mem::size_of::<Conn>() + 1)
            + self.table.capacity() * (16 + 4 + 1)
            + self.conns.capacity() * 20
    }

    fn ours(&self, ip: u32) -> bool {
        (self.x.cfg.addrs.0..=self.x.cfg.addrs.1).contains(&ip)
    }

    /// Handles one received frame.
    pub fn deliver(&mut self, f: &[u8], now: u64) {
        self.x.host.rx_frames += 1;
        match frame::parse(f) {
            Parsed::Arp(a) => self.arp(a, now),
            Parsed::Tcp(s) if self.ours(s.dst) => self.tcp(&s, now),
            Parsed::Udp(d) if self.ours(d.dst) => self.udp(&d, now),
            Parsed::Malformed => self.x.host.rx_malformed += 1,
            _ => self.x.host.rx_ignored += 1,
        }
    }

    fn arp(&mut self, a: frame::Arp, _now: u64) {
        if a.spa == self.x.cfg.gateway && self.x.cfg.gateway_mac.is_none() {
            self.x.gw_mac = Some(a.sha);
            if let Some(g) = &self.x.cfg.shared_gw {
                let mut v = [0u8; 8];
                v[2..].copy_from_slice(&a.sha);
                // Bit 63 marks it known (an address of zeroes is one too).
                g.store(u64::from_be_bytes(v) | 1 << 63, Ordering::Relaxed);
            }
        }
        if a.op == 1 && self.ours(a.tpa) {
            frame::push_arp(&mut self.x.out.buf, 2, self.x.cfg.mac, a.tpa, a.sha, a.spa);
            self.x.out.close_frame();
            self.x.host.arp_replies += 1;
        } else if a.op != 1 && a.op != 2 {
            self.x.host.rx_malformed += 1;
        }
    }

    fn lookup(&self, k: u128) -> Option<u32> {
        self.table.get(&k).copied()
    }

    fn alloc(&mut self, c: Conn, k: u128) -> Option<u32> {
        if self.active as usize >= self.x.cfg.max_conns {
            self.x.host.table_full += 1;
            return None;
        }
        let id = if let Some(id) = self.free.pop() {
            self.conns[id as usize] = c;
            self.live[id as usize] = true;
            id
        } else {
            self.conns.push(c);
            self.live.push(true);
            (self.conns.len() - 1) as u32
        };
        self.table.insert(k, id);
        self.active += 1;
        Some(id)
    }

    fn release(&mut self, id: u32) {
        let c = &self.conns[id as usize];
        if c.lingering {
            self.lingering -= 1;
        }
        let proto = self.x.progs[usize::from(c.prog)].proto;
        let k = key(proto, c.local_ip, c.peer_ip, c.local_port, c.peer_port);
        self.table.remove(&k);
        self.wheel.cancel(id);
        self.live[id as usize] = false;
        self.free.push(id);
        self.active -= 1;
    }

    /// After an event on `id`: frees it, or arms its timer at its
    /// earliest deadline.
    fn settle(&mut self, id: u32, o: Outcome) {
        if o == Outcome::Free {
            self.release(id);
            return;
        }
        let c = &mut self.conns[id as usize];
        if !c.lingering && c.lingers() {
            c.lingering = true;
            self.lingering += 1;
        }
        match self.conns[id as usize].next_deadline() {
            Some(d) => self.wheel.arm(id, d.div_ceil(TICK_NS)),
            None => self.wheel.cancel(id),
        }
    }

    fn tcp(&mut self, s: &TcpSeg<'_>, now: u64) {
        let k = key(Proto::Tcp, s.dst, s.src, s.dport, s.sport);
        if let Some(id) = self.lookup(k) {
            let c = &mut self.conns[id as usize];
            // A new SYN on a tuple in TIME-WAIT starts a new connection.
            if c.state == St::TimeWait && s.flags & (SYN | ACK) == SYN {
                self.release(id);
            } else {
                let o = tcp::segment(c, &mut self.x, s, now);
                self.settle(id, o);
                return;
            }
        }
        let syn = s.flags & (SYN | ACK | RST) == SYN;
        if let Some(prog) = self.listening(Proto::Tcp, s.dport, s.sport).filter(|_| syn) {
            let c = Conn::new(
                Side::Server,
                prog as u16,
                (s.dst, s.dport),
                (s.src, s.sport),
                now,
            );
            if let Some(id) = self.alloc(c, k) {
                let c = &mut self.conns[id as usize];
                let o = tcp::accept(c, &mut self.x, s, now);
                self.settle(id, o);
            }
            return;
        }
        self.x.host.rx_stray += 1;
        if s.flags & RST == 0 {
            tcp::reset_stray(&mut self.x, s);
        }
    }

    fn listening(&self, proto: Proto, port: u16, peer_port: u16) -> Option<usize> {
        if !self.x.cfg.server {
            return None;
        }
        let g = self.groups.get(&(proto, port))?;
        Some(g[usize::from(peer_port) % g.len()])
    }

    fn udp(&mut self, d: &UdpDgram<'_>, now: u64) {
        let k = key(Proto::Udp, d.dst, d.src, d.dport, d.sport);
        if let Some(id) = self.lookup(k) {
            let c = &mut self.conns[id as usize];
            let o = udp::datagram(c, &mut self.x, d, now);
            self.settle(id, o);
            return;
        }
        if let Some(prog) = self.listening(Proto::Udp, d.dport, d.sport) {
            let c = Conn::new(
                Side::Server,
                prog as u16,
                (d.dst, d.dport),
                (d.src, d.sport),
                now,
            );
            if let Some(id) = self.alloc(c, k) {
                let c = &mut self.conns[id as usize];
                c.state = St::Datagrams;
                self.x.counts[prog].attempted += 1;
                self.x.counts[prog].established += 1;
                let o = udp::datagram(c, &mut self.x, d, now);
                self.settle(id, o);
            }
            return;
        }
        self.x.host.rx_stray += 1;
    }

    /// Runs the timers due by `now` and opens the connections due.
    pub fn poll(&mut self, now: u64) {
        self.fired.clear();
        self.wheel.advance(now / TICK_NS, &mut self.fired);
        let fired = std::mem::take(&mut self.fired);
        for &id in &fired {
            if !self.live[id as usize] {
                continue;
            }
            let c = &mut self.conns[id as usize];
            let o = if c.state == St::Datagrams {
                udp::timer(c, &mut self.x, now)
            } else {
                tcp::timer(c, &mut self.x, now)
            };
            self.settle(id, o);
        }
        self.fired = fired;
        self.resolve(now);
        self.open_due(now);
    }

    /// Asks for the next hop's address once a second until it is known
    /// (a client opens nothing before; a server's answers would go
    /// nowhere).
    fn resolve(&mut self, now: u64) {
        if self.x.gw_mac.is_none() {
            if let Some(g) = &self.x.cfg.shared_gw {
                let v = g.load(Ordering::Relaxed);
                if v >> 63 == 1 {
                    let b = v.to_be_bytes();
                    self.x.gw_mac = Some([b[2], b[3], b[4], b[5], b[6], b[7]]);
                }
            }
        }
        if self.x.gw_mac.is_some() || now < self.arp_at {
            return;
        }
        let (mac, src) = (self.x.cfg.mac, self.x.cfg.addrs.0);
        frame::push_arp(&mut self.x.out.buf, 1, mac, src, [0; 6], self.x.cfg.gateway);
        self.x.out.close_frame();
        self.x.host.arp_requests += 1;
        self.arp_at = now + 1_000 * TICK_NS;
    }

    /// Whether the client has opened all it will.
    pub fn opening_done(&self, now: u64) -> bool {
        let Some(cc) = &self.x.cfg.client else {
            return true;
        };
        cc.limit.is_some_and(|l| self.opened >= l) || cc.open_until.is_some_and(|u| now >= u)
    }

    /// When the host must run again even if nothing arrives (ns).
    pub fn next_wake(&self, now: u64) -> u64 {
        let mut t = now + 50 * TICK_NS;
        if let Some(tick) = self.wheel.next_tick(50) {
            t = t.min(tick * TICK_NS);
        }
        if self.x.gw_mac.is_none() {
            t = t.min(self.arp_at);
        }
        if self.x.cfg.client.is_some()
            && !self.opening_done(now)
            && self.x.gw_mac.is_some()
            && !self.concurrency_full()
        {
            t = t.min(self.next_open);
        }
        t.max(now)
    }

    fn concurrency_full(&self) -> bool {
        self.x
            .cfg
            .client
            .as_ref()
            .and_then(|c| c.concurrency)
            .is_some_and(|m| self.open_now() >= m)
    }

    fn rate_at(&self, now: u64) -> f64 {
        let Some(cc) = &self.x.cfg.client else {
            return 0.0;
        };
        let r = &cc.rate;
        match r.ramp {
            Some((to, over)) if over > 0 => {
                let f = ((now - self.started) as f64 / over as f64).min(1.0);
                r.cps + (to - r.cps) * f
            }
            _ => r.cps,
        }
    }

    fn open_due(&mut self, now: u64) {
        let Some(cc) = self.x.cfg.client.clone() else {
            return;
        };
        if self.x.gw_mac.is_none() {
            self.next_open = now;
            return;
        }
        // A burst past this many opens per call lets receives in between.
        for _ in 0..256 {
            if self.opening_done(now) || self.concurrency_full() || now < self.next_open {
                return;
            }
            let rate = self.rate_at(now);
            if rate > 0.0 {
                let mean = 1e9 / rate;
                let gap = if cc.rate.poisson {
                    let u: f64 = self.x.rng.random_range(f64::MIN_POSITIVE..1.0);
                    -u.ln() * mean
                } else {
                    mean
                };
                self.next_open += gap.max(1.0) as u64;
            } else {
                self.next_open = now;
            }
            if !self.open_one(&cc, now) {
                // The pool is busy: try again a tick later.
                self.next_open = now + TICK_NS;
                return;
            }
        }
    }

    /// The next program by smooth weighted round robin (nginx's): over
    /// any window each program gets its share, evenly spread.
    fn pick_program(&mut self) -> usize {
        let total: i64 = self.x.progs.iter().map(|p| i64::from(p.weight)).sum();
        let mut best = 0;
        for (i, p) in self.x.progs.iter().enumerate() {
            self.wrr[i] += i64::from(p.weight);
            if self.wrr[i] > self.wrr[best] {
                best = i;
            }
        }
        self.wrr[best] -= total;
        best
    }

    fn open_one(&mut self, cc: &ClientConfig, now: u64) -> bool {
        let prog = self.pick_program();
        let p = &self.x.progs[prog];
        let (proto, port) = (p.proto, p.port);
        let nips = u64::from(self.x.cfg.addrs.1 - self.x.cfg.addrs.0) + 1;
        let g = &self.groups[&(proto, port)];
        let (m, place) = (
            g.len() as u64,
            g.iter().position(|&i| i == prog).unwrap_or(0) as u64,
        );
        // Ports ≡ place (mod m), from the first such port of the range.
        let first = u64::from(cc.ports.0) + (place + m - u64::from(cc.ports.0) % m) % m;
        let nports = (u64::from(cc.ports.1) + 1)
            .saturating_sub(first)
            .div_ceil(m);
        if nports == 0 {
            self.x.host.pool_busy += 1;
            return false;
        }
        let pool = nips * nports;
        // Consecutive connections take consecutive addresses, then the
        // next port: a tuple comes back only after the whole pool.
        for _ in 0..(64 * u64::from(cc.shard.1.max(1))).min(pool) {
            let k = self.next_tuple % pool;
            self.next_tuple += 1;
            let ip = self.x.cfg.addrs.0 + (k % nips) as u32;
            let lport = (first + ((k / nips) % nports) * m) as u16;
            if crate::fanout::shard_of(lport, cc.shard.1) != cc.shard.0 {
                continue;
            }
            let tk = key(proto, ip, cc.target, lport, port);
            if self.table.contains_key(&tk) {
                continue;
            }
            let mut c = Conn::new(
                Side::Client,
                prog as u16,
                (ip, lport),
                (cc.target, port),
                now,
            );
            let progs = Arc::clone(&self.x.progs);
            for (d, law) in c.drawn.iter_mut().zip(&progs[prog].laws) {
                *d = law.draw(&mut self.x.rng);
            }
            let Some(id) = self.alloc(c, tk) else {
                return false;
            };
            self.opened += 1;
            self.x.counts[prog].attempted += 1;
            let c = &mut self.conns[id as usize];
            let o = match proto {
                Proto::Tcp => tcp::open(c, &mut self.x, now),
                Proto::Udp => udp::open(c, &mut self.x, now),
            };
            self.settle(id, o);
            return true;
        }
        self.x.host.pool_busy += 1;
        false
    }

    /// Ends the run: every connection still held is counted unfinished
    /// and reset (TCP), so the device under test holds no state of it.
    pub fn finish(&mut self, _now: u64) {
        for id in 0..self.conns.len() as u32 {
            if !self.live[id as usize] {
                continue;
            }
            let c = &mut self.conns[id as usize];
            let p = usize::from(c.prog);
            let closed = c.state == St::TimeWait || (c.state == St::Datagrams && c.done);
            if !closed {
                self.x.counts[p].unfinished += 1;
                if c.state != St::Datagrams {
                    tcp::send_rst(c, &mut self.x);
                }
            }
            self.release(id);
        }
    }

    /// Totals over the programs.
    pub fn total(&self) -> Counts {
        let mut t = Counts::default();
        for c in &self.x.counts {
            t.add(c);
        }
        t
    }
}
