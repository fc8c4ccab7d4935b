#!/usr/bin/env python3
"""Compares the frames of pcaps with the same packets built by scapy.

Usage: scapy_frames.py CASES.json

CASES is a list of {"pcap": PATH, "scapy": EXPR, "payload": N}. For frame
I (0-based) of each pcap, EXPR is evaluated with scapy's layers in scope,
I bound to the frame's index, D and S to its destination and source MACs,
and P to a Raw layer of the frame's last N bytes (the payload, which scapy
then checksums itself). The bytes scapy builds must equal the frame's.
Prints one line per case; exits 1 at the first frame that differs.
"""
import json
import sys

from scapy.all import IP, UDP, TCP, ICMP, GRE, Ether, Dot1Q, Dot1AD, Raw, rdpcap  # noqa: F401
from scapy.layers.inet6 import (  # noqa: F401
    IPv6, ICMPv6EchoRequest, IPv6ExtHdrHopByHop, IPv6ExtHdrDestOpt,
    IPv6ExtHdrSegmentRouting, IPv6ExtHdrFragment, RouterAlert,
)
from scapy.layers.vxlan import VXLAN  # noqa: F401
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer  # noqa: F401
from scapy.contrib.mpls import MPLS  # noqa: F401


def mac(b):
    return ":".join(f"{x:02x}" for x in b)


def main():
    cases = json.load(open(sys.argv[1]))
    for k, case in enumerate(cases):
        frames = [bytes(p) for p in rdpcap(case["pcap"])]
        if not frames:
            print(f"case {k}: no frames in {case['pcap']}")
            return 1
        for i, f in enumerate(frames):
            scope = dict(globals())
            scope.update(I=i, D=mac(f[0:6]), S=mac(f[6:12]),
                         P=Raw(load=f[len(f) - case["payload"]:]))
            want = bytes(eval(case["scapy"], scope))
            if want != f:
                at = next((j for j in range(min(len(f), len(want))) if f[j] != want[j]),
                          min(len(f), len(want)))
                print(f"case {k}: frame {i} differs from scapy's at byte {at} "
                      f"(lengths {len(f)} and {len(want)})\n sluice {f.hex()}\n scapy  {want.hex()}")
                return 1
        print(f"case {k}: {len(frames)} frames equal scapy's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
