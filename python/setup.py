"""Packs the repository's proto/sluice/control/v1/worker.proto into the
sluice_control package, so the installed client compiles the very proto
the sluice binary was built from (metadata: pyproject.toml)."""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = os.path.join("sluice", "control", "v1", "worker.proto")


class BuildWithProto(build_py):
    def run(self):
        super().run()
        src = os.path.join(HERE, "..", "proto", PROTO)
        if not os.path.isfile(src):
            raise SystemExit(f"{src}: not found; build from a sluice checkout")
        dst = os.path.join(self.build_lib, "sluice_control", "proto", PROTO)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)


setup(cmdclass={"build_py": BuildWithProto})
