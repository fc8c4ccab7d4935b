#!/bin/sh
# Runs every fuzz target for SECONDS (default 300) at once, each on its
# corpus (fuzz/seed.sh), and prints per target: executions, new corpus
# entries, crashes (artifacts). Needs built targets: from `cargo +nightly
# fuzz build -O` (BIN defaults to its output directory), or stripped copies
# in another BIN directory (how a machine without the toolchain runs them).
# Usage: fuzz/run_all.sh [SECONDS] [BIN] [OUT]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
secs=${1:-300}
bin=${2:-"$here/target/x86_64-unknown-linux-gnu/release"}
out=${3:-"$here/artifacts/run"}
targets="archive_reader autoopts control_plane erf_reader header_rewrite inject_decoder pcap_differential pcap_reader pcapng_reader rx_fragments stateful_peer tcpprep_cache text_inputs tsh_reader"
mkdir -p "$out"
for t in $targets; do
    mkdir -p "$here/corpus/$t" "$out/$t"
    # Each target alone on its core; stderr keeps libFuzzer's final stats.
    "$bin/$t" -max_total_time="$secs" -rss_limit_mb=4096 -timeout=30 \
        -artifact_prefix="$out/$t/" -print_final_stats=1 \
        "$here/corpus/$t" > /dev/null 2> "$out/$t.log" &
done
wait || true
printf '%-18s %12s %8s %8s\n' target executions corpus crashes
fail=0
for t in $targets; do
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/$t.log" | grep -o '[0-9]*$' || echo '?')
    corp=$(ls "$here/corpus/$t" | wc -l)
    crashes=$(ls "$out/$t" | grep -c -E '^(crash|leak|timeout|oom)-' || true)
    [ "$crashes" -eq 0 ] || fail=1
    printf '%-18s %12s %8s %8s\n' "$t" "$execs" "$corp" "$crashes"
done
exit $fail
