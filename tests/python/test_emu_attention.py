"""End-to-end: zyfa's BF16 forward attention kernel (include/zyfa/bf16), compiled for gfx950 by clang-22 at test
time (tests/emu_kernels/bf16_attention.hip), runs in the gfx950 emulator on small shapes and matches an fp64 numpy
reference within bf16 tolerance: head dims 128 and 192/128 (and every other built-in pair once), the padded custom
pair (80, 80), causal (bottom-right) and not, seqlen not a multiple of the 128-row / 64-key tiles, GQA, rows that
see no key, a strided q, and Inf/NaN poison in K and V at keys a row must not see. The variable-length form
(fwd_kernel<Config, true>) on packed ragged batches: bit for bit the fixed-length kernel run on each sequence's
rows of the same buffers, within bf16 tolerance of fp64 per sequence, nothing written outside the sequences' rows,
Inf/NaN keys of neighbouring sequences never reaching a row."""
import json
import re
import pathlib
import struct
import subprocess

import ml_dtypes
import numpy as np
import pytest

from gfx950emu import Machine, Program, Semantics
from gfx950emu.toolchain import compile_hip_to_asm
from head_dims import builtin_head_dims

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIELDS = ["q", "k", "v", "out", "lse", "q_batch_stride", "q_row_stride", "q_head_stride", "k_batch_stride",
          "k_row_stride", "k_head_stride", "v_batch_stride", "v_row_stride", "v_head_stride", "o_batch_stride",
          "o_row_stride", "o_head_stride", "batch", "seqlen_q", "seqlen_k", "num_heads", "group_size",
          "num_m_blocks", "causal", "causal_offset", "scale_log2", "lse_batch_stride", "lse_head_stride",
          "cu_seqlens_q", "cu_seqlens_k", "total_q", "total_k"]

_LAYOUT_SRC = r"""
#include <cstddef>
#include <cstdio>
#include <zyfa/bf16/fwd_args.hpp>
#include <zyfa/tile_config.hpp>
#define F(x) std::printf("\"%s\": [%zu, %zu], ", #x, offsetof(zyfa::bf16::FwdArgs, x), \
                         sizeof(((zyfa::bf16::FwdArgs*)0)->x));
int main() {
  std::printf("{");
  %FIELDS%
  std::printf("\"sizeof\": [%zu, 0]}\n", sizeof(zyfa::bf16::FwdArgs));
}
"""


_TEXT: dict = {}


def _build(tmp_path_factory, arch, semantics=None):
    d = tmp_path_factory.mktemp("attn_" + arch)
    # FwdArgs layout from the host compiler (the kernel takes the struct by value as its only argument)
    src = d / "layout.cpp"
    src.write_text(_LAYOUT_SRC.replace("%FIELDS%", " ".join(f"F({f})" for f in FIELDS)))
    exe = d / "layout"
    subprocess.run(["g++", "-std=c++17", f"-I{ROOT / 'include'}", str(src), "-o", str(exe)], check=True)
    layout = json.loads(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
    if arch not in _TEXT:
        _TEXT[arch] = compile_hip_to_asm(str(ROOT / "tests" / "emu_kernels" / "bf16_attention.hip"),
                                         str(d / "attn.s"), include_dirs=[str(ROOT / "include")], arch=arch)
    text = _TEXT[arch]
    prog = Program.from_asm_text(text, semantics)
    launch = {}
    configs = builtin_head_dims() + [(80, 80)]  # (80, 80): a custom pair on padded tiles
    for dqk, dv in configs:
        m = re.search(rf"zyfa_emu_launch_{dqk}_{dv}:\s*\.long\s+(\d+).*?\.long\s+(\d+).*?\.long\s+(\d+)", text, re.S)
        assert m, f"launch constants for ({dqk}, {dv}) not found in the assembly"
        launch[(dqk, dv)] = tuple(int(x) for x in m.groups())  # (dynamic LDS bytes, threads, BlockM)
    names = {}  # (dqk, dv) -> fixed-length kernel, (dqk, dv, "varlen") -> fwd_kernel<Config, true>
    for n in prog.kernels:
        for dqk, dv in configs:
            if f"KernelConfigILi{dqk}ELi{dv}E" in n:
                names[(dqk, dv, "varlen") if "Lb1EEEv" in n else (dqk, dv)] = n
    assert len(names) == 2 * len(configs), list(prog.kernels)
    return prog, names, layout, launch


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    return _build(tmp_path_factory, "gfx950")


@pytest.fixture(scope="module")
def kernel_fp32_block(tmp_path_factory):
    return _build(tmp_path_factory, "gfx950", Semantics(mfma_accumulate="fp32_block"))


@pytest.fixture(scope="module")
def kernel_gfx942(tmp_path_factory):
    return _build(tmp_path_factory, "gfx942")


def reference(q, k, v, causal, scale):
    """fp64 attention, bottom-right causal; rows that see no key: output 0, lse -inf."""
    b, sq, h, _ = q.shape
    sk, hk = k.shape[1], k.shape[2]
    g = h // hk
    out = np.zeros((b, sq, h, v.shape[3]))
    lse = np.full((b, h, sq), -np.inf)
    for bi in range(b):
        for hi in range(h):
            s = q[bi, :, hi].astype(np.float64) @ k[bi, :, hi // g].astype(np.float64).T * scale
            if causal:
                s = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + sk - sq, s, -np.inf)
            seen = np.isfinite(s).any(axis=1)
            mx = np.where(seen, s.max(axis=1), 0.0)
            e = np.exp(s - mx[:, None])
            l = e.sum(axis=1)
            out[bi, :, hi] = np.where(seen[:, None], (e @ v[bi, :, hi // g].astype(np.float64)) /
                                      np.where(seen, l, 1)[:, None], 0.0)
            lse[bi, hi] = np.where(seen, np.log(np.where(seen, l, 1)) + mx, -np.inf)
    return out, lse


def pack_args(layout, vals):
    buf = bytearray(layout["sizeof"][0])
    for f in FIELDS:
        off, size = layout[f]
        x = vals[f]
        if f == "scale_log2":
            buf[off:off + 4] = struct.pack("<f", x)
        else:
            buf[off:off + size] = int(x).to_bytes(size, "little", signed=x < 0)
    return bytes(buf)


CASES = [  # (dqk, dv, batch, seqlen_q, seqlen_k, num_heads, num_heads_k, causal, q_row_pad)
    (128, 128, 1, 100, 100, 2, 1, True, 0),     # GQA 2:1, one partial 128-row tile, 2 key tiles (last partial)
    (128, 128, 2, 70, 130, 2, 2, False, 0),     # batch 2, seqlen_k not a multiple of 64
    (128, 128, 1, 150, 77, 1, 1, True, 24),     # seqlen_q > seqlen_k: 73 rows see no key; strided q
    (192, 128, 1, 70, 150, 4, 2, True, 0),      # MLA head dims, GQA, causal
    (192, 128, 1, 129, 65, 1, 1, False, 0),     # 2 query tiles (129 rows), 2 key tiles
    (64, 64, 1, 100, 150, 2, 1, True, 0),       # the other built-ins, once each
    (256, 256, 1, 70, 90, 2, 2, False, 0),
    (80, 80, 1, 70, 90, 2, 1, True, 8),         # custom head dims, padded to 96 inside the kernel
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "hd{}x{}_b{}_q{}_k{}_h{}/{}_{}{}".format(
    c[0], c[1], c[2], c[3], c[4], c[5], c[6], "causal" if c[7] else "full", "_strided" if c[8] else ""))
def test_bf16_attention_matches_fp64(kernel, case):
    run_case(kernel, case)


def test_bf16_attention_gfx942_build(kernel_gfx942):
    """The same templates compiled for gfx942 (v_mfma_f32_32x32x8_bf16, the other lane layout) also run: the
    gfx9 ISA subset they use is common to both targets (bf16 only; gfx942's fp8 formats are not modelled)."""
    prog = kernel_gfx942[0]
    assert any(i.mnemonic == "v_mfma_f32_32x32x8_bf16" for i in prog.instrs)
    run_case(kernel_gfx942, CASES[3])


def test_bf16_attention_fp32_block_accumulation(kernel_fp32_block):
    """The tolerance does not depend on the (undocumented) MFMA accumulation order (gfx950-facts §7.8)."""
    run_case(kernel_fp32_block, CASES[0])


POISON_CASES = [  # (case, poisoned keys): causal tiles crossing the diagonal, Inf/NaN in K and V
    ((64, 64, 1, 2, 2, 1, 1, True, 0), [1]),                 # the smallest: row 0 must give exactly V[0]
    ((128, 128, 1, 130, 130, 1, 1, True, 0), [100, 129]),   # NaN at key 100 must not reach rows 0..99
    ((128, 128, 1, 40, 100, 2, 1, True, 0), [70, 99]),      # seqlen_q < seqlen_k, GQA
]


@pytest.mark.parametrize("case,keys", POISON_CASES, ids=lambda c: str(c))
def test_bf16_attention_masked_nonfinite_keys(kernel, case, keys):
    """Inf/NaN in K and V at keys a row must not see (causal) never reach that row; rows that see them are
    non-finite, as in the fp64 reference; K/V rows past seqlen_k (inside the last key tile) are NaN too."""
    run_case(kernel, case, poison_keys=keys, poison_tail=9)


def test_bf16_attention_masked_nonfinite_keys_gfx942(kernel_gfx942):
    """The same class on the gfx942 build (non-causal: only the NaN rows past seqlen_k are unseen)."""
    run_case(kernel_gfx942, POISON_CASES[1][0], poison_keys=POISON_CASES[1][1], poison_tail=9)
    run_case(kernel_gfx942, (64, 64, 1, 40, 70, 1, 1, False, 0), poison_tail=9)


def run_case(kernel, case, poison_keys=(), poison_tail=0):
    prog, names, layout, launch = kernel
    dqk, dv, b, sq, sk, h, hk, causal, pad = case
    rng = np.random.default_rng(hash(case) % 2 ** 32)
    qs = (rng.standard_normal((b, sq, h * dqk + pad)) * 1.5).astype(ml_dtypes.bfloat16)  # padded rows
    q = qs[:, :, : h * dqk].reshape(b, sq, h, dqk)
    # K/V buffers hold poison_tail extra NaN rows per batch past seqlen_k: the kernel must never read them into a
    # result (the views below still have seqlen_k rows).
    kb = np.full((b, sk + poison_tail, hk, dqk), np.nan, np.float32).astype(ml_dtypes.bfloat16)
    vb = np.full((b, sk + poison_tail, hk, dv), np.nan, np.float32).astype(ml_dtypes.bfloat16)
    kb[:, :sk] = (rng.standard_normal((b, sk, hk, dqk)) * 1.5).astype(ml_dtypes.bfloat16)
    vb[:, :sk] = rng.standard_normal((b, sk, hk, dv)).astype(ml_dtypes.bfloat16)
    k, v = kb[:, :sk], vb[:, :sk]  # views
    for i, key in enumerate(poison_keys):  # +Inf, NaN, -Inf in V and NaN/Inf in K at the poisoned keys
        v[:, key, :, i % dv] = [np.inf, np.nan, -np.inf][i % 3]
        v[:, key, :, (i + 7) % dv] = np.nan
        k[:, key, :, 3] = [np.nan, np.inf][i % 2]
    m = Machine(prog)
    pq, pk, pv = m.upload(qs), m.upload(kb), m.upload(vb)
    po = m.upload(np.full((b, sq, h, dv), 0x7FC0, np.uint16))  # poisoned with NaN
    pl = m.upload(np.full((b, h, sq), np.nan, np.float32))
    scale = 1.0 / np.sqrt(dqk)
    smem, threads, block_m = launch[(dqk, dv)]
    mb = (sq + block_m - 1) // block_m
    vals = dict(q=pq, k=pk, v=pv, out=po, lse=pl,
                q_batch_stride=sq * (h * dqk + pad), q_row_stride=h * dqk + pad, q_head_stride=dqk,
                k_batch_stride=(sk + poison_tail) * hk * dqk, k_row_stride=hk * dqk, k_head_stride=dqk,
                v_batch_stride=(sk + poison_tail) * hk * dv, v_row_stride=hk * dv, v_head_stride=dv,
                o_batch_stride=sq * h * dv, o_row_stride=h * dv, o_head_stride=dv,
                batch=b, seqlen_q=sq, seqlen_k=sk, num_heads=h, group_size=h // hk, num_m_blocks=mb,
                causal=int(causal), causal_offset=sk - sq,
                scale_log2=float(np.float32(scale) * np.float32(1.4426950408889634)),  # params.hpp
                lse_batch_stride=h * sq, lse_head_stride=sq,  # softmax_lse [b, h, sq]
                cu_seqlens_q=0, cu_seqlens_k=0, total_q=0, total_k=0)  # fixed length (fwd_kernel<Config, false>)
    m.launch(names[(dqk, dv)], grid=(mb * b * h, 1, 1), block=(threads, 1, 1), kernarg=pack_args(layout, vals),
             dynamic_lds=smem)
    out = m.download(po, ml_dtypes.bfloat16, (b, sq, h, dv)).astype(np.float64)
    lse = m.download(pl, np.float32, (b, h, sq)).astype(np.float64)
    ref, ref_lse = reference(q, k, v, causal, scale)
    if poison_keys:  # rows that see a poisoned key: non-finite exactly where the reference is; the rest as usual
        sees = np.arange(sq) + sk - sq >= min(poison_keys)  # [sq]
        bad_ref = ~np.isfinite(ref) | sees[None, :, None, None]
        assert not np.isfinite(out[:, sees]).all(), "a row that sees an Inf/NaN key came out finite"
        out, ref = np.where(bad_ref, 0.0, out), np.where(bad_ref, 0.0, ref)
        lse_ok = ~sees[None, None, :]
        lse, ref_lse = np.where(lse_ok, lse, 0.0), np.where(lse_ok, ref_lse, 0.0)
    assert np.isfinite(out).all(), "output has NaN (unwritten or invalid, or a masked Inf/NaN key leaked)"
    # bf16 tolerance: one bf16 ulp relative (2^-7) plus 2^-8 absolute (P is rounded to bf16 before P·V)
    err = np.abs(out - ref)
    tol = 2.0 ** -7 * np.abs(ref) + 2.0 ** -8
    assert (err <= tol).all(), f"max err {err.max():.3g}, worst ratio {(err / tol).max():.3g}"
    seen = np.isfinite(ref_lse)
    np.testing.assert_array_equal(out[~seen.transpose(0, 2, 1)], 0.0)
    np.testing.assert_array_equal(lse[~seen], -np.inf)
    np.testing.assert_allclose(lse[seen], ref_lse[seen], rtol=1e-5, atol=1e-5)
    if causal and sq > sk:
        assert (~seen).any()
    return err.max(), (err / tol).max(), m.instructions_executed


VARLEN_CASES = [  # (dqk, dv, [(seqlen_q, seqlen_k) per sequence], num_heads, num_heads_k, causal)
    # empty sequences, seqlen_q > seqlen_k and < seqlen_k, a 130-row sequence (two 128-row blocks), a key-only
    # sequence (0, 9) between query sequences
    (128, 128, [(1, 1), (0, 0), (17, 40), (0, 9), (70, 30), (3, 0), (130, 130), (9, 70)], 2, 1, True),
    (128, 128, [(5, 66), (0, 3), (130, 20), (2, 0), (40, 40)], 2, 2, False),
    (192, 128, [(20, 70), (0, 5), (66, 64), (1, 129)], 2, 1, True),
    (64, 64, [(3, 3), (0, 4), (100, 150), (70, 2)], 4, 2, True),
    (256, 256, [(10, 20), (0, 0), (30, 7)], 1, 1, False),
    (80, 80, [(33, 60), (0, 6), (7, 7)], 2, 1, True),  # padded custom tile
]


@pytest.mark.parametrize("case", VARLEN_CASES, ids=lambda c: "hd{}x{}_{}seq_h{}/{}_{}".format(
    c[0], c[1], len(c[2]), c[3], c[4], "causal" if c[5] else "full"))
def test_bf16_varlen_matches_per_sequence_kernel_bit_for_bit(kernel, case):
    run_varlen_case(kernel, case)


def run_varlen_case(kernel, case):
    """Packed q [total_q, h, dqk], k/v [total_k, hk, d]: total_q has 3 rows past cu_seqlens_q[-1] and total_k 5 keys
    past cu_seqlens_k[-1], which hold NaN (out: a NaN canary pattern, also in every row of a sequence that has no
    query row: nothing may be written there); a key-only sequence carries Inf/NaN in K and V (its keys belong to no
    query sequence). The varlen kernel's out/lse equal, bit for bit, the fixed-length kernel's on each sequence's rows
    of the same buffers (pointers offset to the sequence), and are within bf16 tolerance of fp64."""
    prog, names, layout, launch = kernel
    dqk, dv, lens, h, hk, causal = case
    rng = np.random.default_rng(hash(str(case)) % 2 ** 32)
    cu_q = np.concatenate([[0], np.cumsum([a for a, _ in lens])]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum([b for _, b in lens])]).astype(np.int32)
    tq, tk = int(cu_q[-1]) + 3, int(cu_k[-1]) + 5
    q = (rng.standard_normal((tq, h, dqk)) * 1.5).astype(ml_dtypes.bfloat16)
    k = (rng.standard_normal((tk, hk, dqk)) * 1.5).astype(ml_dtypes.bfloat16)
    v = rng.standard_normal((tk, hk, dv)).astype(ml_dtypes.bfloat16)
    k[cu_k[-1]:] = np.nan
    v[cu_k[-1]:] = np.nan
    for b, (sq, sk) in enumerate(lens):
        if sq == 0 and sk > 0:  # keys no query row sees
            k[cu_k[b]:cu_k[b + 1], :, 0] = np.inf
            v[cu_k[b]:cu_k[b + 1], :, 1] = np.nan
            v[cu_k[b]:cu_k[b + 1], :, 2] = -np.inf
    canary_o, canary_l = 0x7FC1, np.float32(np.nan)
    m = Machine(prog)
    pq, pk, pv = m.upload(q), m.upload(k), m.upload(v)
    pcq, pck = m.upload(cu_q), m.upload(cu_k)
    smem, threads, block_m = launch[(dqk, dv)]
    scale = 1.0 / np.sqrt(dqk)
    scale_log2 = float(np.float32(scale) * np.float32(1.4426950408889634))
    strides = dict(q_row_stride=h * dqk, q_head_stride=dqk, k_row_stride=hk * dqk, k_head_stride=dqk,
                   v_row_stride=hk * dv, v_head_stride=dv, o_row_stride=h * dv, o_head_stride=dv)

    def run(name, out_addr, lse_addr, q_addr, k_addr, v_addr, batch, sq, sk, lse_head_stride, cu, totals):
        mb = (sq + block_m - 1) // block_m
        vals = dict(q=q_addr, k=k_addr, v=v_addr, out=out_addr, lse=lse_addr, q_batch_stride=0, k_batch_stride=0,
                    v_batch_stride=0, o_batch_stride=0, batch=batch, seqlen_q=sq, seqlen_k=sk, num_heads=h,
                    group_size=h // hk, num_m_blocks=mb, causal=int(causal), causal_offset=sk - sq,
                    scale_log2=scale_log2, lse_batch_stride=0, lse_head_stride=lse_head_stride,
                    cu_seqlens_q=cu[0], cu_seqlens_k=cu[1], total_q=totals[0], total_k=totals[1], **strides)
        m.launch(name, grid=(mb * batch * h, 1, 1), block=(threads, 1, 1), kernarg=pack_args(layout, vals),
                 dynamic_lds=smem)

    # the varlen kernel on the packed batch
    po = m.upload(np.full((tq, h, dv), canary_o, np.uint16))
    pl = m.upload(np.full((h, tq), canary_l, np.float32))
    max_q, max_k = max(a for a, _ in lens), max(b for _, b in lens)
    run(names[(dqk, dv, "varlen")], po, pl, pq, pk, pv, len(lens), max_q, max_k, tq, (pcq, pck), (tq, tk))
    out = m.download(po, np.uint16, (tq, h, dv))
    lse = m.download(pl, np.float32, (h, tq))
    # rows of no sequence keep their canaries
    owned = np.zeros(tq, bool)
    owned[: cu_q[-1]] = True
    assert (out[~owned] == canary_o).all(), "varlen wrote out rows past cu_seqlens_q[-1]"
    assert np.isnan(lse[:, ~owned]).all() and (lse[:, ~owned].view(np.uint32) == canary_l.view(np.uint32)).all()

    # the fixed-length kernel on each sequence's rows of the same buffers: bit for bit
    row_q, row_k, row_v, row_o = 2 * h * dqk, 2 * hk * dqk, 2 * hk * dv, 2 * h * dv  # bytes per packed row
    for b, (sq, sk) in enumerate(lens):
        q0, k0 = int(cu_q[b]), int(cu_k[b])
        if sq == 0:
            continue
        pob = m.upload(np.full((sq, h, dv), canary_o, np.uint16))
        plb = m.upload(np.full((h, sq), canary_l, np.float32))
        if sk == 0:  # no key: out 0, lse -inf (the fixed-length kernel needs seqlen_k >= 1; make_params's rule)
            ob, lb = np.zeros((sq, h, dv), np.uint16), np.full((h, sq), -np.inf, np.float32)
        else:
            run(names[(dqk, dv)], pob, plb, pq + q0 * row_q, pk + k0 * row_k, pv + k0 * row_v, 1, sq, sk, sq, (0, 0),
                (0, 0))
            ob, lb = m.download(pob, np.uint16, (sq, h, dv)), m.download(plb, np.float32, (h, sq))
        np.testing.assert_array_equal(out[q0:q0 + sq], ob, err_msg=f"out of sequence {b} {lens[b]}")
        np.testing.assert_array_equal(lse[:, q0:q0 + sq].view(np.uint32), lb.view(np.uint32),
                                      err_msg=f"lse of sequence {b} {lens[b]}")
        if sk == 0:
            continue
        # and against fp64
        o64, l64 = reference(q[None, q0:q0 + sq], k[None, k0:k0 + sk], v[None, k0:k0 + sk], causal, scale)
        ob64 = ob.view(ml_dtypes.bfloat16).astype(np.float64)
        assert np.isfinite(ob64).all() and np.isfinite(lb[np.isfinite(l64[0])]).all(), f"sequence {b}: non-finite"
        err = np.abs(ob64 - o64[0])
        assert (err <= 2.0 ** -7 * np.abs(o64[0]) + 2.0 ** -8).all(), f"sequence {b}: max err {err.max():.3g}"
        seen = np.isfinite(l64[0])
        np.testing.assert_array_equal(lb[~seen], -np.inf)
        np.testing.assert_allclose(lb[seen], l64[0][seen], rtol=1e-5, atol=1e-5)
