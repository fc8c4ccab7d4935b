#!/usr/bin/env python3
"""Synthetic time-series archive for the series benchmark (paper Table II).

    mkseries.py OUT RECORDS SECONDS DEVICES [RECORD_BYTES]

RECORDS records evenly spread over SECONDS (microsecond timestamps, UTC,
starting 2024-01-01T00:00:00Z), devices round-robin, each record
RECORD_BYTES long in total (default 70: 30-byte header + 40 bytes of data).
Written straight in the archive format documented in docs/FORMATS.md.
"""
import struct
import sys

BCD = [bytes([(n // 10) << 4 | n % 10]) for n in range(100)]


def stamp(us):
    sec, frac = divmod(us, 1_000_000)
    h, rem = divmod(sec, 3600)
    m, s = divmod(rem, 60)
    return (b"\x20\x24\x01\x01" + BCD[h % 24] + BCD[m] + BCD[s]
            + BCD[frac // 10000] + BCD[frac // 100 % 100] + BCD[frac % 100] + b"\0\0")


def main():
    out, n, secs, devices = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    size = int(sys.argv[5]) if len(sys.argv) > 5 else 70
    assert 30 <= size <= 65535
    head = struct.pack(">H", size)
    ids = [(b"DEV%d" % d).ljust(16, b"\0") for d in range(devices)]
    data = b"x" * (size - 30)
    span_us = int(secs * 1_000_000)
    with open(out, "wb") as f:
        buf = []
        for i in range(n):
            buf.append(head + stamp(i * span_us // n) + ids[i % devices] + data)
            if len(buf) == 65536:
                f.write(b"".join(buf))
                buf = []
        f.write(b"".join(buf))


if __name__ == "__main__":
    main()
