"""The gfx950 hazard rules and the checker that applies them over a control-flow graph.

A *hazard* is a pair (producer P, consumer C) where the hardware does not interlock and software must put at
least ``need`` wait states between them. Wait states are counted as LLVM does (SIInstrInfo::getNumWaitStates):
every instruction strictly between P and C gives 1, ``s_nop N`` gives N+1. The minimum over all control-flow
paths from P to C is what counts (LLVM's GCNHazardRecognizer::getWaitStatesSince walks predecessors the same
way), so a hazard across a loop back edge or a branch is found too.

Rule table (gfx950 numbers; "passes" = MFMA pass count, gfx950-facts.md §1.1; sources and LLVM function names
in gfx950-facts.md §3, row numbers given as ``§3#n``):

==========================  =========================================================  ======================
rule id                     producer -> consumer                                       wait states (gfx950)
==========================  =========================================================  ======================
valu_vgpr_to_mfma           VALU writes VGPR/AGPR -> MFMA reads it (A, B, C, scale)    2   (§3#1)
valu_exec_to_mfma           VALU writes EXEC -> MFMA                                    4   (§3#2)
mfma_d_to_srcc_overlap      MFMA D -> MFMA SrcC overlapping but not identical            passes+2 (§3#4)
                            (identical range: accumulate chain, 0 wait states, §3#3)
mfma_d_to_srcab             MFMA D -> MFMA SrcA/SrcB (or scale)                          5/8/12/20 for 2/4/8/16 passes (§3#5)
mfma_d_to_read              MFMA D -> VALU / VMEM / DS read                              5/8/12/20 (§3#6)
mfma_d_to_valu_write        MFMA D -> VALU write of the same register (WAW)              5/8/12/20 (§3#7)
mfma_srcc_to_valu_write     MFMA reads SrcC -> VALU overwrites it (WAR)                   1/3/7/15 (§3#8)
valu_sgpr_to_valu           VALU writes SGPR/VCC -> VALU reads it                        2   (§3#9)
valu_sgpr_to_vmem           VALU writes SGPR -> VMEM reads it (srsrc, soffset, saddr)     5   (§3#10)
valu_sgpr_to_lanesel        VALU writes SGPR -> v_readlane/v_writelane lane select       4   (§3#11)
valu_exec_to_rwlane         VALU writes EXEC -> v_readlane/v_readfirstlane/v_writelane    4   (§3#12)
valu_vgpr_to_readlane       VALU writes VGPR -> v_readlane/v_readfirstlane reads it       1   (§3#13)
trans_to_valu               transcendental result -> non-transcendental VALU reads it     1   (§3#14)
partial_dst_to_valu         VALU partial-dst write (SDWA dst_sel != DWORD, op_sel dst     1   (§3#15)
                            bit: v_cvt_pk_fp8/bf8 op_sel:[0,0,1], cvt_scale) -> VALU read
store_data_to_valu_write    VMEM store > 8 bytes (MUBUF without SGPR soffset; FLAT/       2   (§3#16)
                            global always) -> VALU overwrites its data VGPRs
salu_m0_to_m0_reader        SALU writes M0 -> LDS-DMA, s_sendmsg, s_movrel, v_interp,     1   (§3#17)
                            ds_*_addtid, GDS
valu_vgpr_to_permlane       VALU writes VGPR -> v_permlane16/32_swap reads it             2   (§3#18)
valu_exec_to_permlane       VALU writes EXEC -> v_permlane16/32_swap                       4   (§3#18)
setreg_to_getreg            s_setreg -> s_getreg / s_setreg of the same hardware reg      2   (§3#19)
valu_vcc_to_div_fmas        VALU writes VCC -> v_div_fmas                                 4   (LLVM checkDivFMasHazards)
vgpr_def_to_dpp             any instruction writes a VGPR -> DPP instruction reads it       2   (LLVM checkDPPHazards)
                            (incl. the "old" value tied to the DPP destination)
valu_exec_to_dpp            VALU writes EXEC -> DPP instruction                           5   (LLVM checkDPPHazards)
dot_to_read                 v_dot* writes VGPR -> VALU/VMEM/DS reads it (the same dot      3   (LLVM checkMAIVALUHazards,
                            opcode reading it only as SrcC: 0)                                 DotWrite* constants)
==========================  =========================================================  ======================

Producers: every earlier instruction within the window is considered, not only the nearest writer of a register
(LLVM stops at the nearest MFMA/VALU def); this can only add findings, and on clang's output it gives the same
padding as LLVM (tests). A v_dot* result read by an MFMA needs no wait states (LLVM excludes DOT from the legacy
VALU rule). Not modelled (as in LLVM on gfx950): WAR on MFMA SrcA/SrcB; SMEM reading SGPRs written by VALU (a
Southern-Islands-only hazard); VALU->VALU VGPR RAW (interlocked).
"""
from __future__ import annotations

import dataclasses

from .isa import Instr, parse, parse_regs

__all__ = ["Violation", "check", "check_text", "required_nops", "RULES", "mfma_read_wait"]

VREG = ("v", "a")
EXEC = {("exec", 0), ("exec", 1)}
VCC = {("vcc", 0), ("vcc", 1)}

RULES = (
    "valu_vgpr_to_mfma", "valu_exec_to_mfma", "mfma_d_to_srcc_overlap", "mfma_d_to_srcab", "mfma_d_to_read",
    "mfma_d_to_valu_write", "mfma_srcc_to_valu_write", "valu_sgpr_to_valu", "valu_sgpr_to_vmem",
    "valu_sgpr_to_lanesel", "valu_exec_to_rwlane", "valu_vgpr_to_readlane", "trans_to_valu",
    "partial_dst_to_valu", "store_data_to_valu_write", "salu_m0_to_m0_reader", "valu_vgpr_to_permlane",
    "valu_exec_to_permlane", "setreg_to_getreg", "valu_vcc_to_div_fmas", "dot_to_read",
    "vgpr_def_to_dpp", "valu_exec_to_dpp",
)
MAX_WINDOW = 20  # largest wait-state requirement in the table


@dataclasses.dataclass(frozen=True)
class Violation:
    """A missing-wait-state finding: `have` wait states on the shortest path, `need` required."""
    rule: str
    producer_line: int
    consumer_line: int
    need: int
    have: int
    producer: str
    consumer: str

    def __str__(self) -> str:
        return (f"line {self.consumer_line}: {self.rule}: needs {self.need} wait states after line "
                f"{self.producer_line}, has {self.have}\n    producer: {self.producer}\n    consumer: {self.consumer}")


def mfma_read_wait(passes: int) -> int:
    """gfx950 wait states between an XDL MFMA writing D and a non-SrcC read of D: 5, 8, 12, 20 for
    2, 4, 8, 16 passes (gfx950-facts.md §3 rows 5-7; LLVM GFX940_XDL_N_PassWriteVgprVALUMemExpReadWaitStates
    with the gfx950 +1)."""
    return passes + 3 + (0 if passes == 2 else 1)


def _srcc_war_wait(passes: int) -> int:
    return {2: 1, 4: 3, 8: 7, 16: 15}[passes]


def _vregs(s: set) -> set:
    return {r for r in s if r[0] in VREG}


def _sregs(s: set) -> set:
    return {r for r in s if r[0] in ("s", "vcc")}


def _is_valu(i: Instr) -> bool:
    return i.kind in ("valu", "trans")


def _is_partial_dst(i: Instr) -> bool:
    if not _is_valu(i):
        return False
    if i.mnemonic.endswith("_sdwa"):
        sel = i.mods.get("dst_sel")
        return bool(sel) and sel != "DWORD"
    if i.base.startswith("v_pk_"):
        # VOP3P: LLVM (GCNHazardRecognizer, getDstSelForwardingOperand) tests src0_modifiers & DST_OP_SEL, and
        # DST_OP_SEL shares bit 3 with OP_SEL_1 (op_sel_hi of src0). So a packed op whose src0 op_sel_hi bit is 1
        # (the default when op_sel_hi is omitted) is padded as a partial-dst writer. We follow LLVM: 1 wait state
        # too many is harmless, one too few is not.
        hi = i.mods.get("op_sel_hi")
        if not isinstance(hi, list):
            return True
        return bool(hi) and hi[0] == 1
    opsel = i.mods.get("op_sel")
    if isinstance(opsel, list):
        nsrc = len(i.operands) - 1
        return len(opsel) == nsrc + 1 and opsel[-1] == 1
    return False


def _store_data(i: Instr) -> set:
    """VGPRs of the data of a VMEM store wider than 8 bytes that has the §3#16 hazard, else empty."""
    if i.kind != "vmem" or "_store" not in i.mnemonic:
        return set()
    m = i.mnemonic
    if m.startswith("buffer_"):
        data = i.operands[0]
        if len(i.operands) > 3 and any(r[0] == "s" for r in parse_regs(i.operands[3])):
            return set()
    elif m.startswith(("global_", "flat_", "scratch_")):
        if len(i.operands) < 2:
            return set()
        data = i.operands[1]
    else:
        return set()
    regs = _vregs(parse_regs(data))
    return regs if len(regs) > 2 else set()


def _hwreg(i: Instr) -> str | None:
    for o in i.operands:
        if o.kind == "hwreg" and o.name.lower().startswith("hwreg("):
            return o.name[6:].split(",")[0].split(")")[0].strip()
    return None


def pair_rules(p: Instr, c: Instr):
    """Yield (rule, need) for every hazard rule that links producer `p` to consumer `c` (ignoring distance)."""
    pv = _is_valu(p)
    cv = _is_valu(c)
    cb = c.base
    if c.mnemonic.endswith("_dpp"):
        if {r for r in p.defs if r[0] == "v"} & c.uses:
            yield "vgpr_def_to_dpp", 2
        if pv and p.defs & EXEC:
            yield "valu_exec_to_dpp", 5
    if p.base.startswith("v_dot") and (cv or c.kind in ("vmem", "ds")):
        pdv = _vregs(p.defs)
        if pdv & c.uses:
            if c.base == p.base:
                srcc = parse_regs(c.operands[3]) if len(c.operands) > 3 else parse_regs(c.operands[0])
                if pdv & (_vregs(c.uses) - srcc):
                    yield "dot_to_read", 3
            else:
                yield "dot_to_read", 3
    if pv:
        pdef_v = _vregs(p.defs)
        pdef_s = _sregs(p.defs)
        pdef_exec = bool(p.defs & EXEC)
        if c.kind == "mfma":
            if pdef_v & (c.mfma_a | c.mfma_b | c.mfma_c | c.mfma_scale) and not p.base.startswith("v_dot"):
                yield "valu_vgpr_to_mfma", 2
            if pdef_exec:
                yield "valu_exec_to_mfma", 4
        if cv:
            explicit_s = _sregs(c.uses)
            if pdef_s & explicit_s:
                yield "valu_sgpr_to_valu", 2
            if cb in ("v_readlane_b32", "v_writelane_b32") and len(c.operands) > 2:
                if pdef_s & parse_regs(c.operands[2]):
                    yield "valu_sgpr_to_lanesel", 4
            if cb in ("v_readlane_b32", "v_readfirstlane_b32", "v_writelane_b32") and pdef_exec:
                yield "valu_exec_to_rwlane", 4
            if cb in ("v_readlane_b32", "v_readfirstlane_b32") and len(c.operands) > 1:
                if pdef_v & parse_regs(c.operands[1]):
                    yield "valu_vgpr_to_readlane", 1
            if p.kind == "trans" and c.kind != "trans" and pdef_v & c.uses:
                yield "trans_to_valu", 1
            if _is_partial_dst(p) and pdef_v & c.uses:
                yield "partial_dst_to_valu", 1
            if cb in ("v_permlane16_swap_b32", "v_permlane32_swap_b32"):
                if pdef_v & c.uses:
                    yield "valu_vgpr_to_permlane", 2
                if pdef_exec:
                    yield "valu_exec_to_permlane", 4
            if cb.startswith("v_div_fmas") and p.defs & VCC:
                yield "valu_vcc_to_div_fmas", 4
        if c.kind == "vmem" and pdef_s & c.uses:
            yield "valu_sgpr_to_vmem", 5
    if p.kind == "mfma":
        n = mfma_read_wait(p.passes)
        if c.kind == "mfma":
            if c.mfma_c & p.mfma_d and c.mfma_c != p.mfma_d:
                yield "mfma_d_to_srcc_overlap", p.passes + 2
            if (c.mfma_a | c.mfma_b | c.mfma_scale) & p.mfma_d:
                yield "mfma_d_to_srcab", n
        elif cv or c.kind in ("vmem", "ds"):
            if c.uses & p.mfma_d:
                yield "mfma_d_to_read", n
            if cv and c.defs & p.mfma_d:
                yield "mfma_d_to_valu_write", n
        if cv and _vregs(c.defs) & p.mfma_c and p.mfma_c != set():
            yield "mfma_srcc_to_valu_write", _srcc_war_wait(p.passes)
    if cv:
        data = _store_data(p)
        if data and _vregs(c.defs) & data:
            yield "store_data_to_valu_write", 2
    if p.kind == "salu" and ("m0", 0) in p.defs:
        m0_reader = ((c.kind == "vmem" and ("m0", 0) in c.uses)
                     or cb.startswith(("s_sendmsg", "s_movrel", "s_ttracedata", "v_interp"))
                     or cb in ("ds_write_addtid_b32", "ds_read_addtid_b32") or bool(c.mods.get("gds")))
        if m0_reader:
            yield "salu_m0_to_m0_reader", 1
    if p.base.startswith("s_setreg") and (cb.startswith("s_getreg") or cb.startswith("s_setreg")):
        if _hwreg(p) is not None and _hwreg(p) == _hwreg(c):
            yield "setreg_to_getreg", 2


def _build_cfg(items):
    """Instruction list and predecessor lists. Fall-through unless the previous instruction is an
    unconditional branch or s_endpgm; branch edges to labels."""
    instrs = [x for x in items if isinstance(x, Instr)]
    label_at = {}
    pending = []
    for x in items:
        if isinstance(x, tuple):
            pending.append(x[1])
        else:
            for name in pending:
                label_at[name] = x.index
            pending = []
    preds = [[] for _ in instrs]
    for i, ins in enumerate(instrs):
        falls = not (ins.kind == "end" or ins.base == "s_branch" or ins.base.startswith("s_setpc"))
        if falls and i + 1 < len(instrs):
            preds[i + 1].append(i)
        if ins.kind == "branch" and ins.target is not None:
            if ins.target not in label_at:
                continue  # branch out of the parsed text (not produced by zyfa kernels)
            preds[label_at[ins.target]].append(i)
    return instrs, preds


def _distances(instrs, preds, c, pad):
    """Wait states strictly between each instruction that can reach `c` within MAX_WINDOW and `c`, minimised
    over control-flow paths (backward Dijkstra). `pad[i]` = extra wait states inserted just before i."""
    best = {}
    frontier = [(pad.get(c.index, 0), p) for p in preds[c.index]]
    while frontier:
        frontier.sort()
        d, pi = frontier.pop(0)
        if d >= MAX_WINDOW or best.get(pi, 1 << 30) <= d:
            continue
        best[pi] = d
        nd = d + instrs[pi].wait_states() + pad.get(pi, 0)
        for q in preds[pi]:
            if nd < MAX_WINDOW and best.get(q, 1 << 30) > nd:
                frontier.append((nd, q))
    return best


def _consumer_violations(instrs, preds, c, pad):
    out = {}
    for pi, d in _distances(instrs, preds, c, pad).items():
        p = instrs[pi]
        for rule, need in pair_rules(p, c):
            if d < need:
                key = (rule, p.index)
                if key not in out or out[key].have > d:
                    out[key] = Violation(rule, p.line, c.line, need, d, p.text, c.text)
    return list(out.values())


def check(items) -> list:
    """Violations in parsed assembly (the output of isa.parse). Each (producer, consumer, rule) is reported
    once, with the shortest path's wait-state count."""
    instrs, preds = _build_cfg(items)
    found = []
    for c in instrs:
        if c.kind not in ("nop", "end"):
            found += _consumer_violations(instrs, preds, c, {})
    return sorted(found, key=lambda v: (v.consumer_line, v.producer_line, v.rule))


def required_nops(items) -> dict:
    """Wait states to insert before each instruction (index -> count), in program order as LLVM's
    post-RA hazard recognizer does: an instruction's padding is the largest shortfall left after the padding
    already chosen for earlier instructions. Only instructions needing padding appear in the result."""
    instrs, preds = _build_cfg(items)
    pad = {}
    for c in instrs:
        if c.kind in ("nop", "end"):
            continue
        short = max((v.need - v.have for v in _consumer_violations(instrs, preds, c, pad)), default=0)
        if short > 0:
            pad[c.index] = short
    return pad


def check_text(text: str) -> list:
    """Parse LLVM-syntax gfx950 assembly and return its hazard violations (empty list = clean)."""
    return check(parse(text))
