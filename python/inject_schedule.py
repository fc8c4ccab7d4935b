#!/usr/bin/env python3
"""Streams a schedule of UDP descriptions to `sluice inject` and records
the acknowledgements: the client the tests and bench/caliper.sh use.

Each description is a UDP frame built by sluice from fields, its payload
prefixed with its sequence number (8 bytes, big-endian) so a capture can
be matched to it. Packet i is due at start + i / pps (pps 0: all due at
once, to measure throughput). Prints one JSON line: descriptions sent,
acknowledged by status, seconds from the first byte sent to DONE.

  inject_schedule.py --connect unix:/tmp/i.sock --count 100000 --pps 50000 \
      --acks acks.txt          # lines: seq departure_ns status
"""

import argparse
import json
import struct
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sluice_inject as si  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--connect", required=True)
    p.add_argument("--count", type=int)
    p.add_argument("--pps", type=float, default=0.0)
    p.add_argument("--start-ms", type=float, default=20.0,
                   help="first departure this long after the session start")
    p.add_argument("--size", type=int, default=100, help="frame bytes")
    p.add_argument("--src", default="10.77.0.1")
    p.add_argument("--dst", default="10.77.0.2")
    p.add_argument("--dst-mac", default="02:00:00:00:00:99")
    p.add_argument("--time-base", choices=["session", "monotonic", "realtime"],
                   default="realtime")
    p.add_argument("--acks", help="write seq departure_ns status per line")
    p.add_argument("--schedule",
                   help="a file of lines `GAP_NS SIZE`: packet i is due the sum "
                        "of the gaps before it after the first, with its own frame "
                        "size (drawn laws and size mixes; --count defaults to its "
                        "lines, --pps and --size are not used)")
    p.add_argument("--reuse", type=int, default=0,
                   help="encode this many descriptions once and send them "
                        "again and again (throughput runs: the client's own "
                        "encoding then costs nothing)")
    a = p.parse_args()
    due, sizes = None, None
    if a.schedule:
        due, sizes, at = [], [], 0
        for n, line in enumerate(open(a.schedule), 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            try:
                gap, size = int(parts[0]), int(parts[1])
            except (ValueError, IndexError):
                p.error(f"{a.schedule}:{n}: `GAP_NS SIZE` expected")
            if gap < 0 or not 60 <= size <= 9000:
                p.error(f"{a.schedule}:{n}: a gap of 0 or more and a size of 60..9000 expected")
            if due:
                at += gap
            due.append(at)
            sizes.append(size)
        if a.count is None:
            a.count = len(due)
        if a.count > len(due) or a.reuse:
            p.error("--schedule: --count above its lines, or with --reuse")
    if a.count is None:
        p.error("--count is needed (or --schedule)")

    base = {"session": si.SESSION, "monotonic": si.MONOTONIC,
            "realtime": si.REALTIME}[a.time_base]
    c = si.Client.connect(a.connect)
    w = c.hello(time_base=base, dst_mac=a.dst_mac)
    t0 = {"session": 0, "monotonic": w["monotonic_ns"],
          "realtime": w["realtime_ns"]}[a.time_base]
    t0 += int(a.start_ms * 1e6)
    gap = 1e9 / a.pps if a.pps > 0 else 0.0

    def desc(i):
        if due is not None:
            return si.fields(i, t0 + due[i], a.src, a.dst, 40000, 9,
                             sizes[i], prefix=struct.pack(">Q", i))
        return si.fields(i, t0 + int(i * gap), a.src, a.dst, 40000, 9,
                         a.size, prefix=struct.pack(">Q", i))

    acks, statuses, done = [], {}, {}
    keep = a.acks is not None

    def reader():
        n = 0
        try:
            while True:
                kind, value = c.read_message()
                if kind == "acks":
                    n += len(value)
                    for _, _, st in value:
                        statuses[st] = statuses.get(st, 0) + 1
                    if keep:
                        acks.extend(value)
                elif kind in ("done", "eof"):
                    done["end"] = time.monotonic()
                    done["kind"] = kind
                    done["acked"] = n
                    return
        except si.ProtocolError as e:
            done["error"] = str(e)
            done["end"] = time.monotonic()
            done["acked"] = n

    th = threading.Thread(target=reader, daemon=True)
    if a.reuse:
        msgs = si.batches([desc(i) for i in range(a.reuse)])
        start = time.monotonic()
        th.start()
        sent = 0
        while sent < a.count:
            for m in msgs:
                c.send_bytes(m)
            sent += a.reuse
    else:
        msgs = si.batches([desc(i) for i in range(a.count)], limit=256 * 1024)
        start = time.monotonic()
        th.start()
        sent = a.count
        for m in msgs:
            c.send_bytes(m)
    c.bye()
    th.join()
    if keep:
        with open(a.acks, "w") as f:
            for s, t, st in acks:
                f.write(f"{s} {t} {st}\n")
    secs = done["end"] - start
    out = {"descriptions": sent, "acked": done.get("acked", 0),
           "statuses": statuses, "seconds": round(secs, 6),
           "per_second": round(done.get("acked", 0) / secs) if secs > 0 else 0}
    if "error" in done:
        out["error"] = done["error"]
    print(json.dumps(out))
    return 1 if "error" in done or out["acked"] != sent else 0


if __name__ == "__main__":
    sys.exit(main())
