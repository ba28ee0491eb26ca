"""The Python package zyfa on CPU tensors (the host backend): FlashAttention signature parity, results against an fp64
reference, errors, torch.compile(fullgraph=True), varlen vs per-sequence calls, merge_attn_states exactness.
Runs in CI when torch is installed (tests/run_all.sh installs the package with `pip install .` first)."""
import inspect
import math

import pytest
import torch

import zyfa
from reference import attention_ref

BF16 = torch.bfloat16


def rand(*shape, dtype=BF16, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


# FlashAttention 2.x's signatures (flash_attn/flash_attn_interface.py), in order, with defaults
FA_FUNC = [("q", None), ("k", None), ("v", None), ("dropout_p", 0.0), ("softmax_scale", None), ("causal", False),
           ("window_size", (-1, -1)), ("softcap", 0.0), ("alibi_slopes", None), ("deterministic", False),
           ("return_attn_probs", False)]
FA_VARLEN = FA_FUNC[:3] + [("cu_seqlens_q", None), ("cu_seqlens_k", None), ("max_seqlen_q", None),
                           ("max_seqlen_k", None)] + FA_FUNC[3:] + [("block_table", None)]


@pytest.mark.parametrize("fn,want", [(zyfa.flash_attn_func, FA_FUNC), (zyfa.flash_attn_varlen_func, FA_VARLEN)])
def test_signature_parity(fn, want):
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD]
    assert [p.name for p in params] == [n for n, _ in want]
    for p, (_, default) in zip(params, want):
        if default is not None or p.default is not inspect.Parameter.empty:
            assert p.default == default, p.name
    kw = [p.name for p in inspect.signature(fn).parameters.values() if p.kind == p.KEYWORD_ONLY]
    assert kw == ["q_descale", "k_descale", "v_descale"]  # FA3's FP8 arguments


@pytest.mark.parametrize("b,sq,sk,h,hk,d,dv", [(2, 37, 37, 4, 2, 64, 64), (1, 20, 70, 3, 1, 32, 32),
                                                (1, 70, 20, 2, 2, 16, 16), (2, 33, 48, 4, 4, 48, 32)])
@pytest.mark.parametrize("causal", [False, True])
def test_against_fp64_reference(b, sq, sk, h, hk, d, dv, causal):
    q, k, v = rand(b, sq, h, d, seed=1), rand(b, sk, hk, d, seed=2), rand(b, sk, hk, dv, seed=3)
    out, lse = zyfa.flash_attn_func(q, k, v, causal=causal, return_attn_probs=True)
    ref, ref_lse = attention_ref(q, k, v, causal=causal)
    assert out.dtype == BF16 and out.shape == (b, sq, h, dv)
    assert lse.dtype == torch.float32 and lse.shape == (b, h, sq)
    torch.testing.assert_close(out.double(), ref, atol=1e-2, rtol=1e-2)
    finite = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), finite)
    torch.testing.assert_close(lse.double()[finite], ref_lse[finite], atol=1e-5, rtol=1e-5)
    if causal and sq > sk:  # rows that see no key: exactly 0 and -inf
        assert torch.all(out[:, : sq - sk] == 0) and torch.all(lse[:, :, : sq - sk] == -math.inf)


def test_softmax_scale_and_strided_inputs():
    qkv = rand(2, 40, 3, 4, 64, seed=4)  # packed [b, s, 3, h, d]: q/k/v are strided views
    q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
    out = zyfa.flash_attn_func(q, k, v, softmax_scale=0.3, causal=True)
    out_c = zyfa.flash_attn_func(q.contiguous(), k.contiguous(), v.contiguous(), softmax_scale=0.3, causal=True)
    assert torch.equal(out, out_c)
    ref, _ = attention_ref(q, k, v, causal=True, softmax_scale=0.3)
    torch.testing.assert_close(out.double(), ref, atol=1e-2, rtol=1e-2)
    # BHSD storage seen as BSHD, and a non-contiguous last dim (copied)
    qt = q.transpose(1, 2).contiguous().transpose(1, 2)
    assert torch.equal(zyfa.flash_attn_func(qt, k, v, softmax_scale=0.3, causal=True), out)
    qs = torch.empty(2, 40, 4, 128, dtype=BF16)[..., ::2]
    qs.copy_(q)
    assert torch.equal(zyfa.flash_attn_func(qs, k, v, softmax_scale=0.3, causal=True), out)


def test_fp8_inputs_run_the_host_specification():
    q, k, v = rand(1, 32, 2, 64, dtype=torch.float32, seed=5), rand(1, 32, 2, 64, dtype=torch.float32, seed=6), \
        rand(1, 32, 2, 64, dtype=torch.float32, seed=7)
    qd, kd, vd = (float(t.abs().max() / 448) for t in (q, k, v))
    q8, k8, v8 = (t / d for t, d in ((q, qd), (k, kd), (v, vd)))
    q8, k8, v8 = (t.to(torch.float8_e4m3fn) for t in (q8, k8, v8))
    out = zyfa.flash_attn_func(q8, k8, v8, causal=True, q_descale=qd, k_descale=torch.tensor(kd), v_descale=vd)
    ref, _ = attention_ref(q8.double() * qd, k8.double() * kd, v8.double() * vd, causal=True)
    assert out.dtype == BF16
    assert (out.double() - ref).norm() / ref.norm() < 0.05


def test_unsupported_options_raise_not_implemented_naming_them():
    q = rand(1, 8, 2, 64)
    with pytest.raises(NotImplementedError, match="^dropout_p"):
        zyfa.flash_attn_func(q, q, q, dropout_p=0.1)
    with pytest.raises(NotImplementedError, match="^window_size"):
        zyfa.flash_attn_func(q, q, q, window_size=(4, 0))
    with pytest.raises(NotImplementedError, match="^softcap"):
        zyfa.flash_attn_func(q, q, q, softcap=30.0)
    with pytest.raises(NotImplementedError, match="^alibi_slopes"):
        zyfa.flash_attn_func(q, q, q, alibi_slopes=torch.zeros(2))
    with pytest.raises(NotImplementedError, match="^q_descale"):
        zyfa.flash_attn_func(q, q, q, q_descale=torch.ones(1, 2))
    cu = torch.tensor([0, 8], dtype=torch.int32)
    with pytest.raises(NotImplementedError, match="^block_table"):
        zyfa.flash_attn_varlen_func(q[0], q[0], q[0], cu, cu, 8, 8, block_table=torch.zeros(1, 1, dtype=torch.int32))
    zyfa.flash_attn_func(q, q, q, window_size=(-1, -1), deterministic=True)  # the defaults are fine


def test_errors_name_the_argument():
    q, k = rand(1, 8, 4, 64), rand(1, 8, 2, 64)
    with pytest.raises(TypeError, match="^q: dtype torch.float16"):
        zyfa.flash_attn_func(q.half(), k.half(), k.half())
    with pytest.raises(TypeError, match="^v: dtype torch.float32 differs"):
        zyfa.flash_attn_func(q, k, k.float())
    with pytest.raises(TypeError, match="^k: expected a torch.Tensor"):
        zyfa.flash_attn_func(q, None, k)
    with pytest.raises(ValueError, match=r"^k: expected 4 dims"):
        zyfa.flash_attn_func(q, k[0], k)
    with pytest.raises(ValueError, match=r"k: shape\[3\] \(head_dim_qk\) is 32, expected 64 from q"):
        zyfa.flash_attn_func(q, rand(1, 8, 2, 32), k)
    with pytest.raises(ValueError, match=r"k: num_heads_k \(3\) must divide q's num_heads \(4\)"):
        zyfa.flash_attn_func(q, rand(1, 8, 3, 64), rand(1, 8, 3, 64))
    with pytest.raises(ValueError, match=r"^zyfa: softmax_scale: must be finite and > 0"):
        zyfa.flash_attn_func(q, k, k, softmax_scale=-1.0)
    with pytest.raises(TypeError, match="^softmax_scale"):
        zyfa.flash_attn_func(q, k, k, softmax_scale="x")
    with pytest.raises(ValueError, match="q_descale: only FP8 inputs take a descale"):
        zyfa.flash_attn_func(q, k, k, q_descale=2.0)
    cu = torch.tensor([0, 3, 8], dtype=torch.int32)
    with pytest.raises(TypeError, match="^cu_seqlens_q: dtype torch.int64"):
        zyfa.flash_attn_varlen_func(q[0], k[0], k[0], cu.long(), cu, 5, 5)
    with pytest.raises(TypeError, match="^max_seqlen_k"):
        zyfa.flash_attn_varlen_func(q[0], k[0], k[0], cu, cu, 5, 5.0)
    with pytest.raises(ValueError, match=r"cu_seqlens_q: entry 2 \(2\) is less than entry 1 \(3\)"):
        zyfa.flash_attn_varlen_func(q[0], k[0], k[0], torch.tensor([0, 3, 2], dtype=torch.int32), cu, 5, 5)
    with pytest.raises(ValueError, match=r"max_seqlen_q: 4 is less than sequence 1's length 5"):
        zyfa.flash_attn_varlen_func(q[0], k[0], k[0], cu, cu, 4, 5)
    with pytest.raises(ValueError, match="^cu_seqlens_k: 2 entries"):
        zyfa.flash_attn_varlen_func(q[0], k[0], k[0], cu, cu[:2], 5, 5)
    with pytest.raises(ValueError, match=r"^lse_b: shape"):
        o = torch.zeros(1, 8, 4, 64)
        zyfa.merge_attn_states(o, torch.zeros(1, 4, 8), o, torch.zeros(1, 8, 4))
    with pytest.raises(TypeError, match="^out_a: dtype torch.float16"):
        o = torch.zeros(1, 8, 4, 64)
        zyfa.merge_attn_states(o.half(), torch.zeros(1, 4, 8), o, torch.zeros(1, 4, 8))


def test_bad_scalars_and_empty_inputs_are_named():
    """Inputs that used to pass silently or fail without naming the argument."""
    q, k = rand(1, 8, 4, 64), rand(1, 8, 2, 64)
    with pytest.raises(TypeError, match="^causal: expected a bool, got str"):
        zyfa.flash_attn_func(q, k, k, causal="no")
    with pytest.raises(TypeError, match="^causal"):
        zyfa.flash_attn_func(q, k, k, causal=2)
    import numpy as np  # a dependency of the project's tools (tools/requirements.txt)
    for ok in (True, 0, 1, np.True_, np.bool_(False)):
        zyfa.flash_attn_func(q, k, k, causal=ok)
    with pytest.raises(TypeError, match="^softmax_scale: expected None or a float, got bool"):
        zyfa.flash_attn_func(q, k, k, softmax_scale=True)
    with pytest.raises(ValueError, match="^softmax_scale: .* does not fit a float"):
        zyfa.flash_attn_func(q, k, k, softmax_scale=10**400)
    with pytest.raises(TypeError, match="^k_descale: expected None, a float or a one-element tensor, got bool"):
        zyfa.flash_attn_func(q, k, k, k_descale=True)
    with pytest.raises(TypeError, match="^window_size: expected a \\(left, right\\) pair, got int"):
        zyfa.flash_attn_func(q, k, k, window_size=5)
    # empty inputs still check what a non-empty call would: the head dim and the offsets
    with pytest.raises(ValueError, match=r"^q: shape\[3\] \(head_dim_qk\) is 12, not a multiple of 16 bytes"):
        zyfa.flash_attn_func(rand(1, 8, 4, 12), rand(1, 0, 2, 12), rand(1, 0, 2, 12))
    with pytest.raises(ValueError, match=r"^q: shape\[3\] \(head_dim_qk\) is 4"):
        zyfa.flash_attn_func(rand(0, 8, 4, 4), rand(0, 8, 2, 4), rand(0, 8, 2, 4))
    cu_bad = torch.tensor([0, 9, 2], dtype=torch.int32)
    with pytest.raises(ValueError, match=r"^cu_seqlens_q: entry 2 \(2\) is less than entry 1 \(9\)"):
        zyfa.flash_attn_varlen_func(q[0, :0], k[0], k[0], cu_bad, torch.tensor([0, 3, 8], dtype=torch.int32), 9, 5)
    # a contiguous but misaligned tensor is copied, not rejected
    flat = rand(1, 8 * 4 * 64 + 1, 1, 1).reshape(-1)
    q_off = flat[1:].reshape(1, 8, 4, 64)
    assert q_off.is_contiguous() and q_off.data_ptr() % 16 != 0
    torch.testing.assert_close(zyfa.flash_attn_func(q_off, k, k), zyfa.flash_attn_func(q_off.clone(), k, k),
                               rtol=0, atol=0)


def test_empty_and_keyless_inputs():
    q = rand(1, 0, 2, 64)
    out, lse = zyfa.flash_attn_func(q, rand(1, 5, 2, 64), rand(1, 5, 2, 64), return_attn_probs=True)
    assert out.shape == (1, 0, 2, 64) and lse.shape == (1, 2, 0)
    out, lse = zyfa.flash_attn_func(rand(1, 3, 2, 64), rand(1, 0, 2, 64), rand(1, 0, 2, 64), return_attn_probs=True)
    assert torch.all(out == 0) and torch.all(lse == -math.inf)


def _varlen_case(lens, h, hk, d, seed):
    cu_q = torch.tensor([0] + list(torch.tensor([a for a, _ in lens]).cumsum(0)), dtype=torch.int32)
    cu_k = torch.tensor([0] + list(torch.tensor([b for _, b in lens]).cumsum(0)), dtype=torch.int32)
    q = rand(int(cu_q[-1]), h, d, seed=seed)
    k = rand(int(cu_k[-1]), hk, d, seed=seed + 1)
    v = rand(int(cu_k[-1]), hk, d, seed=seed + 2)
    return q, k, v, cu_q, cu_k


def check_varlen_matches_per_sequence(q, k, v, cu_q, cu_k, causal):
    """Each sequence of the packed call equals flash_attn_func on that sequence alone, bit for bit."""
    mq = int((cu_q[1:] - cu_q[:-1]).max())
    mk = int((cu_k[1:] - cu_k[:-1]).max())
    out, lse = zyfa.flash_attn_varlen_func(q, k, v, cu_q, cu_k, mq, mk, causal=causal, return_attn_probs=True)
    assert out.shape == q.shape[:2] + (v.shape[2],) and lse.shape == (q.shape[1], q.shape[0])
    for b in range(cu_q.numel() - 1):
        q0, q1, k0, k1 = int(cu_q[b]), int(cu_q[b + 1]), int(cu_k[b]), int(cu_k[b + 1])
        if q1 == q0:
            continue
        o1, l1 = zyfa.flash_attn_func(q[None, q0:q1], k[None, k0:k1], v[None, k0:k1], causal=causal,
                                      return_attn_probs=True)
        assert torch.equal(out[q0:q1], o1[0]), b
        assert torch.equal(lse[:, q0:q1], l1[0]), b


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_matches_per_sequence_calls_bit_for_bit(causal):
    lens = [(1, 1), (0, 0), (17, 17), (300, 300), (3, 0), (40, 23), (9, 120), (0, 5), (64, 64)]
    q, k, v, cu_q, cu_k = _varlen_case(lens, 4, 2, 64, 10 if causal else 20)
    check_varlen_matches_per_sequence(q, k, v, cu_q, cu_k, causal)


def test_merge_two_halves_equal_one_pass_within_fp32_rounding():
    b, s, h, d, n = 2, 24, 3, 64, 200
    q, k, v = rand(b, s, h, d, seed=30), rand(b, n, h, d, seed=31), rand(b, n, h, d, seed=32)
    full, full_lse = attention_ref(q, k, v)
    a, la = attention_ref(q, k[:, :77], v[:, :77])
    c, lc = attention_ref(q, k[:, 77:], v[:, 77:])
    out, lse = zyfa.merge_attn_states(a.float(), la.float(), c.float(), lc.float())
    assert out.dtype == torch.float32 and lse.dtype == torch.float32
    assert (out.double() - full).abs().max() < 4e-6
    assert ((lse.double() - full_lse).abs() / full_lse.abs().clamp(min=1)).max() < 4e-7
    # zyfa's own bf16 partials merge into its one-pass result within bf16 rounding
    o1, l1 = zyfa.flash_attn_func(q, k[:, :77], v[:, :77], return_attn_probs=True)
    o2, l2 = zyfa.flash_attn_func(q, k[:, 77:], v[:, 77:], return_attn_probs=True)
    om, lm = zyfa.merge_attn_states(o1, l1, o2, l2)
    assert om.dtype == BF16
    torch.testing.assert_close(om.double(), full, atol=1.5e-2, rtol=1e-2)
    torch.testing.assert_close(lm.double(), full_lse, atol=1e-5, rtol=1e-5)


def test_merge_neg_inf_rows_are_exact():
    out_a = torch.full((1, 4, 1, 8), float("nan"))
    out_b = rand(1, 4, 1, 8, dtype=torch.float32, seed=40)
    lse_a = torch.full((1, 1, 4), -math.inf)
    lse_b = torch.tensor([[[0.5, -math.inf, 2.0, -3.0]]])
    out, lse = zyfa.merge_attn_states(out_a, lse_a, out_b, lse_b)
    assert torch.equal(out[:, [0, 2, 3]], out_b[:, [0, 2, 3]])
    assert torch.equal(lse[..., [0, 2, 3]], lse_b[..., [0, 2, 3]])
    assert torch.all(out[:, 1] == 0) and lse[0, 0, 1] == -math.inf
    # varlen layout: out [t, h, d], lse [h, t]
    o3, l3 = zyfa.merge_attn_states(out_b[0], lse_b[0], out_b[0], lse_b[0])
    torch.testing.assert_close(o3, out_b[0].nan_to_num(0.0) * (lse_b[0, 0] > -math.inf).float().view(4, 1, 1))
    torch.testing.assert_close(l3[0, [0, 2, 3]], lse_b[0, 0, [0, 2, 3]] + math.log(2))


def test_custom_ops_opcheck():
    q, k, v = rand(1, 16, 2, 64, seed=50), rand(1, 16, 1, 64, seed=51), rand(1, 16, 1, 64, seed=52)
    torch.library.opcheck(torch.ops.zyfa.fwd.default, (q, k, v, None, True, None, None, None))
    cu = torch.tensor([0, 5, 16], dtype=torch.int32)
    torch.library.opcheck(torch.ops.zyfa.varlen_fwd.default, (q[0], k[0], v[0], cu, cu, 11, 11, 0.2, True,
                                                              None, None, None))
    o, l = zyfa.flash_attn_func(q, k, v, return_attn_probs=True)
    torch.library.opcheck(torch.ops.zyfa.merge_attn_states.default, (o, l, o.float(), l))


def test_torch_compile_fullgraph():
    torch._dynamo.reset()

    def f(q, k, v, cu):
        o, lse = zyfa.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
        ov = zyfa.flash_attn_varlen_func(q[0], k[0], v[0], cu, cu, 12, 12, causal=True)
        m, lm = zyfa.merge_attn_states(o, lse, o.float() * 2, lse)
        return o.float() * 2 + 1, ov, m, lm

    q, k, v = rand(1, 20, 4, 64, seed=60), rand(1, 20, 2, 64, seed=61), rand(1, 20, 2, 64, seed=62)
    cu = torch.tensor([0, 8, 20], dtype=torch.int32)
    compiled = torch.compile(f, fullgraph=True)
    for got, want in zip(compiled(q, k, v, cu), f(q, k, v, cu)):
        assert torch.equal(got, want)


def test_custom_ops_called_directly_check_their_arguments():
    """torch.ops.zyfa.* run the same checks as the wrappers (a direct call never reads or writes out of bounds), and
    inputs the C++ layer never sees (no key, zero head_dim) are still rejected by name."""
    r = lambda *s: torch.randn(*s).to(torch.bfloat16)  # noqa: E731
    oa, la = r(8, 64, 16, 64), torch.randn(1, 16, 64)
    with pytest.raises(ValueError, match="lse_a"):
        torch.ops.zyfa.merge_attn_states(oa, la, oa, la)
    q, cq = r(10, 4, 64), torch.tensor([0, 4, 10], dtype=torch.int32)
    with pytest.raises(ValueError, match="cu_seqlens_k"):
        torch.ops.zyfa.varlen_fwd(q, q, q, cq, cq[:1], 6, 6, None, False, None, None, None)
    with pytest.raises(TypeError, match="cu_seqlens_q"):
        torch.ops.zyfa.varlen_fwd(q, q, q, cq.long(), cq.long(), 6, 6, None, False, None, None, None)
    k, ck = r(12, 2, 64), torch.tensor([0, 5, 12], dtype=torch.int32)
    with pytest.raises(ValueError, match="max_seqlen_q"):
        zyfa.flash_attn_varlen_func(q, k, k, cq, ck, 0, 7)
    with pytest.raises(ValueError, match="num_heads_k"):
        zyfa.flash_attn_func(r(1, 4, 3, 64), r(1, 0, 2, 64), r(1, 0, 2, 64))
    with pytest.raises(ValueError, match="v: "):
        zyfa.flash_attn_func(r(1, 4, 4, 64), r(1, 4, 4, 64), r(1, 4, 4, 0), return_attn_probs=True)
    with pytest.raises(ValueError, match="softmax_scale"):
        zyfa.flash_attn_func(r(1, 4, 4, 64), r(1, 0, 4, 64), r(1, 0, 4, 64), softmax_scale=float("nan"))
    with pytest.raises(ValueError, match="out_a"):
        zyfa.merge_attn_states(r(2, 3, 4, 0), torch.randn(2, 4, 3), r(2, 3, 4, 0), torch.randn(2, 4, 3))
