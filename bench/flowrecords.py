#!/usr/bin/env python3
"""Compare flow records (nfdump CSV) with what `sluice analyze --flows --json`
collected from a capture of their regeneration: per 5-tuple (ICMP: per
address pair and protocol), packets and IP bytes must be equal and the first
packet within 1 ms of the record's start (constant clock offset removed).

    flowrecords.py RECORDS.csv ANALYZE.json
"""
import csv
import json
import sys
from datetime import datetime

PROTO = {"TCP": 6, "UDP": 17, "ICMP": 1, "ICMP6": 58}


def key(proto, sa, da, sp, dp):
    return (proto, sa, da) if proto in (1, 58) else (proto, sa, da, int(sp), int(dp))


def main():
    want = {}
    for r in csv.DictReader(open(sys.argv[1])):
        p = PROTO.get(r["pr"].upper())
        if p is None:
            continue
        t = datetime.fromisoformat(r["ts"].replace("Z", "+00:00")).timestamp()
        k = key(p, r["sa"], r["da"], r["sp"], r["dp"].split(".")[0])
        w = want.setdefault(k, [0, 0, t])
        w[0] += int(r["ipkt"])
        w[1] += int(r["ibyt"])
        w[2] = min(w[2], t)
    got = {}
    for f in json.load(open(sys.argv[2]))["flows"]:
        k = key(f["proto"], f["src"], f["dst"], f["sport"], f["dport"])
        g = got.setdefault(k, [0, 0, f["first_ns"] / 1e9])
        g[0] += f["packets"]
        g[1] += f["ip_bytes"]
        g[2] = min(g[2], f["first_ns"] / 1e9)
    offs = sorted(got[k][2] - want[k][2] for k in want if k in got)
    off = offs[len(offs) // 2] if offs else 0
    counts = sum(1 for k in want if k in got and got[k][:2] != want[k][:2])
    late = [abs(got[k][2] - want[k][2] - off) for k in want if k in got]
    print(
        f"tuples={len(want)} collected={len(got)} missing={sum(1 for k in want if k not in got)} "
        f"count_mismatches={counts} start_err_max_ms={max(late, default=0) * 1e3:.3f} "
        f"within_1ms={sum(1 for x in late if x <= 1e-3)}/{len(late)}"
    )


if __name__ == "__main__":
    main()
