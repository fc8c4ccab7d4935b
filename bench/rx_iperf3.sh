#!/usr/bin/env bash
# Loss and jitter side by side with iperf3 on one routed path: a sender
# namespace, a router namespace (IPv4 forwarding; an nftables rule in its
# forward hook drops every 100th UDP datagram to port 5201, counting
# them) and a receiver namespace. iperf3 (-u -b, 1000-byte datagrams) and
# then `sluice replay --rx-stamp` + `sluice rx` (the same datagrams as
# frames, at the same rate) cross it in turn; each tool's loss is set
# beside the rule's drop count for its run, and the two RFC 3550 jitters
# beside each other and beside a third party's (tcpdump's receive times
# against sluice's stamps). iperf3 stamps in µs, in user space; sluice rx
# takes the kernel's ns receive times.
#
#   bench/rx_iperf3.sh [SLUICE] [OFFERED] [SECONDS]
#   (default: target/release/sluice 5.5M 5)
set -euo pipefail
S=${1:-target/release/sluice} OFFER=${2:-5.5M} SECS=${3:-5}
t=ri$$ out=$(mktemp -d)
cleanup() {
  [ -n "${dump:-}" ] && kill "$dump" 2>/dev/null || true
  [ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true
  for n in s f r; do ip netns del $t$n 2>/dev/null || true; done
  rm -rf "$out"
}
trap cleanup EXIT
for n in s f r; do ip netns add $t$n; done
ip link add ${t}a netns ${t}s type veth peer name ${t}b netns ${t}f
ip link add ${t}d netns ${t}r type veth peer name ${t}c netns ${t}f
for x in "s a 10.88.0.1/24" "f b 10.88.0.254/24" "f c 10.88.1.254/24" "r d 10.88.1.2/24"; do
  set -- $x
  ip netns exec $t$1 sysctl -qw net.ipv6.conf.$t$2.disable_ipv6=1
  ip netns exec $t$1 ip addr add $3 dev $t$2
  ip netns exec $t$1 ip link set $t$2 up
  ip netns exec $t$1 ip link set lo up
done
ip netns exec ${t}s ip route add default via 10.88.0.254
ip netns exec ${t}r ip route add default via 10.88.1.254
ip netns exec ${t}f sysctl -qw net.ipv4.ip_forward=1
ip netns exec ${t}f nft add table ip t
ip netns exec ${t}f nft add chain ip t relay '{ type filter hook forward priority 0; }'
ip netns exec ${t}f nft add rule ip t relay udp dport 5201 numgen inc mod 100 99 counter drop
drops() { ip netns exec ${t}f nft list chain ip t relay | sed -n 's/.*counter packets \([0-9]*\) .*/\1/p'; }
# iperf3: one test, its server ending with it.
ip netns exec ${t}r iperf3 -s -1 -B 10.88.1.2 > /dev/null 2>&1 & srv=$!
sleep 0.5
d0=$(drops)
ip netns exec ${t}r tcpdump -i ${t}d -n -U --time-stamp-precision=nano -B 65536 -w "$out/cap_i.pcap" udp 2>/dev/null & dump=$!
sleep 0.5
ip netns exec ${t}s iperf3 -c 10.88.1.2 -u -b "$OFFER" -l 1000 -t "$SECS" --json > "$out/iperf3.json"
wait "$srv" || true; srv=
kill -INT $dump; wait $dump || true; dump=
d1=$(drops)
# sluice: the same datagrams at the same rate, stamped.
dmac=$(ip netns exec ${t}f cat /sys/class/net/${t}b/address)
smac=$(ip netns exec ${t}s cat /sys/class/net/${t}a/address)
pps=$(python3 -c "
import re,sys
m=re.fullmatch(r'([\d.]+)([kMG]?)','$OFFER'); v=float(m.group(1))*{'':1,'k':1e3,'M':1e6,'G':1e9}[m.group(2)]
print(v/8/1000)")
python3 - "$out/t.pcap" "$dmac" "$smac" <<'PY'
import struct, sys
mac = lambda s: bytes(int(x, 16) for x in s.split(':'))
out = open(sys.argv[1], 'wb')
out.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
ip = bytearray([0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 88, 0, 1, 10, 88, 1, 2])
ip[2:4] = struct.pack('>H', 20 + 8 + 1000)
s = sum(ip[k] << 8 | ip[k + 1] for k in range(0, 20, 2))
while s >> 16: s = (s & 0xffff) + (s >> 16)
ip[10:12] = struct.pack('>H', ~s & 0xffff)
fr = mac(sys.argv[2]) + mac(sys.argv[3]) + b'\x08\x00' + bytes(ip) + struct.pack('>HHHH', 40000, 5201, 1008, 0) + bytes(1000)
out.write(struct.pack('<IIII', 1, 0, len(fr), len(fr)) + fr)
PY
ip netns exec ${t}r "$S" rx ${t}d --idle 1s --duration $((SECS + 30))s -q --summary-json "$out/rx.json" 2>/dev/null & rx=$!
# A capture beside it: the same frames, judged by a third party below.
ip netns exec ${t}r tcpdump -i ${t}d -n -U --time-stamp-precision=nano -B 65536 -w "$out/cap.pcap" udp 2>/dev/null & dump=$!
sleep 0.5
frames=$(python3 -c "print(int(round($pps * $SECS)))")
ip netns exec ${t}s "$S" replay "$out/t.pcap" --loop "$frames" --pps "$pps" --preload \
  --to afpacket:${t}a --rx-stamp replace -q --summary-json "$out/tx.json" 2>/dev/null
wait $rx
kill -INT $dump; wait $dump || true
d2=$(drops)
python3 - "$out" $((d1 - d0)) $((d2 - d1)) <<'PY'
import json, struct, sys
out, di, ds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
i = json.load(open(out + '/iperf3.json'))['end']['sum']
r = json.load(open(out + '/rx.json'))
tx = json.load(open(out + '/tx.json'))
lost = sum(s['lost'] for s in r['streams']) + (tx['packets'] - sum(s['last_seq'] + 1 for s in r['streams']))
jit = r['streams'][0]['jitter_ns'] / 1e3
print(f"iperf3: {i['packets']} datagrams, lost {i['lost_packets']} ({i['lost_percent']:.2f} %), nft dropped {di}, jitter {i['jitter_ms'] * 1e3:.1f} µs")
print(f"sluice: {tx['packets']} frames, lost {lost} ({100 * lost / tx['packets']:.2f} %), nft dropped {ds}, jitter {jit:.1f} µs")
def jitter(path, departure):
    """RFC 3550 jitter, ns: tcpdump's receive time of each frame against
    the departure `departure(frame)` gives (None: not one of ours)."""
    b = open(path, 'rb').read()
    at, j, prev = 24, 0.0, None
    while at + 16 <= len(b):
        sec, frac, cl, _ = struct.unpack('<IIII', b[at:at + 16])
        f = b[at + 16:at + 16 + cl]
        at += 16 + cl
        tx = departure(f)
        if tx is None:
            continue
        rx = sec * 10**9 + frac
        if prev:
            d = (rx - prev[0]) - (tx - prev[1])
            j += (abs(d) - j) / 16
        prev = (rx, tx)
    return j

# sluice's frames: the departure in the stamp (its last 24 bytes).
j = jitter(out + '/cap.pcap',
           lambda f: struct.unpack('>Q', f[-8:])[0] if len(f) >= 24 and f[-24:-20] == b'SLR1' else None)
print(f"capture (tcpdump, ns): jitter of the same frames {j / 1e3:.1f} µs; sluice rx / capture {jit / (j / 1e3):.3f}")
# iperf3's datagrams: the departure iperf3 wrote (payload's s and µs).
def iperf_departure(f):
    if len(f) < 54 or f[36:38] != struct.pack('>H', 5201):
        return None
    s_, us = struct.unpack('>II', f[42:50])
    return s_ * 10**9 + us * 1000
ji = jitter(out + '/cap_i.pcap', iperf_departure)
print(f"capture (tcpdump, ns): jitter of iperf3's datagrams {ji / 1e3:.1f} µs; iperf3's own / capture {i['jitter_ms'] * 1e3 / (ji / 1e3):.3f}")
print(f"loss = nft drops: iperf3 {i['lost_packets'] == di}, sluice {lost == ds}; jitter ratio sluice/iperf3 {jit / (i['jitter_ms'] * 1e3):.2f}")
PY
