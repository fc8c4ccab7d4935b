#!/usr/bin/env python3
"""Judge flow timing in a capture of `sluice flows run --stamp` (IPv4/UDP).

    flowtime.py CAPTURE FLOWS PACKETS PERIOD_NS GAP_NS

Flow k of the session starts at k × PERIOD and sends PACKETS packets GAP
apart. Each packet carries "SLF1", flow id, packet index after the UDP
header. Reports packet-count mismatches and, after removing the constant
offset between the two clocks (the median), the distribution of flow start
errors and of duration errors (FLOR §6.2).
"""
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        magic = struct.unpack("<I", f.read(24)[:4])[0]
        scale = 1 if magic == 0xA1B23C4D else 1000
        while True:
            h = f.read(16)
            if len(h) < 16:
                return
            s, frac, cap, _ = struct.unpack("<IIII", h)
            yield s * 1_000_000_000 + frac * scale, f.read(cap)


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else 0


def main():
    cap, n_flows, n_pkts, period, gap = sys.argv[1], *map(int, sys.argv[2:6])
    first, last, count = {}, {}, {}
    for t, d in read(cap):
        if len(d) >= 54 and d[12:14] == b"\x08\x00" and d[23] == 17 and d[42:46] == b"SLF1":
            flow, idx = struct.unpack(">II", d[46:54])
            count[flow] = count.get(flow, 0) + 1
            if idx == 0:
                first[flow] = t
            if idx == n_pkts - 1:
                last[flow] = t
    wrong = sum(1 for k in range(n_flows) if count.get(k, 0) != n_pkts)
    offs = sorted(first[k] - k * period for k in first)
    off = offs[len(offs) // 2] if offs else 0
    start = [abs(first[k] - k * period - off) for k in first]
    dur = [abs(last[k] - first[k] - (n_pkts - 1) * gap) for k in first if k in last]
    print(
        f"flows={len(count)}/{n_flows} packet_count_mismatches={wrong} "
        f"start_err_p50_ns={pct(start, 50)} p99_ns={pct(start, 99)} max_ns={max(start, default=0)} "
        f"duration_err_p50_ns={pct(dur, 50)} p99_ns={pct(dur, 99)} max_ns={max(dur, default=0)}"
    )


if __name__ == "__main__":
    main()
