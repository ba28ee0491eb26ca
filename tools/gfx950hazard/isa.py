"""The hazard checker's input: gfx950 assembly parsed by the one parser (:mod:`gfx950isa.syntax`) with each
instruction's issue class, register reads/writes and MFMA roles filled in from the one instruction table
(:func:`gfx950isa.roles.analyze`).

Each instruction is a :class:`gfx950isa.syntax.Instr` with ``kind`` (``mfma``, ``valu``, ``trans``, ``vmem``,
``ds``, ``smem``, ``salu``, ``nop``, ``branch``, ``end``), ``defs``/``uses`` (register units ``(file, index)``)
and, for MFMAs, ``mfma_d``/``mfma_a``/``mfma_b``/``mfma_c``/``mfma_scale`` and ``passes``. Unknown MFMA
mnemonics raise :class:`AsmError` (their pass count decides wait states; guessing would hide a hazard).
"""
from __future__ import annotations

from gfx950isa.roles import analyze, parse_regs
from gfx950isa.syntax import AsmError, Instr, parse_items
from gfx950isa.table import mfma_passes as _mfma_passes

__all__ = ["AsmError", "Instr", "parse", "parse_regs", "mfma_passes"]


def mfma_passes(mnemonic: str, mods: dict) -> int:
    """Pass count of an MFMA (gfx950; :func:`gfx950isa.table.mfma_passes`); AsmError when unknown."""
    try:
        return _mfma_passes(mnemonic, mods)
    except ValueError as e:
        raise AsmError(str(e)) from None


def parse(text: str) -> list:
    """Instructions of `text` in order, analysed, with labels as ``("label", name)`` tuples. Directives,
    comments, and the bodies of ``.amdhsa_kernel`` and ``.amdgpu_metadata`` blocks are skipped."""
    items = parse_items(text)
    for x in items:
        if isinstance(x, Instr):
            analyze(x)
    return items
