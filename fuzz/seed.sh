#!/bin/sh
# Seeds the fuzz corpora from the shared test data:
#   *.pcap   -> fuzz/corpus/pcap_reader/
#   *.pcapng -> fuzz/corpus/pcapng_reader/
#   timeseries CSVs, converted by `sluice series convert` (text and i32/f64
#   data), first 64 KiB of each -> fuzz/corpus/archive_reader/
#   flow-record CSVs, time-series CSV heads, example sessions, a mapping
#   -> fuzz/corpus/text_inputs/
# Usage (from anywhere): fuzz/seed.sh [TESTDATA_DIR]
# Then, with a nightly toolchain and cargo-fuzz installed:
#   cd fuzz && cargo +nightly fuzz run pcap_reader
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-"$here/../../shared/testdata"}
if [ ! -d "$src/pcap" ]; then
    echo "seed.sh: testdata directory $src/pcap not found" >&2
    exit 1
fi
mkdir -p "$here/corpus/pcap_reader" "$here/corpus/pcapng_reader" "$here/corpus/archive_reader"
cp "$src"/pcap/*.pcap "$here/corpus/pcap_reader/"
cp "$src"/pcap/*.pcapng "$here/corpus/pcapng_reader/"
(cd "$here/.." && cargo build -q --release)
sluice="$here/../target/release/sluice"
tmp=$(mktemp -d)
for csv in "$src"/timeseries/*.csv; do
    name=$(basename "$csv" .csv)
    "$sluice" series convert "$csv" "$tmp/$name.text.arc" 2>/dev/null
    head -c 65536 "$tmp/$name.text.arc" > "$here/corpus/archive_reader/$name.text"
    for enc in i32 f64; do
        if "$sluice" series convert "$csv" "$tmp/$name.$enc.arc" --data "$enc" 2>/dev/null; then
            head -c 65536 "$tmp/$name.$enc.arc" > "$here/corpus/archive_reader/$name.$enc"
        fi
    done
done
rm -rf "$tmp"
# Text inputs: flow records, time-series CSV (first 8 KiB), the example
# sessions and a device mapping.
mkdir -p "$here/corpus/text_inputs"
cp "$src"/flows/*.csv "$here/corpus/text_inputs/"
for csv in "$src"/timeseries/*.csv; do
    head -c 8192 "$csv" > "$here/corpus/text_inputs/$(basename "$csv")"
done
cp "$here"/../examples/sessions/* "$here/corpus/text_inputs/"
printf 'defaults: {dst_ip: 192.0.2.9, dst_port: 7777}\ndevices:\n  DEV1: {src_ip: 198.51.100.1, src_port: 1111}\n' \
    > "$here/corpus/text_inputs/map.yaml"
printf 'device_id,src_ip,dst_ip,src_port,dst_port\nDEV1,10.0.0.1,10.0.0.2,1000,9000\n' \
    > "$here/corpus/text_inputs/map.csv"
echo "seeded $(ls "$here/corpus/pcap_reader" | wc -l) pcap, $(ls "$here/corpus/pcapng_reader" | wc -l) pcapng, $(ls "$here/corpus/archive_reader" | wc -l) archive and $(ls "$here/corpus/text_inputs" | wc -l) text inputs"
