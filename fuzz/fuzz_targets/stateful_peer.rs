//! Fuzzes what a peer can send a stateful host: the input is a list of
//! frames (a u16 length, a u8 time step in ms, the bytes), delivered to a
//! server host and a client host in turn, their timers run between them.
//! Nothing may panic; a host never holds more connections than it was
//! allowed; after `finish` it holds none.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice_stateful::host::{ClientConfig, Host, HostConfig, Rate, TcpConfig};
use sluice_stateful::templates;
use std::sync::Arc;

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
        client: client.then(|| ClientConfig {
            target: 0x0a00_0101,
            ports: (1000, 1100),
            rate: Rate { cps: 1000.0, poisson: false, ramp: None },
            concurrency: Some(16),
            limit: Some(64),
            open_until: None,
            shard: (0, 1),
        }),
        server: !client,
        tcp: TcpConfig::default(),
        max_conns: 32,
        seed: 7,
        shared_gw: None,
        clock_base: 0,
    };
    Host::new(cfg, progs, 0)
}

fuzz_target!(|data: &[u8]| {
    let mut hosts = [host(false), host(true)];
    let (mut at, mut t) = (0usize, 0u64);
    let mut k = 0;
    while let Some(h) = data.get(at..at + 3) {
        let len = usize::from(u16::from_be_bytes([h[0], h[1]]));
        t += u64::from(h[2]) * 1_000_000;
        let Some(f) = data.get(at + 3..at + 3 + len) else {
            break;
        };
        let host = &mut hosts[k % 2];
        host.deliver(f, t);
        host.poll(t);
        assert!(host.active() <= 32 + 64);
        host.x.out.consume(host.x.out.len());
        k += 1;
        at += 3 + len;
    }
    for h in &mut hosts {
        h.poll(t + 600_000_000_000);
        h.finish(t + 600_000_000_000);
        assert_eq!(h.active(), 0);
    }
});
