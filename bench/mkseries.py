#!/usr/bin/env python3
"""Synthetic time-series archive for the series benchmark (paper Table II).

    mkseries.py OUT RECORDS SECONDS DEVICES [RECORD_BYTES] [--sensors]

RECORDS records evenly spread over SECONDS (microsecond timestamps, UTC,
starting 2024-01-01T00:00:00Z), devices round-robin, each record
RECORD_BYTES long in total (default 70: 30-byte header + 40 bytes of data).
With --sensors each device is a sensor sampling every
P = SECONDS * DEVICES / RECORDS on its own phase (drawn once, seeded by
its number), so records of several sensors may share an instant, as in
the paper's seismic data set (Table III).
Written straight in the archive format documented in docs/FORMATS.md.
"""
import random
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
    sensors = "--sensors" in sys.argv
    argv = [a for a in sys.argv if a != "--sensors"]
    out, n, secs, devices = argv[1], int(argv[2]), float(argv[3]), int(argv[4])
    size = int(argv[5]) if len(argv) > 5 else 70
    assert 30 <= size <= 65535
    head = struct.pack(">H", size)
    ids = [(b"DEV%d" % d).ljust(16, b"\0") for d in range(devices)]
    data = b"x" * (size - 30)
    span_us = int(secs * 1_000_000)
    if sensors:
        period = span_us * devices // n
        phases = sorted((random.Random(d).randrange(period), d) for d in range(devices))
        times = ((k * period + ph, d) for k in range(n // devices) for ph, d in phases)
    else:
        times = ((i * span_us // n, i % devices) for i in range(n))
    with open(out, "wb") as f:
        buf = []
        for us, d in times:
            buf.append(head + stamp(us) + ids[d] + data)
            if len(buf) == 65536:
                f.write(b"".join(buf))
                buf = []
        f.write(b"".join(buf))


if __name__ == "__main__":
    main()
