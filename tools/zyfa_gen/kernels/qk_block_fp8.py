"""zyfa_fp8_qk_block_32x128: one 32x128 block of S = Q Kᵀ in e4m3fn with the scaled f8f6f4 MFMA (gfx950).

The pipeline proof for the FP8 generator (issue 5 item 4): buffer loads, ``v_mfma_scale_f32_32x32x64_f8f6f4``
with per-row, per-32-k-block E8M0 scales in VGPRs, fp32 stores. One workgroup = one wave64 (grid 1x1x1).

Inputs (all row-major, "stride" = distance between rows):
  q        [32, 128] e4m3fn (OCP, gfx950), row stride q_stride elements (= bytes)
  k        [128, 128] e4m3fn: 128 keys x head_dim 128, row stride k_stride elements (= bytes)
  q_scale  [32, 4] uint8 E8M0, contiguous: scale of Q row m for head-dim block b (dims 32b..32b+31)
  k_scale  [128, 4] uint8 E8M0, contiguous: scale of key n for head-dim block b
  s        [32, 128] fp32 output, row stride s_stride elements (4 bytes each)
Result: s[m, n] = sum_b 2^(q_scale[m,b] + k_scale[n,b] - 254) * sum_{d in block b} q[m,d] * k[n,d]
(fp32 accumulation inside the MFMA; gfx950-facts.md §1.4, §8.5, §8.8). Scale bytes must be in [1, 254]
(0 = 2^-127 and 255 are avoided, §8.9, §8.10). Sizes are fixed; buffer descriptors bound every access to the
exact extent of each tensor (out-of-range lanes read 0 / drop stores, §6), so no stride makes it read or write
outside the tensors.

Register map (one wave; l = lane id, i = l % 32, h = l // 32):
  s[0:1] kernarg pointer, s2 workgroup id x; v0 = l.
  A (Q) operands: v[8:15] (head dims 0..63), v[16:23] (64..127): lane holds row i, bytes 0-15 = dims
    16h..16h+15 and bytes 16-31 = dims 32+16h.. of that 64-dim step (gfx950-facts.md §1.2 f8f6f4 layout).
  B (K) operands: v[24+16t+8s : +8] for key tile t (keys 32t..32t+31) and step s, same layout by key.
  Scales: Q v88 (step 0), v89 (step 1) = q_scale[i, 2s+h]; K v90+2t+s = k_scale[32t+i, 2s+h]
    (scale of row i / key i for K-block b is read from lane 32b+i, §1.4; block b of step s = 2s+h).
  Accumulators: v[128+16t : +16] = S[:, 32t..32t+31]; register r of lane l holds row 8(r//4)+4h+r%4,
    column i (§1.2 C/D layout).
"""
from __future__ import annotations

from ..ir import Program, S, V
from ..kernel import Arg, KernelSpec

NAME = "zyfa_fp8_qk_block_32x128"
M, N, D = 32, 128, 128
BUF_DWORD3 = 0x00020000  # V# dword3 on gfx9/gfx950 (CK_TILE_BUFFER_RESOURCE_3RD_DWORD; gfx950-facts.md §6)

ARGS = [
    Arg("q", "ptr", "const std::uint8_t*", "Q [32, 128] e4m3fn, row stride q_stride", const=True),
    Arg("k", "ptr", "const std::uint8_t*", "K [128 keys, 128] e4m3fn, row stride k_stride", const=True),
    Arg("q_scale", "ptr", "const std::uint8_t*", "E8M0 scales of Q, [32, 4] contiguous (row, 32-dim block)",
        const=True),
    Arg("k_scale", "ptr", "const std::uint8_t*", "E8M0 scales of K, [128, 4] contiguous (key, 32-dim block)",
        const=True),
    Arg("s", "ptr", "float*", "S [32, 128] fp32 output, row stride s_stride"),
    Arg("q_stride", "u32", "std::uint32_t", "row stride of q in elements (bytes), >= 128"),
    Arg("k_stride", "u32", "std::uint32_t", "row stride of k in elements (bytes), >= 128"),
    Arg("s_stride", "u32", "std::uint32_t", "row stride of s in elements (4 bytes each), >= 128"),
]


def _buffer_rsrc(p: Program, rsrc, base_lo, base_hi, num_records_sgpr=None, num_records_imm=None):
    """V# in rsrc (4 SGPRs): 48-bit base, stride 0, num_records bytes, dword3 0x00020000."""
    p.op("s_mov_b32", rsrc[0], base_lo)
    p.op("s_and_b32", rsrc[1], base_hi, "0xffff", comment="base[47:32], stride = 0")
    if num_records_sgpr is not None:
        p.op("s_mov_b32", rsrc[2], num_records_sgpr)
    else:
        p.op("s_mov_b32", rsrc[2], hex(num_records_imm))
    p.op("s_mov_b32", rsrc[3], hex(BUF_DWORD3))


def build() -> KernelSpec:
    p = Program()
    kern = S(0, 2)
    lane = V(0)
    p.comment("kernel arguments")
    p.op("s_load_dwordx8", S(4, 8), kern, "0x0", comment="q, k, q_scale, k_scale")
    p.op("s_load_dwordx4", S(12, 4), kern, "0x20", comment="s, q_stride, k_stride")
    p.op("s_load_dword", S(16), kern, "0x30", comment="s_stride")
    p.comment("lane decomposition: v1 = i = l % 32, v2 = h = l / 32")
    p.op("v_and_b32_e32", V(1), 31, lane)
    p.op("v_lshrrev_b32_e32", V(2), 5, lane)
    p.op("v_lshlrev_b32_e32", V(4), 4, V(2), comment="16 h")
    p.op("v_lshl_add_u32", V(6), V(1), 2, V(2), comment="scale offset 4 i + h")
    p.op("s_waitcnt", "lgkmcnt(0)")
    p.comment("extents in bytes: (rows-1)*stride + row bytes")
    p.op("s_mul_i32", S(17), S(14), M - 1)
    p.op("s_add_u32", S(17), S(17), D)
    p.op("s_mul_i32", S(18), S(15), N - 1)
    p.op("s_add_u32", S(18), S(18), D)
    p.op("s_lshl_b32", S(19), S(16), 2, comment="s row stride in bytes")
    p.op("s_mul_i32", S(40), S(19), M - 1)
    p.op("s_add_u32", S(40), S(40), 4 * N)
    _buffer_rsrc(p, S(20, 4), S(4), S(5), num_records_sgpr=S(17))
    _buffer_rsrc(p, S(24, 4), S(6), S(7), num_records_sgpr=S(18))
    _buffer_rsrc(p, S(28, 4), S(8), S(9), num_records_imm=M * 4)
    _buffer_rsrc(p, S(32, 4), S(10), S(11), num_records_imm=N * 4)
    _buffer_rsrc(p, S(36, 4), S(12), S(13), num_records_sgpr=S(40))
    p.comment("per-lane offsets: Q row i, K key i of the tile, S rows 4h.., column i")
    p.op("v_mul_lo_u32", V(3), V(1), S(14))
    p.op("v_add_u32_e32", V(3), V(3), V(4), comment="q: i*q_stride + 16h")
    p.op("v_mul_lo_u32", V(5), V(1), S(15))
    p.op("v_add_u32_e32", V(5), V(5), V(4), comment="k: i*k_stride + 16h")
    p.op("s_lshl_b32", S(41), S(19), 2, comment="4 rows of s in bytes")
    p.op("v_mul_lo_u32", V(7), V(2), S(41))
    p.op("v_lshl_add_u32", V(7), V(1), 2, V(7), comment="s: 4h rows + 4i bytes")
    p.op("s_lshl_b32", S(42), S(15), 5, comment="32 keys in bytes")
    p.op("s_lshl_b32", S(43), S(15), 6)
    p.op("s_mul_i32", S(44), S(15), 96)
    key_tile_off = ["0", S(42), S(43), S(44)]

    p.comment("loads: Q (2 K-steps x 2 halves), K (4 tiles x 2 steps x 2 halves), scales")
    qa = [V(8, 8), V(16, 8)]
    for st in range(2):
        for half in range(2):
            p.op("buffer_load_dwordx4", qa[st][4 * half:4 * half + 4], V(3), S(20, 4), 0, offen=True,
                 offset=64 * st + 32 * half)
    kb = [[V(24 + 16 * t + 8 * st, 8) for st in range(2)] for t in range(4)]
    for t in range(4):
        for st in range(2):
            for half in range(2):
                p.op("buffer_load_dwordx4", kb[t][st][4 * half:4 * half + 4], V(5), S(24, 4), key_tile_off[t],
                     offen=True, offset=64 * st + 32 * half)
    qs = [V(88), V(89)]
    ks = [[V(90 + 2 * t + st) for st in range(2)] for t in range(4)]
    for st in range(2):
        p.op("buffer_load_ubyte", qs[st], V(6), S(28, 4), 0, offen=True, offset=2 * st)
    for t in range(4):
        for st in range(2):
            p.op("buffer_load_ubyte", ks[t][st], V(6), S(32, 4), 0, offen=True, offset=128 * t + 2 * st)
    p.comment("row offsets of the accumulator registers: s[48+r] = (8(r/4) + r%4) * s row bytes")
    for r in range(16):
        p.op("s_mul_i32", S(48 + r), S(19), 8 * (r // 4) + r % 4)
    p.op("s_waitcnt", "vmcnt(0)")

    p.comment("S tile t = Q K_t^T: two scaled MFMAs (head dims 0..63, 64..127), accumulate chain")
    acc = [V(128 + 16 * t, 16) for t in range(4)]
    for t in range(4):
        for st in range(2):
            p.mfma_scale_f32_32x32x64_fp8(acc[t], qa[st], kb[t][st], 0 if st == 0 else acc[t], qs[st], ks[t][st],
                                          comment=f"tile {t}, dims {64 * st}..{64 * st + 63}")
    p.comment("stores: register r of lane l -> S[8(r/4) + 4h + r%4, 32t + i]")
    for t in range(4):
        for r in range(16):
            p.op("buffer_store_dword", acc[t][r], V(7), S(36, 4), S(48 + r), offen=True, offset=128 * t)
    p.op("s_endpgm")
    return KernelSpec(NAME, __doc__.split("\n\n")[0], ARGS, p, workgroup_size=64)
