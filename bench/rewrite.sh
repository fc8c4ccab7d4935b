#!/usr/bin/env bash
# Cost of header rewriting and of two-port replay, side by side with the
# peers, on the veth network of bench/netns.sh (plus a second pair va2/vb2
# into the sink namespace for two-port runs).
#
#   bench/rewrite.sh          (RUNS=5 COUNT=1000000 by default)
#
# 1. Top speed of `replay` streamed from the file (no --preload: a preloaded
#    pass would be rewritten once, not per packet) with and without
#    --enet-dmac --srcipmap --dstipmap --portmap, alternated, RUNS each,
#    to va and to null. Frames counted by the sink's vb over sluice's send
#    phase. Peer: tcprewrite (one pass over the file, timed) then
#    tcpreplay --topspeed of its output; the peer's rate counts both.
# 2. Two-port: the trace with every other frame reversed, --split auto,
#    --to va --to2 va2, against one port (--to va).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
sluice=${SLUICE:-$root/target/release/sluice}
runs=${RUNS:-5} count=${COUNT:-1000000}
[ -x "$sluice" ] || (cd "$root" && cargo build --release -q)
# netns.sh (vendored from shared/bench) puts 10.99.0.1/24 on va in this
# namespace: refuse a host that routes that /24 or already has the names.
# shellcheck source=bench/subnet.sh
. "$here/subnet.sh"
SUBNET=10.99.0 free_subnet netns_net || exit 1
names_free va vb sink va2 vb2 || exit 1
"$here/netns.sh" up
ip link add va2 type veth peer name vb2 2>/dev/null || true
ip link set vb2 netns sink 2>/dev/null || true
ip link set va2 address 02:00:00:00:00:03 up
ip netns exec sink ip link set vb2 up
trap 'ip link del va2 2>/dev/null || true; "$here/netns.sh" down' EXIT
for i in va va2; do sysctl -qw net.ipv6.conf.$i.disable_ipv6=1 || true; done
for i in vb vb2; do ip netns exec sink sysctl -qw net.ipv6.conf.$i.disable_ipv6=1 || true; done

rx() { ip netns exec sink cat /sys/class/net/"$1"/statistics/rx_packets; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
trace=$work/rw_$count.pcap
[ -f "$trace" ] || python3 "$here/mktrace.py" "$trace" "$count" 64 1000 cbr 1000
rw=(--enet-dmac 02:00:00:00:00:99 --srcipmap 10.99.0.0/16:172.20.0.0/16
    --dstipmap 10.99.0.2/32:10.99.0.3/32 --portmap 1024-2047:4000)

sl() { # to extra... -> frames/s over the send phase (sink-counted for va)
  local to=$1; shift
  local a b
  a=$(rx vb)
  "$sluice" replay "$trace" --topspeed -q --to "$to" --summary-json "$work/rw.json" "$@" 2>/dev/null
  b=$(rx vb)
  python3 -c "import json,sys; s=json.load(open(sys.argv[1])); n=int(sys.argv[2]); print(round((n if n else s['packets'])/s['duration_s']))" \
    "$work/rw.json" "$([ "$to" = null ] && echo 0 || echo $((b - a)))"
}
declare -A got
for _ in $(seq "$runs"); do
  got[plain_va]+="$(sl afpacket:va) "
  got[rw_va]+="$(sl afpacket:va "${rw[@]}") "
  got[plain_null]+="$(sl null) "
  got[rw_null]+="$(sl null "${rw[@]}") "
done
med() { tr ' ' '\n' <<< "${got[$1]}" | grep . | median; }
echo "rewrite cost, $count frames of 64 B, 1000 flows, medians of $runs alternated runs (frames/s):"
for k in plain_va rw_va plain_null rw_null; do echo "  $k: ${got[$k]}-> $(med $k)"; done
python3 -c "import sys; a,b,c,d=map(float,sys.argv[1:]); print(f'  rewriting costs {100*(1-b/a):.1f} % to va, {100*(1-d/c):.1f} % to null')" \
  "$(med plain_va)" "$(med rw_va)" "$(med plain_null)" "$(med rw_null)"

if command -v tcprewrite >/dev/null && command -v tcpreplay >/dev/null; then
  peer=()
  for _ in $(seq 3); do
    t0=$(date +%s.%N)
    tcprewrite -i "$trace" -o "$work/rw_peer.pcap" --enet-dmac=02:00:00:00:00:99 \
      --srcipmap=10.99.0.0/16:172.20.0.0/16 --dstipmap=10.99.0.2/32:10.99.0.3/32 \
      --portmap=1024-2047:4000 2>/dev/null
    t1=$(date +%s.%N)
    a=$(rx vb)
    tcpreplay -i va --topspeed "$work/rw_peer.pcap" >/dev/null 2>&1
    t2=$(date +%s.%N)
    b=$(rx vb)
    peer+=("$(python3 -c "import sys; t0,t1,t2=map(float,sys.argv[1:4]); n=int(sys.argv[4]); print(round(n/(t2-t0)), round(n/(t2-t1)), round(t1-t0,2))" "$t0" "$t1" "$t2" $((b - a)))")
  done
  echo "  peer tcprewrite + tcpreplay (both passes; tcpreplay alone; tcprewrite s):"
  printf '    %s\n' "${peer[@]}"
  pm=$(printf '%s\n' "${peer[@]}" | awk '{print $1}' | median)
  python3 -c "import sys; print(f'  sluice rewriting to va / peer both passes: {float(sys.argv[1])/float(sys.argv[2]):.2f}x')" "$(med rw_va)" "$pm"
fi

# Two-port: every other frame reversed, so --split auto halves the stream.
two=$work/rw2_$count.pcap
[ -f "$two" ] || python3 - "$trace" "$two" <<'PY'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
at, i = 24, 0
while at + 16 <= len(d):
    n = int.from_bytes(d[at + 8:at + 12], 'little')
    f = at + 16
    if i % 2:
        d[f + 26:f + 30], d[f + 30:f + 34] = d[f + 30:f + 34], d[f + 26:f + 30]
        d[f + 34:f + 36], d[f + 36:f + 38] = d[f + 36:f + 38], d[f + 34:f + 36]
    at, i = f + n, i + 1
open(sys.argv[2], 'wb').write(d)
PY
one=() both=()
for _ in $(seq "$runs"); do
  a=$(( $(rx vb) + $(rx vb2) ))
  "$sluice" replay "$two" --topspeed -q --to afpacket:va --summary-json "$work/rw.json" 2>/dev/null
  b=$(( $(rx vb) + $(rx vb2) ))
  one+=("$(python3 -c "import json,sys; print(round(int(sys.argv[2])/json.load(open(sys.argv[1]))['duration_s']))" "$work/rw.json" $((b - a)))")
  a=$(( $(rx vb) + $(rx vb2) ))
  "$sluice" replay "$two" --topspeed -q --to afpacket:va --to2 afpacket:va2 --split auto --summary-json "$work/rw.json" 2>/dev/null
  b=$(( $(rx vb) + $(rx vb2) ))
  both+=("$(python3 -c "import json,sys; print(round(int(sys.argv[2])/json.load(open(sys.argv[1]))['duration_s']))" "$work/rw.json" $((b - a)))")
done
o=$(printf '%s\n' "${one[@]}" | median) t=$(printf '%s\n' "${both[@]}" | median)
echo "two-port, $count frames, medians of $runs alternated runs (frames/s, both sinks counted):"
echo "  one port: ${one[*]} -> $o"
echo "  two ports (--split auto): ${both[*]} -> $t"
python3 -c "import sys; print(f'  two ports / one port: {float(sys.argv[1])/float(sys.argv[2]):.2f}x')" "$t" "$o"
