#!/usr/bin/env python3
"""Run tcpreplay's own test suite (its test/Makefile.am, 4.5.5) against
sluice's stand-ins, or against the real tools.

Every tcpprep and tcprewrite case of the `tcpprep` and `tcprewrite`
targets, and every `tcpreplay -w` case of `tcpreplay`, is run verbatim:
its command line as the Makefile has it, with the programs named
$(TCPPREP), $(TCPREWRITE), $(TCPREPLAY) substituted, in a scratch
directory, and its output compared byte for byte with the suite's own
expected file (the little-endian set, test2.*). With --nic1 and --nic2
(two interfaces of yours), the cases that send to network devices
(tcpreplay -i/-I) run too; their outcome is "sent" when the command
succeeds.

  tcpreplay_suite.py --sluice target/release/sluice [--json OUT]
  tcpreplay_suite.py --real /opt/tcpreplay/bin      (the tools themselves)

The suite's files come from testdata/tcpreplay-suite/ (Makefile.am and
config.in verbatim, expected pcaps gzip-compressed, caches as they are), the trace from
testdata/pcap/tcpreplay__test.pcap. Prints one line per case and a table:
identical, different, refused (the stand-in exited non-zero), no golden
(tcpprep -P/-I, which the suite only runs).
"""
import argparse
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SUITE = os.path.join(ROOT, "testdata", "tcpreplay-suite")
TEST_PCAP = os.path.join(ROOT, "testdata", "pcap", "tcpreplay__test.pcap")


def targets(text):
    """{target: [recipe lines]} and the target lists of the three tools."""
    lines = text.split("\n")
    recipes, cur = {}, None
    for line in lines:
        m = re.match(r"^([A-Za-z0-9_.\-]+):(.*)$", line)
        if m and not line.startswith("\t"):
            cur = m.group(1)
            recipes[cur] = []
            continue
        if cur and line.startswith("\t"):
            recipes[cur].append(line[1:])
        elif cur and line.strip() == "":
            cur = None
    # Joined backslash continuations of the tool lists and recipes.
    joined = re.sub(r"\\\n", " ", text)
    lists = {}
    for tool in ("tcpprep", "tcprewrite", "tcpreplay"):
        m = re.search(r"^%s:(.*)$" % tool, joined, re.M)
        lists[tool] = m.group(1).split()
    return recipes, lists


def commands(recipe):
    """The recipe's logical lines (continuations joined)."""
    out, buf = [], ""
    for line in recipe:
        if line.endswith("\\"):
            buf += line[:-1] + " "
        else:
            out.append(buf + line)
            buf = ""
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", help="sluice binary (its stand-ins are run)")
    ap.add_argument("--real", help="directory of the real tcpprep, tcprewrite, tcpreplay")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", help="work in this directory and keep it")
    ap.add_argument("--nic1", help="first interface for the cases that send")
    ap.add_argument("--nic2", help="second interface for the cases that send")
    a = ap.parse_args()
    if bool(a.sluice) == bool(a.real):
        sys.exit("give --sluice BIN or --real DIR")
    if a.sluice:
        s = shlex.quote(os.path.abspath(a.sluice))
        progs = {t: f"{s} {t}" for t in ("tcpprep", "tcprewrite", "tcpreplay")}
    else:
        progs = {t: shlex.quote(os.path.join(a.real, t)) for t in ("tcpprep", "tcprewrite", "tcpreplay")}
    text = open(os.path.join(SUITE, "Makefile.am")).read()
    recipes, lists = targets(text)
    work = a.keep or tempfile.mkdtemp(prefix="tcpreplay-suite-")
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    shutil.copy(TEST_PCAP, os.path.join(src, "test.pcap"))
    for f in os.listdir(SUITE):
        if f.endswith(".pcap.gz"):
            with gzip.open(os.path.join(SUITE, f)) as g, open(os.path.join(src, f[:-8]), "wb") as o:
                o.write(g.read())
        elif f.startswith("test"):
            shutil.copy(os.path.join(SUITE, f), os.path.join(src, f))
    config = open(os.path.join(SUITE, "config.in")).read()
    config = config.replace("@srcdir@", src).replace("@nic1@", a.nic1 or "lo").replace("@nic2@", a.nic2 or "lo")
    with open(os.path.join(work, "config"), "w") as f:
        f.write(config)
    var = {
        "TCPPREP": progs["tcpprep"] + " --no-arg-comment",
        "TCPREWRITE": progs["tcprewrite"],
        "TCPREPLAY": progs["tcpreplay"],
        "ENABLE_DEBUG": "",
        "TEST_PCAP": os.path.join(src, "test.pcap"),
        "srcdir": src,
        "VARIANT": "2",
        "PRINTF": "printf",
        "nic1": a.nic1 or "",
        "nic2": a.nic2 or "",
    }
    results = []
    for tool in ("tcpprep", "tcprewrite", "tcpreplay"):
        for t in lists[tool]:
            if t.startswith("$(") or t not in recipes:
                continue
            cmds = commands(recipes[t])
            runs = [c for c in cmds if "$(TCP" in c]
            sends = tool == "tcpreplay" and not any(" -w " in c for c in runs)
            if sends and not (a.nic1 and a.nic2):
                continue  # sends to a network device
            diff = [c for c in cmds if re.search(r"\bdiff ", c)]
            for c in runs:
                line = c
                for k, v in var.items():
                    line = line.replace("$(%s)" % k, v)
                line = line.replace("$@", t)
                line = re.sub(r">>\s*test\.log\s*2>&1", "", line)
                # print_comment/print_info write into $(srcdir): keep them here.
                line = line.replace(">%s/" % src, ">")
                p = subprocess.run(["sh", "-c", line], cwd=work, capture_output=True, text=True)
                res = {"case": t, "tool": tool, "command": line.replace(src + "/", "").strip(),
                       "exit": p.returncode, "stderr": p.stderr.strip()[-400:]}
                if diff:
                    d = diff[0]
                    m = re.search(r"diff (\S+) (\S+)", d)
                    want = m.group(1).replace("$(srcdir)", src).replace("$(VARIANT)", "2").replace("$@", t)
                    got = os.path.join(work, m.group(2).replace("$@", t))
                    if p.returncode != 0:
                        res["result"] = "refused"
                    elif not os.path.exists(want):
                        res["result"] = "no golden"
                    elif os.path.exists(got) and open(got, "rb").read() == open(want, "rb").read():
                        res["result"] = "identical"
                    else:
                        res["result"] = "different"
                elif sends:
                    res["result"] = "sent" if p.returncode == 0 else "refused"
                else:
                    res["result"] = "no golden" if p.returncode == 0 else "refused"
                results.append(res)
    for r in results:
        why = "" if r["result"] in ("identical", "no golden", "sent") else "  " + (r["stderr"].splitlines() or [""])[-1]
        print(f"{r['tool']:10} {r['case']:24} {r['result']}{why}")
    counts = {}
    for r in results:
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    print("cases run: %d; %s" % (len(results), ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if not a.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
