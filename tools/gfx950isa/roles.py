"""Operand roles of parsed gfx950 instructions: which 32-bit register units an instruction reads and writes.

:func:`analyze` fills an :class:`~gfx950isa.syntax.Instr`'s ``kind``, ``defs``, ``uses``, MFMA roles
(``mfma_d``/``mfma_a``/``mfma_b``/``mfma_c``/``mfma_scale``), ``passes`` and branch ``target`` from the
instruction table (:mod:`gfx950isa.table`). A register unit is a tuple ``(file, index)`` with file ``"v"``
(VGPR), ``"a"`` (AGPR), ``"s"`` (SGPR), ``"vcc"``, ``"exec"`` (index 0 = lo, 1 = hi) or ``"m0"``. Implicit
operands are included (EXEC for vector ops, VCC for ``s_cbranch_vcc*`` and ``v_div_fmas``, M0 for LDS-DMA).
Unknown MFMAs are errors (their pass count decides wait states); other mnemonics are classified by prefix.
"""
from __future__ import annotations

from . import table
from .syntax import AsmError, Instr, Operand, parse_operand

__all__ = ["units", "parse_regs", "analyze", "operand_roles"]

_SPECIAL_UNITS = {106: ("vcc", 0), 107: ("vcc", 1), 124: ("m0", 0), 126: ("exec", 0), 127: ("exec", 1)}
EXEC_UNITS = frozenset({("exec", 0), ("exec", 1)})
VCC_UNITS = frozenset({("vcc", 0), ("vcc", 1)})


def units(op: Operand) -> set:
    """Register units named by one parsed operand; empty for constants, labels and modifiers.
    SGPR encodings 106/107 are VCC, 124 M0, 126/127 EXEC; flat_scratch/xnack_mask (102-105) and trap
    temporaries are not tracked."""
    if op.kind in ("v", "a"):
        return {(op.kind, i) for i in range(op.index, op.index + op.count)}
    if op.kind == "s":
        out = set()
        for i in range(op.index, op.index + op.count):
            if i in _SPECIAL_UNITS:
                out.add(_SPECIAL_UNITS[i])
            elif i < 102:
                out.add(("s", i))
        return out
    return set()


def parse_regs(tok) -> set:
    """Register units of one operand token (``v[4:7]``, ``s2``, ``vcc``, ``-|v3|``...) or parsed Operand."""
    if isinstance(tok, Operand):
        return units(tok)
    try:
        return units(parse_operand(tok))
    except AsmError:
        return set()


def _regs(ops) -> set:
    out = set()
    for o in ops:
        out |= units(o)
    return out


def analyze(ins: Instr) -> Instr:
    """Fills the fact fields of `ins` (see the module docstring); returns it. AsmError for an unknown MFMA or
    an instruction of no known class."""
    m = ins.base
    ops = ins.operands
    kind = table.unit_of(m)
    if kind in ("nop", "end"):
        ins.kind = kind
        return ins
    if kind == "branch":
        ins.kind = "branch"
        ins.target = ops[-1].name if ops and ops[-1].kind == "label" else (ops[-1].text if ops else None)
        ins.uses = set()
        if m.startswith("s_cbranch_vcc"):
            ins.uses = set(VCC_UNITS)
        elif m.startswith("s_cbranch_exec"):
            ins.uses = set(EXEC_UNITS)
        return ins
    if kind == "mfma":
        if m.startswith("v_smfmac"):
            raise AsmError(f"line {ins.line}: sparse MFMA {m!r} is not modelled")
        ins.kind = "mfma"
        try:
            ins.passes = table.mfma_passes(m, ins.mods)
        except ValueError as e:
            raise AsmError(f"line {ins.line}: {e}") from None
        if len(ops) < 4:
            raise AsmError(f"line {ins.line}: MFMA with {len(ops)} operands")
        ins.mfma_d = units(ops[0])
        ins.mfma_a = units(ops[1])
        ins.mfma_b = units(ops[2])
        ins.mfma_c = units(ops[3])
        ins.mfma_scale = _regs(ops[4:])
        ins.defs = set(ins.mfma_d)
        ins.uses = ins.mfma_a | ins.mfma_b | ins.mfma_c | ins.mfma_scale | set(EXEC_UNITS)
        return ins
    if kind == "vmem":
        ins.kind = "vmem"
        is_store = "_store" in m
        is_atomic = "_atomic" in m
        lds = "lds" in ins.mods or "_lds_" in m
        if lds or is_store:
            ins.uses = _regs(ops)
            if lds:
                ins.uses |= {("m0", 0)}
        elif is_atomic and not ins.mods.get("sc0") and not ins.mods.get("glc"):
            ins.uses = _regs(ops)
        else:
            ins.defs = units(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
            if is_atomic:
                ins.uses |= ins.defs
        return ins
    if kind == "ds":
        ins.kind = "ds"
        if m.startswith(("ds_write", "ds_store")) or m in ("ds_nop",) or m.startswith("ds_gws"):
            ins.uses = _regs(ops)
        else:
            ins.defs = units(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
        return ins
    if kind == "smem":
        ins.kind = "smem"
        if m.startswith(table.SMEM_STORE_PREFIXES):
            ins.uses = _regs(ops)
        else:
            ins.defs = units(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
        return ins
    if kind == "salu":
        ins.kind = "salu"
        if m.startswith(table.S_NO_DST):
            ins.uses = _regs(ops)
        else:
            ins.defs = units(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
            if m.startswith(table.SAVEEXEC):
                ins.defs |= EXEC_UNITS
                ins.uses |= EXEC_UNITS
        return ins
    if kind in ("valu", "trans"):
        ins.kind = kind
        if m.startswith("v_cmp"):
            ins.defs = units(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
            if m.startswith("v_cmpx"):
                ins.defs |= EXEC_UNITS
        elif m.startswith(table.TWO_DST):
            ins.defs = _regs(ops[:2])
            ins.uses = _regs(ops[2:])
        elif m == "v_nop":
            pass
        elif m == "v_writelane_b32":
            ins.defs = units(ops[0])
            ins.uses = _regs(ops[1:]) | ins.defs
        elif m in ("v_permlane16_swap_b32", "v_permlane32_swap_b32"):
            ins.defs = _regs(ops[:2])
            ins.uses = _regs(ops[:2])
        else:
            ins.defs = units(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
        if m.startswith(table.TIED_DST) or ins.mnemonic.endswith("_dpp"):  # dst also read (tied; DPP "old")
            ins.uses |= ins.defs
        if m.startswith("v_div_fmas"):
            ins.uses |= VCC_UNITS
        ins.uses |= EXEC_UNITS
        return ins
    if kind == "exp":
        ins.kind = "vmem"
        ins.uses = _regs(ops)
        return ins
    raise AsmError(f"line {ins.line}: unknown instruction {m!r}")


def operand_roles(ins: Instr) -> list:
    """(read, written) for each explicit operand of `ins`, in assembler order, as :func:`analyze` classifies
    them (non-register operands give (False, False)). The generator uses it to find the definitions and uses of
    its virtual registers before they have physical numbers."""
    fake = []
    for i, op in enumerate(ins.operands):
        if op.kind in ("v", "a", "s", "ttmp"):
            fake.append(Operand("v", 4096 * (i + 1), op.count, text=op.text))
        else:
            fake.append(op)
    probe = Instr(ins.mnemonic, fake, ins.mods, ins.line, ins.text)
    analyze(probe)
    out = []
    for op in fake:
        u = units(op) if op.kind == "v" else set()
        out.append((bool(u & probe.uses), bool(u & probe.defs)))
    return out
