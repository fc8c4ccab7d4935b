#!/usr/bin/env bash
# Cost of layers and varied fields per generated frame (issue 48): 2^20
# concurrent flows to null at top speed, plain against the same flows in a
# VXLAN/IPv4/UDP template with three fields varied per flow (VNI, inner
# source address, inner source port), and the two halves apart (fields
# alone, VXLAN alone). Variants alternate run by run (a VM swings between
# fast and slow phases); medians of RUNS (default 3).
#
#   bench/encap.sh            FLOWS=1048576 PACKETS=2 RUNS=3
#
# Prints packets/s per run and per variant, and each variant's cost per
# frame against plain (plain pps / its pps). Results also go to
# $WORK/encap-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/encap-results.txt
sluice=${SLUICE:-$root/target/release/sluice}
flows=${FLOWS:-1048576} packets=${PACKETS:-2} runs=${RUNS:-3}
[ -n "${SLUICE:-}" ] || (cd "$root" && cargo build --release -q -p sluice-cli)

vxlan='[{vxlan: {vni: 1, src: 192.0.2.1, dst: 192.0.2.2}}]'
three='[{field: vxlan.vni, from: 1, to: 16777215}, {field: ip.src, from: 10.8.0.0, to: 10.15.255.255}, {field: sport, op: random, from: 1024, to: 65535}]'
three_plain='[{field: ip.dst, from: 1, to: 16777215}, {field: ip.src, from: 10.8.0.0, to: 10.15.255.255}, {field: sport, op: random, from: 1024, to: 65535}]'
session() { # file encap fields: all flows concurrent from t=0
  printf 'seed: 1\nencap: %s\nfields: %s\nflows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1, dport: 9, start: 0, packets: %d, pps: 1000, payload: 18, count: %d, step: {src: 1, sport: 1}}\n' \
    "$2" "$3" "$packets" "$flows" > "$1"
}
session "$work/encap-plain.yaml" '[]' '[]'
session "$work/encap-fields.yaml" '[]' "$three_plain"
session "$work/encap-vxlan.yaml" "$vxlan" '[]'
session "$work/encap-vxlan-fields.yaml" "$vxlan" "$three"
variants="plain fields vxlan vxlan-fields"

out=$(mktemp); trap 'rm -f "$out"' EXIT
declare -A got
for _ in $(seq "$runs"); do
  for v in $variants; do
    "$sluice" flows run "$work/encap-$v.yaml" --to null --topspeed -q --summary-json "$out" 2>/dev/null
    got[$v]+="$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['pps']))" "$out") "
  done
done
median() { tr ' ' '\n' <<< "$1" | grep . | sort -n | sed -n "$(( (runs + 1) / 2 ))p"; }
base=$(median "${got[plain]}")
{
  echo "# encap cost: $flows flows x $packets packets, 60-byte inner frames, to null, $(date -u +%FT%TZ)"
  for v in $variants; do
    m=$(median "${got[$v]}")
    printf '%-13s pps %s  median %s  cost per frame x%s\n' "$v" "${got[$v]}" "$m" \
      "$(python3 -c "print(round($base / $m, 3))")"
  done
} | tee -a "$results"
