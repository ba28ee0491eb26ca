"""Scalar unit semantics: SOPP (waits, branches, barriers), SOP1/SOP2/SOPK/SOPC ALU ops and their SCC rules,
save-exec ops, scalar memory loads (SMEM)."""
from __future__ import annotations

import re

import numpy as np

from gfx950isa.table import CALLS as _CALLS
from ..asm import EXEC, Instr, VCC
from ..errors import EmuError
from .common import BARRIER, ENDPGM, M32, M64, _check_mods, _need, _reg_keys, sread, swrite



class ScalarUnit:
    """Compiler methods for scalar instructions (mixed into :class:`gfx950emu.ops.Compiler`)."""

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
