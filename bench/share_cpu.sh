#!/usr/bin/env bash
# CPU time of a distributed worker's 1/N share of a profile against the
# whole job (issue: planning must scale with workers). Runs `profile run`
# on the virtual clock to null (the work itself: drawing, building,
# handing over, without real-time waits), whole and share alternated,
# and prints user+sys seconds and the median ratio per gap law.
#
#   bench/share_cpu.sh [BINARY] [RUNS] [N]
set -euo pipefail
bin=${1:-target/release/sluice} runs=${2:-5} n=${3:-4}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cpu() { /usr/bin/time -f '%U %S' "$@" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}'; }
for law in "dist: poisson" "dist: constant" "dist: pareto, shape: 1.5"; do
  printf 'seed: 7\nduration: 10s\nrate: 2M\nipd: {%s}\nsize: {dist: constant, bytes: 64}\npacket: {flows: 16}\n' "$law" > "$dir/p.yaml"
  whole=() part=()
  for _ in $(seq "$runs"); do
    whole+=("$(cpu "$bin" profile run "$dir/p.yaml" --to null --clock virtual -q)")
    part+=("$(cpu "$bin" profile run "$dir/p.yaml" --to null --clock virtual -q --share "1/$n")")
  done
  python3 - "$law" "$n" "${whole[*]}" "${part[*]}" <<'PY'
import statistics, sys
law, n, whole, part = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
w, p = statistics.median(map(float, whole)), statistics.median(map(float, part))
print(f"{law:28s} whole {w:.2f} s  share 1/{n} {p:.2f} s  ratio {p / w:.2f}  (runs: {' '.join(whole)} | {' '.join(part)})")
PY
done
