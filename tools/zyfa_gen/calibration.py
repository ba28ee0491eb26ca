"""Calibration streams for the cycle model: one 32-query x 128-key FP8 hd128 attention block step per loop
iteration, built with the generator IR (virtual registers, typed builders, waitcnt and nop passes) the way the
FP8 kernels are written, but **not a numerically complete kernel** (the softmax is its instruction mix, K and V
are assumed resident in LDS, nothing is stored). It exists to check the cycle model (tools/gfx950isa/cycles.py)
against ZYFA's published per-block figures; docs/cycle-model.md has the table.

Per block (one wave; l = lane, 64 S values per lane):

* K operands: 16 ``ds_read_b128`` (8 B-operands of 8 VGPRs); QKᵀ: 8 ``v_mfma_scale_f32_32x32x64_f8f6f4``
  (16 passes each: 8 x 64 = 512 cycles);
* softmax, Lean P: 96 VALU slots per lane — 16 ``v_max3_f32`` (block max), 32 ``v_pk_fma_f32`` (scale and offset,
  two values each), 32 ``v_cvt_pk_fp8_f32`` (two e4m3 codes each, low then high half), 16 ``v_pk_add_f32`` (row
  sums). This op mix is our reconstruction of the published 384-cycle budget (96 slots x 4 cycles), not ZYFA's
  code; exact exp adds one ``v_exp_f32`` per value (64);
* V operands: 16 ``ds_read_b128``; P·V: 8 scaled MFMAs into AGPR accumulators (512 cycles);
* the wave's share of loading the next K and V tiles into LDS: 4 ``buffer_load_dwordx4 ... lds`` of 1 KB (eight
  waves of a workgroup share one 32 KB K+V block), and one ``s_barrier`` per block.

``schedule="one_wave"``: one wave per SIMD, QKᵀ, V reads, softmax, K reads for the next block, P·V (the K reads
overlap P·V; nothing overlaps the softmax). ``schedule="pingpong"``: two waves per SIMD
running the same body split in two phases by ``s_barrier`` (Triton's AMD BlockPingpong pattern): phase A = the
MFMAs (P·V of the previous block, then QKᵀ) under ``s_setprio 1``, phase B = softmax and LDS reads at priority 0;
wave 1 starts one barrier late, so one wave's MFMAs overlap the other's vector work.
"""
from __future__ import annotations

from .emit import emit_kernel
from .ir import Program, S
from .kernel import KernelSpec

__all__ = ["block_step", "BLOCKS"]

BLOCKS = 8  # loop iterations modelled (steady state dominates)


def _body(p: Program, r: dict, softmax: str, pingpong: bool, complete: bool):
    """One block step. r: the registers that live across iterations."""
    def mfma_qk():
        for t in range(4):
            for st in range(2):
                p.mfma_scale_f32_32x32x64_fp8(r["s"][t], r["q"][st], r["kb"][t][st], 0 if st == 0 else r["s"][t],
                                              r["sc"], r["sc"])

    def mfma_pv():
        # P.V accumulates into the AGPR accumulators; the block scale is the E8M0 operand of P (sb)
        for t in range(4):
            for st in range(2):
                p.mfma_scale_f32_32x32x64_fp8(r["o"][t], r["p"][st], r["vb"][t][st], r["o"][t], r["sc"], r["sb"])

    def acc_update():
        # the accumulator is rescaled by alpha only when a row max grew (a wave-uniform test; in steady state the
        # branch around the rescale is taken): the test is what every block pays
        p.v_cmp_gt_f32_e64(r["big"], r["c1"], r["alpha2"][0])
        p.s_cmp_lg_u64(r["big"], 0) if hasattr(p, "s_cmp_lg_u64") else p.op("s_cmp_lg_u64", r["big"], 0)

    def row_stats():
        # per-row scalars of a complete block step (the bit-exact block step's op list): the row max across the
        # two lane halves (v_permlane32_swap), m_new, alpha = exp2(m - m_new), kb, the Lean P offset and the E8M0
        # scale byte of P, the packed constants of the Lean P FMA
        p.v_mov_b32_e32(r["xa"], r["mx"])
        p.v_mov_b32_e32(r["xb"], r["mx"])
        p.op("v_permlane32_swap_b32", r["xa"], r["xb"])
        p.v_max3_f32(r["mblk"], r["mx"], r["xa"], r["xb"])
        p.v_max_f32_e32(r["mnew"], r["m"], r["mblk"])
        p.v_sub_f32_e32(r["alpha2"][0], r["m"], r["mnew"])
        p.v_exp_f32_e32(r["alpha2"][0], r["alpha2"][0])
        p.v_mov_b32_e32(r["alpha2"][1], r["alpha2"][0])
        p.v_sub_f32_e32(r["kbf"], r["mnew"], r["mblk"])
        p.v_min_f32_e32(r["kbf"], r["c255"], r["kbf"])
        p.v_cvt_u32_f32_e32(r["kbi"], r["kbf"])
        p.v_sub_u32_e32(r["sb"], 127, r["kbi"])
        p.v_cmp_gt_u32_e64(r["big"], r["kbi"], r["c123"])
        p.v_cndmask_b32_e64(r["sb"], r["sb"], r["c135"], r["big"])
        p.v_lshl_add_u32(r["bias2"][0], r["kbi"], 3, r["c126"])
        p.v_cvt_f32_u32_e32(r["bias2"][0], r["bias2"][0])
        p.v_fma_f32(r["bias2"][0], r["mnew"], -8.0, r["bias2"][0])
        p.v_mov_b32_e32(r["bias2"][1], r["bias2"][0])
        p.v_mov_b32_e32(r["m"], r["mnew"])

    def row_sum():
        # l_blk across the lane halves, l = fma(l, alpha, l_blk s_blk)
        p.v_add_f32_e32(r["xa"], r["sum2"][0], r["sum2"][1])
        p.v_mov_b32_e32(r["xb"], r["xa"])
        p.op("v_permlane32_swap_b32", r["xa"], r["xb"])
        p.v_add_f32_e32(r["xa"], r["xa"], r["xb"])
        p.v_sub_u32_e32(r["nexp"], 0, r["kbi"])
        p.v_ldexp_f32(r["xa"], r["xa"], r["nexp"])
        p.v_fma_f32(r["l"], r["l"], r["alpha2"][0], r["xa"])

    def p_exchange():
        # the Lean P codes into the B-operand layout of P.V: two v_permlane32_swap per 32 keys
        for st in range(2):
            p.op("v_permlane32_swap_b32", r["p"][st][0], r["p"][st][1])
            p.op("v_permlane32_swap_b32", r["p"][st][2], r["p"][st][3])

    def lds_k():
        for t in range(4):
            for st in range(2):
                for h in range(2):
                    p.ds_read_b128(r["kb"][t][st][4 * h:4 * h + 4], r["lds_k"], offset=512 * (4 * t + 2 * st + h))

    def lds_v():
        for t in range(4):
            for st in range(2):
                for h in range(2):
                    p.ds_read_b128(r["vb"][t][st][4 * h:4 * h + 4], r["lds_v"], offset=512 * (4 * t + 2 * st + h))

    def dma_next():
        # this wave's quarter of the next K and V tiles (8 waves share a 32 KB K+V block): 4 x 1 KB LDS-DMA
        for j in range(4):
            p.s_mov_b32("m0", hex(0x4000 + 1024 * j))
            p.op("buffer_load_dwordx4", r["gofs"], r["rsrc"], 0, offen=True, offset=1024 * j, lds=True)

    def softmax_ops():
        s = r["s"]
        for j in range(16):
            t = j // 4
            p.v_max3_f32(r["mx"], s[t][j % 16], s[(t + 1) % 4][j % 16], r["mx"])
        if complete:
            row_stats()
        for t in range(4):
            for j in range(0, 16, 2):
                p.v_pk_fma_f32(s[t][j:j + 2], s[t][j:j + 2], r["scale2"], r["bias2"])
        if softmax == "exact":
            for t in range(4):
                for j in range(16):
                    p.v_exp_f32_e32(s[t][j], s[t][j])
        for t in range(4):
            for j in range(0, 16, 4):
                dst = r["p"][t // 2][(t % 2) * 4 + j // 4]
                p.v_cvt_pk_fp8_f32(dst, s[t][j], s[t][j + 1])
                p.op("v_cvt_pk_fp8_f32", dst, s[t][j + 2], s[t][j + 3], op_sel=[0, 0, 1])
        for t in range(4):
            for j in range(0, 16, 4):
                p.v_pk_add_f32(r["sum2"], r["sum2"], s[t][j:j + 2])
        if complete:
            row_sum()
            p_exchange()

    if not pingpong:
        # software-pipelined within the wave: K of the next block is read while P.V runs; the previous block's
        # accumulator update runs under the QK^T MFMAs
        mfma_qk()
        if complete:
            acc_update()
        dma_next()
        lds_v()
        softmax_ops()
        lds_k()
        mfma_pv()
        p.s_barrier()  # the next block's K/V landed in LDS for every wave of the workgroup
        return
    # phase A: matrix work at high priority
    p.s_setprio(1)
    mfma_pv()
    mfma_qk()
    p.s_setprio(0)
    p.s_barrier()
    # phase B: vector work and the LDS reads for the next block
    dma_next()
    if complete:
        acc_update()
    softmax_ops()
    lds_k()
    lds_v()
    p.s_barrier()


def block_step(softmax: str = "lean", schedule: str = "one_wave", wave: int = 0, blocks: int = BLOCKS,
               complete: bool = False) -> str:
    """Assembly text of a calibration stream (see the module docstring). `wave` selects the ping-pong role
    (1: starts one barrier late, 0: ends with the extra barrier). Loop label ``.Lblock`` (trip count `blocks`)."""
    if softmax not in ("lean", "exact") or schedule not in ("one_wave", "pingpong"):
        raise ValueError(f"unknown calibration stream {softmax}/{schedule}")
    pingpong = schedule == "pingpong"
    p = Program()
    r = {
        "q": [p.vreg(f"q{st}", 8) for st in range(2)],
        "kb": [[p.vreg(f"k{t}_{st}", 8) for st in range(2)] for t in range(4)],
        "vb": [[p.vreg(f"v{t}_{st}", 8) for st in range(2)] for t in range(4)],
        "s": [p.vreg(f"s{t}", 16) for t in range(4)],
        "p": [p.vreg(f"p{st}", 8) for st in range(2)],
        "o": [p.areg(f"o{t}", 16) for t in range(4)],
        "sc": p.vreg("scale_e8m0"), "mx": p.vreg("max"), "scale2": p.vreg("scale2", 2), "bias2": p.vreg("bias2", 2),
        "sum2": p.vreg("sum2", 2), "lds_k": p.vreg("lds_k"), "lds_v": p.vreg("lds_v"),
        "gofs": p.vreg("global_off"), "rsrc": p.sreg("rsrc", 4),
        "sb": p.vreg("scale_p_e8m0"), "c1": p.vreg("c1"), "alpha2": p.vreg("alpha2", 2),
        "xa": p.vreg("swap_a"), "xb": p.vreg("swap_b"), "mblk": p.vreg("m_blk"), "mnew": p.vreg("m_new"),
        "m": p.vreg("m"), "l": p.vreg("l"), "kbf": p.vreg("kb_f32"), "kbi": p.vreg("kb"), "nexp": p.vreg("nexp"),
        "c255": p.vreg("c255"), "c123": p.vreg("c123"), "c135": p.vreg("c135"), "c126": p.vreg("c126"),
        "big": p.sreg("kb_big", 2),
    }
    lane = p.vreg("lane", pin=0)
    n, i = p.sreg("blocks"), p.sreg("block")
    p.v_lshlrev_b32_e32(r["lds_k"], 4, lane)
    p.v_add_u32_e32(r["lds_v"], "0x2000", r["lds_k"])
    p.v_lshlrev_b32_e32(r["gofs"], 4, lane)
    for j in range(4):
        p.s_mov_b32(r["rsrc"][j], 0)
    for name in ("sc", "mx"):
        p.v_mov_b32_e32(r[name], 127)
    for name in ("scale2", "bias2", "sum2"):
        p.v_mov_b32_e32(r[name][0], 0)
        p.v_mov_b32_e32(r[name][1], 0)
    for st in range(2):
        for j in range(8):
            p.v_mov_b32_e32(r["q"][st][j], 0)
            p.v_mov_b32_e32(r["p"][st][j], 0)
    for t in range(4):
        for j in range(16):
            p.v_accvgpr_write_b32(r["o"][t][j], 0)
    p.v_mov_b32_e32(r["sb"], 127)
    if complete:
        for name, val in (("m", "0xff800000"), ("l", 0), ("c255", "255.0"), ("c123", 123), ("c135", 135),
                          ("c126", 126), ("c1", "1.0")):
            p.v_mov_b32_e32(r[name], val)
        p.v_mov_b32_e32(r["alpha2"][0], 0)
        p.v_mov_b32_e32(r["alpha2"][1], 0)
    # K (and for ping-pong V) of block 0 in registers before the loop
    for t in range(4):
        for st in range(2):
            for h in range(2):
                p.ds_read_b128(r["kb"][t][st][4 * h:4 * h + 4], r["lds_k"], offset=512 * (4 * t + 2 * st + h))
                if pingpong:
                    p.ds_read_b128(r["vb"][t][st][4 * h:4 * h + 4], r["lds_v"], offset=512 * (4 * t + 2 * st + h))
    if pingpong:
        for t in range(4):
            for j in range(16):
                p.v_mov_b32_e32(r["s"][t][j], 0)
        if wave == 1:
            p.s_barrier()
    p.s_mov_b32(n, blocks)
    p.s_mov_b32(i, 0)
    with p.loop(".Lblock", i, n):
        _body(p, r, softmax, pingpong, complete)
    if pingpong and wave == 0:
        p.s_barrier()
    # keep the results live to the end (the allocator rejects dead values)
    for t in range(4):
        p.v_accvgpr_read_b32(r["sc"], r["o"][t][0])
    if complete:
        p.v_max_f32_e32(r["sc"], r["sc"], r["l"])
    p.v_max_f32_e32(r["sc"], r["sc"], r["sum2"][0])
    p.v_max_f32_e32(r["sc"], r["sc"], r["mx"])
    p.v_max_f32_e32(r["sc"], r["sc"], r["s"][0][0])
    p.v_readfirstlane_b32(S(4), r["sc"])
    p.s_endpgm()
    name = f"zyfa_cal_{softmax}_{schedule}_w{wave}{'_complete' if complete else ''}"
    return emit_kernel(KernelSpec(name, f"{name}: cycle-model calibration stream (not a kernel)", [], p,
                                  workgroup_size=128 if pingpong else 64, lds_bytes=32768), "tools/zyfa_gen/calibration.py")
