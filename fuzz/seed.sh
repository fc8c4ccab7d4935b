#!/bin/sh
# Seeds the fuzz corpora from the shared test data:
#   *.pcap   -> fuzz/corpus/pcap_reader/
#   *.pcapng -> fuzz/corpus/pcapng_reader/
#   both     -> fuzz/corpus/pcap_differential/
#   testdata/traces ERF and TSH -> fuzz/corpus/erf_reader/, tsh_reader/
#   timeseries CSVs, converted by `sluice series convert` (text and i32/f64
#   data), first 64 KiB of each -> fuzz/corpus/archive_reader/
#   flow-record CSVs, time-series CSV heads, example sessions, a mapping,
#   example profiles -> fuzz/corpus/text_inputs/
#   call sequences, a plan and profiles -> fuzz/corpus/control_plane/
#   client streams -> fuzz/corpus/inject_decoder/
#   frames of the classic pcaps -> fuzz/corpus/header_rewrite/
#   each classic pcap as a frame list -> fuzz/corpus/rx_fragments/
#   tcpprep caches (testdata/tcpreplay-suite) -> fuzz/corpus/tcpprep_cache/
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
# ERF and TSH: libtrace's test traces (the repository's testdata/traces).
mkdir -p "$here/corpus/erf_reader" "$here/corpus/tsh_reader"
cp "$here"/../testdata/traces/*.erf "$here/corpus/erf_reader/"
gzip -dc "$here"/../testdata/traces/*.tsh.gz > "$here/corpus/tsh_reader/libtrace_10_packets"
cp "$src"/pcap/*.pcap "$here/corpus/pcap_reader/"
cp "$src"/pcap/*.pcapng "$here/corpus/pcapng_reader/"
# The differential target reads both formats.
mkdir -p "$here/corpus/pcap_differential"
cp "$src"/pcap/*.pcap "$src"/pcap/*.pcapng "$here/corpus/pcap_differential/"
if [ -d "$src/tcpreplay-suite" ]; then
    mkdir -p "$here/corpus/tcpprep_cache"
    find "$src/tcpreplay-suite" -name "test.*" ! -name "*.gz" -exec cp {} "$here/corpus/tcpprep_cache/" \;
fi
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
# Profiles, and plans for the control plane (as text and as calls).
cp "$here"/../examples/profiles/* "$here/corpus/text_inputs/"
mkdir -p "$here/corpus/control_plane" "$here/corpus/inject_decoder"
cp "$here"/../examples/profiles/* "$here/corpus/control_plane/"
printf 'workers:\n  - {name: w0, address: "unix:/run/w.sock", to: "null"}\njob: {command: replay, file: t.pcap, files: [m.csv], args: ["--pps", "1k"], duration: 1s}\n' \
    > "$here/corpus/control_plane/plan.yaml"
python3 - "$here/corpus/control_plane" "$here/corpus/inject_decoder" <<'PY'
import struct, sys
calls, inject = sys.argv[1], sys.argv[2]
def call(kind, body):
    return bytes([kind, len(body)]) + body
# register "w0"; port map {id 0, worker w0, sink null}; upload job.pcap;
# task (replay, file_id job.pcap, port 0); stop; release; clock.
port = b"\x08\x00\x12\x02w0\x1a\x04null"
seqs = {
    "lease": call(0, b"w0") + call(1, b"\x0a" + bytes([len(port)]) + port)
             + call(2, b"\x0a\x08job.pcap\x12\x04abcd")
             + call(3, b"\x08\x01\x12\x08job.pcap\x20\x00") + call(4, b"") + call(5, b""),
    "hostile": call(1, b"\x0a\x14\x08\x00\x12\x02w0\x1a\x0cpcap:/etc/pw")
               + call(0, b"w0") + call(2, b"\x0a\x09../x.pcap\x12\x01a")
               + call(3, b"\x12\x0b/etc/shadow\x1a\x05--map") + call(6, b"\x08\x01"),
}
for name, data in seqs.items():
    open(f"{calls}/{name}", "wb").write(data)
# Inject streams: HELLO (session time), DESCS of raw and field-built
# descriptions, BYE; one with a token after HELLO, one with a stored payload.
def msg(kind, body):
    return struct.pack("<I", len(body) + 1) + bytes([kind]) + body
hello = b"SLIJ" + struct.pack("<HBB", 1, 0, 0) + bytes(12)
raw = struct.pack("<QQHHHBB", 1, 1000, 60, 14, 0, 0, 0) + b"\xff" * 12 + b"\x88\xb5"
descs = msg(2, struct.pack("<I", 1) + raw)
open(f"{inject}/session", "wb").write(msg(1, hello) + descs + msg(3, b""))
open(f"{inject}/token", "wb").write(msg(1, hello + bytes(32)) + descs + msg(3, b""))
open(f"{inject}/many", "wb").write(msg(1, hello) + descs * 20 + msg(3, b""))
# A stored payload (PAYLOAD id 5) named by a raw description (flag 1).
named = struct.pack("<QQHHHBB", 2, 2000, 100, 14, 4, 0, 1) + b"\xff" * 12 + b"\x88\xb5" + struct.pack("<I", 5)
open(f"{inject}/stored", "wb").write(msg(1, hello) + msg(4, struct.pack("<I", 5) + b"payload")
                                     + msg(2, struct.pack("<I", 1) + named) + msg(3, b""))
PY
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
# rx_fragments: a pcap's first 64 frames as (u16 length, u8 time step,
# bytes), the testdata's fragmented traces among them.
mkdir -p "$here/corpus/rx_fragments"
python3 - "$here/corpus/rx_fragments" "$src"/pcap/*.pcap <<'PY'
import struct, sys
out = sys.argv[1]
for i, path in enumerate(sys.argv[2:]):
    data = open(path, "rb").read()
    end = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    at, n, seed = 24, 0, b""
    while at + 16 <= len(data) and n < 64:
        incl = struct.unpack(end + "I", data[at + 8:at + 12])[0]
        frame = data[at + 16:at + 16 + incl][:65535]
        seed += struct.pack(">HB", len(frame), n % 3) + frame
        at, n = at + 16 + incl, n + 1
    open(f"{out}/{i}", "wb").write(seed)
PY
# stateful_peer: the same frame lists (TCP and UDP conversations among
# them) for the stateful hosts.
mkdir -p "$here/corpus/stateful_peer"
cp "$here/corpus/rx_fragments/"* "$here/corpus/stateful_peer/"
echo "seeded $(ls "$here/corpus/control_plane" | wc -l) control-plane, $(ls "$here/corpus/inject_decoder" | wc -l) inject,"
echo "seeded $(ls "$here/corpus/pcap_reader" | wc -l) pcap, $(ls "$here/corpus/pcapng_reader" | wc -l) pcapng, $(ls "$here/corpus/archive_reader" | wc -l) archive, $(ls "$here/corpus/text_inputs" | wc -l) text inputs and $(ls "$here/corpus/header_rewrite" | wc -l) frames"
