#!/usr/bin/env bash
# Caliper §4 on veth: live iperf3 traffic (TCP and UDP) paced at constant
# and Poisson gaps by sluice `pace`, side by side in one run with the
# kernel's tbf, fq with iperf3's --fq-rate, and iperf3's own -b pacing on
# the same path. Per row: p50/p95/p99 of |D_R - D_M| over consecutive
# full-size frames captured in the sink namespace (bench/caliper_judge.py,
# not sluice's analyzer), the goodput, and for Poisson the KS distance of
# the captured gaps from the requested exponential law (s_ks); for every
# drawn law (poisson, pareto, spikebump) the KS distance between the
# requested and the measured gaps, strict / within 1 µs (ks_rm, sluice's
# analyzer; a spike's atom counts whole in the strict one). None of the
# peers paces drawn gaps: those rows have sluice alone.
#
#   bench/caliper.sh                  all rows
#   RATES="10 50 100 200"             Mbit/s of 1514-byte frames (default)
#   GAPS="20"                         requested mean gaps in µs instead
#   SOURCES="tcp udp" LAWS="constant poisson" PEERS="tbf fq app"
#   (LAWS also pareto and spikebump: drawn laws, judged gap by gap; and
#   tick: the constant gap through `pace --tick TICK_US` (default 122, NIST
#   Net's timer), Caliper Fig. 8; s_ks is then "together/on_ticks", the
#   shares of gaps inside one tick and at whole ticks)
#   FIGS=DIR                          keep each drawn law's CDF overlay
#   SECS=3 (seconds per run), SLUICE=path (the binary)
#   SINK=afpacket (default) or xdp: how pace sends onto the veth
#   PACE_ARGS="--rt": more options for sluice pace; PACE_OUT=FILE keeps
#   what pace printed (its summary) there
#   SNAPLEN=96: bytes captured per frame (headers: the judges read times
#   and original lengths; whole frames cost the capture a tenth of a CPU,
#   which on two vCPUs TCP misses)
#   CAPTURE=0: tcpdump captures nothing (goodput alone, TCP only): on two
#   vCPUs the capture's own CPU time is part of what TCP gets
#
# Topology (made and removed here): TAP slcapN (NET.1, the sender's
# address) -> sluice pace -> veth slcaN <-> slcbN in namespace slcsinkN
# (NET.2, iperf3 server); --return carries ACKs back into the TAP.
# For the peers the address moves to slcaN and the qdisc (or iperf3) paces.
# N is this script's PID; NET is a /24 no route or address of the host
# uses (bench/subnet.sh: 10.77.0 where free, else the next free one;
# SUBNET=a.b.c to give it, SLUICE_TEST_SUBNETS for the candidates); the
# run refuses to start, naming the clash, when none is free or a name is
# taken, and says on stderr which it uses.
# UDP sources offer 10 % more than the paced rate, so the pacer always has
# a frame waiting (the excess is dropped at its queue limit). iperf3 runs
# on CPU 0, leaving the TX thread's CPU to it. Needs root, iperf3, tcpdump,
# python3. ratio = sluice p95 / best peer p95 (target <= 1/3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
sluice=${SLUICE:-$root/target/release/sluice}
secs=${SECS:-3}
sink=${SINK:-afpacket}
[ -n "${SLUICE:-}" ] || (cd "$root" && cargo build --release -q)
# shellcheck source=bench/subnet.sh
. "$here/subnet.sh"
sfx=$(($$ % 100000))
veth=slca$sfx sinkif=slcb$sfx tap=slcap$sfx sinkns=slcsink$sfx
free_subnet net 10.77.0
names_free "$veth" "$sinkif" "$tap" "$sinkns"
src_ip=$net.1 dst_ip=$net.2
echo "caliper.sh: subnet $net.0/24 ($tap $src_ip, $sinkif $dst_ip in $sinkns)" >&2
work=$(mktemp -d)

# Only what this run made (its names were free when it started).
down() {
  ip link del "$veth" 2>/dev/null || true
  ip link del "$tap" 2>/dev/null || true
  ip netns del "$sinkns" 2>/dev/null || true
}
# iperf3 -D daemonizes: its pid file says which process this script
# started, and only that one is ended.
stop_server() {
  local pid
  pid=$(cat "$work/iperf3.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || true
  rm -f "$work/iperf3.pid"
}
cleanup() {
  stop_server
  down
  if [ -n "${KEEP:-}" ]; then echo "runs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
ip netns add "$sinkns"
ip link add "$veth" type veth peer name "$sinkif"
ip link set "$sinkif" netns "$sinkns"
sysctl -qw "net.ipv6.conf.$veth.disable_ipv6=1"
ip link set "$veth" address 02:00:00:00:77:01 up
ip netns exec "$sinkns" sh -c "sysctl -qw net.ipv6.conf.$sinkif.disable_ipv6=1; ip link set $sinkif address 02:00:00:00:77:02; ip addr add $dst_ip/24 dev $sinkif; ip link set $sinkif up; ip link set lo up"
# The receiver's work (TCP, ACKs, the capture) on CPU 0 (RPS mask, RPS=0
# for none), as a separate host would do it, not inside the sender's send
# on the TX CPU.
ip netns exec "$sinkns" sh -c "echo ${RPS:-1} > /sys/class/net/$sinkif/queues/rx-0/rps_cpus"
ip tuntap add dev "$tap" mode tap
sysctl -qw "net.ipv6.conf.$tap.disable_ipv6=1"
ip link set "$tap" address 02:00:00:00:77:03
ip addr add "$src_ip/24" dev "$tap"
ip link set "$tap" up

# wait_until WHAT CMD...: polls CMD (its output non-empty, or its status
# 0 for grep -q) for up to 30 s.
wait_until() {
  local what=$1 i; shift
  for i in $(seq 300); do
    if [ "$1" = grep ]; then "$@" && return 0; else [ -n "$("$@" 2>/dev/null)" ] && return 0; fi
    sleep 0.1
  done
  echo "caliper.sh: $what: not within 30 s" >&2
  return 1
}

# run NAME IPERF_ARGS...: iperf3 for $secs s while tcpdump captures every
# frame the sender emits on the sink side; leaves $work/NAME.pcap and NAME.json.
run() {
  local name=$1; shift
  stop_server
  ip netns exec "$sinkns" taskset -c 0 iperf3 -s -1 -D -I "$work/iperf3.pid"
  # Wait for the listener and for tcpdump's "listening on" rather than for
  # fixed times: a loaded machine takes longer to start both.
  wait_until "iperf3 listening" ip netns exec "$sinkns" ss -Hltn 'sport = :5201'
  local filter="ether src 02:00:00:00:77:03 or src host $src_ip"
  # CAPTURE=0: a filter nothing matches (IEEE's local experimental type).
  [ "${CAPTURE:-1}" = 0 ] && filter='ether proto 0x88b5'
  ip netns exec "$sinkns" tcpdump -i "$sinkif" -w "$work/$name.pcap" -s "${SNAPLEN:-96}" -B 262144 --time-stamp-precision nano -q \
    "$filter" 2> "$work/$name.tcpdump.err" &
  local tp=$!
  wait_until "tcpdump listening" grep -q "listening on" "$work/$name.tcpdump.err"
  taskset -c 0 iperf3 -c "$dst_ip" -t "$secs" -J "$@" > "$work/$name.json" 2> "$work/$name.iperf.err" || true
  sleep 0.3
  kill -INT "$tp"; wait "$tp" 2>/dev/null || true
}

# to_tap / to_veth: where the sender's address lives.
to_veth() { ip addr del "$src_ip/24" dev "$tap"; ip addr add "$src_ip/24" dev "$veth"; }
to_tap() { ip addr del "$src_ip/24" dev "$veth"; ip addr add "$src_ip/24" dev "$tap"; }

# judge NAME SRC ARGS...: "p50 p95 p99 mbps ks pairs" of a run.
judge() {
  local name=$1 src=$2; shift 2
  local ip=()
  [ "$src" = tcp ] && ip=(--iperf "$work/$name.json")
  if [ "${CAPTURE:-1}" = 0 ]; then
    # No capture to judge: the goodput alone.
    python3 -c 'import json,sys; print("- - -", round(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"] / 1e6, 1), "- -")' "$work/$name.json"
    return
  fi
  python3 "$here/caliper_judge.py" "$work/$name.pcap" "${ip[@]}" "$@"
}

# iperf3 arguments of source SRC offering RATE_BPS of payload.
offer() {
  if [ "$1" = udp ]; then echo "-u -l 1472 -b $2"; else [ "$2" = 0 ] || echo "-b $2"; fi
}

read -r -a sources <<< "${SOURCES:-tcp udp}"
read -r -a laws <<< "${LAWS:-constant poisson}"
read -r -a peers <<< "${PEERS:-tbf fq app}"
if [ -n "${GAPS:-}" ]; then
  read -r -a gaps <<< "$GAPS"
else
  gaps=()
  for r in ${RATES:-10 50 100 200}; do gaps+=("$(python3 -c "print(round(1514 * 8 / $r, 3))")"); done
fi

col() { printf '%-9s ' "$@"; }
col src law gap_us mbps_max s_p50 s_p95 s_p99 s_mbps s_ks ks_rm tbf_p95 tbf_mbps fq_p95 fq_mbps app_p95 app_mbps ratio; echo
for src in "${sources[@]}"; do
for law in "${laws[@]}"; do
for g in "${gaps[@]}"; do
  gap_ns=$(python3 -c "print(round($g * 1000))")
  # Payload rate the gap allows, and what a UDP source offers (10 % more).
  if [ "$src" = udp ]; then pay=1472; else pay=1448; fi
  allowed=$(python3 -c "print(round($pay * 8 / ($gap_ns / 1e9) / 1e6, 1))")
  udp_offer=$(python3 -c "print(round($pay * 8 / ($gap_ns / 1e9) * 1.1))")
  [ "$src" = udp ] && load=$udp_offer || load=0
  # sluice pace: the TAP holds the address, --return closes the loop.
  law_args=(--gap "${gap_ns}ns")
  judge_args=(--gap "$gap_ns")
  # Drawn laws (Caliper §4.2, Figs. 5, 6, 8): the gaps pace requested are
  # logged and judged one by one; FIGS=DIR keeps each run's requested and
  # measured gap CDFs overlaid (`sluice analyze --gaps --plot`).
  ipd=
  logged=
  case $law in
    poisson) ipd='{dist: poisson}' ;;
    pareto) ipd='{dist: pareto, shape: 1.5}' ;;
    # A spike at a fifth of the mean gap and a bump at twice it (±10 %),
    # scaled to the mean: Caliper's spike-bump law, as a mixture.
    spikebump) ipd='{dist: mixture, of: [{weight: 0.6, dist: constant, mean: 20us}, {weight: 0.4, dist: normal, mean: 200us, std: 20us}]}' ;;
  esac
  if [ "$law" = tick ]; then
    tick_ns=$((${TICK_US:-122} * 1000))
    law_args+=(--tick "${tick_ns}ns" --log-requested "$work/requested.txt")
    judge_args=(--gaps "$work/requested.txt" --tick "$tick_ns")
    logged=1
  fi
  if [ -n "$ipd" ]; then
    logged=1
    printf 'seed: 11\nduration: 1h\nrate: %s\nipd: %s\n' "$(python3 -c "print(1e9 / $gap_ns)")" "$ipd" > "$work/ipd.yaml"
    law_args=(--ipd "$work/ipd.yaml" --log-requested "$work/requested.txt")
    judge_args=(--gaps "$work/requested.txt")
    [ "$law" = poisson ] && judge_args+=(--ks-mean "$gap_ns")
  fi
  # shellcheck disable=SC2086
  "$sluice" pace --tap "$tap" --to "$sink:$veth" "${law_args[@]}" --return -q ${PACE_ARGS:-} \
    --duration "$((secs + 60))s" > "$work/pace.out" 2>&1 &
  pace_pid=$!
  # A TAP has no carrier until a process opens it: wait for pace's.
  for _ in $(seq 300); do ip link show "$tap" | grep -q NO-CARRIER || break; sleep 0.1; done
  # shellcheck disable=SC2046
  run sluice $(offer "$src" "$load")
  # The transfer is over: stop pace (--duration is only a safety net).
  kill -INT "$pace_pid" 2>/dev/null || true
  wait "$pace_pid" || true
  [ -n "${PACE_OUT:-}" ] && cat "$work/pace.out" >> "$PACE_OUT"
  read -r s50 s95 s99 smb sks _ <<< "$(judge sluice "$src" "${judge_args[@]}")"
  ks_rm=-
  if [ -n "$logged" ]; then
    # KS between the requested and measured gaps (sluice's analyzer), and
    # the overlay under FIGS.
    plot=()
    [ -n "${FIGS:-}" ] && mkdir -p "$FIGS" && plot=(--plot "$FIGS/cdf-$src-$law-$g.svg")
    ks_rm=$("$sluice" analyze "$work/sluice.pcap" --gaps "$work/requested.txt" --json "${plot[@]}" \
      | python3 -c 'import json,sys; v=json.load(sys.stdin); print("%.4f/%.4f" % (v["ks"], v["ks_1us"]))')
  fi
  t95=- tmb=- f95=- fmb=- a95=- amb=-
  if [ "$law" = constant ]; then
    rate_bps=$(python3 -c "print(round(1514 * 8 / ($gap_ns / 1e9)))")
    to_veth
    for peer in "${peers[@]}"; do
      case $peer in
        tbf)
          tc qdisc replace dev "$veth" root tbf rate "$((rate_bps / 1000))kbit" burst 1514 latency 20ms
          # shellcheck disable=SC2046
          run tbf $(offer "$src" "$load")
          read -r _ t95 _ tmb _ _ <<< "$(judge tbf "$src" --gap "$gap_ns")" ;;
        fq)
          # SO_MAX_PACING_RATE: fq paces any socket; where the kernel has
          # no fq, TCP still paces itself to it, UDP is not paced at all.
          if tc qdisc replace dev "$veth" root fq 2>/dev/null || [ "$src" = tcp ]; then
            # shellcheck disable=SC2046
            run fq $(offer "$src" "$load") --fq-rate "$rate_bps"
            read -r _ f95 _ fmb _ _ <<< "$(judge fq "$src" --gap "$gap_ns")"
          fi ;;
        app)
          # iperf3's own pacing at the allowed payload rate, its finest timer.
          # shellcheck disable=SC2046
          run app $(offer "$src" "$(python3 -c "print(round($pay * 8 / ($gap_ns / 1e9)))")") --pacing-timer 1
          read -r _ a95 _ amb _ _ <<< "$(judge app "$src" --gap "$gap_ns")" ;;
      esac
      tc qdisc del dev "$veth" root 2>/dev/null || true
    done
    to_tap
  fi
  ratio=$(python3 -c '
import sys
s, peers = sys.argv[1], [float(x) for x in sys.argv[2:] if x not in ("-", "-1")]
print(round(float(s) / max(1.0, min(peers)), 3) if peers and s != "-" else "-")' "$s95" "$t95" "$f95" "$a95")
  col "$src" "$law" "$g" "$allowed" "$s50" "$s95" "$s99" "$smb" "$sks" "$ks_rm" "$t95" "$tmb" "$f95" "$fmb" "$a95" "$amb" "$ratio"; echo
done
done
done
