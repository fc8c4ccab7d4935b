#!/bin/sh
# Seeds the fuzz corpora from the shared test data:
#   *.pcap   -> fuzz/corpus/pcap_reader/
#   *.pcapng -> fuzz/corpus/pcapng_reader/
#   timeseries CSVs, converted by `sluice series convert` (text and i32/f64
#   data), first 64 KiB of each -> fuzz/corpus/archive_reader/
#   flow-record CSVs, time-series CSV heads, example sessions, a mapping
#   -> fuzz/corpus/text_inputs/
#   frames of the classic pcaps -> fuzz/corpus/header_rewrite/
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
# Frames for the rewriter: up to 200 records of each classic pcap.
mkdir -p "$here/corpus/header_rewrite"
python3 - "$here/corpus/header_rewrite" "$src"/pcap/*.pcap <<'PY'
import struct, sys
out = sys.argv[1]
for i, path in enumerate(sys.argv[2:]):
    data = open(path, "rb").read()
    end = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    at, n = 24, 0
    while at + 16 <= len(data) and n < 200:
        incl = struct.unpack(end + "I", data[at + 8:at + 12])[0]
        open(f"{out}/{i}-{n}", "wb").write(data[at + 16:at + 16 + incl])
        at, n = at + 16 + incl, n + 1
PY
echo "seeded $(ls "$here/corpus/pcap_reader" | wc -l) pcap, $(ls "$here/corpus/pcapng_reader" | wc -l) pcapng, $(ls "$here/corpus/archive_reader" | wc -l) archive, $(ls "$here/corpus/text_inputs" | wc -l) text inputs and $(ls "$here/corpus/header_rewrite" | wc -l) frames"
