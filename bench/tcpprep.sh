#!/usr/bin/env bash
# tcpprep caches in replay: (1) replaying with a tcpprep cache against
# `--split auto` to null (the cost of the lookup, A/B alternated, medians
# of RUNS); (2) tcpprep + tcpreplay against sluice prep + sluice replay on
# the same trace and two veth pairs (va->vb, va2->vb2 into the sink
# namespace), frames counted by the sinks. Ratios printed.
#
#   bench/tcpprep.sh            (RUNS=5, COUNT=1000000 by default)
#
# Needs root, tcpreplay (tcpprep), python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
sluice=${SLUICE:-$root/target/release/sluice}
runs=${RUNS:-5}
count=${COUNT:-1000000}
[ -x "$sluice" ] || (cd "$root" && cargo build --release -q)

# A two-way trace: even packets 10.99.0.1 -> .2, odd ones back, 64 flows,
# 64-byte UDP frames to MAC 02:00:00:00:00:99 (counted, then dropped).
t=$work/twoway.pcap
[ -f "$t" ] || python3 - "$t" "$count" <<'PY'
import struct, sys
out, n = sys.argv[1], int(sys.argv[2])
eth = bytes.fromhex('020000000099' '020000000001' '0800')
with open(out, 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
    for i in range(n):
        a, b = (1, 2) if i % 2 == 0 else (2, 1)
        udp = struct.pack('!HHHH', 1024 + i % 64, 9, 26, 0) + struct.pack('!Q', i) + bytes(10)
        ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 46, i & 0xffff, 0, 64, 17, 0,
                         bytes([10, 99, 0, a]), bytes([10, 99, 0, b]))
        frame = eth + ip + udp
        t = 1_700_000_000 * 10**9 + i * 1000
        f.write(struct.pack('<IIII', t // 10**9, t % 10**9, len(frame), len(frame)) + frame)
PY
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
pps() { python3 -c "import json; s=json.load(open('$work/s.json')); print(round(s['packets']/s['duration_s']))"; }

cache=$work/twoway.tcpprep
tcpprep --no-arg-comment -i "$t" -o "$cache" -c 10.99.0.1/32
"$sluice" prep "$t" --split cidr:10.99.0.1/32 --format tcpprep -o "$work/twoway.sluice" 2>/dev/null
cmp "$cache" "$work/twoway.sluice" && echo "caches: sluice prep and tcpprep identical"

echo "== (1) replay to null, top speed, streamed: pps (median of $runs) =="
auto=() tc=()
for _ in $(seq "$runs"); do
  "$sluice" replay "$t" --to null --to2 null --split auto --topspeed -q \
    --summary-json "$work/s.json" 2>/dev/null; auto+=("$(pps)")
  "$sluice" replay "$t" --to null --to2 null --split "tcpprep:$cache" --topspeed -q \
    --summary-json "$work/s.json" 2>/dev/null; tc+=("$(pps)")
done
a=$(printf '%s\n' "${auto[@]}" | median); c=$(printf '%s\n' "${tc[@]}" | median)
echo "split auto      $a pps  (${auto[*]})"
echo "split tcpprep:  $c pps  (${tc[*]})"
python3 -c "print(f'tcpprep cache / auto: x{$c / $a:.2f}')"

echo "== (2) prep: CPU seconds (median of 3) =="
tp=() sp=()
for _ in 1 2 3; do
  /usr/bin/time -o "$work/time" -f '%U %S' tcpprep --no-arg-comment -i "$t" -o "$work/c1" -c 10.99.0.1/32 >/dev/null 2>&1
  tp+=("$(awk '{print $1 + $2}' "$work/time")")
  /usr/bin/time -o "$work/time" -f '%U %S' "$sluice" prep "$t" --split cidr:10.99.0.1/32 --format tcpprep -o "$work/c2" >/dev/null 2>&1
  sp+=("$(awk '{print $1 + $2}' "$work/time")")
  rm -f "$work/c1" "$work/c2"
done
a=$(printf '%s\n' "${tp[@]}" | median); b=$(printf '%s\n' "${sp[@]}" | median)
echo "tcpprep -c       $a s  (${tp[*]})"
echo "sluice prep      $b s  (${sp[*]})"
python3 -c "print(f'sluice / tcpprep CPU: x{$b / max($a, 0.001):.2f}')"

echo "== (2) two-port replay on veth, top speed: frames/s counted by both sinks (median of 3) =="
ip netns add sink 2>/dev/null || true
for p in "va vb" "va2 vb2"; do
  set -- $p
  ip link add "$1" type veth peer name "$2"
  ip link set "$2" netns sink
  ip link set "$1" up
  ip netns exec sink ip link set "$2" up
  sysctl -qw "net.ipv6.conf.$1.disable_ipv6=1" || true
done
trap 'ip link del va 2>/dev/null; ip link del va2 2>/dev/null; ip netns del sink 2>/dev/null' EXIT
rx() { ip netns exec sink cat /sys/class/net/vb/statistics/rx_packets /sys/class/net/vb2/statistics/rx_packets | awk '{s+=$1} END {print s}'; }
tr=() sr=()
for _ in 1 2 3; do
  a=$(rx); s0=$(date +%s.%N)
  out=$(tcpreplay -i va -I va2 --cachefile "$cache" --topspeed --preload-pcap --loop 3 "$t" 2>&1)
  s1=$(date +%s.%N); b=$(rx)
  # tcpreplay's own send time: "Actual: N packets (...) sent in S seconds".
  secs=$(echo "$out" | sed -n 's/.*sent in \([0-9.]*\) seconds.*/\1/p' | head -1)
  tr+=("$(python3 -c "print(round(($b - $a) / ${secs:-($s1 - $s0)}))")")
  a=$(rx)
  "$sluice" replay "$t" --to afpacket:va --to2 afpacket:va2 --split "tcpprep:$cache" --topspeed --preload --loop 3 -q \
    --summary-json "$work/s.json" 2>/dev/null
  b=$(rx)
  sr+=("$(python3 -c "import json; s=json.load(open('$work/s.json')); print(round(($b - $a) / s['duration_s']))")")
done
a=$(printf '%s\n' "${tr[@]}" | median); b=$(printf '%s\n' "${sr[@]}" | median)
echo "tcpreplay -i -I --cachefile   $a frames/s  (${tr[*]})"
echo "sluice --to --to2 tcpprep:    $b frames/s  (${sr[*]})"
python3 -c "print(f'sluice / tcpreplay: x{$b / $a:.2f}')"
