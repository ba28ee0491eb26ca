"""MFMA semantics (shapes from :mod:`gfx950isa.table`, layouts and arithmetic in :mod:`gfx950emu.mfma`)."""
from __future__ import annotations

import numpy as np

from ..asm import EXEC, Instr
from ..errors import EmuError
from ..mfma import F8F6F4_FORMATS, MFMA_SHAPES, c_to_matrix, gather_matrix, matrix_to_d, mfma_compute
from .common import M32, _check_mods, _need, _vidx



class MatrixUnit:
    """Compiler method for MFMA instructions (mixed into :class:`gfx950emu.ops.Compiler`)."""

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

