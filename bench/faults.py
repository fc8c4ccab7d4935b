#!/usr/bin/env python3
"""Mutation-and-fault harness: damaged inputs through every command.

    bench/faults.py SLUICE [--mutants N] [--seed S] [--files K] [--mem MIB] [--veth]

Takes the repository's corpus (pcap/pcapng captures, time-series CSVs and
an archive made from one, flow-record CSVs, the example sessions, device
mappings and profiles), makes N seeded mutants of each of K files per kind
(flipped bytes, cuts, 2- and 4-byte fields set to 0 / all ones / random,
deleted and duplicated ranges, and for text: deleted, duplicated and
swapped lines, huge numbers), and runs each mutant through the commands
that read it, under a timeout and a memory limit (prlimit --as). A run
passes when it:
  - exits with a documented code (0, 1, 2, 3), not a signal or a panic (101);
  - ends within the timeout;
  - says why on stderr whenever it does not exit 0;
  - leaves no temporary file behind, and any pcap it leaves reads whole.
With --veth (root, iproute2) damaged captures are also replayed to a
veth pair made for the run (its peer in a namespace of its own, both
removed at the end), so the kernel's refusals (EINVAL, EMSGSIZE) are met.
Prints the counts per command and every failure; exits 1 if any.

With --services SECONDS it instead runs hostile clients against `sluice
inject` and `sluice worker` for that long (bench/faults_services.py): no
crash, no hang, the real clients served, memory bounded.
"""
import argparse
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# A hang, not a slow run: generous for a loaded 2-CPU machine.
TIMEOUT_S = 60


def corpus(kind):
    base = {
        "pcap": os.path.join(ROOT, "testdata", "pcap"),
        "series": os.path.join(ROOT, "testdata", "timeseries"),
        "records": os.path.join(ROOT, "testdata", "flows"),
        "session": os.path.join(ROOT, "examples", "sessions"),
        "mapping": os.path.join(ROOT, "examples", "mappings"),
        "profile": os.path.join(ROOT, "examples", "profiles"),
    }[kind]
    ends = {
        "pcap": (".pcap", ".pcapng"),
        "series": (".csv",),
        "records": (".csv",),
        "session": (".yaml", ".json"),
        "mapping": (".yaml", ".csv"),
        "profile": (".yaml", ".json"),
    }[kind]
    files = sorted(
        os.path.join(base, f) for f in os.listdir(base) if f.endswith(ends)
    )
    # Small files first: more structure per byte, faster runs.
    return sorted(files, key=os.path.getsize)


def mutate_bytes(rng, data):
    v = bytearray(data)
    for _ in range(1 + rng.randrange(3)):
        if not v:
            break
        at = rng.randrange(len(v))
        op = rng.randrange(7)
        if op == 0:
            v[at] ^= 1 << rng.randrange(8)
        elif op == 1:
            v[at] = rng.randrange(256)
        elif op == 2:
            del v[rng.randrange(len(v)):]
        elif op in (3, 4):
            width = 2 if op == 3 else 4
            val = rng.choice([0, (1 << (8 * width)) - 1, rng.getrandbits(8 * width)])
            b = val.to_bytes(width, rng.choice(["little", "big"]))
            v[at:at + width] = b[: max(0, min(width, len(v) - at))]
        elif op == 5:
            del v[at:at + 1 + rng.randrange(64)]
        else:
            v[at:at] = v[at:at + 1 + rng.randrange(64)]
    return bytes(v)


def mutate_text(rng, data):
    lines = data.split(b"\n")
    for _ in range(1 + rng.randrange(3)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 3:
            lines[i] = lines[i].replace(b"1", b"99999999999999999999", 1)
        elif op == 4:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
        else:
            return mutate_bytes(rng, b"\n".join(lines))
    return b"\n".join(lines)


class Harness:
    def __init__(self, sluice, mem_mib, work):
        self.sluice = sluice
        self.mem = mem_mib << 20
        self.work = work
        self.counts = {}
        self.failures = []

    def run(self, name, args, outputs=()):
        cmd = ["prlimit", f"--as={self.mem}", "--", self.sluice, *args]
        ok, why = True, ""
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT_S)
            code, err = p.returncode, p.stderr.decode(errors="replace")
            if code < 0 or code >= 128 and code != 130:
                ok, why = False, f"signal or abort (exit {code})"
            elif code == 101:
                ok, why = False, "panic"
            elif code not in (0, 1, 2, 3):
                ok, why = False, f"undocumented exit {code}"
            elif code != 0 and not err.strip():
                ok, why = False, f"exit {code} without a word on stderr"
        except subprocess.TimeoutExpired:
            ok, why, err = False, f"no end within {TIMEOUT_S} s", ""
        left = [f for f in os.listdir(self.work) if f.endswith(".sluice-tmp")]
        if left:
            ok, why = False, f"temporary files left: {left}"
        for out in outputs:
            if ok and out.endswith(".pcap") and os.path.exists(out):
                r = subprocess.run(
                    [self.sluice, "analyze", out], capture_output=True, timeout=TIMEOUT_S
                )
                if r.returncode != 0:
                    ok, why = False, f"left a pcap that does not read: {r.stderr[-200:]!r}"
        c = self.counts.setdefault(name, [0, 0])
        c[0] += 1
        if not ok:
            c[1] += 1
            self.failures.append(f"{name}: {' '.join(args)}: {why}: {err[-300:]}")
        for out in outputs:
            if os.path.exists(out):
                os.unlink(out)


VETH_NS = f"sfz{os.getpid()}"


def veth_up():
    """A veth pair for the run: its peer in a namespace of its own."""
    a, b = VETH_NS + "a", VETH_NS + "b"
    for cmd in (["ip", "netns", "add", VETH_NS],
                ["ip", "link", "add", a, "type", "veth", "peer", "name", b],
                ["ip", "link", "set", b, "netns", VETH_NS],
                ["ip", "link", "set", a, "up"],
                ["ip", "netns", "exec", VETH_NS, "ip", "link", "set", b, "up"]):
        subprocess.run(cmd, check=True, capture_output=True)
    return a


def veth_down():
    subprocess.run(["ip", "link", "del", VETH_NS + "a"], capture_output=True)
    subprocess.run(["ip", "netns", "del", VETH_NS], capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("sluice")
    ap.add_argument("--mutants", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--mem", type=int, default=2048, help="memory limit in MiB")
    ap.add_argument("--veth", action="store_true", help="also replay to a veth pair (root)")
    ap.add_argument("--services", type=int, metavar="SECONDS",
                    help="hostile clients against inject and worker for SECONDS instead")
    a = ap.parse_args()
    if a.services:
        sys.path.insert(0, HERE)
        import faults_services
        work = tempfile.mkdtemp(prefix="sluice-services-")
        try:
            bad = faults_services.run(os.path.abspath(a.sluice), a.services, a.seed, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        sys.exit(1 if bad else 0)
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="sluice-faults-")
    h = Harness(os.path.abspath(a.sluice), a.mem, work)
    out_pcap = os.path.join(work, "out.pcap")
    iface = veth_up() if a.veth else None

    def mutants(kind, mutate, limit=None):
        """Each mutant of the first --files files of `kind`, written in
        turn beside the others' and given with its source: (src, path)."""
        for src in corpus(kind)[: a.files]:
            data = open(src, "rb").read()[:limit]
            for k in range(a.mutants):
                m = os.path.join(work, f"m{k}" + os.path.splitext(src)[1])
                open(m, "wb").write(mutate(rng, data))
                yield src, m

    try:
        for src, m in mutants("pcap", mutate_bytes):
            h.run("replay", ["replay", m, "--clock", "virtual", "-q",
                             "--to", f"pcap:{out_pcap}", "--skip-unsupported"], [out_pcap])
            h.run("analyze", ["analyze", m, "--reference", src])
            h.run("analyze --flows", ["analyze", m, "--flows", "--json"])
            if iface:
                h.run("replay afpacket", ["replay", m, "--to", f"afpacket:{iface}", "-q",
                                          "--topspeed", "--limit", "2000",
                                          "--skip-unsupported"])
        arc = os.path.join(work, "a.arc")
        for _, m in mutants("series", mutate_text, limit=200_000):
            h.run("series convert", ["series", "convert", m, arc])
            if os.path.exists(arc):
                h.run("series dump", ["series", "dump", arc, "-o", os.path.join(work, "d.csv")],
                      [os.path.join(work, "d.csv")])
                h.run("series play", ["series", "play", arc, "--clock", "virtual", "-q",
                                      "--tight-loop", "0", "--limit", "5000"])
                raw = open(arc, "rb").read()
                open(arc, "wb").write(mutate_bytes(rng, raw))
                h.run("series play (damaged archive)",
                      ["series", "play", arc, "--clock", "virtual", "-q", "--tight-loop", "0"])
                os.unlink(arc)
        sess = os.path.join(work, "s.yaml")
        for _, m in mutants("records", mutate_text):
            h.run("flows import", ["flows", "import", m, "-o", sess])
            if os.path.exists(sess):
                h.run("flows run (imported)", ["flows", "run", sess, "--clock", "virtual",
                                               "-q", "--topspeed", "--limit", "20000"])
                os.unlink(sess)
        for _, m in mutants("session", mutate_text):
            h.run("flows run", ["flows", "run", m, "--clock", "virtual", "-q",
                                "--topspeed", "--limit", "20000"])
        rjob = os.path.join(ROOT, "testdata", "timeseries", "obspy_example_BW.RJOB_3ch_100Hz.csv")
        arc = os.path.join(work, "rjob.arc")
        subprocess.run([h.sluice, "series", "convert", rjob, arc], check=True,
                       capture_output=True)
        for _, m in mutants("mapping", mutate_text):
            h.run("series play --map", ["series", "play", arc, "--map", m, "--clock",
                                        "virtual", "-q", "--tight-loop", "0",
                                        "--limit", "2000"])
        for _, m in mutants("profile", mutate_text):
            h.run("profile run", ["profile", "run", m, "--clock", "virtual", "-q",
                                  "--limit", "20000"])
            h.run("profile run fourier", ["profile", "run", m, "--clock", "virtual", "-q",
                                          "--mode", "fourier", "--queues", "2",
                                          "--limit", "20000"])
    finally:
        if iface:
            veth_down()
        shutil.rmtree(work, ignore_errors=True)
    total = sum(c[0] for c in h.counts.values())
    bad = sum(c[1] for c in h.counts.values())
    for name, (n, f) in sorted(h.counts.items()):
        print(f"{name:32} runs {n:6} failures {f}")
    print(f"{total} runs, {bad} failures (seed {a.seed}, {a.mutants} mutants of {a.files} files per kind, "
          f"{a.mem} MiB, {TIMEOUT_S} s each)")
    for f in h.failures[:50]:
        print("FAIL", f)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
