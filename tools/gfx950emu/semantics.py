"""Switches for the semantics that gfx950-facts.md marks unverified, [CONFLICT], or only seen in AMD's rocjitsu
emulator (§7, §8). Each is one field; the default is stated and argued in docs/emulator.md."""
from __future__ import annotations

from dataclasses import dataclass

_CHOICES = {
    "fp8_overflow": ("nonsat", "saturate"),
    "cvt_pk_fp8_low_write": ("preserve", "zero_high"),
    "mfma_accumulate": ("fp64", "fp32_seq", "fp32_block"),
    "mfma_scale_byte": ("strict", "llvm", "byte0"),
    "e8m0_ff": ("nan", "exponent"),
    "buffer_oob": ("dword", "start", "whole"),
    "mfma_partial_exec": ("error", "ignore_exec"),
    "lds_dma_m0_bits": (32, 16),
}


@dataclass(frozen=True)
class Semantics:
    """Choices for unverified gfx950 behaviour.

    fp8_overflow: ``v_cvt_pk_fp8_f32``/``_bf8_`` (and scalef32 variants) on values past the largest finite
        code: ``"nonsat"`` (default; E4M3FN -> NaN 0x7F/0xFF, E5M2 -> inf, the OCP non-saturating mode) or
        ``"saturate"`` (+-448 / +-57344, inf too; one rocjitsu revision). Facts §2, §8.12.
    cvt_pk_fp8_low_write: the other 16 bits when writing the low word (op_sel[3]=0): ``"preserve"``
        (default; what LLVM 22 assumes) or ``"zero_high"`` (rocjitsu). Facts §8.13.
    mfma_accumulate: the MFMA's internal summation order (undocumented): ``"fp64"`` (default; exact products
        summed in fp64, C added, one rounding to fp32), ``"fp32_seq"`` (an fp32 accumulator starting at C, rounded
        after every product in k order) or ``"fp32_block"`` (rocjitsu: per 32-element K block, sequential fp32
        FMAs, then added to C). Facts §7.8.
    mfma_scale_byte: which byte of a scale VGPR ``v_mfma_scale_*`` uses: ``"strict"`` (default; byte 0, and any
        non-zero op_sel/op_sel_hi is an error because its meaning is disputed), ``"llvm"`` (byte
        op_sel[i] | op_sel_hi[i] << 1, LLVM's intrinsic mapping) or ``"byte0"`` (always byte 0, rocjitsu).
        Facts §1.4, §8.7.
    e8m0_ff: scale byte 0xFF: ``"nan"`` (default; OCP E8M0 NaN -> the block contributes NaN) or
        ``"exponent"`` (2^128, rocjitsu). Facts §1.4, §8.10.
    buffer_oob: raw-buffer range check (stride 0, num_records in bytes, voffset + inst offset compared):
        ``"dword"`` (default; each dword is loaded/stored only if all its 4 bytes lie below num_records),
        ``"start"`` (a lane's whole access is in range iff its start offset < num_records, rocjitsu §8.16/8.18),
        ``"whole"`` (in range iff the whole access lies below num_records). Facts §6.
    buffer_soffset_checked: include the SGPR soffset in the range check (default False: excluded, as the LLVM
        intrinsic comment and rocjitsu §8.17).
    mfma_partial_exec: an MFMA issued while EXEC is not all 64 lanes: ``"error"`` (default; the fact sheet
        does not say whether MFMA honours EXEC, so a kernel must not depend on it) or ``"ignore_exec"`` (every
        lane's registers are read and D is written for all lanes).
    lds_dma_m0_bits: how much of M0 the LDS-DMA loads use as the LDS base address: ``32`` (default; all of
        it, as LLVM uses M0 = LDS byte address) or ``16`` (``M0 & 0xFFFF``, the GCN-era rule, which cannot
        address 160 KiB). Facts §6 [UNVERIFIED].
    waitcnt_check: default True: reading or overwriting a register that an outstanding load (VMEM, SMEM, LDS)
        will write before the ``s_waitcnt`` that retires it is an error (loads complete at issue in the
        emulator, so a missing wait would otherwise go unnoticed).
    """

    fp8_overflow: str = "nonsat"
    cvt_pk_fp8_low_write: str = "preserve"
    mfma_accumulate: str = "fp64"
    mfma_scale_byte: str = "strict"
    e8m0_ff: str = "nan"
    buffer_oob: str = "dword"
    buffer_soffset_checked: bool = False
    mfma_partial_exec: str = "error"
    lds_dma_m0_bits: int = 32
    waitcnt_check: bool = True

    def __post_init__(self):
        for k, allowed in _CHOICES.items():
            if getattr(self, k) not in allowed:
                raise ValueError(f"Semantics.{k} = {getattr(self, k)!r}; allowed: {allowed}")
