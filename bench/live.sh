#!/usr/bin/env bash
# Live rate control, measured on real frames: a job of a real worker
# (sluice worker, its Jobs service on a unix socket, driven by sluice
# jobs) stepped 10k -> 100k -> 50k pps, paused and resumed, through a veth
# pair into a namespace where tcpdump captures it; then a ramp 0 -> 200k
# pps over 5 s on the same path. Judged per 100 ms window with
# bench/ratejudge.py's own pcap reader and binning (and its whole-series
# figures): each window's count against the rate the schedule says, and
# how long after its planned instant each change shows in the frames.
# tcpreplay has no live rate: it runs each step rate as a run of its own
# on the same path, its windows judged the same way (the peer's figure).
#
#   bench/live.sh [SLUICE] [STEP_S]     (default: target/release/sluice 2)
set -euo pipefail
S=$(realpath "${1:-target/release/sluice}") STEP=${2:-2}
here=$(cd "$(dirname "$0")" && pwd)
t=lv$$ out=$(mktemp -d)
cleanup() {
  [ -n "${wpid:-}" ] && kill "$wpid" 2>/dev/null
  ip link del ${t}a 2>/dev/null; ip netns del $t 2>/dev/null; rm -rf "$out"
}
trap cleanup EXIT
ip netns add $t
ip link add ${t}a type veth peer name ${t}b
ip link set ${t}b netns $t
sysctl -qw net.ipv6.conf.${t}a.disable_ipv6=1
ip netns exec $t sysctl -qw net.ipv6.conf.${t}b.disable_ipv6=1
ip link set ${t}a up
ip netns exec $t ip link set ${t}b up
python3 "$here/mktrace.py" "$out/t.pcap" 1000 64 10 >/dev/null

capture() { # FILE: tcpdump in the namespace, returns once it listens
  ip netns exec $t tcpdump -i ${t}b -n -s 96 -B 262144 --time-stamp-precision=nano \
    -w "$1" 2> "$1.log" &
  dump=$!
  for _ in $(seq 100); do grep -q listening "$1.log" 2>/dev/null && return; sleep 0.05; done
}
stop_capture() { sleep 0.5; kill -INT $dump; wait $dump || true; grep -h "dropped by kernel" "$1.log" || true; }

"$S" worker --clock-service none --listen unix:$out/w.sock --work-dir "$out" 2> "$out/w.log" &
wpid=$!
for _ in $(seq 100); do [ -S $out/w.sock ] && break; sleep 0.05; done
J() { "$S" jobs --worker unix:$out/w.sock "$@"; }
at() { J list --json | python3 -c "import json,sys; print([json.loads(l) for l in sys.stdin if json.loads(l)['id']==$1][0]['changed_at_ns'])"; }

capture "$out/steps.pcap"
id=$(J submit --to afpacket:${t}a --name steps -- replay "$out/t.pcap" --pps 10k --loop 0 \
  --duration 120s | awk '{print $2}')
sleep "$STEP"; J change "$id" --rate 100k >/dev/null; c1=$(at "$id")
sleep "$STEP"; J change "$id" --rate 50k >/dev/null; c2=$(at "$id")
sleep "$STEP"; J change "$id" --pause >/dev/null; c3=$(at "$id")
sleep 1; J change "$id" --resume >/dev/null; c4=$(at "$id")
sleep "$STEP"; J stop "$id" >/dev/null
J watch "$id" > "$out/steps.summary"
stop_capture "$out/steps.pcap"

capture "$out/ramp.pcap"
"$S" replay "$out/t.pcap" --pps 200k --loop 0 --ramp 0..200k/5s --duration 6s \
  --to afpacket:${t}a -q 2> "$out/ramp.log"
stop_capture "$out/ramp.pcap"

# The peer: tcpreplay at each step rate, a run each (no live change).
peer=()
if command -v tcpreplay >/dev/null; then
  for r in 10000 100000 50000; do
    capture "$out/tr$r.pcap"
    tcpreplay -q -i ${t}a --pps $r --loop 0 --duration "$STEP" "$out/t.pcap" >/dev/null 2>&1 || true
    stop_capture "$out/tr$r.pcap"
    peer+=("$r=$out/tr$r.pcap")
  done
fi

python3 - "$here" "$out" "$c1" "$c2" "$c3" "$c4" "${peer[@]}" <<'PY'
import statistics, sys
here, out = sys.argv[1], sys.argv[2]
c = [int(x) / 1e9 for x in sys.argv[3:7]]
sys.path.insert(0, here)
import ratejudge as rj

W = 0.1  # window, s


def windows(path):
    ts, _ = rj.read_pcap(path, 'all')
    t0 = ts[0]
    return [(t - t0) / 1e9 for t in ts]


def per_window(rel, rate_at, skip=()):
    """(window start, count, expected) of every whole window of one rate."""
    counts = rj.bins([int(x * 1e9) for x in rel], int(W * 1e9))
    rows = []
    for k, n in enumerate(counts[:-1]):
        a, b = k * W, (k + 1) * W
        ra, rb = rate_at(a), rate_at(b - 1e-9)
        if ra != rb or any(a < s < b for s in skip):
            continue
        rows.append((a, n, ra * W))
    return rows


def report(name, rows):
    errs = [abs(n - e) / e * 100 for _, n, e in rows if e > 0]
    if not errs:
        return
    errs.sort()
    within = sum(e <= 0.5 for e in errs)
    print(f"{name:28} windows {len(errs):3}  |err| p50 {statistics.median(errs):.3f}%  "
          f"p95 {errs[int(0.95 * (len(errs) - 1))]:.3f}%  max {errs[-1]:.3f}%  "
          f"within 0.5%: {within}/{len(errs)}")


# Steps: 10k, 100k from c1, 50k from c2, paused c3..c4, 50k after.
steps = windows(f"{out}/steps.pcap")
segs = [(0, 10e3), (c[0], 100e3), (c[1], 50e3), (c[2], 0.0), (c[3], 50e3)]
rate_at = lambda t: [r for s, r in segs if s <= t][-1]
rows = per_window(steps, rate_at)
print(f"steps: {len(steps)} frames; changes planned at " + ", ".join(f"{x:.4f}" for x in c) + " s")
for lo, hi, name in [(0, c[0], "10k"), (c[0], c[1], "100k"), (c[1], c[2], "50k"),
                     (c[3], 1e9, "50k after resume")]:
    report(f"sluice live {name}", [r for r in rows if lo <= r[0] < hi])
# Each frame against its place in the schedule the changes made (frame n
# due where the rates of the segments before it put it; the capture's
# clock starts at frame 0, due at the job's start): how late the frames
# right after each change are shows whether it took effect on time.
bounds, n0 = [], 0.0
for i, (s, r) in enumerate(segs):
    bounds.append((s, n0, r))
    e = segs[i + 1][0] if i + 1 < len(segs) else 1e18
    n0 += r * (e - s)
def due(n):
    s, first, r = [b for b in bounds if b[1] <= n and b[2] > 0][-1]
    return s + (n - first) / r
err = [steps[n] - due(n) for n in range(len(steps))]
ae = sorted(abs(x) for x in err)
print(f"every frame vs its schedule: |t - due| p50 {ae[len(ae) // 2] * 1e6:.2f} us  "
      f"p99 {ae[int(0.99 * (len(ae) - 1))] * 1e6:.2f} us  max {ae[-1] * 1e6:.2f} us")
for plan, name in [(c[0], "10k->100k"), (c[1], "100k->50k"), (c[2], "pause"), (c[3], "resume")]:
    near = [abs(err[n]) for n in range(len(steps)) if plan <= steps[n] < plan + 0.01]
    near.sort()
    if near:
        print(f"{name:10} at {plan:.4f} s: the frames of the next 10 ms |t - due| p50 "
              f"{near[len(near) // 2] * 1e6:.2f} us  max {near[-1] * 1e6:.2f} us ({len(near)} frames)")
gaps = [(steps[i], steps[i + 1] - steps[i]) for i in range(len(steps) - 1)]
pause = max((g, t) for t, g in gaps if c[2] - 0.05 <= t <= c[3])
print(f"pause {c[3] - c[2]:.4f} s planned: longest silence {pause[0]:.4f} s from {pause[1] - c[2]:+.6f} s")
tgt = f"{out}/steps.csv"
end = steps[-1]
with open(tgt, "w") as f:
    for k in range(int(end / W)):
        a, b = k * W, (k + 1) * W
        n = 0.0
        for i, (s, r) in enumerate(segs):
            e = segs[i + 1][0] if i + 1 < len(segs) else end
            lo, hi = max(a, s), min(b, e)
            n += max(0.0, hi - lo) * r
        f.write(f"{round(n)}\n")
import subprocess
print("ratejudge steps:", subprocess.run(
    ["python3", f"{here}/ratejudge.py", tgt, f"{out}/steps.pcap", "--sample-us", "100000",
     "--max-lag", "3", "--oneline"], capture_output=True, text=True).stdout.strip())

# The ramp: 40 000·t pps over 5 s, then 200k.
ramp = windows(f"{out}/ramp.pcap")
D = lambda t: 20000 * t * t if t <= 5 else 500000 + 200000 * (t - 5)
counts = rj.bins([int(x * 1e9) for x in ramp], int(W * 1e9))
errs = []
for k, n in enumerate(counts[:59]):
    e = D((k + 1) * W) - D(k * W)
    if k >= 5:  # from 0.5 s on: 2 000+ frames a window
        errs.append(abs(n - e) / e * 100)
errs.sort()
print(f"ramp 0->200k/5s {len(ramp)} frames: windows from 0.5 s: {len(errs)}  |err| p50 "
      f"{statistics.median(errs):.3f}%  p95 {errs[int(0.95 * (len(errs) - 1))]:.3f}%  max "
      f"{errs[-1]:.3f}%  within 1%: {sum(e <= 1 for e in errs)}/{len(errs)}")
tgt = f"{out}/ramp.csv"
with open(tgt, "w") as f:
    for k in range(60):
        f.write(f"{round(D((k + 1) * W) - D(k * W))}\n")
print("ratejudge ramp:", subprocess.run(
    ["python3", f"{here}/ratejudge.py", tgt, f"{out}/ramp.pcap", "--sample-us", "100000",
     "--max-lag", "3", "--oneline"], capture_output=True, text=True).stdout.strip())

for spec in sys.argv[7:]:
    r, path = spec.split("=", 1)
    rel = windows(path)
    rows = per_window(rel, lambda t: float(r))
    report(f"tcpreplay {int(r) // 1000}k (own run)", rows[2:])
PY
