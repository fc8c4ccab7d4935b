#!/usr/bin/env bash
# The distributed-generator paper's Fig. 18 (§6.4) as a simulation: NMSE of
# a Poisson profile's Fourier reconstruction split over W workers (one
# Fourier queue each, as `control run` with split components deals them),
# each worker with a random start error (N(0, S)), a random clock-rate
# error (N(0, D ppm)) and a capability of CAP packets/s, judged by
# ratejudge.py against `profile synth`, normalized to one worker without
# errors. No packet leaves the host: one `profile run --mode fourier` per
# worker count on a virtual clock gives every queue's packets exactly
# (sluice's split is frame for frame one host's run), and
# bench/sync_sim.py moves them by the errors drawn.
#
#   bench/sync_sim.sh
#
# RATE (default 560k: the paper's 6.72 Gbps of 1500-byte frames, sent here
# as 64-byte frames, which leaves the packet rate the same), DUR (1s),
# WORKERS ("1 2 5 10 20 51", Fig. 18's 1..51), STARTS (start-error sigmas,
# us: "0 10 100 1000 5000"), DRIFT (ppm, 20), CAP (a worker's packets/s;
# default RATE/2: one worker cannot carry the load alone, as in Fig. 18a),
# SEEDS (draws per point, 3: the median NMSE is reported). Rows go to
# stdout and $OUT (default ./sync-sim-results.txt).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sluice=${SLUICE:-$root/target/release/sluice}
[ -x "$sluice" ] || (cd "$root" && cargo build --release -q)
RATE=${RATE:-560k}
DUR=${DUR:-1s}
WORKERS=${WORKERS:-"1 2 5 10 20 51"}
STARTS=${STARTS:-"0 10 100 1000 5000"}
DRIFT=${DRIFT:-20}
SEEDS=${SEEDS:-3}
OUT=${OUT:-$PWD/sync-sim-results.txt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rate_pps=$(python3 -c "import sys; s=sys.argv[1]; m={'k':1e3,'M':1e6}; print(int(float(s[:-1])*m[s[-1]]) if s[-1] in m else int(s))" "$RATE")
CAP=${CAP:-$((rate_pps / 2))}

profile() { # WORKERS -> a profile whose flow q is Fourier queue q
    cat > "$work/p$1.yaml" <<YAML
seed: 11
duration: $DUR
rate: $RATE
ipd: {dist: poisson}
size: {dist: constant, bytes: 64}
packet: {proto: udp4, src: 10.0.0.1, dst: 10.0.0.2, sport: 1024, dport: 9, flows: $1}
YAML
}

profile 1
"$sluice" profile synth "$work/p1.yaml" -o "$work/target.pcap" >/dev/null 2>&1
echo "# sync_sim: RATE=$RATE DUR=$DUR CAP=$CAP pps/worker DRIFT=$DRIFT ppm SEEDS=$SEEDS" | tee "$OUT"
echo "# workers start_sigma_us nmse(median) pearson delayed" | tee -a "$OUT"
for w in $WORKERS; do
    profile "$w"
    "$sluice" profile run "$work/p$w.yaml" --mode fourier --queues "$w" \
        --clock virtual --to "pcap:$work/f.pcap" -q 2>/dev/null
    for s in $STARTS; do
        rows=""
        for k in $(seq 1 "$SEEDS"); do
            sim=$(cd "$root/bench" && python3 sync_sim.py "$work/f.pcap" "$w" "$work/m.pcap" \
                --cap "$CAP" --start-us "$s" --drift-ppm "$DRIFT" --seed "$k")
            j=$(python3 "$root/bench/ratejudge.py" "$work/target.pcap" "$work/m.pcap" --oneline)
            nmse=$(sed -n 's/.* nmse=\([^ ]*\).*/\1/p' <<<"$j")
            r=$(sed -n 's/.* pearson=\([^ ]*\).*/\1/p' <<<"$j")
            delayed=$(sed -n 's/.*delayed=\([0-9]*\).*/\1/p' <<<"$sim")
            rows+="$nmse $r $delayed"$'\n'
        done
        med=$(sort -g <<<"${rows%$'\n'}" | sed -n "$(((SEEDS + 1) / 2))p")
        echo "$w $s $med" | tee -a "$OUT"
    done
done
# Normalized to one worker without errors (the figure's y axis).
python3 - "$OUT" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith('#')]
base = next(float(r[2]) for r in rows if r[0] == '1' and r[1] == '0')
starts = sorted({int(r[1]) for r in rows})
print('NMSE (and over one worker without errors):')
print('| workers | ' + ' | '.join(f'σ start {s} µs' for s in starts) + ' |')
print('|---|' + '---|' * len(starts))
for w in sorted({int(r[0]) for r in rows}):
    cells = {int(r[1]): float(r[2]) for r in rows if int(r[0]) == w}
    print(f'| {w} | ' + ' | '.join(f'{cells[s]:.2e} ({cells[s] / base:.4f})' for s in starts) + ' |')
PY
