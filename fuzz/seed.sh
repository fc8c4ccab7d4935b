#!/bin/sh
# Seeds the fuzz corpora with the shared test captures:
#   *.pcap   -> fuzz/corpus/pcap_reader/
#   *.pcapng -> fuzz/corpus/pcapng_reader/
# Usage (from anywhere): fuzz/seed.sh [TESTDATA_DIR]
# Then, with a nightly toolchain and cargo-fuzz installed:
#   cd fuzz && cargo +nightly fuzz run pcap_reader
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=${1:-"$here/../../shared/testdata/pcap"}
if [ ! -d "$src" ]; then
    echo "seed.sh: testdata directory $src not found" >&2
    exit 1
fi
mkdir -p "$here/corpus/pcap_reader" "$here/corpus/pcapng_reader"
cp "$src"/*.pcap "$here/corpus/pcap_reader/"
cp "$src"/*.pcapng "$here/corpus/pcapng_reader/"
echo "seeded $(ls "$here/corpus/pcap_reader" | wc -l) pcap and $(ls "$here/corpus/pcapng_reader" | wc -l) pcapng inputs"
