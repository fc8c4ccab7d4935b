#!/usr/bin/env bash
# RFC 2544 throughput against a bottleneck of known rate: a veth pair
# into a forwarding namespace that redirects every frame (tc mirred) out
# of a second veth pair whose egress is a tbf at RATE, back to this
# namespace. `sluice rfc2544` searches for the throughput of 64- and
# 1518-byte frames; tbf counts frames without their FCS, so it passes
# RATE / (8 × (size − 4)) frames/s. Prints found, expected and their
# ratio per size (the test asserts only a loose bound: see tests/rx.rs).
#
#   bench/rfc2544.sh [SLUICE] [RATE] [TRIAL] [QUEUE]
#   (default: target/release/sluice 5mbit 2s 5ms)
set -euo pipefail
S=${1:-target/release/sluice} RATE=${2:-5mbit} TRIAL=${3:-2s} QUEUE=${4:-5ms}
t=rfb$$ out=$(mktemp -d)
trap 'ip link del ${t}a 2>/dev/null; ip link del ${t}d 2>/dev/null; ip netns del ${t}f 2>/dev/null; rm -rf "$out"' EXIT
ip netns add ${t}f
for pair in "a b" "d c"; do
  set -- $pair
  ip link add $t$1 type veth peer name $t$2
  ip link set $t$2 netns ${t}f
  ip netns exec ${t}f sysctl -qw net.ipv6.conf.$t$2.disable_ipv6=1
  ip netns exec ${t}f ip link set $t$2 up
  sysctl -qw net.ipv6.conf.$t$1.disable_ipv6=1
  ip link set $t$1 up
done
ip netns exec ${t}f tc qdisc add dev ${t}b ingress
ip netns exec ${t}f tc filter add dev ${t}b parent ffff: protocol all u32 match u32 0 0 \
  action mirred egress redirect dev ${t}c
ip netns exec ${t}f tc qdisc add dev ${t}c root tbf rate $RATE burst 1600 latency $QUEUE
"$S" rfc2544 --to afpacket:${t}a --rx ${t}d --sizes 64,1518 --trial "$TRIAL" --wait 300ms \
  --resolution 0.5 --tests throughput --json "$out/r.json" 2> "$out/log" || { cat "$out/log"; exit 1; }
python3 - "$out/r.json" "$RATE" "$TRIAL" "$QUEUE" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
m = re.fullmatch(r'(\d+(?:\.\d+)?)([kmg]?)bit', sys.argv[2])
bps = float(m.group(1)) * {'': 1, 'k': 1e3, 'm': 1e6, 'g': 1e9}[m.group(2)]
for s in r['sizes']:
    want = bps / (8 * (s['size'] - 4))
    got = s['throughput']['pps'] or 0
    n = len(s['throughput']['trials'])
    print(f"{s['size']:>5} B: found {got:.0f} frames/s, tbf passes {want:.0f}: ratio {got / want:.4f} "
          f"({n} trials of {sys.argv[3]}, tbf queue {sys.argv[4]}, max {s['max_pps']:.0f} frames/s)")
PY
