#!/usr/bin/env python3
"""The distributed-generator paper's Fig. 18 (§6.4): workers simulated
with their clocks' errors and a worker's capacity.

  sync_sim.py FOURIER.pcap WORKERS OUT.pcap [--cap PPS] [--start-us S]
              [--drift-ppm D] [--seed K] [--port0 1024]

FOURIER.pcap is one host's `profile run --mode fourier --queues WORKERS`
on a virtual clock, its profile with `flows: WORKERS`: queue q's packets
are the flow of UDP source port port0 + q (flow = packet index mod flows,
and a queue's k-th packet is the plan's packet k * WORKERS + q), so queue q
is worker q's share (the `components` split deals queue q to worker q mod
WORKERS). Each worker then
  - sends no faster than CAP packets/s (its capability: a packet due
    before the last one left plus 1/CAP waits for it; 0: unbounded), and
  - runs on a clock with a start error drawn from N(0, S us) and a rate
    error from N(0, D ppm): t' = t0 + (t - t0)(1 + d) + s.
The workers' packets are merged into OUT.pcap (nanosecond pcap, frames
as they were) for ratejudge.py to judge against the profile's synthesized
trace. Prints one line: workers, the errors drawn (max |s| us, max |d| ppm)
and packets delayed by the capacity.
"""
import heapq
import random
import struct
import sys

from caliper_judge import records


def main(argv):
    opts = {'--cap': '0', '--start-us': '0', '--drift-ppm': '0', '--seed': '1',
            '--port0': '1024'}
    args = []
    i = 0
    while i < len(argv):
        if argv[i] in opts:
            opts[argv[i]] = argv[i + 1]
            i += 2
        else:
            args.append(argv[i])
            i += 1
    if len(args) != 3:
        raise SystemExit(__doc__)
    src, workers, out = args[0], int(args[1]), args[2]
    cap = float(opts['--cap'])
    sigma_s = float(opts['--start-us']) * 1000.0
    sigma_d = float(opts['--drift-ppm']) * 1e-6
    port0 = int(opts['--port0'])
    rng = random.Random(int(opts['--seed']))
    per = [[] for _ in range(workers)]
    t0 = None
    for t, data, orig in records(src, data=True):
        if t0 is None:
            t0 = t
        # UDP over IPv4 (the profile's headers): the source port at 34.
        q = struct.unpack('!H', data[34:36])[0] - port0
        if not 0 <= q < workers:
            raise SystemExit(f'{src}: source port {q + port0}: not one of the {workers} queues')
        per[q].append((t, data, orig))
    gap = 1e9 / cap if cap > 0 else 0.0
    delayed = 0
    shifted = []
    errs = []
    for q, pkts in enumerate(per):
        s = rng.gauss(0.0, sigma_s) if sigma_s > 0 else 0.0
        d = rng.gauss(0.0, sigma_d) if sigma_d > 0 else 0.0
        errs.append((s, d))
        free = float('-inf')
        mine = []
        for t, data, orig in pkts:
            at = float(t)
            if at < free:
                at = free
                delayed += 1
            free = at + gap
            at = t0 + (at - t0) * (1.0 + d) + s
            mine.append((int(round(at)), q, data, orig))
        shifted.append(mine)
    low = min((m[0][0] for m in shifted if m), default=0)
    with open(out, 'wb') as f:
        f.write(struct.pack('<IHHiIII', 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
        for t, _, data, orig in heapq.merge(*shifted):
            # A worker ahead of the rest may start before t0: the file
            # starts at the earliest packet.
            t = t - min(low, t0) + t0
            f.write(struct.pack('<IIII', t // 1_000_000_000, t % 1_000_000_000, len(data), orig))
            f.write(data)
    print(f'workers={workers} start_max_us={max(abs(s) for s, _ in errs) / 1000:.1f} '
          f'drift_max_ppm={max(abs(d) for _, d in errs) * 1e6:.1f} delayed={delayed}')


if __name__ == '__main__':
    main(sys.argv[1:])
