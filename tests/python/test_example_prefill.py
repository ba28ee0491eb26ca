"""Tests of the main job, examples/prefill (zyfa_prefill) and examples/run_prefill.sh.

The binary is taken from $ZYFA_BUILD_DIR (default build/) and built there if missing. Each test writes q/k/v
files in one of the supported formats, runs the program, and checks its .npy outputs against an fp64 attention
computed here with numpy on the same bf16-rounded inputs (ml_dtypes does the rounding, independently of the
C++ code), or checks that bad input gives a clear error naming the argument.
"""
import gzip
import os
import pathlib
import re
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("ZYFA_BUILD_DIR", "build"))
BUILD = BUILD if BUILD.is_absolute() else ROOT / BUILD


@pytest.fixture(scope="module")
def exe() -> pathlib.Path:
    path = BUILD / "examples" / "prefill" / "zyfa_prefill"
    if not path.exists():
        subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(BUILD), "--target", "zyfa_prefill", "-j2"], check=True)
    assert path.exists(), f"zyfa_prefill was not built in {BUILD}"
    return path


def to_bf16(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16)


def save(path: pathlib.Path, a: np.ndarray) -> None:
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as f:
            np.save(f, a, allow_pickle=False)
    else:
        np.save(path, a, allow_pickle=False)


def encode(x: np.ndarray, descr: str) -> np.ndarray:
    """x (float32) as stored in a file of dtype descr ('<u2' = bf16 bit patterns)."""
    if descr == "<u2":
        return to_bf16(x).view("<u2")
    return x.astype(descr)


def reference(q, k, v, causal, scale):
    """fp64 attention, BSHD, bottom-right causal, GQA; returns out [b,sq,h,dv], lse [b,h,sq] (natural log)."""
    b, sq, h, _ = q.shape
    sk, hk = k.shape[1], k.shape[2]
    q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
    kk = np.repeat(k, h // hk, axis=2)
    vv = np.repeat(v, h // hk, axis=2)
    s = np.einsum("bihd,bjhd->bhij", q, kk) * scale
    if causal:
        i = np.arange(sq)[:, None]
        j = np.arange(sk)[None, :]
        s = np.where(j <= i + sk - sq, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    empty = ~np.isfinite(m)
    p = np.where(empty, 0.0, np.exp(s - np.where(empty, 0.0, m)))
    l = p.sum(axis=-1, keepdims=True)
    out = np.einsum("bhij,bjhd->bihd", np.divide(p, l, out=np.zeros_like(p), where=l > 0), vv)
    lse = np.where(empty[..., 0], -np.inf, (m + np.log(np.where(l > 0, l, 1.0)))[..., 0])
    return out, lse


def run(exe, *args, check=True):
    r = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def make_inputs(rng, b, sq, sk, h, hk, dqk, dv):
    q = rng.standard_normal((b, sq, h, dqk)).astype(np.float32)
    k = rng.standard_normal((b, sk, hk, dqk)).astype(np.float32)
    v = rng.standard_normal((b, sk, hk, dv)).astype(np.float32)
    k[..., 5] *= 6.0  # an outlier channel, as real keys have
    return q, k, v


@pytest.mark.parametrize("descr,ext", [("<u2", ".npy.gz"), ("<u2", ".npy"), ("<f2", ".npy.gz"), ("<f4", ".npy")])
@pytest.mark.parametrize("causal,sq,sk", [(True, 40, 72), (True, 72, 40), (False, 33, 65)])
def test_output_matches_fp64(exe, tmp_path, descr, ext, causal, sq, sk):
    rng = np.random.default_rng(sq * 1000 + sk)
    q, k, v = make_inputs(rng, 2, sq, sk, 4, 2, 64, 32)
    files = {}
    for name, x in (("q", q), ("k", k), ("v", v)):
        files[name] = tmp_path / f"{name}{ext}"
        save(files[name], encode(x, descr))
    r = run(exe, "--q", files["q"], "--k", files["k"], "--v", files["v"], "--out", tmp_path / "o.npy",
            "--lse", tmp_path / "lse.npy", "--causal" if causal else "--no-causal", "--no-fp8")
    assert "backend: host" in r.stdout
    # The program rounds <f2/<f4 inputs to bf16 (RNE); the reference does the same with ml_dtypes.
    qb, kb, vb = (to_bf16(x.astype(descr) if descr != "<u2" else x).astype(np.float64) for x in (q, k, v))
    ref_out, ref_lse = reference(qb, kb, vb, causal, 1.0 / np.sqrt(64))
    out_bits = np.load(tmp_path / "o.npy")
    assert out_bits.dtype == np.dtype("<u2") and out_bits.shape == (2, sq, 4, 32)
    out = out_bits.view(ml_dtypes.bfloat16).astype(np.float64)
    lse = np.load(tmp_path / "lse.npy")
    assert lse.dtype == np.dtype("<f4") and lse.shape == (2, 4, sq)
    empty = np.isneginf(ref_lse)
    assert empty.any() == (causal and sq > sk)
    # rows that see no key: exactly 0 and -inf, never NaN
    assert np.all(np.isneginf(lse[empty]))
    assert np.all(out.transpose(0, 2, 1, 3)[empty] == 0.0)
    assert not np.isnan(out).any() and not np.isnan(lse).any()
    # bf16 output: rounding error up to 2^-9 relative, plus fp32 accumulation
    assert np.abs(out - ref_out).max() < 1.5e-2
    rel = np.linalg.norm(out - ref_out) / np.linalg.norm(ref_out)
    assert rel < 5e-3, rel
    assert np.abs(lse[~empty] - ref_lse[~empty]).max() < 1e-4
    # the program's own fp64 check agrees with ours
    m = re.search(r"out: rel_fro (\S+)", r.stdout)
    assert m and abs(float(m.group(1)) - rel) < 1e-3 * max(rel, 1e-6) + 1e-6, (m and m.group(1), rel)


def test_three_d_inputs_scale_and_gz_output(exe, tmp_path):
    rng = np.random.default_rng(7)
    q, k, v = make_inputs(rng, 1, 17, 17, 2, 1, 128, 128)  # MQA
    for name, x in (("q", q), ("k", k), ("v", v)):
        save(tmp_path / f"{name}.npy", encode(x[0], "<u2"))  # 3-D [seqlen, heads, head_dim]
    run(exe, "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v", tmp_path / "v.npy",
        "--softmax-scale", "0.3", "--out", tmp_path / "o.npy.gz", "--no-fp8")
    with gzip.open(tmp_path / "o.npy.gz", "rb") as f:
        out = np.load(f).view(ml_dtypes.bfloat16).astype(np.float64)
    ref, _ = reference(*(to_bf16(x).astype(np.float64) for x in (q, k, v)), True, 0.3)
    assert out.shape == ref.shape
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 5e-3
    # a wrong scale would be far off: the check can fail
    wrong, _ = reference(*(to_bf16(x).astype(np.float64) for x in (q, k, v)), True, 1.0 / np.sqrt(128))
    assert np.linalg.norm(out - wrong) / np.linalg.norm(wrong) > 5e-2


def test_fp8_report_on_sample(exe):
    d = ROOT / "data" / "sample"
    r = run(exe, "--q", d / "q.npy.gz", "--k", d / "k.npy.gz", "--v", d / "v.npy.gz")
    for recipe in ("aiter_like", "scaled_p", "zyfa", "zyfa_exact", "bf16"):
        assert re.search(rf"^\| {recipe} \| \d", r.stdout, re.M), recipe
    m = re.search(r"^SUMMARY (.*)$", r.stdout, re.M)
    fields = dict(kv.split("=") for kv in m.group(1).split())
    assert fields["backend"] == "host"
    assert 0 < float(fields["rel_fro"]) < 5e-3
    assert 0 < float(fields["fp8_zyfa_rel_fro"]) < 0.1 and 0 < float(fields["fp8_aiter_like_rel_fro"]) < 0.1


@pytest.mark.parametrize("case,expect", [
    ("dtype", "q: "),
    ("headdim", "k: shape[3] (head_dim_qk) is 32, expected 64"),
    ("missing", "v: "),
    ("truncated", "k: "),
    ("rank", "q: "),
])
def test_bad_input_is_a_clear_error(exe, tmp_path, case, expect):
    rng = np.random.default_rng(1)
    q, k, v = make_inputs(rng, 1, 16, 16, 2, 2, 64, 64)
    save(tmp_path / "q.npy", encode(q, "<u2"))
    save(tmp_path / "k.npy", encode(k, "<u2"))
    save(tmp_path / "v.npy", encode(v, "<u2"))
    vpath = tmp_path / "v.npy"
    if case == "dtype":
        save(tmp_path / "q.npy", q.astype("<i4"))
    elif case == "headdim":
        save(tmp_path / "k.npy", encode(k[..., :32].copy(), "<u2"))
    elif case == "missing":
        vpath = tmp_path / "nonexistent.npy"
    elif case == "truncated":
        data = (tmp_path / "k.npy").read_bytes()
        (tmp_path / "k.npy").write_bytes(data[: len(data) // 2])
    elif case == "rank":
        save(tmp_path / "q.npy", encode(q.reshape(16, 128), "<u2"))
    r = run(exe, "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v", vpath, check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "error: " + expect in r.stderr, r.stderr
    r = run(exe, "--q", tmp_path / "q.npy", "--bogus", check=False)
    assert r.returncode == 2 and "usage:" in r.stderr


def test_sample_is_small_synthetic_and_reproducible(tmp_path):
    d = ROOT / "data" / "sample"
    subprocess.run([sys.executable, str(d / "make_sample.py"), str(tmp_path)], check=True, stdout=subprocess.DEVNULL)
    total = 0
    for name in ("q", "k", "v"):
        committed = (d / f"{name}.npy.gz").read_bytes()
        assert committed == (tmp_path / f"{name}.npy.gz").read_bytes(), f"{name}.npy.gz differs from make_sample.py"
        total += len(committed)
    assert total < 600_000
    assert "SYNTHETIC" in (d / "README.md").read_text()


def test_run_prefill_script_on_sample(exe, tmp_path):
    env = dict(os.environ, ZYFA_BUILD_DIR=str(BUILD), ZYFA_OUT_DIR=str(tmp_path), ZYFA_INPUT="sample",
               ZYFA_PREFILL_GPU="OFF")
    r = subprocess.run(["bash", str(ROOT / "examples" / "run_prefill.sh"), "--no-fp8"], env=env, capture_output=True,
                       text=True, cwd=str(ROOT))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "backend: host" in r.stdout
    assert re.search(r"^\| sample \(synthetic\) \| host \| \d", r.stdout, re.M), r.stdout[-2000:]
    out = np.load(tmp_path / "sample" / "out.npy")
    assert out.shape == (1, 256, 4, 128)


def test_run_prefill_script_per_layer(exe, tmp_path):
    """The activations branch: every layerNN of every model directory, softmax_scale from meta.json, the model's
    own output compared (--expected). Uses a fake two-layer 'model' made here from random data."""
    rng = np.random.default_rng(3)
    model = tmp_path / "act" / "fake-model"
    model.mkdir(parents=True)
    scale = 0.0625
    for layer in ("layer00", "layer07"):
        q, k, v = make_inputs(rng, 1, 48, 48, 4, 2, 64, 64)
        ref, _ = reference(*(to_bf16(x).astype(np.float64) for x in (q, k, v)), True, scale)
        for name, x in (("q", q), ("k", k), ("v", v), ("out", ref.astype(np.float32))):
            save(model / f"{layer}_{name}.npy.gz", encode(x, "<u2"))
    (model / "meta.json").write_text('{"model": "fake", "causal": true, "softmax_scale": %r, "layers": []}' % scale)
    env = dict(os.environ, ZYFA_BUILD_DIR=str(BUILD), ZYFA_OUT_DIR=str(tmp_path / "out"),
               ZYFA_ACTIVATIONS_DIR=str(tmp_path / "act"), ZYFA_PREFILL_GPU="OFF")
    r = subprocess.run(["bash", str(ROOT / "examples" / "run_prefill.sh"), "--no-fp8"], env=env,
                       capture_output=True, text=True, cwd=str(ROOT))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stdout.count("softmax_scale 0.0625") == 2
    rows = re.findall(r"^\| fake-model/(layer\d\d) \| host \| (\S+) \| - \| - \| - \| (\S+) \|$", r.stdout, re.M)
    assert [x[0] for x in rows] == ["layer00", "layer07"], r.stdout[-2000:]
    for _, rel, vs_model in rows:
        # the 'model output' is the fp64 reference rounded to bf16, so both errors are bf16-sized
        assert 0 < float(rel) < 5e-3 and 0 < float(vs_model) < 5e-3
    assert (tmp_path / "out" / "fake-model" / "layer07" / "out.npy").exists()
