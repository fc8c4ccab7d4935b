#!/usr/bin/env bash
# Stochastic profiles, judged like the distributed-generator paper (§6),
# scaled to the veth test network:
#   rmax     top speed R_max of 64-byte frames (60 without FCS) on one TX
#            thread, captured as every judged run is;
#   table5   Poisson 64 B at 0.13, 0.67 and 0.92 × R_max, 3 s each, exact mode
#            and fourier with 1, 2, 3 queues (Figures 9/11): captured by
#            tcpdump in the sink namespace, judged by ratejudge.py against
#            `profile synth` of the same profile;
#   fig15    NMSE and compute time against the kept components K (the
#            reconstruction of the rate series, `profile spectrum`);
#   table6   CBR and Poisson at 0.13 and 0.67 × R_max, 10 replications with
#            fixed seeds, NMSE mean ± 95 % confidence interval;
#   laws     Pareto and Weibull gaps, IMIX sizes at 0.67 × R_max, exact;
#   null     throughput to null, one TX thread: Poisson 64 B, and IMIX.
#
#   sudo bench/profile.sh [all|rmax|table5|fig15|table6|laws|null]
#
# Needs root, tcpdump, python3. Results go to stdout and
# $WORK/profile-results.txt. R_MAX=PPS skips the measurement.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
judges=$root/bench # vendored copies of shared/bench, kept identical
work=${WORK:-/tmp/sluice-bench}; mkdir -p "$work"
results=$work/profile-results.txt
sluice=${SLUICE:-$root/target/release/sluice}
sink_mac=02:00:00:00:00:99
what=${1:-all}

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
ip netns exec sink sysctl -qw net.ipv6.conf.vb.disable_ipv6=1 || true

say() { echo "$*" | tee -a "$results"; }
json() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$1"; }
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

# profile FILE RATE DIST [SIZE] [SEED]: a 3-second profile.
c60='{dist: constant, bytes: 60}'
profile() {
  printf 'seed: %s\nduration: 3s\nrate: %s\nipd: %s\nsize: %s\npacket: {src: 10.99.0.1, dst: 10.99.0.2, dport: 9}\n' \
    "${5:-7}" "$2" "$3" "${4:-$c60}" > "$1"
}

# capture_cmd OUT CMD...: runs CMD while tcpdump captures the generated
# frames on vb; prints the frames tcpdump dropped.
capture_cmd() {
  local out=$1; shift
  rm -f "$out"
  # Only the generated frames: a foreign frame first would shift every bin.
  ip netns exec sink tcpdump -i vb -w "$out" -B 262144 --time-stamp-precision nano -q \
    ether dst "$sink_mac" 2>"$work/tcpdump.err" &
  local tp=$!
  sleep 1
  "$@" >/dev/null 2>&1 || true
  sleep 0.5
  kill -INT "$tp"; wait "$tp" 2>/dev/null || true
  sed -n 's/.* \([0-9]*\) packets dropped by kernel/\1/p' "$work/tcpdump.err"
}

# capture OUT SLUICE-CMD...: a sluice command to veth, captured, its
# summary in $work/run.json.
capture() {
  local out=$1; shift
  capture_cmd "$out" "$@" --to afpacket:va --dst-mac "$sink_mac" -q --summary-json "$work/run.json"
}

# judge TARGET CAPTURE: ratejudge's one line.
judge() { python3 "$judges/ratejudge.py" "$1" "$2" --oneline; }

# R_max: the top speed of 64-byte frames on one TX thread while tcpdump
# captures in the sink namespace, as in every judged run (the capture
# shares the 2 vCPUs: without it the sender alone goes faster).
rmax() {
  if [ -n "${R_MAX:-}" ]; then echo "$R_MAX"; return; fi
  profile "$work/top.yaml" 100M "{dist: constant}"
  capture "$work/top.pcap" "$sluice" profile run "$work/top.yaml" --duration 3s > /dev/null
  rm -f "$work/top.pcap"
  json "$work/run.json" "['pps']" | cut -d. -f1
}

# table5_row LOAD RATE SENDER JUDGEMENT DROPS: one row of Table 5.
table5_row() {
  say "$(printf '%-5s %-9s %-11s %-10s %-13s %-15s %-7s %-13s %s' "$1" "$2" "$3" \
    "$(echo "$4" | field hist_nmse)" "$(echo "$4" | field hist_pearson)" \
    "$(echo "$4" | field pearson)" "$(echo "$4" | field ks_ipd)" \
    "$(echo "$4" | field rate_err_pct)" "${5:-0}")"
}

table5() {
  local r=$1
  say "== Table 5 / Figures 9 and 11: Poisson 64 B (60 B without FCS) at fractions of R_max = $r pps, 3 s =="
  say "load  rate_pps  mode        hist_nmse  hist_pearson  series_pearson  ks_ipd  rate_err_pct  capture_drops"
  for f in 0.13 0.67 0.92; do
    local rate; rate=$(python3 -c "print(int($r * $f))")
    profile "$work/p.yaml" "$rate" "{dist: poisson}"
    "$sluice" profile synth "$work/p.yaml" -o "$work/target.pcap" --dst-mac "$sink_mac" 2>/dev/null
    # Peers: replaying the synthesized trace itself (tcpreplay cannot draw
    # gaps; this is the closest it comes), and sluice replay of it.
    for peer in tcpreplay "sluice replay"; do
      local drops
      if [ "$peer" = tcpreplay ]; then
        drops=$(capture_cmd "$work/cap.pcap" tcpreplay -q -i va "$work/target.pcap")
      else
        drops=$(capture "$work/cap.pcap" "$sluice" replay "$work/target.pcap")
      fi
      local j; j=$(judge "$work/target.pcap" "$work/cap.pcap")
      table5_row "$f" "$rate" "${peer// /_}" "$j" "$drops"
    done
    for mode in exact "fourier 1" "fourier 2" "fourier 3"; do
      set -- $mode
      local args=(--mode "$1")
      [ "$1" = fourier ] && args+=(--queues "$2" --threads 1)
      local drops; drops=$(capture "$work/cap.pcap" "$sluice" profile run "$work/p.yaml" "${args[@]}")
      local j; j=$(judge "$work/target.pcap" "$work/cap.pcap")
      table5_row "$f" "$rate" "$mode" "$j" "$drops"
    done
  done
}

fig15() {
  local r=$1 rate
  rate=$(python3 -c "print(int($r * 0.67))")
  say "== Figure 15: kept components K against NMSE of the rebuilt rate series and compute time (Poisson, $rate pps, 3 s, 1 ms bins) =="
  profile "$work/p.yaml" "$rate" "{dist: poisson}"
  say "K      nmse        pearson   time_ms"
  for k in 1 3 10 30 100 300 1000 1500; do
    local t0 t1 out
    t0=$(date +%s%N)
    out=$("$sluice" profile spectrum "$work/p.yaml" --keep "$k" --json)
    t1=$(date +%s%N)
    say "$(printf '%-6s %-11s %-9s %s' "$k" \
      "$(echo "$out" | python3 -c 'import json,sys; print("%.3e" % json.load(sys.stdin)["reconstruction"]["nmse"])')" \
      "$(echo "$out" | python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["reconstruction"]["pearson"])')" \
      $(( (t1 - t0) / 1000000 )))"
  done
}

table6() {
  local r=$1
  say "== Table 6: reproducibility, 10 replications (seeds 1..10), series NMSE mean ± 95 % CI, exact mode =="
  say "profile   load  rate_pps  nmse_mean   ci95        (paper: NMSE ≈ 5e-5)"
  for dist in constant poisson; do
    for f in 0.13 0.67; do
      local rate; rate=$(python3 -c "print(int($r * $f))")
      : > "$work/nmse.txt"
      for seed in 1 2 3 4 5 6 7 8 9 10; do
        profile "$work/p.yaml" "$rate" "{dist: $dist}" "" "$seed"
        "$sluice" profile synth "$work/p.yaml" -o "$work/target.pcap" --dst-mac "$sink_mac" 2>/dev/null
        capture "$work/cap.pcap" "$sluice" profile run "$work/p.yaml" > /dev/null
        judge "$work/target.pcap" "$work/cap.pcap" | field nmse >> "$work/nmse.txt"
      done
      say "$(python3 - "$work/nmse.txt" "$dist" "$f" "$rate" <<'EOF'
import statistics, sys
v = [float(x) for x in open(sys.argv[1]) if x.strip()]
m = statistics.mean(v); s = statistics.stdev(v)
ci = 2.262 * s / len(v) ** 0.5  # Student t, 9 degrees of freedom
print(f"{sys.argv[2]:9} {sys.argv[3]:5} {sys.argv[4]:9} {m:.3e}   ±{ci:.3e}")
EOF
)"
    done
  done
}

laws() {
  local r=$1 rate
  rate=$(python3 -c "print(int($r * 0.67))")
  say "== Other laws at 0.67 × R_max ($rate pps), exact mode, 3 s =="
  say "profile                 hist_pearson  series_pearson  ks_ipd  ks_size  rate_err_pct  capture_drops"
  for spec in "pareto|{dist: pareto, shape: 2.5}|" "weibull|{dist: weibull, shape: 0.8}|" \
              "imix|{dist: poisson}|{dist: imix}"; do
    IFS='|' read -r name ipd size <<< "$spec"
    local r2=$rate
    # IMIX frames are larger: the same bit rate as 64 B at this load.
    [ "$name" = imix ] && r2=$(python3 -c "print(int($rate * 64 / 357.8))")
    profile "$work/p.yaml" "$r2" "$ipd" "${size:-}"
    "$sluice" profile synth "$work/p.yaml" -o "$work/target.pcap" --dst-mac "$sink_mac" 2>/dev/null
    local drops; drops=$(capture "$work/cap.pcap" "$sluice" profile run "$work/p.yaml")
    local j; j=$(judge "$work/target.pcap" "$work/cap.pcap")
    say "$(printf '%-23s %-13s %-15s %-7s %-8s %-13s %s' "$name ($r2 pps)" \
      "$(echo "$j" | field hist_pearson)" "$(echo "$j" | field pearson)" \
      "$(echo "$j" | field ks_ipd)" "$(echo "$j" | field ks_size)" \
      "$(echo "$j" | field rate_err_pct)" "${drops:-0}")"
  done
}

null_speed() {
  say "== To null, one TX thread, 20 M packets (median of 3) =="
  printf 'duration: 1h\nrate: 1G\nipd: {dist: poisson}\nsize: {dist: constant, bytes: 60}\n' > "$work/n1.yaml"
  printf 'duration: 1h\nrate: 1G\nipd: {dist: poisson}\nsize: {dist: imix}\n' > "$work/n2.yaml"
  for f in n1 n2; do
    local v=()
    for _ in 1 2 3; do
      "$sluice" profile run "$work/$f.yaml" --to null --limit 20M -q --summary-json "$work/n.json" 2>/dev/null
      v+=("$(json "$work/n.json" "['pps']")")
    done
    say "$([ $f = n1 ] && echo 'Poisson, 60 B' || echo 'Poisson, IMIX') Mpps: $(python3 -c "import statistics,sys; v=[float(x)/1e6 for x in sys.argv[1:]]; print('%.2f (runs %s)' % (statistics.median(v), ' '.join('%.2f' % x for x in v)))" "${v[@]}")"
  done
}

r=$(rmax)
say "== $(date -u +%FT%TZ) $(git -C "$root" rev-parse --short HEAD): R_max (64 B, 1 TX thread, veth) = $r pps =="
case $what in
rmax) ;;
table5) table5 "$r" ;;
fig15) fig15 "$r" ;;
table6) table6 "$r" ;;
laws) laws "$r" ;;
null) null_speed ;;
all) table5 "$r"; fig15 "$r"; table6 "$r"; laws "$r"; null_speed ;;
esac
