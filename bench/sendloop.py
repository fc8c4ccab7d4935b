#!/usr/bin/env python3
"""Where a replay's send loop spends its time (TCPivo Table 3), from a
perf profile: `perf report -n --stdio --no-children --sort comm,dso,sym`
on stdin, the sampling frequency and the packets sent as arguments.

Each sample is put in one component by its thread and symbol:
  trace read     the IO thread reading the trace (reader, read(2), copies)
  build          the IO thread making frames (payload zeroed, checksums)
  send: user     the TX thread's own code (the sink, batching, pacing)
  send: kernel   the TX thread in the kernel sending (AF_PACKET, veth xmit)
  sink receive   the veth's far end receiving, which the kernel runs on
                 the sender's CPU (softirq): the sink's cost, not ours
  other          set-up and the rest
and printed as CPU time per packet (µs) and its share.

    perf report ... | bench/sendloop.py FREQ PACKETS [--json]
"""
import json
import re
import sys

RECEIVE = re.compile(
    r"net_rx_action|process_backlog|__netif_receive|netif_receive|ip_rcv|ip_rcv_core|"
    r"netif_rx|__napi_poll|napi|handle_softirqs|do_softirq|skb_defer|sk_skb_reason_drop|"
    r"packet_rcv|tpacket_rcv|__dev_forward_skb|eth_type_trans|kfree_skb|skb_release|"
    r"__local_bh_enable|free_frozen|__free_pages|skb_free_head|kmem_cache_free|ip_list_rcv")
BUILD = re.compile(r"payload|csum|checksum|rewrite|FlowHeaders|write_frame|Outbox|fill|build")
READ = re.compile(r"CaptureReader|StreamBuf|next_packet|pcap|read|memmove|memcpy|copy_")


def component(comm, dso, sym):
    kernel = dso.startswith("[kernel")
    if comm.startswith("sluice-tx"):
        if not kernel:
            return "send: user"
        return "sink receive" if RECEIVE.search(sym) else "send: kernel"
    if comm.startswith("sluice-io"):
        if BUILD.search(sym) and not kernel:
            return "build"
        return "trace read"
    return "other"


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    freq, packets = float(args[0]), int(args[1])
    samples = {}
    line = re.compile(r"^\s*[\d.]+%\s+(\d+)\s+(\S+)\s+(\S+)\s+\[[k.]\]\s+(.*)$")
    for text in sys.stdin:
        m = line.match(text)
        if not m:
            continue
        n, comm, dso, sym = int(m.group(1)), m.group(2), m.group(3), m.group(4).strip()
        c = component(comm, dso, sym)
        samples[c] = samples.get(c, 0) + n
    total = sum(samples.values())
    if total == 0 or packets <= 0:
        sys.exit("no samples, or no packets")
    order = ["trace read", "build", "send: user", "send: kernel", "sink receive", "other"]
    out = {c: {"us_per_packet": samples.get(c, 0) / freq / packets * 1e6,
               "share": samples.get(c, 0) / total} for c in order}
    ours = sum(out[c]["us_per_packet"] for c in order[:4])
    out["loop (ours, without the sink)"] = {"us_per_packet": ours, "share": None}
    if "--json" in sys.argv:
        print(json.dumps(out))
        return
    for c, v in out.items():
        share = "" if v["share"] is None else f" ({v['share'] * 100:.0f} % of samples)"
        print(f"{c}: {v['us_per_packet']:.3f} us/packet{share}")


if __name__ == "__main__":
    main()
