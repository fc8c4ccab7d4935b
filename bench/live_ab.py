#!/usr/bin/env python3
"""What the live-rate hooks cost the engine's ceiling to null: alternated
runs (ABBA) of an older binary A and a newer B, B also with a timeline
that never changes (--ramp 0s=x1, as every job of a worker until its
first change) and with a changed rate (--ramp 0s=x1.01).

    sudo bench/live_ab.py RUNS A B

Prints per workload and configuration the median packets/s and the
median of the per-round ratios to A (each round's runs back to back, so
this VM's slow and fast phases cancel in it). Workloads, 64-byte frames:
replay --topspeed (10 passes of 1M), profile run of Poisson gaps at an
unreachable 50 Mpps (the paced path), replay --pps 50M (paced,
unreachable). Inputs are made under $WORK (default /tmp/sluice-bench).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
work = os.environ.get("WORK", "/tmp/sluice-bench")


def main():
    runs, a, b = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "t64.pcap")
    if not os.path.exists(trace):
        subprocess.run(["python3", os.path.join(here, "mktrace.py"), trace, "1000000", "64",
                        "1000"], check=True, stdout=subprocess.DEVNULL)
    prof = os.path.join(work, "ab_poisson.yaml")
    with open(prof, "w") as f:
        f.write("duration: 400ms\nrate: 50M\nipd: {dist: poisson}\n"
                "size: {dist: constant, bytes: 64}\n")
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name

    def pps(binary, args):
        subprocess.run([binary, *args, "-q", "--summary-json", out], check=True,
                       stderr=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)["pps"]

    loads = {
        "replay_null_top": lambda bn, r: pps(bn, ["replay", trace, "--to", "null", "--topspeed",
                                                   "--loop", "10"]),
        "profile_null_paced": lambda bn, r: pps(bn, ["profile", "run", prof, "--to", "null"]
                                                + (["--ramp", r] if r else [])),
        "replay_null_paced_50M": lambda bn, r: pps(bn, ["replay", trace, "--to", "null", "--pps",
                                                        "50M", "--loop", "3"]
                                                   + (["--ramp", r] if r else [])),
    }
    cfgs = [("A", a, None), ("B", b, None), ("B unchanged", b, "0s=x1"),
            ("B x1.01", b, "0s=x1.01")]
    got = {(w, c): [] for w in loads for c, _, _ in cfgs}
    try:
        for r in range(runs):
            for w, f in loads.items():
                for c, bn, ramp in (cfgs if r % 2 == 0 else cfgs[::-1]):
                    # At top speed a ramp is refused: the same run.
                    got[(w, c)].append(f(bn, None if w.endswith("top") else ramp))
    finally:
        os.unlink(out)
    for w in loads:
        base = got[(w, "A")]
        for c, _, _ in cfgs:
            v = got[(w, c)]
            paired = statistics.median(x / y for x, y in zip(v, base))
            print(f"{w:22} {c:12} median {statistics.median(v):>12.0f} pps  "
                  f"paired / A {paired:.3f}")


if __name__ == "__main__":
    main()
