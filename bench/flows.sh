#!/usr/bin/env bash
# Flow generation benchmark (FLOR ch. 6): packets/s against concurrent flows
# (1 and 2 TX threads, to null), memory per active flow, flow insertion
# rate, veth throughput with 2^16 flows next to trafgen, and FLOR's timing
# test (100 flows × 100 packets at 10 pps) judged from a tcpdump capture.
#
#   bench/flows.sh [all|scale|planners|insert|veth|csum|timing|records|payload|slow|timing10k]   (default: all;
#   timing10k, FLOR's 10 000-flow test, takes 17 minutes and is not in all;
#   TO=pcap runs it into a pcap file, as FLOR did, instead of through veth)
#
# Needs root, tcpdump, netsniff-ng (trafgen), python3. Results go to stdout
# and $WORK/flows-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
judges=$root/bench  # vendored copies of shared/bench, kept identical
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/flows-results.txt
sluice=${SLUICE:-$root/target/release/sluice}
sink_mac=02:00:00:00:00:99

(cd "$root" && cargo build --release -q)
# netns.sh (vendored from shared/bench) puts 10.99.0.1/24 on va in this
# namespace: refuse a host that routes that /24 or already has the names.
# shellcheck source=bench/subnet.sh
. "$here/subnet.sh"
SUBNET=10.99.0 free_subnet netns_net || exit 1
names_free va vb sink || exit 1
"$judges/netns.sh" up
trap '"$judges/netns.sh" down' EXIT
sysctl -qw net.ipv6.conf.va.disable_ipv6=1 || true

rx() { ip netns exec sink cat /sys/class/net/vb/statistics/rx_packets; }
say() { echo "$*" | tee -a "$results"; }
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }
meta() { # file flows packets-per-flow: all flows concurrent from t=0
  printf 'flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1, dport: 9, start: 0, packets: %d, pps: 1000, payload: 18, count: %d, step: {src: 1, sport: 1}}\n' "$3" "$2" > "$1"
}

scale() {
  say "== packets/s against concurrent flows, --to null --topspeed, 64-byte frames =="
  say "flows      packets    1_tx_pps    2_tx_pps   max_RSS_MiB  bytes/flow  stochastic_1_tx_pps"
  # Baseline RSS: one flow.
  meta "$work/f0.yaml" 1 4
  /usr/bin/time -f "%M" -o "$work/rss0" "$sluice" flows run "$work/f0.yaml" --to null --topspeed -q 2>/dev/null
  local base; base=$(cat "$work/rss0")
  for e in 0 4 8 12 16 20 24; do
    local n=$(( 1 << e )) p
    p=$(( 4000000 / n )); [ "$p" -lt 2 ] && p=2
    meta "$work/f$e.yaml" "$n" "$p"
    /usr/bin/time -f "%M" -o "$work/rss" "$sluice" flows run "$work/f$e.yaml" --to null --topspeed -q \
      --summary-json "$work/s1.json" 2>/dev/null
    "$sluice" flows run "$work/f$e.yaml" --to null --topspeed -q --threads 2 --summary-json "$work/s2.json" 2>/dev/null
    "$sluice" flows run "$work/f$e.yaml" --to null --topspeed -q --planner stochastic --summary-json "$work/s3.json" 2>/dev/null
    local rss; rss=$(cat "$work/rss")
    say "$(printf '2^%-6s %9d  %10s  %10s  %11s  %10s  %10s' "$e" $(( n * p )) \
      "$(json "$work/s1.json" "['pps']" | cut -d. -f1)" "$(json "$work/s2.json" "['pps']" | cut -d. -f1)" \
      $(( rss / 1024 )) "$(python3 -c "print(round(($rss-$base)*1024/$n) if $n > 1000 else '-')")" \
      "$(json "$work/s3.json" "['pps']" | cut -d. -f1)")"
  done
}

planners() {
  # FLOR §5.3: packets built by 1, 2 (and more, where the machine has the
  # cores: PLANNERS="1 2 4 8") planner threads, alternated, median of $RUNS.
  local e=${FLOWS_EXP:-20} ppf=${PPF:-16} runs=${RUNS:-3} list=${PLANNERS:-1 2}
  local n=$(( 1 << e ))
  say "== planner threads: 2^$e flows x $ppf packets, --to null --topspeed, 64-byte frames, median of $runs =="
  meta "$work/p.yaml" "$n" "$ppf"
  declare -A got
  for r in $(seq "$runs"); do
    for p in $list; do
      "$sluice" flows run "$work/p.yaml" --to null --topspeed -q --planners "$p" --threads "$p" \
        --summary-json "$work/p.json" 2>/dev/null
      got[$p]="${got[$p]:-} $(json "$work/p.json" "['pps']" | cut -d. -f1)"
    done
  done
  local base=""
  for p in $list; do
    local med; med=$(echo ${got[$p]} | tr ' ' '\n' | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
    [ -z "$base" ] && base=$med
    say "$(printf 'planners %-2s  pps %10s  x%.2f   runs:%s' "$p" "$med" "$(python3 -c "print($med/$base)")" "${got[$p]}")"
  done
}

insert() {
  say "== flow insertion: one-packet flows, activated, built and sent (--to null --topspeed) =="
  printf 'flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1, dport: 9, start: 0, packets: 1, payload: 18, count: 4000000, step: {src: 1, sport: 1}}\n' > "$work/ins.yaml"
  "$sluice" flows run "$work/ins.yaml" --to null --topspeed -q --summary-json "$work/i.json" 2>/dev/null
  say "meta-flow, 4M flows: $(json "$work/i.json" "['pps']" | cut -d. -f1) flows/s"
  python3 -c "
print('flows:')
for i in range(200000):
    print('  - {proto: udp4, src: 10.0.%d.%d, dst: 10.99.0.2, sport: %d, dport: 9, start: %d, packets: 1, payload: 18}' % (i // 256 % 256, i % 256, i % 60000 + 1, i))
" > "$work/standalone.yaml"
  /usr/bin/time -f "%e" -o "$work/t" "$sluice" flows run "$work/standalone.yaml" --to null --topspeed -q \
    --summary-json "$work/i2.json" 2>/dev/null
  say "standalone, 200k flow entries: $(json "$work/i2.json" "['pps']" | cut -d. -f1) flows/s once loaded; $(cat "$work/t") s in all with YAML parsing"
}

# sink_pps SESSION [ARGS...]: frames/s the sink counted for one run to va.
sink_pps() {
  local a b
  a=$(rx)
  "$sluice" flows run "$1" --to afpacket:va --dst-mac "$sink_mac" --topspeed -q "${@:2}" --summary-json "$work/v.json" 2>/dev/null
  b=$(rx)
  python3 -c "import json; s=json.load(open('$work/v.json')); print(round(($b-$a)/s['duration_s']))"
}

veth() {
  say "== veth, 64-byte frames, 2^16 concurrent flows, frames counted by the sink =="
  meta "$work/v16.yaml" 65536 16
  local a b s
  s=$(sink_pps "$work/v16.yaml")
  # trafgen: the same frame with a random 16-bit source port (~2^16 flows).
  cat > "$work/udp64r.cfg" <<'CFG'
{ 0x02,0x00,0x00,0x00,0x00,0x99, 0x02,0x00,0x00,0x00,0x00,0x01, 0x08,0x00,
  0x45,0x00, const16(50), drnd(2), 0x00,0x00, 64, 17, csumip(14,33),
  10,99,0,1, 10,99,0,2, drnd(2), const16(9), const16(30), const16(0), fill(0x00, 22) }
CFG
  local s0 e t
  a=$(rx); s0=$(date +%s.%N); trafgen --dev va --conf "$work/udp64r.cfg" --num 1000000 --cpus 1 >/dev/null 2>&1; e=$(date +%s.%N); b=$(rx)
  t=$(python3 -c "print(round(($b-$a)/($e-$s0)))")
  say "sluice 1 TX: $s pps; trafgen 1 cpu: $t pps; x$(python3 -c "print(f'{$s/$t:.2f}')")"
}

csum() { # checksum offload (--csum-offload) against checksums computed by sluice, alternated
  say "== checksum offload, veth (tx-checksumming $(ethtool -k va 2>/dev/null | awk '/^tx-checksumming/ {print $2}')), 2^16 flows x 16 packets, frames counted by the sink =="
  local pl r
  declare -A got=()
  for pl in 18 1400; do
    printf 'flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1, dport: 9, start: 0, packets: 16, pps: 1000, payload: %d, prefix: "GET / HTTP/1.1 Host: example.com", count: 65536, step: {src: 1, sport: 1}}\n' "$pl" > "$work/c$pl.yaml"
  done
  for r in 1 2 3; do
    for pl in 18 1400; do
      got[$pl-computed]+="$(sink_pps "$work/c$pl.yaml") "
      got[$pl-offload]+="$(sink_pps "$work/c$pl.yaml" --csum-offload) "
    done
  done
  for pl in 18 1400; do
    say "payload $pl: $(python3 -c '
import statistics, sys
c, o = ([int(x) for x in a.split()] for a in sys.argv[1:])
print(f"computed {c} median {statistics.median(c):.0f} pps; offload {o} median {statistics.median(o):.0f} pps; x{statistics.median(o) / statistics.median(c):.2f}")' "${got[$pl-computed]}" "${got[$pl-offload]}")"
  done
}

timing() {
  say "== FLOR §6.2 timing: 100 flows x 100 packets at 10 pps (flows 10 ms apart), through veth =="
  printf 'flows:\n  - {proto: udp4, src: 10.99.0.1, dst: 10.99.0.2, sport: 1000, dport: 9, start: 0, packets: 100, pps: 10, payload: 18, count: 100, period: 10ms, step: {sport: 1}}\n' > "$work/t100.yaml"
  local planner
  for planner in calendar stochastic; do
    ip netns exec sink tcpdump -i vb -j adapter_unsynced --time-stamp-precision=nano -B 65536 -w "$work/t100.pcap" -q 2>/dev/null &
    local pid=$!; sleep 1
    "$sluice" flows run "$work/t100.yaml" --to afpacket:va --dst-mac "$sink_mac" --stamp --planner "$planner" -q 2>/dev/null
    sleep 1; kill $pid; wait $pid 2>/dev/null || true
    say "$planner: $(python3 "$here/flowtime.py" "$work/t100.pcap" 100 100 10000000 100000000)"
  done
  # FLOR's own setup (§6.2.1): all 100 flows start at 0, written by the pcap
  # backend, which stamps each packet with the time it was sent.
  say "== FLOR §6.2.1 as FLOR ran it: 100 flows x 100 packets at 10 pps, all starting at 0, pcap output =="
  printf 'flows:\n  - {proto: udp4, src: 10.99.0.1, dst: 10.99.0.2, sport: 1000, dport: 9, start: 0, packets: 100, pps: 10, payload: 18, count: 100, step: {sport: 1}}\n' > "$work/t100z.yaml"
  for planner in calendar stochastic; do
    "$sluice" flows run "$work/t100z.yaml" --to "pcap:$work/t100z.pcap" --stamp --planner "$planner" -q 2>/dev/null
    say "$planner: $(python3 "$here/flowtime.py" "$work/t100z.pcap" 100 100 0 100000000)"
  done
}

timing10k() { # ~17 minutes: not part of "all". TO=pcap writes FLOR's pcap output instead of veth.
  local to=${TO:-veth}
  say "== FLOR §6.2 timing: 10 000 flows x 100 packets at 10 pps, starting 10/s, $to (calendar) =="
  printf 'flows:\n  - {proto: udp4, src: 10.99.0.1, dst: 10.99.0.2, sport: 1000, dport: 9, start: 0, packets: 100, pps: 10, payload: 18, count: 10000, period: 100ms, step: {sport: 1}}\n' > "$work/t10k.yaml"
  if [ "$to" = pcap ]; then
    "$sluice" flows run "$work/t10k.yaml" --to "pcap:$work/t10k.pcap" --stamp ${CPU:+--cpu "$CPU"} -q 2>/dev/null
  else
    ip netns exec sink tcpdump -i vb -j adapter_unsynced --time-stamp-precision=nano -B 65536 -w "$work/t10k.pcap" -q 2>/dev/null &
    local pid=$!; sleep 1
    "$sluice" flows run "$work/t10k.yaml" --to afpacket:va --dst-mac "$sink_mac" --stamp ${CPU:+--cpu "$CPU"} -q 2>/dev/null
    sleep 1; kill $pid; wait $pid 2>/dev/null || true
  fi
  say "calendar: $(python3 "$here/flowtime.py" "$work/t10k.pcap" 10000 100 100000000 100000000)"
}

payload() { # FLOR §6.3.3, Figs. 6.6-6.7: one UDP/IPv4 flow, payload 0..1472 B
  say "== one flow, payload 0 to 1472 B (64 B steps), --to null --topspeed, 10 M packets, median of RUNS=${RUNS:-3} (FLOR §6.3.3) =="
  say "payload_B  frame_B   Mpps    Gbit/s_L2  10G_line_Mpps  40G_line_Mpps  of_40G"
  local p r
  for p in 0 64 128 192 256 320 384 448 512 576 640 704 768 832 896 960 1024 1088 1152 1216 1280 1344 1408 1472; do
    printf 'flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1, dport: 9, packets: 10000000, pps: 100000000, payload: %d}\n' "$p" > "$work/pl.yaml"
    for r in $(seq "${RUNS:-3}"); do
      "$sluice" flows run "$work/pl.yaml" --to null --topspeed -q --summary-json "$work/pl$r.json" 2>/dev/null
    done
    python3 - "$p" "$work"/pl[0-9]*.json <<'PY' | tee -a "$results"
import json, statistics, sys
p = int(sys.argv[1])
frame = max(60, 14 + 20 + 8 + p)            # bytes sluice builds (no FCS)
wire = max(64, frame + 4) + 20              # FCS, preamble and gap on a link
pps = statistics.median(s["packets"] / s["duration_s"] for s in map(lambda f: json.load(open(f)), sys.argv[2:]))
l10, l40 = 10e9 / 8 / wire, 40e9 / 8 / wire
print(f"{p:9d}  {frame:7d}  {pps/1e6:6.2f}  {pps*frame*8/1e9:9.2f}  {l10/1e6:13.2f}  {l40/1e6:13.2f}  {pps/l40:6.2f}")
PY
  done
}

slow() { # FLOR §6.3.7, Fig. 6.11: 2^e flows at 1 packet/s each, real time
  say "== 2^e flows at 1 pps each (offered 2^e pps), --to null, 5 s on the real clock (FLOR §6.3.7) =="
  say "flows      offered_pps  sent_pps   of_offered  late_%   eps_p99_us"
  local e
  for e in 12 14 16 18 20 22; do
    local n=$(( 1 << e ))
    printf 'flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1, dport: 9, start: 0, packets: 100, pps: 1, payload: 18, count: %d, step: {src: 1, sport: 1}}\n' "$n" > "$work/slow.yaml"
    "$sluice" flows run "$work/slow.yaml" --to null --duration 5s -q --summary-json "$work/slow.json" 2>/dev/null
    python3 - "$work/slow.json" "$n" <<'PY' | tee -a "$results"
import json, sys
s = json.load(open(sys.argv[1])); n = int(sys.argv[2])
# Every flow sends at 0, 1, 2, 3, 4 s: 5 n packets in 5 s.
sent = s["packets"] / 5.0
p99 = (s["eps"] or {}).get("percentiles", {}).get("p99_ns", 0) / 1e3
print(f"{n:9d}  {n:11d}  {sent:9.0f}  {s['packets'] / (5 * n):10.3f}  {100 * s['late'] / max(1, s['packets']):6.2f}  {p99:11.1f}")
PY
  done
}

records() {
  say "== flow records regenerated through veth, collected by sluice analyze --flows (real time) =="
  local f
  for f in DERIVED_pmacct_100_ipfix_cisco_flows DERIVED_pmacct_101_nfv9_cisco_flows; do
    "$sluice" flows import "$root/testdata/flows/$f.csv" -o "$work/$f.yaml" 2>/dev/null
    ip netns exec sink tcpdump -i vb -j adapter_unsynced --time-stamp-precision=nano -B 65536 -w "$work/$f.pcap" -q 2>/dev/null &
    local pid=$!; sleep 1
    "$sluice" flows run "$work/$f.yaml" --to afpacket:va --dst-mac "$sink_mac" -q 2>/dev/null
    sleep 1; kill $pid; wait $pid 2>/dev/null || true
    "$sluice" analyze "$work/$f.pcap" --flows --json > "$work/$f.json"
    say "$f: $(python3 "$here/flowrecords.py" "$root/testdata/flows/$f.csv" "$work/$f.json")"
  done
}

: > "$results"
say "# sluice flows benchmark $(date -u +%FT%TZ) on $(nproc) cores, kernel $(uname -r)"
case "${1:-all}" in
  all) scale; planners; insert; veth; timing; records ;;
  *) "$1" ;;
esac
