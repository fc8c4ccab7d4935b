#!/usr/bin/env bash
# The fast path: sluice's xdp: sink against its afpacket: sink and against
# tcpreplay built with AF_XDP (--xdp --xdp-batch-size=64), replaying the
# same traces at top speed on the same veth, in alternated runs; medians
# and ratios printed. The sink's rx counter confirms every frame of every
# run (a run that lost frames is reported, not counted).
#
# Two kinds of trace: large ones sent once (x64: 1M frames, x1500: 300k;
# larger than the last-level cache, so sluice copies each frame into a
# scratch UMEM frame) and small ones looped to as many frames (s64: 20k
# frames x 50, s1500: 10k x 30; each frame placed in the UMEM once and
# sent from there: the summary's frame_copies says so). `bare` is
# `--to xdpa`, the default path the interface allows.
#
#   bench/xdp.sh                    # RUNS=7 by default
#   SCALE="1 2 4 8 16" bench/xdp.sh # then xdp: and afpacket: at each TX
#                                   # thread count, on as many veth queues
#                                   # (a many-core machine: one CPU per thread)
#   SCALE_ONLY=1 SCALE="1 2 4 8 16" bench/xdp.sh # the scaling table alone
#   TCPREPLAY_XDP=/path/to/tcpreplay bench/xdp.sh
#
# TCPREPLAY_XDP is a tcpreplay built from its repository with libxdp
# (docs/BENCHMARKS.md says how); without it the peer column says SKIPPED.
# The veth pair has 2 queues each way, so 2 TX threads bind queues 0 and 1.
# Needs root and python3. Results: stdout and $WORK/xdp-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/xdp-results.txt; : > "$results"
sluice=${SLUICE:-$root/target/release/sluice}
peer=${TCPREPLAY_XDP:-}
runs=${RUNS:-7}
ns=sluice-xdp

[ -x "$sluice" ] || (cd "$root" && cargo build --release -q)
down() { ip link del xdpa 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; }
down; trap down EXIT
ip netns add "$ns"
scale=${SCALE:-}
nq=2; for n in $scale; do [ "$n" -gt "$nq" ] && nq=$n; done
ip link add xdpa numtxqueues "$nq" numrxqueues "$nq" type veth peer name xdpb numtxqueues "$nq" numrxqueues "$nq"
ip link set xdpb netns "$ns"
ip link set xdpa address 02:00:00:00:00:01 up
ip netns exec "$ns" ip link set xdpb address 02:00:00:00:00:02 up
sysctl -qw net.ipv6.conf.xdpa.disable_ipv6=1 || true
ip netns exec "$ns" sysctl -qw net.ipv6.conf.xdpb.disable_ipv6=1 || true

rx() { ip netns exec "$ns" cat /sys/class/net/xdpb/statistics/rx_packets; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
say() { echo "$*" | tee -a "$results"; }
# 64 flows, so per-flow order still lets two TX threads share the work.
# frames in the file, and passes over it
declare -A frames=([x64]=1000000 [x1500]=300000 [s64]=20000 [s1500]=10000)
declare -A loops=([x64]=1 [x1500]=1 [s64]=50 [s1500]=30)
for t in x64 x1500 s64 s1500; do
  [ -f "$work/$t.pcap" ] || python3 "$here/mktrace.py" "$work/$t.pcap" "${frames[$t]}" "${t:1}" 1000 cbr 64
done

sluice_run() { # sink threads trace expected -> pps over sluice's send phase
  local a b
  a=$(rx)
  "$sluice" replay "$work/$3.pcap" --to "$1" --topspeed --threads "$2" --preload -q \
    --loop "${loops[$3]}" --summary-json "$work/xs.json" 2>/dev/null
  b=$(rx)
  python3 - "$work/xs.json" "$((b - a))" "$4" <<'PY'
import json, sys
s = json.load(open(sys.argv[1])); got, want = int(sys.argv[2]), int(sys.argv[3])
print(round(got / s['duration_s']) if got == want else f"LOST:{want - got}")
PY
}

peer_run() { # trace expected -> pps (tcpreplay's own send-phase rate)
  local a b out
  a=$(rx)
  out=$("$peer" -i xdpa --xdp --xdp-batch-size=64 --topspeed --preload-pcap -l "${loops[$1]}" "$work/$1.pcap" 2>&1) ||
    { echo "$out" > "$work/peer-failed.txt"; echo FAILED; return; }
  b=$(rx)
  echo "$out" > "$work/peer-last.txt"
  local pps; pps=$(sed -n 's/.*Mbps, \([0-9.]*\) pps.*/\1/p' <<< "$out" | head -1)
  if [ "$((b - a))" -eq "$2" ]; then echo "${pps%.*}"; else echo "LOST:$(($2 - b + a))"; fi
}

declare -A got
[ -z "${SCALE_ONLY:-}" ] || runs_main=0
for _ in $(seq "${runs_main:-$runs}"); do
  for t in x64 x1500 s64 s1500; do
    n=$((frames[$t] * loops[$t]))
    got[$t.xdp1]+="$(sluice_run xdp:xdpa 1 $t "$n") "
    got[$t.bare]+="$(sluice_run xdpa 1 $t "$n") "
    got[$t.afp1]+="$(sluice_run afpacket:xdpa 1 $t "$n") "
    got[$t.xdp2]+="$(sluice_run xdp:xdpa 2 $t "$n") "
    got[$t.afp2]+="$(sluice_run afpacket:xdpa 2 $t "$n") "
    if [ -n "$peer" ]; then got[$t.peer]+="$(peer_run $t "$n") "; fi
  done
done

med() { tr ' ' '\n' <<< "${got[$1]:-}" | { grep -E '^[0-9]+$' || true; } | median; }
lost() { tr ' ' '\n' <<< "${got[$1]:-}" | grep -c LOST || true; }
ratio() { python3 -c "import sys; a,b=sys.argv[1:]; print(f'{int(a)/int(b):.2f}' if a and b else '-')" "$1" "$2"; }
[ -n "${SCALE_ONLY:-}" ] ||
say "== top speed on veth, frames/s counted by the sink (median of $runs, alternated) =="
for t in ${SCALE_ONLY:+none} x64 x1500 s64 s1500; do
  [ "$t" != none ] || break
  size="$t (${frames[$t]} frames x ${loops[$t]})"
  x1=$(med $t.xdp1); x2=$(med $t.xdp2); a1=$(med $t.afp1); a2=$(med $t.afp2)
  say "${size} sluice xdp 1T=$x1 2T=$x2 (2T/1T x$(ratio "$x2" "$x1"))  afpacket 1T=$a1 2T=$a2  xdp/afpacket 1T x$(ratio "$x1" "$a1")  bare --to 1T=$(med $t.bare)"
  if [ -n "$peer" ]; then
    p=$(med $t.peer)
    say "${size} tcpreplay --xdp=$p  sluice xdp 1T / tcpreplay x$(ratio "$x1" "$p")  2T / tcpreplay x$(ratio "$x2" "$p")"
  else
    say "${size} tcpreplay --xdp: SKIPPED (set TCPREPLAY_XDP)"
  fi
  for k in xdp1 bare xdp2 afp1 afp2 peer; do
    [ "$(lost $t.$k)" = 0 ] || say "${size} $k: $(lost $t.$k) run(s) lost frames: ${got[$t.$k]}"
  done
  say "${size} runs: xdp1[${got[$t.xdp1]}] bare[${got[$t.bare]}] xdp2[${got[$t.xdp2]}] afp1[${got[$t.afp1]}] afp2[${got[$t.afp2]}] peer[${got[$t.peer]:-}]"
done

[ -n "$scale" ] || exit 0
# Scaling: the large traces at every thread count, alternated, medians.
declare -A sc
for _ in $(seq "$runs"); do
  for t in x64 x1500; do
    for n in $scale; do
      sc[$t.xdp.$n]+="$(sluice_run xdp:xdpa "$n" $t "${frames[$t]}") "
      sc[$t.afp.$n]+="$(sluice_run afpacket:xdpa "$n" $t "${frames[$t]}") "
    done
  done
done
smed() { tr ' ' '\n' <<< "${sc[$1]:-}" | { grep -E '^[0-9]+$' || true; } | median; }
say "== scaling over TX threads, one veth queue each (median of $runs) =="
for t in x64 x1500; do
  for k in xdp afp; do
    line="$t $k:"; one=$(smed $t.$k.1)
    for n in $scale; do line+=" ${n}T=$(smed $t.$k.$n) (x$(ratio "$(smed $t.$k.$n)" "$one"))"; done
    say "$line"
  done
done
