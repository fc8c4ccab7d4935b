"""Builds the sluice_control package with its gRPC stubs compiled here,
at build time, from the repository's proto/sluice/control/v1/worker.proto
(the very proto the sluice binary was built from; an sdist carries a
copy of it, so a wheel builds from the sdist anywhere), and installs
sluice_inject beside it (metadata: pyproject.toml).

Nothing is compiled on import: a package that compiled its stubs into a
temporary directory and imported them from there would run whatever
another local user planted in that directory first.
"""
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join("sluice", "control", "v1", "worker.proto")


def proto_source():
    """The proto: beside this file in an sdist, in the checkout's proto/
    otherwise."""
    for root in (os.path.join(HERE, "proto"), os.path.join(HERE, "..", "proto")):
        src = os.path.join(root, PROTO)
        if os.path.isfile(src):
            return src
    raise SystemExit(f"{PROTO}: not found beside setup.py nor in ../proto; "
                     "build from a sluice checkout or its sdist")


class SdistWithProto(sdist):
    """The sdist carries the proto, so a wheel builds from it anywhere."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        dst = os.path.join(base_dir, "proto", PROTO)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(proto_source(), dst)


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        src = proto_source()
        pkg = os.path.join(self.build_lib, "sluice_control")
        dst = os.path.join(pkg, "proto", PROTO)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        compile_stubs(os.path.dirname(src), pkg)


def compile_stubs(proto_dir, out):
    """worker_pb2.py and worker_pb2_grpc.py into `out`, the second importing
    the first relatively (a module of the package, not a top-level one)."""
    import grpc_tools
    from grpc_tools import protoc

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    rc = protoc.main(["protoc", "-I", proto_dir, "-I", include,
                      "--python_out", out, "--grpc_python_out", out, "worker.proto"])
    if rc != 0:
        raise SystemExit("grpc_tools.protoc failed on " + PROTO)
    grpc_py = os.path.join(out, "worker_pb2_grpc.py")
    with open(grpc_py) as f:
        text = f.read()
    text, n = re.subn(r"^import worker_pb2 as", "from . import worker_pb2 as", text,
                      flags=re.M)
    if n != 1:
        raise SystemExit(f"{grpc_py}: the import of worker_pb2 was not found")
    with open(grpc_py, "w") as f:
        f.write(text)


setup(cmdclass={"build_py": BuildWithStubs, "sdist": SdistWithProto})
