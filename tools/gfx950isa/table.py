"""The one table of gfx950 (CDNA4, MI355X) instruction facts.

Everything the tools need to know about an instruction *other than what it computes* lives here: its issue
class (unit), MFMA shapes, register-tuple sizes and pass counts, which VALU ops are transcendental, which have
two destinations or a tied accumulator, which scalar ops write no register. The emulator
(:mod:`gfx950emu`), the hazard checker (:mod:`gfx950hazard`), the generator (:mod:`zyfa_gen`) and the cycle
model (:mod:`gfx950isa.cycles`) import these tables; none of them keeps its own.

Sources: docs/design/gfx950-facts.md (cited as "facts §n"), LLVM 22 (AMDGPU ``VOP1Instructions.td``
TRANS flag, ``SIInstrInfo``/``GCNHazardRecognizer`` for pass counts, verified with ``llc-22``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MfmaShape", "MFMA_SHAPES", "F8F6F4_FORMATS", "mfma_shape", "mfma_passes", "mfma_flops", "TRANS",
           "TWO_DST", "TIED_DST", "S_NO_DST", "SAVEEXEC", "VMEM_PREFIXES", "SMEM_LOAD_PREFIXES",
           "SMEM_STORE_PREFIXES", "CALLS", "unit_of", "is_scaled_mfma"]


@dataclass(frozen=True)
class MfmaShape:
    """One MFMA variant: output tile ``dim`` x ``dim``, depth ``k``, input element type, 32-bit registers per
    lane of A/B and of C/D, and the pass count (1 pass = 4 cycles of the matrix pipe; facts §1.1: LLVM 22's
    computeInstrLatency recovered from the wait states llc inserts, equal to the AMD blog's cycle column / 4).
    For f8f6f4 the pass count given is the fp8/bf8 rate; :func:`mfma_passes` halves it when neither operand is
    8-bit."""

    dim: int
    k: int
    in_type: str  # "bf16", "f16", "fp8_fp8", ..., "f8f6f4"
    ab_regs: int
    cd_regs: int
    passes: int

    @property
    def flops(self) -> int:
        """2 * dim * dim * k (one multiply and one add per product)."""
        return 2 * self.dim * self.dim * self.k


MFMA_SHAPES: dict[str, MfmaShape] = {
    "v_mfma_f32_32x32x16_bf16": MfmaShape(32, 16, "bf16", 4, 16, 8),
    "v_mfma_f32_16x16x32_bf16": MfmaShape(16, 32, "bf16", 4, 4, 4),
    "v_mfma_f32_32x32x8_bf16": MfmaShape(32, 8, "bf16", 2, 16, 8),  # gfx942's 32x32x8bf16_1k
    "v_mfma_f32_32x32x8bf16_1k": MfmaShape(32, 8, "bf16", 2, 16, 8),
    "v_mfma_f32_16x16x16_bf16": MfmaShape(16, 16, "bf16", 2, 4, 4),
    "v_mfma_f32_16x16x16bf16_1k": MfmaShape(16, 16, "bf16", 2, 4, 4),
    "v_mfma_f32_32x32x16_f16": MfmaShape(32, 16, "f16", 4, 16, 8),
    "v_mfma_f32_16x16x32_f16": MfmaShape(16, 32, "f16", 4, 4, 4),
    "v_mfma_f32_32x32x8_f16": MfmaShape(32, 8, "f16", 2, 16, 8),
    "v_mfma_f32_16x16x16_f16": MfmaShape(16, 16, "f16", 2, 4, 4),
    "v_mfma_f32_32x32x64_f8f6f4": MfmaShape(32, 64, "f8f6f4", 8, 16, 16),
    "v_mfma_f32_16x16x128_f8f6f4": MfmaShape(16, 128, "f8f6f4", 8, 4, 8),
    "v_mfma_scale_f32_32x32x64_f8f6f4": MfmaShape(32, 64, "f8f6f4", 8, 16, 16),
    "v_mfma_scale_f32_16x16x128_f8f6f4": MfmaShape(16, 128, "f8f6f4", 8, 4, 8),
}
for _a in ("fp8", "bf8"):
    for _b in ("fp8", "bf8"):
        MFMA_SHAPES[f"v_mfma_f32_32x32x16_{_a}_{_b}"] = MfmaShape(32, 16, f"{_a}_{_b}", 2, 16, 8)
        MFMA_SHAPES[f"v_mfma_f32_16x16x32_{_a}_{_b}"] = MfmaShape(16, 32, f"{_a}_{_b}", 2, 4, 4)

# Pass counts of MFMAs the hazard checker knows but the emulator does not run (none today); every MFMA the
# checker meets must be in MFMA_SHAPES, an unknown one is an error (its pass count decides wait states).

#: f8f6f4 cbsz/blgp format codes (facts §1.3).
F8F6F4_FORMATS = {0: "fp8", 1: "bf8", 2: "fp6", 3: "bf6", 4: "fp4"}


def is_scaled_mfma(mnemonic: str) -> bool:
    return mnemonic.startswith("v_mfma_scale_")


def mfma_shape(mnemonic: str) -> MfmaShape | None:
    """The shape of an MFMA mnemonic (``_e64`` suffix allowed), or None when it is not in the table."""
    return MFMA_SHAPES.get(mnemonic.replace("_e64", ""))


def mfma_passes(mnemonic: str, mods: dict) -> int:
    """Pass count of an MFMA on gfx950. f8f6f4: 16 (32x32x64) / 8 (16x16x128) when A or B is fp8/bf8
    (cbsz/blgp 0 or 1), else 8 / 4 (facts §1.1). Raises ValueError for MFMAs not in the table."""
    shape = mfma_shape(mnemonic)
    if shape is None:
        raise ValueError(f"unknown MFMA {mnemonic!r}: its pass count is not in gfx950isa.table.MFMA_SHAPES")
    if shape.in_type == "f8f6f4":
        cbsz = int(mods.get("cbsz", 0))
        blgp = int(mods.get("blgp", 0))
        if not (cbsz <= 1 or blgp <= 1):
            return shape.passes // 2
    return shape.passes


def mfma_flops(mnemonic: str) -> int:
    shape = mfma_shape(mnemonic)
    if shape is None:
        raise ValueError(f"unknown MFMA {mnemonic!r}")
    return shape.flops


#: Transcendental VALU ops (LLVM's TRANS flag: VOP1Instructions.td). They issue on the transcendental unit
#: (quarter rate, see gfx950isa.cycles) and have the trans->VALU forwarding hazard (facts §3#14).
TRANS = frozenset({
    "v_exp_f32", "v_log_f32", "v_rcp_f32", "v_rcp_iflag_f32", "v_rsq_f32", "v_sqrt_f32", "v_sin_f32",
    "v_cos_f32", "v_exp_f16", "v_log_f16", "v_rcp_f16", "v_rsq_f16", "v_sqrt_f16", "v_sin_f16", "v_cos_f16",
    "v_rcp_f64", "v_rsq_f64", "v_sqrt_f64", "v_exp_legacy_f32", "v_log_legacy_f32",
})
#: VALU ops with two destinations (vdst, sdst) printed as the first two operands.
TWO_DST = ("v_add_co_u32", "v_sub_co_u32", "v_subrev_co_u32", "v_addc_co_u32", "v_subb_co_u32",
           "v_subbrev_co_u32", "v_div_scale_f32", "v_div_scale_f64", "v_mad_u64_u32", "v_mad_i64_i32")
#: VALU ops whose destination is also a source (tied accumulator: v_fmac, v_mac, v_dot*c); prefixes.
TIED_DST = ("v_fmac", "v_mac_", "v_pk_fmac", "v_dot2c", "v_dot4c", "v_dot8c")
#: SALU / SOPP ops that write no register; prefixes.
S_NO_DST = ("s_cmp", "s_bitcmp", "s_waitcnt", "s_barrier", "s_endpgm", "s_branch", "s_cbranch", "s_setprio",
            "s_sleep", "s_nop", "s_sendmsg", "s_trap", "s_icache_inv", "s_setreg", "s_set_gpr_idx",
            "s_sethalt", "s_ttracedata", "s_dcache", "s_setkill", "s_incperflevel", "s_decperflevel")
#: SALU ops that read and write EXEC besides their explicit operands; prefixes.
SAVEEXEC = ("s_and_saveexec", "s_or_saveexec", "s_xor_saveexec", "s_andn2_saveexec", "s_orn2_saveexec",
            "s_nand_saveexec", "s_nor_saveexec", "s_xnor_saveexec", "s_andn1_saveexec", "s_orn1_saveexec",
            "s_andn1_wrexec", "s_andn2_wrexec")
VMEM_PREFIXES = ("buffer_", "global_", "flat_", "scratch_")
SMEM_LOAD_PREFIXES = ("s_load", "s_buffer_load", "s_scratch_load", "s_memtime", "s_memrealtime")
SMEM_STORE_PREFIXES = ("s_store", "s_buffer_store", "s_atc", "s_dcache")
#: Calls and returns (not modelled by the emulator; end a basic block for the hazard checker's CFG).
CALLS = ("s_getpc_b64", "s_setpc_b64", "s_swappc_b64", "s_call_b64", "s_trap", "s_rfe_b64")


def unit_of(base: str) -> str:
    """Issue class of a mnemonic without encoding suffix: ``mfma``, ``trans``, ``valu``, ``vmem``, ``ds``,
    ``smem``, ``salu``, ``nop``, ``branch``, ``end``, ``exp``; ``""`` when unknown."""
    if base == "s_nop":
        return "nop"
    if base.startswith("s_endpgm"):
        return "end"
    if base == "s_branch" or base.startswith("s_cbranch"):
        return "branch"
    if base.startswith(("v_mfma", "v_smfmac")):
        return "mfma"
    if base.startswith(VMEM_PREFIXES):
        return "vmem"
    if base.startswith("ds_"):
        return "ds"
    if base.startswith(SMEM_LOAD_PREFIXES) or base.startswith(SMEM_STORE_PREFIXES):
        return "smem"
    if base.startswith("s_"):
        return "salu"
    if base.startswith("v_"):
        return "trans" if base in TRANS else "valu"
    if base.startswith("exp"):
        return "exp"
    return ""


# ------------------------------------------------------------------------------------------ operand signatures
# Explicit operands of the instructions the generator builds, in assembler order: "role:classes:count".
# classes: v VGPR, a AGPR, s SGPR (incl. vcc/exec/m0), i constant (inline or literal), l label, o the word
# ``off``; count: 32-bit registers of a register operand (0 = any). Facts: LLVM 22 AMDGPU asm syntax (every
# form assembles with llvm-mc-22 -mcpu=gfx950, tested); VOP3 forms take no literal on gfx9 (facts §2), so
# their constants must be inline (the assembler rejects the rest).
def _sig(*ops):
    out = []
    for o in ops:
        role, cls, n = o.split(":")
        out.append((role, cls, int(n)))
    return tuple(out)


SIGNATURES: dict[str, tuple] = {}
for _m in ("s_mov_b32", "s_not_b32", "s_brev_b32"):
    SIGNATURES[_m] = _sig("sdst:s:1", "src0:si:1")
for _m in ("s_add_u32", "s_sub_u32", "s_add_i32", "s_sub_i32", "s_mul_i32", "s_and_b32", "s_or_b32", "s_xor_b32",
           "s_lshl_b32", "s_lshr_b32", "s_ashr_i32", "s_min_u32", "s_max_u32", "s_min_i32", "s_max_i32",
           "s_addc_u32", "s_subb_u32", "s_cselect_b32", "s_andn2_b32", "s_mul_hi_u32", "s_bfe_u32"):
    SIGNATURES[_m] = _sig("sdst:s:1", "src0:si:1", "src1:si:1")
for _m in ("s_mov_b64",):
    SIGNATURES[_m] = _sig("sdst:s:2", "src0:si:2")
for _m in ("s_cmp_eq_u32", "s_cmp_lg_u32", "s_cmp_lt_u32", "s_cmp_le_u32", "s_cmp_gt_u32", "s_cmp_ge_u32",
           "s_cmp_lt_i32", "s_cmp_le_i32", "s_cmp_gt_i32", "s_cmp_ge_i32", "s_cmp_eq_i32"):
    SIGNATURES[_m] = _sig("src0:si:1", "src1:si:1")
for _n, _w in (("s_load_dword", 1), ("s_load_dwordx2", 2), ("s_load_dwordx4", 4), ("s_load_dwordx8", 8),
               ("s_load_dwordx16", 16)):
    SIGNATURES[_n] = _sig(f"sdst:s:{_w}", "sbase:s:2", "offset:i:1")
for _m in ("s_branch", "s_cbranch_scc0", "s_cbranch_scc1", "s_cbranch_vccz", "s_cbranch_vccnz", "s_cbranch_execz",
           "s_cbranch_execnz"):
    SIGNATURES[_m] = _sig("target:l:0")
for _m in ("s_nop", "s_setprio", "s_sleep"):
    SIGNATURES[_m] = _sig("simm16:i:0")
for _m in ("s_barrier", "s_endpgm"):
    SIGNATURES[_m] = ()
for _m in ("v_mov_b32_e32", "v_exp_f32_e32", "v_log_f32_e32", "v_rcp_f32_e32", "v_cvt_f32_u32_e32",
           "v_cvt_u32_f32_e32", "v_cvt_f32_i32_e32", "v_not_b32_e32", "v_bfrev_b32_e32", "v_rndne_f32_e32",
           "v_floor_f32_e32", "v_cvt_f32_fp8_e32", "v_readfirstlane_b32"):
    SIGNATURES[_m] = _sig("vdst:v:1", "src0:vsi:1")
SIGNATURES["v_readfirstlane_b32"] = _sig("sdst:s:1", "src0:v:1")
for _m in ("v_add_u32_e32", "v_sub_u32_e32", "v_subrev_u32_e32", "v_and_b32_e32", "v_or_b32_e32",
           "v_xor_b32_e32", "v_lshlrev_b32_e32", "v_lshrrev_b32_e32", "v_ashrrev_i32_e32", "v_add_f32_e32",
           "v_sub_f32_e32", "v_subrev_f32_e32", "v_mul_f32_e32", "v_max_f32_e32", "v_min_f32_e32",
           "v_max_u32_e32", "v_min_u32_e32", "v_max_i32_e32", "v_min_i32_e32", "v_fmac_f32_e32",
           "v_mul_u32_u24_e32", "v_cndmask_b32_e32"):
    SIGNATURES[_m] = _sig("vdst:v:1", "src0:vsi:1", "src1:v:1")
for _m in ("v_mul_lo_u32", "v_mul_hi_u32", "v_cvt_pk_fp8_f32", "v_cvt_pk_bf8_f32", "v_ldexp_f32", "v_bfm_b32",
           "v_pack_b32_f16", "v_cvt_pk_bf16_f32", "v_max_f32_e64", "v_add_f32_e64", "v_mul_f32_e64",
           "v_lshlrev_b32_e64", "v_lshrrev_b32_e64", "v_and_b32_e64"):
    SIGNATURES[_m] = _sig("vdst:v:1", "src0:vsi:1", "src1:vsi:1")
for _m in ("v_lshl_add_u32", "v_add_lshl_u32", "v_lshl_or_b32", "v_and_or_b32", "v_or3_b32", "v_add3_u32",
           "v_fma_f32", "v_med3_f32", "v_max3_f32", "v_min3_f32", "v_bfe_u32", "v_perm_b32", "v_mad_u32_u24",
           "v_cndmask_b32_e64", "v_bitop3_b32"):
    SIGNATURES[_m] = _sig("vdst:v:1", "src0:vsi:1", "src1:vsi:1", "src2:vsi:1")
SIGNATURES["v_cndmask_b32_e64"] = _sig("vdst:v:1", "src0:vsi:1", "src1:vsi:1", "mask:s:2")
SIGNATURES["v_pk_mul_f32"] = _sig("vdst:v:2", "src0:vs:2", "src1:vs:2")
SIGNATURES["v_pk_add_f32"] = _sig("vdst:v:2", "src0:vs:2", "src1:vs:2")
SIGNATURES["v_pk_fma_f32"] = _sig("vdst:v:2", "src0:vs:2", "src1:vs:2", "src2:vs:2")
SIGNATURES["v_accvgpr_read_b32"] = _sig("vdst:v:1", "src0:a:1")
SIGNATURES["v_accvgpr_write_b32"] = _sig("vdst:a:1", "src0:vi:1")
for _m in ("v_cmp_gt_u32_e64", "v_cmp_lt_u32_e64", "v_cmp_ge_u32_e64", "v_cmp_le_u32_e64", "v_cmp_eq_u32_e64",
           "v_cmp_ne_u32_e64", "v_cmp_gt_i32_e64", "v_cmp_lt_i32_e64", "v_cmp_u_f32_e64", "v_cmp_gt_f32_e64"):
    SIGNATURES[_m] = _sig("sdst:s:2", "src0:vsi:1", "src1:vsi:1")
for _n, _w in (("ubyte", 1), ("dword", 1), ("dwordx2", 2), ("dwordx3", 3), ("dwordx4", 4), ("ushort", 1)):
    SIGNATURES[f"buffer_load_{_n}"] = _sig(f"vdata:v:{_w}", "vaddr:vo:1", "srsrc:s:4", "soffset:si:1")
for _n, _w in (("byte", 1), ("short", 1), ("dword", 1), ("dwordx2", 2), ("dwordx4", 4)):
    SIGNATURES[f"buffer_store_{_n}"] = _sig(f"vdata:v:{_w}", "vaddr:vo:1", "srsrc:s:4", "soffset:si:1")
for _n, _w in (("b32", 1), ("b64", 2), ("b128", 4), ("u8", 1), ("u16", 1)):
    SIGNATURES[f"ds_read_{_n}"] = _sig(f"vdst:v:{_w}", "vaddr:v:1")
for _n, _w in (("b32", 1), ("b64", 2), ("b128", 4), ("b8", 1), ("b16", 1)):
    SIGNATURES[f"ds_write_{_n}"] = _sig("vaddr:v:1", f"vdata:v:{_w}")


# ------------------------------------------------------------------------------------------------- timing
@dataclass(frozen=True)
class Timing:
    """Issue and latency of an issue class on one SIMD of gfx950, in clock cycles, and where the numbers come
    from. ``occupancy``: cycles the class's pipe is busy for one wave64 instruction (a second instruction of the
    class, from any wave on the SIMD, issues no earlier); ``latency``: cycles from issue until the result can be
    read; ``source``: the citation."""
    pipe: str
    occupancy: int
    latency: int
    source: str


#: Cycles of one issue slot: a SIMD is offered an issue cycle every 4 clocks, and a wave64 VALU op occupies the
#: 16-lane SIMD for 4 clocks; LLVM expresses every AMDGPU latency in these units ("The latency values are
#: 1 / (operations / cycle) / 4", SISchedule.td SICommonWriteRes). One hazard wait state is one slot.
SLOT = 4

_LLVM = "LLVM 22 AMDGPU SISchedule.td, SIDPGFX950FullSpeedModel/SICommonWriteRes"
TIMING: dict[str, Timing] = {
    "valu": Timing("valu", 4, 4, f"{_LLVM}: Write32Bit/WriteFloatFMA/WriteIntMul/Write64Bit = 1 slot"),
    "valu_packed": Timing("valu", 4, 4, f"{_LLVM}: v_pk_*_f32 are Write64Bit = 1 slot on gfx950 (two fp32 per "
                                        "lane per slot: packed FP32, facts §4 FP32 157.3 TF = 2x the scalar rate)"),
    "valu_cvt": Timing("valu", 4, 4, f"{_LLVM}: WriteFloatCvt is 4 slots in SICommonWriteRes, but the gfx950 "
                                     "model overrides conversions to full rate (WriteDoubleCvt 1); 1 slot used"),
    "trans": Timing("valu", 8, 8, "CDNA4 doubles the transcendental rate of CDNA3 (quarter rate -> half rate): "
                                  "2 slots. LLVM 22 still models WriteTrans32 = 4 slots for every target "
                                  "(SICommonWriteRes); the ZYFA budget (exact-exp minus Lean P = 512 cycles for 64 "
                                  "exponentials per lane) implies 8 cycles. [CALIBRATED: see docs/cycle-model.md]"),
    "salu": Timing("salu", 4, 4, f"{_LLVM}: WriteSALU = 1 slot"),
    "smem": Timing("smem", 4, 20, f"{_LLVM}: WriteSMEM = 5 slots"),
    "ds": Timing("lds", 4, 20, f"{_LLVM}: WriteLDS = 5 slots ('can be between 2 and 64'); occupancy grows with "
                               "the bytes moved, see LDS_BYTES_PER_CLK"),
    "vmem": Timing("vmem", 4, 320, f"{_LLVM}: WriteVMEM = 80 slots (an L2-hit order of magnitude; HBM is slower)"),
    "branch": Timing("salu", 4, 32, f"{_LLVM}: WriteBranch = 8 slots"),
    "nop": Timing("none", 4, 0, "s_nop N = N+1 wait states = N+1 slots (facts §3; LLVM getNumWaitStates)"),
    "barrier": Timing("none", 4, 4, "[MODEL] released one slot after the last wave arrives (LLVM's 500-slot "
                                    "WriteBarrier is marked 'XXX: Guessed' and is not used)"),
    "mfma": Timing("mfma", 0, 0, "facts §1.1: passes x 4 cycles (LLVM Write{2,4,8,16}PassMAI, ReleaseAtCycles = "
                                 "passes; f8f6f4 with an fp8 operand 16/8 passes: WriteMFMAScale_*_F8F6F4)"),
}
#: LDS bandwidth per CU (CDNA4: 256 bytes/clock, twice CDNA3; chipsandcheese, "AMD's CDNA 4 Architecture
#: Announcement", 2025); a SIMD's share when all four SIMDs read is a quarter of it.
LDS_BYTES_PER_CLK_PER_CU = 256
#: MI355X peak engine clock (facts §4) and matrix cores (SIMDs) on the chip, for modelled TFLOP/s.
CLOCK_GHZ = 2.4
SIMDS = 1024


def timing_class(base: str, kind: str) -> str:
    """TIMING key of an analysed instruction (base mnemonic, issue class from :func:`unit_of`)."""
    if kind == "valu":
        if base.startswith("v_pk_") and base.endswith("_f32"):
            return "valu_packed"
        if base.startswith("v_cvt"):
            return "valu_cvt"
        return "valu"
    if kind == "end":
        return "salu"
    if kind == "exp":
        return "vmem"
    return kind


# ------------------------------------------------------------------------------------------ memory access types
#: Memory access type suffix of buffer_/global_/flat_/scratch_ loads and stores -> (bytes per lane, format):
#: "raw" (dwords), "u"/"s" (zero-/sign-extended to 32 bits), "lo"/"hi"/"slo"/"shi" (d16: into the low or high 16
#: bits, the other half kept). LLVM 22 AMDGPU BUFInstructions.td / FLATInstructions.td names.
MEM_TYPES = {"dword": (4, "raw"), "dwordx2": (8, "raw"), "dwordx3": (12, "raw"), "dwordx4": (16, "raw"),
             "ubyte": (1, "u"), "sbyte": (1, "s"), "ushort": (2, "u"), "sshort": (2, "s"),
             "byte": (1, "u"), "short": (2, "u"),
             "short_d16": (2, "lo"), "short_d16_hi": (2, "hi"), "ubyte_d16": (1, "lo"),
             "ubyte_d16_hi": (1, "hi"), "sbyte_d16": (1, "slo"), "sbyte_d16_hi": (1, "shi"),
             "byte_d16_hi": (1, "hi")}
#: DS access suffix -> the equivalent MEM_TYPES suffix (ds_read_b128 moves a dwordx4 per lane).
DS_TYPES = {"b32": "dword", "b64": "dwordx2", "b96": "dwordx3", "b128": "dwordx4", "u8": "ubyte",
            "i8": "sbyte", "u16": "ushort", "i16": "sshort", "b8": "byte", "b16": "short",
            "u16_d16": "short_d16", "u16_d16_hi": "short_d16_hi", "u8_d16": "ubyte_d16",
            "u8_d16_hi": "ubyte_d16_hi", "i8_d16": "sbyte_d16", "i8_d16_hi": "sbyte_d16_hi",
            "b8_d16_hi": "byte_d16_hi", "b16_d16_hi": "short_d16_hi"}


def ds_bytes_per_lane(base: str) -> int:
    """Bytes one lane moves in a DS read/write (``ds_read2_*`` counts both halves); 4 when unknown
    (permutes, swizzles)."""
    m = re.match(r"^ds_(read|write)(2st64|2)?_(\w+?)$", base)
    if not m or m.group(3) not in DS_TYPES:
        return 4
    return MEM_TYPES[DS_TYPES[m.group(3)]][0] * (2 if m.group(2) else 1)
