"""Shared pieces of the emulator's instruction semantics: register readers/writers, typed views, bit and
float helpers, memory-access helpers. Each unit module (:mod:`.scalar`, :mod:`.vector`, :mod:`.cvt`,
:mod:`.matrix`, :mod:`.memory`, :mod:`.lds`) imports everything from here.
"""
from __future__ import annotations

import numpy as np

from gfx950isa.table import MEM_TYPES

from ..asm import Instr, Operand
from ..errors import EmuError

BARRIER = -1
ENDPGM = -2
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

def _mem_type(t: str):
    """(bytes, fmt) of a memory access type suffix (gfx950isa.table.MEM_TYPES)."""
    if t not in MEM_TYPES:
        raise EmuError(f"unknown memory type {t}")
    return MEM_TYPES[t]


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



_SEL = {"DWORD": (0, 32), "WORD_0": (0, 16), "WORD_1": (16, 16), "BYTE_0": (0, 8), "BYTE_1": (8, 8),
        "BYTE_2": (16, 8), "BYTE_3": (24, 8)}
