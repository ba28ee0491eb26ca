"""The emulator's view of the one gfx950 parser (:mod:`gfx950isa.syntax`).

Parsing is shared with the hazard checker and the generator; this module only adds what the emulator
refuses to run (trap temporaries, ``src_*`` special sources, misaligned register tuples) and turns parse
errors into :class:`~gfx950emu.errors.EmuError`. Register names follow the LLVM AMDGPU assembler
(AMDGPUUsage, "Assembler" section).
"""
from __future__ import annotations

from gfx950isa.syntax import (EXEC, M0, SPECIAL_SGPRS, VCC, AsmError, Instr, KernelInfo, Operand,  # noqa: F401
                              parse_int)
from gfx950isa import syntax as _syntax

from .errors import EmuError

__all__ = ["EXEC", "M0", "VCC", "SPECIAL_SGPRS", "Instr", "Operand", "KernelInfo", "parse_int", "parse_operand",
           "parse_instruction", "parse_asm", "check_operand"]


class EmuKernelInfo(KernelInfo):
    """KernelInfo whose directive lookup reports symbolic values as EmuError."""

    def d(self, key: str, default: int = 0) -> int:
        try:
            return super().d(key, default)
        except AsmError as e:
            raise EmuError(str(e)) from None


def check_operand(op: Operand) -> Operand:
    """EmuError for an operand the emulator does not model."""
    if op.kind == "ttmp":
        raise EmuError(f"trap temporaries are not supported: {op.text!r}")
    if op.kind == "special":
        raise EmuError(f"special source operand {op.text!r} is not supported")
    if not op.aligned:
        raise EmuError(f"misaligned register tuple {op.text!r}")
    return op


def parse_operand(t: str) -> Operand:
    """One operand token (with its source modifiers), checked for what the emulator models."""
    try:
        return check_operand(_syntax.parse_operand(t))
    except AsmError as e:
        raise EmuError(str(e)) from None


def parse_instruction(body: str, line: int) -> Instr:
    """The text of one instruction (comments removed), checked for what the emulator models."""
    try:
        ins = _syntax.parse_instruction(body, line)
    except AsmError as e:
        raise EmuError(str(e)) from None
    for op in ins.operands:
        check_operand(op)
    return ins


def parse_asm(text: str):
    """(instrs, labels, kernels) of `text` (see :func:`gfx950isa.syntax.parse_asm`); EmuError on anything the
    emulator does not model."""
    try:
        instrs, labels, kernels = _syntax.parse_asm(text)
    except AsmError as e:
        raise EmuError(str(e)) from None
    for ins in instrs:
        for op in ins.operands:
            try:
                check_operand(op)
            except EmuError as e:
                raise EmuError(f"line {ins.line}: {e}") from None
    out = {}
    for name, k in kernels.items():
        ek = EmuKernelInfo(k.name, k.directives, k.entry)
        out[name] = ek
    return instrs, labels, out
