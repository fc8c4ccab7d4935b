#!/usr/bin/env python3
"""A schedule for `python/inject_schedule.py --schedule` and the reference
trace gaperr.py judges its capture against (Caliper Figs. 4 and 6 driven
through `sluice inject`).

  caliper_schedule.py SCHEDULE REFERENCE.pcap COUNT cbr GAP_NS SIZE
  caliper_schedule.py SCHEDULE REFERENCE.pcap COUNT spikebump [SEED]

cbr: every gap GAP_NS, every frame SIZE bytes (Fig. 4: 1514, the 1518 B
of the paper less the FCS). spikebump: Caliper's Fig. 6 workload: gaps
from a spike at 20 us (60 %) and a bump around 200 us (40 %, normal, sd
20 us), the shape of Katabi et al.'s spike-bump density, and sizes 50 %
1514, 10 % 608, 40 % 60 B (the paper's 1518 / 612 / 64 less the FCS).
SCHEDULE: lines `GAP_NS SIZE`; the reference: one frame per line, due at
the sum of the gaps before it, its sequence number at offset 42 (as
inject_schedule.py prefixes its payloads), so gaperr.py pairs them.
"""
import random
import struct
import sys


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    sched, ref, count, law = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    rows = []
    if law == "cbr":
        gap, size = int(sys.argv[5]), int(sys.argv[6])
        rows = [(gap, size)] * count
    elif law == "spikebump":
        rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 6)
        for _ in range(count):
            if rng.random() < 0.6:
                gap = 20_000
            else:
                gap = max(1_000, round(rng.gauss(200_000, 20_000)))
            u = rng.random()
            size = 1514 if u < 0.5 else 608 if u < 0.6 else 60
            rows.append((gap, size))
    else:
        sys.exit(f"law {law!r}: cbr or spikebump")
    with open(sched, "w") as f:
        for gap, size in rows:
            f.write(f"{gap} {size}\n")
    with open(ref, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        t = 1_700_000_000 * 10**9
        for i, (gap, size) in enumerate(rows):
            if i:
                t += gap
            frame = bytearray(size)
            frame[0:6] = bytes.fromhex("020000000099")
            frame[12:14] = b"\x08\x00"
            frame[14] = 0x45
            frame[16:18] = struct.pack(">H", size - 14)
            frame[22:24] = bytes([64, 17])
            frame[42:50] = struct.pack(">Q", i)
            f.write(struct.pack("<IIII", t // 10**9, t % 10**9, size, size))
            f.write(frame)


if __name__ == "__main__":
    main()
