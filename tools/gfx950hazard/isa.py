"""Parsing of LLVM-syntax gfx950 assembly into instructions with register reads/writes.

Input is the text `clang++-22 -S --offload-arch=gfx950` or `tools/gen_asm.py` emits (LLVM AMDGPU assembler
syntax). Each instruction becomes an :class:`Instr` with

* ``kind``: one of ``mfma``, ``valu``, ``trans`` (a VALU transcendental), ``vmem`` (buffer_/global_/flat_/
  scratch_), ``ds``, ``smem``, ``salu``, ``nop`` (``s_nop``), ``branch``, ``end``;
* ``defs`` / ``uses``: sets of register units, each a tuple ``(file, index)`` with file ``"v"`` (VGPR),
  ``"a"`` (AGPR), ``"s"`` (SGPR), ``"vcc"``, ``"exec"`` (index 0 = lo, 1 = hi), ``"m0"``;
* for MFMAs the operand roles (``mfma_d``, ``mfma_a``, ``mfma_b``, ``mfma_c``, ``mfma_scale``) and the pass
  count (``passes``; one pass = 4 cycles) from the table in ../shared/design/gfx950-facts.md §1.1.

Unknown MFMA mnemonics raise :class:`AsmError` (their pass count decides wait states; guessing would hide a
hazard). Other unknown mnemonics are classified by prefix (v_ = VALU, s_ = SALU, ...), which is what the
hazard rules need.
"""
from __future__ import annotations

import dataclasses
import re

from gfx950asm.lex import split_commas, split_words

__all__ = ["AsmError", "Instr", "parse", "parse_regs", "mfma_passes"]


class AsmError(ValueError):
    """Malformed or unsupported assembly; the message names the line."""


Reg = tuple  # (file, index)

_REG_RE = re.compile(
    r"^(?P<neg>-)?(?:\|)?(?:abs\()?(?:neg\()?"
    r"(?:(?P<f>[vas])(?P<n>\d+)|(?P<f2>[vas])\[(?P<lo>\d+):(?P<hi>\d+)\]|(?P<sp>vcc_lo|vcc_hi|vcc|exec_lo|exec_hi|exec|m0))"
    r"\)?\)?\|?$")


def parse_regs(tok: str) -> set:
    """Register units named by one operand token (``v[4:7]``, ``s2``, ``vcc``, ``-|v3|``...); empty for
    constants, labels and modifiers."""
    tok = tok.strip()
    m = _REG_RE.match(tok)
    if not m:
        return set()
    if m.group("f"):
        return {(m.group("f"), int(m.group("n")))}
    if m.group("f2"):
        lo, hi = int(m.group("lo")), int(m.group("hi"))
        if hi < lo:
            raise AsmError(f"bad register range {tok!r}")
        return {(m.group("f2"), i) for i in range(lo, hi + 1)}
    sp = m.group("sp")
    base, _, half = sp.partition("_")
    if base == "m0":
        return {("m0", 0)}
    if half == "lo":
        return {(base, 0)}
    if half == "hi":
        return {(base, 1)}
    return {(base, 0), (base, 1)}


# MFMA pass counts on gfx950 (gfx950-facts.md §1.1, LLVM 22 computeInstrLatency recovered from the wait
# states llc inserts; 1 pass = 4 cycles). f8f6f4 rates depend on the A/B formats (cbsz/blgp): see mfma_passes.
_MFMA_PASSES = {
    "v_mfma_f32_32x32x16_bf16": 8,
    "v_mfma_f32_16x16x32_bf16": 4,
    "v_mfma_f32_32x32x16_f16": 8,
    "v_mfma_f32_16x16x32_f16": 4,
    "v_mfma_f32_32x32x8_bf16": 8,
    "v_mfma_f32_16x16x16_bf16": 4,
    "v_mfma_f32_32x32x8_f16": 8,
    "v_mfma_f32_16x16x16_f16": 4,
}
for _a in ("fp8", "bf8"):
    for _b in ("fp8", "bf8"):
        _MFMA_PASSES[f"v_mfma_f32_32x32x16_{_a}_{_b}"] = 8
        _MFMA_PASSES[f"v_mfma_f32_16x16x32_{_a}_{_b}"] = 4


def mfma_passes(mnemonic: str, mods: dict) -> int:
    """Pass count of an MFMA (gfx950). f8f6f4: 16 (32x32x64) / 8 (16x16x128) when A or B is fp8/bf8
    (cbsz/blgp 0 or 1), else 8 / 4 (gfx950-facts.md §1.1). Raises AsmError for MFMAs not in the table."""
    base = mnemonic.replace("_e64", "")
    if base in _MFMA_PASSES:
        return _MFMA_PASSES[base]
    if base in ("v_mfma_f32_32x32x64_f8f6f4", "v_mfma_scale_f32_32x32x64_f8f6f4",
                "v_mfma_f32_16x16x128_f8f6f4", "v_mfma_scale_f32_16x16x128_f8f6f4"):
        cbsz = int(mods.get("cbsz", 0))
        blgp = int(mods.get("blgp", 0))
        slow = cbsz <= 1 or blgp <= 1
        big = "32x32x64" in base
        return (16 if slow else 8) if big else (8 if slow else 4)
    raise AsmError(f"unknown MFMA {mnemonic!r}: its pass count is not in gfx950hazard.isa._MFMA_PASSES")


# Transcendental VALU ops (LLVM's TRANS flag: VOP1Instructions.td).
_TRANS = {
    "v_exp_f32", "v_log_f32", "v_rcp_f32", "v_rcp_iflag_f32", "v_rsq_f32", "v_sqrt_f32", "v_sin_f32",
    "v_cos_f32", "v_exp_f16", "v_log_f16", "v_rcp_f16", "v_rsq_f16", "v_sqrt_f16", "v_sin_f16", "v_cos_f16",
    "v_rcp_f64", "v_rsq_f64", "v_sqrt_f64", "v_exp_legacy_f32", "v_log_legacy_f32",
}
# VALU ops with two destinations (vdst, sdst) printed as the first two operands.
_TWO_DST = ("v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32", "v_addc_co_u32", "v_subb_co_u32",
            "v_subbrev_co_u32", "v_div_scale_f32", "v_div_scale_f64", "v_mad_u64_u32", "v_mad_i64_i32")
# VALU ops whose destination is also a source (tied accumulator: v_fmac, v_mac, v_dot*c).
_TIED_DST = ("v_fmac", "v_mac_", "v_pk_fmac", "v_dot2c", "v_dot4c", "v_dot8c")
# SALU / SOPP ops that write no register.
_S_NO_DST = ("s_cmp", "s_bitcmp", "s_waitcnt", "s_barrier", "s_endpgm", "s_branch", "s_cbranch", "s_setprio",
             "s_sleep", "s_nop", "s_sendmsg", "s_trap", "s_icache_inv", "s_setreg", "s_set_gpr_idx",
             "s_sethalt", "s_ttracedata", "s_dcache", "s_setkill", "s_incperflevel", "s_decperflevel")


@dataclasses.dataclass
class Instr:
    """One assembly instruction. ``line`` is 1-based in the parsed text; ``index`` is its position in the
    instruction list."""
    line: int
    text: str
    mnemonic: str
    operands: list
    mods: dict
    kind: str = ""
    defs: set = dataclasses.field(default_factory=set)
    uses: set = dataclasses.field(default_factory=set)
    index: int = -1
    passes: int = 0
    mfma_d: set = dataclasses.field(default_factory=set)
    mfma_a: set = dataclasses.field(default_factory=set)
    mfma_b: set = dataclasses.field(default_factory=set)
    mfma_c: set = dataclasses.field(default_factory=set)
    mfma_scale: set = dataclasses.field(default_factory=set)
    target: str | None = None  # branch label

    @property
    def base(self) -> str:
        """Mnemonic without the _e32/_e64/_sdwa/_dpp encoding suffix."""
        return re.sub(r"_(e32|e64|sdwa|dpp)$", "", self.mnemonic)

    def wait_states(self) -> int:
        """Wait states this instruction provides: s_nop N gives N+1, every other instruction 1
        (LLVM SIInstrInfo::getNumWaitStates)."""
        if self.kind == "nop":
            return int(self.operands[0], 0) + 1 if self.operands else 1
        return 1


def _split_top(s: str) -> list:
    """Comma-separated fields outside brackets/parentheses, stripped, without an empty last field
    (``"a,"`` -> ``["a"]``)."""
    out = split_commas(s)
    if out and not out[-1]:
        out.pop()
    return out


_MOD_RE = re.compile(r"^[a-z_0-9]+(:.*)?$")
_BARE_MODS = {"off", "offen", "idxen", "glc", "slc", "dlc", "scc", "sc0", "sc1", "nt", "lds", "tfe", "lwe", "gds",
              "clamp", "addr64", "nv"}


def _parse_operands(rest: str):
    """Operands (comma separated) and trailing modifiers (space separated, `name` or `name:value`)."""
    ops = _split_top(rest) if rest else []
    mods = {}
    if ops:
        # the last operand may carry space-separated modifiers after it
        toks = split_words(ops[-1])
        ops[-1] = toks[0] if toks else ""
        for t in toks[1:]:
            k, _, v = t.partition(":")
            mods[k] = v if v else True
        # modifiers may also be whole comma-less items of the first operand (s_waitcnt vmcnt(0) lgkmcnt(0))
        new_ops = []
        for o in ops:
            parts = split_words(o)
            if len(parts) > 1 and not o.startswith("hwreg"):
                new_ops.append(parts[0])
                for t in parts[1:]:
                    k, _, v = t.partition(":")
                    mods[k] = v if v else True
            else:
                new_ops.append(o)
        ops = new_ops
    # bare modifiers that llvm prints as if operands (e.g. `off`) stay operands; memory keywords become mods
    clean = []
    for o in ops:
        if o in _BARE_MODS and o != "off":
            mods[o] = True
        elif ":" in o and not o.startswith(("v[", "s[", "a[")) and "[" not in o.split(":")[0]:
            k, _, v = o.partition(":")
            mods[k] = v
        else:
            clean.append(o)
    return clean, mods


def _regs(ops) -> set:
    out = set()
    for o in ops:
        out |= parse_regs(o)
    return out


def _classify(ins: Instr) -> None:
    m = ins.base
    ops = ins.operands
    if m == "s_nop":
        ins.kind = "nop"
        return
    if m == "s_endpgm" or m.startswith("s_endpgm"):
        ins.kind = "end"
        return
    if m in ("s_branch",) or m.startswith("s_cbranch"):
        ins.kind = "branch"
        ins.target = ops[-1] if ops else None
        ins.uses = set()
        if m.startswith("s_cbranch_vcc"):
            ins.uses = {("vcc", 0), ("vcc", 1)}
        elif m.startswith("s_cbranch_exec"):
            ins.uses = {("exec", 0), ("exec", 1)}
        return
    if m.startswith(("v_mfma", "v_smfmac")):
        if m.startswith("v_smfmac"):
            raise AsmError(f"line {ins.line}: sparse MFMA {m!r} is not modelled")
        ins.kind = "mfma"
        ins.passes = mfma_passes(m, ins.mods)
        if len(ops) < 4:
            raise AsmError(f"line {ins.line}: MFMA with {len(ops)} operands")
        ins.mfma_d = parse_regs(ops[0])
        ins.mfma_a = parse_regs(ops[1])
        ins.mfma_b = parse_regs(ops[2])
        ins.mfma_c = parse_regs(ops[3])
        ins.mfma_scale = _regs(ops[4:])
        ins.defs = set(ins.mfma_d)
        ins.uses = ins.mfma_a | ins.mfma_b | ins.mfma_c | ins.mfma_scale | {("exec", 0), ("exec", 1)}
        return
    if m.startswith(("buffer_", "global_", "flat_", "scratch_")):
        ins.kind = "vmem"
        is_store = "_store" in m
        is_atomic = "_atomic" in m
        if "lds" in ins.mods or "_lds_" in m or is_store:
            ins.uses = _regs(ops)
            if "lds" in ins.mods or "_lds_" in m:
                ins.uses |= {("m0", 0)}
        elif is_atomic and not ins.mods.get("sc0") and not ins.mods.get("glc"):
            ins.uses = _regs(ops)
        else:
            ins.defs = parse_regs(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
            if is_atomic:
                ins.uses |= ins.defs
        return
    if m.startswith("ds_"):
        ins.kind = "ds"
        if m.startswith(("ds_write", "ds_store")) or m in ("ds_nop",) or m.startswith("ds_gws"):
            ins.uses = _regs(ops)
        else:
            ins.defs = parse_regs(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
        return
    if m.startswith(("s_load", "s_buffer_load", "s_scratch_load", "s_memtime", "s_memrealtime", "s_getpc")) \
            and not m.startswith("s_getpc"):
        ins.kind = "smem"
        ins.defs = parse_regs(ops[0]) if ops else set()
        ins.uses = _regs(ops[1:])
        return
    if m.startswith(("s_store", "s_buffer_store", "s_atc", "s_dcache")):
        ins.kind = "smem"
        ins.uses = _regs(ops)
        return
    if m.startswith("s_"):
        ins.kind = "salu"
        if m.startswith(_S_NO_DST):
            ins.uses = _regs(ops)
        else:
            ins.defs = parse_regs(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
            if m.startswith(("s_and_saveexec", "s_or_saveexec", "s_xor_saveexec", "s_andn2_saveexec",
                             "s_orn2_saveexec", "s_nand_saveexec", "s_nor_saveexec", "s_xnor_saveexec",
                             "s_andn1_saveexec", "s_orn1_saveexec", "s_andn1_wrexec", "s_andn2_wrexec")):
                ins.defs |= {("exec", 0), ("exec", 1)}
                ins.uses |= {("exec", 0), ("exec", 1)}
        return
    if m.startswith("v_"):
        ins.kind = "trans" if m in _TRANS else "valu"
        if m.startswith("v_cmp"):
            ins.defs = parse_regs(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
            if m.startswith("v_cmpx"):
                ins.defs |= {("exec", 0), ("exec", 1)}
        elif m.startswith(_TWO_DST):
            ins.defs = _regs(ops[:2])
            ins.uses = _regs(ops[2:])
        elif m == "v_nop":
            pass
        elif m == "v_writelane_b32":
            ins.defs = parse_regs(ops[0])
            ins.uses = _regs(ops[1:]) | ins.defs
        elif m in ("v_permlane16_swap_b32", "v_permlane32_swap_b32"):
            ins.defs = _regs(ops[:2])
            ins.uses = _regs(ops[:2])
        else:
            ins.defs = parse_regs(ops[0]) if ops else set()
            ins.uses = _regs(ops[1:])
        if m.startswith(_TIED_DST) or ins.mnemonic.endswith("_dpp"):  # dst also read (tied accumulator; DPP "old")
            ins.uses |= ins.defs
        if m.startswith("v_div_fmas"):
            ins.uses |= {("vcc", 0), ("vcc", 1)}
        ins.uses |= {("exec", 0), ("exec", 1)}
        return
    if m.startswith("exp"):
        ins.kind = "vmem"
        ins.uses = _regs(ops)
        return
    raise AsmError(f"line {ins.line}: unknown instruction {m!r}")


def parse(text: str) -> list:
    """Instructions of `text` in order, with labels attached: returns a list of Instr and label markers.

    Labels appear as ``("label", name)`` tuples in the returned list. Directives, comments, and the bodies of
    ``.amdhsa_kernel`` and ``.amdgpu_metadata`` blocks are skipped."""
    out = []
    skip_until = None
    for ln, raw in enumerate(text.splitlines(), 1):
        line = raw.split(";")[0].split("//")[0].strip()
        if not line:
            continue
        if skip_until:
            if line.startswith(skip_until):
                skip_until = None
            continue
        if line.startswith(".amdhsa_kernel"):
            skip_until = ".end_amdhsa_kernel"
            continue
        if line.startswith(".amdgpu_metadata"):
            skip_until = ".end_amdgpu_metadata"
            continue
        while True:
            lm = re.match(r"^([A-Za-z_.$][\w.$]*):\s*(.*)$", line)
            if not lm:
                break
            out.append(("label", lm.group(1)))
            line = lm.group(2).strip()
        if not line or line.startswith("."):
            continue
        parts = line.split(None, 1)
        mnemonic = parts[0].lower()
        ops, mods = _parse_operands(parts[1] if len(parts) > 1 else "")
        ins = Instr(line=ln, text=raw.strip(), mnemonic=mnemonic, operands=ops, mods=mods)
        _classify(ins)
        out.append(ins)
    idx = 0
    for item in out:
        if isinstance(item, Instr):
            item.index = idx
            idx += 1
    return out
