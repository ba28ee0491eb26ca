"""tools/accuracy (docs/fp8-accuracy.md): the C entry point runs exactly zyfa's FP8 host specification, its key ranges
(sliding window, split-K) are right, the studies run on a small subset and keep their ordering, the model-level
helpers (KL, AITER's routing) are right, and the README's FP8 table is the committed study output."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from accuracy import model_level, spec, study  # noqa: E402


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    os.environ["ZYFA_ACCURACY_BUILD"] = str(tmp_path_factory.mktemp("accuracy"))
    spec._LIB = None
    spec.lib()
    cxx = os.environ.get("CXX") or shutil.which("g++")
    exe = tmp_path_factory.mktemp("dump") / "dump_spec"
    subprocess.run([cxx, "-std=c++17", "-O2", "-ffp-contract=off", f"-I{ROOT / 'include'}",
                    str(ROOT / "tools" / "dump_codes" / "dump_spec.cpp"), "-o", str(exe)], check=True)
    return exe


def small_problem(seed=3, s=200, h=4, hk=2, d=64, sink=True):
    q, k, v, scale = study.synthetic("sink" if sink else "gaussian", s, d=d, h=h, hk=hk, seed=seed)
    (q8, qd), (k8, kd), (v8, vd) = spec.quantize(q), spec.quantize(k), spec.quantize(v)
    return q8, k8, v8, qd, kd, vd, float(scale)


@pytest.mark.parametrize("recipe", spec.RECIPES)
def test_capi_is_the_specification(built, tmp_path, recipe):
    """zyfa_spec_attention with the plain causal key range = fp8_attention (dump_spec), bit for bit."""
    q8, k8, v8, qd, kd, vd, scale = small_problem()
    out, lse = spec.fp8_attention(recipe, q8, k8, v8, qd, kd, vd, scale)
    s, h, d = q8.shape
    hk, dv = k8.shape[1], v8.shape[2]
    hdr = np.array([1, s, s, h, hk, d, dv, 1], np.int64).tobytes()
    hdr += np.array([scale, qd, kd, vd], np.float32).tobytes()
    (tmp_path / "in.bin").write_bytes(hdr + b"".join(a.view(np.uint8).tobytes() for a in (q8, k8, v8)))
    subprocess.run([str(built), recipe, str(tmp_path / "in.bin"), str(tmp_path / "out.bin")], check=True)
    raw = (tmp_path / "out.bin").read_bytes()
    ref_out = np.frombuffer(raw, np.float32, s * h * dv).reshape(s, h, dv)
    ref_lse = np.frombuffer(raw, np.float32, h * s, offset=4 * s * h * dv).reshape(h, s)
    assert np.array_equal(out, ref_out) and np.array_equal(lse, ref_lse)


def test_key_ranges(built):
    """Sliding window: rows the window does not cut equal the causal result; split-K partials merged with the
    exact LSE (zyfa_v2, Fp8LseMode exact) reproduce the single pass to fp32/e4m3 tolerance."""
    q8, k8, v8, qd, kd, vd, scale = small_problem(s=300)
    full, lse_full = spec.fp8_attention("zyfa_v2", q8, k8, v8, qd, kd, vd, scale, lse_mode="exact")
    win, _ = spec.fp8_attention("zyfa_v2", q8, k8, v8, qd, kd, vd, scale, window=100, lse_mode="exact")
    assert np.array_equal(win[:100], full[:100]) and not np.array_equal(win[150:], full[150:])
    parts = [spec.fp8_attention("zyfa_v2", q8, k8, v8, qd, kd, vd, scale, key_lo=a, key_hi=b, lse_mode="exact")
             for a, b in ((0, 128), (128, 300))]
    L = np.stack([p[1] for p in parts]).astype(np.float64)
    tot = np.logaddexp(L[0], L[1])
    assert np.nanmax(np.abs(tot - lse_full)) < 1e-4
    merged = sum(np.nan_to_num(np.exp(L[c] - tot)).T[:, :, None] * parts[c][0] for c in range(2))
    assert spec.rel_fro(merged, full) < 0.05  # the partials round their own P blocks differently
    assert np.all(parts[1][0][:128] == 0) and np.all(np.isneginf(parts[1][1][:, :128]))


def test_layers_study_subset(built):
    """The real-layer study on the first 192 tokens: the ordering the docs report must hold there too."""
    res = study.main(["layers", "--rows", "192", "--out", "-"]) == 0
    assert res
    out = {}
    for name in study.LAYERS:
        pb = study.prepare(*study.load(name, 192))
        out[name] = {r: study.errors(pb, r)[0] for r in ("zyfa", "zyfa_v2", "scaled_p", "fa3", "aiter_asm_hd128")}
        e = {r: x["rel_fro"] for r, x in out[name].items()}
        assert e["zyfa_v2"] < e["zyfa"] and e["zyfa_v2"] < e["scaled_p"] and e["zyfa_v2"] < e["fa3"]
        assert e["aiter_asm_hd128"] > 1.2 * e["zyfa"]  # the raw cast flushes the small probabilities
        assert abs(out[name]["zyfa"]["lse_mean"]) < 1e-3 and abs(out[name]["zyfa_v2"]["lse_mean"]) < 1e-3


def test_model_level_helpers():
    """KL of identical logits is 0 and positive otherwise; perplexity from the NLL; AITER's routing."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20, 8)).astype(np.float32)
    w = rng.standard_normal((50, 8)).astype(np.float32)
    ids = list(rng.integers(0, 50, 20))
    kl, nll = model_level.kl_and_nll(x, x, w, ids, chunk=7)
    assert np.allclose(kl, 0, atol=1e-12)
    lp = model_level.log_softmax(x[:-1] @ w.T)
    assert np.allclose(nll, -lp[np.arange(19), ids[1:]])
    kl2, _ = model_level.kl_and_nll(x, x + 0.3 * rng.standard_normal(x.shape).astype(np.float32), w, ids)
    assert (kl2 > 0).all()

    def cfg(h, hk, d, glob=True):
        return types.SimpleNamespace(n_heads=h, n_heads_kv=hk, head_dim=d, head_dim_v=d, is_global=lambda i: glob)
    assert model_level.routed_aiter(cfg(9, 3, 64), 0) == "aiter_ck"          # SmolLM2
    assert model_level.routed_aiter(cfg(4, 1, 256), 11) == "aiter_asm_hd256"  # Gemma 3 global layer
    assert model_level.routed_aiter(cfg(4, 1, 256, glob=False), 0) == "aiter_ck"  # sliding window
    assert model_level.routed_aiter(cfg(32, 8, 128), 0) == "aiter_asm_hd128"
    assert model_level.routed_aiter(cfg(24, 8, 128), 0) == "aiter_ck"        # GQA ratio 3


def test_readme_fp8_table_is_the_committed_study():
    """Every zyfa / zyfa_v2 / peer number of the README's FP8 table is in docs/accuracy/layers.json (3 digits)."""
    res = json.loads((ROOT / "docs" / "accuracy" / "layers.json").read_text())
    readme = (ROOT / "README.md").read_text()
    sec = readme[readme.index("## FP8 accuracy"):]
    sec = sec[:sec.index("\n## ", 5)]
    for name in study.LAYERS:
        for r in ("zyfa", "zyfa_v2", study.AITER_ROUTE[name], "fa3"):
            v = res[name][r]["rel_fro"]
            mant, exp = f"{v:.2e}".split("e")
            assert f"{mant}e{exp}" in sec, f"README lacks {name} {r} = {v:.2e}"
    model = json.loads((ROOT / "docs" / "accuracy" / "model.json").read_text())
    for short, rr in model.items():
        if short.startswith("_"):
            continue
        for r, e in rr.items():
            assert f"{e['mean_kl']:.2e}" in sec, f"README lacks model KL {short} {r}"
