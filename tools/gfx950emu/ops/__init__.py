"""Instruction semantics: each parsed :class:`~gfx950emu.asm.Instr` is compiled once into a Python closure
``fn(wave) -> None | int`` (None: fall through; an int >= 0: branch to that instruction index; ``BARRIER`` or
``ENDPGM``). Vector instructions work on all 64 lanes at once with numpy and honour EXEC.

Register file layout of a wave (see machine.Wave): ``s`` is a list of 128 Python ints (SGPRs; VCC = s106/107,
M0 = s124, EXEC = s126/127, the gfx9 operand encodings), ``v`` is a (512, 64) uint32 array (v0-v255 then
a0-a255). Unknown mnemonics, operands or modifiers raise :class:`EmuError` at compile time.

Semantics are split by unit, one module each: :mod:`.scalar` (SOPP/SOP*/SMEM), :mod:`.vector` (VALU table,
DPP/SDWA, compares, lane ops), :mod:`.cvt` (conversions, fp8/bf8, scaled converts), :mod:`.matrix` (MFMA),
:mod:`.memory` (global/flat/scratch/buffer, LDS-DMA), :mod:`.lds` (DS); :mod:`.common` holds the register
readers/writers they share. Instruction facts (units, MFMA shapes, calls) come from :mod:`gfx950isa.table`.
"""
from __future__ import annotations

import re

from gfx950isa.table import CALLS as _CALLS, unit_of

from ..asm import Instr
from ..errors import EmuError
from ..semantics import Semantics
from .common import BARRIER, ENDPGM, M32, M64, _reg_keys, int_to_mask, mask_to_int
from .lds import LdsUnit
from .matrix import MatrixUnit
from .memory import MemoryUnit
from .scalar import _SOP, ScalarUnit  # noqa: F401
from .vector import _VSPECIAL, VOP, VectorUnit

__all__ = ["Compiler", "BARRIER", "ENDPGM", "M32", "M64", "int_to_mask", "mask_to_int", "VOP", "implemented_mnemonics"]


class Compiler(ScalarUnit, VectorUnit, MatrixUnit, MemoryUnit, LdsUnit):
    """Compiles instructions of one program. ``labels``: label -> instruction index."""

    def __init__(self, labels: dict, sem: Semantics):
        self.labels = labels
        self.sem = sem

    # result: (fn, touched_keys, queue, dst_keys); queue in {None, "vm", "lgkm" (LDS), "smem"}
    def compile(self, ins: Instr):
        name = ins.mnemonic
        keys = []
        for op in ins.operands:
            keys += _reg_keys(op)
        touched = frozenset(keys)
        for meth in _methods(name):
            try:
                out = meth(self, ins)
            except EmuError as e:
                if name in _CALLS or (any(o.kind == "label" for o in ins.operands) and
                                      not (name == "s_branch" or name.startswith("s_cbranch_"))):
                    # Known but unsupported (calls, pc-relative symbol arithmetic): the program still
                    # loads (other kernels or functions may be fine); executing it is the error.
                    msg = str(e)

                    def deferred(w, msg=msg):
                        raise EmuError(msg)
                    return deferred, touched, None, frozenset()
                raise
            if out is not None:
                fn, q, dsts = out if isinstance(out, tuple) else (out, None, ())
                return fn, touched, q, frozenset(dsts)
        raise EmuError(f"unknown instruction {name!r}")



def _methods(name: str):
    """Compile routines for a mnemonic, chosen by its issue class in the one instruction table
    (gfx950isa.table.unit_of); memory instructions further by address space (segment prefix)."""
    unit = unit_of(re.sub(r"_(e32|e64|sdwa|dpp)$", "", name))
    if unit in ("valu", "trans", "mfma"):
        return (Compiler.c_valu,)
    if unit == "smem":
        return (Compiler.c_smem, Compiler.c_sopp, Compiler.c_salu)
    if unit in ("salu", "nop", "branch", "end"):
        return (Compiler.c_sopp, Compiler.c_salu)
    if unit == "ds":
        return (Compiler.c_ds,)
    if unit == "vmem":
        if name.startswith("buffer_"):
            return (Compiler.c_buffer,)
        if name.startswith("scratch_"):
            return (Compiler.c_scratch,)
        return (Compiler.c_global,)  # global_ and flat_ (flat is treated as global)
    return ()


def implemented_mnemonics() -> set:
    """Every mnemonic with table-driven semantics (VALU table, VALU specials, SALU table, MFMA shapes)."""
    from ..mfma import MFMA_SHAPES
    return set(VOP) | set(_VSPECIAL) | set(_SOP) | set(MFMA_SHAPES)
