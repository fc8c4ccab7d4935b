"""Client of `sluice inject` (docs/FORMATS.md, "Injection protocol").

Pure Python, no compiled dependencies. A client connects, says HELLO,
streams packet descriptions (batched: many per message), and reads back
acknowledgements with each packet's actual departure time and, when it
asked for them, the frames arriving on sluice's return interface.

    c = Client.connect("unix:/tmp/inject.sock")
    c.hello(time_base=SESSION)
    c.send([raw(seq=0, time_ns=1_000_000, head=eth_ip_udp_bytes, total_len=1000)])
    for kind, value in c.messages():   # ("acks", [...]) / ("frame", ...) / ...
        ...
"""

import socket
import struct

MAGIC = b"SLIJ"
VERSION = 1
MAX_MESSAGE = 1 << 20

HELLO, DESCS, BYE, PAYLOAD = 0x01, 0x02, 0x03, 0x04
WELCOME, ACKS, FRAME, ERROR, DONE = 0x81, 0x82, 0x83, 0x84, 0x85

SESSION, MONOTONIC, REALTIME = 0, 1, 2

STATUS = {0: "sent", 1: "sent_late", 2: "dropped_queue_full", 3: "refused",
          4: "dropped_late", 5: "not_sent", 6: "left_late"}

DESC_HEAD = struct.Struct("<QQHHHBB")       # seq time total head_len prefix_len kind flags
FIELDS = struct.Struct("<BBBBBBH16s16sHHII")  # 52 bytes
ACK = struct.Struct("<QQB7x")
assert DESC_HEAD.size == 24 and FIELDS.size == 52 and ACK.size == 24

TCP, UDP = 6, 17
# A description flag: its prefix is a stored payload's u32 id.
STORED_PAYLOAD = 0x01
FIN, SYN, RST, PSH, ACKF = 0x01, 0x02, 0x04, 0x08, 0x10


TOKEN_LEN = 32


def read_token(path):
    """The secret of a `sluice inject --token-file` (64 hex digits)."""
    with open(path) as f:
        return bytes.fromhex(f.read().strip())


class ProtocolError(Exception):
    """sluice ended the session: its message names the offset and field."""


def _tail(prefix, payload_id):
    """The bytes behind a description's head and its flags: the prefix,
    or the id of a payload stored with Client.store_payload."""
    if payload_id is None:
        return prefix, 0
    if prefix:
        raise ValueError("a description carries a prefix or names a stored payload, not both")
    return struct.pack("<I", payload_id), STORED_PAYLOAD


def raw(seq, time_ns, head, total_len, prefix=b"", payload_id=None):
    """A description whose headers (Ethernet, IP, L4) are given as bytes;
    sluice sets lengths and checksums, zero-fills behind the prefix (or
    the stored payload `payload_id`)."""
    tail, flags = _tail(prefix, payload_id)
    return DESC_HEAD.pack(seq, time_ns, total_len, len(head), len(tail), 0, flags) + head + tail


def fields(seq, time_ns, src, dst, sport, dport, total_len, proto=UDP,
           tcp_flags=0, tcp_seq=0, tcp_ack=0, window=65535, ttl=64, tos=0,
           prefix=b"", payload_id=None):
    """A description whose headers sluice builds from fields (IPv4 or IPv6
    addresses as strings); behind them the prefix, or the stored payload
    `payload_id`."""
    fam = socket.AF_INET6 if ":" in src else socket.AF_INET
    s = socket.inet_pton(fam, src).ljust(16, b"\0")
    d = socket.inet_pton(fam, dst).ljust(16, b"\0")
    f = FIELDS.pack(6 if fam == socket.AF_INET6 else 4, proto, tcp_flags, ttl,
                    tos, 0, window, s, d, sport, dport, tcp_seq & 0xffffffff,
                    tcp_ack & 0xffffffff)
    tail, flags = _tail(prefix, payload_id)
    return DESC_HEAD.pack(seq, time_ns, total_len, len(f), len(tail), 1, flags) + f + tail


def message(kind, body=b""):
    return struct.pack("<IB", len(body) + 1, kind) + body


def descs_message(descs):
    """One DESCS message of encoded descriptions (raw()/fields())."""
    return message(DESCS, struct.pack("<I", len(descs)) + b"".join(descs))


def batches(descs, limit=MAX_MESSAGE - 64):
    """DESCS messages of at most `limit` bytes each."""
    out, size, cur = [], 4, []
    for d in descs:
        if cur and size + len(d) > limit:
            out.append(descs_message(cur))
            cur, size = [], 4
        cur.append(d)
        size += len(d)
    if cur:
        out.append(descs_message(cur))
    return out


def parse_mac(s):
    return bytes(int(x, 16) for x in s.split(":"))


class Client:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.welcome = None

    @classmethod
    def connect(cls, where, timeout=None):
        """`where`: unix:PATH or tcp:HOST:PORT, as sluice inject --listen."""
        if where.startswith("unix:"):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(where[5:])
        elif where.startswith("tcp:"):
            host, port = where[4:].rsplit(":", 1)
            s = socket.create_connection((host.strip("[]"), int(port)))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        else:
            raise ValueError(f"{where!r}: unix:PATH or tcp:HOST:PORT")
        s.settimeout(timeout)
        return cls(s)

    def hello(self, time_base=SESSION, want_frames=False, src_mac=None, dst_mac=None,
              token=None):
        """Starts the session; returns WELCOME as a dict (the session's start
        on CLOCK_MONOTONIC and CLOCK_REALTIME, and the MACs in use).
        `token`: the 32-byte secret of a TCP server's --token-file (see
        read_token)."""
        body = MAGIC + struct.pack("<HBB", VERSION, time_base, 1 if want_frames else 0)
        body += (parse_mac(src_mac) if src_mac else bytes(6))
        body += (parse_mac(dst_mac) if dst_mac else bytes(6))
        if token is not None:
            if len(token) != TOKEN_LEN:
                raise ValueError(f"a token has {TOKEN_LEN} bytes, not {len(token)}")
            body += bytes(token)
        self.sock.sendall(message(HELLO, body))
        kind, value = self.read_message()
        if kind != "welcome":
            raise ProtocolError(f"expected WELCOME, got {kind}: {value}")
        self.welcome = value
        return value

    def send(self, descs):
        """Sends encoded descriptions, batched into DESCS messages."""
        for m in batches(descs):
            self.sock.sendall(m)

    def send_bytes(self, data):
        self.sock.sendall(data)

    def store_payload(self, payload_id, data):
        """Stores `data` (at most 65535 bytes) under `payload_id` for this
        session: descriptions name it (payload_id=) instead of carrying
        the bytes. Storing an id again replaces its payload; a session
        holds at most 4096 payloads and 4 MiB."""
        self.sock.sendall(message(PAYLOAD, struct.pack("<I", payload_id) + bytes(data)))

    def bye(self):
        """No more descriptions: sluice answers DONE once all are acknowledged."""
        self.sock.sendall(message(BYE))

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return False
            self.buf += chunk
        return True

    def read_message(self):
        """The next message as (kind, value); ("eof", None) at the end.
        acks: list of (seq, departure_ns, status name); frame: (arrival_ns,
        bytes); done: descriptions acknowledged; error raises."""
        if not self._fill(4):
            return "eof", None
        (n,) = struct.unpack_from("<I", self.buf)
        if not self._fill(4 + n):
            return "eof", None
        kind, body = self.buf[4], self.buf[5:4 + n]
        self.buf = self.buf[4 + n:]
        if kind == WELCOME:
            version, _, mono, real, maxm = struct.unpack_from("<HHQQI", body)
            return "welcome", {"version": version, "monotonic_ns": mono,
                               "realtime_ns": real, "max_message": maxm,
                               "src_mac": body[24:30].hex(":"),
                               "dst_mac": body[30:36].hex(":")}
        if kind == ACKS:
            (count,) = struct.unpack_from("<I", body)
            return "acks", [(s, t, STATUS.get(st, st)) for s, t, st in
                            ACK.iter_unpack(body[4:4 + count * ACK.size])]
        if kind == FRAME:
            (t,) = struct.unpack_from("<Q", body)
            return "frame", (t, bytes(body[8:]))
        if kind == DONE:
            return "done", struct.unpack_from("<Q", body)[0]
        if kind == ERROR:
            raise ProtocolError(body[8:].decode("utf-8", "replace"))
        raise ProtocolError(f"unknown message type 0x{kind:02x}")

    def messages(self):
        while True:
            kind, value = self.read_message()
            if kind == "eof":
                return
            yield kind, value
            if kind == "done":
                return

    def close(self):
        self.sock.close()
