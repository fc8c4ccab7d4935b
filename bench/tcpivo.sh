#!/usr/bin/env bash
# TCPivo's measurements of the replay loop itself (tcpivo-replay.txt):
#   read: Figs. 1 and 3a, per-packet trace read latency of a 1 M packet
#         trace (76 MB), cold (its pages dropped: from the disk) and warm
#         (from the page cache), read by stdio-like 4 KiB fread (Fig. 1),
#         mmap + MADV_SEQUENTIAL (Fig. 3a) and sluice's reader (the one
#         replay uses); medians of RUNS of p99, p99.9, max and packets
#         over 100 us (crates/sluice-source/examples/trace_read_latency.rs)
#   loop: Table 3, where the send loop spends its time: `replay
#         --topspeed --payload zero` (TCPivo's padded payloads, checksums
#         recomputed) to afpacket: on a veth, profiled by perf at 2999 Hz
#         and split by thread and symbol (bench/sendloop.py): CPU us per
#         packet for trace read, build, send (user, kernel) and the sink's
#         receive the kernel runs on the sender's CPU; medians of RUNS
#
#   bench/tcpivo.sh [read|loop|all]     (default all; RUNS=3)
#
# Needs root, perf and python3. The trace lives in $DISK (default
# /var/tmp/sluice-bench), not in a tmpfs, so that cold means the disk.
# Results: stdout and $WORK/tcpivo-results.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
disk=${DISK:-/var/tmp/sluice-bench}; mkdir -p "$disk"
results=$work/tcpivo-results.txt; : > "$results"
sluice=${SLUICE:-$root/target/release/sluice}
runs=${RUNS:-3}
what=${1:-all}
say() { echo "$*" | tee -a "$results"; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
trace=$disk/tcpivo-1m.pcap
[ -f "$trace" ] || python3 "$here/mktrace.py" "$trace" 1000000 60 1000 cbr 64 >/dev/null

read_latency() {
  (cd "$root" && cargo build --release -q -p sluice-source --example trace_read_latency)
  local bin=$root/target/release/examples/trace_read_latency
  say "== trace read latency per packet, 1 M packets of 60 B ($(du -h "$trace" | cut -f1)), median of $runs =="
  declare -A got
  for _ in $(seq "$runs"); do
    for m in fread mmap sluice; do
      for c in cold warm; do
        got[$m.$c]+="$("$bin" "$trace" $m $([ $c = cold ] && echo --cold) 2>&1)"$'\n'
      done
    done
  done
  for m in fread mmap sluice; do
    for c in cold warm; do
      local line=""
      for k in p50_ns p99_ns p999_ns max_ns over_10us over_100us over_1ms total_s; do
        line+=" $k=$(grep -o "$k=[0-9.]*" <<< "${got[$m.$c]}" | cut -d= -f2 | median)"
      done
      say "mode=$m cache=$c$line"
    done
  done
}

send_loop() {
  command -v perf >/dev/null || { echo "perf: SKIPPED (not installed)"; return; }
  [ -x "$sluice" ] || (cd "$root" && cargo build --release -q)
  "$here/netns.sh" up
  trap '"$here/netns.sh" down' RETURN
  sysctl -qw net.ipv6.conf.va.disable_ipv6=1 || true
  say "== the send loop (Table 3): replay --topspeed --payload zero to afpacket:va, CPU us per packet, median of $runs =="
  local runs_json=()
  for i in $(seq "$runs"); do
    perf record -q -F 2999 -o "$work/loop.perf" -- "$sluice" replay "$trace" --to afpacket:va \
      --topspeed --payload zero -q --summary-json "$work/loop.json" >/dev/null 2>&1
    local n; n=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['packets'])" "$work/loop.json")
    perf report -i "$work/loop.perf" -n --stdio --no-children --sort comm,dso,sym 2>/dev/null \
      | python3 "$here/sendloop.py" 2999 "$n" --json > "$work/loop-$i.json"
    runs_json+=("$work/loop-$i.json")
  done
  python3 - "${runs_json[@]}" <<'PY' | tee -a "$results"
import json, statistics, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
for c in runs[0]:
    us = statistics.median(r[c]["us_per_packet"] for r in runs)
    share = runs[0][c]["share"]
    sh = "" if share is None else f"  ({statistics.median(r[c]['share'] for r in runs) * 100:.0f} %)"
    print(f"{c:32s} {us:6.3f} us{sh}")
PY
}

case "$what" in
  read) read_latency ;;
  loop) send_loop ;;
  all) read_latency; send_loop ;;
  *) echo "usage: bench/tcpivo.sh [read|loop|all]" >&2; exit 2 ;;
esac
