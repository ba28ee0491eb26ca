"""Instruction semantics: each parsed :class:`~gfx950emu.asm.Instr` is compiled once into a Python closure
``fn(wave) -> None | int`` (None: fall through; an int >= 0: branch to that instruction index; ``BARRIER`` or
``ENDPGM``). Vector instructions work on all 64 lanes at once with numpy and honour EXEC.

Register file layout of a wave (see machine.Wave): ``s`` is a list of 128 Python ints (SGPRs; VCC = s106/107,
M0 = s124, EXEC = s126/127, the gfx9 operand encodings), ``v`` is a (512, 64) uint32 array (v0-v255 then
a0-a255). Unknown mnemonics, operands or modifiers raise :class:`EmuError` at compile time.
"""
from __future__ import annotations

import re

import numpy as np

from .asm import EXEC, M0, VCC, Instr, Operand
from .errors import EmuError
from .mfma import F8F6F4_FORMATS, MFMA_SHAPES, c_to_matrix, gather_matrix, matrix_to_d, mfma_compute
from .numerics import bf16_bits_to_f32, f32_to_bf16_bits, f32_to_fp8_bits, fp8_decode
from .semantics import Semantics

BARRIER = -1
ENDPGM = -2
_CALLS = ("s_getpc_b64", "s_setpc_b64", "s_swappc_b64", "s_call_b64", "s_trap", "s_rfe_b64")
M32 = 0xFFFFFFFF
M64 = (1 << 64) - 1
LANES = np.arange(64)
_ZERO64 = np.zeros(64, np.uint32)


# ----------------------------------------------------------------------------------------------- helpers

def _b64(x):
    """x as a (64,) lane array (no copy when it already is one)."""
    if type(x) is np.ndarray and x.shape == (64,):
        return x
    return np.broadcast_to(x, (64,))


def int_to_mask(x: int) -> np.ndarray:
    """64-bit lane mask -> bool[64]."""
    return np.unpackbits(np.array([x & M64], np.uint64).view(np.uint8), bitorder="little").astype(bool)


def mask_to_int(b: np.ndarray) -> int:
    """bool[64] -> 64-bit lane mask."""
    return int(np.packbits(np.asarray(b, bool), bitorder="little").view(np.uint64)[0])


def const_bits(value, width: int) -> int:
    """Bits of a constant operand read as a ``width``-bit value: ints wrap (sign-extend), floats are encoded
    as f16/f32/f64 of that width."""
    if isinstance(value, float):
        if width == 64:
            return int(np.array([value], np.float64).view(np.uint64)[0])
        if width == 16:
            return int(np.array([value], np.float16).view(np.uint16)[0])
        return int(np.array([value], np.float32).view(np.uint32)[0])
    return value & ((1 << width) - 1)


def _reg_keys(op: Operand) -> list[int]:
    if op.kind == "s":
        return list(range(op.index, op.index + op.count))
    if op.kind == "v":
        return [1000 + op.index + j for j in range(op.count)]
    if op.kind == "a":
        return [1256 + op.index + j for j in range(op.count)]
    return []


def _vidx(op: Operand) -> int:
    if op.kind == "v":
        return op.index
    if op.kind == "a":
        return 256 + op.index
    raise EmuError(f"operand {op.text!r} must be a VGPR or AGPR")


def _need(ins: Instr, n: int):
    if len(ins.operands) != n:
        raise EmuError(f"{ins.mnemonic}: expected {n} operands, got {len(ins.operands)}")


def _check_mods(ins: Instr, allowed: set):
    for k in ins.mods:
        if k not in allowed:
            raise EmuError(f"{ins.mnemonic}: modifier {k!r} is not supported by the emulator")


def _asu32(x):
    """int/float/array -> uint32 bits (ints masked)."""
    a = np.asarray(x)
    if a.dtype == np.uint32:
        return a
    if a.dtype.kind == "f":
        return a.astype(np.float32).view(np.uint32)
    return (a.astype(np.int64) & M32).astype(np.uint32)


# ----------------------------------------------------------------------------------------------- readers

def rd32(op: Operand):
    """Vector-context reader of 32-bit bits: returns fn(w) -> uint32 array (64,) or uint32 scalar."""
    k = op.kind
    if k in ("v", "a"):
        i = _vidx(op)
        return lambda w: w.v[i]
    if k == "s":
        i = op.index
        return lambda w: np.uint32(w.s[i])
    if k == "const":
        c = np.uint32(const_bits(op.value, 32))
        return lambda w: c
    raise EmuError(f"operand {op.text!r} cannot be a 32-bit vector source")


def rd64(op: Operand):
    """Vector-context reader of 64-bit values (register pairs, little-endian)."""
    k = op.kind
    if k in ("v", "a"):
        i = _vidx(op)
        return lambda w: np.ascontiguousarray(w.v[i:i + 2].T).view(np.uint64).ravel()
    if k == "s":
        i = op.index
        return lambda w: np.uint64(w.s[i] | (w.s[i + 1] << 32))
    if k == "const":
        v = op.value
        if isinstance(v, int) and v > 0x7FFFFFFF and v <= M32:
            c = np.uint64(v)  # 32-bit literal, zero-extended
        else:
            c = np.uint64(const_bits(v, 64))
        return lambda w: c
    raise EmuError(f"operand {op.text!r} cannot be a 64-bit vector source")


def _fmods(op: Operand, f):
    if op.abs:
        g = f
        f = lambda w: np.abs(g(w))
    if op.neg and op.kind != "const":
        h = f
        f = lambda w: -h(w)
    return f


def typed_reader(op: Operand, t: str, raw=None):
    """Reader converting bits to the operation type t: f32, u32, i32, u64, i64, f64, f16."""
    if t in ("f32", "u32", "i32", "b32"):
        r = raw or rd32(op)
        if t == "f32":
            f = lambda w: r(w).view(np.float32)
            return _fmods(op, f)
        if op.neg or op.abs:
            raise EmuError(f"source modifiers on integer operand {op.text!r}")
        if t == "i32":
            return lambda w: r(w).view(np.int32)
        return r
    if t in ("u64", "i64", "f64"):
        r = raw or rd64(op)
        if t == "f64":
            return _fmods(op, lambda w: r(w).view(np.float64))
        if t == "i64":
            return lambda w: r(w).view(np.int64)
        return r
    raise EmuError(f"internal: type {t}")


def _half_reader(op: Operand, t: str):
    """Low 16 bits of a source as f16 / i16 / u16 (constants: floats as f16, ints as 16-bit values)."""
    if op.kind == "const":
        c = np.uint32(const_bits(op.value, 16))
        raw = lambda w: c
    else:
        raw = rd32(op)
    if t == "f16":
        f = lambda w: (np.asarray(raw(w), np.uint32) & 0xFFFF).astype(np.uint16).view(np.float16)
        return _fmods(op, f)
    if t == "i16":
        return lambda w: (np.asarray(raw(w), np.uint32) & 0xFFFF).astype(np.uint16).view(np.int16)
    return lambda w: np.asarray(raw(w), np.uint32) & 0xFFFF


def sread(op: Operand, width: int = 32):
    """Scalar reader: fn(w) -> Python int (unsigned bits)."""
    if op.kind == "s":
        i = op.index
        if width == 64:
            return lambda w: w.s[i] | (w.s[i + 1] << 32)
        return lambda w: w.s[i]
    if op.kind == "const":
        v = op.value
        if width == 64 and isinstance(v, int) and 0x7FFFFFFF < v <= M32:
            c = v
        else:
            c = const_bits(v, width)
        return lambda w: c
    if op.kind == "scc":
        return lambda w: w.scc
    raise EmuError(f"operand {op.text!r} cannot be a scalar source")


def swrite(op: Operand, width: int = 32):
    if op.kind != "s":
        raise EmuError(f"operand {op.text!r} must be an SGPR")
    i = op.index
    if width == 64:
        if op.count != 2:
            raise EmuError(f"operand {op.text!r} must be an SGPR pair")

        def f(w, x):
            w.s[i] = x & M32
            w.s[i + 1] = (x >> 32) & M32
        return f

    def g(w, x):
        w.s[i] = x & M32
    return g


def vwrite(op: Operand, n: int = 1):
    """Vector writer of n 32-bit registers: fn(w, bits, mask); bits shape (64,) or (n, 64) uint32."""
    i = _vidx(op)
    if op.count != n:
        raise EmuError(f"operand {op.text!r} must be {n} register(s)")
    if n == 1:
        def f(w, val, m):
            np.copyto(w.v[i], val, where=m, casting="unsafe")
        return f

    def g(w, val, m):
        np.copyto(w.v[i:i + n], val, where=m, casting="unsafe")
    return g


def _to_bits(res, t):
    if t == "f32":
        return np.asarray(res, np.float32).view(np.uint32)
    if t in ("u32", "i32", "b32"):
        a = np.asarray(res)
        if a.dtype == np.uint32:
            return a
        return (a.astype(np.int64) & M32).astype(np.uint32)
    if t in ("u64", "i64"):
        a = np.asarray(res)
        return np.ascontiguousarray(_b64(a.astype(np.uint64))).view(np.uint32).reshape(64, 2).T
    if t == "f64":
        a = np.asarray(res, np.float64)
        return np.ascontiguousarray(_b64(a)).view(np.uint32).reshape(64, 2).T
    raise EmuError(f"internal: dst type {t}")


# ----------------------------------------------------------------------------------------------- VALU table
f64 = np.float64


def _u(x):
    return np.asarray(x, np.uint32)


def _i(x):
    return np.asarray(x).astype(np.int64)


def _bfe_u(v, off, wid):
    off = _u(off) & 31
    wid = _u(wid) & 31
    r = (_u(v).astype(np.uint64) >> off) & ((np.uint64(1) << wid.astype(np.uint64)) - np.uint64(1))
    return r


def _bfe_i(v, off, wid):
    off = _i(_u(off) & 31)
    wid = _i(_u(wid) & 31)
    r = (_i(_u(v)) >> off) & ((1 << wid) - 1)
    sign = (r >> np.maximum(wid - 1, 0)) & 1
    r = np.where((wid > 0) & (sign == 1), r - (1 << wid), r)
    return np.where(wid == 0, 0, r)


def _perm(s0, s1, sel):
    """v_perm_b32: byte k of the result is chosen by byte k of sel from {s0, s1} (s1 = bytes 0-3, s0 = bytes
    4-7); selector 8..11 = sign (bit 7) of bytes 1, 3, 5, 7 replicated; 12 = 0x00; 13 and above = 0xFF."""
    s0, s1, sel = np.broadcast_arrays(_u(s0), _u(s1), _u(sel))
    n = s0.size
    tab = np.empty((n, 14), np.uint8)
    tab[:, 0:4] = np.ascontiguousarray(s1.reshape(n)).view(np.uint8).reshape(n, 4)
    tab[:, 4:8] = np.ascontiguousarray(s0.reshape(n)).view(np.uint8).reshape(n, 4)
    tab[:, 8:12] = np.where(tab[:, [1, 3, 5, 7]] & 0x80, 0xFF, 0)
    tab[:, 12] = 0
    tab[:, 13] = 0xFF
    idx = np.minimum(np.ascontiguousarray(sel.reshape(n)).view(np.uint8).reshape(n, 4), 13)
    out = np.take_along_axis(tab, idx.astype(np.intp), axis=1)
    return np.ascontiguousarray(out).view(np.uint32).reshape(s0.shape)


def _maximum(a, b):
    """IEEE 754-2019 maximum: NaN if either is NaN, +0 > -0."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    r = np.where((a == b) & np.signbit(a), b, np.where(a > b, a, b))
    return np.where(np.isnan(a) | np.isnan(b), np.float32(np.nan), r)


def _minimum(a, b):
    """IEEE 754-2019 minimum: NaN if either is NaN, -0 < +0."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    r = np.where((a == b) & np.signbit(b), b, np.where(a < b, a, b))
    return np.where(np.isnan(a) | np.isnan(b), np.float32(np.nan), r)


def _med3(a, b, c):
    return np.fmax(np.fmin(a, b), np.fmin(np.fmax(a, b), c))


def _cvt_i32(x):
    x = np.asarray(x, np.float64)
    r = np.trunc(np.nan_to_num(x, nan=0.0))
    return np.clip(r, -2 ** 31, 2 ** 31 - 1).astype(np.int64)


def _cvt_u32(x):
    x = np.asarray(x, np.float64)
    r = np.trunc(np.nan_to_num(x, nan=0.0))
    return np.clip(r, 0, 2 ** 32 - 1).astype(np.int64)


def _ffbh_u32(x):
    x = _u(x).astype(np.uint64)
    r = np.full(x.shape, -1, np.int64)
    for b in range(31, -1, -1):
        r = np.where((r < 0) & ((x >> np.uint64(b)) & np.uint64(1) == 1), 31 - b, r)
    return r


def _ffbl(x):
    x = _u(x).astype(np.uint64)
    r = np.full(x.shape, -1, np.int64)
    for b in range(32):
        r = np.where((r < 0) & ((x >> np.uint64(b)) & np.uint64(1) == 1), b, r)
    return r


def _bcnt(x):
    x = _u(x)
    return np.unpackbits(np.atleast_1d(x).view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1).reshape(x.shape)


def _frexp_mant(x):
    m, e = np.frexp(np.asarray(x, np.float32))
    return np.where(np.isfinite(x), m, x)


def _frexp_exp(x):
    m, e = np.frexp(np.asarray(x, np.float32))
    return np.where(np.isfinite(x), e, 0)


def _f16_to_f32(x):
    return (_u(x) & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float32)


def _f32_to_f16(x):
    return np.asarray(x, np.float32).astype(np.float16).view(np.uint16).astype(np.uint32)


def _f32_to_f16_rtz(x):
    """f32 -> f16 bits, rounding toward zero (finite values never become inf)."""
    x = np.asarray(x, np.float32)
    h = x.astype(np.float16)
    back = h.astype(np.float32)
    fin = np.isfinite(x)
    h = np.where(fin & (np.abs(back) > np.abs(x)), np.nextafter(h, np.float16(0)), h)
    h = np.where(fin & np.isinf(h), np.copysign(np.float16(65504), x).astype(np.float16), h).astype(np.float16)
    return h.view(np.uint16).astype(np.uint32)


def _rcp(x):
    return np.float32(1.0) / np.asarray(x, np.float32)


def _ldexp(x, e):
    return np.ldexp(np.asarray(x, np.float64), np.clip(_i(e), -400, 400))


def _div_fixup(q, den, num):
    q = np.asarray(q, np.float32)
    exact = np.asarray(num, np.float32) / np.asarray(den, np.float32)
    special = ~np.isfinite(exact) | ~np.isfinite(q) | (np.asarray(den) == 0) | (np.asarray(num) == 0)
    return np.where(special, exact, q)


# name -> (source types, dst type, function). Functions get typed numpy arrays/scalars.
VOP: dict[str, tuple] = {
    # f32 arithmetic (IEEE binary32; fma-like ops computed in f64 then rounded once to f32)
    "v_add_f32": (("f32", "f32"), "f32", np.add),
    "v_sub_f32": (("f32", "f32"), "f32", np.subtract),
    "v_subrev_f32": (("f32", "f32"), "f32", lambda a, b: b - a),
    "v_mul_f32": (("f32", "f32"), "f32", np.multiply),
    "v_mul_legacy_f32": (("f32", "f32"), "f32", lambda a, b: np.where((a == 0) | (b == 0), np.float32(0), a * b)),
    "v_max_f32": (("f32", "f32"), "f32", np.fmax),
    "v_min_f32": (("f32", "f32"), "f32", np.fmin),
    "v_ldexp_f32": (("f32", "i32"), "f32", _ldexp),
    "v_fma_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: f64(a) * b + c),
    "v_fmac_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: f64(a) * b + c),
    "v_max3_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: np.fmax(np.fmax(a, b), c)),
    "v_min3_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: np.fmin(np.fmin(a, b), c)),
    "v_med3_f32": (("f32", "f32", "f32"), "f32", _med3),
    "v_maximum3_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: _maximum(_maximum(a, b), c)),
    "v_minimum3_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: _minimum(_minimum(a, b), c)),
    "v_cvt_pk_f16_f32": (("f32", "f32"), "u32", lambda a, b: _f32_to_f16(a) | (_f32_to_f16(b) << 16)),
    "v_dot2_f32_bf16": (("u32", "u32", "f32"), "f32",
                        lambda a, b, c: (bf16_bits_to_f32(_u(a) & 0xFFFF).astype(np.float64) *
                                         bf16_bits_to_f32(_u(b) & 0xFFFF) +
                                         bf16_bits_to_f32(_u(a) >> 16).astype(np.float64) *
                                         bf16_bits_to_f32(_u(b) >> 16) + c)),
    "v_div_fmas_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: f64(a) * b + c),
    "v_div_fixup_f32": (("f32", "f32", "f32"), "f32", _div_fixup),
    "v_exp_f32": (("f32",), "f32", lambda a: np.exp2(f64(a))),
    "v_log_f32": (("f32",), "f32", lambda a: np.log2(f64(a))),
    "v_rcp_f32": (("f32",), "f32", _rcp),
    "v_rcp_iflag_f32": (("f32",), "f32", _rcp),
    "v_rsq_f32": (("f32",), "f32", lambda a: 1.0 / np.sqrt(f64(a))),
    "v_sqrt_f32": (("f32",), "f32", lambda a: np.sqrt(np.asarray(a, np.float32))),
    "v_floor_f32": (("f32",), "f32", np.floor),
    "v_ceil_f32": (("f32",), "f32", np.ceil),
    "v_trunc_f32": (("f32",), "f32", np.trunc),
    "v_rndne_f32": (("f32",), "f32", np.rint),
    "v_fract_f32": (("f32",), "f32", lambda a: np.minimum(a - np.floor(a), np.float32(0.99999994))),
    "v_frexp_mant_f32": (("f32",), "f32", _frexp_mant),
    "v_frexp_exp_i32_f32": (("f32",), "i32", _frexp_exp),
    "v_cvt_f32_i32": (("i32",), "f32", lambda a: np.asarray(a).astype(np.float32)),
    "v_cvt_f32_u32": (("u32",), "f32", lambda a: np.asarray(a).astype(np.float32)),
    "v_cvt_i32_f32": (("f32",), "i32", _cvt_i32),
    "v_cvt_u32_f32": (("f32",), "u32", _cvt_u32),
    "v_cvt_rpi_i32_f32": (("f32",), "i32", lambda a: _cvt_i32(np.floor(f64(a) + 0.5))),
    "v_cvt_flr_i32_f32": (("f32",), "i32", lambda a: _cvt_i32(np.floor(a))),
    "v_cvt_f32_ubyte0": (("u32",), "f32", lambda a: (_u(a) & 0xFF).astype(np.float32)),
    "v_cvt_f32_ubyte1": (("u32",), "f32", lambda a: ((_u(a) >> 8) & 0xFF).astype(np.float32)),
    "v_cvt_f32_ubyte2": (("u32",), "f32", lambda a: ((_u(a) >> 16) & 0xFF).astype(np.float32)),
    "v_cvt_f32_ubyte3": (("u32",), "f32", lambda a: ((_u(a) >> 24) & 0xFF).astype(np.float32)),
    "v_cvt_f32_f16": (("u32",), "f32", _f16_to_f32),
    "v_cvt_f16_f32": (("f32",), "u32", _f32_to_f16),
    "v_cvt_f32_bf16": (("u32",), "f32", lambda a: ((_u(a) & 0xFFFF) << 16).view(np.float32)),
    "v_cvt_pk_bf16_f32": (("f32", "f32"), "u32",
                          lambda a, b: f32_to_bf16_bits(a) | (f32_to_bf16_bits(b) << 16)),
    "v_cvt_pkrtz_f16_f32": (("f32", "f32"), "u32", lambda a, b: _f32_to_f16_rtz(a) | (_f32_to_f16_rtz(b) << 16)),
    # integer / bit ops
    "v_mov_b32": (("u32",), "u32", lambda a: a),
    "v_not_b32": (("u32",), "u32", lambda a: ~_u(a)),
    "v_bfrev_b32": (("u32",), "u32", lambda a: np.array(
        [int(f"{int(x):032b}"[::-1], 2) for x in np.atleast_1d(a)], np.uint32).reshape(np.shape(a))),
    "v_ffbh_u32": (("u32",), "i32", _ffbh_u32),
    "v_ffbl_b32": (("u32",), "i32", _ffbl),
    "v_bcnt_u32_b32": (("u32", "u32"), "u32", lambda a, b: _bcnt(a).astype(np.int64) + _i(b)),
    "v_add_u32": (("u32", "u32"), "u32", lambda a, b: _i(a) + _i(b)),
    "v_sub_u32": (("u32", "u32"), "u32", lambda a, b: _i(a) - _i(b)),
    "v_subrev_u32": (("u32", "u32"), "u32", lambda a, b: _i(b) - _i(a)),
    "v_add_i32": (("i32", "i32"), "i32", lambda a, b: _i(a) + _i(b)),
    "v_sub_i32": (("i32", "i32"), "i32", lambda a, b: _i(a) - _i(b)),
    "v_and_b32": (("u32", "u32"), "u32", lambda a, b: _u(a) & b),
    "v_or_b32": (("u32", "u32"), "u32", lambda a, b: _u(a) | b),
    "v_xor_b32": (("u32", "u32"), "u32", lambda a, b: _u(a) ^ b),
    "v_xnor_b32": (("u32", "u32"), "u32", lambda a, b: ~(_u(a) ^ b)),
    "v_lshlrev_b32": (("u32", "u32"), "u32", lambda a, b: _u(b) << (_u(a) & 31)),
    "v_lshrrev_b32": (("u32", "u32"), "u32", lambda a, b: _u(b) >> (_u(a) & 31)),
    "v_ashrrev_i32": (("u32", "i32"), "i32", lambda a, b: _i(b) >> _i(_u(a) & 31)),
    "v_max_u32": (("u32", "u32"), "u32", np.maximum),
    "v_min_u32": (("u32", "u32"), "u32", np.minimum),
    "v_max_i32": (("i32", "i32"), "i32", np.maximum),
    "v_min_i32": (("i32", "i32"), "i32", np.minimum),
    "v_mul_lo_u32": (("u32", "u32"), "u32", lambda a, b: _u(a).astype(np.uint64) * _u(b).astype(np.uint64)),
    "v_mul_hi_u32": (("u32", "u32"), "u32",
                     lambda a, b: (_u(a).astype(np.uint64) * _u(b).astype(np.uint64)) >> np.uint64(32)),
    "v_mul_hi_i32": (("i32", "i32"), "i32", lambda a, b: (_i(a) * _i(b)) >> 32),
    "v_mul_u32_u24": (("u32", "u32"), "u32", lambda a, b: _i(_u(a) & 0xFFFFFF) * _i(_u(b) & 0xFFFFFF)),
    "v_mul_hi_u32_u24": (("u32", "u32"), "u32", lambda a, b: (_i(_u(a) & 0xFFFFFF) * _i(_u(b) & 0xFFFFFF)) >> 32),
    "v_mul_i32_i24": (("u32", "u32"), "i32", lambda a, b: _bfe_i(a, 0, 24) * _bfe_i(b, 0, 24)),
    "v_mad_u32_u24": (("u32", "u32", "u32"), "u32",
                      lambda a, b, c: _i(_u(a) & 0xFFFFFF) * _i(_u(b) & 0xFFFFFF) + _i(c)),
    "v_mad_i32_i24": (("u32", "u32", "i32"), "i32", lambda a, b, c: _bfe_i(a, 0, 24) * _bfe_i(b, 0, 24) + _i(c)),
    "v_bfm_b32": (("u32", "u32"), "u32", lambda a, b: ((1 << _i(_u(a) & 31)) - 1) << _i(_u(b) & 31)),
    "v_and_or_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (_u(a) & b) | c),
    "v_or3_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: _u(a) | b | c),
    "v_xad_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: _i(_u(a) ^ b) + _i(c)),
    "v_add3_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: _i(a) + _i(b) + _i(c)),
    "v_lshl_add_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: _i(_u(a) << (_u(b) & 31)) + _i(c)),
    "v_add_lshl_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (_i(a) + _i(b)) << _i(_u(c) & 31)),
    "v_lshl_or_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (_u(a) << (_u(b) & 31)) | c),
    "v_bfe_u32": (("u32", "u32", "u32"), "u32", _bfe_u),
    "v_bfe_i32": (("u32", "u32", "u32"), "i32", _bfe_i),
    "v_bfi_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (_u(a) & b) | (~_u(a) & c)),
    "v_perm_b32": (("u32", "u32", "u32"), "u32", _perm),
    "v_alignbit_b32": (("u32", "u32", "u32"), "u32",
                       lambda a, b, c: ((_u(a).astype(np.uint64) << np.uint64(32)) | _u(b).astype(np.uint64))
                       >> (_u(c) & 31).astype(np.uint64)),
    "v_alignbyte_b32": (("u32", "u32", "u32"), "u32",
                        lambda a, b, c: ((_u(a).astype(np.uint64) << np.uint64(32)) | _u(b).astype(np.uint64))
                        >> (8 * (_u(c) & 3)).astype(np.uint64)),
    "v_max3_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_max3_i32": (("i32", "i32", "i32"), "i32", lambda a, b, c: np.maximum(np.maximum(a, b), c)),
    "v_min3_i32": (("i32", "i32", "i32"), "i32", lambda a, b, c: np.minimum(np.minimum(a, b), c)),
    "v_med3_i32": (("i32", "i32", "i32"), "i32",
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    "v_med3_u32": (("u32", "u32", "u32"), "u32",
                   lambda a, b, c: np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))),
    # 16-bit integer ops (gfx9: the result's high 16 bits are zeroed)
    "v_add_u16": (("u32", "u32"), "u32", lambda a, b: (_i(a) + _i(b)) & 0xFFFF),
    "v_sub_u16": (("u32", "u32"), "u32", lambda a, b: (_i(a) - _i(b)) & 0xFFFF),
    "v_subrev_u16": (("u32", "u32"), "u32", lambda a, b: (_i(b) - _i(a)) & 0xFFFF),
    "v_mul_lo_u16": (("u32", "u32"), "u32", lambda a, b: (_i(_u(a) & 0xFFFF) * _i(_u(b) & 0xFFFF)) & 0xFFFF),
    "v_lshlrev_b16": (("u32", "u32"), "u32", lambda a, b: (_i(_u(b) & 0xFFFF) << _i(_u(a) & 15)) & 0xFFFF),
    "v_lshrrev_b16": (("u32", "u32"), "u32", lambda a, b: (_i(_u(b) & 0xFFFF) >> _i(_u(a) & 15))),
    "v_ashrrev_i16": (("u32", "u32"), "u32", lambda a, b: (_bfe_i(b, 0, 16) >> _i(_u(a) & 15)) & 0xFFFF),
    "v_max_u16": (("u32", "u32"), "u32", lambda a, b: np.maximum(_u(a) & 0xFFFF, _u(b) & 0xFFFF)),
    "v_min_u16": (("u32", "u32"), "u32", lambda a, b: np.minimum(_u(a) & 0xFFFF, _u(b) & 0xFFFF)),
    # 64-bit
    "v_mov_b64": (("u64",), "u64", lambda a: a),
    "v_lshlrev_b64": (("u32", "u64"), "u64", lambda a, b: _u64(b) << (_u(a) & 63).astype(np.uint64)),
    "v_lshrrev_b64": (("u32", "u64"), "u64", lambda a, b: _u64(b) >> (_u(a) & 63).astype(np.uint64)),
    "v_ashrrev_i64": (("u32", "i64"), "i64", lambda a, b: np.asarray(b, np.int64) >> (_u(a) & 63).astype(np.int64)),
    "v_lshl_add_u64": (("u64", "u32", "u64"), "u64",
                       lambda a, b, c: (_u64(a) << (_u(b) & 63).astype(np.uint64)) + _u64(c)),
    "v_add_f64": (("f64", "f64"), "f64", np.add),
    "v_mul_f64": (("f64", "f64"), "f64", np.multiply),
    "v_fma_f64": (("f64", "f64", "f64"), "f64", lambda a, b, c: a * b + c),
    "v_max_f64": (("f64", "f64"), "f64", np.fmax),
    "v_min_f64": (("f64", "f64"), "f64", np.fmin),
    "v_cvt_f64_f32": (("f32",), "f64", lambda a: f64(a)),
    "v_cvt_f32_f64": (("f64",), "f32", lambda a: np.asarray(a, np.float32)),
    "v_cvt_f64_i32": (("i32",), "f64", lambda a: f64(a)),
    "v_cvt_f64_u32": (("u32",), "f64", lambda a: f64(a)),
}


def _u64(x):
    return np.asarray(x, np.uint64)


# Ops whose dst is also an input (VOP2 accumulate forms): (name -> index of the source the dst provides)
_ACC = {"v_fmac_f32": 2}

_FLOAT_OPS = {k for k, v in VOP.items() if v[1] == "f32" and all(t == "f32" for t in v[0])}


# ----------------------------------------------------------------------------------------------- DPP / SDWA

def _dpp_lanes(mods: dict) -> np.ndarray:
    """Source lane of each lane for a DPP control (-1: invalid)."""
    l = LANES
    if "quad_perm" in mods:
        qp = mods["quad_perm"]
        return (l & ~3) | np.array(qp)[l & 3]
    for k in ("row_shl", "row_shr", "row_ror"):
        if k in mods:
            n = mods[k]
            if k == "row_shl":
                return np.where((l % 16) + n < 16, l + n, -1)
            if k == "row_shr":
                return np.where((l % 16) - n >= 0, l - n, -1)
            return (l & ~15) | ((l - n) & 15)
    if "wave_shl" in mods:
        return np.where(l + 1 < 64, l + 1, -1)
    if "wave_shr" in mods:
        return np.where(l - 1 >= 0, l - 1, -1)
    if "wave_rol" in mods:
        return (l + 1) % 64
    if "wave_ror" in mods:
        return (l - 1) % 64
    if "row_mirror" in mods:
        return (l & ~15) | (15 - (l & 15))
    if "row_half_mirror" in mods:
        return (l & ~7) | (7 - (l & 7))
    if "row_newbcast" in mods:  # gfx90a+: lane n of each row to the whole row
        return (l & ~15) | (mods["row_newbcast"] & 15)
    if "row_bcast" in mods:
        n = mods["row_bcast"]
        if n == 15:
            return np.where(l >= 16, (l & ~15) - 1, -1)
        if n == 31:
            return np.where(l >= 32, 31, -1)
    raise EmuError(f"unsupported DPP control in {sorted(mods)}")


_DPP_MODS = {"quad_perm", "row_shl", "row_shr", "row_ror", "wave_shl", "wave_shr", "wave_rol", "wave_ror",
             "row_mirror", "row_half_mirror", "row_bcast", "row_newbcast", "row_mask", "bank_mask", "bound_ctrl"}


def _dpp_wrap(ins: Instr, raw):
    """Returns (src0 reader, write-mask fn) for a DPP instruction."""
    src = _dpp_lanes(ins.mods)
    valid = src >= 0
    srcc = np.where(valid, src, 0)
    rm = ins.mods.get("row_mask", 0xF)
    bm = ins.mods.get("bank_mask", 0xF)
    en = (((rm >> (LANES // 16)) & 1) == 1) & (((bm >> ((LANES >> 2) & 3)) & 1) == 1)
    bound = "bound_ctrl" in ins.mods

    def reader(w):
        x = _b64(raw(w))[srcc]
        ok = valid & w.mask()[srcc]
        return np.where(ok, x, x.dtype.type(0)).astype(x.dtype)

    def wmask(w):
        m = w.mask() & en
        if not bound:
            m = m & valid & w.mask()[srcc]
        return m
    return reader, wmask


_SEL = {"DWORD": (0, 32), "WORD_0": (0, 16), "WORD_1": (16, 16), "BYTE_0": (0, 8), "BYTE_1": (8, 8),
        "BYTE_2": (16, 8), "BYTE_3": (24, 8)}


def _sdwa_src(op: Operand, sel: str, raw):
    if sel not in _SEL:
        raise EmuError(f"bad SDWA select {sel!r}")
    sh, wd = _SEL[sel]
    if wd == 32:
        return raw
    mask = (1 << wd) - 1
    if op.sext:
        return lambda w: (((_i(raw(w)) >> sh) & mask) ^ (1 << (wd - 1))) - (1 << (wd - 1)) & M32
    return lambda w: (np.asarray(raw(w), np.uint32) >> sh) & np.uint32(mask)


# ----------------------------------------------------------------------------------------------- compile

class Compiler:
    """Compiles instructions of one program. ``labels``: label -> instruction index."""

    def __init__(self, labels: dict, sem: Semantics):
        self.labels = labels
        self.sem = sem

    # result: (fn, touched_keys, queue, dst_keys); queue in {None, "vm", "lgkm" (LDS), "smem"}
    def compile(self, ins: Instr):
        name = ins.mnemonic
        keys = []
        for op in ins.operands:
            keys += _reg_keys(op)
        touched = frozenset(keys)
        for prefix, meth in _DISPATCH:
            if name.startswith(prefix):
                try:
                    out = meth(self, ins)
                except EmuError as e:
                    if name in _CALLS or (any(o.kind == "label" for o in ins.operands) and
                                          not (name == "s_branch" or name.startswith("s_cbranch_"))):
                        # Known but unsupported (calls, pc-relative symbol arithmetic): the program still
                        # loads (other kernels or functions may be fine); executing it is the error.
                        msg = str(e)

                        def deferred(w, msg=msg):
                            raise EmuError(msg)
                        return deferred, touched, None, frozenset()
                    raise
                if out is not None:
                    fn, q, dsts = out if isinstance(out, tuple) else (out, None, ())
                    return fn, touched, q, frozenset(dsts)
        raise EmuError(f"unknown instruction {name!r}")

    # ------------------------------------------------------------------ scalar
    def c_sopp(self, ins: Instr):
        n = ins.mnemonic
        if n in ("s_nop", "s_setprio", "s_sleep", "s_dcache_wb", "s_dcache_inv", "s_icache_inv", "s_sendmsg",
                 "s_ttracedata", "s_set_gpr_idx_off"):
            return lambda w: None
        if n == "s_waitcnt":
            vm = ins.mods.get("vmcnt", 63)
            lgkm = ins.mods.get("lgkmcnt", 15)

            def wait(w):
                if w.vmq or w.lgkmq:
                    w.retire(vm, lgkm)
            return wait
        _check_mods(ins, set())
        if n == "s_barrier":
            return lambda w: BARRIER
        if n == "s_endpgm":
            return lambda w: ENDPGM
        if n == "s_branch" or n.startswith("s_cbranch_"):
            _need(ins, 1)
            lab = ins.operands[0]
            if lab.kind != "label" or lab.name not in self.labels:
                raise EmuError(f"{n}: unknown branch target {lab.text!r}")
            t = self.labels[lab.name]
            cond = n[len("s_cbranch_"):] if n != "s_branch" else ""
            if cond == "":
                return lambda w: t
            if cond == "scc0":
                return lambda w: t if w.scc == 0 else None
            if cond == "scc1":
                return lambda w: t if w.scc == 1 else None
            if cond == "vccz":
                return lambda w: t if (w.s[VCC] | w.s[VCC + 1]) == 0 else None
            if cond == "vccnz":
                return lambda w: t if (w.s[VCC] | w.s[VCC + 1]) != 0 else None
            if cond == "execz":
                return lambda w: t if (w.s[EXEC] | w.s[EXEC + 1]) == 0 else None
            if cond == "execnz":
                return lambda w: t if (w.s[EXEC] | w.s[EXEC + 1]) != 0 else None
            raise EmuError(f"unknown branch {n}")
        return None

    def c_salu(self, ins: Instr):
        n = ins.mnemonic
        ops = ins.operands
        _check_mods(ins, set())
        if n in _CALLS:
            raise EmuError(f"{n}: function calls, traps and pc-relative code are not supported by the emulator")
        if n in ("s_setreg_b32", "s_setreg_imm32_b32", "s_denorm_mode", "s_round_mode"):
            return lambda w: None  # mode register: the emulator always keeps denormals and rounds to nearest even
        if n == "s_getreg_b32":  # the emulator keeps no mode/status registers: reads give 0
            wr = swrite(ops[0])
            return lambda w: wr(w, 0)
        if n in ("s_memtime", "s_memrealtime"):
            wr = swrite(ops[0], 64)

            def t(w):
                w.clock += 1
                wr(w, w.clock)
            return t
        if n.startswith("s_cmp_") or n.startswith("s_cmpk_") or n.startswith("s_bitcmp"):
            return self._scmp(ins)
        if n.endswith("_saveexec_b64") or n.endswith("_wrexec_b64"):
            return self._saveexec(ins)
        if n in _SOP:
            width, nsrc, fn = _SOP[n]
            if n.startswith("s_movk") or n.startswith("s_addk") or n.startswith("s_mulk") or n.startswith("s_cmovk"):
                # SOPK: dst, simm16 (sign-extended), dst is also a source for addk/mulk
                _need(ins, 2)
                imm = ops[1].value
                if not isinstance(imm, int):
                    raise EmuError(f"{n}: immediate expected")
                imm = imm - 0x10000 if imm >= 0x8000 else imm
                srcs = [sread(ops[0]), (lambda w, c=imm & M32: c)] if nsrc == 2 else [(lambda w, c=imm & M32: c)]
            else:
                _need(ins, 1 + nsrc)
                wid = width if isinstance(width, tuple) else (width,) * (nsrc + 1)
                srcs = [sread(o, wid[1 + j]) for j, o in enumerate(ops[1:])]
            dw = width[0] if isinstance(width, tuple) else width
            wr = swrite(ops[0], dw)
            if nsrc == 1:
                s0 = srcs[0]

                def f1(w):
                    r, scc = fn(w, s0(w))
                    if scc is not None:
                        w.scc = scc
                    if r is not None:
                        wr(w, r)
                return f1
            s0, s1 = srcs

            def f2(w):
                r, scc = fn(w, s0(w), s1(w))
                if scc is not None:
                    w.scc = scc
                if r is not None:
                    wr(w, r)
            return f2
        return None

    def _scmp(self, ins: Instr):
        n = ins.mnemonic
        _need(ins, 2)
        if n.startswith("s_bitcmp"):
            w64 = n.endswith("b64")
            a = sread(ins.operands[0], 64 if w64 else 32)
            b = sread(ins.operands[1])
            want = 0 if n.startswith("s_bitcmp0") else 1

            def bc(w):
                w.scc = int(((a(w) >> (b(w) & (63 if w64 else 31))) & 1) == want)
            return bc
        mm = re.match(r"s_cmpk?_(eq|lg|gt|ge|lt|le)_(i32|u32|u64)$", n)
        if not mm:
            raise EmuError(f"unknown instruction {n!r}")
        op, t = mm.groups()
        width = 64 if t == "u64" else 32
        a = sread(ins.operands[0], width)
        if n.startswith("s_cmpk"):
            imm = ins.operands[1].value
            if t == "i32":
                imm = imm - 0x10000 if imm >= 0x8000 else imm
            b = lambda w, c=imm: c
        else:
            b = sread(ins.operands[1], width)
        signed = t == "i32"
        cmpf = {"eq": lambda x, y: x == y, "lg": lambda x, y: x != y, "gt": lambda x, y: x > y,
                "ge": lambda x, y: x >= y, "lt": lambda x, y: x < y, "le": lambda x, y: x <= y}[op]
        if signed:
            def sc(w):
                x, y = a(w), b(w) & M32
                x = x - (1 << 32) if x >> 31 else x
                y = y - (1 << 32) if y >> 31 else y
                w.scc = int(cmpf(x, y))
        else:
            def sc(w):
                w.scc = int(cmpf(a(w), b(w)))
        return sc

    def _saveexec(self, ins: Instr):
        n = ins.mnemonic
        _need(ins, 2)
        kind = n[2:n.index("_saveexec")] if "_saveexec" in n else n[2:n.index("_wrexec")]
        src = sread(ins.operands[1], 64)
        wr = swrite(ins.operands[0], 64)
        f = {"and": lambda s, e: s & e, "or": lambda s, e: s | e, "xor": lambda s, e: s ^ e,
             "andn2": lambda s, e: s & ~e, "orn2": lambda s, e: s | ~e, "nand": lambda s, e: ~(s & e),
             "nor": lambda s, e: ~(s | e), "xnor": lambda s, e: ~(s ^ e), "andn1": lambda s, e: ~s & e,
             "orn1": lambda s, e: ~s | e}.get(kind)
        if f is None:
            raise EmuError(f"unknown instruction {n!r}")
        wrexec = n.endswith("_wrexec_b64")

        def se(w):
            e = w.s[EXEC] | (w.s[EXEC + 1] << 32)
            s = src(w)
            new = f(s, e) & M64
            if not wrexec:
                wr(w, e)
            w.s[EXEC] = new & M32
            w.s[EXEC + 1] = new >> 32
            if wrexec:
                wr(w, new)
            w.scc = int(new != 0)
        return se

    def c_smem(self, ins: Instr):
        n = ins.mnemonic
        m = re.match(r"s_(buffer_)?load_dword(x(\d+))?$", n)
        if not m:
            return None
        _check_mods(ins, {"glc", "offset", "nv", "sc0", "sc1", "nt"})
        cnt = int(m.group(3) or 1)
        dst, base = ins.operands[0], ins.operands[1]
        if dst.kind != "s" or dst.count != cnt:
            raise EmuError(f"{n}: destination must be {cnt} SGPRs")
        rb = sread(base, 64) if not m.group(1) else None
        offs = [sread(o) for o in ins.operands[2:]]
        imm = ins.mods.get("offset", 0)
        di = dst.index
        bi = base.index
        buffer = bool(m.group(1))

        def ld(w):
            off = imm + sum(o(w) for o in offs)
            if buffer:
                d0, d1, nrec = w.s[bi], w.s[bi + 1], w.s[bi + 2]
                addr = d0 | ((d1 & 0xFFFF) << 32)
                vals = []
                for j in range(cnt):
                    o = (off & ~3) + 4 * j
                    if o + 4 <= nrec:
                        vals.append(int.from_bytes(w.machine.mem.read(addr + o, 4), "little"))
                    else:
                        vals.append(0)
            else:
                addr = (rb(w) + off) & ~3 & M64
                data = np.frombuffer(w.machine.mem.read(addr, 4 * cnt), "<u4")
                vals = [int(x) for x in data]
            for j in range(cnt):
                w.s[di + j] = vals[j]
        return ld, "smem", _reg_keys(dst)

    # ------------------------------------------------------------------ vector ALU
    def c_valu(self, ins: Instr):
        n = ins.mnemonic
        enc = ""
        base = n
        for suf in ("_e32", "_e64", "_sdwa", "_dpp"):
            if n.endswith(suf):
                enc, base = suf[1:], n[: -len(suf)]
                break
        if base.startswith("v_mfma"):
            return self._mfma(ins, base)
        if base.startswith("v_cmp"):
            return self._vcmp(ins, base, enc)
        special = _VSPECIAL.get(base)
        if special is not None:
            return special(self, ins, base, enc)
        if base.startswith("v_pk_") and (base.endswith("_f32") or base == "v_pk_mov_b32"):
            return self._pk_f32(ins, base)
        spec = VOP.get(base)
        if spec is None:
            return None
        srct, dstt, fn = spec
        ops = ins.operands
        nsrc = len(srct)
        acc = _ACC.get(base)
        if acc is not None and len(ops) == nsrc:  # v_fmac_f32 d, a, b  (c = d)
            ops = ops + [ops[0]]
        _need(Instr(n, ops, ins.mods, ins.line, ins.text), 1 + nsrc)
        dst = ops[0]
        srcs = ops[1:]
        allowed = {"clamp", "mul", "div"}
        raws = [None] * nsrc
        wmask = None
        if enc == "dpp":
            allowed |= _DPP_MODS
            wide0 = srct[0] in ("u64", "i64", "f64")
            if wide0 and "row_newbcast" not in ins.mods:
                raise EmuError(f"{n}: 64-bit DPP supports only row_newbcast")
            r0, wmask = _dpp_wrap(ins, rd64(srcs[0]) if wide0 else rd32(srcs[0]))
            raws[0] = r0
        if enc == "sdwa":
            allowed |= {"src0_sel", "src1_sel", "dst_sel", "dst_unused"}
            for j in range(min(nsrc, 2)):
                raws[j] = _sdwa_src(srcs[j], ins.mods.get(f"src{j}_sel", "DWORD"), rd32(srcs[j]))
        _check_mods(ins, allowed)
        readers = [typed_reader(o, t, raws[j]) for j, (o, t) in enumerate(zip(srcs, srct))]
        post = None
        if "clamp" in ins.mods or "mul" in ins.mods or "div" in ins.mods:
            if dstt != "f32":
                raise EmuError(f"{n}: clamp/omod only supported on f32 results")
            scale = float(ins.mods.get("mul", 1)) / float(ins.mods.get("div", 1))
            clamp = "clamp" in ins.mods

            def _post(r, scale=scale, clamp=clamp):
                r = np.asarray(r, np.float32) * np.float32(scale)
                if clamp:
                    r = np.where(np.isnan(r), np.float32(0), np.clip(r, 0, 1))
                return r
            post = _post
        wide = dstt in ("u64", "i64", "f64")
        write = vwrite(dst, 2 if wide else 1)
        if enc == "sdwa" and not wide:
            write = _sdwa_dst(dst, ins.mods.get("dst_sel", "DWORD"), ins.mods.get("dst_unused", "UNUSED_PRESERVE"),
                              write)
        getmask = wmask or (lambda w: w.mask())
        if nsrc == 1:
            a = readers[0]

            def f(w):
                r = fn(a(w))
                if post:
                    r = post(r)
                write(w, _to_bits(r, dstt), getmask(w))
        elif nsrc == 2:
            a, b = readers

            def f(w):
                r = fn(a(w), b(w))
                if post:
                    r = post(r)
                write(w, _to_bits(r, dstt), getmask(w))
        else:
            a, b, c = readers

            def f(w):
                r = fn(a(w), b(w), c(w))
                if post:
                    r = post(r)
                write(w, _to_bits(r, dstt), getmask(w))
        return f

    def _vcmp(self, ins: Instr, base: str, enc: str):
        if base in ("v_cmp_class_f32", "v_cmpx_class_f32"):
            return self._vcmp_class(ins, base)
        m = re.match(r"v_cmp(x?)_(\w+)_(f32|i32|u32|i64|u64|f64|f16|i16|u16)$", base)
        if not m:
            return None
        x, op, t = m.groups()
        _need(ins, 3)
        _check_mods(ins, {"clamp"} if enc != "sdwa" else {"src0_sel", "src1_sel"})
        sdst = ins.operands[0]
        if sdst.kind != "s":
            raise EmuError(f"{base}: first operand must be an SGPR pair (vcc or s[n:n+1])")
        if enc == "dpp" or (enc == "sdwa" and t not in ("f32", "i32", "u32")):
            raise EmuError(f"{base}: this DPP/SDWA compare form is not supported by the emulator")
        if t in ("f16", "i16", "u16"):  # low 16 bits of each source
            a, b = (_half_reader(o, t) for o in ins.operands[1:3])
        elif enc == "sdwa":
            a, b = (typed_reader(o, t, _sdwa_src(o, ins.mods.get(f"src{j}_sel", "DWORD"), rd32(o)))
                    for j, o in enumerate(ins.operands[1:3]))
        else:
            a = typed_reader(ins.operands[1], t)
            b = typed_reader(ins.operands[2], t)
        if t[0] == "f":
            fn = {"f": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool),
                  "lt": np.less, "eq": np.equal, "le": np.less_equal, "gt": np.greater,
                  "lg": lambda a, b: (a < b) | (a > b), "ge": np.greater_equal,
                  "o": lambda a, b: ~(np.isnan(a) | np.isnan(b)), "u": lambda a, b: np.isnan(a) | np.isnan(b),
                  "nge": lambda a, b: ~(a >= b), "nlg": lambda a, b: ~((a < b) | (a > b)),
                  "ngt": lambda a, b: ~(a > b), "nle": lambda a, b: ~(a <= b), "neq": lambda a, b: ~(a == b),
                  "nlt": lambda a, b: ~(a < b), "tru": lambda a, b: np.ones(np.broadcast(a, b).shape, bool)}.get(op)
        else:
            fn = {"f": lambda a, b: np.zeros(np.broadcast(a, b).shape, bool), "lt": np.less, "eq": np.equal,
                  "le": np.less_equal, "gt": np.greater, "ne": np.not_equal, "lg": np.not_equal,
                  "ge": np.greater_equal, "t": lambda a, b: np.ones(np.broadcast(a, b).shape, bool)}.get(op)
        if fn is None:
            raise EmuError(f"unknown compare {base}")
        wr = swrite(sdst, 64)
        is_x = x == "x"

        def f(w):
            m = w.mask()
            r = _b64(fn(a(w), b(w))) & m
            val = mask_to_int(r)
            wr(w, val)
            if is_x:
                w.s[EXEC] = val & M32
                w.s[EXEC + 1] = val >> 32
        return f

    def _vcmp_class(self, ins: Instr, base: str):
        _need(ins, 3)
        a = typed_reader(ins.operands[1], "f32")
        b = typed_reader(ins.operands[2], "u32")
        wr = swrite(ins.operands[0], 64)
        is_x = base.startswith("v_cmpx")

        def f(w):
            x = _b64(a(w))
            k = _b64(_u(b(w)))
            bits = x.view(np.uint32)
            sub = (np.abs(x) < np.float32(1.1754944e-38)) & (x != 0)
            neg = (bits >> 31) == 1
            cls = [np.isnan(x) & ((bits & 0x400000) == 0), np.isnan(x) & ((bits & 0x400000) != 0),
                   np.isneginf(x), neg & np.isfinite(x) & ~sub & (x != 0), neg & sub, neg & (x == 0),
                   ~neg & (x == 0), ~neg & sub, ~neg & np.isfinite(x) & ~sub & (x != 0), np.isposinf(x)]
            r = np.zeros(64, bool)
            for j, c in enumerate(cls):
                r |= c & (((k >> j) & 1) == 1)
            val = mask_to_int(r & w.mask())
            wr(w, val)
            if is_x:
                w.s[EXEC] = val & M32
                w.s[EXEC + 1] = val >> 32
        return f

    def _pk_f32(self, ins: Instr, base: str):
        fn = {"v_pk_add_f32": lambda a, b, c: a + b, "v_pk_mul_f32": lambda a, b, c: a * b,
              "v_pk_fma_f32": lambda a, b, c: np.float64(a) * b + c}.get(base)
        if base == "v_pk_mov_b32":
            fn = None
        _check_mods(ins, {"op_sel", "op_sel_hi", "neg_lo", "neg_hi"})
        ops = ins.operands
        if base == "v_pk_mov_b32":
            _need(ins, 3)
            nsrc = 2
        else:
            if fn is None:
                return None
            nsrc = 3 if base == "v_pk_fma_f32" else 2
            _need(ins, 1 + nsrc)
        sel = ins.mods.get("op_sel", [0] * nsrc)
        selhi = ins.mods.get("op_sel_hi", [1] * nsrc)
        nlo = ins.mods.get("neg_lo", [0] * nsrc)
        nhi = ins.mods.get("neg_hi", [0] * nsrc)
        readers = []
        for j, o in enumerate(ops[1:]):
            if o.kind in ("v", "a", "s"):
                idx = o.index

                def rdw(w, half, o=o, idx=idx):
                    if o.kind == "s":
                        return np.uint32(w.s[idx + half])
                    return w.v[_vidx(o) + half]
            elif o.kind == "const":
                c = np.uint32(const_bits(o.value, 32))

                def rdw(w, half, c=c):
                    return c
            else:
                raise EmuError(f"bad operand {o.text!r}")
            readers.append(rdw)
        write = vwrite(ops[0], 2)

        def f(w):
            lo, hi = [], []
            for j, r in enumerate(readers):
                a = r(w, sel[j]).view(np.float32) if base != "v_pk_mov_b32" else r(w, sel[j])
                b = r(w, selhi[j]).view(np.float32) if base != "v_pk_mov_b32" else r(w, selhi[j])
                if base != "v_pk_mov_b32":
                    a = -a if nlo[j] else a
                    b = -b if nhi[j] else b
                lo.append(a)
                hi.append(b)
            if base == "v_pk_mov_b32":
                # v_pk_mov_b32 d, s0, s1 op_sel:[x,y]: d.lo = s0[x], d.hi = s1[y]
                rlo = readers[0](w, sel[0])
                rhi = readers[1](w, sel[1])
                res = np.stack([_b64(rlo), _b64(rhi)])
            else:
                if nsrc == 2:
                    lo.append(None)
                    hi.append(None)
                rl = np.asarray(fn(*lo), np.float32)
                rh = np.asarray(fn(*hi), np.float32)
                res = np.stack([_b64(rl), _b64(rh)]).view(np.uint32)
            write(w, res, w.mask())
        return f

    # ------------------------------------------------------------------ MFMA
    def _mfma(self, ins: Instr, base: str):
        shape = MFMA_SHAPES.get(base)
        if shape is None:
            raise EmuError(f"unknown instruction {ins.mnemonic!r} (MFMA variant not supported)")
        scaled = base.startswith("v_mfma_scale")
        _check_mods(ins, {"cbsz", "abid", "blgp", "op_sel", "op_sel_hi"} if scaled else {"cbsz", "abid", "blgp"})
        ops = ins.operands
        _need(ins, 6 if scaled else 4)
        d, a, b, c = ops[:4]
        if d.count != shape.cd_regs:
            raise EmuError(f"{base}: D must be {shape.cd_regs} registers")
        cbsz, abid, blgp = ins.mods.get("cbsz", 0), ins.mods.get("abid", 0), ins.mods.get("blgp", 0)
        if shape.in_type == "f8f6f4":
            afmt, bfmt = F8F6F4_FORMATS.get(cbsz), F8F6F4_FORMATS.get(blgp)
            if afmt not in ("fp8", "bf8") or bfmt not in ("fp8", "bf8"):
                raise EmuError(f"{base}: cbsz/blgp formats {afmt}/{bfmt} (fp6/fp4) are not supported by the emulator")
            if a.count != 8 or b.count != 8:
                raise EmuError(f"{base}: fp8/bf8 A and B must be 8-register tuples")
        else:
            if cbsz or abid or blgp:
                raise EmuError(f"{base}: cbsz/abid/blgp broadcast is not supported (zyfa uses 0)")
            if "_" in shape.in_type:
                afmt, bfmt = shape.in_type.split("_")
            else:
                afmt = bfmt = shape.in_type
            if a.count != shape.ab_regs or b.count != shape.ab_regs:
                raise EmuError(f"{base}: A and B must be {shape.ab_regs}-register tuples")
        ai, bi, di = _vidx(a), _vidx(b), _vidx(d)
        if c.kind == "const":
            cv = c.value
            cconst = np.full((shape.dim, shape.dim), np.float32(cv) if isinstance(cv, float) else
                             np.array([cv & M32], np.uint32).view(np.float32)[0], np.float32)
            ci = None
        else:
            if c.count != shape.cd_regs:
                raise EmuError(f"{base}: C must be {shape.cd_regs} registers")
            ci = _vidx(c)
            if not (ci == di or ci + c.count <= di or di + d.count <= ci):
                raise EmuError(f"{base}: C and D partially overlap")
        dim, k = shape.dim, shape.k
        na, nb, nc = a.count, b.count, shape.cd_regs
        mode = self.sem.mfma_accumulate
        sa_i = sb_i = None
        if scaled:
            sa_op, sb_op = ops[4], ops[5]
            if sa_op.kind != "v" or sb_op.kind != "v":
                raise EmuError(f"{base}: scale operands must be VGPRs (gfx950-facts §0, LLVM PR #158117)")
            sa_i, sb_i = sa_op.index, sb_op.index
            osel = ins.mods.get("op_sel", [0, 0, 0])
            oshi = ins.mods.get("op_sel_hi", [0, 0, 0])
            policy = self.sem.mfma_scale_byte
            if policy == "strict":
                if any(osel[:2]) or any(oshi[:2]):
                    raise EmuError(f"{base}: non-zero op_sel/op_sel_hi on scale operands has a disputed meaning "
                                   "(gfx950-facts §1.4); Semantics.mfma_scale_byte='llvm' or 'byte0' chooses one")
                bytes_ = (0, 0)
            elif policy == "llvm":
                bytes_ = (osel[0] | (oshi[0] << 1), osel[1] | (oshi[1] << 1))
            else:
                bytes_ = (0, 0)
            ff_nan = self.sem.e8m0_ff == "nan"
        nblk = k // 32
        exec_error = self.sem.mfma_partial_exec == "error"

        def f(w):
            if exec_error and (w.s[EXEC] & w.s[EXEC + 1]) != M32:
                raise EmuError(f"{base} issued with EXEC = 0x{w.s[EXEC] | (w.s[EXEC + 1] << 32):016x}; whether "
                               "MFMA honours EXEC is unverified (Semantics.mfma_partial_exec)")
            A = gather_matrix(w.v[ai:ai + na], dim, k, afmt)
            Bt = gather_matrix(w.v[bi:bi + nb], dim, k, bfmt)
            C = cconst if ci is None else c_to_matrix(w.v[ci:ci + nc], dim)
            sa = sb = None
            if scaled:
                lane = np.arange(dim)
                sa = np.empty((dim, nblk))
                sb = np.empty((dim, nblk))
                for blk in range(nblk):
                    ca = (w.v[sa_i][dim * blk + lane] >> (8 * bytes_[0])) & 0xFF
                    cb = (w.v[sb_i][dim * blk + lane] >> (8 * bytes_[1])) & 0xFF
                    sa[:, blk] = np.where((ca == 255) & ff_nan, np.nan, ca.astype(np.float64) - 127)
                    sb[:, blk] = np.where((cb == 255) & ff_nan, np.nan, cb.astype(np.float64) - 127)
            D = mfma_compute(A, Bt, C, mode, sa, sb)
            w.v[di:di + nc] = matrix_to_d(D, dim)
        return f

    # ------------------------------------------------------------------ memory
    def c_global(self, ins: Instr):
        n = ins.mnemonic
        if n.startswith("global_load_lds_"):
            return self._global_lds(ins)
        m = re.match(r"(global|flat)_(load|store)_(dword(x[234])?|ubyte|sbyte|ushort|sshort|short|byte|"
                     r"short_d16(_hi)?|ubyte_d16(_hi)?|sbyte_d16(_hi)?|byte_d16_hi)$", n)
        if not m:
            if n.startswith(("global_atomic", "flat_atomic")):
                raise EmuError(f"unknown instruction {n!r} (atomics are not supported by the emulator)")
            return None
        _check_mods(ins, {"offset", "sc0", "sc1", "nt", "glc", "slc"})
        seg, kind, t = m.group(1), m.group(2), m.group(3)
        size, fmt = _mem_type(t)
        ops = ins.operands
        imm = ins.mods.get("offset", 0)
        if kind == "load":
            dst, vaddr = ops[0], ops[1]
            saddr = ops[2] if len(ops) > 2 else Operand("off")
        else:
            vaddr, data = ops[0], ops[1]
            saddr = ops[2] if len(ops) > 2 else Operand("off")
        if seg == "flat" or saddr.kind == "off":
            if vaddr.count != 2:
                raise EmuError(f"{n}: 64-bit address VGPR pair expected")
            ra = rd64(vaddr)
            addr = lambda w: (ra(w).astype(np.int64) + imm).astype(np.uint64)
        else:
            rv = rd32(vaddr)
            rs = sread(saddr, 64)
            addr = lambda w: (np.uint64(rs(w)) + rv(w).astype(np.uint64) + np.uint64(imm & M64)) \
                if imm >= 0 else (np.uint64(rs(w)) + rv(w).astype(np.uint64) - np.uint64(-imm))
        what = ins.text
        if kind == "load":
            nreg = max(1, size // 4)
            di = _vidx(dst)

            def ld(w):
                mk = w.mask()
                if not mk.any():
                    return
                a = _b64(addr(w))[mk]
                raw = w.machine.mem.gather(a, size, what)
                _load_result(w, di, nreg, raw, fmt, mk)
            return ld, "vm", _reg_keys(dst)
        rdata = _store_reader(data, size, fmt)

        def st(w):
            mk = w.mask()
            if not mk.any():
                return
            a = _b64(addr(w))[mk]
            w.machine.mem.scatter(a, rdata(w)[mk], what)
        return st, "vm", ()

    def _global_lds(self, ins: Instr):
        """global_load_lds_{dword,dwordx3,dwordx4,ubyte,sbyte,ushort,sshort} vaddr, saddr|off [offset:N]:
        LDS-DMA; lane l's data goes to LDS byte M0 + N + l * size (gfx950-facts §6: per-lane placement
        [UNVERIFIED]); completes on vmcnt. Sub-dword types are zero/sign-extended to a dword."""
        n = ins.mnemonic
        m = re.match(r"global_load_lds_(dword(x[34])?|ubyte|sbyte|ushort|sshort)$", n)
        if not m:
            return None
        _check_mods(ins, {"offset", "sc0", "sc1", "nt"})
        size, fmt = _mem_type(m.group(1))
        _need(ins, 2)
        vaddr, saddr = ins.operands
        imm = ins.mods.get("offset", 0)
        if saddr.kind == "off":
            ra = rd64(vaddr)
            addr = lambda w: (ra(w).astype(np.int64) + imm).astype(np.uint64)
        else:
            rv = rd32(vaddr)
            rs = sread(saddr, 64)
            addr = lambda w: (np.int64(rs(w)) + rv(w).astype(np.int64) + imm).astype(np.uint64)
        what = ins.text
        out = max(size, 4)
        m0mask = 0xFFFF if self.sem.lds_dma_m0_bits == 16 else M32

        def ld(w):
            mk = w.mask()
            if not mk.any():
                return
            raw = w.machine.mem.gather(_b64(addr(w))[mk], size, what)
            if size < 4:
                val = raw[:, 0].astype(np.int64) if size == 1 else \
                    raw[:, 0].astype(np.int64) | (raw[:, 1].astype(np.int64) << 8)
                if fmt == "s":
                    sb = 8 * size
                    val = (val ^ (1 << (sb - 1))) - (1 << (sb - 1))
                raw = np.ascontiguousarray((val & M32).astype("<u4")).view(np.uint8).reshape(-1, 4)
            idx = w.lds.dma_scatter((w.s[M0] & m0mask) + imm + LANES[mk] * out, raw, what, w.wave_id)
            w.vm_push(idx)
        return ld, None, ()

    def c_scratch(self, ins: Instr):
        """scratch_load_* vdst, vaddr|off, saddr|off [offset:N] / scratch_store_* vaddr|off, vdata, saddr|off:
        per-lane private memory (gfx950's architected flat scratch); lane l accesses byte
        vaddr[l] + saddr + N of its own ``.amdhsa_private_segment_fixed_size``-byte segment (outside it:
        EmuError)."""
        n = ins.mnemonic
        m = re.match(r"scratch_(load|store)_(dword(x[234])?|ubyte|sbyte|ushort|sshort|short|byte|"
                     r"short_d16(_hi)?|ubyte_d16(_hi)?|sbyte_d16(_hi)?|byte_d16_hi)$", n)
        if not m:
            return None
        _check_mods(ins, {"offset", "sc0", "sc1", "nt", "glc", "slc"})
        kind, t = m.group(1), m.group(2)
        size, fmt = _mem_type(t)
        ops = ins.operands
        _need(ins, 3)
        imm = ins.mods.get("offset", 0)
        if kind == "load":
            dst, vaddr, saddr = ops
        else:
            vaddr, data, saddr = ops
        rv = None if vaddr.kind == "off" else rd32(vaddr)
        rs = None if saddr.kind == "off" else sread(saddr)
        what = ins.text

        def offsets(w, mk):
            off = np.full(64, imm, np.int64)
            if rv is not None:
                off = off + _b64(rv(w)).astype(np.int64)
            if rs is not None:
                off = off + rs(w)
            off = off[mk]
            size_priv = w.scratch.shape[1]
            if off.size and (off.min() < 0 or off.max() + size > size_priv):
                bad = int(off[(off < 0) | (off + size > size_priv)][0])
                raise EmuError(f"{what}: scratch offset {bad} (+{size} bytes) is outside the {size_priv}-byte "
                               "private segment")
            return off

        if kind == "load":
            di = _vidx(dst)
            nreg = max(1, size // 4)

            def ld(w):
                mk = w.mask()
                if not mk.any():
                    return
                off = offsets(w, mk)
                raw = w.scratch[LANES[mk][:, None], off[:, None] + np.arange(size)]
                _load_result(w, di, nreg, raw, fmt, mk)
            return ld, "vm", _reg_keys(dst)
        rdata = _store_reader(data, size, fmt)

        def st(w):
            mk = w.mask()
            if not mk.any():
                return
            off = offsets(w, mk)
            w.scratch[LANES[mk][:, None], off[:, None] + np.arange(size)] = rdata(w)[mk]
        return st, "vm", ()

    def c_buffer(self, ins: Instr):
        n = ins.mnemonic
        m = re.match(r"buffer_(load|store)_(dword(x[234])?|ubyte|sbyte|ushort|sshort|short|byte|"
                     r"short_d16(_hi)?|ubyte_d16(_hi)?|byte_d16_hi)$", n)
        if not m:
            if n in ("buffer_wbl2", "buffer_inv", "buffer_wbinvl1", "buffer_wbinvl1_vol"):
                return lambda w: None
            return None
        _check_mods(ins, {"offset", "offen", "idxen", "lds", "sc0", "sc1", "nt", "glc", "slc"})
        kind, t = m.group(1), m.group(2)
        size, fmt = _mem_type(t)
        ops = ins.operands
        if "lds" in ins.mods and kind == "load" and len(ops) == 3:
            ops = [Operand("off")] + list(ops)  # LDS-DMA form: no vdata
        if len(ops) != 4:
            raise EmuError(f"{n}: expected 4 operands (vdata, vaddr, srsrc, soffset)")
        vd, vaddr, rsrc, soff = ops
        if rsrc.kind != "s" or rsrc.count != 4:
            raise EmuError(f"{n}: buffer resource must be 4 SGPRs")
        offen, idxen = "offen" in ins.mods, "idxen" in ins.mods
        lds = "lds" in ins.mods
        imm = ins.mods.get("offset", 0)
        ri = rsrc.index
        rso = sread(soff)
        if offen or idxen:
            if vaddr.kind not in ("v", "a"):
                raise EmuError(f"{n}: offen/idxen need a VGPR address")
            vi = _vidx(vaddr)
            if offen and idxen and vaddr.count != 2:
                raise EmuError(f"{n}: idxen+offen need a VGPR pair")
        sem = self.sem
        what = ins.text
        nreg = max(1, size // 4)
        m0mask = 0xFFFF if sem.lds_dma_m0_bits == 16 else M32

        def lane_offsets(w):
            d0, d1, nrec, d3 = w.s[ri], w.s[ri + 1], w.s[ri + 2], w.s[ri + 3]
            if (d1 >> 31) & 1 or (d3 >> 23) & 1:
                raise EmuError(f"{n}: swizzled or add_tid buffer resources are not supported")
            base = d0 | ((d1 & 0xFFFF) << 32)
            stride = (d1 >> 16) & 0x3FFF
            so = rso(w)
            idx = w.v[vi].astype(np.int64) if idxen else np.zeros(64, np.int64)
            voff = w.v[vi + (1 if idxen else 0)].astype(np.int64) if offen else np.zeros(64, np.int64)
            chk = voff + imm + (so if sem.buffer_soffset_checked else 0)
            return base, stride, nrec, so, idx, voff, chk

        def inrange(stride, nrec, idx, chk, nbytes):
            """(n_lanes, ndw) bool: which dwords (or the whole sub-dword access) are in range."""
            if idxen and stride != 0:
                ok = (idx < nrec)[:, None]
                return np.broadcast_to(ok, (64, max(1, nbytes // 4)))
            ndw = max(1, nbytes // 4)
            if sem.buffer_oob == "start":
                ok = (chk < nrec)[:, None]
                return np.broadcast_to(ok, (64, ndw))
            if sem.buffer_oob == "whole":
                ok = (chk + nbytes <= nrec)[:, None]
                return np.broadcast_to(ok, (64, ndw))
            if nbytes < 4:
                return (chk + nbytes <= nrec)[:, None]
            return chk[:, None] + 4 * np.arange(ndw)[None, :] + 4 <= nrec

        if kind == "load":
            di = _vidx(vd) if not lds else None

            def ld(w):
                mk = w.mask()
                if not mk.any():
                    return
                base, stride, nrec, so, idx, voff, chk = lane_offsets(w)
                ok = inrange(stride, nrec, idx, chk, size)
                addr = base + so + idx * stride + voff + imm
                raw = np.zeros((64, size), np.uint8)
                okb = np.repeat(ok, 4, axis=1)[:, :size] if size >= 4 else np.broadcast_to(ok, (64, size))
                lanes = mk & okb.any(axis=1)
                if lanes.any():
                    g = w.machine.mem.gather(addr[lanes].astype(np.uint64), size, what)
                    raw[lanes] = np.where(okb[lanes], g, 0)
                if lds:
                    m0 = w.s[M0] & m0mask
                    loff = m0 + imm + LANES[mk] * size
                    w.vm_push(w.lds.dma_scatter(loff, raw[mk], what, w.wave_id))
                else:
                    _load_result(w, di, nreg, raw[mk], fmt, mk)
            if lds:
                return ld, None, ()
            return ld, "vm", _reg_keys(vd)
        rdata = _store_reader(vd, size, fmt)

        def st(w):
            mk = w.mask()
            if not mk.any():
                return
            base, stride, nrec, so, idx, voff, chk = lane_offsets(w)
            ok = inrange(stride, nrec, idx, chk, size)
            addr = base + so + idx * stride + voff + imm
            data = rdata(w)
            ndw = ok.shape[1]
            for j in range(ndw):
                lanes = mk & ok[:, j]
                if lanes.any():
                    lo, hi = 4 * j, min(size, 4 * j + 4)
                    w.machine.mem.scatter((addr[lanes] + lo).astype(np.uint64), data[lanes, lo:hi], what)
        return st, "vm", ()

    def c_ds(self, ins: Instr):
        n = ins.mnemonic
        ops = ins.operands
        what = ins.text
        if n in ("ds_bpermute_b32", "ds_permute_b32"):
            _check_mods(ins, {"offset"})
            _need(ins, 3)
            di = _vidx(ops[0])
            ra, rd = rd32(ops[1]), rd32(ops[2])
            imm = ins.mods.get("offset", 0)
            perm = n == "ds_permute_b32"

            def bp(w):
                mk = w.mask()
                lane = ((ra(w).astype(np.int64) + imm) >> 2) & 63
                data = _b64(rd(w))
                if perm:
                    out = np.zeros(64, np.uint32)
                    src = np.nonzero(mk)[0]
                    out[lane[src]] = data[src]
                else:
                    out = np.where(mk[lane], data[lane], np.uint32(0)).astype(np.uint32)
                np.copyto(w.v[di], out, where=mk)
            return bp, "lgkm", _reg_keys(ops[0])
        if n == "ds_swizzle_b32":
            _check_mods(ins, {"offset"})
            _need(ins, 2)
            src = _swizzle_lanes(ins.mods.get("offset", 0))
            di = _vidx(ops[0])
            rs = rd32(ops[1])

            def sw(w):
                mk = w.mask()
                data = _b64(rs(w))
                out = np.where(mk[src], data[src], np.uint32(0)).astype(np.uint32)
                np.copyto(w.v[di], out, where=mk)
            return sw, "lgkm", _reg_keys(ops[0])
        m = re.match(r"ds_(read|write)(2|2st64)?_(b32|b64|b96|b128|u8|i8|u16|i16|b8|b16|u16_d16(_hi)?|"
                     r"u8_d16(_hi)?|i8_d16(_hi)?|b8_d16_hi|b16_d16_hi)$", n)
        if not m:
            if n.startswith("ds_read_b64_tr") or n.startswith("ds_read_b96_tr"):
                raise EmuError(f"unknown instruction {n!r} (LDS transpose reads have unverified lane semantics, "
                               "gfx950-facts §6)")
            if n == "ds_nop":
                return lambda w: None
            return None
        kind, two, t = m.group(1), m.group(2), m.group(3)
        tmap = {"b32": "dword", "b64": "dwordx2", "b96": "dwordx3", "b128": "dwordx4", "u8": "ubyte",
                "i8": "sbyte", "u16": "ushort", "i16": "sshort", "b8": "byte", "b16": "short",
                "u16_d16": "short_d16", "u16_d16_hi": "short_d16_hi", "u8_d16": "ubyte_d16",
                "u8_d16_hi": "ubyte_d16_hi", "i8_d16": "sbyte_d16", "i8_d16_hi": "sbyte_d16_hi",
                "b8_d16_hi": "byte_d16_hi", "b16_d16_hi": "short_d16_hi"}
        size, fmt = _mem_type(tmap[t])
        nreg = max(1, size // 4)
        if two:
            _check_mods(ins, {"offset0", "offset1", "gds"})
            unit = size * (64 if two == "2st64" else 1)
            o0, o1 = ins.mods.get("offset0", 0) * unit, ins.mods.get("offset1", 0) * unit
            if kind == "read":
                _need(ins, 2)
                dst, va = ops
                di = _vidx(dst)
                ra = rd32(va)

                def r2(w):
                    mk = w.mask()
                    a = ra(w)[mk].astype(np.int64)
                    r0 = w.lds.gather(a + o0, size, what, w.wave_id)
                    r1 = w.lds.gather(a + o1, size, what, w.wave_id)
                    _load_result(w, di, 2 * nreg, np.concatenate([r0, r1], axis=1), "raw", mk)
                return r2, "lgkm", _reg_keys(dst)
            _need(ins, 3)
            va, d0, d1 = ops
            ra = rd32(va)
            s0, s1 = _store_reader(d0, size, fmt), _store_reader(d1, size, fmt)

            def w2(w):
                mk = w.mask()
                a = ra(w)[mk].astype(np.int64)
                i0 = w.lds.scatter(a + o0, s0(w)[mk], what, w.wave_id)
                i1 = w.lds.scatter(a + o1, s1(w)[mk], what, w.wave_id)
                w.lgkm_push(np.concatenate([i0, i1]))
            return w2, None, ()
        _check_mods(ins, {"offset", "gds"})
        imm = ins.mods.get("offset", 0)
        if kind == "read":
            _need(ins, 2)
            dst, va = ops
            di = _vidx(dst)
            ra = rd32(va)

            def r1(w):
                mk = w.mask()
                a = _b64(ra(w))[mk].astype(np.int64) + imm
                _load_result(w, di, nreg, w.lds.gather(a, size, what, w.wave_id), fmt, mk)
            return r1, "lgkm", _reg_keys(dst)
        _need(ins, 2)
        va, d = ops
        ra = rd32(va)
        sd = _store_reader(d, size, fmt)

        def w1(w):
            mk = w.mask()
            a = _b64(ra(w))[mk].astype(np.int64) + imm
            w.lgkm_push(w.lds.scatter(a, sd(w)[mk], what, w.wave_id))
        return w1, None, ()


def _swizzle_lanes(off) -> np.ndarray:
    """Source lane per lane for ds_swizzle_b32 offset (an int, or LLVM's swizzle(...) text)."""
    l = LANES
    if isinstance(off, str):
        m = re.match(r'swizzle\((\w+)((?:,[^,)]+)*)\)$', off.replace(" ", ""))
        if not m:
            raise EmuError(f"bad ds_swizzle offset {off!r}")
        mode = m.group(1)
        args = [a for a in m.group(2).split(",") if a]
        if mode == "QUAD_PERM":
            p = [int(a) for a in args]
            return (l & ~3) | np.array(p)[l & 3]
        if mode == "SWAP":
            and_m, or_m, xor_m = 0x1F, 0, int(args[0])
        elif mode == "REVERSE":
            and_m, or_m, xor_m = 0x1F, 0, int(args[0]) - 1
        elif mode == "BROADCAST":
            size, lane = int(args[0]), int(args[1])
            and_m, or_m, xor_m = 0x1F & ~(size - 1), lane, 0
        elif mode == "BITMASK_PERM":
            s = args[0].strip('"')
            and_m = or_m = xor_m = 0
            for i, ch in enumerate(s):
                bit = 1 << (4 - i)
                if ch == "0":
                    pass
                elif ch == "1":
                    or_m |= bit
                elif ch == "p":
                    and_m |= bit
                elif ch == "i":
                    and_m |= bit
                    xor_m |= bit
        else:
            raise EmuError(f"bad ds_swizzle mode {mode}")
    else:
        if off & 0x8000:
            return (l & ~3) | ((off >> (2 * (l & 3))) & 3)
        and_m, or_m, xor_m = off & 0x1F, (off >> 5) & 0x1F, (off >> 10) & 0x1F
    return (l & 32) | (((l & and_m) | or_m) ^ xor_m)


def _mem_type(t: str):
    """(bytes, fmt) of a memory access type suffix."""
    table = {"dword": (4, "raw"), "dwordx2": (8, "raw"), "dwordx3": (12, "raw"), "dwordx4": (16, "raw"),
             "ubyte": (1, "u"), "sbyte": (1, "s"), "ushort": (2, "u"), "sshort": (2, "s"),
             "byte": (1, "u"), "short": (2, "u"),
             "short_d16": (2, "lo"), "short_d16_hi": (2, "hi"), "ubyte_d16": (1, "lo"),
             "ubyte_d16_hi": (1, "hi"), "sbyte_d16": (1, "slo"), "sbyte_d16_hi": (1, "shi"),
             "byte_d16_hi": (1, "hi")}
    if t not in table:
        raise EmuError(f"unknown memory type {t}")
    return table[t]


def _load_result(w, di: int, nreg: int, raw: np.ndarray, fmt: str, mk: np.ndarray):
    """Writes loaded bytes raw (n_active, size) to registers v[di...] of the active lanes."""
    size = raw.shape[1]
    if fmt == "raw":
        vals = np.ascontiguousarray(raw).view("<u4").T  # (nreg, n)
        w.v[di:di + nreg, mk] = vals
        return
    val = np.zeros(raw.shape[0], np.uint32)
    for j in range(size):
        val |= raw[:, j].astype(np.uint32) << (8 * j)
    if fmt in ("s", "slo", "shi"):
        sb = 8 * size
        val = ((val.astype(np.int64) ^ (1 << (sb - 1))) - (1 << (sb - 1))).astype(np.int64)
        if fmt == "s":
            w.v[di, mk] = (val & M32).astype(np.uint32)
            return
        val = (val & 0xFFFF).astype(np.uint32)
        fmt = "lo" if fmt == "slo" else "hi"
    if fmt == "u":
        w.v[di, mk] = val
    elif fmt == "lo":
        old = w.v[di, mk]
        w.v[di, mk] = (old & np.uint32(0xFFFF0000)) | (val & 0xFFFF)
    elif fmt == "hi":
        old = w.v[di, mk]
        w.v[di, mk] = (old & np.uint32(0xFFFF)) | ((val & 0xFFFF) << 16)


def _store_reader(op: Operand, size: int, fmt: str):
    """fn(w) -> (64, size) uint8 bytes to store."""
    if size >= 4:
        n = size // 4
        if op.count != n:
            raise EmuError(f"store data {op.text!r} must be {n} registers")
        i = _vidx(op)
        return lambda w: np.ascontiguousarray(w.v[i:i + n].T).view(np.uint8)
    r = rd32(op)
    shift = 16 if fmt == "hi" else 0

    def f(w):
        v = _b64(r(w)) >> shift
        return np.ascontiguousarray(v.astype("<u4")).view(np.uint8).reshape(64, 4)[:, :size]
    return f


def _sdwa_dst(op: Operand, sel: str, unused: str, write):
    if sel == "DWORD":
        return write
    sh, wd = _SEL[sel]
    i = _vidx(op)
    mask = np.uint32(((1 << wd) - 1) << sh)

    def f(w, bits, m):
        new = (np.asarray(bits, np.uint32) << sh) & mask
        if unused == "UNUSED_PRESERVE":
            new = new | (w.v[i] & ~mask)
        elif unused == "UNUSED_SEXT":
            raise EmuError("SDWA dst_unused:UNUSED_SEXT is not supported")
        write(w, new, m)
    return f


# ----------------------------------------------------------------------------------------------- specials

def _sp_cndmask(c: Compiler, ins: Instr, base: str, enc: str):
    _need(ins, 4)
    if enc in ("dpp", "sdwa"):
        raise EmuError(f"{ins.mnemonic}: DPP/SDWA forms of v_cndmask are not supported by the emulator")
    _check_mods(ins, set())
    d, a, b, s = ins.operands
    ra = typed_reader(a, "f32" if (a.abs or a.neg) else "u32")
    rb = typed_reader(b, "f32" if (b.abs or b.neg) else "u32")
    rs = sread(s, 64)
    wr = vwrite(d)
    fa = a.abs or a.neg
    fb = b.abs or b.neg

    def f(w):
        sel = int_to_mask(rs(w))
        x = ra(w)
        y = rb(w)
        x = x.view(np.uint32) if fa else x
        y = y.view(np.uint32) if fb else y
        wr(w, np.where(sel, y, x), w.mask())
    return f


def _sp_carry(c: Compiler, ins: Instr, base: str, enc: str):
    """v_add_co_u32, v_sub_co_u32, v_subrev_co_u32 (dst, sdst, a, b) and addc/subb (+ carry-in mask)."""
    ops = ins.operands
    withc = base in ("v_addc_co_u32", "v_subb_co_u32", "v_subbrev_co_u32")
    _need(ins, 5 if withc else 4)
    _check_mods(ins, set())
    d, sd = ops[0], ops[1]
    ra, rb = rd32(ops[2]), rd32(ops[3])
    rc = sread(ops[4], 64) if withc else None
    wr = vwrite(d)
    ws = swrite(sd, 64)
    op = base

    def f(w):
        m = w.mask()
        a = _i(ra(w))
        b = _i(rb(w))
        cin = int_to_mask(rc(w)).astype(np.int64) if withc else 0
        if op in ("v_add_co_u32", "v_addc_co_u32"):
            r = a + b + cin
            co = r > M32
        elif op in ("v_sub_co_u32", "v_subb_co_u32"):
            r = a - b - cin
            co = r < 0
        else:
            r = b - a - cin
            co = r < 0
        wr(w, (r & M32).astype(np.uint32), m)
        ws(w, mask_to_int(_b64(co) & m))
    return f


def _sp_mad64(c: Compiler, ins: Instr, base: str, enc: str):
    if enc in ("dpp", "sdwa"):
        raise EmuError(f"{ins.mnemonic}: DPP/SDWA form not supported by the emulator")
    _check_mods(ins, set())
    _need(ins, 5)
    d, sd, a, b, cc = ins.operands
    ra, rb, rc = rd32(a), rd32(b), rd64(cc)
    wr = vwrite(d, 2)
    ws = swrite(sd, 64)
    signed = base == "v_mad_i64_i32"

    def f(w):
        m = w.mask()
        if signed:
            pa = np.asarray(ra(w)).view(np.int32).astype(np.int64)
            pb = np.asarray(rb(w)).view(np.int32).astype(np.int64)
            r = (pa * pb).astype(np.uint64) + rc(w)
            co = np.zeros(64, bool)
        else:
            pa = np.asarray(ra(w)).astype(np.uint64)
            pb = np.asarray(rb(w)).astype(np.uint64)
            prod = pa * pb
            r = prod + np.asarray(rc(w), np.uint64)
            co = r < prod
        wr(w, _to_bits(r, "u64"), m)
        ws(w, mask_to_int(_b64(co) & m))
    return f


def _sp_div_scale(c: Compiler, ins: Instr, base: str, enc: str):
    # v_div_scale_f32 d, vcc, s0, s1, s2: the emulator never needs the 2^±64 pre-scaling: it returns s0 and
    # clears VCC (exact for operands away from the denormal/overflow range).
    if enc in ("dpp", "sdwa"):
        raise EmuError(f"{ins.mnemonic}: DPP/SDWA form not supported by the emulator")
    _check_mods(ins, set())
    _need(ins, 5)
    d, sd, s0 = ins.operands[:3]
    r0 = typed_reader(s0, "f32")
    wr = vwrite(d)
    ws = swrite(sd, 64)

    def f(w):
        wr(w, _to_bits(r0(w), "f32"), w.mask())
        ws(w, 0)
    return f


def _sp_readlane(c: Compiler, ins: Instr, base: str, enc: str):
    if enc in ("dpp", "sdwa"):
        raise EmuError(f"{ins.mnemonic}: DPP/SDWA form not supported by the emulator")
    _check_mods(ins, set())
    ops = ins.operands
    if base == "v_readfirstlane_b32":
        _need(ins, 2)
        r = rd32(ops[1])
        ws = swrite(ops[0])

        def f(w):
            m = w.mask()
            lane = int(np.argmax(m)) if m.any() else 0
            ws(w, int(_b64(r(w))[lane]))
        return f
    if base == "v_readlane_b32":
        _need(ins, 3)
        r = rd32(ops[1])
        sl = sread(ops[2])
        ws = swrite(ops[0])

        def g(w):
            ws(w, int(_b64(r(w))[sl(w) & 63]))
        return g
    _need(ins, 3)  # v_writelane_b32 vdst, ssrc, lane
    di = _vidx(ops[0])
    sv = sread(ops[1])
    sl = sread(ops[2])

    def h(w):
        w.v[di, sl(w) & 63] = sv(w)
    return h


def _sp_mbcnt(c: Compiler, ins: Instr, base: str, enc: str):
    if enc in ("dpp", "sdwa"):
        raise EmuError(f"{ins.mnemonic}: DPP/SDWA form not supported by the emulator")
    _check_mods(ins, set())
    _need(ins, 3)
    ra, rb = rd32(ins.operands[1]), rd32(ins.operands[2])
    wr = vwrite(ins.operands[0])
    hi = base == "v_mbcnt_hi_u32_b32"
    lanes = LANES - (32 if hi else 0)
    below = (np.arange(32)[None, :] < np.clip(lanes, 0, 32)[:, None])

    def f(w):
        x = _b64(ra(w))
        bits = ((x[:, None] >> np.arange(32, dtype=np.uint32)[None, :]) & 1).astype(bool)
        cnt = (bits & below).sum(axis=1)
        wr(w, (cnt + _i(rb(w))).astype(np.uint32), w.mask())
    return f


def _sp_accvgpr(c: Compiler, ins: Instr, base: str, enc: str):
    if enc in ("dpp", "sdwa"):
        raise EmuError(f"{ins.mnemonic}: DPP/SDWA form not supported by the emulator")
    _check_mods(ins, set())
    _need(ins, 2)
    r = rd32(ins.operands[1])
    wr = vwrite(ins.operands[0])
    return lambda w: wr(w, r(w), w.mask())


def _sp_cvt_pk_f8(c: Compiler, ins: Instr, base: str, enc: str):
    """v_cvt_pk_fp8_f32 / v_cvt_pk_bf8_f32 d, a, b [op_sel:[.,.,1]]: two f32 -> two fp8 bytes in one half."""
    _need(ins, 3)
    _check_mods(ins, {"op_sel"})
    fmt = "fp8" if "fp8" in base else "bf8"
    d, a, b = ins.operands
    ra, rb = typed_reader(a, "f32"), typed_reader(b, "f32")
    sel = ins.mods.get("op_sel", [0, 0, 0])
    if any(sel[:2]):
        raise EmuError(f"{base}: op_sel on sources is not supported")
    hi = len(sel) > 2 and sel[2] == 1
    di = _vidx(d)
    sem = c.sem

    def f(w):
        lo8 = f32_to_fp8_bits(_b64(ra(w)), fmt, sem.fp8_overflow)
        hi8 = f32_to_fp8_bits(_b64(rb(w)), fmt, sem.fp8_overflow)
        word = lo8 | (hi8 << 8)
        old = w.v[di]
        if hi:
            new = (old & np.uint32(0xFFFF)) | (word << 16)
        elif sem.cvt_pk_fp8_low_write == "preserve":
            new = (old & np.uint32(0xFFFF0000)) | word
        else:
            new = word
        np.copyto(w.v[di], new.astype(np.uint32), where=w.mask())
    return f


def _sp_cvt_f32_f8(c: Compiler, ins: Instr, base: str, enc: str):
    """v_cvt_f32_fp8 / _bf8 (byte via SDWA src0_sel, default byte 0) and v_cvt_pk_f32_fp8 / _bf8 (word via
    SDWA src0_sel WORD_0 / WORD_1, default the low word)."""
    fmt = "fp8" if "fp8" in base else "bf8"
    _need(ins, 2)
    d, s = ins.operands
    if enc == "sdwa":
        _check_mods(ins, {"src0_sel", "dst_sel", "dst_unused", "clamp"})
        if ins.mods.get("dst_sel", "DWORD") != "DWORD" or "clamp" in ins.mods:
            raise EmuError(f"{base}: only dst_sel:DWORD is supported")
        sel = ins.mods.get("src0_sel", "DWORD")
        if sel not in _SEL:
            raise EmuError(f"bad SDWA select {sel!r}")
        shift = _SEL[sel][0]
    else:  # e32/e64 forms read byte 0 / word 0 (llvm-mc 22 accepts no op_sel on them for gfx950)
        _check_mods(ins, set())
        shift = 0
    r = rd32(s)
    pk = base.startswith("v_cvt_pk")
    wr = vwrite(d, 2 if pk else 1)

    def f(w):
        x = (_b64(r(w)) >> shift)
        if pk:
            v0 = fp8_decode(x & 0xFF, fmt).astype(np.float32)
            v1 = fp8_decode((x >> 8) & 0xFF, fmt).astype(np.float32)
            wr(w, np.stack([v0, v1]).view(np.uint32), w.mask())
        else:
            wr(w, fp8_decode(x & 0xFF, fmt).astype(np.float32).view(np.uint32), w.mask())
    return f


def _scale_exp(x):
    """Exponent (bits [30:23]) of an f32 scale operand, unbiased: scale = 2^(e - 127)."""
    return ((np.asarray(x, np.uint32) >> 23) & 0xFF).astype(np.int64) - 127


def _sp_cvt_scalef32(c: Compiler, ins: Instr, base: str, enc: str):
    """gfx950 scaled fp8/bf8 conversions. Only the exponent field (bits 30:23) of the f32 scale is used,
    2^e = 2^(bits - 127); down-conversion divides by it, up-conversion multiplies (gfx950-facts §2 [SOURCE, not
    HW-verified]). Operand/op_sel forms, as LLVM 22 emits them for the clang builtins:
      v_cvt_scalef32_pk_{fp8,bf8}_f32 d, a, b, scale [op_sel:[0,0,0,w]]: a -> byte 0, b -> byte 1 of word w;
      v_cvt_scalef32_pk_{fp8,bf8}_{bf16,f16} d, src, scale [op_sel:[0,0,w]]: src's two halves -> word w;
      v_cvt_scalef32_pk_f32_{fp8,bf8} d[2], src, scale [op_sel:[w,..]]: bytes 0, 1 of word w -> two f32;
      v_cvt_scalef32_pk_{bf16,f16}_{fp8,bf8} d, src, scale [op_sel:[w,..]]: -> two bf16/f16 (RNE) in d;
      v_cvt_scalef32_f32_{fp8,bf8} d, src, scale [op_sel:[b0,b1,..]]: byte b0 | b1 << 1 -> f32.
    The other word of d is kept by the down-conversions (as LLVM assumes for v_cvt_pk_fp8_f32)."""
    m = re.match(r"v_cvt_scalef32_(pk_)?(fp8|bf8|f32|bf16|f16)_(f32|fp8|bf8|bf16|f16)$", base)
    if not m:
        return None
    pk, to, frm = m.groups()
    sem = c.sem
    ops = ins.operands
    _check_mods(ins, {"op_sel"})
    osel = list(ins.mods.get("op_sel", [])) + [0, 0, 0, 0]
    if to in ("fp8", "bf8"):
        if not pk or frm not in ("f32", "bf16", "f16"):
            return None
        if frm == "f32":
            _need(ins, 4)
            d, a, b, s = ops
            ra, rb = typed_reader(a, "f32"), typed_reader(b, "f32")
            pair = lambda w: (_b64(ra(w)).astype(np.float64), _b64(rb(w)).astype(np.float64))
            hi = osel[3] == 1
        else:
            _need(ins, 3)
            d, src, s = ops
            rsrc = rd32(src)
            dec = (lambda x: bf16_bits_to_f32(x)) if frm == "bf16" else \
                (lambda x: (x & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float32))
            pair = lambda w: (dec(_b64(rsrc(w)) & 0xFFFF).astype(np.float64),
                              dec(_b64(rsrc(w)) >> 16).astype(np.float64))
            hi = osel[2] == 1
        rs = rd32(s)
        di = _vidx(d)

        def down(w):
            e = _scale_exp(rs(w))
            x0, x1 = pair(w)
            y0 = np.ldexp(x0, -e).astype(np.float32)
            y1 = np.ldexp(x1, -e).astype(np.float32)
            word = f32_to_fp8_bits(y0, to, sem.fp8_overflow) | (f32_to_fp8_bits(y1, to, sem.fp8_overflow) << 8)
            old = w.v[di]
            new = (old & np.uint32(0xFFFF)) | (word << 16) if hi else (old & np.uint32(0xFFFF0000)) | word
            np.copyto(w.v[di], new.astype(np.uint32), where=w.mask())
        return down
    if frm not in ("fp8", "bf8"):
        return None
    _need(ins, 3)
    d, src, s = ops
    rsrc, rs = rd32(src), rd32(s)
    if to == "f32" and not pk:
        shift = 8 * (osel[0] | (osel[1] << 1))
    else:
        shift = 16 * osel[0]
    wr = vwrite(d, 2 if (pk and to == "f32") else 1)

    def up(w):
        e = _scale_exp(rs(w))
        x = _b64(rsrc(w)) >> shift
        v0 = np.ldexp(fp8_decode(x & 0xFF, frm), e).astype(np.float32)
        if not pk:
            wr(w, v0.view(np.uint32), w.mask())
            return
        v1 = np.ldexp(fp8_decode((x >> 8) & 0xFF, frm), e).astype(np.float32)
        if to == "f32":
            wr(w, np.stack([v0, v1]).view(np.uint32), w.mask())
        elif to == "bf16":
            wr(w, (f32_to_bf16_bits(v0) | (f32_to_bf16_bits(v1) << 16)).astype(np.uint32), w.mask())
        else:
            wr(w, (_f32_to_f16(v0) | (_f32_to_f16(v1) << 16)).astype(np.uint32), w.mask())
    return up


def _sp_permlane_swap(c: Compiler, ins: Instr, base: str, enc: str):
    """v_permlane32_swap_b32 v0, v1: swaps v0's upper 32 lanes with v1's lower 32 lanes; v_permlane16_swap_b32
    swaps odd 16-lane rows of v0 with even rows of v1. Both registers are written (all lanes, as LLVM models
    it; EXEC is not applied to the exchange in this emulator)."""
    if enc in ("dpp", "sdwa"):
        raise EmuError(f"{ins.mnemonic}: DPP/SDWA form not supported by the emulator")
    _check_mods(ins, set())
    _need(ins, 2)
    i, j = _vidx(ins.operands[0]), _vidx(ins.operands[1])
    if base == "v_permlane32_swap_b32":
        def f(w):
            a = w.v[i, 32:].copy()
            w.v[i, 32:] = w.v[j, :32]
            w.v[j, :32] = a
        return f

    def g(w):
        for r in (0, 2):
            a = w.v[i, 16 * (r + 1):16 * (r + 2)].copy()
            w.v[i, 16 * (r + 1):16 * (r + 2)] = w.v[j, 16 * r:16 * (r + 1)]
            w.v[j, 16 * r:16 * (r + 1)] = a
    return g


def _sp_bitop3(c: Compiler, ins: Instr, base: str, enc: str):
    """v_bitop3_b32 d, s0, s1, s2 bitop3:T: each result bit is bit ((s0 << 2) | (s1 << 1) | s2) of T (LLVM's
    truth-table convention: s0 = 0xF0, s1 = 0xCC, s2 = 0xAA)."""
    _need(ins, 4)
    _check_mods(ins, {"bitop3", "op_sel"} if base == "v_bitop3_b16" else {"bitop3"})
    t = ins.mods.get("bitop3", 0)
    ra, rb, rc = (rd32(o) for o in ins.operands[1:])
    wr = vwrite(ins.operands[0])
    if base == "v_bitop3_b16":
        # 16-bit form: op_sel[i] picks the high half of source i, op_sel[3] writes the high half of the
        # destination; the other destination half is preserved (gfx9 16-bit VOP3 ops outside LLVM's
        # GCNSubtarget::zeroesHigh16BitsOfDest list keep the high bits).
        sel = (ins.mods.get("op_sel", [0, 0, 0, 0]) + [0, 0, 0, 0])[:4]
        di = _vidx(ins.operands[0])

        def f16(w):
            a, b, cc = ((_u(r(w)) >> (16 * sel[j])) & 0xFFFF for j, r in enumerate((ra, rb, rc)))
            r = np.zeros(np.broadcast(a, b, cc).shape, np.uint32)
            for i in range(8):
                if (t >> i) & 1:
                    r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (cc if i & 1 else ~cc)
            r &= 0xFFFF
            old = w.v[di]
            new = (old & np.uint32(0xFFFF)) | (r << 16) if sel[3] else (old & np.uint32(0xFFFF0000)) | r
            np.copyto(w.v[di], new.astype(np.uint32), where=w.mask())
        return f16

    def f(w):
        a, b, cc = _u(ra(w)), _u(rb(w)), _u(rc(w))
        r = np.zeros(np.broadcast(a, b, cc).shape, np.uint32)
        for i in range(8):
            if (t >> i) & 1:
                r |= (a if i & 4 else ~a) & (b if i & 2 else ~b) & (cc if i & 1 else ~cc)
        wr(w, r, w.mask())
    return f


def _sp_nop(c: Compiler, ins: Instr, base: str, enc: str):
    return lambda w: None


_VSPECIAL = {
    "v_cndmask_b32": _sp_cndmask,
    "v_add_co_u32": _sp_carry, "v_sub_co_u32": _sp_carry, "v_subrev_co_u32": _sp_carry,
    "v_addc_co_u32": _sp_carry, "v_subb_co_u32": _sp_carry, "v_subbrev_co_u32": _sp_carry,
    "v_mad_u64_u32": _sp_mad64, "v_mad_i64_i32": _sp_mad64,
    "v_div_scale_f32": _sp_div_scale,
    "v_readfirstlane_b32": _sp_readlane, "v_readlane_b32": _sp_readlane, "v_writelane_b32": _sp_readlane,
    "v_mbcnt_lo_u32_b32": _sp_mbcnt, "v_mbcnt_hi_u32_b32": _sp_mbcnt,
    "v_accvgpr_read_b32": _sp_accvgpr, "v_accvgpr_write_b32": _sp_accvgpr, "v_accvgpr_mov_b32": _sp_accvgpr,
    "v_cvt_pk_fp8_f32": _sp_cvt_pk_f8, "v_cvt_pk_bf8_f32": _sp_cvt_pk_f8,
    "v_cvt_f32_fp8": _sp_cvt_f32_f8, "v_cvt_f32_bf8": _sp_cvt_f32_f8,
    "v_cvt_pk_f32_fp8": _sp_cvt_f32_f8, "v_cvt_pk_f32_bf8": _sp_cvt_f32_f8,
    "v_permlane32_swap_b32": _sp_permlane_swap, "v_permlane16_swap_b32": _sp_permlane_swap,
    "v_nop": _sp_nop,
    "v_bitop3_b32": _sp_bitop3, "v_bitop3_b16": _sp_bitop3,
}
for _n in ("v_cvt_scalef32_pk_fp8_f32", "v_cvt_scalef32_pk_bf8_f32", "v_cvt_scalef32_pk_f32_fp8",
           "v_cvt_scalef32_pk_f32_bf8", "v_cvt_scalef32_f32_fp8", "v_cvt_scalef32_f32_bf8",
           "v_cvt_scalef32_pk_fp8_bf16", "v_cvt_scalef32_pk_bf8_bf16", "v_cvt_scalef32_pk_fp8_f16",
           "v_cvt_scalef32_pk_bf8_f16", "v_cvt_scalef32_pk_bf16_fp8", "v_cvt_scalef32_pk_bf16_bf8",
           "v_cvt_scalef32_pk_f16_fp8", "v_cvt_scalef32_pk_f16_bf8"):
    _VSPECIAL[_n] = _sp_cvt_scalef32


# ----------------------------------------------------------------------------------------------- SALU table
def _s32(x):
    return x - (1 << 32) if x >> 31 else x


def _s64(x):
    return x - (1 << 64) if x >> 63 else x


def _nz(r, mask=M32):
    r &= mask
    return r, int(r != 0)


def _sbfe(v, s, width, signed):
    off = s & (63 if width == 64 else 31)
    wd = (s >> 16) & 0x7F
    r = (v >> off) & ((1 << wd) - 1) if wd else 0
    if signed and wd and (r >> (wd - 1)) & 1:
        r -= 1 << wd
    return _nz(r, (1 << width) - 1)


def _ff1(x, width):
    if x == 0:
        return M32
    return (x & -x).bit_length() - 1


def _flbit(x, width):
    if x == 0:
        return M32
    return width - x.bit_length()


# name -> (width or (dst, src0, src1) widths, nsrc, fn(w, a[, b]) -> (result or None, scc or None))
_SOP = {
    "s_mov_b32": (32, 1, lambda w, a: (a, None)),
    "s_mov_b64": (64, 1, lambda w, a: (a, None)),
    "s_movk_i32": (32, 1, lambda w, a: (a, None)),
    "s_cmovk_i32": (32, 1, lambda w, a: (a if w.scc else None, None)),
    "s_cmov_b32": (32, 1, lambda w, a: (a if w.scc else None, None)),
    "s_cmov_b64": (64, 1, lambda w, a: (a if w.scc else None, None)),
    "s_not_b32": (32, 1, lambda w, a: _nz(~a)),
    "s_not_b64": (64, 1, lambda w, a: _nz(~a, M64)),
    "s_brev_b32": (32, 1, lambda w, a: (int(f"{a:032b}"[::-1], 2), None)),
    "s_bcnt1_i32_b32": (32, 1, lambda w, a: _nz(bin(a).count("1"))),
    "s_bcnt1_i32_b64": ((32, 64), 1, lambda w, a: _nz(bin(a).count("1"))),
    "s_ff1_i32_b32": (32, 1, lambda w, a: (_ff1(a, 32), None)),
    "s_ff1_i32_b64": ((32, 64), 1, lambda w, a: (_ff1(a, 64), None)),
    "s_flbit_i32_b32": (32, 1, lambda w, a: (_flbit(a, 32), None)),
    "s_flbit_i32_b64": ((32, 64), 1, lambda w, a: (_flbit(a, 64), None)),
    "s_sext_i32_i8": (32, 1, lambda w, a: ((a & 0xFF) - ((a & 0x80) << 1), None)),
    "s_sext_i32_i16": (32, 1, lambda w, a: ((a & 0xFFFF) - ((a & 0x8000) << 1), None)),
    "s_abs_i32": (32, 1, lambda w, a: _nz(abs(_s32(a)))),
    "s_add_u32": (32, 2, lambda w, a, b: (a + b, int(a + b > M32))),
    "s_addc_u32": (32, 2, lambda w, a, b: (a + b + w.scc, int(a + b + w.scc > M32))),
    "s_sub_u32": (32, 2, lambda w, a, b: (a - b, int(b > a))),
    "s_subb_u32": (32, 2, lambda w, a, b: (a - b - w.scc, int(b + w.scc > a))),
    "s_add_i32": (32, 2, lambda w, a, b: (a + b, int(not -2 ** 31 <= _s32(a) + _s32(b) < 2 ** 31))),
    "s_sub_i32": (32, 2, lambda w, a, b: (a - b, int(not -2 ** 31 <= _s32(a) - _s32(b) < 2 ** 31))),
    "s_addk_i32": (32, 2, lambda w, a, b: (a + b, int(not -2 ** 31 <= _s32(a) + _s32(b) < 2 ** 31))),
    "s_mulk_i32": (32, 2, lambda w, a, b: (_s32(a) * _s32(b), None)),
    "s_mul_i32": (32, 2, lambda w, a, b: (_s32(a) * _s32(b), None)),
    "s_mul_hi_u32": (32, 2, lambda w, a, b: ((a * b) >> 32, None)),
    "s_mul_hi_i32": (32, 2, lambda w, a, b: ((_s32(a) * _s32(b)) >> 32, None)),
    "s_min_i32": (32, 2, lambda w, a, b: (a, 1) if _s32(a) < _s32(b) else (b, 0)),
    "s_min_u32": (32, 2, lambda w, a, b: (a, 1) if a < b else (b, 0)),
    "s_max_i32": (32, 2, lambda w, a, b: (a, 1) if _s32(a) > _s32(b) else (b, 0)),
    "s_max_u32": (32, 2, lambda w, a, b: (a, 1) if a > b else (b, 0)),
    "s_cselect_b32": (32, 2, lambda w, a, b: (a if w.scc else b, None)),
    "s_cselect_b64": (64, 2, lambda w, a, b: (a if w.scc else b, None)),
    "s_and_b32": (32, 2, lambda w, a, b: _nz(a & b)),
    "s_or_b32": (32, 2, lambda w, a, b: _nz(a | b)),
    "s_xor_b32": (32, 2, lambda w, a, b: _nz(a ^ b)),
    "s_andn2_b32": (32, 2, lambda w, a, b: _nz(a & ~b)),
    "s_orn2_b32": (32, 2, lambda w, a, b: _nz(a | ~b)),
    "s_nand_b32": (32, 2, lambda w, a, b: _nz(~(a & b))),
    "s_nor_b32": (32, 2, lambda w, a, b: _nz(~(a | b))),
    "s_xnor_b32": (32, 2, lambda w, a, b: _nz(~(a ^ b))),
    "s_and_b64": (64, 2, lambda w, a, b: _nz(a & b, M64)),
    "s_or_b64": (64, 2, lambda w, a, b: _nz(a | b, M64)),
    "s_xor_b64": (64, 2, lambda w, a, b: _nz(a ^ b, M64)),
    "s_andn2_b64": (64, 2, lambda w, a, b: _nz(a & ~b, M64)),
    "s_orn2_b64": (64, 2, lambda w, a, b: _nz(a | ~b, M64)),
    "s_nand_b64": (64, 2, lambda w, a, b: _nz(~(a & b), M64)),
    "s_nor_b64": (64, 2, lambda w, a, b: _nz(~(a | b), M64)),
    "s_xnor_b64": (64, 2, lambda w, a, b: _nz(~(a ^ b), M64)),
    "s_lshl_b32": (32, 2, lambda w, a, b: _nz(a << (b & 31))),
    "s_lshr_b32": (32, 2, lambda w, a, b: _nz(a >> (b & 31))),
    "s_ashr_i32": (32, 2, lambda w, a, b: _nz(_s32(a) >> (b & 31))),
    "s_lshl_b64": ((64, 64, 32), 2, lambda w, a, b: _nz(a << (b & 63), M64)),
    "s_lshr_b64": ((64, 64, 32), 2, lambda w, a, b: _nz(a >> (b & 63), M64)),
    "s_ashr_i64": ((64, 64, 32), 2, lambda w, a, b: _nz(_s64(a) >> (b & 63), M64)),
    "s_lshl1_add_u32": (32, 2, lambda w, a, b: ((a << 1) + b, int((a << 1) + b > M32))),
    "s_lshl2_add_u32": (32, 2, lambda w, a, b: ((a << 2) + b, int((a << 2) + b > M32))),
    "s_lshl3_add_u32": (32, 2, lambda w, a, b: ((a << 3) + b, int((a << 3) + b > M32))),
    "s_lshl4_add_u32": (32, 2, lambda w, a, b: ((a << 4) + b, int((a << 4) + b > M32))),
    "s_bfe_u32": (32, 2, lambda w, a, b: _sbfe(a, b, 32, False)),
    "s_bfe_i32": (32, 2, lambda w, a, b: _sbfe(a, b, 32, True)),
    "s_bfe_u64": ((64, 64, 32), 2, lambda w, a, b: _sbfe(a, b, 64, False)),
    "s_bfe_i64": ((64, 64, 32), 2, lambda w, a, b: _sbfe(a, b, 64, True)),
    "s_bfm_b32": (32, 2, lambda w, a, b: (((1 << (a & 31)) - 1) << (b & 31), None)),
    "s_bfm_b64": ((64, 32, 32), 2, lambda w, a, b: (((1 << (a & 63)) - 1) << (b & 63), None)),
    "s_pack_ll_b32_b16": (32, 2, lambda w, a, b: ((a & 0xFFFF) | ((b & 0xFFFF) << 16), None)),
    "s_pack_lh_b32_b16": (32, 2, lambda w, a, b: ((a & 0xFFFF) | (b & 0xFFFF0000), None)),
    "s_pack_hh_b32_b16": (32, 2, lambda w, a, b: ((a >> 16) | (b & 0xFFFF0000), None)),
    "s_absdiff_i32": (32, 2, lambda w, a, b: _nz(abs(_s32(a) - _s32(b)))),
}

_DISPATCH = [
    ("s_load", Compiler.c_smem), ("s_buffer_load", Compiler.c_smem),
    ("s_", Compiler.c_sopp), ("s_", Compiler.c_salu),
    ("v_", Compiler.c_valu),
    ("global_", Compiler.c_global), ("flat_", Compiler.c_global),
    ("buffer_", Compiler.c_buffer),
    ("scratch_", Compiler.c_scratch),
    ("ds_", Compiler.c_ds),
]
