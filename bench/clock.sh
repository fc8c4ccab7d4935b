#!/usr/bin/env bash
# The pacer's clock: CLOCK_MONOTONIC against the TSC (--clock tsc), CBR at
# 10 and 100 kpps on veth through xdp: and afpacket:, alternated, judged
# by bench/gaperr.py on a tcpdump capture in the sink namespace (not by
# sluice's own ε, which is printed beside it), with the cost of one clock
# reading from `sluice doctor` and the TSC's drift from the summary.
#
#   bench/clock.sh            RUNS=3 by default
#
# Needs root, tcpdump, python3. Results: stdout and $WORK/clock-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/clock-results.txt; : > "$results"
sluice=${SLUICE:-$root/target/release/sluice}
runs=${RUNS:-3}
ns=sluice-clk
[ -x "$sluice" ] || (cd "$root" && cargo build --release -q)
down() { ip link del clka 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; }
down; trap down EXIT
ip netns add "$ns"
ip link add clka type veth peer name clkb
ip link set clkb netns "$ns"
ip link set clka up; ip netns exec "$ns" ip link set clkb up
sysctl -qw net.ipv6.conf.clka.disable_ipv6=1 || true
ip netns exec "$ns" sysctl -qw net.ipv6.conf.clkb.disable_ipv6=1 || true
say() { echo "$*" | tee -a "$results"; }
json() { python3 -c "import json,sys; v=json.load(open(sys.argv[1])); print($2)" "$1"; }

say "$("$sluice" doctor --floor 1s | grep -E 'clock read cost|platform floor')"
# 100 000 frames each: 10 s at 10 kpps, 1 s at 100 kpps.
[ -f "$work/c10k.pcap" ] || python3 "$here/mktrace.py" "$work/c10k.pcap" 100000 64 100000
[ -f "$work/c100k.pcap" ] || python3 "$here/mktrace.py" "$work/c100k.pcap" 100000 64 10000

one() { # trace sink clock -> one line
  local cap=$work/clk_cap.pcap
  ip netns exec "$ns" tcpdump -i clkb -j adapter_unsynced --time-stamp-precision=nano -B 262144 \
    -s 96 -w "$cap" -q 2>/dev/null &
  local pid=$!; sleep 1
  "$sluice" replay "$work/$1.pcap" --to "$2:clka" --clock "$3" -q --summary-json "$work/clk.json" 2>/dev/null
  sleep 1; kill $pid; wait $pid 2>/dev/null || true
  echo "trace=$1 sink=$2 clock=$3 $(python3 "$here/gaperr.py" "$work/$1.pcap" "$cap" --oneline) \
eps_p50_ns=$(json "$work/clk.json" "v['eps']['percentiles']['p50_ns']") \
eps_p99_ns=$(json "$work/clk.json" "v['eps']['percentiles']['p99_ns']") \
drift_ns=$(json "$work/clk.json" "(v.get('clock') or {}).get('drift_ns')")"
}

say "== CBR accuracy by clock, judged by gaperr.py on a capture in the sink namespace =="
for _ in $(seq "$runs"); do
  for t in c10k c100k; do
    for sink in xdp afpacket; do
      for clock in monotonic tsc; do
        say "$(one $t $sink $clock)"
      done
    done
  done
done
