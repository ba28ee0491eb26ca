"""Cross-check of the hazard checker against LLVM's own hazard recognizer.

Method: compile a HIP file to LLVM IR with clang-22, run llc-22 up to (not including) the
``post-RA-hazard-rec`` pass and save the MIR, then print assembly from that MIR twice: once skipping the pass
(``-start-after``: no s_nops) and once running it (``-start-before``: LLVM's s_nops). For every instruction of
the nop-free text, the padding the checker computes (checker.required_nops, program order like LLVM) must equal the wait states of the s_nops LLVM
put in front of it. This compares the checker with GCNHazardRecognizer on real compiler output, including
hazards across branches, without hand-writing MIR.

Requires clang++-22 and llc-22 on PATH (Debian bookworm packages clang-22, llvm-22).
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import tempfile

from .checker import required_nops
from .isa import Instr, parse

CLANG = os.environ.get("ZYFA_CLANG", "clang++-22")
LLC = os.environ.get("ZYFA_LLC", "llc-22")


def hip_flags(include_dirs=()) -> list:
    """clang-22 flags that compile HIP device code for gfx950 without ROCm (DESIGN.md "Toolchain facts")."""
    rd = subprocess.run([CLANG, "-print-resource-dir"], check=True, capture_output=True, text=True).stdout.strip()
    flags = ["-x", "hip", "--offload-arch=gfx950", "--cuda-device-only", "-nogpulib", "-nogpuinc", "-isystem", rd,
             "-D__HIP_PLATFORM_AMD__", "-D__AMDGCN_WAVEFRONT_SIZE=64", "-O3", "-std=c++17"]
    for d in include_dirs:
        flags += ["-I", str(d)]
    return flags


def asm_pair(hip_path, include_dirs=()):
    """(assembly without hazard nops, assembly with LLVM's hazard nops) for a HIP file, from the same MIR."""
    with tempfile.TemporaryDirectory() as td:
        ll = os.path.join(td, "k.ll")
        mir = os.path.join(td, "k.mir")
        subprocess.run([CLANG, *hip_flags(include_dirs), "-S", "-emit-llvm", str(hip_path), "-o", ll], check=True)
        base = [LLC, "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx950", "-O3"]
        subprocess.run([*base, "-stop-before=post-RA-hazard-rec", ll, "-o", mir], check=True)
        outs = []
        for opt in ("-start-after=post-RA-hazard-rec", "-start-before=post-RA-hazard-rec"):
            s = os.path.join(td, "k.s")
            subprocess.run([*base, opt, mir, "-o", s], check=True)
            with open(s) as f:
                outs.append(f.read())
    return outs[0], outs[1]


def mir_asm_pair(mir_path):
    """(assembly without hazard nops, assembly with LLVM's hazard nops) for a hand-written MIR file (functions
    with post-RA physical registers, e.g. tools/gfx950hazard/corpus/rules.mir)."""
    base = [LLC, "-mtriple=amdgcn-amd-amdhsa", "-mcpu=gfx950"]
    outs = []
    for opt in ("-start-after=post-RA-hazard-rec", "-start-before=post-RA-hazard-rec"):
        r = subprocess.run([*base, opt, str(mir_path), "-o", "-"], check=True, capture_output=True, text=True)
        outs.append(r.stdout)
    return outs[0], outs[1]


@dataclasses.dataclass
class Mismatch:
    line: int
    text: str
    llvm_wait_states: int
    checker_wait_states: int


def compare(nonop_text: str, nop_text: str):
    """Compare checker and LLVM. Returns (number of instructions where LLVM inserted nops, list of Mismatch).

    Raises ValueError if the two texts differ in anything but s_nops (the alignment would be meaningless)."""
    a = [x for x in parse(nonop_text) if isinstance(x, Instr)]
    b = [x for x in parse(nop_text) if isinstance(x, Instr)]
    llvm_ws = []
    pending = 0
    b_no = []
    for x in b:
        if x.kind == "nop":
            pending += x.wait_states()
            continue
        b_no.append(x)
        llvm_ws.append(pending)
        pending = 0
    # the input may contain s_nops of its own (inline asm, s_nop from builtins): those are in both texts
    a_no = [x for x in a if x.kind != "nop"]
    if [x.text for x in a_no] != [x.text for x in b_no]:
        raise ValueError("texts differ beyond s_nop instructions")
    pre_nops = {}
    pend = 0
    for x in a:
        if x.kind == "nop":
            pend += x.wait_states()
        else:
            pre_nops[x.index] = pend
            pend = 0
    mine = required_nops(parse(nonop_text))
    mism = []
    n_llvm = 0
    for x, ws in zip(a_no, llvm_ws):
        extra = ws - pre_nops[x.index] if ws >= pre_nops[x.index] else 0
        n_llvm += extra > 0
        if mine.get(x.index, 0) != extra:
            mism.append(Mismatch(x.line, x.text, extra, mine.get(x.index, 0)))
    return n_llvm, mism
