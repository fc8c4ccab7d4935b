//! Connections split between threads by their client port: the kernel's
//! packet fanout runs a classic BPF program on each arriving frame that
//! hashes the client's port (the destination port on the client side,
//! the source port on the server side) into a thread, and a client thread
//! opens connections only from the ports that hash to it. Every frame of
//! a connection reaches the one thread that owns its record, in order, and
//! no lock is taken. ARP and anything not TCP or UDP over IPv4 go to
//! thread 0 (which answers ARP and shares the next hop's address).

/// The thread (of `n`) that owns connections of client port `port`; the
/// BPF program below computes the same.
pub fn shard_of(port: u16, n: u32) -> u32 {
    if n <= 1 {
        return 0;
    }
    (u32::from(port).wrapping_mul(0x9e37_79b1) >> 16) % n
}

fn op(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The fanout program for `n` threads; `client` for the client side
/// (hash the destination port), else the server side (the source port).
/// Loads are relative to the network header (`SKF_NET_OFF`), wherever the
/// kernel has the frame's data start.
pub fn program(client: bool, n: u32) -> Vec<libc::sock_filter> {
    let net = libc::SKF_NET_OFF as u32;
    let proto = (libc::SKF_AD_OFF + libc::SKF_AD_PROTOCOL) as u32;
    let port = if client { 2 } else { 0 };
    let (ld, ldx, jeq, ret, alu) = (
        libc::BPF_LD,
        libc::BPF_LDX,
        libc::BPF_JMP | libc::BPF_JEQ,
        libc::BPF_RET,
        libc::BPF_ALU,
    );
    let (w, h, b) = (libc::BPF_W, libc::BPF_H, libc::BPF_B);
    vec![
        // 0: A = ethertype (host order); not IPv4: thread 0.
        op(ld | w | libc::BPF_ABS, 0, 0, proto),
        op(jeq | libc::BPF_K, 0, 9, 0x0800),
        // 2: A = IP protocol; TCP or UDP go on.
        op(ld | b | libc::BPF_ABS, 0, 0, net + 9),
        op(jeq | libc::BPF_K, 1, 0, 6),
        op(jeq | libc::BPF_K, 0, 6, 17),
        // 5: X = IP header length; A = the port.
        op(ldx | b | libc::BPF_MSH, 0, 0, net),
        op(ld | h | libc::BPF_IND, 0, 0, net + port),
        // 7: A = (port × golden ratio) >> 16 mod n.
        op(alu | libc::BPF_MUL | libc::BPF_K, 0, 0, 0x9e37_79b1),
        op(alu | libc::BPF_RSH | libc::BPF_K, 0, 0, 16),
        op(alu | libc::BPF_MOD | libc::BPF_K, 0, 0, n.max(1)),
        // 10
        op(ret | libc::BPF_A, 0, 0, 0),
        // 11: thread 0.
        op(ret | libc::BPF_K, 0, 0, 0),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_spread_evenly_and_jumps_land_on_the_returns() {
        for n in [2u32, 3, 4, 8] {
            let mut seen = vec![0u32; n as usize];
            for p in 10_000..60_000u16 {
                seen[shard_of(p, n) as usize] += 1;
            }
            let (lo, hi) = (*seen.iter().min().unwrap(), *seen.iter().max().unwrap());
            assert!(hi - lo < 50_000 / n / 20, "{n}: {seen:?}");
        }
        let p = program(true, 4);
        // The "not IPv4" and "neither TCP nor UDP" jumps reach the last
        // instruction (return 0); TCP reaches the port's load.
        assert_eq!(1 + 1 + usize::from(p[1].jf), p.len() - 1);
        assert_eq!(4 + 1 + usize::from(p[4].jf), p.len() - 1);
        assert_eq!(3 + 1 + usize::from(p[3].jt), 5);
    }
}
