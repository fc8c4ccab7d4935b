#!/usr/bin/env python3
"""Caliper §4.5: an ns-3 node's TCP sender reaches a real kernel receiver
through `sluice pace`.

The ns-3 node (realtime scheduler, real checksums) owns one FdNetDevice on
a packet socket bound to IFACE, the kernel side of pace's TAP: what the
node sends leaves on IFACE, pace reads it from the TAP and sends it at its
gaps; what pace writes back into the TAP (`--return`) arrives on IFACE and
reaches the node. The node takes IFACE's MAC, so pace's return filter
passes its frames, and IFACE has no IP address (run it in a namespace of
its own), so the kernel leaves the node's traffic alone.

    ns3_pace.py --iface slcapn --ip 10.77.0.1/24 --to 10.77.0.2:5001 \
        --bytes 1000000 [--seconds 20] [--pcap PREFIX]
    ns3_pace.py --simulate 200 --to 10.77.0.2:5001 --bytes 1000000 --pcap PREFIX

Runs --seconds of simulated (= real) time; the receiver says what arrived.
With --pcap PREFIX, ns-3 writes what the node sent and received
(PREFIX-0-0.pcap): the simulated side of Caliper's Fig. 10.
Needs `pip install ns3` (3.44, Python bindings) and root.
"""
import argparse
import json
import socket
import subprocess
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--iface", help="the kernel side of pace's TAP")
    p.add_argument("--ip", help="the node's address/prefix, e.g. 10.77.0.1/24")
    p.add_argument("--to", required=True, help="the real receiver, ADDR:PORT")
    p.add_argument("--bytes", type=int, default=1_000_000)
    p.add_argument("--seconds", type=float, default=20.0, help="give up after this long")
    p.add_argument("--pcap", help="write the node's pcap as PREFIX-0-0.pcap")
    p.add_argument("--simulate", metavar="GAP_US", type=float,
                   help="no real parts: the same sender to an ns-3 receiver over a simulated "
                        "link whose rate gives a full frame GAP_US; the receiver's pcap is "
                        "PREFIX-1-0.pcap (Caliper Fig. 10's simulated side)")
    a = p.parse_args()
    if a.simulate:
        return simulate(a)
    if not (a.iface and a.ip):
        p.error("--iface and --ip are needed (or --simulate)")

    # The raw socket first: a bad interface fails before ns-3 loads (~20 s).
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    sock.bind((a.iface, 0))
    mac = open(f"/sys/class/net/{a.iface}/address").read().strip()
    addr, plen = a.ip.split("/")
    dst, port = a.to.rsplit(":", 1)
    mask = socket.inet_ntoa(((0xFFFFFFFF << (32 - int(plen))) & 0xFFFFFFFF).to_bytes(4, "big"))

    from ns import ns  # noqa: E402 (slow: cppyy compiles the bindings)

    ns.GlobalValue.Bind("SimulatorImplementationType",
                        ns.StringValue("ns3::RealtimeSimulatorImpl"))
    ns.GlobalValue.Bind("ChecksumEnabled", ns.BooleanValue(True))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    nodes = ns.NodeContainer()
    nodes.Create(1)
    fdh = ns.FdNetDeviceHelper()
    devices = fdh.Install(nodes.Get(0))
    dev = devices.Get(0).GetObject[ns.FdNetDevice]()
    # ns-3 owns the descriptor from here (it closes it).
    dev.SetFileDescriptor(sock.detach())
    dev.SetAddress(ns.Mac48Address(mac).ConvertTo())
    ns.InternetStackHelper().Install(nodes)
    ipv4 = ns.Ipv4AddressHelper()
    # One address: the helper numbers from the base's host part.
    ipv4.SetBase(ns.Ipv4Address(str_network(addr, int(plen))), ns.Ipv4Mask(mask),
                 ns.Ipv4Address(str_host(addr, int(plen))))
    ipv4.Assign(devices)
    remote = ns.InetSocketAddress(ns.Ipv4Address(dst), int(port)).ConvertTo()
    bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", remote)
    bulk.SetAttribute("MaxBytes", ns.UintegerValue(a.bytes))
    # Whole segments: writes of 512 bytes (the default) leave partial ones.
    bulk.SetAttribute("SendSize", ns.UintegerValue(1448 * 16))
    apps = bulk.Install(nodes.Get(0))
    apps.Start(ns.Seconds(0.5))
    if a.pcap:
        fdh.EnablePcap(a.pcap, dev, True)
    ns.Simulator.Stop(ns.Seconds(a.seconds))
    ns.Simulator.Run()
    ns.Simulator.Destroy()
    print(json.dumps({"offered_bytes": a.bytes, "seconds": a.seconds}), flush=True)
    return 0


def simulate(a):
    """The sender alone in simulation: two nodes on a point-to-point link
    (full duplex: ACKs do not hold up data) at the rate that spaces full
    frames (1500 bytes of IP, 2 of PPP) GAP_US apart, the default
    scheduler."""
    from ns import ns  # noqa: E402

    ns.GlobalValue.Bind("ChecksumEnabled", ns.BooleanValue(True))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    nodes = ns.NodeContainer()
    nodes.Create(2)
    link = ns.PointToPointHelper()
    bps = round(1502 * 8 / (a.simulate * 1e-6))
    link.SetDeviceAttribute("DataRate", ns.DataRateValue(ns.DataRate(bps)))
    link.SetChannelAttribute("Delay", ns.TimeValue(ns.MicroSeconds(50)))
    devices = link.Install(nodes)
    ns.InternetStackHelper().Install(nodes)
    ipv4 = ns.Ipv4AddressHelper()
    ipv4.SetBase(ns.Ipv4Address("10.77.0.0"), ns.Ipv4Mask("255.255.255.0"))
    ipv4.Assign(devices)
    port = int(a.to.rsplit(":", 1)[1])
    sink = ns.PacketSinkHelper("ns3::TcpSocketFactory",
                               ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo())
    sink.Install(nodes.Get(1)).Start(ns.Seconds(0.0))
    remote = ns.InetSocketAddress(ns.Ipv4Address("10.77.0.2"), port).ConvertTo()
    bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", remote)
    bulk.SetAttribute("MaxBytes", ns.UintegerValue(a.bytes))
    # Whole segments: writes of 512 bytes (the default) leave partial ones.
    bulk.SetAttribute("SendSize", ns.UintegerValue(1448 * 16))
    bulk.Install(nodes.Get(0)).Start(ns.Seconds(0.5))
    if a.pcap:
        link.EnablePcap(a.pcap, devices.Get(1), True)
    ns.Simulator.Stop(ns.Seconds(a.seconds))
    ns.Simulator.Run()
    ns.Simulator.Destroy()
    print(json.dumps({"offered_bytes": a.bytes, "link_bps": bps}), flush=True)
    return 0


def str_network(addr, plen):
    n = int.from_bytes(socket.inet_aton(addr), "big") & ((0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF)
    return socket.inet_ntoa(n.to_bytes(4, "big"))


def str_host(addr, plen):
    h = int.from_bytes(socket.inet_aton(addr), "big") & ((1 << (32 - plen)) - 1)
    return socket.inet_ntoa(h.to_bytes(4, "big"))


if __name__ == "__main__":
    sys.exit(main())
