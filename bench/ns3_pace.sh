#!/usr/bin/env bash
# Caliper §4.5 / Fig. 10 with a real simulator: an ns-3 node's TCP sender
# (python/examples/ns3_pace.py, realtime scheduler, FdNetDevice) reaches a
# real kernel receiver through `sluice pace` at a constant gap, and the
# same sender runs again purely in ns-3 over a point-to-point link of the rate
# that gap gives a full frame. The inter-arrival times of full-size
# segments at the two receivers are compared: percentiles, KS and
# Wasserstein distances (a judge below, numpy-free), the measured side from
# tcpdump.
#
#   bench/ns3_pace.sh              GAP_US=200 BYTES=2000000 SIM=1 FIGS=DIR
#   VIA=inject bench/ns3_pace.sh   the same sender through `sluice inject`
#
# With FIGS, `sluice analyze --gaps --plot` draws the two CDFs overlaid.
#
# VIA=inject: python/examples/ns3_inject.py stamps each frame the node
# sends with its simulated time; inject sends it at base + that time, to
# the real addresses of a node map (Caliper's table), and hands the
# receiver's answers back into the simulation. ns-3 paces its TCP at the
# rate GAP_US gives a full frame. The row then compares each measured gap
# with the simulated one it stands for (bench/caliper_judge.py --gaps):
# |D_R - D_M| percentiles, where D_R is ns-3's own gap. Frames are
# described 3 ms ahead of their time and handed to the TX thread LEAD (1ms)
# ahead: ns-3's realtime scheduler, the bridge and inject share the CPUs.
#
# Topology: namespace slcn3PID holds pace's TAP slcapn (no address: the ns-3
# node owns 10.77.0.1 and the TAP's MAC) and veth slcn3a; slcn3sinkPID holds slcn3b
# (10.77.0.2) and the receiver (python/examples/tcp_sink.py). Needs root,
# tcpdump, python3 and `pip install ns3` (3.44). Prints a header and one row.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sluice=${SLUICE:-$root/target/release/sluice}
work=${WORK:-/tmp/sluice-bench}/ns3; mkdir -p "$work"
gap=${GAP_US:-200} bytes=${BYTES:-2000000} sim=${SIM:-1}
[ -n "${SLUICE:-}" ] || (cd "$root" && cargo build --release -q)

pids=()
# The two namespaces carry this script's PID and must be free (the
# addresses and interfaces inside them are private to them); cleanup
# deletes only them.
# shellcheck source=bench/subnet.sh
. "$here/subnet.sh"
ns_tx=slcn3$(($$ % 100000)) ns_rx=slcn3sink$(($$ % 100000))
names_free "$ns_tx" "$ns_rx"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  ip netns del "$ns_tx" 2>/dev/null || true
  ip netns del "$ns_rx" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$ns_tx"
ip netns add "$ns_rx"
ip link add slcn3a netns "$ns_tx" type veth peer name slcn3b netns "$ns_rx"
ip netns exec "$ns_rx" sh -c 'sysctl -qw net.ipv6.conf.all.disable_ipv6=1; ip link set slcn3b address 02:00:00:00:77:02;
  ip addr add 10.77.0.2/24 dev slcn3b; ip link set slcn3b up; ip link set lo up'
ip netns exec "$ns_tx" sh -c 'sysctl -qw net.ipv6.conf.all.disable_ipv6=1; sysctl -qw net.ipv6.conf.default.disable_ipv6=1;
  ip link set slcn3a up; ip link set lo up; ip tuntap add dev slcapn mode tap; ip link set slcapn up'

ip netns exec "$ns_rx" python3 "$root/python/examples/tcp_sink.py" 10.77.0.2 5001 180 > "$work/sink.json" &
sink_pid=$!; pids+=("$sink_pid")
ip netns exec "$ns_rx" tcpdump -i slcn3b -Q in -w "$work/measured.pcap" -B 65536 --time-stamp-precision nano -q 2>/dev/null &
dump_pid=$!; pids+=("$dump_pid")
# Realtime ns-3 for long enough to finish at the paced rate (plus its ~20 s
# of loading before the clock starts).
secs=$(python3 -c "print(max(5, 3 + 4 * $bytes * 8 / (1448 * 8 / ($gap * 1e-6))))")

if [ "${VIA:-pace}" = inject ]; then
  mac=$(ip netns exec "$ns_tx" cat /sys/class/net/slcn3a/address)
  printf 'node,sim_ip,real_ip,real_mac\n0,10.1.1.1,10.77.0.1,%s\n1,10.1.1.2,10.77.0.2,02:00:00:00:77:02\n' "$mac" \
    > "$work/nodes.csv"
  # The receiver's work (TCP, ACKs, the capture) on CPU 0, as a separate
  # host would do it, not in the TX thread's send on the last CPU.
  ip netns exec "$ns_rx" sh -c "echo ${RPS:-1} > /sys/class/net/slcn3b/queues/rx-0/rps_cpus"
  rm -f "$work/i.sock"
  ip netns exec "$ns_tx" "$sluice" inject --listen "unix:$work/i.sock" --to afpacket:slcn3a --return slcn3a \
    --sessions 1 --lead "${LEAD:-1ms}" -q --summary-json "$work/inject.json" 2> "$work/inject.err" &
  inject_pid=$!; pids+=("$inject_pid")
  for _ in $(seq 100); do [ -S "$work/i.sock" ] && break; sleep 0.1; done
  mbps=$(python3 -c "print(round(1514 * 8 / $gap, 3))")
  timeout 300 python3 "$root/python/examples/ns3_inject.py" --connect "unix:$work/i.sock" \
    --map "$work/nodes.csv" --node 0 --to 1:5001 --bytes "$bytes" --seconds "$secs" \
    --pacing-mbps "$mbps" --lead-ms 3 --log "$work/requested.txt" > "$work/ns3.json" 2> "$work/ns3.err" \
    || { echo "ns3_inject.py failed:"; grep -v -i 'materialize\|runStaticInit' "$work/ns3.err" | tail -20; exit 1; }
  wait "$sink_pid" || { echo "the receiver failed"; exit 1; }
  wait "$inject_pid" || { echo "inject failed"; tail -5 "$work/inject.err"; exit 1; }
  sleep 0.5
  kill -INT "$dump_pid" 2>/dev/null || true
  wait "$dump_pid" 2>/dev/null || true
  got=$(python3 -c "import json; print(json.load(open('$work/sink.json'))['bytes'])")
  read -r p50 p95 p99 _ _ pairs <<< "$(python3 "$here/caliper_judge.py" "$work/measured.pcap" \
    --gaps "$work/requested.txt" --min-size 0)"
  acks=$(python3 -c "import json; a=json.load(open('$work/ns3.json'))['acks']; print(','.join('%s=%d' % kv for kv in sorted(a.items())))")
  returned=$(python3 -c "import json; print(json.load(open('$work/ns3.json'))['returned'])")
  echo "via     gap_us  bytes_ok  described  returned  pairs  err_p50_ns  err_p95_ns  err_p99_ns  acks"
  printf '%-6s  %-6s  %-8s  %9s  %8s  %5s  %10s  %10s  %10s  %s\n' inject "$gap" \
    "$([ "$got" = "$bytes" ] && echo yes || echo "NO($got)")" \
    "$(python3 -c "import json; print(json.load(open('$work/ns3.json'))['described'])")" \
    "$returned" "$pairs" "$p50" "$p95" "$p99" "$acks"
  if [ -n "${FIGS:-}" ]; then
    mkdir -p "$FIGS"
    "$sluice" analyze "$work/measured.pcap" --gaps "$work/requested.txt" --plot "$FIGS/fig10-ns3-inject.svg" \
      --json > "$work/fig10.json"
    echo "overlay: $FIGS/fig10-ns3-inject.svg"
  fi
  exit 0
fi

ip netns exec "$ns_tx" "$sluice" pace --tap slcapn --to afpacket:slcn3a --gap "${gap}us" --return -q \
  --summary-json "$work/pace.json" 2> "$work/pace.err" &
pace_pid=$!; pids+=("$pace_pid")
sleep 1
ip netns exec "$ns_tx" timeout 300 python3 "$root/python/examples/ns3_pace.py" --iface slcapn --ip 10.77.0.1/24 \
  --to 10.77.0.2:5001 --bytes "$bytes" --seconds "$secs" > "$work/ns3.json" 2> "$work/ns3.err" \
  || { echo "ns3_pace.py failed:"; grep -v -i 'materialize\|runStaticInit' "$work/ns3.err" | tail -20; exit 1; }
wait "$sink_pid" || { echo "the receiver failed"; exit 1; }
sleep 0.5
kill -INT "$pace_pid" 2>/dev/null || true
wait "$pace_pid" || true
got=$(python3 -c "import json; print(json.load(open('$work/sink.json'))['bytes'])")

if [ "$sim" = 1 ]; then
  python3 "$root/python/examples/ns3_pace.py" --simulate "$gap" --to 10.77.0.2:5001 --bytes "$bytes" \
    --seconds 60 --pcap "$work/sim" > /dev/null 2> "$work/sim.err" \
    || { echo "simulation failed"; tail -5 "$work/sim.err"; exit 1; }
fi
python3 - "$work/measured.pcap" "$work/sim-1-0.pcap" "$gap" "$got" "$bytes" "$sim" <<'PY'
import struct, sys
def iats(path):
    """Gaps (us) between consecutive full-size TCP segments (>= 1400 B;
    smaller frames, ACKs in the simulated capture, are skipped)."""
    b = open(path, "rb").read()
    nano = b[:4] in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    o, last, out = 24, None, []
    while o + 16 <= len(b):
        s, frac, cl, wl = struct.unpack("<IIII", b[o:o + 16])
        t = s * 1e6 + (frac / 1e3 if nano else frac)
        if wl >= 1400:
            if last is not None:
                out.append(t - last)
            last = t
        o += 16 + cl
    return sorted(out)
def pct(v, q):
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")
def ks(a, b):
    i = j = 0; d = 0.0
    while i < len(a) and j < len(b):
        if a[i] <= b[j]: i += 1
        else: j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    return d
meas = iats(sys.argv[1])
sim = iats(sys.argv[2]) if sys.argv[6] == "1" else []
if sim:
    # The simulated gaps as requested ones, in order, for the overlay.
    b = open(sys.argv[2], "rb").read()
    o, ts = 24, []
    while o + 16 <= len(b):
        s, frac, cl, wl = struct.unpack("<IIII", b[o:o + 16])
        if wl >= 1400:
            ts.append(s * 10**9 + frac * 1000)
        o += 16 + cl
    with open(sys.argv[2] + ".gaps", "w") as f:
        f.writelines("%d\n" % (y - x) for x, y in zip(ts, ts[1:]))
# The simulated link spaces frames exactly (an atom at the gap): KS is then
# at least the measured mass on either side of it, however close. The
# Wasserstein distance (mean gap between matched quantiles, us) says how
# far apart the two CDFs lie.
def w1(a, b):
    n = 1000
    return sum(abs(pct(a, (i + .5) / n) - pct(b, (i + .5) / n)) for i in range(n)) / n
both = sim and meas
print("gap_us  bytes_ok  meas_n  meas_p25  meas_p50  meas_p75  meas_p95  sim_n  sim_p50  sim_p95  ks     w1_us")
print("%-6s  %-8s  %6d  %8.2f  %8.2f  %8.2f  %8.2f  %5d  %7.2f  %7.2f  %-5s  %s" % (
    sys.argv[3], "yes" if sys.argv[4] == sys.argv[5] else "NO(%s)" % sys.argv[4], len(meas),
    pct(meas, .25), pct(meas, .5), pct(meas, .75), pct(meas, .95), len(sim), pct(sim, .5),
    pct(sim, .95), "%.3f" % ks(meas, sim) if both else "-", "%.2f" % w1(meas, sim) if both else "-"))
PY
if [ "$sim" = 1 ] && [ -n "${FIGS:-}" ]; then
  # Fig. 10: simulated and measured gap CDFs overlaid by sluice's analyzer.
  mkdir -p "$FIGS"
  "$sluice" analyze "$work/measured.pcap" --gaps "$work/sim-1-0.pcap.gaps" --plot "$FIGS/fig10-ns3-pace.svg" \
    --json > "$work/fig10.json"
  echo "overlay: $FIGS/fig10-ns3-pace.svg"
fi
