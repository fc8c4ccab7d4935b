#!/usr/bin/env python3
"""An RFC 2544-style throughput search through a worker's Jobs service,
changing the rate of one running job instead of restarting it per trial.

usage: live_search.py --worker unix:PATH --trace T.pcap --to afpacket:A
                      --rx afpacket:B [--lo 1k] [--hi 100k] [--trials 6]
                      [--loss 0.01] [--settle 0.3] [--tls DIR]

One replay job (looped, every frame stamped, counted on --rx) runs for
the whole search. Each trial sets the job's rate live, waits --settle
after the instant the change took effect, then counts over the next whole
statistics interval the frames sent (by their stamps' sequence numbers)
and received; the search keeps
the highest rate whose loss is at most --loss (bisection between --lo and
--hi on a log scale). Prints one JSON object: the rate found and every
trial. Needs the installed package (pip install ./python, or its wheel).
Exit 0 when the search ran, 1 when the service failed, 2 when it refused
the job.
"""
import argparse
import json
import math
import sys

from sluice_control import Jobs, Refused, ServiceError

SI = {"k": 1e3, "M": 1e6, "G": 1e9}


def rate(text):
    return float(text[:-1]) * SI[text[-1]] if text[-1] in SI else float(text)


def counts(rx_line):
    """(highest sequence numbers seen, frames received) over the streams."""
    seen = sum(s["last_seq"] + 1 for s in rx_line["streams"] if s["received"])
    got = sum(s["received"] - s["duplicates"] for s in rx_line["streams"])
    return seen, got


def trial(lines, since_s):
    """Frames the stamps say were sent and frames received over the first
    whole receiver interval that starts at or after `since_s` (seconds
    from the start; the receiver's lines count on its own clock, from
    just before the job's start). Loss by sequence numbers: frames still
    queued at either end of the window count in neither."""
    base = None
    for line in lines:
        schema = line.get("schema", "")
        if schema.startswith("sluice.rx"):
            if line["t"] < since_s:
                continue
            seen, got = counts(line)
            if base is None:
                base = (line["t"], seen, got)
                continue
            return line["t"] - base[0], seen - base[1], got - base[2]
        if schema.startswith("sluice.summary"):
            raise ServiceError("the job ended during the search")
    raise ServiceError("the job's stream ended during the search")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", required=True)
    ap.add_argument("--tls")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--to", required=True)
    ap.add_argument("--rx", required=True)
    ap.add_argument("--lo", default="1k")
    ap.add_argument("--hi", default="100k")
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--loss", type=float, default=0.01)
    ap.add_argument("--settle", type=float, default=0.3)
    a = ap.parse_args()
    lo, hi = rate(a.lo), rate(a.hi)
    try:
        with Jobs(a.worker, tls_dir=a.tls) as svc:
            job = svc.submit("replay", a.trace,
                             {"pps": f"{hi:.0f}", "loop": 0},
                             {"rx_stamp": "replace", "duration": "10m"},
                             to=a.to, name="live-search", rx=a.rx)
            jid = int(job["id"])
            lines = svc.watch(jid)
            trials, best = [], None
            r = hi
            try:
                for _ in range(a.trials):
                    info = svc.set_rate(jid, f"{r:.0f}")
                    at = int(info["changed_at_ns"]) / 1e9
                    span, sent, got = trial(lines, at + a.settle)
                    loss = 1 - got / sent if sent else 1.0
                    ok = loss <= a.loss
                    trials.append({"pps": round(r), "sent": sent, "received": got,
                                   "loss": round(loss, 6), "span_s": round(span, 3),
                                   "pass": ok})
                    if ok:
                        best, lo = r, r
                    else:
                        hi = r
                    r = math.sqrt(lo * hi)
            finally:
                svc.stop(jid)
                for _ in lines:
                    pass
    except Refused as e:
        print(f"live_search: {e}", file=sys.stderr)
        return 2
    except ServiceError as e:
        print(f"live_search: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"rate_pps": round(best) if best else None, "trials": trials}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
