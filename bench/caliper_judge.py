#!/usr/bin/env python3
"""Judge one paced run of bench/caliper.sh from its capture, independently
of sluice's own analyzer.

Gap error is Caliper's measure, |D_R - D_M| per consecutive pair of
frames (D_M measured, D_R requested):
  --gap NS        constant requested gap; only pairs of frames adjacent in
                  the capture and both at least --min-size bytes count (the
                  full-size segments of a bulk transfer).
  --gaps FILE     the requested gap of every departure, in order (`sluice
                  pace --log-requested`); the capture must hold every frame
                  the pacer sent, in order (it may miss the first few).
--ks-mean NS adds the Kolmogorov-Smirnov distance between the measured
gaps of adjacent full-size frames and the exponential law of that mean
(a Poisson process). --tick NS instead gives, as "together/on_ticks", the
shares of those gaps shorter than a quarter tick (sent in one tick) and
within an eighth of a tick of a whole number of ticks (Caliper Fig. 8). --iperf JSON takes the goodput from iperf3's report
(TCP); otherwise it is the captured UDP payload rate of full-size frames.

Prints one line: p50_ns p95_ns p99_ns mbps ks pairs  (ks "-" when not asked)

usage: caliper_judge.py CAPTURE.pcap (--gap NS | --gaps FILE)
                        [--min-size N] [--ks-mean NS | --tick NS] [--iperf JSON]
"""
import argparse
import json
import math
import struct

MAGIC = {0xa1b23c4d: (1, '<'), 0xa1b2c3d4: (1000, '<'),
         0x4d3cb2a1: (1, '>'), 0xd4c3b2a1: (1000, '>')}


def frames(path):
    """(time ns, original length) of every frame, in file order."""
    return [(t, orig) for t, _, orig in records(path)]


def records(path, data=False):
    """Yields (time ns, captured bytes or None, original length) of every
    frame, in file order. With `data` the bytes are read, and a last
    record cut short (a capture stopped mid-write) ends the walk; without,
    they are skipped and such a record still counts."""
    with open(path, 'rb') as f:
        hdr = f.read(24)
        if len(hdr) < 24:
            raise SystemExit(f'{path}: not a pcap file (too short)')
        key = struct.unpack('<I', hdr[:4])[0]
        if key not in MAGIC:
            raise SystemExit(f'{path}: not a pcap file (magic {key:#x})')
        scale, end = MAGIC[key]
        rec = struct.Struct(end + 'IIII')
        while True:
            ph = f.read(16)
            if len(ph) < 16:
                break
            sec, frac, incl, orig = rec.unpack(ph)
            body = None
            if data:
                body = f.read(incl)
                if len(body) < incl:
                    break
            else:
                f.seek(incl, 1)
            yield sec * 1_000_000_000 + frac * scale, body, orig


def pct(sorted_values, p):
    if not sorted_values:
        return -1
    return sorted_values[min(len(sorted_values) - 1, int(p / 100 * len(sorted_values)))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument('capture')
    p.add_argument('--gap', type=float)
    p.add_argument('--gaps')
    p.add_argument('--min-size', type=int, default=1514)
    p.add_argument('--ks-mean', type=float)
    p.add_argument('--tick', type=float)
    p.add_argument('--iperf')
    a = p.parse_args()
    fr = frames(a.capture)
    full = [(x, y) for x, y in zip(fr, fr[1:]) if x[1] >= a.min_size and y[1] >= a.min_size]
    full_gaps = [y[0] - x[0] for x, y in full]
    if a.gaps:
        with open(a.gaps) as f:
            req = [int(line) for line in f if line.strip()]
        # The first departure has no gap before it (logged as 0). The
        # capture may have started a few departures late: the list is
        # aligned at the shift (0..10) with the smallest median error.
        measured = [y[0] - x[0] for x, y in zip(fr, fr[1:])]
        errs = min((sorted(abs(m - r) for m, r in zip(measured, req[1 + k:]))
                    for k in range(11)), key=lambda e: pct(e, 50))
    elif a.gap:
        errs = sorted(abs(g - round(a.gap)) for g in full_gaps)
    else:
        raise SystemExit('--gap or --gaps')
    ks = '-'
    if a.ks_mean:
        g = sorted(full_gaps)
        n = len(g)
        d = 0.0
        for i, x in enumerate(g):
            cdf = 1 - math.exp(-x / a.ks_mean)
            d = max(d, abs((i + 1) / n - cdf), abs(cdf - i / n))
        ks = f'{d:.4f}'
    elif a.tick and full_gaps:
        t = a.tick
        together = sum(g < t / 4 for g in full_gaps)
        on = sum(g >= t / 2 and abs(g / t - round(g / t)) * t <= t / 8 for g in full_gaps)
        ks = f'{together / len(full_gaps):.3f}/{on / len(full_gaps):.3f}'
    mbps = float('nan')
    if a.iperf:
        try:
            with open(a.iperf) as f:
                mbps = json.load(f)['end']['sum_received']['bits_per_second'] / 1e6
        except (OSError, ValueError, KeyError):
            pass
    elif full:
        span = full[-1][1][0] - full[0][0][0]
        if span > 0:
            mbps = (len(full) + 1) * (a.min_size - 42) * 8 / span * 1e3
    print(pct(errs, 50), pct(errs, 95), pct(errs, 99), f'{mbps:.1f}', ks, len(errs))


if __name__ == '__main__':
    main()
