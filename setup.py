"""Build of the Python package zyfa (metadata in pyproject.toml).

Builds two shared libraries next to python/zyfa/__init__.py, both from python/zyfa/csrc/capi.cpp (a C ABI loaded
with ctypes, no libtorch linkage):
  * _zyfa_host.so: the host backend (zyfa::host), with the C++ compiler ($CXX, else c++): always;
  * _zyfa_cuda.so: the GPU kernels (zyfa::flash_attn_func, ...), with nvcc for sm_90a: when nvcc is found
    ($ZYFA_NVCC, $CUDA_HOME/bin/nvcc, PATH, /usr/local/cuda/bin/nvcc). Each built-in head-dim pair
    (include/zyfa/head_dims.hpp) is instantiated in its own translation unit (csrc/instantiate.cu), compiled in
    parallel ($ZYFA_BUILD_JOBS, default: CPU count).
Environment: ZYFA_CUDA=0 skips the CUDA library, ZYFA_CUDA=1 makes a missing nvcc an error; ZYFA_CUDA_ARCH
(default 90a) picks the target (-gencode=arch=compute_<arch>,code=sm_<arch>). A HIP (AMD) build of the package is
not provided yet.

  pip install --no-build-isolation .     # with the torch already installed (the GPU machine: offline)
  pip install .                          # CPU machine with internet: pip fetches the pinned build requirements
"""
from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(ROOT, "include")
CSRC = os.path.join(ROOT, "python", "zyfa", "csrc")


def _run(cmd: list[str]) -> None:
    print("zyfa build:", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout)
        raise RuntimeError(f"zyfa build: command failed ({r.returncode}): {' '.join(cmd)}")


def _find_nvcc() -> str | None:
    for c in (os.environ.get("ZYFA_NVCC"),
              os.path.join(os.environ["CUDA_HOME"], "bin", "nvcc") if os.environ.get("CUDA_HOME") else None,
              shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def _builtin_head_dims() -> list[tuple[int, int]]:
    text = open(os.path.join(INCLUDE, "zyfa", "head_dims.hpp")).read()
    line = re.search(r"#define ZYFA_BUILTIN_HEAD_DIMS\(X\)(.*)", text).group(1)
    return [(int(a), int(b)) for a, b in re.findall(r"X\((\d+),\s*(\d+)\)", line)]


def build_host(out_dir: str, tmp: str) -> str:
    cxx = os.environ.get("CXX") or shutil.which("c++") or "g++"
    out = os.path.join(out_dir, "_zyfa_host.so")
    # -ffp-contract=off: the host FP8 specification is bit-exact only under strict IEEE fp32 (no implicit FMA)
    _run([cxx, "-std=c++17", "-O2", "-fPIC", "-shared", "-ffp-contract=off", "-I", INCLUDE,
          os.path.join(CSRC, "capi.cpp"), "-o", out])
    return out


def build_cuda(out_dir: str, tmp: str, nvcc: str) -> str:
    arch = os.environ.get("ZYFA_CUDA_ARCH", "90a")
    flags = ["-std=c++17", "-O3", f"-gencode=arch=compute_{arch},code=sm_{arch}", "-Xcompiler", "-fPIC",
             "-I", INCLUDE, "-DZYFA_SEPARATE_INSTANTIATION"]
    jobs = [([nvcc, "-x", "cu", *flags, "-c", os.path.join(CSRC, "capi.cpp"), "-o", os.path.join(tmp, "capi.o")],
             os.path.join(tmp, "capi.o"))]
    for dqk, dv in _builtin_head_dims():
        obj = os.path.join(tmp, f"inst_{dqk}_{dv}.o")
        jobs.append(([nvcc, *flags, f"-DZYFA_DQK={dqk}", f"-DZYFA_DV={dv}", "-c",
                      os.path.join(CSRC, "instantiate.cu"), "-o", obj], obj))
    n = int(os.environ.get("ZYFA_BUILD_JOBS", os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, n)) as ex:
        for f in [ex.submit(_run, cmd) for cmd, _ in jobs]:
            f.result()
    out = os.path.join(out_dir, "_zyfa_cuda.so")
    _run([nvcc, "-shared", f"-gencode=arch=compute_{arch},code=sm_{arch}", *[o for _, o in jobs], "-o", out])
    return out


def build_libraries(out_dir: str) -> None:
    tmp = os.path.join(ROOT, "build-python")
    os.makedirs(tmp, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)
    want_cuda = os.environ.get("ZYFA_CUDA", "auto")
    nvcc = _find_nvcc() if want_cuda != "0" else None
    if want_cuda == "1" and nvcc is None:
        raise RuntimeError("zyfa build: ZYFA_CUDA=1 but nvcc was not found (ZYFA_NVCC, CUDA_HOME, PATH)")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        futs = [ex.submit(build_host, out_dir, tmp)]
        if nvcc:
            futs.append(ex.submit(build_cuda, out_dir, tmp, nvcc))
        else:
            print("zyfa build: nvcc not found or ZYFA_CUDA=0: CPU (host backend) only", flush=True)
        for f in futs:
            f.result()


class BuildPyWithLibraries(build_py):
    """build_py, then the shared libraries into the built package."""

    def run(self):
        super().run()
        build_libraries(os.path.join(self.build_lib, "zyfa"))


class BinaryDistribution(Distribution):
    """The wheel holds native libraries: a platform wheel, not a pure one."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildPyWithLibraries}, distclass=BinaryDistribution)
