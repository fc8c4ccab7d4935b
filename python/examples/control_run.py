#!/usr/bin/env python3
"""Run a sluice job over workers from Python and print the summary (JSON).

usage: control_run.py --worker NAME=ADDR=SINK [--worker ...] --command replay
                      --file trace.pcap --duration 2s [--tls DIR]
                      [--split flow] [--job '{"pps": "10k"}']
                      [--send '{"threads": 2}'] [--stats PATH]

Needs the installed package (pip install ./python). Exit 0 when every
worker finished, 1 when a worker could not be reached or failed, 2 when a
worker refused the job as bad input; errors are one line on stderr.
"""
import argparse
import json
import sys

from sluice_control import ControlError, JobRefused, Worker, run_job


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", action="append", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--duration", required=True)
    ap.add_argument("--tls")
    ap.add_argument("--split")
    ap.add_argument("--job", default="{}", help="the command's options (JSON object)")
    ap.add_argument("--send", default="{}", help="how it sends (JSON object)")
    ap.add_argument("--stats", help="write every worker's stats lines here")
    ap.add_argument("--max-skew-ns", type=int, default=100_000,
                    help="refuse to start when an offset is known no better than this")
    a = ap.parse_args()
    workers = []
    for spec in a.worker:
        name, addr, sink = spec.split("=", 2)
        workers.append(Worker(name, addr, sink, tls_dir=a.tls))
    stats = open(a.stats, "w") if a.stats else None

    def on_stats(w, line):
        if stats:
            stats.write(json.dumps({"worker": w.name, "stats": line}) + "\n")

    try:
        result = run_job(workers, a.command, a.file, json.loads(a.job), a.duration,
                         split=a.split, max_skew_ns=a.max_skew_ns, on_stats=on_stats,
                         send=json.loads(a.send))
    except ControlError as e:
        print(f"control_run: {e}", file=sys.stderr)
        return 2 if isinstance(e, JobRefused) else 1
    if stats:
        stats.close()
    print(json.dumps(result))
    return 0 if all(w["error"] is None for w in result["workers"]) else 1


if __name__ == "__main__":
    sys.exit(main())
