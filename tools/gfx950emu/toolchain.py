"""Compiling HIP for gfx950 with Debian's clang-22 (DESIGN.md "Toolchain facts"), for end-to-end tests."""
from __future__ import annotations

import os
import subprocess

from .errors import EmuError

CLANG = os.environ.get("ZYFA_CLANG", "clang++-22")


def hip_flags(arch: str = "gfx950") -> list[str]:
    """The device-only flags zyfa uses for AMD (DESIGN.md): -nogpulib, HIP 5.2 headers, wave64, -O3, C++17."""
    res = subprocess.run([CLANG, "-print-resource-dir"], capture_output=True, text=True, check=True).stdout.strip()
    return ["-x", "hip", f"--offload-arch={arch}", "--cuda-device-only", "-nogpulib", "-nogpuinc", "-isystem", res,
            "-D__HIP_PLATFORM_AMD__", "-D__AMDGCN_WAVEFRONT_SIZE=64", "-O3", "-std=c++17"]


def compile_hip_to_asm(src: str, out_s: str, include_dirs=(), defines=(), arch: str = "gfx950") -> str:
    """Compiles the HIP file ``src`` to gfx950 assembly at ``out_s``; returns the assembly text.
    Raises EmuError with the compiler's messages on failure."""
    cmd = [CLANG] + hip_flags(arch) + [f"-I{d}" for d in include_dirs] + [f"-D{d}" for d in defines] + \
        ["-S", src, "-o", out_s]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise EmuError(f"clang-22 failed on {src}:\n{r.stderr[-4000:]}")
    with open(out_s) as f:
        return f.read()
