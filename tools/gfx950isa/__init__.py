"""gfx950isa: the one description of gfx950 (CDNA4, MI355X) instructions shared by zyfa's tools.

* :mod:`gfx950isa.syntax` — the one parser of LLVM-syntax assembly (operands, modifiers, labels, kernel
  descriptors); :mod:`gfx950isa.lex` its top-level splitting.
* :mod:`gfx950isa.table` — the one instruction table (issue class, MFMA shapes/passes, transcendental ops,
  tied/two-destination VALU ops, scalar ops without destination).
* :mod:`gfx950isa.roles` — register units each instruction reads and writes (for hazards and scheduling).

The emulator (gfx950emu), the hazard checker (gfx950hazard) and the generator (zyfa_gen) import these and keep
no instruction table or parser of their own. Standard library only.
"""
from .syntax import AsmError, Instr, KernelInfo, Operand, parse_asm, parse_instruction, parse_items, parse_operand
from .roles import analyze, parse_regs, units
from .table import MFMA_SHAPES, MfmaShape, mfma_passes, mfma_shape

__all__ = ["AsmError", "Instr", "KernelInfo", "Operand", "parse_asm", "parse_instruction", "parse_items",
           "parse_operand", "analyze", "parse_regs", "units", "MFMA_SHAPES", "MfmaShape", "mfma_passes",
           "mfma_shape"]
