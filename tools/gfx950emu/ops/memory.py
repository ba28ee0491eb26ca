"""Vector memory semantics: global_/flat_ (flat treated as global), scratch_, buffer_ (raw V#, bounds per
``Semantics.buffer_oob``) and LDS-DMA loads; facts §6."""
from __future__ import annotations

import re

import numpy as np

from ..asm import Instr, M0, Operand
from ..errors import EmuError
from .common import (LANES, M32, M64, _b64, _check_mods, _load_result, _mem_type, _need, _reg_keys, _store_reader,
    _vidx, rd32, rd64, sread)



class MemoryUnit:
    """Compiler methods for VMEM instructions (mixed into :class:`gfx950emu.ops.Compiler`)."""

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

