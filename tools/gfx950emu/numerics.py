"""Number formats of gfx950 as numpy arrays: bf16, OCP fp8 (E4M3FN "fp8", E5M2 "bf8"), E8M0 scales.

Decoding uses ml_dtypes (an independent implementation of the OCP formats); encoding is round to nearest even
(gfx950-facts.md §2, §8.11) with the overflow behaviour chosen by :class:`gfx950emu.Semantics`.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

_CODES = np.arange(256, dtype=np.uint8)
#: value of each E4M3FN code (NaN for 0x7F/0xFF), float64
FP8_E4M3_TABLE = _CODES.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
#: value of each E5M2 code, float64
FP8_E5M2_TABLE = _CODES.view(ml_dtypes.float8_e5m2).astype(np.float64)
FP8_MAX = {"fp8": 448.0, "bf8": 57344.0}
_FP8_DTYPE = {"fp8": ml_dtypes.float8_e4m3fn, "bf8": ml_dtypes.float8_e5m2}


def bf16_bits_to_f32(u16: np.ndarray) -> np.ndarray:
    """bf16 bit patterns (any unsigned int dtype, low 16 bits used) -> float32 (exact)."""
    return ((np.asarray(u16).astype(np.uint32) & 0xFFFF) << 16).view(np.float32)


def f32_to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bits (uint32 holding 16 bits), round to nearest even, NaN stays NaN (quiet)."""
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16).view(np.uint16).astype(np.uint32)


def fp8_decode(codes: np.ndarray, fmt: str) -> np.ndarray:
    """fp8 codes (0..255) -> float64 values. fmt: ``"fp8"`` (E4M3FN) or ``"bf8"`` (E5M2)."""
    table = FP8_E4M3_TABLE if fmt == "fp8" else FP8_E5M2_TABLE
    return table[np.asarray(codes).astype(np.intp) & 0xFF]


def f32_to_fp8_bits(x: np.ndarray, fmt: str, overflow: str) -> np.ndarray:
    """float32 -> fp8 codes (uint32 0..255), round to nearest even.

    overflow: ``"nonsat"``: values beyond the largest finite code (after rounding) become NaN (E4M3FN) or
    +-inf (E5M2), as the OCP spec's non-saturating mode and ml_dtypes; ``"saturate"``: finite values and +-inf
    clamp to +-max finite (448 / 57344), NaN stays NaN. gfx950-facts.md §2 and §8.12: the hardware's choice is
    unverified.
    """
    x = np.asarray(x, np.float32)
    if overflow == "saturate":
        m = np.float32(FP8_MAX[fmt])
        x = np.where(np.isnan(x), x, np.clip(x, -m, m)).astype(np.float32)
    elif overflow != "nonsat":
        raise ValueError(f"fp8 overflow mode {overflow!r} is not 'nonsat' or 'saturate'")
    return x.astype(_FP8_DTYPE[fmt]).view(np.uint8).astype(np.uint32)


def e8m0_to_exp(code: np.ndarray) -> np.ndarray:
    """E8M0 scale byte -> unbiased exponent (code - 127), int64."""
    return np.asarray(code).astype(np.int64) - 127
