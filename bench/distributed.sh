#!/usr/bin/env bash
# Distributed generation on one host (the paper's §6.2.3, scaled to veth):
# W worker processes, each in its own namespace with a veth into a bridge
# in a sink namespace and a control link to the root namespace, driven by
# `sluice control run` over mutual TLS.
#   rmax     one worker's top speed R_max (64-byte frames, one TX thread);
#   split    Poisson 64 B at 0.67 and 0.92 x R_max (LOADS) for 3 s over 1, 2, 3
#            workers, `packets` and `components` splits: the merged capture
#            (tcpdump on every worker's port) judged by ratejudge.py against
#            `profile synth`: hist NMSE, hist Pearson, series Pearson; then
#            again with each worker's capture realigned before the merge
#            (bench/realign.py: first frames together, Fig. 14's perfect
#            synchronization), NMSE over worker counts normalized to one
#            worker (Figs. 16-17), and Table 7: per worker count, the
#            highest load whose hist NMSE stays within one worker's at the
#            lowest load (LOADS="0.3 0.6 0.9 1.2 1.5" makes it a search);
#   skew     20 replays over 3 workers whose clocks are shifted -5 ms, 0,
#            +3 ms (--clock-offset): start skew between workers, corrected,
#            p50/p99/max (each worker's start = min(capture - due));
#   control  controller -> worker RPC latency (Python client: a unary call
#            and clock rounds, p50/p99) and statistics bytes per second per
#            worker (the --stats-json lines the workers stream);
#   scale    (not in `all`; for a host with 16+ cores) 1, 2, 4, 8 workers,
#            each pinned to its own cores (taskset), replaying 64-byte
#            frames of 512 flows at top speed for SECS s, split by flow, to
#            `null` and to their veths: aggregate Mpps and the ratio to one
#            worker. Counts above the CPU count are skipped.
#
#   sudo bench/distributed.sh [all|rmax|split|skew|control|scale]
#
# Needs root, tcpdump, mergecap (wireshark-common), python3 (+ grpcio for
# `control`). Results go to stdout and $WORK/distributed-results.txt.
# R_MAX=PPS skips the measurement; SECS sets the split runs' length;
# LOADS, COUNTS (worker counts) and SPLITS narrow the split runs.
# Each worker's control link has its root-namespace end in a /24 the host
# does not use (bench/subnet.sh: 10.79.0 where free, then the next ones;
# SLUICE_TEST_SUBNETS for the candidates), and the namespaces and veths
# carry this script's PID: a name or subnet the host has stops the run,
# naming it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/distributed-results.txt
sluice=${SLUICE:-$root/target/release/sluice}
secs=${SECS:-3}
what=${1:-all}
tag=db$(($$ % 100000))
# Worker namespaces: 3, or for `scale` the largest count that fits.
W=3
scale_counts=""
if [ "$what" = scale ]; then
  for n in 1 2 4 8; do [ "$n" -le "$(nproc)" ] && scale_counts="$scale_counts $n"; done
  W=${scale_counts##* }
fi

(cd "$root" && cargo build --release -q)
# shellcheck source=bench/subnet.sh
. "$here/subnet.sh"
nets=()
for i in $(seq 0 $((W - 1))); do
  free_subnet "nets[$i]" 10.79.0
  names_free "w$i$tag" "t$i${tag}a" "t$i${tag}b" "c$i${tag}r" "c$i${tag}w"
done
names_free "s$tag"
say() { echo "$*" | tee -a "$results"; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }
ns() { local n=$1; shift; ip netns exec "$n" "$@"; }

# PIDs of the workers this script started: only those are ended.
worker_pids=()
stop_workers() {
  local p
  for p in "${worker_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${worker_pids[@]}"; do wait "$p" 2>/dev/null || true; done
  worker_pids=()
}
down() {
  stop_workers
  for i in $(seq 0 $((W - 1))); do ip netns del "w$i$tag" 2>/dev/null || true; done
  ip netns del "s$tag" 2>/dev/null || true
}
up() {
  down
  ip netns add "s$tag"
  ns "s$tag" ip link add br0 type bridge
  ns "s$tag" ip link set br0 up
  for i in $(seq 0 $((W - 1))); do
    local w=w$i$tag tx=t$i${tag}a rx=t$i${tag}b cr=c$i${tag}r cw=c$i${tag}w
    ip netns add "$w"
    ip link add "$tx" type veth peer name "$rx"
    ip link set "$tx" netns "$w"; ip link set "$rx" netns "s$tag"
    ip link add "$cr" type veth peer name "$cw"
    ip link set "$cw" netns "$w"
    ip addr add "${nets[$i]}.1/24" dev "$cr"; ip link set "$cr" up
    ns "$w" ip addr add "${nets[$i]}.2/24" dev "$cw"
    for d in "$cw" "$tx" lo; do ns "$w" ip link set "$d" up; done
    ns "$w" sysctl -qw "net.ipv6.conf.$tx.disable_ipv6=1"
    ns "s$tag" sysctl -qw "net.ipv6.conf.$rx.disable_ipv6=1"
    ns "s$tag" ip link set "$rx" master br0 up
    # The sink counts what arrives; flooding it on to the other workers'
    # namespaces would only cost CPU.
    ns "s$tag" bridge link set dev "$rx" flood off
  done
  rm -rf "$work/dkeys"; "$sluice" keygen "$work/dkeys" >/dev/null 2>&1
}
trap down EXIT

# workers OFFSET...: one worker per namespace, each with its clock offset;
# with PER=K set, worker i is pinned to CPUs i*K .. i*K+K-1.
workers() {
  stop_workers
  local i=0 pin
  for off in "$@"; do
    pin=()
    [ -n "${PER:-}" ] && pin=(taskset -c "$((i * PER))-$((i * PER + PER - 1))")
    "${pin[@]}" ip netns exec "w$i$tag" "$sluice" worker --listen "${nets[$i]}.2:7700" --tls "$work/dkeys" \
      --clock-offset "$off" 2>"$work/dworker$i.log" &
    worker_pids+=("$!")
    i=$((i + 1))
  done
  sleep 0.5
}

# plan N COMMAND FILE DURATION SPLIT ARGS...: a plan over the first N
# workers, sending to their veths (TO=null: to null).
plan() {
  local n=$1 cmd=$2 file=$3 dur=$4 split=$5; shift 5
  {
    echo "workers:"
    for i in $(seq 0 $((n - 1))); do
      local to=${TO:-afpacket:t$i${tag}a}
      echo "  - {name: w$i, address: \"${nets[$i]}.2:7700\", to: \"$to\"}"
    done
    printf 'job:\n  command: %s\n  file: %s\n  args: [' "$cmd" "$file"
    local sep=""; for a in "$@"; do printf '%s"%s"' "$sep" "$a"; sep=", "; done
    printf ']\n  duration: %s\nsplit: %s\n' "$dur" "$split"
  } > "$work/plan.yaml"
}

# captured N OUT CMD...: runs CMD with tcpdump on the first N workers'
# ports, merges the captures into OUT.
captured() {
  local n=$1 out=$2; shift 2
  local pids=() files=()
  for i in $(seq 0 $((n - 1))); do
    rm -f "$work/dcap$i.pcap"
    ip netns exec "s$tag" tcpdump -i "t$i${tag}b" -Q in -s 2048 -B 262144 --time-stamp-precision nano -q \
      -w "$work/dcap$i.pcap" 2>"$work/dcap$i.err" &
    pids+=($!); files+=("$work/dcap$i.pcap")
  done
  sleep 1
  "$@" >/dev/null 2>&1 || true
  # tcpdump (TPACKET_V3, not immediate) gets a partly filled ring block
  # only when the kernel retires it, 1 s after its first frame: stopped
  # sooner, it never reads the last block's frames (it counts them as
  # "received by filter", not as dropped).
  sleep 1.5
  for p in "${pids[@]}"; do kill -INT "$p"; wait "$p" 2>/dev/null || true; done
  mergecap -F pcap -w "$out" "${files[@]}"
  # Where frames went missing: tcpdump's own drops, the ports' rx drops.
  local drops=0 unread=0 d c r
  for i in $(seq 0 $((n - 1))); do
    d=$(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$work/dcap$i.err")
    c=$(sed -n 's/^\([0-9]*\) packets captured.*/\1/p' "$work/dcap$i.err")
    r=$(sed -n 's/^\([0-9]*\) packets received by filter.*/\1/p' "$work/dcap$i.err")
    drops=$((drops + ${d:-0})); unread=$((unread + ${r:-0} - ${c:-0}))
  done
  local frames
  frames=$(python3 -c "
import struct, sys
b = open(sys.argv[1], 'rb').read(); o = 24; n = 0
while o + 16 <= len(b):
    n += 1; o += 16 + struct.unpack('<IIII', b[o:o + 16])[2]
print(n)" "$out")
  echo "merged_frames=$frames tcpdump_dropped=$drops tcpdump_unread=$unread port_rx_dropped=$(ip netns exec "s$tag" cat /sys/class/net/t0${tag}b/statistics/rx_dropped) w0_tx_dropped=$(ip netns exec "w0$tag" cat /sys/class/net/t0${tag}a/statistics/tx_dropped) w0_tx=$(ip netns exec "w0$tag" cat /sys/class/net/t0${tag}a/statistics/tx_packets) p0_rx=$(ip netns exec "s$tag" cat /sys/class/net/t0${tag}b/statistics/rx_packets)" > "$work/ddrops.txt"
}

rmax() {
  if [ -n "${R_MAX:-}" ]; then echo "$R_MAX"; return; fi
  python3 "$here/mktrace.py" "$work/d64.pcap" 2000000 64 1 cbr 1000 >/dev/null
  ns "w0$tag" "$sluice" replay "$work/d64.pcap" --to "afpacket:t0${tag}a" --topspeed -q \
    --summary-json "$work/drmax.json" 2>/dev/null
  python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['pps']))" "$work/drmax.json"
}

up
say "== distributed $(date -u +%FT%TZ) $(nproc) CPUs, W=$W, $secs s runs"

if [ "$what" = scale ]; then
  per=$(( $(nproc) / W )); [ "$per" -ge 1 ] || per=1
  python3 "$here/mktrace.py" "$work/dscale.pcap" 1000000 64 1000 cbr 512 >/dev/null
  say "-- scale: 64 B replay of 512 flows at top speed for $secs s, split by flow; each worker on $per CPUs of its own"
  say "workers sink aggregate_Mpps ratio_to_1"
  for to in null veth; do
    one=""
    for n in $scale_counts; do
      PER=$per workers $(for i in $(seq "$n"); do echo 0ns; done)
      if [ "$to" = null ]; then export TO=null; else unset TO; fi
      plan "$n" replay "$work/dscale.pcap" "${secs}s" flow --topspeed --loop 0 --preload
      "$sluice" control run "$work/plan.yaml" --tls "$work/dkeys" -q --summary-json "$work/dsum.json" \
        2>"$work/dscale.err" || { say "$n $to FAILED: $(tail -n 3 "$work/dscale.err")"; continue; }
      mpps=$(python3 -c "import json,sys; t=json.load(open(sys.argv[1]))['total']; print(round(t['packets'] / $secs / 1e6, 3))" "$work/dsum.json")
      [ -z "$one" ] && one=$mpps
      say "$n $to $mpps $(python3 -c "print(round($mpps / $one, 2))")"
    done
  done
  unset TO
  exit 0
fi

r_max=$(rmax)
say "R_max (one worker, 64 B, top speed to veth): $r_max pps"

if [ "$what" = all ] || [ "$what" = split ]; then
  workers 0 0 0
  say "-- split: Poisson 64 B, ratejudge.py of the merged capture against profile synth"
  say "load workers split sent(summary) captured/target hist_nmse hist_pearson series_pearson series_nmse | realigned: hist_nmse series_nmse shifts_ns | drops"
  : > "$work/dnmse.txt"
  for load in ${LOADS:-0.67 0.92}; do
    rate=$(python3 -c "print(round($r_max * $load))")
    printf 'seed: 7\nduration: %ss\nrate: %s\nipd: {dist: poisson}\nsize: {dist: constant, bytes: 60}\npacket: {src: 10.99.0.1, dst: 10.99.0.2, dport: 9}\n' \
      "$secs" "$rate" > "$work/dp.yaml"
    "$sluice" profile synth "$work/dp.yaml" -o "$work/dtarget.pcap" >/dev/null 2>&1
    for n in ${COUNTS:-1 2 3}; do
      for split in ${SPLITS:-packets components}; do
        extra=(--spin "${SPIN:-1ms}")
        [ "$split" = components ] && extra+=(--mode fourier --queues "$n" --keep 200)
        plan "$n" profile "$work/dp.yaml" "$((secs + 1))s" "$split" "${extra[@]}"
        captured "$n" "$work/dall.pcap" "$sluice" control run "$work/plan.yaml" --tls "$work/dkeys" -q \
          --summary-json "$work/dsum.json"
        j=$(python3 "$here/ratejudge.py" "$work/dtarget.pcap" "$work/dall.pcap" --oneline)
        # shellcheck disable=SC2046
        shifts=$(python3 "$here/realign.py" "$work/dre.pcap" $(for i in $(seq 0 $((n - 1))); do echo "$work/dcap$i.pcap"; done) | field shift_ns)
        jr=$(python3 "$here/ratejudge.py" "$work/dtarget.pcap" "$work/dre.pcap" --oneline)
        sent=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['total']['packets'])" "$work/dsum.json")
        say "$load $n $split $sent $(field generated_packets <<< "$j")/$(field target_packets <<< "$j") $(field hist_nmse <<< "$j") $(field hist_pearson <<< "$j") $(field pearson <<< "$j") $(field nmse <<< "$j") | $(field hist_nmse <<< "$jr") $(field nmse <<< "$jr") $shifts | $(cat "$work/ddrops.txt")"
        echo "$load $n $split $(field hist_nmse <<< "$j") $(field hist_nmse <<< "$jr") $(field nmse <<< "$j") $(field nmse <<< "$jr")" >> "$work/dnmse.txt"
      done
    done
  done
fi

if [ "$what" = all ] || [ "$what" = split ]; then
  # Figs. 16-17: NMSE against worker count, normalized to one worker at the
  # same load and split; Table 7: the highest load within the threshold.
  python3 "$here/nmse_table.py" "$work/dnmse.txt" | tee -a "$results"
fi

if [ "$what" = all ] || [ "$what" = skew ]; then
  workers -5ms 0ns 3ms
  say "-- skew: 20 replays over 3 workers, clocks shifted -5 ms / 0 / +3 ms, corrected"
  python3 "$here/mktrace.py" "$work/dskew.pcap" 6000 64 500000 cbr 600 >/dev/null
  plan 3 replay "$work/dskew.pcap" 4s flow --pps 2k --spin 200us
  skews=()
  for r in $(seq 20); do
    captured 3 "$work/dall.pcap" "$sluice" control run "$work/plan.yaml" --tls "$work/dkeys" -q
    s=$(python3 - "$work"/dcap0.pcap "$work"/dcap1.pcap "$work"/dcap2.pcap <<'EOF'
import struct, sys
def starts(path):
    b = open(path, 'rb').read(); o = 24; best = None
    while o + 16 <= len(b):
        s, ns, cl, _ = struct.unpack('<IIII', b[o:o + 16]); f = b[o + 16:o + 16 + cl]; o += 16 + cl
        seq = struct.unpack('!Q', f[42:50])[0]
        v = s * 10**9 + ns - seq * 10**9 // 2000
        best = v if best is None else min(best, v)
    return best
v = [starts(p) for p in sys.argv[1:]]
print(max(v) - min(v))
EOF
)
    skews+=("$s")
  done
  say "start skew ns over 20 runs: $(printf '%s\n' "${skews[@]}" | sort -n | python3 -c "
import sys; v=[int(x) for x in sys.stdin]; v.sort(); n=len(v)
print(f'p50 {v[n//2]} p99 {v[min(n-1,int(0.99*n))]} max {v[-1]}')")"
fi

if [ "$what" = all ] || [ "$what" = control ]; then
  workers 0 0 0
  say "-- control: RPC latency (Python client, 1000 each) and statistics bandwidth"
  # The client as users get it: installed, its stubs compiled at build time.
  rm -rf "$work/pysite"
  python3 -m pip install -q --no-build-isolation --no-deps --target "$work/pysite" "$root/python"
  PYTHONPATH="$work/pysite" python3 - "$work/dkeys" "${nets[0]}.2:7700" <<'EOF' | tee -a "$results"
import sys, time
from sluice_control import Worker, pb
w = Worker("w0", sys.argv[2], "null", tls_dir=sys.argv[1])
w.register()
ports = pb.PortMap(ports=[pb.GlobalPort(id=0, worker="w0", sink="null")])
lat = []
for _ in range(1000):
    t = time.perf_counter_ns(); w.stub.PublishPorts(ports, metadata=w.meta); lat.append(time.perf_counter_ns() - t)
lat.sort()
print(f"unary RPC (PublishPorts): p50 {lat[500] / 1e3:.0f} us p99 {lat[990] / 1e3:.0f} us")
w.clock_offset(1000)
print(f"clock exchange (stream): min delay {2 * w.uncertainty_ns / 1e3:.0f} us")
w.release()
EOF
  python3 "$here/mktrace.py" "$work/dst.pcap" 20000 64 1000000 cbr 600 >/dev/null
  plan 3 replay "$work/dst.pcap" 10s flow --pps 2k
  "$sluice" control run "$work/plan.yaml" --tls "$work/dkeys" -q --stats-json "$work/dstats.jsonl" 2>/dev/null || true
  bytes=$(wc -c < "$work/dstats.jsonl")
  say "statistics: $bytes bytes of stats lines from 3 workers over 10 s: $(python3 -c "print(round($bytes * 8 / 3 / 10 / 1000, 2))") kbit/s per worker"
fi
