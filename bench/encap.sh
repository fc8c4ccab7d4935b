#!/usr/bin/env bash
# Cost of layers and varied fields per generated frame (issue 48): 2^20
# concurrent flows to null at top speed, plain against the same flows
# behind a session's VXLAN/IPv4/UDP `encap` with three fields varied per
# flow (VNI, inner source address, inner source port), and the two halves
# apart (fields alone, VXLAN alone); then the issue's own pair, a
# VXLAN/IPv4/UDP `template` with the three fields against the same
# template without VXLAN (its third field the destination address).
# Variants alternate run by run (a VM swings between fast and slow
# phases); medians of RUNS (default 3).
#
#   bench/encap.sh            FLOWS=1048576 PACKETS=2 RUNS=3
#
# Prints packets/s per run and per variant, and each variant's cost per
# frame against plain (plain pps / its pps). Results also go to
# $WORK/encap-results.txt.
#
# As root with trafgen (netsniff-ng), also the peer: a 64-byte UDP frame
# sent N=1000000 times on a veth pair of its own, fixed, then with three
# fields varied per packet (source address and IP ID incremented, source
# port random), sluice's template against trafgen's dinc()/drnd() (which
# recompute the checksums); frames counted by the sink veth.
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
d='udp4 src=10.0.0.1 dst=10.99.0.2 sport=1 dport=9 payload=18'
template() { # file description fields
  printf 'seed: 1\ntemplate: {describe: "%s"}\nfields: %s\nflows:\n  - {start: 0, packets: %d, pps: 1000, count: %d, step: {src: 1, sport: 1}}\n' \
    "$2" "$3" "$packets" "$flows" > "$1"
}
template "$work/encap-tfields.yaml" "$d" "$three_plain"
template "$work/encap-tvxlan-fields.yaml" "$d encap=vxlan:vni=1,src=192.0.2.1,dst=192.0.2.2" "$three"
variants="plain fields vxlan vxlan-fields tfields tvxlan-fields"

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
  python3 -c "
f, vf, tf, tvf = $(median "${got[fields]}"), $(median "${got[vxlan-fields]}"), $(median "${got[tfields]}"), $(median "${got[tvxlan-fields]}")
print(f'VXLAN with three fields against the same without: session encap x{f / vf:.3f}, template x{tf / tvf:.3f}')"
} | tee -a "$results"

peer() {
  command -v trafgen >/dev/null && [ "$(id -u)" = 0 ] || { echo "peer: SKIPPED (needs root and trafgen)"; return; }
  local a b s e v k
  n=se$$ # global: the EXIT trap removes it
  ip link show "${n}a" >/dev/null 2>&1 && { echo "peer: ${n}a exists"; return; }
  ip netns add "$n"
  trap 'ip link del "${n}a" 2>/dev/null; ip netns del "$n" 2>/dev/null; rm -f "$out"' EXIT
  ip link add "${n}a" type veth peer name "${n}b"
  ip link set "${n}b" netns "$n"
  ip link set "${n}a" address 02:00:00:00:00:01 up
  ip netns exec "$n" ip link set "${n}b" address 02:00:00:00:00:02 up
  rx() { ip netns exec "$n" cat "/sys/class/net/${n}b/statistics/rx_packets"; }
  local count=${N:-1000000}
  local d='udp4 src=10.99.0.1 dst=10.99.0.2 sport=1 dport=9 payload=18 dst_mac=02:00:00:00:00:99 src_mac=02:00:00:00:00:01'
  local f='[{field: ip.src, per: packet}, {field: ip.id, per: packet}, {field: sport, op: random, from: 1024, to: 65535, per: packet}]'
  printf 'template: {describe: "%s"}\nflows:\n  - {packets: %d, pps: 1000000}\n' "$d" "$count" > "$work/peer-fixed.yaml"
  printf 'template: {describe: "%s"}\nfields: %s\nflows:\n  - {packets: %d, pps: 1000000}\n' "$d" "$f" "$count" > "$work/peer-fields.yaml"
  local eth='eth(da=02:00:00:00:00:99, sa=02:00:00:00:00:01)'
  echo "{ $eth, ipv4(sa=10.99.0.1, da=10.99.0.2, ttl=64), udp(sp=1, dp=9), fill(0x00, 18) }" > "$work/peer-fixed.cfg"
  echo "{ $eth, ipv4(sa=dinc(), da=10.99.0.2, id=dinc(), ttl=64), udp(sp=drnd(1024, 65535), dp=9), fill(0x00, 18) }" > "$work/peer-fields.cfg"
  declare -A pg
  for _ in $(seq "$runs"); do
    for v in fixed fields; do
      a=$(rx)
      "$sluice" flows run "$work/peer-$v.yaml" --to "afpacket:${n}a" --topspeed -q --summary-json "$out" 2>/dev/null
      b=$(rx)
      pg[sluice-$v]+="$(python3 -c "import json,sys; print(round(($b-$a)/json.load(open(sys.argv[1]))['duration_s']))" "$out") "
      a=$(rx); s=$(date +%s.%N)
      trafgen --dev "${n}a" --conf "$work/peer-$v.cfg" --num "$count" --cpus 1 >/dev/null 2>&1
      e=$(date +%s.%N); b=$(rx)
      pg[trafgen-$v]+="$(python3 -c "print(round(($b-$a)/($e-$s)))") "
    done
  done
  {
    echo "# peer: $count 64-byte frames on a veth, 1 TX thread / 1 trafgen cpu, frames counted by the sink, $(date -u +%FT%TZ)"
    for k in sluice-fixed sluice-fields trafgen-fixed trafgen-fields; do
      printf '%-15s pps %s median %s\n' "$k" "${pg[$k]}" "$(median "${pg[$k]}")"
    done
    python3 -c "
sf, sv, tf, tv = $(median "${pg[sluice-fixed]}"), $(median "${pg[sluice-fields]}"), $(median "${pg[trafgen-fixed]}"), $(median "${pg[trafgen-fields]}")
print(f'cost of three fields: sluice x{sf / sv:.3f}, trafgen x{tf / tv:.3f}; with fields sluice/trafgen x{sv / tv:.2f}')"
  } | tee -a "$results"
}
peer
