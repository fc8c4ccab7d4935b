#!/usr/bin/env bash
# Throughput of the two ways in from other programs:
#   inject  descriptions/s acknowledged to one Python client
#           (python/inject_schedule.py, descriptions pre-encoded and
#           reused, all due at once) to `null` and to veth va;
#   pace    frames/s through a TAP: `sluice replay --topspeed` writes
#           64-byte frames into TAP slcap1 over AF_PACKET, `sluice pace
#           --gap 1ns` moves them to veth va. The writer alone into the
#           TAP (nobody reading it) is the ceiling: the kernel's TAP
#           transmit path, then drops.
# veth rates are counted by the sink veth (frames to 02:00:00:00:00:99
# are dropped before its IP stack, see bench/netns.sh).
#   timing  acknowledged departure against the capture in the sink
#           namespace (tcpdump, nanosecond stamps, both CLOCK_REALTIME):
#           |error| p50/p99/max after removing the median (the path),
#           TCOUNT descriptions at TPPS (the test suite keeps only bounds
#           a loaded machine cannot break; the precision is measured here).
#
#   caliper Caliper's Figs. 4 and 6 through inject: UDP frames of 1518 B
#           (1514 without FCS) at T_R = 100..1000 Mbit/s (Fig. 4), and
#           spike-bump gaps with the 1518/612/64 B size mix (Fig. 6),
#           each a schedule a Python client streams (inject_schedule.py
#           --schedule; bench/caliper_schedule.py writes it and the
#           reference trace); the capture in the sink namespace judged by
#           gaperr.py (|D_M - D_R| p50/p90/p99: Caliper's p95 lies
#           between), and the same reference replayed by tcpreplay (the
#           commodity path: timing from the trace) beside it.
#
#   bench/inject.sh [all|throughput|timing|caliper]
#                   COUNT=2000000 (descriptions), SECS=3 (pace run),
#                   TCOUNT=100000 TPPS=50000 (timing run),
#                   CCOUNT=20000 CRATES="100 200 400 600 800 1000" (caliper)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sluice=${SLUICE:-$root/target/release/sluice}
count=${COUNT:-2000000}
secs=${SECS:-3}
work=$(mktemp -d)
[ -n "${SLUICE:-}" ] || (cd "$root" && cargo build --release -q)
# netns.sh (vendored from shared/bench) puts 10.99.0.1/24 on va in this
# namespace: refuse a host that routes that /24 or already has the names.
# shellcheck source=bench/subnet.sh
. "$here/subnet.sh"
SUBNET=10.99.0 free_subnet netns_net || exit 1
names_free va vb sink slcap1 || exit 1
cleanup() { ip link del slcap1 2>/dev/null || true; sh "$here/netns.sh" down; rm -rf "$work"; }
trap cleanup EXIT
sh "$here/netns.sh" up
rx() { ip netns exec sink cat /sys/class/net/vb/statistics/rx_packets; }
what=${1:-all}

# cap_run NAME CMD...: CMD's frames captured in the sink namespace.
cap_run() {
  local name=$1; shift
  ip netns exec sink tcpdump -i vb -w "$work/cap_$name.pcap" -B 262144 -s 96 \
    --time-stamp-precision nano -q 'udp' 2> "$work/tcpdump.err" &
  local tpid=$!
  for _ in $(seq 300); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.1; done
  "$@" > "$work/$name.out" 2>&1 || echo "$name: $(tail -2 "$work/$name.out")" >&2
  sleep 1.5 # tcpdump's last ring block
  kill -INT "$tpid"; wait "$tpid" 2>/dev/null || true
}
# inject_sched SCHEDULE: the schedule streamed to `sluice inject` on va.
inject_sched() {
  local sock=$work/c.sock
  rm -f "$sock"
  "$sluice" inject --listen "unix:$sock" --to afpacket:va --sessions 1 -q 2> "$work/inject.err" &
  local ipid=$!
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
  python3 "$root/python/inject_schedule.py" --connect "unix:$sock" --schedule "$1" \
    --start-ms 300 --src 10.99.0.1 --dst 10.99.0.2
  wait "$ipid"
}
if [ "$what" = caliper ]; then
  ccount=${CCOUNT:-20000}
  judge() { python3 "$here/gaperr.py" "$1" "$2" --oneline | tr ' ' '\n' | grep -E '^(received|p50_ns|p90_ns|p99_ns)=' | tr '\n' ' '; }
  echo "== Caliper Fig. 4 through inject: UDP 1518 B, $ccount frames per rate, |D_M - D_R| (gaperr.py) =="
  for r in ${CRATES:-100 200 400 600 800 1000}; do
    gap=$(python3 -c "print(round(1518 * 8 / ($r * 1e6) * 1e9))")
    python3 "$here/caliper_schedule.py" "$work/s.txt" "$work/ref.pcap" "$ccount" cbr "$gap" 1514
    cap_run inject inject_sched "$work/s.txt"
    cap_run tcpreplay tcpreplay -q -i va "$work/ref.pcap"
    echo "  T_R=${r}Mbit/s gap=${gap}ns  inject: $(judge "$work/ref.pcap" "$work/cap_inject.pcap")  tcpreplay: $(judge "$work/ref.pcap" "$work/cap_tcpreplay.pcap")"
  done
  echo "== Caliper Fig. 6 through inject: spike-bump gaps, sizes 1518/612/64 B, $ccount frames =="
  python3 "$here/caliper_schedule.py" "$work/s.txt" "$work/ref.pcap" "$ccount" spikebump 6
  cap_run inject inject_sched "$work/s.txt"
  cap_run tcpreplay tcpreplay -q -i va "$work/ref.pcap"
  echo "  inject: $(judge "$work/ref.pcap" "$work/cap_inject.pcap")  tcpreplay: $(judge "$work/ref.pcap" "$work/cap_tcpreplay.pcap")"
  # The CDFs of requested and measured gaps (Fig. 6's two curves): their
  # KS distance by sluice's analyzer, requested gaps from the schedule.
  awk 'NR > 1 {print $1}' "$work/s.txt" > "$work/requested.txt"
  for who in inject tcpreplay; do
    printf '  %s: KS(requested, measured gaps) = %s\n' "$who" "$("$sluice" analyze "$work/cap_$who.pcap" --gaps "$work/requested.txt" --json | python3 -c 'import json,sys; v=json.load(sys.stdin); print("%.4f (1 us bins: %.4f)" % (v["ks"], v["ks_1us"]))')"
  done
  exit 0
fi

if [ "$what" = all ] || [ "$what" = timing ]; then
  tcount=${TCOUNT:-100000}
  sock=$work/t.sock
  ip netns exec sink tcpdump -i vb -w "$work/timing.pcap" -B 262144 -s 96 \
    --time-stamp-precision nano -q 'udp' 2> "$work/tcpdump.err" &
  tpid=$!
  for _ in $(seq 300); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.1; done
  "$sluice" inject --listen "unix:$sock" --to afpacket:va --sessions 1 -q 2> "$work/inject.err" &
  ipid=$!
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
  python3 "$root/python/inject_schedule.py" --connect "unix:$sock" --count "$tcount" \
    --pps "${TPPS:-50000}" --start-ms 300 --src 10.99.0.1 --dst 10.99.0.2 \
    --acks "$work/acks.txt" > "$work/timing.json"
  wait "$ipid"
  sleep 1.5 # tcpdump's last ring block
  kill -INT "$tpid"; wait "$tpid" 2>/dev/null || true
  echo "inject timing ($tcount descriptions at ${TPPS:-50000}/s to veth va): ack vs capture"
  python3 - "$work/timing.pcap" "$work/acks.txt" <<'PY'
import struct, sys
dep = {}
for line in open(sys.argv[2]):
    s, t, _ = line.split()
    dep[int(s)] = int(t)
with open(sys.argv[1], "rb") as f:
    hdr = f.read(24)
    endian = "<" if hdr[:4] == bytes.fromhex("4d3cb2a1") else ">"
    diffs = []
    while True:
        h = f.read(16)
        if len(h) < 16:
            break
        sec, nsec, incl, _ = struct.unpack(endian + "IIII", h)
        data = f.read(incl)
        if len(data) >= 50:
            seq = struct.unpack(">Q", data[42:50])[0]
            if seq in dep:
                diffs.append(sec * 10**9 + nsec - dep[seq])
diffs.sort()
n = len(diffs)
med = diffs[n // 2]
err = sorted(abs(d - med) for d in diffs)
print(f"  matched {n} of {len(dep)}; path offset {med} ns; earliest {diffs[0] - med} ns "
      f"from it; |error| p50 {err[n // 2]} p99 {err[n * 99 // 100]} max {err[-1]} ns")
PY
fi
[ "$what" = all ] || [ "$what" = throughput ] || exit 0

# inject_run SINK: "descriptions/s acked, frames reaching the sink veth".
inject_run() {
  local sock=$work/i.sock before
  rm -f "$sock"
  "$sluice" inject --listen "unix:$sock" --to "$1" --sessions 1 -q 2> "$work/inject.err" &
  local pid=$!
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done
  before=$(rx)
  python3 "$root/python/inject_schedule.py" --connect "unix:$sock" --count "$count" \
    --reuse 15000 --size 64 --start-ms 0 > "$work/client.json"
  wait "$pid"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["acked"] == r["descriptions"], r
print(r["per_second"], int(sys.argv[3]) - int(sys.argv[2]))' "$work/client.json" "$before" "$(rx)"
}

echo "inject (one client, $count descriptions of 64 bytes; 3 runs, median)"
for sink in null afpacket:va; do
  rates=() frames=()
  for _ in 1 2 3; do
    read -r r f <<< "$(inject_run "$sink")"
    rates+=("$r") frames+=("$f")
  done
  med=$(printf '%s\n' "${rates[@]}" | sort -n | sed -n 2p)
  printf '  to %-10s %s descriptions/s (runs: %s; frames at the sink: %s)\n' \
    "${sink#afpacket:}" "$med" "${rates[*]}" "${frames[*]}"
done

# pace: the writer offers RATE frames/s into the TAP (paced: on 2 vCPUs a
# top-speed writer spinning would take the CPU pace needs), pace moves them
# to null or veth; counted: what the TAP took and what pace sent.
python3 "$here/mktrace.py" "$work/t64.pcap" 100000 64 1000
ip tuntap add dev slcap1 mode tap
sysctl -qw net.ipv6.conf.slcap1.disable_ipv6=1
ip link set slcap1 txqueuelen 10000 up
tap_tx() { cat /sys/class/net/slcap1/statistics/tx_packets; }
# pace_run SINK RATE: "frames/s the TAP took, frames/s pace sent, lost".
pace_run() {
  "$sluice" pace --tap slcap1 --to "$1" --gap 1ns --queue-limit 65536 \
    --duration "$((secs + 2))s" > "$work/pace.out" 2>&1 &
  local pid=$! t0 t1
  sleep 0.5
  t0=$(tap_tx)
  "$sluice" replay "$work/t64.pcap" --to afpacket:slcap1 --pps "$2" --loop 1000 \
    --duration "${secs}s" > "$work/writer.out" 2>&1
  t1=$(tap_tx)
  wait "$pid" || true
  python3 -c '
import re, sys
sent = int(re.search(r"sent (\d+) packets", open(sys.argv[1]).read()).group(1))
took = int(sys.argv[3]) - int(sys.argv[2])
secs = float(sys.argv[4])
print(round(took / secs), round(sent / secs), took - sent)' "$work/pace.out" "$t0" "$t1" "$secs"
}
echo "pace (64-byte frames written into TAP slcap1 by sluice replay --pps R, ${secs} s each)"
printf '  %-10s %-8s %-12s %-12s %s\n' sink offered took/s sent/s lost
for sink in null afpacket:va; do
  for r in ${PACE_RATES:-300k 400k 500k}; do
    read -r took sent lost <<< "$(pace_run "$sink" "$r")"
    printf '  %-10s %-8s %-12s %-12s %s\n' "${sink#afpacket:}" "$r" "$took" "$sent" "$lost"
  done
done
