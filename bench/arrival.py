#!/usr/bin/env python3
"""Judge a capture by arrival time against the time each packet was due.

    arrival.py CAPTURE REFERENCE

REFERENCE is a pcap whose timestamps are the due times (for `series play`,
the same run on a virtual clock: every datagram stamped with its record's
time). Packets are matched by content (first unmatched copy wins), less
the IPv4 identification and header checksum: several TX threads number
their datagrams differently from the one-thread reference. For each
matched packet e = (arrival − due) − median(arrival − due): the error after
removing the constant offset between the two clocks. Prints one line:
received, expected, lost, and |e| percentiles in ns.
"""
import struct
import sys
from collections import defaultdict, deque


def read(path):
    with open(path, "rb") as f:
        head = f.read(24)
        magic = struct.unpack("<I", head[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            end = "<"
        else:
            end = ">"
            magic = struct.unpack(">I", head[:4])[0]
        scale = 1 if magic == 0xA1B23C4D else 1000
        out = []
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                break
            s, frac, caplen, _ = struct.unpack(end + "IIII", rec)
            out.append((s * 1_000_000_000 + frac * scale, f.read(caplen)))
        return out


def key(frame):
    """The frame without its IPv4 ID and header checksum (Ethernet + IPv4)."""
    if len(frame) >= 34 and frame[12:14] == b"\x08\x00":
        return frame[:18] + frame[20:24] + frame[26:]
    return frame


def pct(sorted_vals, p):
    if not sorted_vals:
        return 0
    k = min(len(sorted_vals) - 1, int(p / 100.0 * len(sorted_vals)))
    return sorted_vals[k]


def main():
    cap, ref = read(sys.argv[1]), read(sys.argv[2])
    due = defaultdict(deque)
    for t, data in ref:
        due[key(data)].append(t)
    diffs = []
    for t, data in cap:
        q = due.get(key(data))
        if q:
            diffs.append(t - q.popleft())
    if not diffs:
        print(f"received=0 expected={len(ref)} lost={len(ref)}")
        return
    mid = sorted(diffs)[len(diffs) // 2]
    err = sorted(abs(d - mid) for d in diffs)
    print(
        f"received={len(diffs)} expected={len(ref)} lost={len(ref) - len(diffs)} "
        f"p50_ns={pct(err, 50)} p90_ns={pct(err, 90)} p99_ns={pct(err, 99)} "
        f"p999_ns={pct(err, 99.9)} max_ns={err[-1]}"
    )


if __name__ == "__main__":
    main()
