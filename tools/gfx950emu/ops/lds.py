"""LDS semantics: ds_read/ds_write (incl. read2/write2, d16), ds_bpermute/ds_permute, ds_swizzle."""
from __future__ import annotations

import re

import numpy as np

from gfx950isa.table import DS_TYPES

from ..asm import Instr
from ..errors import EmuError
from .common import LANES, _b64, _check_mods, _load_result, _mem_type, _need, _reg_keys, _store_reader, _vidx, rd32



class LdsUnit:
    """Compiler method for DS instructions (mixed into :class:`gfx950emu.ops.Compiler`)."""

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
        size, fmt = _mem_type(DS_TYPES[t])
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

