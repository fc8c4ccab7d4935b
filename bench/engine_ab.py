#!/usr/bin/env python3
"""Alternated A/B runs of sluice binaries over the engine's hot paths.

    sudo bench/engine_ab.py RUNS BINARY...

Every round runs each binary once on each workload, in turn (this VM
swings between a fast and a slow phase for minutes at a time: only
alternated runs compare; the order turns every other round), then prints
per workload and binary every value, sorted, and the median; against the
last binary given, the ratio of the medians and the median of the
rounds' own ratios (each round's runs are back to back: the one ratio
this VM's phases leave alone):

  replay_null         replay of 1M 64-byte frames x 10 passes, --to null --topspeed (pps)
  replay_null_preload the same with --preload (pps)
  replay_veth         1M 64-byte frames, --topspeed, afpacket:va (bench/netns.sh) (pps)
  flows_1             1 flow x 4M packets, --to null --topspeed (pps)
  flows_2^20          2^20 concurrent flows x 3 packets, --to null --topspeed (pps)
  series_drops        1M records over 1 s, --to null --drift 10us --threads 2 --preload (drops; lower is better)
  profile_null        profile run: Poisson gaps at an unreachable 50 Mpps for 0.4 s, 64-byte
                      frames, --to null (pps achieved)
  pace_null           pace --gap 1ns --to null, frames written into a TAP at 1M/s for 2 s by
                      sluice replay (frames/s pace sent; the writer is the same binary)
  inject_null         inject --to null, one client (python/inject_schedule.py), 500k descriptions
                      all due at once (descriptions/s acknowledged)

ONLY=profile_null,flows_1 runs just those workloads. A binary without a
workload's command (profile, pace and inject came after
d58f95a) is skipped there.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

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


def has(binary, command):
    """Whether `binary` has the subcommand `command`."""
    r = subprocess.run([binary, command, "--help"], capture_output=True)
    return r.returncode == 0


def summary_of(binary, args, key, out):
    """Runs one sending command; `key` of its --summary-json."""
    subprocess.run([binary, *args, "-q", "--summary-json", out], check=True,
                   stderr=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)[key]


def pace_rate(binary, trace, secs=2):
    """Frames/s `pace` moved from a TAP to null while `replay` wrote 1M/s into it."""
    tap = "slcab1"
    subprocess.run(["ip", "link", "del", tap], stderr=subprocess.DEVNULL)
    subprocess.run(["ip", "tuntap", "add", "dev", tap, "mode", "tap"], check=True)
    subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{tap}.disable_ipv6=1"], check=False)
    subprocess.run(["ip", "link", "set", tap, "txqueuelen", "10000", "up"], check=True)
    try:
        # A paced replay sends every frame due before --duration, however
        # late (the clock backstop is twice the duration and 1 s): pace
        # reads the TAP all that time, and its rate is over the writer's
        # own span.
        pace = subprocess.Popen(
            [binary, "pace", "--tap", tap, "--to", "null", "--gap", "1ns",
             "--queue-limit", "65536", "--duration", f"{2 * secs + 3}s"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            subprocess.run([binary, "replay", trace, "--to", f"afpacket:{tap}", "--pps", "1M",
                            "--loop", "1000", "--duration", f"{secs}s", "-q",
                            "--summary-json", out.name],
                           check=True, stderr=subprocess.DEVNULL)
            with open(out.name) as f:
                span = json.load(f)["duration_s"]
        err = pace.communicate(timeout=60)[1]
        return int(re.search(r"sent (\d+) packets", err).group(1)) / span
    finally:
        subprocess.run(["ip", "link", "del", tap], stderr=subprocess.DEVNULL)


def inject_rate(binary, count=500_000):
    """Descriptions/s one client got acknowledged by `inject --to null`."""
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "i.sock")
        inj = subprocess.Popen([binary, "inject", "--listen", f"unix:{sock}", "--to", "null",
                                "--sessions", "1", "-q"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        client = subprocess.run(
            ["python3", os.path.join(here, "..", "python", "inject_schedule.py"),
             "--connect", f"unix:{sock}", "--count", str(count), "--reuse", "15000",
             "--size", "64", "--start-ms", "0"],
            check=True, capture_output=True, text=True)
        inj.wait(timeout=60)
        r = json.loads(client.stdout)
        assert r["acked"] == r["descriptions"], r
        return r["per_second"]


def main():
    runs, bins = int(sys.argv[1]), sys.argv[2:]
    trace = made("t64.pcap", "python3", os.path.join(here, "mktrace.py"), ["1000000", "64", "1000"])
    arc = made("d1m1.arc", "python3", os.path.join(here, "mkseries.py"), ["1000000", "1", "1"])
    f0 = session("ab_f0.yaml", 1, 4_000_000)
    f20 = session("ab_f20.yaml", 1 << 20, 3)
    prof = os.path.join(work, "ab_poisson.yaml")
    with open(prof, "w") as f:
        f.write("duration: 400ms\nrate: 50M\nipd: {dist: poisson}\nsize: {dist: constant, bytes: 64}\n")
    subprocess.run([os.path.join(here, "netns.sh"), "up"], check=True)
    subprocess.run(["sysctl", "-qw", "net.ipv6.conf.va.disable_ipv6=1"], check=False)
    cli = {
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
    out = tempfile.NamedTemporaryFile(suffix=".json", delete=False).name
    # Workload: (the command it needs, how one run of a binary measures it).
    work_loads = {
        w: (args[0], lambda b, a=args, k=key: summary_of(b, a, k, out))
        for w, (args, key) in cli.items()
    }
    work_loads["profile_null"] = (
        "profile",
        lambda b: summary_of(b, ["profile", "run", prof, "--to", "null"], "pps", out),
    )
    work_loads["pace_null"] = ("pace", lambda b: pace_rate(b, trace))
    work_loads["inject_null"] = ("inject", lambda b: inject_rate(b))
    # ONLY=w1,w2: just those workloads (a second look at a few rows).
    only = [w for w in os.environ.get("ONLY", "").split(",") if w]
    if only:
        work_loads = {w: v for w, v in work_loads.items() if w in only}
    got = {(w, b): [] for w in work_loads for b in bins}
    # Asked once: which binary has which workload's command.
    runs_it = {(w, b): has(b, c) for w, (c, _) in work_loads.items() for b in bins}
    try:
        for r in range(runs):
            for w, (_, measure) in work_loads.items():
                # ABBA: the binaries' order turns every round, so a drift
                # of the machine within a round favours neither.
                for b in bins if r % 2 == 0 else bins[::-1]:
                    if runs_it[(w, b)]:
                        got[(w, b)].append(round(measure(b)))
    finally:
        os.unlink(out)
        subprocess.run([os.path.join(here, "netns.sh"), "down"], check=False)
    for w in work_loads:
        meds = []
        for b in bins:
            v = sorted(got[(w, b)])
            if not v:
                print(f"{w:20} {b}: skipped (no such command)")
                meds.append(None)
                continue
            meds.append(statistics.median(v))
            print(f"{w:20} {b}: {' '.join(map(str, v))} median {statistics.median(v):.0f}")
        # Each binary against the last one given (the newest): the ratio
        # of the medians, and the median of each round's ratio (the two
        # measured back to back, so the machine's slow and fast phases
        # cancel in it).
        new = got[(w, bins[-1])]
        for b, m in zip(bins[:-1], meds[:-1]):
            if m and meds[-1] is not None:
                paired = [n / o for n, o in zip(new, got[(w, b)]) if o]
                print(f"{w:20} ratio {bins[-1]} / {b}: {meds[-1] / m:.3f}"
                      f" (per round: median {statistics.median(paired):.3f})")


if __name__ == "__main__":
    main()
