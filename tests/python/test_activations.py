"""Tests of the committed real activations (data/activations) and of the capture's numpy-only building blocks.

Runs without the model packages (numpy + ml_dtypes only). The data checks recompute attention in fp64 on a slice
of rows and heads of the committed bf16 q/k/v and compare with the committed out; the same comparison with RoPE
removed from q/k, with q and k roles swapped, or without the causal mask must give errors far above the tolerance,
so the test fails if the files held pre-RoPE or swapped q/k.
"""
import gzip
import io
import json
import math
import pathlib
import shutil

import ml_dtypes
import numpy as np
import pytest

from activations import reference, store
from activations.capture import OUT_TOL, PRESETS
from activations.rope import apply_rope

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "activations"
COMMITTED = PRESETS["committed"]["models"]  # model -> (seqlen, layers)


def _cases():
    return [(m, layer) for m, (_, layers) in sorted(COMMITTED.items()) for layer in layers]


# --- format helpers -------------------------------------------------------------------------------------------
def test_bf16_bits_round_to_nearest_even():
    one = 1.0
    ulp = 2.0 ** -7  # bf16 spacing in [1, 2)
    x = np.array([one, one + ulp / 2, one + 3 * ulp / 2, one + ulp / 2 + 2 ** -20, -0.0, np.inf, 3.0e38],
                 dtype=np.float32)
    bits = store.to_bf16_bits(x)
    assert bits.dtype == np.dtype("<u2")
    # 1 + ulp/2 ties to even (1.0); 1 + 3ulp/2 ties to even (1 + 2ulp); just above the tie rounds up.
    assert bits.tolist()[:4] == [0x3F80, 0x3F80, 0x3F82, 0x3F81]
    assert bits[4] == 0x8000 and bits[5] == 0x7F80
    # independent path: ml_dtypes' own cast
    assert bits[6] == np.float32(3.0e38).astype(ml_dtypes.bfloat16).view(np.uint16)
    back = store.from_bf16_bits(bits)
    assert back[0] == 1.0 and back[2] == np.float32(1 + 2 * ulp)


def test_save_load_roundtrip_and_reproducible(tmp_path):
    x = np.random.default_rng(1).standard_normal((1, 5, 3, 8)).astype(np.float32)
    p1, p2 = tmp_path / "a.npy.gz", tmp_path / "b.npy.gz"
    store.save_bf16_npy_gz(p1, x)
    store.save_bf16_npy_gz(p2, x)
    assert p1.read_bytes() == p2.read_bytes()  # mtime 0, no name: same array -> same bytes
    with gzip.open(p1) as f:
        raw = np.load(io.BytesIO(f.read()))
    assert raw.dtype == np.dtype("<u2") and raw.shape == x.shape and raw.flags.c_contiguous
    y = store.load_bf16_npy_gz(p1)
    assert np.array_equal(y, x.astype(ml_dtypes.bfloat16).astype(np.float32))
    assert np.max(np.abs(y - x) / np.abs(x)) <= 2.0 ** -8


def test_reference_matches_naive_formula_gqa_causal_window():
    rng = np.random.default_rng(2)
    sq, sk, h, hk, d, dv = 5, 9, 4, 2, 8, 6
    q, k = rng.standard_normal((1, sq, h, d)), rng.standard_normal((1, sk, hk, d))
    v = rng.standard_normal((1, sk, hk, dv))
    for window in (None, 3):
        got = reference.attention_fp64(q, k, v, 0.3, causal=True, window=window)
        for i in range(sq):
            for hh in range(h):
                qi = i + sk - sq  # bottom-right alignment
                js = [j for j in range(sk) if j <= qi and (window is None or qi - j < window)]
                w = np.array([math.exp(0.3 * float(q[0, i, hh] @ k[0, j, hh // 2])) for j in js])
                want = sum(wj * v[0, j, hh // 2] for wj, j in zip(w, js)) / w.sum()
                assert np.allclose(got[0, i, hh], want, rtol=1e-12, atol=1e-12)
    # a row that sees no key gives zeros
    z = reference.attention_fp64(q[:, :, :, :], k[:, :2], v[:, :2], 1.0, causal=True)
    assert np.all(z[0, :3] == 0.0) and np.all(np.isfinite(z))


def test_rope_inverse_and_relative_position_property():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 40, 2, 16))
    y = apply_rope(x, 10000.0)
    assert np.allclose(apply_rope(y, 10000.0, inverse=True), x, atol=1e-12)
    assert not np.allclose(y[:, 1:], x[:, 1:])
    # q.k after RoPE depends only on the position difference: same vectors at (m, n) and (m+7, n+7)
    qv, kv = rng.standard_normal(16), rng.standard_normal(16)
    seq = np.zeros((1, 40, 1, 16))
    seq[0, 3, 0], seq[0, 10, 0] = qv, qv
    seq[0, 1, 0], seq[0, 8, 0] = kv, kv
    r = apply_rope(seq, 10000.0)
    assert math.isclose(float(r[0, 3, 0] @ r[0, 1, 0]), float(r[0, 10, 0] @ r[0, 8, 0]), rel_tol=1e-12)


# --- the committed data ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("model", sorted(COMMITTED))
def test_meta_describes_committed_files(model):
    d = DATA / model
    meta = store.load_meta(d)
    seqlen, layers = COMMITTED[model]
    assert meta["format"] == store.FORMAT and meta["model_short_name"] == model
    assert meta["causal"] is True and meta["dtype"] == "bfloat16" and meta["batch"] == 1
    assert meta["seqlen_q"] == meta["seqlen_k"] == seqlen
    assert meta["num_heads"] % meta["num_heads_k"] == 0
    assert math.isclose(meta["softmax_scale"], 1.0 / math.sqrt(meta["head_dim"]), rel_tol=1e-12)
    for key in ("name", "version", "licence", "gguf_sha256"):
        assert meta["package"][key]
    for key in ("package", "version", "description", "licence"):
        assert meta["text"][key]
    assert meta["rope"]["theta_global"] > 0 and meta["rope"]["dim"] == meta["head_dim"]
    lo, hi = meta["perplexity"]["expected_range"]
    assert lo <= meta["perplexity"]["perplexity"] <= hi, "capture perplexity outside the expected range"
    h, hk, dqk, dv = meta["num_heads"], meta["num_heads_k"], meta["head_dim"], meta["head_dim_v"]
    assert [lm["layer"] for lm in meta["layers"]] == layers
    for lm in meta["layers"]:
        assert lm["check"]["passed"] and lm["check"]["rel_fro_err_vs_fp64"] <= OUT_TOL
        for t in store.TENSORS:
            p = d / lm["files"][t]
            assert p.name == store.layer_file(d, lm["layer"], t).name
            with gzip.open(p) as f:
                arr = np.load(io.BytesIO(f.read()))
            assert arr.dtype == np.dtype("<u2") and list(arr.shape) == lm["shapes"][t], (p, arr.shape)
            assert p.stat().st_size < 2_000_000
        assert lm["shapes"] == {"q": [1, seqlen, h, dqk], "k": [1, seqlen, hk, dqk], "v": [1, seqlen, hk, dv],
                                "out": [1, seqlen, h, dv]}


def _check_layer_files(d, layer):
    """Recompute attention in fp64 from the q/k/v files in ``d`` on a slice of rows/heads and compare with out.

    Raises AssertionError unless the error is <= OUT_TOL and the wrong-input controls (RoPE removed, q/k swapped,
    mask dropped) are > 0.1 and > 10x the error.
    """
    meta = store.load_meta(d)
    lm = next(x for x in meta["layers"] if x["layer"] == layer)
    t = store.load_layer(d, layer, np.float64)
    q, k, v, out = t["q"], t["k"], t["v"], t["out"]
    assert [list(t[n].shape) for n in store.TENSORS] == [lm["shapes"][n] for n in store.TENSORS]
    s = q.shape[1]
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(out))
    rng = np.random.default_rng(layer)
    rows = np.unique(np.concatenate([np.arange(16), np.arange(s - 16, s), rng.choice(s, 32, replace=False)]))
    heads = sorted({0, meta["num_heads"] - 1})
    scale, window, theta = meta["softmax_scale"], lm["sliding_window"], lm["rope_theta"]

    def err(qq, kk, causal=True):
        ref = reference.attention_fp64(qq, kk, v, scale, causal, rows=rows, heads=heads, window=window)
        return reference.rel_fro_error(out[:, rows][:, :, heads], ref)

    e = err(q, k)
    assert e <= OUT_TOL, f"{d.name} layer {layer}: saved out differs from fp64 attention on saved q/k/v: {e:.3e}"
    e_norope = err(apply_rope(q, theta, inverse=True), apply_rope(k, theta, inverse=True))
    g = q.shape[2] // k.shape[2]
    e_swap = err(np.repeat(k, g, axis=2), q[:, :, ::g])
    # early rows see few keys, so dropping the causal mask changes them completely
    e_noncausal = err(q, k, causal=False)
    for name, bad in (("RoPE removed", e_norope), ("q/k swapped", e_swap), ("non-causal", e_noncausal)):
        assert bad > 0.1 and bad > 10 * e, f"{d.name} layer {layer}: {name} gives {bad:.3e} vs correct {e:.3e}"


@pytest.mark.parametrize("model,layer", _cases())
def test_committed_out_matches_fp64_attention_and_controls_do_not(model, layer):
    _check_layer_files(DATA / model, layer)


@pytest.mark.parametrize("mutation", ["q_k_pre_rope", "q_k_swapped", "out_perturbed_5pct", "q_k_rows_shifted"])
def test_check_rejects_wrong_files(tmp_path, mutation):
    """The check above must fail on plausible capture bugs (made from the committed smollm2-135m layer)."""
    model = "smollm2-135m"
    layer = COMMITTED[model][1][0]
    d = tmp_path / model
    shutil.copytree(DATA / model, d)
    meta = store.load_meta(d)
    theta = next(x for x in meta["layers"] if x["layer"] == layer)["rope_theta"]
    t = store.load_layer(d, layer, np.float32)
    g = meta["num_heads"] // meta["num_heads_k"]
    if mutation == "q_k_pre_rope":
        t["q"], t["k"] = apply_rope(t["q"], theta, inverse=True), apply_rope(t["k"], theta, inverse=True)
    elif mutation == "q_k_swapped":  # same shapes as the real files, roles exchanged
        t["q"], t["k"] = np.repeat(t["k"], g, axis=2), t["q"][:, :, ::g].copy()
    elif mutation == "out_perturbed_5pct":
        noise = np.random.default_rng(0).standard_normal(t["out"].shape).astype(np.float32)
        t["out"] = t["out"] + 0.05 * float(np.sqrt(np.mean(t["out"] ** 2))) * noise
    else:  # off-by-one position: q/k/v of token i stored at row i+1
        for n in ("q", "k", "v"):
            t[n] = np.roll(t[n], 1, axis=1)
    for n in store.TENSORS:
        store.save_bf16_npy_gz(store.layer_file(d, layer, n), t[n])
    _check_layer_files(DATA / model, layer)  # the originals still pass
    with pytest.raises(AssertionError):
        _check_layer_files(d, layer)
