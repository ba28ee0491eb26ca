"""The Python package zyfa on CUDA tensors (the GPU kernels): against SDPA / fp64 on the built-in head dims, GQA,
strides, causal / non-causal, LSE; varlen (one launch) bit for bit against per-sequence flash_attn_func calls
(on the H200 both run the sm_90a wgmma kernel), ragged lengths 1..5,000 in one batch, Inf/NaN keys of a
neighbouring key-only sequence; merge_attn_states on the GPU; FP8 (the sm_90a kernel) against the host backend's FP8
specification; torch.compile(fullgraph=True).
Skipped without a CUDA device, unless ZYFA_REQUIRE_CUDA=1 (tests/gpu/run_python_gpu.sh sets it): then a missing GPU
or a package built without CUDA kernels fails."""
import math
import os

import pytest
import torch

import zyfa
from reference import attention_ref

REQUIRE = os.environ.get("ZYFA_REQUIRE_CUDA") == "1"
if not torch.cuda.is_available() or zyfa._lib.CUDA is None:
    if REQUIRE:
        raise RuntimeError(f"ZYFA_REQUIRE_CUDA=1 but torch.cuda.is_available()={torch.cuda.is_available()}, "
                           f"zyfa CUDA library built: {zyfa._lib.CUDA is not None}")
    pytest.skip("no CUDA device or zyfa built without CUDA kernels", allow_module_level=True)

DEV = torch.device("cuda")
BF16 = torch.bfloat16
BUILTIN = [(64, 64), (128, 128), (256, 256), (192, 128)]


def rand(*shape, dtype=BF16, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    return torch.randn(*shape, generator=g, device=DEV).to(dtype)


def sdpa_ref(q, k, v, causal, scale=None):
    """PyTorch SDPA in fp32 with an explicit bottom-right causal mask and GQA by repetition -> [b, sq, h, dv]."""
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    g = h // hk
    qt, kt, vt = (t.float().transpose(1, 2) for t in (q, k.repeat_interleave(g, 2), v.repeat_interleave(g, 2)))
    mask = None
    if causal:
        i = torch.arange(sq, device=DEV).view(-1, 1)
        j = torch.arange(sk, device=DEV).view(1, -1)
        mask = j <= i + sk - sq
    return torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, attn_mask=mask, scale=scale).transpose(1, 2)


@pytest.mark.parametrize("dqk,dv", BUILTIN)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b,sq,sk,h,hk", [(2, 1024, 1024, 8, 2), (1, 777, 1500, 4, 4), (3, 129, 65, 6, 1)])
def test_against_sdpa_and_fp64(dqk, dv, causal, b, sq, sk, h, hk):
    q, k, v = rand(b, sq, h, dqk, seed=1), rand(b, sk, hk, dqk, seed=2), rand(b, sk, hk, dv, seed=3)
    out, lse = zyfa.flash_attn_func(q, k, v, causal=causal, return_attn_probs=True)
    assert out.shape == (b, sq, h, dv) and out.dtype == BF16 and lse.shape == (b, h, sq)
    ref64, lse64 = attention_ref(q.cpu(), k.cpu(), v.cpu(), causal=causal)
    ref64, lse64 = ref64.to(DEV), lse64.to(DEV)
    torch.testing.assert_close(out.double(), ref64, atol=1e-2, rtol=1e-2)  # bf16 output: 2^-9 relative rounding
    sdpa = torch.nan_to_num(sdpa_ref(q, k, v, causal).double(), nan=0.0)  # SDPA: NaN for rows that see no key
    torch.testing.assert_close(sdpa, ref64, atol=1e-4, rtol=1e-4)  # the reference itself
    fin = torch.isfinite(lse64)
    assert torch.equal(torch.isfinite(lse), fin)
    assert (lse.double()[fin] - lse64[fin]).abs().max().item() < 1e-4
    if causal and sq > sk:
        assert torch.all(out[:, : sq - sk] == 0) and torch.all(lse[:, :, : sq - sk] == -math.inf)
    po, pl = zyfa._flash_attn_func_portable(q, k, v, causal=causal)  # the portable mma.sync kernel
    torch.testing.assert_close(po.double(), ref64, atol=1e-2, rtol=1e-2)
    assert (pl.double()[fin] - lse64[fin]).abs().max().item() < 1e-4


def test_gpu_matches_host_backend_and_strides():
    qkv = rand(2, 300, 3, 8, 128, seed=4)
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]  # strided views of one packed tensor
    out = zyfa.flash_attn_func(q, k, v, causal=True, softmax_scale=0.1)
    assert torch.equal(out, zyfa.flash_attn_func(q.contiguous(), k.contiguous(), v.contiguous(), causal=True,
                                                 softmax_scale=0.1))
    host = zyfa.flash_attn_func(q.cpu(), k.cpu(), v.cpu(), causal=True, softmax_scale=0.1)
    torch.testing.assert_close(out.cpu().float(), host.float(), atol=8e-3, rtol=8e-3)


def _packed(lens, h, hk, d, dv, seed):
    cu_q = torch.tensor([0] + [sum(a for a, _ in lens[: i + 1]) for i in range(len(lens))], dtype=torch.int32)
    cu_k = torch.tensor([0] + [sum(b for _, b in lens[: i + 1]) for i in range(len(lens))], dtype=torch.int32)
    q = rand(int(cu_q[-1]), h, d, seed=seed)
    k = rand(int(cu_k[-1]), hk, d, seed=seed + 1)
    v = rand(int(cu_k[-1]), hk, dv, seed=seed + 2)
    return q, k, v, cu_q.to(DEV), cu_k.to(DEV)


@pytest.mark.parametrize("dqk,dv", BUILTIN)
@pytest.mark.parametrize("causal", [False, True])
def test_varlen_matches_per_sequence_calls_bit_for_bit(dqk, dv, causal):
    lens = [(1, 1), (0, 0), (17, 17), (5000, 5000), (3, 0), (64, 64), (129, 129), (40, 23), (0, 7), (9, 300),
            (1000, 1000), (2, 2), (333, 4001)]
    q, k, v, cu_q, cu_k = _packed(lens, 8, 2, dqk, dv, 10)
    mq = max(a for a, _ in lens)
    mk = max(b for _, b in lens)
    out, lse = zyfa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=causal, return_attn_probs=True)
    cq, ck = cu_q.tolist(), cu_k.tolist()
    for b in range(len(lens)):
        q0, q1, k0, k1 = cq[b], cq[b + 1], ck[b], ck[b + 1]
        if q1 == q0:
            continue
        if k1 == k0:
            assert torch.all(out[q0:q1] == 0) and torch.all(lse[:, q0:q1] == -math.inf)
            continue
        # flash_attn_func on the sequence alone (the same kernel as the varlen launch): bit for bit
        o2, l2 = zyfa.flash_attn_func(q[None, q0:q1], k[None, k0:k1], v[None, k0:k1], causal=causal,
                                      return_attn_probs=True)
        assert torch.equal(out[q0:q1], o2[0]), (b, lens[b])
        assert torch.equal(lse[:, q0:q1], l2[0]), (b, lens[b])


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_neighbour_nonfinite_keys_and_rows_past_the_last_sequence(causal):
    lens = [(70, 90), (0, 20), (130, 40), (5, 0), (1, 129)]
    q, k, v, cu_q, cu_k = _packed(lens, 4, 2, 128, 128, 40)
    k[90:110] = float("inf")  # the key-only sequence 1: read by sequence 0's tail key tile, seen by no row
    v[90:110] = float("nan")
    q = torch.cat([q, rand(3, 4, 128, seed=41)])  # 3 rows past cu_seqlens_q[-1]
    out, lse = zyfa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 130, 129, causal=causal, return_attn_probs=True)
    assert torch.all(out[-3:] == 0) and torch.all(lse[:, -3:] == -math.inf)
    cq, ck = cu_q.tolist(), cu_k.tolist()
    for b, (sq, sk) in enumerate(lens):
        if sq == 0:
            continue
        q0, k0 = cq[b], ck[b]
        assert torch.isfinite(out[q0:q0 + sq]).all(), (b, lens[b])
        if sk == 0:
            assert torch.all(out[q0:q0 + sq] == 0) and torch.all(lse[:, q0:q0 + sq] == -math.inf)
            continue
        o2, l2 = zyfa.flash_attn_func(q[None, q0:q0 + sq], k[None, k0:k0 + sk], v[None, k0:k0 + sk], causal=causal,
                                      return_attn_probs=True)
        assert torch.equal(out[q0:q0 + sq], o2[0]), (b, lens[b])
        assert torch.equal(lse[:, q0:q0 + sq], l2[0]), (b, lens[b])


def test_varlen_host_and_gpu_agree():
    lens = [(5, 5), (0, 3), (70, 70), (20, 90)]
    q, k, v, cu_q, cu_k = _packed(lens, 4, 1, 64, 64, 20)
    g = zyfa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 70, 90, causal=True)
    h = zyfa.flash_attn_varlen_func(q.cpu(), k.cpu(), v.cpu(), cu_q.cpu(), cu_k.cpu(), 70, 90, causal=True)
    torch.testing.assert_close(g.cpu().float(), h.float(), atol=8e-3, rtol=8e-3)


def test_merge_on_gpu_matches_host_and_is_exact_for_neg_inf_rows():
    o1, o2 = rand(2, 50, 4, 128, dtype=torch.float32, seed=30), rand(2, 50, 4, 128, seed=31)
    l1, l2 = rand(2, 4, 50, dtype=torch.float32, seed=32) * 5, rand(2, 4, 50, dtype=torch.float32, seed=33) * 5
    l1[0, 1, :10] = -math.inf
    o1[0, :10, 1] = float("nan")  # never read: its LSE is -inf
    out, lse = zyfa.merge_attn_states(o1, l1, o2, l2)
    ho, hl = zyfa.merge_attn_states(o1.cpu(), l1.cpu(), o2.cpu(), l2.cpu())
    torch.testing.assert_close(out.cpu(), ho, atol=2e-6, rtol=2e-6)
    torch.testing.assert_close(lse.cpu(), hl, atol=2e-6, rtol=2e-6)
    assert torch.equal(out[0, :10, 1], o2[0, :10, 1].float()) and torch.equal(lse[0, 1, :10], l2[0, 1, :10])


def test_merge_of_key_halves_equals_one_pass():
    q, k, v = rand(1, 512, 8, 128, seed=40), rand(1, 2048, 2, 128, seed=41), rand(1, 2048, 2, 128, seed=42)
    full, full_lse = zyfa.flash_attn_func(q, k, v, return_attn_probs=True)
    a, la = zyfa.flash_attn_func(q, k[:, :900], v[:, :900], return_attn_probs=True)
    c, lc = zyfa.flash_attn_func(q, k[:, 900:], v[:, 900:], return_attn_probs=True)
    m, lm = zyfa.merge_attn_states(a, la, c, lc)
    torch.testing.assert_close(m.float(), full.float(), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(lm, full_lse, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dqk", [128, 192])
@pytest.mark.parametrize("causal", [False, True])
def test_fp8_matches_the_host_specification(dqk, causal):
    # The same e4m3fn inputs on the GPU (sm_90a kernel) and on the CPU (the host backend runs zyfa's FP8
    # specification): the P codes agree given the same logits; the logits, P.V and the row sum differ by the tensor
    # cores' accumulation (tests/gpu/test_fp8_sm90.cu states the bounds).
    q = (rand(2, 300, 4, dqk, seed=1) * 32).to(torch.float8_e4m3fn)
    k = (rand(2, 500, 2, dqk, seed=2) * 32).to(torch.float8_e4m3fn)
    v = (rand(2, 500, 2, 128, seed=3) * 32).to(torch.float8_e4m3fn)
    d = dict(q_descale=1 / 32, k_descale=1 / 32, v_descale=1 / 32, causal=causal, return_attn_probs=True)
    o, lse = zyfa.flash_attn_func(q, k, v, **d)
    oc, lsec = zyfa.flash_attn_func(q.cpu(), k.cpu(), v.cpu(), **d)
    assert o.dtype == BF16 and o.shape == (2, 300, 4, 128)
    assert torch.isfinite(o.float()).all()
    rel = ((o.float().cpu() - oc.float()).norm() / oc.float().norm()).item()
    assert rel < 1e-2, rel
    fin = torch.isfinite(lsec)
    assert torch.equal(fin, torch.isfinite(lse.cpu()))
    assert (lse.cpu()[fin] - lsec[fin]).abs().max().item() < 2e-2


def test_fp8_unbuilt_head_dims_raise_not_implemented():
    q = rand(1, 64, 2, 64).to(torch.float8_e4m3fn)
    with pytest.raises(NotImplementedError, match="head_dim"):
        zyfa.flash_attn_func(q, q, q, causal=True, q_descale=0.5, k_descale=0.5, v_descale=0.5)
    q = rand(1, 64, 2, 96)
    with pytest.raises(NotImplementedError, match=r"head_dim_qk/head_dim_v: \(96, 96\) is not a built-in pair"):
        zyfa.flash_attn_func(q, q, q)


def test_torch_compile_fullgraph_cuda():
    torch._dynamo.reset()

    def f(q, k, v):
        o, lse = zyfa.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
        return o.float().sum(-1), lse * 2

    q, k, v = rand(2, 256, 8, 128, seed=50), rand(2, 256, 2, 128, seed=51), rand(2, 256, 2, 128, seed=52)
    got = torch.compile(f, fullgraph=True)(q, k, v)
    want = f(q, k, v)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
