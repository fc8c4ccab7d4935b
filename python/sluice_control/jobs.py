"""A client of a worker's `Jobs` service: jobs of one host, watched as they
run and changed live (rate, ramp, pause, resume, stop).

    from sluice_control import Jobs
    svc = Jobs("unix:/run/sluice/worker.sock")
    job = svc.submit("replay", "trace.pcap", {"pps": "10k", "loop": 0},
                     to="afpacket:eth1")
    svc.set_rate(job["id"], "100k")
    for line in svc.watch(job["id"]):      # dicts, as they happen
        print(line["schema"], line.get("pps"))
        if line.get("t", 0) > 5:
            svc.stop(job["id"])

`watch` yields each interval's --stats-json line (schema sluice.interval/1)
and, with `rx=`, the receiver's count (sluice.rx/1), then the summary
(sluice.summary/1); `records` gives the interval lines flat, one dict per
interval, as a DataFrame takes them (`pandas.DataFrame(svc.records(id))`).
"""
import json

import grpc
from google.protobuf import json_format

from . import worker_pb2 as pb, worker_pb2_grpc as pb_grpc

CHUNK = 1 << 20


class ServiceError(RuntimeError):
    """The service cannot be reached, or refused a call (one line)."""


class Refused(ServiceError):
    """The service refused a job or a change as bad input."""


def _error(what, e):
    code = e.code() if hasattr(e, "code") else None
    details = " ".join(((e.details() if hasattr(e, "details") else str(e)) or str(code)).split())
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED):
        return Refused(f"{what}: {details}")
    return ServiceError(f"{what}: {code.name.lower() if code else 'error'}: {details}")


def _info(m):
    """A message as a dict; 64-bit integers as ints (proto3's JSON mapping
    writes them as strings), so `job["id"]` is what `set_rate` takes."""
    d = json_format.MessageToDict(m, preserving_proto_field_name=True,
                                  always_print_fields_with_no_presence=True)
    for f in m.DESCRIPTOR.fields:
        if f.type in (f.TYPE_UINT64, f.TYPE_INT64) and isinstance(d.get(f.name), str):
            d[f.name] = int(d[f.name])
    return d


def flat(line):
    """An interval line as one flat record: ε percentiles as eps_p50_ns …"""
    rec = {k: v for k, v in line.items() if not isinstance(v, (dict, list))}
    eps = line.get("eps") or {}
    for k, v in eps.items():
        if not isinstance(v, (dict, list)):
            rec[f"eps_{k}"] = v
    return rec


class Jobs:
    """A worker's Jobs service at `address` (unix:PATH, or HOST:PORT with
    the key directory `tls_dir` of sluice keygen)."""

    def __init__(self, address, tls_dir=None, timeout=10):
        self.address, self.timeout = address, timeout
        from . import worker_channel
        self.channel = worker_channel(address, tls_dir)
        if self.channel is None:
            raise ServiceError(f"{address}: TCP needs tls_dir (a worker without keys "
                               "serves unix:PATH)")
        self.stub = pb_grpc.JobsStub(self.channel)

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    def _call(self, what, f, *args):
        try:
            return f(*args, timeout=self.timeout)
        except grpc.RpcError as e:
            raise _error(what, e) from None

    def upload(self, path):
        """Uploads `path` under its plain name; the id a submission names."""
        from . import file_chunks
        try:
            chunks, local = file_chunks(path, CHUNK)
        except OSError as e:
            raise ServiceError(f"upload {path}: {e.strerror or e}") from None
        try:
            return self.stub.Upload(chunks, timeout=600).id
        except grpc.RpcError as e:
            if local:
                raise ServiceError(f"upload {path}: {local[0]}") from None
            raise _error(f"upload {path}", e) from None

    def submit(self, command, path, options=None, send=None, to="null", name="", rx=None,
               job=None, paused=False):
        """Starts `command` ("replay", "flows", "series", "profile") on the
        file `path` with `options` and `send` (dicts keyed by the command
        line's long option names, as sluice_control.job_message takes them),
        or the typed message `job` (pb.Job) instead; sending to `to` (a port
        the worker announced), counting stamped frames on `rx`; `paused`:
        ready, nothing sent until `resume`. The job's info (a dict)."""
        if job is None:
            from . import job_message
            job = job_message(command, options, send)
        file_id = self.upload(path)
        sub = pb.Submission(job=job, file_id=file_id, to=to, name=name, rx=rx or "",
                            paused=paused)
        return _info(self._call("submit", self.stub.Submit, sub))

    def list(self):
        return [_info(j) for j in self._call("list", self.stub.List, pb.ListRequest()).jobs]

    def info(self, job_id):
        for j in self.list():
            if j["id"] == int(job_id):
                return j
        raise Refused(f"no job {job_id}")

    def change(self, job_id, rate=None, ramp=None, pause=False, resume=False, at_ns=0):
        """One change: `rate` ("50k" in the job's unit, "x2" a multiple of
        its planned rate), `ramp` ("200k/5s" from the rate now, or points
        "0s=10k,2s=50k"), `pause` or `resume`; at `at_ns` from the job's
        start, or as soon as it can (2 ms ahead). The job's info, with
        `changed_at_ns` the instant it took effect."""
        kw = {}
        if rate is not None:
            kw["rate"] = str(rate)
        elif ramp is not None:
            kw["ramp"] = ramp
        elif pause:
            kw["pause"] = True
        elif resume:
            kw["resume"] = True
        else:
            raise ValueError("one of rate, ramp, pause or resume")
        req = pb.ChangeRequest(id=job_id, at_ns=at_ns, **kw)
        return _info(self._call(f"job {job_id}", self.stub.Change, req))

    def set_rate(self, job_id, rate, at_ns=0):
        return self.change(job_id, rate=rate, at_ns=at_ns)

    def ramp(self, job_id, ramp, at_ns=0):
        return self.change(job_id, ramp=ramp, at_ns=at_ns)

    def pause(self, job_id):
        return self.change(job_id, pause=True)

    def resume(self, job_id):
        return self.change(job_id, resume=True)

    def stop(self, job_id):
        return _info(self._call(f"job {job_id}", self.stub.Stop, pb.JobRef(id=job_id)))

    def watch(self, job_id):
        """Job `job_id`'s lines as they come (dicts), its summary last; a
        job that failed raises ServiceError with its error."""
        try:
            for u in self.stub.Watch(pb.JobRef(id=job_id)):
                kind = u.WhichOneof("kind")
                if kind == "stats":
                    yield json.loads(u.stats)
                elif kind == "finished":
                    yield json.loads(u.finished)
                    return
                elif kind in ("failed", "refused"):
                    raise ServiceError(f"job {job_id}: {getattr(u, kind)}")
        except grpc.RpcError as e:
            raise _error(f"job {job_id}", e) from None

    def records(self, job_id):
        """Every interval of the job to its end, flat (a DataFrame's rows)."""
        return [flat(l) for l in self.watch(job_id)
                if l.get("schema", "").startswith("sluice.interval")]
