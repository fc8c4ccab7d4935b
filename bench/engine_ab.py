#!/usr/bin/env python3
"""Alternated A/B runs of sluice binaries over the engine's hot paths.

    sudo bench/engine_ab.py RUNS BINARY...

Every round runs each binary once on each workload, in turn (this VM
swings between a fast and a slow phase for minutes at a time: only
alternated runs compare), then prints per workload and binary every
value, sorted, and the median:

  replay_null         replay of 1M 64-byte frames x 10 passes, --to null --topspeed (pps)
  replay_null_preload the same with --preload (pps)
  replay_veth         1M 64-byte frames, --topspeed, afpacket:va (bench/netns.sh) (pps)
  flows_1             1 flow x 4M packets, --to null --topspeed (pps)
  flows_2^20          2^20 concurrent flows x 3 packets, --to null --topspeed (pps)
  series_drops        1M records over 1 s, --to null --drift 10us --threads 2 --preload (drops; lower is better)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
work = os.environ.get("WORK", "/tmp/sluice-bench")
os.makedirs(work, exist_ok=True)


def made(name, *cmd):
    path = os.path.join(work, name)
    if not os.path.exists(path):
        subprocess.run([*cmd[:-1], path, *cmd[-1]], check=True)
    return path


def session(name, flows, packets):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(
            "flows:\n  - {proto: udp4, src: 10.0.0.1, dst: 10.99.0.2, sport: 1, dport: 9, "
            f"start: 0, packets: {packets}, pps: 1000, payload: 18, count: {flows}, "
            "step: {src: 1, sport: 1}}\n"
        )
    return path


def main():
    runs, bins = int(sys.argv[1]), sys.argv[2:]
    trace = made("t64.pcap", "python3", os.path.join(here, "mktrace.py"), ["1000000", "64", "1000"])
    arc = made("d1m1.arc", "python3", os.path.join(here, "mkseries.py"), ["1000000", "1", "1"])
    f0 = session("ab_f0.yaml", 1, 4_000_000)
    f20 = session("ab_f20.yaml", 1 << 20, 3)
    subprocess.run([os.path.join(here, "netns.sh"), "up"], check=True)
    subprocess.run(["sysctl", "-qw", "net.ipv6.conf.va.disable_ipv6=1"], check=False)
    work_loads = {
        "replay_null": (["replay", trace, "--to", "null", "--topspeed", "--loop", "10"], "pps"),
        "replay_null_preload": (
            ["replay", trace, "--to", "null", "--topspeed", "--loop", "10", "--preload"],
            "pps",
        ),
        "replay_veth": (["replay", trace, "--to", "afpacket:va", "--topspeed"], "pps"),
        "flows_1": (["flows", "run", f0, "--to", "null", "--topspeed"], "pps"),
        "flows_2^20": (["flows", "run", f20, "--to", "null", "--topspeed"], "pps"),
        "series_drops": (
            ["series", "play", arc, "--to", "null", "--drift", "10us", "--threads", "2", "--preload"],
            "dropped",
        ),
    }
    got = {(w, b): [] for w in work_loads for b in bins}
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    try:
        for _ in range(runs):
            for w, (args, key) in work_loads.items():
                for b in bins:
                    subprocess.run(
                        [b, *args, "-q", "--summary-json", out],
                        check=True,
                        stderr=subprocess.DEVNULL,
                    )
                    with open(out) as f:
                        got[(w, b)].append(round(json.load(f)[key]))
    finally:
        os.unlink(out)
        subprocess.run([os.path.join(here, "netns.sh"), "down"], check=False)
    for w in work_loads:
        meds = []
        for b in bins:
            v = sorted(got[(w, b)])
            meds.append(statistics.median(v))
            print(f"{w:20} {b}: {' '.join(map(str, v))} median {statistics.median(v):.0f}")
        if len(bins) == 2 and meds[0]:
            print(f"{w:20} ratio new/old {meds[1] / meds[0]:.3f}")


if __name__ == "__main__":
    main()
