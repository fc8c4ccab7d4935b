#!/usr/bin/env python3
"""The distributed-generator paper's Figs. 16-17 and Table 7 from the rows
bench/distributed.sh split writes (one per run):

    LOAD WORKERS SPLIT HIST_NMSE HIST_NMSE_REALIGNED SERIES_NMSE SERIES_NMSE_REALIGNED

Figs. 16-17: each NMSE over that of one worker at the same load and split
(hist raw / hist realigned / series realigned). Table 7: per split and
worker count, the highest load whose realigned hist NMSE is within one
worker's at the lowest load (the paper's baseline accuracy threshold).

  nmse_table.py ROWS.txt
"""
import sys


def main(path):
    rows = [line.split() for line in open(path) if line.strip()]
    r = {}
    for a in rows:
        try:
            r[(float(a[0]), int(a[1]), a[2])] = [float(x) for x in a[3:7]]
        except (ValueError, IndexError):
            continue  # a run that produced no judgement
    if not r:
        print("no runs to tabulate")
        return
    loads = sorted({k[0] for k in r})
    counts = sorted({k[1] for k in r})
    splits = sorted({k[2] for k in r})
    print("-- NMSE / NMSE(1 worker): hist raw / hist realigned / series realigned (Figs. 16-17)")
    for s in splits:
        for load in loads:
            one = r.get((load, 1, s))
            if not one:
                continue
            cells = []
            for n in counts:
                v = r.get((load, n, s))
                ratio = "/".join("%.2f" % (v[i] / one[i]) if v and one[i] else "-" for i in (0, 1, 3))
                cells.append(f"{n}: {ratio}")
            print(f"{s} load {load}: " + "  ".join(cells))
    print("-- Table 7: highest load (x R_max) with realigned hist NMSE <= one worker's at the lowest load")
    for s in splits:
        base = r.get((loads[0], 1, s))
        if not base:
            continue
        thr = base[1]
        cells = []
        for n in counts:
            ok = [l for l in loads if (l, n, s) in r and r[(l, n, s)][1] <= thr]
            cells.append(f"{n} workers: {max(ok) if ok else '-'}")
        print(f"{s}: threshold {thr:.3e}; " + "  ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
