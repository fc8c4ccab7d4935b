#!/usr/bin/env bash
# RFC 2544 trial cost, A/B: each binary runs bench/rfc2544.sh (the tbf
# bottleneck) in turn, ROUNDS times, with short trials; prints per run the
# wall time, the trials run (the top-speed trial of each size included)
# and the wall time per trial beyond the trial and its receive wait, the
# overhead a trial costs (starting a replay, preloading, opening sockets).
#
#   bench/rfc2544_ab.sh ROUNDS TRIAL BINARY...   (e.g. 3 100ms A B)
set -euo pipefail
rounds=$1 trial=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
ns() { python3 -c "import re,sys; m=re.fullmatch(r'(\d+(?:\.\d+)?)(ms|s)', sys.argv[1]); print(int(float(m.group(1)) * {'ms': 1e6, 's': 1e9}[m.group(2)]))" "$1"; }
trial_ns=$(ns "$trial") wait_ns=300000000
for r in $(seq "$rounds"); do
  for bin in "$@"; do
    t0=$(date +%s%N)
    out=$("$here/rfc2544.sh" "$bin" 5mbit "$trial" 5ms)
    t1=$(date +%s%N)
    # Each size: its search's trials, and the top-speed trial before it.
    n=$(echo "$out" | sed -n 's/.*(\([0-9]*\) trials of.*/\1/p' | awk '{s += $1 + 1} END {print s}')
    python3 -c "
import sys
wall, n, t, w = int(sys.argv[1]) / 1e9, int(sys.argv[2]), int(sys.argv[3]) / 1e9, int(sys.argv[4]) / 1e9
print(f'round $r {sys.argv[5]}: {wall:.2f} s, {n} trials, {(wall - n * (t + w)) / n * 1e3:.0f} ms per trial beyond trial + wait')
" $((t1 - t0)) "$n" "$trial_ns" "$wait_ns" "$bin"
  done
done
