#!/usr/bin/env python3
"""Caliper §4.5 through `sluice inject`: an ns-3 node's packets leave for
real at their simulated times, and real answers come back into the
simulation.

The ns-3 node (realtime scheduler, real checksums) owns one FdNetDevice.
Every frame it transmits is stamped with its simulated time (a C++ trace
sink on the device's MacTx, compiled by cppyy) and turned by a bridge
process into an inject description: the addresses the mapping gives it,
at time base + simulated time (CLOCK_MONOTONIC), so the real gaps are the
simulated ones and the realtime scheduler's lateness is taken out. The
frames inject's return interface sees for a mapped node come back, mapped
to simulated addresses, checksums redone, into the node's device. ARP is
answered by the bridge on both sides from the mapping.

The mapping file is Caliper's table, CSV:

    node,sim_ip,real_ip,real_mac[,sim_port,real_port]
    0,10.1.1.1,10.77.0.1,02:00:00:00:77:01
    1,10.1.1.2,10.77.0.2,02:00:00:00:77:02

Node `--node` is the simulated one (its traffic is built in ns-3); the
others are real hosts known to the simulation by their sim_ip. A port pair
maps the node's port too (both ways).

    ns3_inject.py --connect unix:/tmp/i.sock --map nodes.csv --node 0 \\
        --to 1:5001 --bytes 1000000 [--pacing-mbps 60] [--log gaps.txt]

--log FILE writes the requested gap of each departure (ns, one per line,
0 first): `sluice analyze CAPTURE --gaps FILE` and bench/caliper_judge.py
judge a capture against the simulation with it. Prints a JSON summary.
Needs `pip install ns3` (3.44, Python bindings).
"""
import argparse
import csv
import json
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sluice_inject as si  # noqa: E402

BROADCAST = b"\xff" * 6


def sim_mac(node):
    """The MAC a node has inside the simulation."""
    return bytes([0x02, 0x5E, 0, 0, node >> 8 & 0xFF, node & 0xFF])


def read_map(path):
    """node -> dict(sim_ip, real_ip, real_mac, sim_port, real_port)."""
    nodes = {}
    with open(path, newline="") as f:
        rows = csv.reader(f)
        head = [c.strip() for c in next(rows, [])]
        want = ["node", "sim_ip", "real_ip", "real_mac"]
        if head[:4] != want or head[4:] not in ([], ["sim_port", "real_port"]):
            raise SystemExit(f"{path}: line 1: header must be "
                             f"'node,sim_ip,real_ip,real_mac[,sim_port,real_port]', found {','.join(head)}")
        for n, row in enumerate(rows, start=2):
            if not row or not "".join(row).strip():
                continue
            if len(row) != len(head):
                raise SystemExit(f"{path}: line {n}: {len(row)} columns, expected {len(head)}")
            c = [x.strip() for x in row]
            try:
                node = int(c[0])
                e = {"sim_ip": socket.inet_aton(c[1]), "real_ip": socket.inet_aton(c[2]),
                     "real_mac": si.parse_mac(c[3]), "sim_port": None, "real_port": None}
                if len(e["real_mac"]) != 6:
                    raise ValueError("a MAC has 6 bytes")
                if len(c) == 6 and (c[4] or c[5]):
                    e["sim_port"], e["real_port"] = int(c[4]), int(c[5])
            except (ValueError, OSError) as err:
                raise SystemExit(f"{path}: line {n}: {err}")
            if node in nodes:
                raise SystemExit(f"{path}: line {n}: node {node} twice")
            nodes[node] = e
    if not nodes:
        raise SystemExit(f"{path}: no nodes")
    return nodes


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def rewrite(frame, src_mac, dst_mac, ip_map, port_map, sums):
    """The IPv4 frame with MACs set, addresses and ports mapped; with
    `sums`, the IPv4, TCP and UDP checksums redone. None if not IPv4."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    f = bytearray(frame)
    f[0:6], f[6:12] = dst_mac, src_mac
    ihl = (f[14] & 0x0F) * 4
    src, dst = bytes(f[26:30]), bytes(f[30:34])
    f[26:30], f[30:34] = ip_map.get(src, src), ip_map.get(dst, dst)
    proto, l4 = f[23], 14 + ihl
    if proto in (6, 17) and len(f) >= l4 + 4:
        sp, dp = struct.unpack_from("!HH", f, l4)
        struct.pack_into("!HH", f, l4, port_map.get((src, sp), sp), port_map.get((dst, dp), dp))
    if sums:
        f[24:26] = b"\0\0"
        f[24:26] = struct.pack("!H", checksum(bytes(f[14:l4])))
        total = struct.unpack_from("!H", f, 16)[0]
        seg_end = min(len(f), 14 + total)
        off = {6: 16, 17: 6}.get(proto)
        if off is not None and seg_end >= l4 + off + 2:
            f[l4 + off:l4 + off + 2] = b"\0\0"
            seg = bytes(f[l4:seg_end])
            pseudo = bytes(f[26:34]) + struct.pack("!BBH", 0, proto, len(seg))
            c = checksum(pseudo + seg)
            f[l4 + off:l4 + off + 2] = struct.pack("!H", c if c or proto == 6 else 0xFFFF)
    return bytes(f)


def arp_reply(request, mac):
    """The reply to ARP request `request` (a whole frame) saying `mac`."""
    sha, spa, tpa = request[22:28], request[28:32], request[38:42]
    return (request[6:12] + mac + b"\x08\x06" + b"\x00\x01\x08\x00\x06\x04\x00\x02"
            + mac + tpa + sha + spa)


def arp_target(frame):
    """The address an ARP request asks for, else None."""
    if len(frame) >= 42 and frame[12:14] == b"\x08\x06" and frame[20:22] == b"\x00\x01":
        return frame[38:42]
    return None


def bridge(a, nodes, client, dev_end, stamp_end):
    """Moves frames between the simulation and inject until the
    simulation's end; returns the summary."""
    me = nodes[a.node]
    others = {n: e for n, e in nodes.items() if n != a.node}
    to_real = {e["sim_ip"]: e["real_ip"] for e in nodes.values()}
    to_sim = {e["real_ip"]: e["sim_ip"] for e in nodes.values()}
    ports_out, ports_in = {}, {}
    for e in nodes.values():
        if e["sim_port"] is not None:
            ports_out[(e["sim_ip"], e["sim_port"])] = e["real_port"]
            ports_in[(e["real_ip"], e["real_port"])] = e["sim_port"]
    sim_by_ip = {e["sim_ip"]: n for n, e in others.items()}
    real_mac_by_sim = {e["sim_ip"]: e["real_mac"] for e in nodes.values()}
    base = None
    seq = 0
    last_sim = None
    gaps = []
    statuses = {}
    returned = 0
    sim_done = False
    done = False
    lead = int(a.lead_ms * 1e6)
    while not done:
        socks = [client.sock] + ([] if sim_done else [stamp_end, dev_end])
        ready, _, _ = select.select(socks, [], [], 1.0)
        if stamp_end in ready:
            data = stamp_end.recv(70000)
            if not data:
                sim_done = True
                client.bye()
            else:
                sim_ns, frame = struct.unpack_from("<Q", data)[0], data[8:]
                ask = arp_target(frame)
                if ask is not None:
                    if ask in sim_by_ip:
                        dev_end.send(arp_reply(frame, sim_mac(sim_by_ip[ask])))
                else:
                    dst = frame[30:34] if len(frame) >= 34 else b""
                    out = rewrite(frame, me["real_mac"], real_mac_by_sim.get(dst, BROADCAST),
                                  to_real, ports_out, sums=False)
                    if out is not None:
                        if base is None:
                            base = time.monotonic_ns() + lead - sim_ns
                        gaps.append(0 if last_sim is None else sim_ns - last_sim)
                        last_sim = sim_ns
                        client.send([si.raw(seq, base + sim_ns, out, len(out))])
                        seq += 1
        if dev_end in ready:
            dev_end.recv(70000)  # the device's own copy of what MacTx saw
        if client.sock in ready:
            while True:
                kind, value = client.read_message()
                if kind in ("eof", "done"):
                    done = True
                elif kind == "acks":
                    for _, _, st in value:
                        statuses[st] = statuses.get(st, 0) + 1
                elif kind == "frame":
                    frame = value[1]
                    ask = arp_target(frame)
                    if ask == me["real_ip"]:
                        # A real host asks for the simulated node.
                        reply = arp_reply(frame, me["real_mac"])
                        client.send([si.raw(seq, time.monotonic_ns(), reply, len(reply))])
                        seq += 1
                    elif len(frame) >= 34 and frame[30:34] == me["real_ip"] and not sim_done:
                        src_sim = to_sim.get(frame[26:30])
                        if src_sim in sim_by_ip:
                            back = rewrite(frame, sim_mac(sim_by_ip[src_sim]), sim_mac(a.node),
                                           to_sim, ports_in, sums=True)
                            if back is not None:
                                dev_end.send(back)
                                returned += 1
                if done or not client.buf or len(client.buf) < 4:
                    break
    if a.log:
        with open(a.log, "w") as f:
            f.writelines(f"{g}\n" for g in gaps)
    return {"described": len(gaps), "acks": statuses, "returned": returned}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--connect", required=True, help="sluice inject's listener, unix:PATH")
    p.add_argument("--map", required=True, help="node -> IP/MAC/port table (CSV)")
    p.add_argument("--node", type=int, default=0, help="the simulated node")
    p.add_argument("--to", required=True, help="NODE:PORT of the real receiver")
    p.add_argument("--bytes", type=int, default=1_000_000)
    p.add_argument("--seconds", type=float, default=20.0, help="simulated (= real) time")
    p.add_argument("--pacing-mbps", type=float, help="ns-3's TCP pacing rate cap")
    p.add_argument("--lead-ms", type=float, default=2.0,
                   help="the first frame leaves this long after it was simulated")
    p.add_argument("--log", help="requested gaps, ns per line")
    a = p.parse_args()
    nodes = read_map(a.map)
    dst_node, port = a.to.split(":")
    if a.node not in nodes or int(dst_node) not in nodes:
        p.error(f"--node {a.node} and --to {a.to} must be nodes of {a.map}")

    # inject first: a wrong socket fails before ns-3 loads (~20 s).
    client = si.Client.connect(a.connect)
    client.hello(time_base=si.MONOTONIC, want_frames=True)
    dev_sim, dev_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stamp_sim, stamp_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        dev_sim.close()
        stamp_sim.close()
        os.close(r)
        try:
            summary = bridge(a, nodes, client, dev_end, stamp_end)
            os.write(w, json.dumps(summary).encode())
        finally:
            os._exit(0)
    client.sock.close()
    dev_end.close()
    stamp_end.close()
    os.close(w)
    simulate(a, nodes, dev_sim, stamp_sim, int(dst_node), int(port))
    out = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        out += chunk
    os.waitpid(child, 0)
    summary = json.loads(out or b"{}")
    summary["offered_bytes"] = a.bytes
    print(json.dumps(summary), flush=True)
    return 0 if summary.get("described") else 1


def simulate(a, nodes, dev_sock, stamp_sock, dst_node, port):
    from ns import ns  # noqa: E402 (slow: cppyy compiles the bindings)
    import cppyy  # noqa: E402

    # Each transmitted frame, stamped with its simulated time, to the
    # bridge: [u64 ns, little-endian][the frame].
    cppyy.cppdef(r"""
#include <unistd.h>
#include <cstring>
namespace sluice_ns3 {
int g_fd = -1;
void Tx(ns3::Ptr<const ns3::Packet> p) {
  static uint8_t buf[65536 + 8];
  uint64_t t = ns3::Simulator::Now().GetNanoSeconds();
  std::memcpy(buf, &t, 8);
  uint32_t n = p->CopyData(buf + 8, 65536);
  (void)!write(g_fd, buf, n + 8);
}
bool Hook(ns3::Ptr<ns3::NetDevice> d, int fd) {
  g_fd = fd;
  return d->TraceConnectWithoutContext("MacTx", ns3::MakeCallback(&Tx));
}
}
""")
    ns.GlobalValue.Bind("SimulatorImplementationType",
                        ns.StringValue("ns3::RealtimeSimulatorImpl"))
    ns.GlobalValue.Bind("ChecksumEnabled", ns.BooleanValue(True))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    if a.pacing_mbps:
        ns.Config.SetDefault("ns3::TcpSocketState::EnablePacing", ns.BooleanValue(True))
        ns.Config.SetDefault("ns3::TcpSocketState::MaxPacingRate",
                             ns.DataRateValue(ns.DataRate(f"{a.pacing_mbps}Mbps")))
    node = ns.NodeContainer()
    node.Create(1)
    fdh = ns.FdNetDeviceHelper()
    devices = fdh.Install(node.Get(0))
    dev = devices.Get(0).GetObject[ns.FdNetDevice]()
    dev.SetFileDescriptor(dev_sock.detach())
    dev.SetAddress(ns.Mac48Address(":".join(f"{b:02x}" for b in sim_mac(a.node))).ConvertTo())
    if not cppyy.gbl.sluice_ns3.Hook(dev, stamp_sock.detach()):
        raise SystemExit("ns-3: no MacTx trace source on the FdNetDevice")
    ns.InternetStackHelper().Install(node)
    me = socket.inet_ntoa(nodes[a.node]["sim_ip"])
    ipv4 = ns.Ipv4AddressHelper()
    net = int.from_bytes(nodes[a.node]["sim_ip"], "big")
    ipv4.SetBase(ns.Ipv4Address(socket.inet_ntoa((net & 0xFFFFFF00).to_bytes(4, "big"))),
                 ns.Ipv4Mask("255.255.255.0"), ns.Ipv4Address(f"0.0.0.{net & 0xFF}"))
    ipv4.Assign(devices)
    dst = socket.inet_ntoa(nodes[dst_node]["sim_ip"])
    remote = ns.InetSocketAddress(ns.Ipv4Address(dst), port).ConvertTo()
    bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", remote)
    bulk.SetAttribute("MaxBytes", ns.UintegerValue(a.bytes))
    # Whole segments: writes of 512 bytes (the default) leave partial ones.
    bulk.SetAttribute("SendSize", ns.UintegerValue(1448 * 16))
    bulk.Install(node.Get(0)).Start(ns.Seconds(0.5))
    print(f"ns-3: node {a.node} ({me}) sends {a.bytes} bytes to node {dst_node} ({dst}:{port})",
          file=sys.stderr, flush=True)
    ns.Simulator.Stop(ns.Seconds(a.seconds))
    ns.Simulator.Run()
    ns.Simulator.Destroy()
    # The stamped stream's end tells the bridge the simulation is over.
    os.close(cppyy.gbl.sluice_ns3.g_fd)


if __name__ == "__main__":
    sys.exit(main())
