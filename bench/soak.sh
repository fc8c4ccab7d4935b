#!/usr/bin/env bash
# Soak run (not in CI): replay at 100 kpps to veth for DURATION seconds
# (default 3600) and check that nothing drifts or grows:
#   - the achieved rate over every WINDOW (default 600 s) is within
#     ±0.01 % of 100 kpps (from the --stats-json lines);
#   - RSS after the first minute grows by less than 1 MiB;
#   - every frame sent is received by the sink veth.
#
#   sudo bench/soak.sh [DURATION [WINDOW]]
#
# Needs root, python3. Results go to stdout and $WORK/soak-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
sluice=${SLUICE:-$root/target/release/sluice}
duration=${1:-3600} window=${2:-600}
results=$work/soak-results.txt

(cd "$root" && cargo build --release -q)
# netns.sh (vendored from shared/bench) puts 10.99.0.1/24 on va in this
# namespace: refuse a host that routes that /24 or already has the names.
# shellcheck source=bench/subnet.sh
. "$here/subnet.sh"
SUBNET=10.99.0 free_subnet netns_net || exit 1
names_free va vb sink || exit 1
"$here/netns.sh" up
trap '"$here/netns.sh" down' EXIT
sysctl -qw net.ipv6.conf.va.disable_ipv6=1 || true
rx() { ip netns exec sink cat /sys/class/net/vb/statistics/rx_packets; }

# One second of 64-byte frames 10 µs apart, looped: 100 kpps.
[ -f "$work/soak.pcap" ] || python3 "$here/mktrace.py" "$work/soak.pcap" 100000 64 10000
rx0=$(rx)
"$sluice" replay "$work/soak.pcap" --to afpacket:va --loop 0 --duration "${duration}s" -q \
  --stats-json "$work/soak-stats.jsonl" --summary-json "$work/soak-summary.json" &
pid=$!
: > "$work/soak-rss.txt"
while kill -0 "$pid" 2>/dev/null; do
  awk -v t="$(date +%s)" '/VmRSS/ {print t, $2}' "/proc/$pid/status" >> "$work/soak-rss.txt" 2>/dev/null || true
  sleep 10
done
wait "$pid" || true
sleep 1
received=$(( $(rx) - rx0 ))

python3 - "$work" "$window" "$received" <<'EOF' | tee "$results"
import json, sys
work, window, received = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = [json.loads(l) for l in open(f"{work}/soak-stats.jsonl")]
summary = json.load(open(f"{work}/soak-summary.json"))
target = 100_000.0
worst, windows = 0.0, []
start_t, start_p = 0.0, 0
for l in lines:
    if l["t"] - start_t >= window:
        rate = (l["packets"] - start_p) / (l["t"] - start_t)
        err = (rate - target) / target * 100
        windows.append(err)
        worst = max(worst, abs(err))
        start_t, start_p = l["t"], l["packets"]
rss = [tuple(map(int, r.split())) for r in open(f"{work}/soak-rss.txt") if r.strip()]
t0 = rss[0][0] if rss else 0
later = [kib for t, kib in rss if t - t0 >= 60]
growth_kib = (max(later) - min(later)) if later else 0
sent = summary["packets"]
print(f"duration {summary['duration_s']:.0f} s, sent {sent}, received {received}, "
      f"pps {summary['pps']:.1f}, eps p99 {summary['eps']['percentiles']['p99_ns']} ns")
print("rate error per window (%): " + " ".join(f"{e:+.4f}" for e in windows))
print(f"worst window {worst:.4f} % (target ±0.01 %): {'ok' if worst <= 0.01 else 'MISSED'}")
print(f"RSS growth after the first minute {growth_kib} KiB (target < 1024): "
      f"{'ok' if growth_kib < 1024 else 'MISSED'}")
print(f"every frame received: {'ok' if received == sent else f'MISSED ({sent - received} lost)'}")
EOF
