"""MFMA (matrix fused multiply-add) semantics with the wave64 lane layouts of gfx950-facts.md §1.2-§1.4.

Layouts (lane l = 0..63; ``dim`` = 32 or 16; G = 64 / dim lane groups; E = K / G elements per lane):
A (dim x K) row i / B (K x dim) column i = l % dim. Element e of lane l (little-endian in its register tuple) is
k = (l // dim) * E + e when E <= 16, else (f8f6f4 fp8/bf8) k = ((e // 16) * G + l // dim) * 16 + e % 16.
C/D, 32x32 (16 registers): register r of lane l is row 8*(r//4) + 4*(l//32) + r%4, column l%32.
C/D, 16x16 (4 registers): register r of lane l is row 4*(l//16) + r, column l%16.
Scaled f8f6f4: K splits into blocks of 32; the E8M0 scale of A row m (B column n) for block b is in lane
dim*b + m (dim*b + n); block b adds ldexp(block dot product, sa + sb - 254) (facts §1.4, §8.5, §8.8).
"""
from __future__ import annotations

import numpy as np

from gfx950isa.table import F8F6F4_FORMATS, MFMA_SHAPES, MfmaShape  # noqa: F401

from .errors import EmuError
from .numerics import FP8_E4M3_TABLE, FP8_E5M2_TABLE, bf16_bits_to_f32


# Shapes, register counts and pass counts come from the one instruction table.
__all__ = ["MfmaShape", "MFMA_SHAPES", "F8F6F4_FORMATS", "ab_layout", "cd_layout", "gather_matrix", "c_to_matrix",
           "matrix_to_d", "mfma_compute"]


def ab_layout(dim: int, k: int, elem_bits: int):
    """(rows[64], kidx[64, E]): lane l holds row/column rows[l] and, as its element e, k index kidx[l, e]."""
    g = 64 // dim
    e = k // g
    lane = np.arange(64)
    grp = lane // dim
    ee = np.arange(e)
    if e <= 16 or elem_bits < 8:
        kidx = grp[:, None] * e + ee[None, :]
    else:
        kidx = ((ee[None, :] // 16) * g + grp[:, None]) * 16 + ee[None, :] % 16
    return lane % dim, kidx


def cd_layout(dim: int):
    """(rows[R, 64], cols[R, 64]): register r of lane l holds D[rows[r, l], cols[r, l]]."""
    lane = np.arange(64)
    if dim == 32:
        r = np.arange(16)[:, None]
        rows = 8 * (r // 4) + 4 * (lane[None, :] // 32) + r % 4
        cols = np.broadcast_to(lane % 32, (16, 64))
    else:
        r = np.arange(4)[:, None]
        rows = 4 * (lane[None, :] // 16) + r
        cols = np.broadcast_to(lane % 16, (4, 64))
    return rows, np.array(cols)


_AB_CACHE: dict = {}
_CD_CACHE: dict = {}


def _ab(dim, k, bits):
    key = (dim, k, bits)
    if key not in _AB_CACHE:
        _AB_CACHE[key] = ab_layout(dim, k, bits)
    return _AB_CACHE[key]


def _cd(dim):
    if dim not in _CD_CACHE:
        _CD_CACHE[dim] = cd_layout(dim)
    return _CD_CACHE[dim]


def decode_lanes(regs: np.ndarray, fmt: str) -> np.ndarray:
    """regs (n, 64) uint32 -> per-lane element values (64, E) float64, element 0 in the low bits of reg 0."""
    lanes = np.ascontiguousarray(regs.T)
    if fmt == "bf16":
        return bf16_bits_to_f32(lanes.view(np.uint16)).astype(np.float64)
    if fmt == "f16":
        return lanes.view(np.float16).astype(np.float64)
    if fmt == "fp8":
        return FP8_E4M3_TABLE[lanes.view(np.uint8)]
    if fmt == "bf8":
        return FP8_E5M2_TABLE[lanes.view(np.uint8)]
    raise EmuError(f"MFMA input format {fmt} is not supported by the emulator")


def gather_matrix(regs: np.ndarray, dim: int, k: int, fmt: str) -> np.ndarray:
    """The dim x K matrix (A, or Bᵀ) held by a wave's register tuple, float64."""
    vals = decode_lanes(regs, fmt)
    bits = 16 if fmt in ("bf16", "f16") else 8
    rows, kidx = _ab(dim, k, bits)
    if vals.shape[1] != kidx.shape[1]:
        raise EmuError(f"MFMA operand has {vals.shape[1]} elements per lane, expected {kidx.shape[1]}")
    m = np.empty((dim, k), np.float64)
    m[rows[:, None], kidx] = vals
    return m


def c_to_matrix(c_regs: np.ndarray, dim: int) -> np.ndarray:
    rows, cols = _cd(dim)
    m = np.empty((dim, dim), np.float32)
    m[rows, cols] = c_regs.view(np.float32)
    return m


def matrix_to_d(d: np.ndarray, dim: int) -> np.ndarray:
    rows, cols = _cd(dim)
    return np.asarray(d, np.float32)[rows, cols].view(np.uint32)


def mfma_compute(a: np.ndarray, bt: np.ndarray, c: np.ndarray, mode: str, sa=None, sb=None) -> np.ndarray:
    """D = C + A·B (float32 result). a: dim x K, bt: dim x K (B transposed), c: dim x dim float32.

    sa/sb: optional (dim, nblocks) int64 exponents (scale - 127 each) for 32-element K blocks; NaN blocks are
    given as None-able float arrays by the caller through ``sa`` being float with NaN. mode
    (Semantics.mfma_accumulate): ``"fp64"`` (exact sum, C added, one rounding), ``"fp32_seq"`` (fp32 accumulator
    starting at C, one rounding after each product in k order, scaled products for the scaled MFMA) or
    ``"fp32_block"`` (per 32-element K block a sequential fp32 sum from 0, scaled, then added to the fp32
    accumulator)."""
    dim, k = a.shape
    if mode == "fp32_seq":
        acc = c.astype(np.float32)
        for kk in range(k):
            prod = np.outer(a[:, kk], bt[:, kk])  # exact in fp64 (8- and 16-bit inputs)
            if sa is not None:
                b = kk // 32
                prod = prod * np.exp2(sa[:, b][:, None] + sb[:, b][None, :])
            acc = (acc.astype(np.float64) + prod).astype(np.float32)
        return acc
    blk = 32 if (sa is not None or mode == "fp32_block") else k
    blk = min(blk, k)
    nb = k // blk
    if mode == "fp64":
        if sa is None:
            return (c.astype(np.float64) + a @ bt.T).astype(np.float32)
        acc = c.astype(np.float64)
        for b in range(nb):
            s = a[:, b * blk:(b + 1) * blk] @ bt[:, b * blk:(b + 1) * blk].T
            acc = acc + s * np.exp2(sa[:, b][:, None] + sb[:, b][None, :])
        return acc.astype(np.float32)
    acc = c.astype(np.float32)
    for b in range(nb):
        s = np.zeros((dim, dim), np.float32)
        for kk in range(b * blk, (b + 1) * blk):
            s = (s.astype(np.float64) + np.outer(a[:, kk], bt[:, kk])).astype(np.float32)
        if sa is not None:
            s = (s.astype(np.float64) * np.exp2(sa[:, b][:, None] + sb[:, b][None, :])).astype(np.float32)
        acc = (acc.astype(np.float64) + s).astype(np.float32)
    return acc
