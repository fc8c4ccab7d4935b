#!/usr/bin/env bash
# TCPivo's Table 2 for sluice's wait strategies: what each costs in CPU
# against how precisely it sends. A CBR trace of 64-byte frames at 1k, 10k
# and 100k pps is replayed onto veth (afpacket) under three strategies:
#   busy    --spin 1s    spin on the clock until each send
#   hybrid  --spin 50us  sleep until 50 µs before a send, then spin
#   sleep   --spin 0     sleep until each send (timer slack 1 ns)
# and, the peer in the same run, tcpreplay with its default timer.
# CPU % is the replay process's user + system time over its wall time (all
# its threads; 100 % = one CPU). Precision is judged twice: sluice's own ε
# (send time − due time) and gaperr.py's |D_M − D_R| on a tcpdump capture
# in the sink namespace. The strategies alternate within each round.
#
#   bench/wait_cost.sh        RUNS=3 SECS=3 RATES="1000 10000 100000"
#
# Needs root, tcpdump, tcpreplay, python3. Results: stdout and $WORK/wait-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/wait-results.txt; : > "$results"
sluice=${SLUICE:-$root/target/release/sluice}
runs=${RUNS:-3} secs=${SECS:-3}
read -r -a rates <<< "${RATES:-1000 10000 100000}"
ns=sluice-wait
[ -x "$sluice" ] || (cd "$root" && cargo build --release -q)
down() { ip link del wta 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; }
down; trap down EXIT
ip netns add "$ns"
ip link add wta type veth peer name wtb
ip link set wtb netns "$ns"
sysctl -qw net.ipv6.conf.wta.disable_ipv6=1 || true
ip netns exec "$ns" sysctl -qw net.ipv6.conf.wtb.disable_ipv6=1 || true
ip link set wta up; ip netns exec "$ns" ip link set wtb up
say() { echo "$*" | tee -a "$results"; }

# cpu CMD...: runs CMD, prints its children's CPU time over wall time, %.
cpu() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.monotonic() - t
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{100 * (r.ru_utime + r.ru_stime) / wall:.1f}")
PY
}

one() { # rate strategy spin -> one line
  local rate=$1 name=$2 spin=$3 cap=$work/wait_cap.pcap trace=$work/wait_$1.pcap
  ip netns exec "$ns" tcpdump -i wtb --time-stamp-precision=nano -B 262144 \
    -s 96 -U -w "$cap" -q 2>/dev/null &
  local pid=$!; sleep 1
  local c
  if [ "$name" = tcpreplay ]; then
    c=$(cpu tcpreplay -q -i wta "$trace")
    echo '{"eps": {"percentiles": {"p50_ns": "-", "p99_ns": "-"}}}' > "$work/wait.json"
  else
    c=$(cpu "$sluice" replay "$trace" --to afpacket:wta --spin "$spin" -q --summary-json "$work/wait.json")
  fi
  sleep 1; kill -INT $pid; wait $pid 2>/dev/null || true
  python3 - "$work/wait.json" "$rate" "$name" "$c" "$(python3 "$here/gaperr.py" "$trace" "$cap" --oneline)" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = s['eps']['percentiles']
g = dict(kv.split('=') for kv in sys.argv[5].split())
print(f"rate={sys.argv[2]} wait={sys.argv[3]} cpu_pct={sys.argv[4]} "
      f"eps_p50_ns={p['p50_ns']} eps_p99_ns={p['p99_ns']} "
      f"gap_p50_ns={g.get('p50_ns')} gap_p99_ns={g.get('p99_ns')} lost={g.get('lost')}")
PY
}

say "== wait strategies: CPU against precision (afpacket on veth, 64-byte CBR) =="
say "$("$sluice" doctor --floor 1s | grep -E 'platform floor' || true)"
for rate in "${rates[@]}"; do
  python3 "$here/mktrace.py" "$work/wait_$rate.pcap" $((rate * secs)) 64 $((1000000000 / rate)) > /dev/null
done
for _ in $(seq "$runs"); do
  for rate in "${rates[@]}"; do
    for w in "busy 1s" "hybrid 50us" "sleep 0" "tcpreplay -"; do
      set -- $w
      say "$(one "$rate" "$1" "$2")"
    done
  done
done
