#!/usr/bin/env bash
# The fast path on a real NIC: what the interface offers (sluice doctor
# --iface), then top-speed sends of 64 B and 1500 B frames by afpacket:
# and xdp: (1 TX thread, then one per TX queue up to the cores left), and
# by tcpreplay --xdp when TCPREPLAY_XDP names one, each confirmed by the
# NIC's own tx_packets counter. Medians of RUNS (default 5), alternated.
#
#   bench/nic.sh IFACE DST_MAC        e.g. bench/nic.sh enp1s0f0 3c:fd:fe:aa:bb:cc
#
# It SENDS AT LINE RATE out of IFACE, to DST_MAC (a port you own, or a
# MAC nothing answers to on an isolated link). Needs root and python3.
# Results: stdout and $WORK/nic-results.txt. Zero-copy binds where the
# driver has it (the summary's tx_path says which mode ran); NIC
# queues: `ethtool -l IFACE`, set with `ethtool -L IFACE combined N`.
set -euo pipefail
[ $# -eq 2 ] || { sed -n 2,14p "$0"; exit 2; }
iface=$1 dmac=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/nic-results.txt; : > "$results"
sluice=${SLUICE:-$root/target/release/sluice}
peer=${TCPREPLAY_XDP:-}
runs=${RUNS:-5}
[ -x "$sluice" ] || (cd "$root" && cargo build --release -q)
[ -d "/sys/class/net/$iface" ] || { echo "no interface $iface" >&2; exit 2; }

say() { echo "$*" | tee -a "$results"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
tx() { cat "/sys/class/net/$iface/statistics/tx_packets"; }
queues=$(find "/sys/class/net/$iface/queues" -maxdepth 1 -name 'tx-*' | wc -l)
cores=$(nproc)
threads=$(( queues < cores - 1 ? queues : cores - 1 )); [ "$threads" -ge 1 ] || threads=1

"$sluice" doctor --iface "$iface" --floor 200ms | tee -a "$results" || true

# 2M frames of 64 B and 500k of 1500 B, 256 flows (so threads share them),
# with the destination MAC given.
for size in 64 1500; do
  n=$(( size == 64 ? 2000000 : 500000 ))
  f=$work/nic$size.pcap
  [ -f "$f" ] || python3 "$here/mktrace.py" "$f" "$n" "$size" 1000 cbr 256
  python3 - "$f" "$dmac" <<'PY'
import sys
path, mac = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', ''))
b = bytearray(open(path, 'rb').read()); at = 24
while at < len(b):
    incl = int.from_bytes(b[at + 8:at + 12], 'little'); b[at + 16:at + 22] = mac; at += 16 + incl
open(path, 'wb').write(b)
PY
done

sluice_run() { # sink threads size -> pps over sluice's send phase, confirmed by tx_packets
  local a b n=$(( $3 == 64 ? 2000000 : 500000 ))
  a=$(tx)
  "$sluice" replay "$work/nic$3.pcap" --to "$1" --topspeed --threads "$2" --preload -q \
    --summary-json "$work/nic.json" 2>/dev/null || { echo FAILED; return; }
  b=$(tx)
  python3 - "$work/nic.json" "$((b - a))" "$n" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); got, want = int(sys.argv[2]), int(sys.argv[3])
print(round(want / s['duration_s']) if got >= want else f"SHORT:{want - got}")
PY
}
peer_run() { # size -> pps
  "$peer" -i "$iface" --xdp --xdp-batch-size=64 --topspeed --preload-pcap "$work/nic$1.pcap" 2>&1 |
    sed -n 's/.*Mbps, \([0-9]*\).* pps.*/\1/p' | head -1
}

declare -A got
for _ in $(seq "$runs"); do
  for size in 64 1500; do
    got[$size.afp1]+="$(sluice_run "afpacket:$iface" 1 $size) "
    got[$size.xdp1]+="$(sluice_run "xdp:$iface" 1 $size) "
    got[$size.xdpN]+="$(sluice_run "xdp:$iface" "$threads" $size) "
    [ -z "$peer" ] || got[$size.peer]+="$(peer_run $size) "
  done
done
mode=$(python3 -c "import json; print(json.load(open('$work/nic.json')).get('tx_path'))")
med() { tr ' ' '\n' <<< "${got[$1]:-}" | grep -E '^[0-9]+$' | median; }
say "== $iface, top speed, frames/s (median of $runs; last xdp mode: $mode; $threads TX threads = min(queues $queues, cores-1)) =="
for size in 64 1500; do
  say "frame=${size}B afpacket 1T=$(med $size.afp1) xdp 1T=$(med $size.xdp1) xdp ${threads}T=$(med $size.xdpN) tcpreplay --xdp=$(med $size.peer)"
  say "frame=${size}B runs: afp1[${got[$size.afp1]}] xdp1[${got[$size.xdp1]}] xdpN[${got[$size.xdpN]}] peer[${got[$size.peer]:-}]"
done
