"""Vector ALU semantics: the VALU table ``VOP`` (source types, result type, numpy function), DPP and SDWA,
compares, packed f32, and the special VALU forms (carry ops, lane ops, accvgpr moves, permlane swaps)."""
from __future__ import annotations

import re

import numpy as np

from ..asm import EXEC, Instr, Operand
from ..errors import EmuError
from ..numerics import bf16_bits_to_f32
from .common import (_SEL, LANES, M32, _b64, _bcnt, _bfe_i, _bfe_u, _check_mods, _div_fixup, _ffbh_u32, _ffbl,
    _frexp_exp, _frexp_mant, _half_reader, _i, _ldexp, _maximum, _med3, _minimum, _need, _perm, _rcp, _to_bits, _u,
    _vidx, const_bits, f64, int_to_mask, mask_to_int, rd32, rd64, sread, swrite, typed_reader, vwrite)

from .cvt import CVT_SPECIAL, CVT_VOP


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
}
VOP.update(CVT_VOP)



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




class VectorUnit:
    """Compiler methods for VALU instructions (mixed into :class:`gfx950emu.ops.Compiler`)."""

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

def _sp_cndmask(c, ins: Instr, base: str, enc: str):
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


def _sp_carry(c, ins: Instr, base: str, enc: str):
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


def _sp_mad64(c, ins: Instr, base: str, enc: str):
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


def _sp_div_scale(c, ins: Instr, base: str, enc: str):
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


def _sp_readlane(c, ins: Instr, base: str, enc: str):
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


def _sp_mbcnt(c, ins: Instr, base: str, enc: str):
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


_PK_U16 = {
    "v_pk_add_u16": lambda a, b: a + b, "v_pk_sub_u16": lambda a, b: a - b,
    "v_pk_max_u16": np.maximum, "v_pk_min_u16": np.minimum,
    "v_pk_lshlrev_b16": lambda a, b: b << (a & 15), "v_pk_lshrrev_b16": lambda a, b: b >> (a & 15),
}


def _sp_pk_u16(c, ins: Instr, base: str, enc: str):
    """VOP3P packed 16-bit integer ops d, a, b: result half h (0 = low) = f(a half sel_a, b half sel_b) with
    sel = op_sel[i] for the low result and op_sel_hi[i] (default 1) for the high result; wraps mod 2^16
    (no clamp)."""
    _check_mods(ins, {"op_sel", "op_sel_hi"})
    _need(ins, 3)
    ra, rb = rd32(ins.operands[1]), rd32(ins.operands[2])
    wr = vwrite(ins.operands[0])
    lo_sel = list(ins.mods.get("op_sel", [0, 0]))
    hi_sel = list(ins.mods.get("op_sel_hi", [1, 1]))
    fn = _PK_U16[base]

    def half(x, sel):
        return (_b64(x).astype(np.int64) >> (16 * sel)) & 0xFFFF

    def f(w):
        a, b = ra(w), rb(w)
        lo = fn(half(a, lo_sel[0]), half(b, lo_sel[1])) & 0xFFFF
        hi = fn(half(a, hi_sel[0]), half(b, hi_sel[1])) & 0xFFFF
        wr(w, (lo | (hi << 16)).astype(np.uint32), w.mask())
    return f


def _sp_accvgpr(c, ins: Instr, base: str, enc: str):
    if enc in ("dpp", "sdwa"):
        raise EmuError(f"{ins.mnemonic}: DPP/SDWA form not supported by the emulator")
    _check_mods(ins, set())
    _need(ins, 2)
    r = rd32(ins.operands[1])
    wr = vwrite(ins.operands[0])
    return lambda w: wr(w, r(w), w.mask())


def _sp_permlane_swap(c, ins: Instr, base: str, enc: str):
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


def _sp_bitop3(c, ins: Instr, base: str, enc: str):
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


def _sp_nop(c, ins: Instr, base: str, enc: str):
    return lambda w: None


_VSPECIAL = {
    "v_cndmask_b32": _sp_cndmask,
    **{n: _sp_pk_u16 for n in _PK_U16},
    "v_add_co_u32": _sp_carry, "v_sub_co_u32": _sp_carry, "v_subrev_co_u32": _sp_carry,
    "v_addc_co_u32": _sp_carry, "v_subb_co_u32": _sp_carry, "v_subbrev_co_u32": _sp_carry,
    "v_mad_u64_u32": _sp_mad64, "v_mad_i64_i32": _sp_mad64,
    "v_div_scale_f32": _sp_div_scale,
    "v_readfirstlane_b32": _sp_readlane, "v_readlane_b32": _sp_readlane, "v_writelane_b32": _sp_readlane,
    "v_mbcnt_lo_u32_b32": _sp_mbcnt, "v_mbcnt_hi_u32_b32": _sp_mbcnt,
    "v_accvgpr_read_b32": _sp_accvgpr, "v_accvgpr_write_b32": _sp_accvgpr, "v_accvgpr_mov_b32": _sp_accvgpr,
    "v_permlane32_swap_b32": _sp_permlane_swap, "v_permlane16_swap_b32": _sp_permlane_swap,
    "v_nop": _sp_nop,
    "v_bitop3_b32": _sp_bitop3, "v_bitop3_b16": _sp_bitop3,
}
_VSPECIAL.update(CVT_SPECIAL)
