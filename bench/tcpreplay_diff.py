#!/usr/bin/env python3
"""Differential test of sluice's tcprewrite and tcpprep against the real
tools (built from tcpreplay's repository): random option sets drawn from
the manual pages' options, over the vendored Ethernet traces, the same
seed for both; outputs compared byte for byte.

  tcpreplay_diff.py --sluice target/release/sluice --real /opt/tcpreplay/bin \
      [--sets 300] [--seed 1] [--json OUT]

Outcomes per set: identical; different (the first differing packet is
named); refused by sluice (its one-line refusal counted by option);
refused by the real tool (both refusing counts as agreeing).

Besides the Ethernet traces, each is also written with the link layers
tcpedit's other decoders read (Linux SLL and SLL2, raw IP, BSD null and
loopback: the same IP packets), edited as they are or with `--dlt enet`
(and both MACs, which raw, null and loopback input need). VLAN edits are
not drawn for those: tcpedit writes the tag at the old header's offset,
a frame no decoder reads (sluice writes the tag where Ethernet has it).
"""
import argparse
import collections
import json
import os
import random
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PCAPS = os.path.join(ROOT, "testdata", "pcap")


def ethernet_traces():
    out = []
    for f in sorted(os.listdir(PCAPS)):
        p = os.path.join(PCAPS, f)
        if not f.endswith(".pcap"):
            continue
        b = open(p, "rb").read(24)
        if len(b) == 24 and b[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") and struct.unpack("<I", b[20:24])[0] == 1:
            out.append(p)
    return out


def pcap_records(path):
    """(linktype, [(header bytes, packet bytes)]) of a little- or big-endian
    microsecond or nanosecond pcap."""
    b = open(path, "rb").read()
    end = "<" if b[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    lt = struct.unpack(end + "I", b[20:24])[0]
    out, at = [], 24
    while at + 16 <= len(b):
        ts, tf, cap, orig = struct.unpack(end + "IIII", b[at:at + 16])
        out.append((ts, tf, orig, b[at + 16:at + 16 + cap]))
        at += 16 + cap
    return b[:20], end, lt, out


def relink(src, dst, kind):
    """`src` (Ethernet) rewritten with the link layer `kind` in place of
    each frame's Ethernet header; frames that layer cannot carry (not IP,
    for raw, null and loopback; VLAN-tagged, for all) are left out.
    False when no frame is left."""
    head, end, _, recs = pcap_records(src)
    lts = {"sll": 113, "sll2": 276, "raw": 101, "null": 0, "loop": 108}
    out = []
    for ts, tf, orig, f in recs:
        if len(f) < 34:
            continue
        et, ip = f[12:14], f[14:]
        if et not in (b"\x08\x00", b"\x86\xdd") and kind in ("raw", "null", "loop"):
            continue
        if et in (b"\x81\x00", b"\x88\xa8"):
            continue
        v6 = et == b"\x86\xdd"
        if kind == "sll":
            l2 = struct.pack("!HHH", 0, 1, 6) + f[6:12] + b"\0\0" + et
        elif kind == "sll2":
            l2 = et + b"\0\0" + struct.pack("!IHBB", 2, 1, 0, 6) + f[6:12] + b"\0\0"
        elif kind == "raw":
            l2 = b""
        elif kind == "null":
            l2 = struct.pack("<I", 24 if v6 else 2)
        else:
            l2 = struct.pack(">I", 30 if v6 else 2)
        p = l2 + ip
        out.append(struct.pack(end + "IIII", ts, tf, len(p), orig - 14 + len(l2)) + p)
    if not out:
        return False
    with open(dst, "wb") as w:
        w.write(head + struct.pack(end + "I", lts[kind]) + b"".join(out))
    return True


def mac(r):
    return ":".join("%02x" % r.randrange(256) for _ in range(6)).replace(
        "%02x" % 0, "00", 0)


def ucast(r):
    m = [r.randrange(256) for _ in range(6)]
    m[0] &= 0xFE
    return ":".join("%02x" % x for x in m)


def net(r):
    bits = r.choice([8, 16, 24, 32])
    a = [r.randrange(1, 224), r.randrange(256), r.randrange(256), r.randrange(256)]
    return "%d.%d.%d.%d/%d" % (*a, bits)


def rewrite_opts(r, cache):
    pool = [
        lambda: ["--portmap=%d:%d" % (r.choice([53, 80, 443, 22]), r.randrange(1, 65535))],
        lambda: ["-r", "%d-%d:%d" % (1, r.randrange(2, 1024), r.randrange(1024, 65535))],
        lambda: ["-s", str(r.randrange(1, 10000))],
        lambda: ["--pnat=%s:%s" % (net(r), net(r))],
        lambda: ["-S", "%s:%s" % (net(r), net(r))],
        lambda: ["-D", "%s:%s" % (net(r), net(r))],
        lambda: ["--ttl=%s%d" % (r.choice(["", "+", "-"]), r.randrange(1, 255))],
        lambda: ["--tos=%d" % r.randrange(256)],
        lambda: ["--mtu-trunc", "--mtu=%d" % r.randrange(68, 1500)],
        lambda: ["--fixcsum"],
        lambda: ["-F", r.choice(["pad", "trunc", "del"])],
        lambda: ["--enet-dmac=%s" % ucast(r)],
        lambda: ["--enet-smac=%s" % ucast(r)],
        lambda: ["--enet-vlan=add", "--enet-vlan-tag=%d" % r.randrange(4096),
                 "--enet-vlan-pri=%d" % r.randrange(8), "--enet-vlan-cfi=%d" % r.randrange(2)],
        lambda: ["--enet-vlan=del"],
        lambda: ["--efcs"],
        lambda: ["--enet-subsmac=%s,%s" % (ucast(r), ucast(r))],
        lambda: ["--tcp-sequence=%d" % r.randrange(1, 1000)],
        lambda: ["--fixhdrlen"],
        lambda: ["--skipbroadcast"],
        lambda: ["--enet-mac-seed=%d" % r.randrange(1, 100)],
        lambda: ["--fuzz-seed=%d" % r.randrange(1000), "--fuzz-factor=%d" % r.randrange(1, 9)],
    ]
    if cache:
        pool += [
            lambda: ["-c", cache, "--enet-dmac=%s,%s" % (ucast(r), ucast(r))],
            lambda: ["-c", cache, "-e", "10.%d.0.1:10.%d.0.2" % (r.randrange(256), r.randrange(256))],
        ]
    words, seen = [], set()
    for _ in range(r.randrange(1, 4)):
        i = r.randrange(len(pool))
        if i in seen:
            continue
        seen.add(i)
        w = pool[i]()
        if "-c" in w and "-c" in words:
            continue
        words += w
    return words


def prep_opts(r, trace):
    mode = r.choice([
        ["-a", r.choice(["bridge", "router", "client", "server", "first"])],
        ["-c", net(r)], ["-p"], ["-r", r.choice(["10\\..*", "192\\.168\\..*", ".*1$"])],
        ["-e", ucast(r)],
    ])
    extra = []
    if r.random() < 0.3 and mode[0] in ("-c", "-e", "-r"):
        extra.append("--reverse")
    if r.random() < 0.3:
        extra.append("--nonip")
    if r.random() < 0.3:
        extra += [r.choice(["--include", "--exclude"]),
                  "P:%d-%d" % (r.randrange(1, 5), r.randrange(5, 40))]
    if r.random() < 0.3:
        extra += ["-C", "comment %d" % r.randrange(100)]
    return mode + extra


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def first_diff(a, b):
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sluice", required=True)
    ap.add_argument("--real", required=True)
    ap.add_argument("--sets", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--linktypes", type=float, default=0.4,
                    help="share of tcprewrite sets drawn on the other link types (0: none)")
    a = ap.parse_args()
    r = random.Random(a.seed)
    traces = ethernet_traces()
    work = tempfile.mkdtemp(prefix="tcpreplay-diff-")
    linked = []
    if a.linktypes:
        for t in traces:
            for kind in ("sll", "sll2", "raw", "null", "loop"):
                dst = os.path.join(work, "%s.%s.pcap" % (os.path.basename(t)[:-5], kind))
                if relink(t, dst, kind):
                    linked.append((dst, kind))
    results = []
    for k in range(a.sets):
        trace, kind = r.choice(traces), "enet"
        tool = r.choice(["tcprewrite", "tcprewrite", "tcpprep"])
        if linked and tool == "tcprewrite" and r.random() < a.linktypes:
            trace, kind = r.choice(linked)
        if tool == "tcprewrite":
            cache = os.path.join(work, "cache%d" % k)
            run([os.path.join(a.real, "tcpprep"), "-a", "bridge", "-i", trace, "-o", cache])
            opts = rewrite_opts(r, cache if os.path.exists(cache) else None)
            if kind != "enet":
                opts = [o for o in opts if not o.startswith("--enet-vlan")]
                if r.random() < 0.7:
                    opts += ["--dlt=enet", "--enet-smac=%s" % ucast(r), "--enet-dmac=%s" % ucast(r)]
            io = ["-i", trace, "-o"]
        else:
            opts = prep_opts(r, trace)
            io = ["-i", trace, "-o"]
        outs = []
        # One output name for both: tcpprep stores its command line.
        out = os.path.join(work, "out-%d" % k)
        for who in ("real", "sluice"):
            cmd = ([os.path.join(a.real, tool)] if who == "real" else [a.sluice, tool]) + io + [out] + opts
            p = run(cmd)
            data = open(out, "rb").read() if p.returncode == 0 and os.path.exists(out) else None
            if os.path.exists(out):
                os.remove(out)
            outs.append((p, data))
        (rp, rd), (sp, sd) = outs
        if rd is None and sd is None:
            res = "both refused"
        elif sd is None:
            line = (sp.stderr.strip().splitlines() or [""])[-1]
            res = "refused by sluice"
        elif rd is None:
            res = "refused by the real tool"
        elif rd == sd:
            res = "identical"
        else:
            res = "different"
        row = {"tool": tool, "trace": os.path.basename(trace), "link": kind, "options": opts,
               "result": res}
        if res == "different":
            row["first_byte"] = first_diff(rd, sd)
        if res == "refused by sluice":
            row["why"] = line
        if res == "refused by the real tool":
            row["why"] = (rp.stderr.strip().splitlines() or [""])[-1]
        results.append(row)
    counts = collections.Counter(x["result"] for x in results)
    print("option sets tried: %d; %s" % (len(results), ", ".join("%s: %d" % kv for kv in sorted(counts.items()))))
    for kind in sorted({x["link"] for x in results}):
        c = collections.Counter(x["result"] for x in results if x["link"] == kind)
        print("  %-5s %s" % (kind, ", ".join("%s: %d" % kv for kv in sorted(c.items()))))
    why = collections.Counter(x["why"].split(";")[0] for x in results if x["result"] == "refused by sluice")
    for w, n in why.most_common():
        print("  refused by sluice %3d  %s" % (n, w))
    for x in results:
        if x["result"] == "different":
            print("  different: %s %s %s (first byte %d)" % (x["tool"], x["trace"], " ".join(x["options"]).replace(work + "/", ""), x["first_byte"]))
        if x["result"] == "refused by the real tool":
            print("  real refused: %s %s %s: %s" % (x["tool"], x["trace"], " ".join(x["options"]).replace(work + "/", ""), x["why"]))
    if a.json:
        json.dump(results, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
