#!/usr/bin/env bash
# Replay benchmark: sluice side by side with tcpreplay and trafgen on the
# veth test network of bench/netns.sh, in one run, ratios printed.
#
#   bench/replay.sh [all|throughput|timing|tcpivo|null|big]   (default: all but big;
#   tcpivo: TCPivo's delta = 20, 70, 2500 us workloads, epsilon over time)
#
# Needs root, tcpreplay, netsniff-ng (trafgen), tcpdump, python3. Timing is
# judged by bench/gaperr.py on a tcpdump capture in the sink namespace.
# Results go to stdout and to $WORK/replay-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
judges=$root/bench  # vendored copies of shared/bench, kept identical
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
export WORK=$work
results=$work/replay-results.txt
sluice=${SLUICE:-$root/target/release/sluice}
runs=${RUNS:-3}

[ -x "$sluice" ] || (cd "$root" && cargo build --release -q)
"$judges/netns.sh" up
trap '"$judges/netns.sh" down' EXIT
# IPv6 autoconfiguration frames would pollute captures.
sysctl -qw net.ipv6.conf.va.disable_ipv6=1 || true
ip netns exec sink sysctl -qw net.ipv6.conf.vb.disable_ipv6=1 || true

rx() { ip netns exec sink cat /sys/class/net/vb/statistics/rx_packets; }
trace() { [ -f "$work/$1" ] || python3 "$judges/mktrace.py" "$work/$1" "${@:2}"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
say() { echo "$*" | tee -a "$results"; }
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }

# Frames counted by the sink over sluice's own send phase (its summary duration).
# --preload, like tcpreplay's --preload-pcap in peers.sh: the trace is read
# into memory before sending starts.
sluice_topspeed() { # trace threads -> pps
  local a b
  a=$(rx)
  "$sluice" replay "$work/$1" --to afpacket:va --topspeed --threads "$2" --loop 3 --preload -q \
    --summary-json "$work/s.json" 2>/dev/null
  b=$(rx)
  python3 -c "import json; s=json.load(open('$work/s.json')); print(round(($b-$a)/s['duration_s']))"
}

capture_run() { # name cmd... : runs cmd while tcpdump captures in the sink namespace
  local name=$1; shift
  ip netns exec sink tcpdump -i vb -j adapter_unsynced --time-stamp-precision=nano -B 262144 \
    -w "$work/cap_$name.pcap" -q 2>/dev/null &
  local pid=$!; sleep 1
  "$@" >/dev/null 2>&1 || true
  sleep 2; kill $pid; wait $pid 2>/dev/null || true
}

throughput() {
  trace t64.pcap 1000000 64 1000; trace t1500.pcap 200000 1500 1000
  # Per-flow order is kept, so thread scaling needs several flows: 64 here.
  trace t64f.pcap 1000000 64 1000 cbr 64
  say "== top speed on veth (frames/s counted by the sink; median of $runs) =="
  local peers; peers=$("$judges/peers.sh" throughput)
  echo "$peers" | tee -a "$results"
  local tr64 tf1 tf2 tr1500
  tr64=$(echo "$peers" | sed -n 's/.*tcpreplay.*trace=t64 pps=\([0-9]*\).*/\1/p')
  tr1500=$(echo "$peers" | sed -n 's/.*tcpreplay.*trace=t1500 pps=\([0-9]*\).*/\1/p')
  tf1=$(echo "$peers" | sed -n 's/.*trafgen.*cpus=1 pps=\([0-9]*\).*/\1/p')
  tf2=$(echo "$peers" | sed -n 's/.*trafgen.*cpus=2 pps=\([0-9]*\).*/\1/p')
  local s1 s2 s1500
  s1=$(for i in $(seq "$runs"); do sluice_topspeed t64.pcap 1; done | median)
  s2=$(for i in $(seq "$runs"); do sluice_topspeed t64.pcap 2; done | median)
  local f1 f2
  f1=$(for i in $(seq "$runs"); do sluice_topspeed t64f.pcap 1; done | median)
  f2=$(for i in $(seq "$runs"); do sluice_topspeed t64f.pcap 2; done | median)
  s1500=$(for i in $(seq "$runs"); do sluice_topspeed t1500.pcap 1; done | median)
  say "sluice topspeed 64B  1 thread : $s1 pps  (x$(ratio "$s1" "$tr64") tcpreplay, x$(ratio "$s1" "$tf1") trafgen 1 cpu)"
  say "sluice topspeed 64B  2 threads: $s2 pps  (1 flow: per-flow order keeps it on one thread; x$(ratio "$s2" "$tf2") trafgen 2 cpus)"
  say "sluice topspeed 64B 64 flows  : 1 thread $f1 pps, 2 threads $f2 pps (x$(ratio "$f2" "$f1") own 1-thread, x$(ratio "$f2" "$tf2") trafgen 2 cpus)"
  say "sluice topspeed 1500B 1 thread: $s1500 pps  (x$(ratio "$s1500" "$tr1500") tcpreplay)"
}

ratio() { python3 -c "print(f'{$1/$2:.2f}' if float('$2' or 0) else 'n/a')"; }

null_engine() {
  trace t64.pcap 1000000 64 1000
  say "== engine only: --to null, 64 B, top speed, 1 TX thread (median of $runs) =="
  local n p
  n=$(for i in $(seq "$runs"); do
    "$sluice" replay "$work/t64.pcap" --to null --topspeed --loop 20 -q --summary-json "$work/n.json" 2>/dev/null
    json "$work/n.json" "['pps']" | cut -d. -f1; done | median)
  p=$(for i in $(seq "$runs"); do
    "$sluice" replay "$work/t64.pcap" --to null --topspeed --loop 20 --preload -q --summary-json "$work/n.json" 2>/dev/null
    json "$work/n.json" "['pps']" | cut -d. -f1; done | median)
  say "sluice null 64B: streamed from the file $n pps, --preload $p pps"
}

timing() {
  trace c10k.pcap 20000 64 100000; trace c100k.pcap 200000 64 10000; trace c500k.pcap 1000000 64 2000
  say "== CBR accuracy on veth, judged by gaperr.py on a tcpdump capture in the sink namespace =="
  # The floor under every timing figure: how often the TX CPU is taken away
  # from a thread that does nothing but read the clock.
  (cd "$root" && cargo build --release -q -p sluice-pace --example hiccups)
  say "platform floor, CPU $(( $(nproc) - 1 )): $(taskset -c $(( $(nproc) - 1 )) "$root/target/release/examples/hiccups" 2 | tr '\n' ' ')"
  # Whether a second CPU is on time while the first is interrupted (a VM
  # paused as a whole stops both): one spinning thread per CPU.
  say "platform floor, all $(nproc) CPUs at once: $("$root/target/release/examples/hiccups" 2 "$(nproc)" | grep overlapping | tr '\n' ' ')"
  "$judges/peers.sh" timing | tee -a "$results"
  for t in c10k c100k c500k; do
    capture_run "sluice_$t" "$sluice" replay "$work/$t.pcap" --to afpacket:va -q --summary-json "$work/$t.json"
    say "peer=sluice mode=recorded trace=$t $(python3 "$judges/gaperr.py" "$work/$t.pcap" "$work/cap_sluice_$t.pcap" --oneline) eps_p99_ns=$(json "$work/$t.json" "['eps']['percentiles']['p99_ns']")"
  done
}

tcpivo() {
  # TCPivo's workloads (Figs. 2-9): packets every delta = 20, 70 and 2 500 us
  # (2 s each), replayed by sluice and by tcpreplay in the same run, judged
  # by gaperr.py on a capture in the sink namespace; ratios of |D_M - D_R|
  # p50 and p99 (tcpreplay / sluice: above 1, sluice is closer). sluice also
  # writes each packet's send-time error (--eps-log): its p50 / p99 per
  # fifth of the run, TCPivo's epsilon over time.
  say "== TCPivo's workloads: delta 20 / 70 / 2500 us, 64 B, sluice and tcpreplay on veth =="
  (cd "$root" && cargo build --release -q -p sluice-pace --example hiccups)
  say "platform floor, CPU $(( $(nproc) - 1 )): $(taskset -c $(( $(nproc) - 1 )) "$root/target/release/examples/hiccups" 2 2>/dev/null | tr '\n' ' ')"
  for d in 20 70 2500; do
    local n=$(( 2000000 / d )) f=d$d
    trace $f.pcap $n 64 $(( d * 1000 ))
    # $runs alternated runs of each tool; each figure's median over them.
    local all_a="" all_b="" a b
    for _ in $(seq "$runs"); do
      capture_run "sluice_$f" "$sluice" replay "$work/$f.pcap" --to afpacket:va -q --eps-log "$work/eps_$f.csv"
      capture_run "tcpreplay_$f" tcpreplay -q -i va "$work/$f.pcap"
      all_a+="$(python3 "$judges/gaperr.py" "$work/$f.pcap" "$work/cap_sluice_$f.pcap" --oneline)"$'\n'
      all_b+="$(python3 "$judges/gaperr.py" "$work/$f.pcap" "$work/cap_tcpreplay_$f.pcap" --oneline)"$'\n'
    done
    med_line() { python3 -c '
import sys, statistics
rows = [dict(kv.split("=") for kv in l.split()) for l in sys.stdin.read().splitlines() if l.strip()]
print(" ".join(f"{k}={statistics.median(float(r[k]) for r in rows):g}" for k in rows[0]))'; }
    a=$(med_line <<< "$all_a"); b=$(med_line <<< "$all_b")
    say "peer=sluice delta_us=$d (median of $runs, each figure) $a"
    say "peer=tcpreplay delta_us=$d (median of $runs, each figure) $b"
    say "delta_us=$d ratio tcpreplay/sluice: $(python3 - "$a" "$b" <<'PY'
import sys
f = [dict(kv.split('=') for kv in s.split()) for s in sys.argv[1:]]
print(' '.join(f"{k} {float(f[1][k]) / max(1.0, float(f[0][k])):.1f}" for k in ('p50_ns', 'p99_ns')))
PY
)"
    say "delta_us=$d sluice eps over time (p50/p99 ns per fifth): $(python3 - "$work/eps_$f.csv" <<'PY'
import sys
rows = [int(l.split(',')[3]) for l in open(sys.argv[1]).readlines()[1:]]
k = max(1, len(rows) // 5)
out = []
for i in range(0, len(rows), k):
    part = sorted(rows[i:i + k])
    out.append(f"{part[len(part) // 2]}/{part[min(len(part) - 1, len(part) * 99 // 100)]}")
print(' '.join(out[:5]))
PY
)"
  done
}

big() {
  # 4 GiB of 1500-byte frames at 10 us (100 kpps): recorded timing, cold cache.
  trace big.pcap 2830000 1500 10000
  say "== 4 GiB trace ($(du -h "$work/big.pcap" | cut -f1)), page cache dropped before each run =="
  sync; echo 3 > /proc/sys/vm/drop_caches
  /usr/bin/time -f "%M" -o "$work/rss_top" "$sluice" replay "$work/big.pcap" --to afpacket:va --topspeed -q \
    --summary-json "$work/bt.json" 2>/dev/null
  say "topspeed: $(json "$work/bt.json" "['pps']" | cut -d. -f1) pps, max RSS $(( $(cat "$work/rss_top") / 1024 )) MiB"
  sync; echo 3 > /proc/sys/vm/drop_caches
  /usr/bin/time -f "%M" -o "$work/rss_rec" "$sluice" replay "$work/big.pcap" --to afpacket:va -q \
    --summary-json "$work/br.json" 2>/dev/null
  say "recorded 100 kpps: eps max $(json "$work/br.json" "['eps']['percentiles']['max_ns']") ns, late(>10us) $(json "$work/br.json" "['late']"), max RSS $(( $(cat "$work/rss_rec") / 1024 )) MiB"
}

: > "$results"
say "# sluice replay benchmark $(date -u +%FT%TZ) on $(nproc) cores, kernel $(uname -r)"
case "${1:-all}" in
  all) null_engine; throughput; timing; tcpivo ;;
  *) "$1" ;;
esac
