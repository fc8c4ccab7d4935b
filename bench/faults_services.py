"""Hostile clients against sluice's services (`bench/faults.py --services S`).

For S seconds, seeded, one at a time, against `sluice inject` (a unix
socket, --to null, --queue-bytes 64M) and a keyless `sluice worker` (its
unix socket):
  inject: random bytes with and without a HELLO; idle connections (up to
    60 held, dropped at random); big frames an hour ahead, then gone
    without BYE; bursts of connect-and-close; a real client (HELLO, 3
    descriptions, BYE) that must get DONE within 10 s;
  worker: random bytes, an HTTP/2 preface with random frames, idle
    connections; and a real `sluice control run` of a 1 s replay to
    `null` that must exit 0 within 60 s.
Both processes' resident memory is sampled; they must stay alive, the
real clients must be served, and the memory must stay bounded (inject
under 64M + 200 MiB, the worker under 300 MiB). Prints the counts, the
peak memory and every failure; returns the number of failures.
"""
import os
import random
import shutil
import socket
import struct
import subprocess
import tempfile
import time

HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def msg(kind, body):
    return struct.pack("<I", len(body) + 1) + bytes([kind]) + body


HELLO = msg(1, b"SLIJ" + struct.pack("<HBB", 1, 0, 0) + bytes(12))


def desc(seq, at_ns, length=60):
    return (struct.pack("<QQHHHBB", seq, at_ns, length, 14, 0, 0, 0)
            + b"\xff" * 12 + b"\x88\xb5")


def descs(ds):
    return msg(2, struct.pack("<I", len(ds)) + b"".join(ds))


def rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def connect(path, timeout=10):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(path)
    return s


def real_inject_client(path):
    """A well-behaved session: True when it got DONE."""
    s = connect(path)
    try:
        s.sendall(HELLO + descs([desc(i, 0) for i in range(3)]) + msg(3, b""))
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        at = 0
        while at + 5 <= len(data):
            n = struct.unpack_from("<I", data, at)[0]
            if data[at + 4] == 0x85:
                return True
            at += 4 + n
        return False
    finally:
        s.close()


def run(sluice, seconds, seed, work):
    rng = random.Random(seed)
    isock = os.path.join(work, "inject.sock")
    wsock = os.path.join(work, "worker.sock")
    ilog = open(os.path.join(work, "inject.log"), "w")
    wlog = open(os.path.join(work, "worker.log"), "w")
    inject = subprocess.Popen([sluice, "inject", "--listen", f"unix:{isock}", "--to", "null",
                               "-q", "--queue-bytes", "64M"], stderr=ilog)
    worker = subprocess.Popen([sluice, "worker", "--listen", f"unix:{wsock}",
                               "--clock-service", "none", "--work-dir", work], stderr=wlog)
    for p in (isock, wsock):
        t0 = time.time()
        while not os.path.exists(p):
            if time.time() - t0 > 10:
                raise SystemExit(f"{p}: no service started")
            time.sleep(0.05)
    trace = os.path.join(work, "t.pcap")
    with open(trace, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1))
        for i in range(200):
            frame = b"\x02\x00\x00\x00\x00\x99" + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + bytes(50)
            f.write(struct.pack("<IIII", 1, i * 1_000_000, len(frame), len(frame)) + frame)
    shutil.copy(trace, os.path.join(work, "m.pcap"))
    # A running job's --metrics server (token-guarded HTTP on loopback):
    # held connections, trickling clients and real scrapes in the mix.
    token = os.urandom(32).hex()
    tokfile = os.path.join(work, "metrics.token")
    fd = os.open(tokfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, token.encode())
    os.close(fd)
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    mport = probe.getsockname()[1]
    probe.close()
    mlog = open(os.path.join(work, "metrics.log"), "w")
    metrics = subprocess.Popen([sluice, "replay", "--to", "null", "--loop", "0", "--pps", "1k",
                                "-q", "--metrics", f"127.0.0.1:{mport}",
                                "--metrics-token-file", tokfile, os.path.join(work, "m.pcap")],
                               stderr=mlog)
    t0 = time.time()
    while True:
        try:
            socket.create_connection(("127.0.0.1", mport), timeout=1).close()
            break
        except OSError:
            if time.time() - t0 > 10 or metrics.poll() is not None:
                raise SystemExit("the --metrics job did not start")
            time.sleep(0.05)
    plan = os.path.join(work, "plan.yaml")
    with open(plan, "w") as f:
        f.write(f'workers:\n  - {{name: w0, address: "unix:{wsock}", to: "null"}}\n'
                "job: {command: replay, file: t.pcap, args: [\"--pps\", \"1k\"], duration: 1s}\n")
    counts, failures = {}, []
    held = []
    peak = {"inject": 0, "worker": 0}
    start = time.time()
    end = start + seconds
    step = 0
    # Resident memory at each tenth of the run: flat, not just bounded.
    trace, next_mark = [], start

    def count(name):
        counts[name] = counts.get(name, 0) + 1

    def fail(what):
        failures.append(f"{time.strftime('%H:%M:%S')} {what}")

    def scrape():
        """A real scrape: answered 200 within 3 s, whatever else is held."""
        t0 = time.time()
        c = socket.create_connection(("127.0.0.1", mport), timeout=10)
        c.sendall(f"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n"
                  .encode())
        head = b""
        while b"\r\n" not in head:
            more = c.recv(64)
            if not more:
                break
            head += more
        c.close()
        took = time.time() - t0
        if not head.startswith(b"HTTP/1.1 200"):
            fail(f"metrics: scrape answered {head[:20]!r}")
        elif took > 3:
            fail(f"metrics: scrape took {took:.1f} s")
        else:
            count("metrics: real scrape served")

    def garbage(path, prefix, name):
        """Connects, sends `prefix` and up to 4 KiB of random bytes, leaves."""
        s = connect(path)
        s.sendall(prefix + os.urandom(rng.randrange(1, 4096)))
        s.close()
        count(name)

    while time.time() < end:
        step += 1
        for name, p in (("inject", inject), ("worker", worker)):
            if p.poll() is not None:
                fail(f"{name} died with {p.returncode}")
                end = 0
            else:
                peak[name] = max(peak[name], rss(p.pid))
        if end == 0:
            break
        if time.time() >= next_mark:
            trace.append((time.time() - start, rss(inject.pid), rss(worker.pid)))
            next_mark += seconds / 10
        if metrics.poll() is not None:
            fail(f"metrics job died with {metrics.returncode}")
            break
        action = rng.randrange(13)
        try:
            if action == 0:
                garbage(isock, HELLO, "inject: random bytes after HELLO")
            elif action == 1:
                garbage(isock, b"", "inject: random bytes")
            elif action == 2:
                held.append(connect(rng.choice([isock, wsock])))
                if len(held) > 60:
                    held.pop(rng.randrange(len(held))).close()
                count("idle connection held")
            elif action == 3:
                s = connect(isock)
                big = [desc(i, 3_600_000_000_000, 65000) for i in range(rng.randrange(100, 3000))]
                s.sendall(HELLO + descs(big[:1500]) + descs(big[1500:]) if len(big) > 1500
                          else HELLO + descs(big))
                s.close()
                count("inject: big frames, gone without BYE")
            elif action == 4:
                for _ in range(100):
                    connect(rng.choice([isock, wsock])).close()
                count("100 connect-and-close")
            elif action == 5:
                garbage(wsock, b"", "worker: random bytes")
            elif action == 6:
                garbage(wsock, HTTP2_PREFACE, "worker: HTTP/2 preface, random frames")
            elif action == 10:
                c = socket.create_connection(("127.0.0.1", mport), timeout=10)
                c.sendall(b"GET /met")
                held.append(c)
                if len(held) > 60:
                    held.pop(rng.randrange(len(held))).close()
                count("metrics: trickling connection held")
            elif action == 11:
                held.extend(socket.create_connection(("127.0.0.1", mport), timeout=10)
                            for _ in range(10))
                while len(held) > 60:
                    held.pop(rng.randrange(len(held))).close()
                count("metrics: 10 silent connections held")
            elif action == 12:
                scrape()
            elif action in (7, 8):
                if real_inject_client(isock):
                    count("inject: real client served")
                else:
                    fail("inject: a real client got no DONE")
            else:
                t0 = time.time()
                r = subprocess.run([sluice, "control", "run", plan, "-q", "--max-skew", "50ms"],
                                   capture_output=True, timeout=60)
                if r.returncode == 0:
                    count("worker: real control run served")
                else:
                    fail(f"worker: control run exit {r.returncode} after {time.time() - t0:.1f} s: "
                         + r.stderr.decode(errors="replace").strip()[-300:])
        except (OSError, subprocess.TimeoutExpired) as e:
            if action in (7, 8, 9):
                fail(f"action {action}: {e}")
            else:
                count(f"refused by the server ({type(e).__name__})")
    for s in held:
        s.close()
    if metrics.poll() is None:
        metrics.terminate()
        try:
            metrics.wait(timeout=10)
        except subprocess.TimeoutExpired:
            metrics.kill()
            fail("metrics job did not stop on SIGTERM within 10 s")
    for name, p in (("inject", inject), ("worker", worker)):
        if p.poll() is None:
            p.terminate()
            try:
                code = p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                fail(f"{name} did not stop on SIGTERM within 10 s")
                continue
            if code not in (0, 130, 143):
                fail(f"{name} exited {code} on SIGTERM")
    if peak["inject"] > (64 + 200) << 20:
        fail(f"inject peak resident {peak['inject'] >> 20} MiB")
    if peak["worker"] > 300 << 20:
        fail(f"worker peak resident {peak['worker'] >> 20} MiB")
    for name, n in sorted(counts.items()):
        print(f"{name:40} {n:6}")
    for t, i, w in trace:
        print(f"rss at {t:7.0f} s: inject {i >> 20:4} MiB, worker {w >> 20:4} MiB")
    if len(trace) >= 4:
        # Growth over the second half: a leak grows steadily, a cache or
        # an allocator's arenas settle in the first half.
        half = len(trace) // 2
        for k, name in ((1, "inject"), (2, "worker")):
            grew = trace[-1][k] - trace[half][k]
            if grew > 32 << 20:
                fail(f"{name} resident grew {grew >> 20} MiB over the second half")
    print(f"services: {seconds} s, {step} actions, peak resident inject "
          f"{peak['inject'] >> 20} MiB, worker {peak['worker'] >> 20} MiB, "
          f"{len(failures)} failures (seed {seed})")
    for f in failures[:50]:
        print("FAIL", f)
    return len(failures)
