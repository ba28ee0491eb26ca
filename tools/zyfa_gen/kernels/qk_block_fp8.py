"""zyfa_fp8_qk_block_32x128: one 32x128 block of S = Q Kᵀ in e4m3fn with the scaled f8f6f4 MFMA (gfx950).

The pipeline proof for the FP8 generator: buffer loads, ``v_mfma_scale_f32_32x32x64_f8f6f4``
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

Registers are named virtual registers (allocated by zyfa_gen.regs; the pressure is in the .s banner); the
kernarg pointer s[0:1] and the workitem id v0 are pinned by the hardware ABI. Kernel arguments are loaded from
the ARGS list (zyfa_gen.kernel.load_kernargs), s_waitcnt and s_nop are inserted by zyfa_gen.passes. Layouts
(one wave; l = lane id, i = l % 32, h = l // 32):
  A (Q) operands q_a0 (head dims 0..63), q_a1 (64..127): 8 VGPRs, lane holds row i, bytes 0-15 = dims
    16h..16h+15 and bytes 16-31 = dims 32+16h.. of that 64-dim step (gfx950-facts.md §1.2 f8f6f4 layout).
  B (K) operands k_b{t}_{s} for key tile t (keys 32t..32t+31) and step s, same layout by key.
  Scales: q_s{s} = q_scale[i, 2s+h]; k_s{t}_{s} = k_scale[32t+i, 2s+h] (scale of row i / key i for K-block b is
    read from lane 32b+i, §1.4; block b of step s = 2s+h).
  Accumulators acc{t} (16 VGPRs) = S[:, 32t..32t+31]; register r of lane l holds row 8(r//4)+4h+r%4, column i
    (§1.2 C/D layout).
"""
from __future__ import annotations

import dataclasses

from ..ir import Program
from ..kernel import Arg, KernelSpec, load_kernargs

NAME = "zyfa_fp8_qk_block_32x128"
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


@dataclasses.dataclass(frozen=True)
class Config:
    """Block shape: m query rows x n keys x d head dims (the kernel is written for one 32x32x64 MFMA tile
    grid: m = 32, d = 128, n a multiple of 32)."""
    m: int = 32
    n: int = 128
    d: int = 128

    @property
    def name(self) -> str:
        return f"zyfa_fp8_qk_block_{self.m}x{self.n}"


CONFIGS = [Config()]


def _buffer_rsrc(p: Program, rsrc, base, num_records):
    """V# in rsrc (4 SGPRs): 48-bit base, stride 0, num_records bytes (SGPR or constant), dword3 0x00020000."""
    p.s_mov_b32(rsrc[0], base[0])
    p.s_and_b32(rsrc[1], base[1], "0xffff", comment="base[47:32], stride = 0")
    p.s_mov_b32(rsrc[2], num_records if not isinstance(num_records, int) else hex(num_records))
    p.s_mov_b32(rsrc[3], hex(BUF_DWORD3))


def build(cfg: Config = Config()) -> KernelSpec:
    if (cfg.m, cfg.d) != (32, 128) or cfg.n % 32 or not 32 <= cfg.n <= 128:
        raise ValueError(f"unsupported QK block config {cfg}")
    M, N, D = cfg.m, cfg.n, cfg.d
    tiles = N // 32
    p = Program()
    kern = p.sreg("kernarg_ptr", 2, pin=0)
    lane = p.vreg("lane", pin=0)
    p.comment("kernel arguments (offsets from ARGS)")
    arg = load_kernargs(p, ARGS, kern)
    p.comment("lane decomposition: i = l % 32, h = l / 32")
    i_, h_ = p.vreg("i"), p.vreg("h")
    h16, soff = p.vreg("h16"), p.vreg("scale_off")
    p.v_and_b32_e32(i_, 31, lane)
    p.v_lshrrev_b32_e32(h_, 5, lane)
    p.v_lshlrev_b32_e32(h16, 4, h_, comment="16 h")
    p.v_lshl_add_u32(soff, i_, 2, h_, comment="scale offset 4 i + h")
    p.comment("extents in bytes: (rows-1)*stride + row bytes")
    q_ext, k_ext, s_row, s_ext = p.sreg("q_extent"), p.sreg("k_extent"), p.sreg("s_row_bytes"), p.sreg("s_extent")
    p.s_mul_i32(q_ext, arg["q_stride"], M - 1)
    p.s_add_u32(q_ext, q_ext, D)
    p.s_mul_i32(k_ext, arg["k_stride"], N - 1)
    p.s_add_u32(k_ext, k_ext, D)
    p.s_lshl_b32(s_row, arg["s_stride"], 2, comment="s row stride in bytes")
    p.s_mul_i32(s_ext, s_row, M - 1)
    p.s_add_u32(s_ext, s_ext, 4 * N)
    rs = {n: p.sreg(f"rsrc_{n}", 4) for n in ("q", "k", "q_scale", "k_scale", "s")}
    _buffer_rsrc(p, rs["q"], arg["q"], q_ext)
    _buffer_rsrc(p, rs["k"], arg["k"], k_ext)
    _buffer_rsrc(p, rs["q_scale"], arg["q_scale"], M * 4)
    _buffer_rsrc(p, rs["k_scale"], arg["k_scale"], N * 4)
    _buffer_rsrc(p, rs["s"], arg["s"], s_ext)
    p.comment("per-lane offsets: Q row i, K key i of the tile, S rows 4h.., column i")
    qoff, koff, sofs = p.vreg("q_off"), p.vreg("k_off"), p.vreg("s_off")
    p.v_mul_lo_u32(qoff, i_, arg["q_stride"])
    p.v_add_u32_e32(qoff, qoff, h16, comment="q: i*q_stride + 16h")
    p.v_mul_lo_u32(koff, i_, arg["k_stride"])
    p.v_add_u32_e32(koff, koff, h16, comment="k: i*k_stride + 16h")
    s4 = p.sreg("s_4rows")
    p.s_lshl_b32(s4, s_row, 2, comment="4 rows of s in bytes")
    p.v_mul_lo_u32(sofs, h_, s4)
    p.v_lshl_add_u32(sofs, i_, 2, sofs, comment="s: 4h rows + 4i bytes")
    key_tile_off = ["0"]
    for t in range(1, tiles):
        r = p.sreg(f"k_tile{t}_off")
        p.s_mul_i32(r, arg["k_stride"], 32 * t, comment=f"{32 * t} keys in bytes")
        key_tile_off.append(r)

    p.comment(f"loads: Q (2 K-steps x 2 halves), K ({tiles} tiles x 2 steps x 2 halves), scales")
    qa = [p.vreg(f"q_a{st}", 8) for st in range(2)]
    for st in range(2):
        for half in range(2):
            p.buffer_load_dwordx4(qa[st][4 * half:4 * half + 4], qoff, rs["q"], 0, offen=True,
                                  offset=64 * st + 32 * half)
    kb = [[p.vreg(f"k_b{t}_{st}", 8) for st in range(2)] for t in range(tiles)]
    for t in range(tiles):
        for st in range(2):
            for half in range(2):
                p.buffer_load_dwordx4(kb[t][st][4 * half:4 * half + 4], koff, rs["k"], key_tile_off[t],
                                      offen=True, offset=64 * st + 32 * half)
    qs = [p.vreg(f"q_s{st}") for st in range(2)]
    ks = [[p.vreg(f"k_s{t}_{st}") for st in range(2)] for t in range(tiles)]
    for st in range(2):
        p.buffer_load_ubyte(qs[st], soff, rs["q_scale"], 0, offen=True, offset=2 * st)
    for t in range(tiles):
        for st in range(2):
            p.buffer_load_ubyte(ks[t][st], soff, rs["k_scale"], 0, offen=True, offset=128 * t + 2 * st)
    p.comment("row offsets of the accumulator registers: (8(r/4) + r%4) * s row bytes")
    row_off = [p.sreg(f"s_row{r}_off") for r in range(16)]
    for r in range(16):
        p.s_mul_i32(row_off[r], s_row, 8 * (r // 4) + r % 4)

    p.comment("S tile t = Q K_t^T: two scaled MFMAs (head dims 0..63, 64..127), accumulate chain")
    acc = [p.vreg(f"acc{t}", 16) for t in range(tiles)]
    for t in range(tiles):
        for st in range(2):
            p.mfma_scale_f32_32x32x64_fp8(acc[t], qa[st], kb[t][st], 0 if st == 0 else acc[t], qs[st], ks[t][st],
                                          comment=f"tile {t}, dims {64 * st}..{64 * st + 63}")
    p.comment("stores: register r of lane l -> S[8(r/4) + 4h + r%4, 32t + i]")
    for t in range(tiles):
        for r in range(16):
            p.buffer_store_dword(acc[t][r], sofs, rs["s"], row_off[r], offen=True, offset=128 * t)
    p.s_endpgm()
    return KernelSpec(cfg.name, __doc__.split("\n\n")[0], ARGS, p, workgroup_size=64)
