#!/usr/bin/env bash
# A/B throughput of two or more sluice binaries on one flow session, to
# null at top speed, in alternated runs (a VM can swing between a fast and
# a slow phase for minutes at a time, see docs/BENCHMARKS.md: only
# alternated runs compare).
#
#   bench/ab.sh SESSION RUNS BINARY...
#
# Prints every run's packets/s, sorted, and the median, per binary. Build
# the "before" binary from an older commit in a worktree, e.g.
#   git worktree add /tmp/old HEAD~1 && (cd /tmp/old && CARGO_TARGET_DIR=/tmp/oldtarget cargo build --release)
set -euo pipefail
session=$1 runs=$2; shift 2
out=$(mktemp); trap 'rm -f "$out"' EXIT
declare -A got
for _ in $(seq "$runs"); do
  for b in "$@"; do
    "$b" flows run "$session" --to null --topspeed -q --summary-json "$out" 2>/dev/null
    got[$b]+="$(python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['pps']))" "$out") "
  done
done
for b in "$@"; do
  sorted=$(tr ' ' '\n' <<< "${got[$b]}" | grep . | sort -n)
  echo "$b: $(tr '\n' ' ' <<< "$sorted") median $(sed -n "$(( (runs + 1) / 2 ))p" <<< "$sorted")"
done
