//! A peer that sends anything: well-formed segments with random flags,
//! sequence and acknowledgement numbers, ports and payloads to the hosts'
//! addresses, mixed with random bytes, against a server host and a client
//! host with connections open. Nothing may panic, a host never holds more
//! records than it may, and after `finish` it holds none. (The same
//! delivery runs under libFuzzer in fuzz/fuzz_targets/stateful_peer.rs.)

use sluice_stateful::frame::{self, Ends, TcpHead};
use sluice_stateful::host::{ClientConfig, Host, HostConfig, Rate, TcpConfig};
use sluice_stateful::templates;
use std::sync::Arc;

const MAX: usize = 64;

fn host(client: bool) -> Host {
    let read = |_: &str| Err(String::new());
    let progs = Arc::new(vec![
        templates::parse("http:size=3000", &read).unwrap(),
        templates::parse("rr:req=uniform(8,900),resp=uniform(8,900),turns=2", &read).unwrap(),
        templates::parse("dns", &read).unwrap(),
    ]);
    let cfg = HostConfig {
        mac: [2, 0, 0, 0, 0, 1],
        gateway: 0x0a00_00fe,
        gateway_mac: Some([2, 0, 0, 0, 0, 2]),
        addrs: (0x0a00_0001, 0x0a00_0004),
        client: client.then_some(ClientConfig {
            target: 0x0a00_0101,
            ports: (1000, 1015),
            rate: Rate {
                cps: 2000.0,
                poisson: false,
                ramp: None,
            },
            concurrency: Some(32),
            limit: Some(500),
            open_until: None,
            shard: (0, 1),
        }),
        server: !client,
        tcp: TcpConfig::default(),
        max_conns: MAX,
        seed: 7,
        shared_gw: None,
        clock_base: 0,
    };
    Host::new(cfg, progs, 0)
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A segment or datagram from a peer to one of the hosts' addresses, or
/// random bytes.
fn peer_frame(r: &mut Rng) -> Vec<u8> {
    let mut f = Vec::new();
    let e = Ends {
        src_mac: [2, 0, 0, 0, 0, 2],
        dst_mac: [2, 0, 0, 0, 0, 1],
        src: if r.below(2) == 0 {
            0x0a00_0101
        } else {
            0x0a00_0001 + r.below(8) as u32
        },
        dst: 0x0a00_0001 + r.below(5) as u32,
        sport: [80, 9000, 53, 1000 + r.below(16) as u16][r.below(4) as usize],
        dport: [80, 9000, 53, 1000 + r.below(16) as u16][r.below(4) as usize],
    };
    let len = [0usize, 1, 7, 100, 1460][r.below(5) as usize];
    let byte = r.next() as u8;
    match r.below(8) {
        0 => {
            f = (0..r.below(120)).map(|_| r.next() as u8).collect();
        }
        1 => {
            frame::push_udp(&mut f, &e, 1, len, |p| p.fill(byte));
        }
        _ => {
            let h = TcpHead {
                seq: if r.below(4) == 0 {
                    r.next() as u32
                } else {
                    r.below(5000) as u32
                },
                ack: if r.below(4) == 0 {
                    r.next() as u32
                } else {
                    r.below(5000) as u32
                },
                flags: r.next() as u8 & 0x1f,
                wnd: r.next() as u16,
                syn_opts: (r.below(3) == 0).then(|| (r.next() as u16, r.below(20) as u8)),
            };
            frame::push_tcp(&mut f, &e, &h, 1, len, |p| p.fill(byte));
        }
    }
    f
}

#[test]
fn anything_a_peer_sends_is_answered_or_counted_never_a_panic() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut hosts = [host(false), host(true)];
    let mut t = 0u64;
    for i in 0..60_000u64 {
        t += r.below(3_000_000);
        let f = peer_frame(&mut r);
        let h = &mut hosts[(i % 2) as usize];
        h.deliver(&f, t);
        h.poll(t);
        assert!(h.active() <= MAX as u64, "{} records", h.active());
        let n = h.x.out.len();
        h.x.out.consume(n);
    }
    let (server, client) = (&hosts[0], &hosts[1]);
    assert!(server.total().attempted > 0, "the server accepted SYNs");
    assert!(client.opened() > 0);
    let end = t + 600_000_000_000;
    for h in &mut hosts {
        h.poll(end);
        h.finish(end);
        assert_eq!(h.active(), 0);
        // Every connection ended one way or another.
        let c = h.total();
        assert_eq!(c.ended(), c.attempted, "{c:?}");
    }
}
