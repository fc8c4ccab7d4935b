#!/bin/sh
# Seeds the fuzz corpora from the shared test data:
#   *.pcap   -> fuzz/corpus/pcap_reader/
#   *.pcapng -> fuzz/corpus/pcapng_reader/
#   timeseries CSVs, converted by `sluice series convert` (text and i32/f64
#   data), first 64 KiB of each -> fuzz/corpus/archive_reader/
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
echo "seeded $(ls "$here/corpus/pcap_reader" | wc -l) pcap, $(ls "$here/corpus/pcapng_reader" | wc -l) pcapng and $(ls "$here/corpus/archive_reader" | wc -l) archive inputs"
