"""Drive `sluice worker`s from Python: the control plane's client, with
gRPC stubs compiled at build time from the same
proto/sluice/control/v1/worker.proto as sluice's own controller. Install
with `pip install ./python` (which also installs `sluice_inject`).

    from sluice_control import Worker, run_job
    ws = [Worker("w1", "192.0.2.10:7700", "afpacket:eth1", tls_dir="keys")]
    result = run_job(ws, "replay", "trace.pcap", {"pps": "10k"}, "5s",
                     on_stats=lambda w, line: print(w.name, line["pps"]))
    print(result["total"]["packets"])

A job is typed data (the proto message Job, docs/FORMATS.md): `options` are
the command's own (`{"pps": "10k", "loop": 3}`), `send` how every command
sends (`{"threads": 2, "cpu": "1-2"}`); keys are the command line's long
option names with `_` for `-`, values as the command line writes them
(strings; plain numbers and flags as JSON numbers and booleans). The
message has no field for a sink, an output or a path: such a key is
refused here (JobRefused), before any worker is asked.

Errors: `ControlError` (one line naming the worker) when a worker cannot
be reached, refuses the TLS handshake or answers with an error;
`JobRefused` (a ControlError) when a worker refuses the job as bad input.
"""
import json
import os
import threading
import time

import grpc
from google.protobuf import json_format

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = "sluice/control/v1/worker.proto"
PROTO_ROOT = os.path.join(HERE, "proto")
WORKER_NAME = "sluice-worker"

try:
    from . import worker_pb2 as pb, worker_pb2_grpc as pb_grpc
except ImportError as e:  # a checkout: the stubs are made when installed
    raise ImportError(
        "sluice_control has no compiled stubs here (a source checkout?): "
        "install it with `pip install ./python`") from e


class ControlError(RuntimeError):
    """A worker that cannot be reached, refuses TLS or answers an error."""


class JobRefused(ControlError):
    """A worker refused the job as bad input (sluice's exit code 2)."""


def _rpc_error(w, what, e):
    """One line for a failed RPC: which worker, what it was doing, why."""
    code = e.code() if hasattr(e, "code") else None
    details = (e.details() if hasattr(e, "details") else str(e)) or str(code)
    details = " ".join(details.split())
    if code == grpc.StatusCode.UNAVAILABLE:
        why = f"unreachable or TLS refused ({details})"
    elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
        why = "no answer in time"
    else:
        why = f"{code.name.lower() if code else 'error'}: {details}"
    return ControlError(f"worker {w.name!r} at {w.address}: {what}: {why}")


SPLITS = {"flow": pb.BY_FLOW, "device": pb.BY_DEVICE, "packets": pb.PACKETS,
          "components": pb.COMPONENTS}
DEFAULT_SPLIT = {"replay": "flow", "flows": "flow", "series": "device", "profile": "packets"}
UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_duration(text):
    """'2s', '500ms', '10us', '100ns' -> ns (a unit is required, as in sluice)."""
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * UNITS[unit])
    raise ValueError(f"{text!r}: a duration needs a unit (ns, us, ms, s)")


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_REALTIME)


def worker_channel(address, tls_dir=None):
    """A channel to a worker: HOST:PORT over mutual TLS with the key
    directory `tls_dir` of sluice keygen, or its unix:PATH socket. None
    for TCP without keys (a worker without keys serves unix:PATH only)."""
    if tls_dir:
        read = lambda n: open(os.path.join(tls_dir, n), "rb").read()
        creds = grpc.ssl_channel_credentials(
            root_certificates=read("ca.pem"),
            private_key=read("controller.key"),
            certificate_chain=read("controller.pem"))
        return grpc.secure_channel(
            address, creds, options=[("grpc.ssl_target_name_override", WORKER_NAME)])
    if address.startswith("unix:"):
        # The socket's path is no HTTP/2 authority: the server would
        # refuse every call.
        return grpc.insecure_channel(
            address, options=[("grpc.default_authority", "localhost")])
    return None


class Worker:
    """One worker: its name in the run, address and the sink it sends on."""

    def __init__(self, name, address, sink, tls_dir=None):
        self.name, self.address, self.sink = name, address, sink
        self.channel = worker_channel(address, tls_dir)
        if self.channel is None:
            raise ControlError(
                f"worker {name!r} at {address}: TCP needs tls_dir "
                "(workers without keys serve unix:PATH)")
        self.stub = pb_grpc.WorkerStub(self.channel)
        # The lease Register gives: every later call carries it.
        self.meta = ()
        self.port = None
        self.offset_ns = 0
        self.uncertainty_ns = 0

    def register(self):
        reg = self.stub.Register(pb.RegisterRequest(name=self.name), timeout=5)
        self.meta = (("sluice-session", reg.session),)
        return reg

    def release(self):
        """Ends the lease (its uploads deleted); best effort."""
        try:
            self.stub.Release(pb.ReleaseRequest(), timeout=2, metadata=self.meta)
        except grpc.RpcError:
            pass

    def clock_offset(self, rounds=64):
        """The four-timestamp exchange on one stream; the minimum-delay
        round gives (offset worker - controller, +- delay/2) in ns."""
        stamps = []
        ready = threading.Event()
        stamp = [0]

        def requests():
            for _ in range(rounds):
                stamp[0] = now_ns()
                yield pb.ClockRequest(t1_ns=stamp[0])
                ready.wait()
                ready.clear()

        best = None
        for r in self.stub.Clock(requests(), timeout=30, metadata=self.meta):
            t4 = now_ns()
            delay = (t4 - r.t1_ns) - (r.t3_ns - r.t2_ns)
            offset = ((r.t2_ns - r.t1_ns) + (r.t3_ns - t4)) // 2
            if best is None or delay < best[0]:
                best = (delay, offset)
            stamps.append(delay)
            ready.set()
        self.offset_ns, self.uncertainty_ns = best[1], max(best[0], 0) // 2
        return self.offset_ns, self.uncertainty_ns

    def upload(self, path):
        """Uploads `path` into the lease; its id. A file that cannot be read
        raises ControlError naming it (not gRPC's request-thread error)."""
        chunks, local = file_chunks(path)
        try:
            return self.stub.Upload(chunks, timeout=600, metadata=self.meta).id
        except grpc.RpcError as e:
            if local:
                raise ControlError(f"upload {path}: {local[0]}") from None
            raise

    def stop(self):
        self.stub.Stop(pb.StopRequest(), timeout=2, metadata=self.meta)


def file_chunks(path, size=1 << 20):
    """The FileChunks of `path` for an Upload stream, and a list that holds
    the local error that ended the stream, if one did. The file is opened
    here, so a missing or unreadable one raises OSError naming it before
    any call; a read error later ends the stream (gRPC then fails the call
    as "Exception iterating requests!") and is kept for the caller."""
    f = open(path, "rb")
    name = os.path.basename(path)
    local = []

    def chunks():
        with f:
            try:
                while True:
                    data = f.read(size)
                    if not data:
                        return
                    yield pb.FileChunk(name=name, data=data)
            except OSError as e:
                local.append(e)
                raise

    return chunks(), local


def job_message(command, options=None, send=None, duration_ns=None):
    """The task's job (the proto message Job, docs/FORMATS.md) of `command`
    with `options` and `send` (dicts), running for `duration_ns`. A key the
    message lacks, or a value of the wrong type, raises JobRefused before
    any worker is asked; a worker refuses a value the command line would
    refuse."""
    send = dict(send or {})
    if duration_ns is not None:
        send["duration"] = f"{duration_ns}ns"
    # proto3's JSON mapping: the oneof's member beside `send`.
    doc = {command: dict(options or {}), "send": send}
    try:
        return json_format.ParseDict(doc, pb.Job())
    except json_format.ParseError as e:
        raise JobRefused(f"the job: {e}") from None


def run_job(workers, command, path, options=None, duration="2s", split=None, start_in=1.5,
            max_skew_ns=100_000, on_stats=None, send=None):
    """Runs one job split over `workers` and returns the summary: per
    worker its offset, its job's summary (dict) or error, and totals."""
    split = split or DEFAULT_SPLIT[command]
    duration_ns = parse_duration(duration)
    job = job_message(command, options, send, duration_ns)

    def call(w, what, f):
        try:
            return f()
        except grpc.RpcError as e:
            raise _rpc_error(w, what, e) from None

    registered = []
    try:
        for i, w in enumerate(workers):
            reg = call(w, "register", w.register)
            registered.append(w)
            if w.sink not in [p.sink for p in reg.ports]:
                raise ControlError(f"worker {w.name!r} at {w.address}: no port {w.sink}")
            w.port = i
        ports = pb.PortMap(ports=[pb.GlobalPort(id=w.port, worker=w.name, sink=w.sink)
                                  for w in workers])
        for w in workers:
            call(w, "port map",
                 lambda: w.stub.PublishPorts(ports, timeout=5, metadata=w.meta))
            off, unc = call(w, "clock exchange", w.clock_offset)
            if unc > max_skew_ns:
                raise ControlError(
                    f"worker {w.name!r} at {w.address}: clock offset known to +-{unc} ns only")
        ids = []
        for w in workers:
            try:
                ids.append(call(w, "upload", lambda: w.upload(path)))
            except OSError as e:
                raise ControlError(f"{path}: {e.strerror or e}") from None
    except BaseException:
        # Nothing ran: no worker stays held, no upload stays behind.
        for w in registered:
            w.release()
        raise
    start = now_ns() + int(start_in * 1e9)
    deadline = start + duration_ns + 3_000_000_000
    results = [None] * len(workers)
    lock = threading.Lock()

    def one(i, w):
        task = pb.Task(file_id=ids[i], job=job,
                       port=w.port,
                       split=SPLITS[split], share_index=i, share_count=len(workers),
                       start_ns=start, offset_ns=w.offset_ns, deadline_ns=deadline)
        out = {"name": w.name, "port": w.port, "offset_ns": w.offset_ns,
               "offset_uncertainty_ns": w.uncertainty_ns, "summary": None, "error": None,
               "refused": False, "lost": False, "last": None}
        try:
            # Given up at the deadline plus a margin: a frozen worker
            # never holds the caller for ever.
            wait = max((deadline - now_ns()) / 1e9, 0) + 5
            for u in w.stub.Run(task, timeout=wait, metadata=w.meta):
                kind = u.WhichOneof("kind")
                if kind == "stats":
                    v = json.loads(u.stats)
                    if isinstance(v, dict) and "packets" in v:
                        out["last"] = v
                    if on_stats:
                        with lock:
                            on_stats(w, v)
                elif kind == "finished":
                    out["summary"] = json.loads(u.finished)
                elif kind == "failed":
                    out["error"] = u.failed
                elif kind == "refused":
                    out["error"], out["refused"] = u.refused, True
        except grpc.RpcError as e:
            if e.code() in (grpc.StatusCode.INVALID_ARGUMENT,
                            grpc.StatusCode.FAILED_PRECONDITION):
                # The worker refused the task before running it.
                out["error"], out["refused"] = " ".join((e.details() or "").split()), True
            else:
                # The connection broke before the summary: the worker is
                # lost, and what it last reported is a lower bound.
                out["error"] = str(_rpc_error(w, "run", e))
                out["lost"] = True
        results[i] = out

    threads = [threading.Thread(target=one, args=(i, w)) for i, w in enumerate(workers)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        # The run is over (or the caller gave up): no lease stays held.
        for w in workers:
            w.release()
    refused = [r for r in results if r["refused"]]
    if refused:
        raise JobRefused("; ".join(f"worker {r['name']!r} refused the job: "
                                   + " ".join(r["error"].split()) for r in refused))
    done = [r["summary"] for r in results if r["summary"]]
    # A worker that did not finish counts with its last statistics line:
    # the totals are then a lower bound (`at_least`), as the CLI's are.
    unfinished = [r for r in results if not r["summary"]]
    counted = done + [r["last"] for r in unfinished if r["last"]]
    total = {"workers": len(workers), "finished": len(done),
             "lost": sum(1 for r in results if r["lost"]),
             "at_least": bool(unfinished),
             "packets": sum(s.get("packets", 0) for s in counted),
             "frame_bytes": sum(s.get("frame_bytes", 0) for s in counted)}
    return {"command": command, "split": split, "start_ns": start, "workers": results,
            "total": total}


# The Jobs service's client (live control of one worker's jobs).
from .jobs import Jobs, Refused, ServiceError, flat  # noqa: E402
