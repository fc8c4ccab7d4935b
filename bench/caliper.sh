#!/usr/bin/env bash
# Caliper §4.3 on veth: live iperf3 TCP paced at constant gaps, sluice
# `pace` against the kernel's tbf on the same path, in one run. For each
# gap: p95 (and p50, p99) of |D_R - D_M| over consecutive full-size frames
# captured in the sink namespace, and iperf3's goodput against what the gap
# allows (1448 payload bytes per gap).
#
#   bench/caliper.sh [GAP_US ...]     default: the gaps of 1514-byte frames
#                                     at 10, 50, 100, 200 Mbit/s
#
# Topology (made and removed here): TAP slcap0 (10.77.0.1, the sender's
# address) -> sluice pace -> veth slca <-> slcb in namespace slcsink
# (10.77.0.2, iperf3 server); --return carries the ACKs back into the TAP.
# For tbf, the address moves to slca and tbf shapes it at the same rate.
# iperf3 runs on CPU 0, leaving the TX thread's CPU to it. Needs root,
# iperf3, tcpdump, python3. SLUICE=path overrides the binary; SECS=3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sluice=${SLUICE:-$root/target/release/sluice}
secs=${SECS:-3}
work=$(mktemp -d)
[ -n "${SLUICE:-}" ] || (cd "$root" && cargo build --release -q)

down() {
  ip link del slca 2>/dev/null || true
  ip link del slcap0 2>/dev/null || true
  ip netns del slcsink 2>/dev/null || true
}
cleanup() { pkill -f 'iperf3 -s -1' 2>/dev/null || true; down; rm -rf "$work"; }
trap cleanup EXIT
down
ip netns add slcsink
ip link add slca type veth peer name slcb
ip link set slcb netns slcsink
sysctl -qw net.ipv6.conf.slca.disable_ipv6=1
ip link set slca address 02:00:00:00:77:01 up
ip netns exec slcsink sh -c 'sysctl -qw net.ipv6.conf.slcb.disable_ipv6=1; ip link set slcb address 02:00:00:00:77:02; ip addr add 10.77.0.2/24 dev slcb; ip link set slcb up; ip link set lo up'
ip tuntap add dev slcap0 mode tap
sysctl -qw net.ipv6.conf.slcap0.disable_ipv6=1
ip link set slcap0 address 02:00:00:00:77:03
ip addr add 10.77.0.1/24 dev slcap0
ip link set slcap0 up

# run NAME: iperf3 for $secs s while tcpdump captures the sender's frames
# on slcb; leaves $work/NAME.pcap and $work/NAME.json (iperf3's report).
run() {
  ip netns exec slcsink taskset -c 0 iperf3 -s -1 -D
  sleep 0.3
  ip netns exec slcsink tcpdump -i slcb -w "$work/$1.pcap" -B 262144 --time-stamp-precision nano -q \
    src 10.77.0.1 and tcp 2>/dev/null &
  local tp=$!
  sleep 0.7
  taskset -c 0 iperf3 -c 10.77.0.2 -t "$secs" -J > "$work/$1.json" || true
  sleep 0.3
  kill -INT "$tp"; wait "$tp" 2>/dev/null || true
}

# judge NAME GAP_NS: "p50 p95 p99 goodput_mbps" of a run.
judge() {
  "$sluice" analyze "$work/$1.pcap" --gap "${2}ns" --min-size 1514 --json > "$work/$1.err.json"
  python3 - "$work/$1.err.json" "$work/$1.json" <<'P'
import json, sys
e = json.load(open(sys.argv[1]))
try:
    g = json.load(open(sys.argv[2]))['end']['sum_received']['bits_per_second'] / 1e6
except Exception:
    g = float('nan')
print(e['p50_ns'], e['p95_ns'], e['p99_ns'], f'{g:.1f}')
P
}

gaps=("$@")
[ ${#gaps[@]} -gt 0 ] || gaps=(1211.2 242.24 121.12 60.56)
echo "gap_us  allowed_mbps  sluice_p50 sluice_p95 sluice_p99 sluice_mbps  tbf_p50 tbf_p95 tbf_p99 tbf_mbps  p95_ratio"
for g in "${gaps[@]}"; do
  gap_ns=$(python3 -c "print(round($g * 1000))")
  allowed=$(python3 -c "print(round(1448 * 8 / ($gap_ns / 1e9) / 1e6, 1))")
  # sluice pace: the TAP holds the address, --return closes the loop.
  "$sluice" pace --tap slcap0 --to afpacket:slca --gap "${gap_ns}ns" --return -q \
    --duration "$((secs + 3))s" > "$work/pace.out" 2>&1 &
  local_pid=$!
  sleep 0.3
  run sluice
  wait "$local_pid" || true
  s=$(judge sluice "$gap_ns")
  # tbf at the same rate on the same veth, the kernel's own path.
  ip addr del 10.77.0.1/24 dev slcap0
  ip addr add 10.77.0.1/24 dev slca
  rate_kbit=$(python3 -c "print(round(1514 * 8 / ($gap_ns / 1e9) / 1e3))")
  tc qdisc replace dev slca root tbf rate "${rate_kbit}kbit" burst 1514 latency 20ms
  run tbf
  tc qdisc del dev slca root
  ip addr del 10.77.0.1/24 dev slca
  ip addr add 10.77.0.1/24 dev slcap0
  t=$(judge tbf "$gap_ns")
  ratio=$(python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split(); print(round(int(a[1]) / max(1, int(b[1])), 3))' "$s" "$t")
  printf '%-7s %-13s %s  %s  %s\n' "$g" "$allowed" "$s" "$t" "$ratio"
done
