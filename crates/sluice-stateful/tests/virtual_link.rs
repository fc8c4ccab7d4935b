//! A client host and a server host joined by a virtual link on a virtual
//! clock: every frame arrives after a fixed delay, and some are dropped on
//! purpose. The whole conversation (handshake, data, loss, recovery,
//! close) is checked exactly, with no timing of this machine involved.

use sluice_stateful::counters::Counts;
use sluice_stateful::frame::{self, Parsed};
use sluice_stateful::host::{ClientConfig, Host, HostConfig, Rate, TcpConfig};
use sluice_stateful::program::Program;
use sluice_stateful::templates;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;

const CLIENT_MAC: [u8; 6] = [2, 0, 0, 0, 1, 1];
const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 2, 1];
const POOL: (u32, u32) = (0x0a00_0100, 0x0a00_0109);
const SERVER: u32 = 0x0a00_0201;

fn progs(specs: &[&str]) -> Arc<Vec<Program>> {
    let read = |p: &str| std::fs::read(p).map_err(|e| e.to_string());
    Arc::new(
        specs
            .iter()
            .map(|s| templates::parse(s, &read).unwrap())
            .collect(),
    )
}

/// A frame on the wire: (due, order, to the server, bytes).
type InFlight = Reverse<(u64, u64, bool, Vec<u8>)>;
/// Says whether to drop a frame, given its number and bytes.
type DropRule = Box<dyn FnMut(u64, &[u8]) -> bool>;

struct Lab {
    client: Host,
    server: Option<Host>,
    now: u64,
    delay: u64,
    wire: BinaryHeap<InFlight>,
    order: u64,
    drop: DropRule,
    sent: u64,
    dropped: u64,
}

fn client_cfg(n: u64, cps: f64, tcp: TcpConfig) -> HostConfig {
    HostConfig {
        mac: CLIENT_MAC,
        gateway: SERVER,
        gateway_mac: None,
        addrs: POOL,
        client: Some(ClientConfig {
            target: SERVER,
            ports: (10000, 19999),
            rate: Rate {
                cps,
                poisson: false,
                ramp: None,
            },
            concurrency: None,
            limit: Some(n),
            open_until: None,
            shard: (0, 1),
        }),
        server: false,
        tcp,
        max_conns: 1 << 21,
        seed: 1,
        shared_gw: None,
        clock_base: 0,
    }
}

fn server_cfg(tcp: TcpConfig) -> HostConfig {
    HostConfig {
        mac: SERVER_MAC,
        gateway: POOL.0,
        gateway_mac: Some(CLIENT_MAC),
        addrs: (SERVER, SERVER),
        client: None,
        server: true,
        tcp,
        max_conns: 1 << 21,
        seed: 2,
        shared_gw: None,
        clock_base: 0,
    }
}

impl Lab {
    fn new(client: &[&str], server: Option<&[&str]>, n: u64, cps: f64, tcp: TcpConfig) -> Lab {
        Lab {
            client: Host::new(client_cfg(n, cps, tcp.clone()), progs(client), 0),
            server: server.map(|s| Host::new(server_cfg(tcp), progs(s), 0)),
            now: 0,
            delay: 100_000,
            wire: BinaryHeap::new(),
            order: 0,
            drop: Box::new(|_, _| false),
            sent: 0,
            dropped: 0,
        }
    }

    fn ship(&mut self, to_server: bool) {
        let host = if to_server {
            &mut self.client
        } else {
            match self.server.as_mut() {
                Some(s) => s,
                None => return,
            }
        };
        let frames: Vec<Vec<u8>> = host.x.out.frames().map(|f| f.to_vec()).collect();
        host.x.out.consume(frames.len());
        host.x.host.tx_frames += frames.len() as u64;
        for f in frames {
            self.sent += 1;
            if (self.drop)(self.sent, &f) {
                self.dropped += 1;
                continue;
            }
            self.order += 1;
            self.wire
                .push(Reverse((self.now + self.delay, self.order, to_server, f)));
        }
    }

    /// Runs until the client has opened all and every connection of both
    /// hosts is gone, or `limit` ns of virtual time pass.
    fn run(&mut self, limit: u64) {
        loop {
            self.client.poll(self.now);
            if let Some(s) = self.server.as_mut() {
                s.poll(self.now);
            }
            self.ship(true);
            self.ship(false);
            let idle = self.client.opening_done(self.now)
                && self.client.active() == 0
                && self.server.as_ref().is_none_or(|s| s.active() == 0)
                && self.wire.is_empty();
            if idle || self.now >= limit {
                return;
            }
            let mut next = self.client.next_wake(self.now);
            if let Some(s) = &self.server {
                next = next.min(s.next_wake(self.now));
            }
            if let Some(Reverse((at, ..))) = self.wire.peek() {
                next = next.min(*at);
            }
            self.now = next.max(self.now + 1).min(limit);
            while let Some(Reverse((at, ..))) = self.wire.peek() {
                if *at > self.now {
                    break;
                }
                let Reverse((_, _, to_server, f)) = self.wire.pop().unwrap();
                if to_server {
                    if let Some(s) = self.server.as_mut() {
                        s.deliver(&f, self.now);
                    }
                } else {
                    self.client.deliver(&f, self.now);
                }
            }
        }
    }
}

fn assert_all_completed(c: &Counts, n: u64) {
    assert_eq!(c.attempted, n, "{c:?}");
    assert_eq!(c.established, n, "{c:?}");
    assert_eq!(c.completed, n, "{c:?}");
    assert_eq!(c.ended(), n, "{c:?}");
}

#[test]
fn http_gets_complete_on_both_sides_with_every_byte_counted() {
    let mut lab = Lab::new(
        &["http:size=10k"],
        Some(&["http:size=10k"]),
        500,
        20_000.0,
        TcpConfig::default(),
    );
    lab.run(60_000_000_000);
    let (c, s) = (lab.client.total(), lab.server.as_ref().unwrap().total());
    assert_all_completed(&c, 500);
    assert_all_completed(&s, 500);
    assert_eq!(c.bytes_tx, s.bytes_rx);
    assert_eq!(s.bytes_tx, c.bytes_rx);
    // Each response: its head and 10 000 body bytes.
    let head = templates::server_head(10_000).len() as u64;
    assert_eq!(c.bytes_rx, 500 * (head + 10_000));
    assert_eq!(c.retransmitted + s.retransmitted, 0);
    assert_eq!(lab.client.x.times[0].connect.len(), 500);
    // Each connection took one RTT to connect, on this link 200 µs.
    assert_eq!(lab.client.x.times[0].connect.max(), 200);
    assert_eq!(lab.client.x.host.arp_requests, 1);
}

#[test]
fn one_segment_in_a_hundred_dropped_still_completes_every_connection() {
    // A fixed pseudo-random 1 % of frames, as nft's numgen rule drops.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut lab = Lab::new(
        &["bulk:size=200k", "http:size=30k"],
        Some(&["bulk:size=200k", "http:size=30k"]),
        300,
        5_000.0,
        TcpConfig::default(),
    );
    lab.drop = Box::new(move |_, f| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        matches!(frame::parse(f), Parsed::Tcp(_)) && state.is_multiple_of(100)
    });
    lab.run(600_000_000_000);
    let (c, s) = (lab.client.total(), lab.server.as_ref().unwrap().total());
    assert!(lab.dropped > 100, "dropped {}", lab.dropped);
    assert_all_completed(&c, 300);
    assert_all_completed(&s, 300);
    assert!(c.retransmitted + s.retransmitted > 0);
    assert!(c.fast_retransmits + s.fast_retransmits > 0, "{c:?} {s:?}");
    // Every byte arrived once, in order, whatever was lost on the way:
    // 150 uploads of 200 kB and 150 requests; 150 responses.
    let req = lab.client.x.progs[1].data.len() as u64 / 2;
    assert!((150 * (200_000 + req - 20)..=150 * (200_000 + req + 20)).contains(&s.bytes_rx));
    let head = templates::server_head(30_000).len() as u64;
    assert_eq!(c.bytes_rx, 150 * (head + 30_000));
}

#[test]
fn drawn_lengths_reach_the_server_in_the_request_header() {
    let spec = ["rr:req=uniform(20,3000),resp=exp(5000),turns=3"];
    let mut lab = Lab::new(&spec, Some(&spec), 200, 10_000.0, TcpConfig::default());
    lab.run(60_000_000_000);
    let (c, s) = (lab.client.total(), lab.server.as_ref().unwrap().total());
    assert_all_completed(&c, 200);
    assert_all_completed(&s, 200);
    assert_eq!(c.bytes_tx, s.bytes_rx);
    assert_eq!(s.bytes_tx, c.bytes_rx);
}

#[test]
fn dns_over_udp_retries_what_is_lost() {
    let mut lab = Lab::new(
        &["dns"],
        Some(&["dns"]),
        400,
        10_000.0,
        TcpConfig::default(),
    );
    let mut k = 0u64;
    lab.drop = Box::new(move |_, f| {
        k += 1;
        matches!(frame::parse(f), Parsed::Udp(_)) && k.is_multiple_of(10)
    });
    lab.run(120_000_000_000);
    let (c, s) = (lab.client.total(), lab.server.as_ref().unwrap().total());
    assert_eq!(c.completed, 400, "{c:?}");
    assert!(c.retransmitted > 0);
    assert!(s.completed >= 400 - c.retransmitted, "{s:?}");
}

#[test]
fn a_server_that_never_answers_times_out_every_connection() {
    let tcp = TcpConfig {
        syn_retries: 2,
        ..TcpConfig::default()
    };
    let mut lab = Lab::new(&["http"], None, 50, 1_000.0, tcp);
    // Nobody answers ARP either: the client learns the gateway from the
    // configuration here.
    lab.client.x.gw_mac = Some(SERVER_MAC);
    lab.run(600_000_000_000);
    let c = lab.client.total();
    assert_eq!(c.attempted, 50);
    assert_eq!(c.timed_out, 50, "{c:?}");
    assert_eq!(c.established, 0);
    // 1 s, then 2 s, then 4 s: gave up after the third wait.
    assert!(lab.now < 10_000_000_000, "took {} ns", lab.now);
}

#[test]
fn a_port_nobody_listens_on_resets_every_connection() {
    let mut lab = Lab::new(
        &["http:port=8080"],
        Some(&["http:port=80"]),
        20,
        1_000.0,
        TcpConfig::default(),
    );
    lab.run(60_000_000_000);
    let c = lab.client.total();
    assert_eq!(c.reset_by_peer, 20, "{c:?}");
    assert_eq!(lab.server.as_ref().unwrap().x.host.rx_stray, 20);
}

#[test]
fn garbage_frames_are_counted_and_nothing_else_happens() {
    let mut lab = Lab::new(&["http"], Some(&["http"]), 0, 1_000.0, TcpConfig::default());
    let server = lab.server.as_mut().unwrap();
    let mut seed = 7u64;
    for len in 0..600 {
        let f: Vec<u8> = (0..len)
            .map(|_| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                (seed >> 33) as u8
            })
            .collect();
        server.deliver(&f, 0);
    }
    // An IPv4 frame with a broken header checksum.
    let mut f = Vec::new();
    let e = frame::Ends {
        src_mac: CLIENT_MAC,
        dst_mac: SERVER_MAC,
        src: POOL.0,
        dst: SERVER,
        sport: 1,
        dport: 80,
    };
    let h = frame::TcpHead {
        seq: 1,
        ack: 0,
        flags: frame::SYN,
        wnd: 100,
        syn_opts: None,
    };
    frame::push_tcp(&mut f, &e, &h, 1, 0, |_| {});
    f[24] ^= 1;
    server.deliver(&f, 0);
    assert_eq!(server.active(), 0);
    assert!(server.x.host.rx_malformed >= 1);
    assert_eq!(server.x.host.rx_frames, 601);
}

#[test]
fn a_hundred_thousand_idle_connections_cost_under_a_kibibyte_each() {
    // Established connections whose client waits 10 s before it speaks.
    let mut p = templates::parse("bulk:size=10", &|_| Err(String::new())).unwrap();
    p.turns[0].pause_ns = 10_000_000_000;
    let progs = Arc::new(vec![p]);
    let mut lab = Lab::new(
        &["http"],
        Some(&["http"]),
        100_000,
        0.0,
        TcpConfig::default(),
    );
    lab.client = Host::new(
        client_cfg(100_000, 0.0, TcpConfig::default()),
        progs.clone(),
        0,
    );
    lab.server = Some(Host::new(server_cfg(TcpConfig::default()), progs, 0));
    lab.run(2_000_000_000);
    let server = lab.server.as_ref().unwrap();
    assert_eq!(lab.client.total().established, 100_000);
    assert_eq!(server.total().established, 100_000);
    assert_eq!((lab.client.active(), server.active()), (100_000, 100_000));
    for h in [&lab.client, server] {
        let per = h.state_bytes() / 100_000;
        assert!(per <= 1024, "{per} bytes per connection");
    }
    // And they finish when the pause is over.
    lab.run(60_000_000_000);
    assert_eq!(lab.client.total().completed, 100_000);
}
