"""Conversion semantics: float/int/bf16/f16 conversions in the VALU table (``CVT_VOP``) and the fp8/bf8
conversions, including the scaled ``v_cvt_scalef32_*`` forms (``CVT_SPECIAL``); facts §2, §8.11-§8.15."""
from __future__ import annotations

import re

import numpy as np

from ..asm import Instr
from ..errors import EmuError
from ..numerics import bf16_bits_to_f32, f32_to_bf16_bits, f32_to_fp8_bits, fp8_decode
from .common import (_SEL, _b64, _check_mods, _cvt_i32, _cvt_u32, _f16_to_f32, _f32_to_f16,
    _f32_to_f16_rtz, _need, _u, _vidx, f64, rd32, typed_reader, vwrite)


# name -> (source types, dst type, function); merged into vector.VOP
CVT_VOP: dict[str, tuple] = {
    "v_cvt_pk_f16_f32": (("f32", "f32"), "u32", lambda a, b: _f32_to_f16(a) | (_f32_to_f16(b) << 16)),
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
    "v_cvt_f64_f32": (("f32",), "f64", lambda a: f64(a)),
    "v_cvt_f32_f64": (("f64",), "f32", lambda a: np.asarray(a, np.float32)),
    "v_cvt_f64_i32": (("i32",), "f64", lambda a: f64(a)),
    "v_cvt_f64_u32": (("u32",), "f64", lambda a: f64(a)),
}


def _sp_cvt_pk_f8(c, ins: Instr, base: str, enc: str):
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


def _sp_cvt_f32_f8(c, ins: Instr, base: str, enc: str):
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


def _sp_cvt_scalef32(c, ins: Instr, base: str, enc: str):
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




CVT_SPECIAL = {
    "v_cvt_pk_fp8_f32": _sp_cvt_pk_f8, "v_cvt_pk_bf8_f32": _sp_cvt_pk_f8,
    "v_cvt_f32_fp8": _sp_cvt_f32_f8, "v_cvt_f32_bf8": _sp_cvt_f32_f8,
    "v_cvt_pk_f32_fp8": _sp_cvt_f32_f8, "v_cvt_pk_f32_bf8": _sp_cvt_f32_f8,
}
for _n in ("v_cvt_scalef32_pk_fp8_f32", "v_cvt_scalef32_pk_bf8_f32", "v_cvt_scalef32_pk_f32_fp8",
           "v_cvt_scalef32_pk_f32_bf8", "v_cvt_scalef32_f32_fp8", "v_cvt_scalef32_f32_bf8",
           "v_cvt_scalef32_pk_fp8_bf16", "v_cvt_scalef32_pk_bf8_bf16", "v_cvt_scalef32_pk_fp8_f16",
           "v_cvt_scalef32_pk_bf8_f16", "v_cvt_scalef32_pk_bf16_fp8", "v_cvt_scalef32_pk_bf16_bf8",
           "v_cvt_scalef32_pk_f16_fp8", "v_cvt_scalef32_pk_f16_bf8"):
    CVT_SPECIAL[_n] = _sp_cvt_scalef32

