"""gfx950hazard: a static checker for missing wait states (s_nop) in gfx950 (CDNA4) assembly.

Usage from Python::

    from gfx950hazard import check_text
    for v in check_text(open("k.s").read()):
        print(v)

Command line: ``python3 -m gfx950hazard k.s [more.s ...]`` prints each violation and exits 1 if any.
The rules, their wait-state counts and their sources are in :mod:`gfx950hazard.checker` and docs/hazards.md.
"""
from .checker import RULES, Violation, check, check_text, mfma_read_wait
from .isa import AsmError, Instr, parse, parse_regs

__all__ = ["RULES", "Violation", "check", "check_text", "mfma_read_wait", "AsmError", "Instr", "parse",
           "parse_regs"]
