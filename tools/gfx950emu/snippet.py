"""Running a few instructions on one wave, for unit tests and experiments.

    prog = snippet_program("v_add_f32_e32 v0, v1, v2")
    w = run_wave(Machine(prog), vgprs={1: x, 2: y})
    w.v[0].view(np.float32)

``assemble_check`` runs LLVM 22's assembler on the same text, so a test cannot pass on syntax that the real
assembler rejects.
"""
from __future__ import annotations

import os
import subprocess
import tempfile

import numpy as np

from .asm import EXEC
from .errors import EmuError
from .machine import Machine, Program, Wave
from .memory import LocalMemory
from .semantics import Semantics

LLVM_MC = os.environ.get("ZYFA_LLVM_MC", "/usr/lib/llvm-22/bin/llvm-mc")

_WRAP = """\t.amdgcn_target "amdgcn-amd-amdhsa--gfx950"
\t.amdhsa_code_object_version 5
\t.text
\t.globl snippet
\t.p2align 8
\t.type snippet,@function
snippet:
{body}
\ts_endpgm
\t.section .rodata,"a",@progbits
\t.p2align 6
\t.amdhsa_kernel snippet
\t\t.amdhsa_next_free_vgpr 512
\t\t.amdhsa_next_free_sgpr 96
\t\t.amdhsa_accum_offset 256
\t\t.amdhsa_group_segment_fixed_size {lds}
\t\t.amdhsa_private_segment_fixed_size {priv}
\t\t.amdhsa_enable_private_segment {priv_en}
\t\t.amdhsa_user_sgpr_count 2
\t\t.amdhsa_user_sgpr_kernarg_segment_ptr 1
\t.end_amdhsa_kernel
"""


def snippet_text(body: str, lds_bytes: int = 65536, private_bytes: int = 0) -> str:
    """A complete kernel ``snippet`` (code object v5) around the instruction lines ``body``; ``private_bytes``
    of scratch per work-item."""
    lines = "\n".join("\t" + ln.strip() if ln.strip() and not ln.strip().endswith(":") else ln.strip()
                      for ln in body.strip().splitlines())
    return _WRAP.format(body=lines, lds=lds_bytes, priv=private_bytes, priv_en=int(private_bytes > 0))


def snippet_program(body: str, semantics: Semantics | None = None, lds_bytes: int = 65536,
                    private_bytes: int = 0) -> Program:
    return Program.from_asm_text(snippet_text(body, lds_bytes, private_bytes), semantics)


def assemble_check(body: str, lds_bytes: int = 65536, private_bytes: int = 0) -> None:
    """Assembles the snippet with llvm-mc-22 for gfx950; raises EmuError with the assembler's message."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "s.s")
        with open(src, "w") as f:
            f.write(snippet_text(body, lds_bytes, private_bytes))
        r = subprocess.run([LLVM_MC, "-triple=amdgcn-amd-amdhsa", "-mcpu=gfx950", "-filetype=obj", src,
                            "-o", os.path.join(d, "s.o")], capture_output=True, text=True)
        if r.returncode != 0:
            raise EmuError(f"llvm-mc rejects the snippet:\n{r.stderr}")


def run_wave(machine: Machine, sgprs: dict | None = None, vgprs: dict | None = None, exec_mask: int | None = None,
             lds: np.ndarray | None = None, kernel: str = "snippet") -> Wave:
    """Runs the kernel's code on one wave with the given initial registers and returns the wave.

    sgprs: index -> 32-bit int (VCC = 106, M0 = 124; EXEC via exec_mask, default all 64 lanes).
    vgprs: index (0..511; AGPR n = 256 + n) -> 64 values (any numpy dtype of 4 bytes, or Python ints).
    lds: initial LDS bytes (uint8 array); the wave's LDS is ``wave.lds.buf``.
    """
    prog = machine.program
    k = prog.kernel(kernel)
    size = k.d("group_segment_fixed_size")
    mem = LocalMemory(machine.lds_bytes)
    mem.limit = size
    if lds is not None:
        mem.buf[: len(lds)] = np.asarray(lds, np.uint8)
    w = Wave(machine, mem, 0)
    if k.d("private_segment_fixed_size"):
        w.scratch = np.zeros((64, k.d("private_segment_fixed_size")), np.uint8)
    ex = (1 << 64) - 1 if exec_mask is None else exec_mask
    w.s[EXEC], w.s[EXEC + 1] = ex & 0xFFFFFFFF, ex >> 32
    for i, val in (sgprs or {}).items():
        w.s[i] = int(val) & 0xFFFFFFFF
    for i, val in (vgprs or {}).items():
        a = np.asarray(val)
        if a.dtype.itemsize != 4:
            a = (a.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)
        w.v[i] = np.broadcast_to(a.view(np.uint32), (64,))
    w.pc = k.entry
    with np.errstate(all="ignore"):
        machine._run_wave(w, prog, k)
    if not w.done:
        raise EmuError("snippet stopped at s_barrier")
    return w


def run_snippet(body: str, vgprs: dict | None = None, sgprs: dict | None = None, exec_mask: int | None = None,
                lds=None, semantics: Semantics | None = None, check: bool = True, lds_bytes: int = 65536,
                private_bytes: int = 0):
    """Assembles-checks (llvm-mc-22, when ``check``) and runs ``body`` on one wave; returns the wave."""
    if check:
        assemble_check(body, lds_bytes, private_bytes)
    m = Machine(snippet_program(body, semantics, lds_bytes, private_bytes))
    return run_wave(m, sgprs=sgprs, vgprs=vgprs, exec_mask=exec_mask, lds=lds)
