#!/usr/bin/env python3
"""A TCP Reno sender in Python, closed-loop through `sluice inject`.

The analogue of Caliper's ns-2 integration: a simulated TCP source decides
what to send and when (here over a simulated bottleneck link of --mbps, so
each segment's departure time is when the link would finish the previous
one); sluice builds each segment, sends it on the real interface at that
time and hands back the frames the real receiver answers with. The
receiver is an ordinary kernel TCP socket in another namespace.

Congestion control is Reno (RFC 5681): slow start, congestion avoidance,
fast retransmit on the third duplicate ACK with fast recovery, and a
retransmission timeout (RFC 6298, go-back-N) as the last resort. The
sender never learns what sluice dropped: a segment `inject --queue-limit`
refused to queue (the bottleneck's drop-tail buffer) is lost, and only the
receiver's duplicate ACKs reveal it.

Set-up (root; names are examples):
    ip netns add rx; ip link add ta type veth peer name tb
    ip link set tb netns rx; ip link set ta up
    ip -n rx addr add 10.9.0.2/24 dev tb; ip -n rx link set tb up
    ip -n rx neigh add 10.9.0.1 lladdr $(cat /sys/class/net/ta/address) dev tb
    ip netns exec rx python3 python/examples/tcp_sink.py 10.9.0.2 5001 &
    sluice inject --listen unix:/tmp/i.sock --to afpacket:ta --return ta \\
        --queue-limit 8 --sessions 1 &
    python3 python/examples/reno.py --connect unix:/tmp/i.sock \\
        --src 10.9.0.1 --dst 10.9.0.2 --dport 5001 \\
        --dst-mac $(ip netns exec rx cat /sys/class/net/tb/address) \\
        --bytes 1000000 --trace cwnd.txt
The source address must not be one the sending host owns (its own kernel
would answer the receiver with resets); the receiver needs the static
neighbour entry because nothing answers ARP for it.

Prints a JSON summary; --trace writes "t_ms cwnd ssthresh event" lines,
one per change of the congestion window.
"""
import argparse
import json
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sluice_inject as si  # noqa: E402

FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
MONOTONIC = 1
WS = 7  # our window scale


def seq_lt(a, b):
    return ((a - b) & 0xFFFFFFFF) > 0x7FFFFFFF


def payload_at(offset, n):
    """The stream's bytes [offset, offset+n): a pattern the receiver checks."""
    return bytes((offset + i) % 251 for i in range(n))


class Reno:
    def __init__(self, a, client, src_mac, dst_mac):
        self.a, self.c = a, client
        self.macs = dst_mac + src_mac
        self.src, self.dst = socket.inet_aton(a.src), socket.inet_aton(a.dst)
        self.t0 = time.monotonic_ns()
        self.desc_id = 0
        self.ip_id = 0
        self.link_free = 0
        self.iss = 0x1000
        self.mss = a.mss
        self.total = a.bytes
        # Sequence space as 64-bit offsets from iss; wire values wrap.
        self.una = 0   # bytes of the stream acknowledged
        self.nxt = 0   # next byte of the stream to send
        self.high = 0  # highest byte sent so far (a timeout rewinds nxt)
        self.irs = 0
        self.rcv_nxt = 0
        self.peer_ws = 0
        self.rwnd = 65535
        self.cwnd = float(a.initial_window)
        self.ssthresh = float("inf")
        self.dupacks = 0
        self.recovery = False
        self.srtt = None
        self.rttvar = 0.0
        self.rto = 1.0
        self.rto_deadline = None
        self.timed = None  # (stream offset, send time) of the segment timed
        self.stats = {"segments": 0, "retransmits": 0, "fast_retransmits": 0,
                      "timeouts": 0, "dupacks": 0, "queue_drops_seen_by_sluice": 0,
                      "late": 0}
        self.trace = []
        self.note("start")

    # -- output ---------------------------------------------------------
    def note(self, event):
        t = (time.monotonic_ns() - self.t0) / 1e6
        ss = -1 if self.ssthresh == float("inf") else round(self.ssthresh, 3)
        self.trace.append(f"{t:.3f} {self.cwnd:.3f} {ss} {event}")

    def depart(self, frame_len):
        """The simulated bottleneck: a frame leaves when the link is free
        and the description can still reach sluice in time."""
        now = time.monotonic_ns() + self.a.lead_us * 1000
        t = max(now, self.link_free)
        self.link_free = t + int(frame_len * 8 * 1000 / self.a.mbps)
        return t

    def segment(self, seq, flags, payload=b"", options=b""):
        doff = (20 + len(options)) // 4
        win = min(65535, (1 << 20) >> WS) if not flags & SYN else 65535
        self.ip_id = (self.ip_id + 1) & 0xFFFF
        tcp = struct.pack(">HHIIBBHHH", self.a.sport, self.a.dport,
                          (self.iss + seq) & 0xFFFFFFFF,
                          (self.irs + self.rcv_nxt) & 0xFFFFFFFF if flags & ACK else 0,
                          doff << 4, flags, win, 0, 0) + options
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 0, self.ip_id, 0x4000, 64, 6, 0,
                         self.src, self.dst)
        head = self.macs + b"\x08\x00" + ip + tcp
        total = len(head) + len(payload)
        self.desc_id += 1
        self.c.send([si.raw(self.desc_id, self.depart(total), head, total, payload)])

    def send_data(self, off, retransmit=False):
        n = min(self.mss, self.total - off)
        self.segment(off + 1, ACK | PSH, payload_at(off, n))
        self.stats["segments"] += 1
        if retransmit:
            self.stats["retransmits"] += 1
            if self.timed and self.timed[0] >= off:
                self.timed = None  # Karn: no sample from a retransmitted range
        elif self.timed is None:
            self.timed = (off, time.monotonic())
        if self.rto_deadline is None:
            self.rto_deadline = time.monotonic() + self.rto
        return n

    def fill_window(self):
        limit = min(self.cwnd * self.mss, self.rwnd)
        while self.nxt < self.total and self.nxt - self.una + min(self.mss, self.total - self.nxt) <= limit:
            self.nxt += self.send_data(self.nxt)
            self.high = max(self.high, self.nxt)

    # -- input ----------------------------------------------------------
    def parse(self, frame):
        """The receiver's TCP segment to us, or None."""
        if len(frame) < 54 or frame[12:14] != b"\x08\x00":
            return None
        ihl = (frame[14] & 0x0F) * 4
        if frame[23] != 6 or frame[26:30] != self.dst or frame[30:34] != self.src:
            return None
        t = 14 + ihl
        sport, dport, seq, ack, doff, flags, win = struct.unpack_from(">HHIIBBH", frame, t)
        if sport != self.a.dport or dport != self.a.sport:
            return None
        hlen = (doff >> 4) * 4
        ip_len = struct.unpack_from(">H", frame, 16)[0]
        return {"seq": seq, "ack": ack, "flags": flags, "win": win,
                "options": frame[t + 20:t + hlen], "len": ip_len - ihl - hlen}

    def next_segment(self, timeout):
        """The next segment from the receiver within `timeout` s, or None."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.c.sock.settimeout(left)
            try:
                kind, value = self.c.read_message()
            except socket.timeout:
                return None
            if kind == "eof":
                raise SystemExit("sluice closed the session")
            if kind == "acks":
                for _, _, st in value:
                    if st == "dropped_queue_full":
                        self.stats["queue_drops_seen_by_sluice"] += 1
                    elif st == "sent_late":
                        self.stats["late"] += 1
            elif kind == "frame":
                seg = self.parse(value[1])
                if seg:
                    return seg

    # -- the connection -------------------------------------------------
    def handshake(self):
        mss_opt = struct.pack(">BBH", 2, 4, self.mss)
        ws_opt = struct.pack(">BBBB", 1, 3, 3, WS)
        for _ in range(5):
            self.segment(0, SYN, options=mss_opt + ws_opt)
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                seg = self.next_segment(end - time.monotonic())
                if seg and seg["flags"] & (SYN | ACK) == SYN | ACK and seg["ack"] == (self.iss + 1) & 0xFFFFFFFF:
                    self.irs = seg["seq"]
                    self.rcv_nxt = 1
                    self.options(seg["options"])
                    self.rwnd = seg["win"]  # never scaled in a SYN
                    self.segment(1, ACK)
                    return
        raise SystemExit("no SYN-ACK: is the receiver listening, the neighbour entry set?")

    def options(self, raw):
        i = 0
        while i < len(raw):
            kind = raw[i]
            if kind == 0:
                break
            if kind == 1:
                i += 1
                continue
            if i + 1 >= len(raw) or raw[i + 1] < 2:
                break
            ln = raw[i + 1]
            if kind == 2 and ln == 4:
                self.mss = min(self.mss, struct.unpack_from(">H", raw, i + 2)[0])
            if kind == 3 and ln == 3:
                self.peer_ws = raw[i + 2]
            i += ln

    def flight(self):
        return max((self.nxt - self.una) / self.mss, 1.0)

    def on_ack(self, seg):
        ack = (seg["ack"] - self.iss - 1) & 0xFFFFFFFF  # stream offset, mod 2^32
        ack = self.una + ((ack - self.una) & 0xFFFFFFFF)
        if ack > self.high:
            return  # acknowledges what was never sent
        self.nxt = max(self.nxt, ack)  # after a rewind, data the receiver kept
        self.rwnd = seg["win"] << self.peer_ws
        if ack > self.una:
            if self.timed and ack > self.timed[0]:
                self.sample(time.monotonic() - self.timed[1])
                self.timed = None
            self.una = ack
            self.dupacks = 0
            if self.recovery:
                self.recovery = False
                self.cwnd = self.ssthresh  # deflate: Reno leaves recovery
                self.note("recovery_end")
            elif self.cwnd < self.ssthresh:
                self.cwnd += 1
                self.note("slow_start")
            else:
                self.cwnd += 1 / self.cwnd
                self.note("avoidance")
            self.rto_deadline = time.monotonic() + self.rto if self.una < self.nxt else None
        elif ack == self.una and seg["len"] == 0 and self.una < self.nxt and not seg["flags"] & (SYN | FIN):
            self.dupacks += 1
            self.stats["dupacks"] += 1
            if self.dupacks == 3 and not self.recovery:
                self.ssthresh = max(self.flight() / 2, 2.0)
                self.cwnd = self.ssthresh + 3
                self.recovery = True
                self.stats["fast_retransmits"] += 1
                self.note("fast_retransmit")
                self.send_data(self.una, retransmit=True)
            elif self.recovery:
                self.cwnd += 1  # inflation: a segment left the network
                self.note("inflate")

    def sample(self, r):
        if self.srtt is None:
            self.srtt, self.rttvar = r, r / 2
        else:
            self.rttvar = 0.75 * self.rttvar + 0.25 * abs(self.srtt - r)
            self.srtt = 0.875 * self.srtt + 0.125 * r
        self.rto = min(max(self.srtt + 4 * self.rttvar, self.a.min_rto_ms / 1000), 60.0)

    def on_timeout(self):
        self.stats["timeouts"] += 1
        self.ssthresh = max(self.flight() / 2, 2.0)
        self.cwnd = 1.0
        self.recovery = False
        self.dupacks = 0
        self.timed = None
        self.nxt = self.una  # go back N
        self.rto = min(self.rto * 2, 60.0)
        self.rto_deadline = None
        self.note("timeout")
        self.nxt += self.send_data(self.nxt, retransmit=True)

    def run(self):
        start = time.monotonic()
        self.handshake()
        self.note("established")
        while self.una < self.total:
            self.fill_window()
            wait = 0.5 if self.rto_deadline is None else self.rto_deadline - time.monotonic()
            seg = self.next_segment(max(wait, 0.0)) if wait > 0 else None
            if seg is None:
                if self.rto_deadline is not None and time.monotonic() >= self.rto_deadline:
                    self.on_timeout()
                continue
            if seg["flags"] & RST:
                raise SystemExit("the receiver reset the connection")
            self.on_ack(seg)
            if time.monotonic() - start > self.a.timeout:
                raise SystemExit(f"gave up after {self.a.timeout} s at {self.una} bytes")
        elapsed = time.monotonic() - start
        self.close()
        return elapsed

    def close(self):
        """FIN, then acknowledge the receiver's FIN."""
        fin_seq = self.total + 1
        for _ in range(5):
            self.segment(fin_seq, FIN | ACK)
            end = time.monotonic() + 1.0
            while time.monotonic() < end:
                seg = self.next_segment(end - time.monotonic())
                if seg and seg["flags"] & FIN:
                    self.rcv_nxt = ((seg["seq"] - self.irs) & 0xFFFFFFFF) + seg["len"] + 1
                    self.segment(fin_seq + 1, ACK)
                    return
        print("warning: the receiver never closed its side", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--connect", required=True, help="unix:PATH or tcp:HOST:PORT of sluice inject")
    p.add_argument("--src", required=True, help="our (fake) IPv4 address")
    p.add_argument("--dst", required=True, help="the receiver's IPv4 address")
    p.add_argument("--sport", type=int, default=40001)
    p.add_argument("--dport", type=int, default=5001)
    p.add_argument("--dst-mac", required=True, help="the receiver's MAC")
    p.add_argument("--bytes", type=int, default=1_000_000)
    p.add_argument("--mss", type=int, default=1448)
    p.add_argument("--mbps", type=float, default=20.0, help="simulated bottleneck rate")
    p.add_argument("--lead-us", type=int, default=500,
                   help="how far ahead of now a segment may leave at the earliest")
    p.add_argument("--initial-window", type=int, default=2)
    p.add_argument("--min-rto-ms", type=float, default=200.0)
    p.add_argument("--timeout", type=float, default=60.0, help="give up after this many s")
    p.add_argument("--trace", help="write the congestion-window trace here")
    a = p.parse_args()

    c = si.Client.connect(a.connect)
    w = c.hello(time_base=MONOTONIC, want_frames=True)
    reno = Reno(a, c, si.parse_mac(w["src_mac"]), si.parse_mac(a.dst_mac))
    elapsed = reno.run()
    c.bye()
    c.sock.settimeout(5)
    for kind, value in c.messages():
        if kind == "acks":
            for _, _, st in value:
                if st == "dropped_queue_full":
                    reno.stats["queue_drops_seen_by_sluice"] += 1
    if a.trace:
        with open(a.trace, "w") as f:
            f.write("\n".join(reno.trace) + "\n")
    halvings = sum(1 for line in reno.trace if line.endswith("fast_retransmit"))
    print(json.dumps({"bytes": reno.total, "seconds": round(elapsed, 4),
                      "goodput_mbps": round(reno.total * 8 / elapsed / 1e6, 3),
                      "max_cwnd": round(max(float(x.split()[1]) for x in reno.trace), 2),
                      "halvings": halvings, **reno.stats}))


if __name__ == "__main__":
    main()
