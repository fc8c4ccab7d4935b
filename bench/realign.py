#!/usr/bin/env python3
"""Per-worker realignment (the distributed-generator paper's Fig. 14): each
worker's capture is shifted before the captures are merged, as if the
workers' clocks had been perfectly synchronized.

  realign.py OUT.pcap CAP0.pcap CAP1.pcap ... [--offsets NS,NS,...]

Without --offsets, each capture is shifted so that its first frame lies at
the earliest first frame of all of them (a split starts every worker's
share at the profile's start: what remains between their first frames is
start skew). With --offsets, capture k is shifted by minus offset k (ns;
its clock's measured offset, as `control run` reports it). The merged
capture is written in time order as a nanosecond pcap (Ethernet); the
shifts are printed, one line: shift_ns=S0,S1,...
"""
import heapq
import struct
import sys

from caliper_judge import records


def main(argv):
    offsets = None
    args = []
    i = 0
    while i < len(argv):
        if argv[i] == '--offsets':
            offsets = [int(x) for x in argv[i + 1].split(',')]
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) < 2:
        raise SystemExit(__doc__)
    out, caps = args[0], [list(records(p, data=True)) for p in args[1:]]
    if offsets is not None:
        if len(offsets) != len(caps):
            raise SystemExit(f'--offsets: {len(offsets)} offsets for {len(caps)} captures')
        shifts = [-o for o in offsets]
    else:
        firsts = [c[0][0] for c in caps if c]
        start = min(firsts) if firsts else 0
        shifts = [start - c[0][0] if c else 0 for c in caps]
    merged = heapq.merge(*[[(t + s, k, d, o) for t, d, o in c] for k, (c, s) in
                           enumerate(zip(caps, shifts))])
    with open(out, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
        for t, _, d, o in merged:
            t = max(t, 0)
            f.write(struct.pack('<IIII', t // 1_000_000_000, t % 1_000_000_000, len(d), o))
            f.write(d)
    print('shift_ns=' + ','.join(str(s) for s in shifts))


if __name__ == '__main__':
    main(sys.argv[1:])
