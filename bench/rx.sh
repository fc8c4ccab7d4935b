#!/usr/bin/env bash
# The receiver's cost and completeness: `sluice replay --rx-stamp` sends
# 16 flows of 60-byte frames into a veth pair; in the far namespace
# `sluice rx` counts them, once per receive path (AF_XDP, the TPACKET
# ring), while tcpdump (the peer, writing to /dev/null) takes the same
# frames in another run. Reported per rate: frames sent, the interface's
# rx counter, frames counted, kernel drops, and the receiver's CPU
# seconds per million frames (user + system on the scheduler's clock,
# /proc/PID/task/*/schedstat, over the send alone: what it took before,
# setting up, is given apart).
#
#   bench/rx.sh [SLUICE] [RATES...]    (default: target/release/sluice 100k 200k top)
#   TO=xdp bench/rx.sh ...             the sender on xdp: (default afpacket)
#   PATHS="xdp ring" (default)         the receive paths measured
#   LOOPS=62500 (default: 1 M frames)  passes over the 16 frames
set -euo pipefail
S=${1:-target/release/sluice}; shift || true
RATES=${*:-100k 200k top}
TO=${TO:-afpacket}
PATHS=${PATHS:-xdp ring}
LOOPS=${LOOPS:-62500}                # passes over 16 frames: 1 M frames
ns=rxb$$ out=$(mktemp -d)
trap 'ip netns del $ns 2>/dev/null; ip link del ${ns}a 2>/dev/null; rm -rf "$out"' EXIT
ip netns add $ns
ip link add ${ns}a type veth peer name ${ns}b
ip link set ${ns}b netns $ns
sysctl -qw net.ipv6.conf.${ns}a.disable_ipv6=1
ip netns exec $ns sysctl -qw net.ipv6.conf.${ns}b.disable_ipv6=1
ip link set ${ns}a up; ip netns exec $ns ip link set ${ns}b up
python3 - "$out/t.pcap" <<'PY'
import struct, sys
out = open(sys.argv[1], 'wb')
out.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
for i in range(16):
    ip = bytearray([0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 1, i])
    s = sum(ip[k] << 8 | ip[k + 1] for k in range(0, 20, 2))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    ip[10:12] = struct.pack('>H', ~s & 0xffff)
    fr = bytes([2, 0, 0, 0, 0, 0x99, 2, 0, 0, 0, 0, 1, 8, 0]) + bytes(ip) + struct.pack('>HHHH', 4000 + i, 9, 26, 0) + bytes(18)
    out.write(struct.pack('<IIII', 1, i * 1000, len(fr), len(fr)) + fr)
PY
rxc() { ip netns exec $ns cat /sys/class/net/${ns}b/statistics/rx_packets; }
# CPU time on the scheduler's clock (ns), summed over the receiver's
# threads: /proc/PID/stat's ticks are 10 ms, too coarse for 1 M frames.
cpu() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%.4f\n", s / 1e9}'; }
for rate in $RATES; do
  if [ "$rate" = top ]; then timing=--topspeed; else timing="--pps $rate"; fi
  for who in $(printf 'sluice-%s ' $PATHS) tcpdump; do
    before=$(rxc)
    # `ip netns exec` becomes the receiver: $! is its PID.
    if [ $who != tcpdump ]; then
      ip netns exec $ns "$S" rx ${ns}b --rx-path "${who#sluice-}" --idle 2s --duration 60s -q --summary-json "$out/rx.json" 2>/dev/null &
    else
      ip netns exec $ns tcpdump -i ${ns}b -n -B 65536 -w /dev/null 2>"$out/td.err" &
    fi
    pid=$!
    sleep 1
    c0=$(cpu $pid)
    "$S" replay "$out/t.pcap" --loop "$LOOPS" $timing --preload --to $TO:${ns}a --rx-stamp replace -q --summary-json "$out/tx.json" 2>/dev/null
    sleep 0.5
    echo "$c0 $(cpu $pid)" > "$out/cpu"
    if [ $who = tcpdump ]; then kill -INT $pid; fi
    wait
    after=$(rxc)
    python3 - "$who" "$rate" "$out" $((after - before)) <<'PY'
import json, sys, re
who, rate, out, iface = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
tx = json.load(open(out + '/tx.json'))
setup, end = map(float, open(out + '/cpu').read().split())
send = end - setup
if who != 'tcpdump':
    r = json.load(open(out + '/rx.json'))
    got, drops = r['frames'], r['kernel_drops']
    who = f"{who} ({r['path']})"
else:
    err = open(out + '/td.err').read()
    got = int(re.search(r'(\d+) packets captured', err).group(1))
    drops = int(re.search(r'(\d+) packets dropped by kernel', err).group(1))
print(f"{who:24} rate {rate:>5}: sent {tx['packets']} at {round(tx['pps'] or 0)} pps, "
      f"iface rx {iface}, counted {got}, kernel drops {drops}, "
      f"cpu while sending {send:.3f} s = {send / (tx['packets'] / 1e6):.4f} s per M frames "
      f"(setting up before: {setup:.2f} s)")
PY
  done
done
