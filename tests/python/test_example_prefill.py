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
import resource
import struct
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
    """The zyfa_prefill binary in $ZYFA_BUILD_DIR, configured if needed and always brought up to date (a no-op
    when it is), so that a stand-alone pytest run never tests a stale binary. A lock file serializes builds of
    concurrent pytest runs on the same build directory."""
    import fcntl

    path = BUILD / "examples" / "prefill" / "zyfa_prefill"
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / ".zyfa_prefill_build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (BUILD / "CMakeCache.txt").exists():
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD), "-DCMAKE_BUILD_TYPE=Release",
                            "-DZYFA_BUILD_EXAMPLES=ON"], check=True,
                           stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", str(BUILD), "--target", "zyfa_prefill", "-j2"], check=True,
                       stdout=subprocess.DEVNULL)
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


MEM_LIMIT = 1 << 30  # address-space limit of every run (bytes): a run that allocates what a file only claims fails


def run(exe, *args, check=True, mem_limit=MEM_LIMIT):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))

    r = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, preexec_fn=limit)
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
    # columns: input | backend | out | zyfa FP8 | aiter_like FP8 | ratio | zyfa FP8 on the GPU | vs model's own out
    rows = re.findall(r"^\| fake-model/(layer\d\d) \| host \| (\S+) \| - \| - \| - \| - \| (\S+) \|$", r.stdout,
                      re.M)
    assert [x[0] for x in rows] == ["layer00", "layer07"], r.stdout[-2000:]
    for _, rel, vs_model in rows:
        # the 'model output' is the fp64 reference rounded to bf16, so both errors are bf16-sized
        assert 0 < float(rel) < 5e-3 and 0 < float(vs_model) < 5e-3
    assert (tmp_path / "out" / "fake-model" / "layer07" / "out.npy").exists()


# ---- hostile input: crafted .npy headers, non-finite results, FP8-report limits, --expected shape ----

def npy_bytes(header: str, data: bytes = b"", version: int = 1) -> bytes:
    """A .npy file with the literal header dict `header` (written as given, so it may be malformed on purpose),
    padded with spaces and a newline so the data starts 64-byte aligned, as NumPy does."""
    lenbytes = 2 if version == 1 else 4
    h = header
    while (6 + 2 + lenbytes + len(h) + 1) % 64:
        h += " "
    h += "\n"
    length = struct.pack("<H" if version == 1 else "<I", len(h))
    return b"\x93NUMPY" + bytes([version, 0]) + length + h.encode("latin1") + data


def write_crafted(path: pathlib.Path, header: str, data: bytes = b"", version: int = 1) -> None:
    raw = npy_bytes(header, data, version)
    path.write_bytes(gzip.compress(raw) if path.suffix == ".gz" else raw)


def small_problem(tmp_path, dqk=64, dv=64, seed=1):
    """Valid q/k/v files ([1, 16, 2, dqk/dv], bf16 bits) in tmp_path; returns their paths and the float arrays."""
    rng = np.random.default_rng(seed)
    q, k, v = make_inputs(rng, 1, 16, 16, 2, 2, dqk, dv)
    paths = {}
    for name, x in (("q", q), ("k", k), ("v", v)):
        paths[name] = tmp_path / f"{name}.npy"
        save(paths[name], encode(x, "<u2"))
    return paths, (q, k, v)


@pytest.mark.parametrize("shape,ext,expect", [
    # 2 * 4611686018427387905 bytes overflows int64 (was: std::length_error, abort)
    ("(4611686018427387905,)", ".npy", "shape too large"),
    # 4294967297 * 4294967296 wraps to 2^32 elements (was: an 8 GiB allocation)
    ("(4294967297, 4294967296)", ".npy", "shape too large"),
    # 2^30 * 2^30 * 16 * 256 wraps to 0 elements (was: read as an empty array)
    ("(1073741824, 1073741824, 16, 256)", ".npy", "shape too large"),
    ("(1073741824, 1073741824, 16, 256)", ".npy.gz", "shape too large"),
    # more than the documented 16 GiB limit, without overflow
    ("(1, 4096, 4096, 1025)", ".npy", "shape too large"),
    # a 100-byte file claiming 16 GiB (exactly the limit): truncated, found without allocating 16 GiB
    ("(1, 8192, 1024, 1024)", ".npy", "truncated data"),
    ("(1, 8192, 1024, 1024)", ".npy.gz", "truncated data"),
    # claims 512 MiB (under the 1 GiB address-space limit of the run, but more than is there)
    ("(1, 1024, 256, 1024)", ".npy.gz", "truncated data"),
])
def test_huge_shape_claims_are_clear_errors(exe, tmp_path, shape, ext, expect):
    paths, _ = small_problem(tmp_path)
    qpath = tmp_path / f"huge{ext}"
    write_crafted(qpath, "{'descr': '<u2', 'fortran_order': False, 'shape': %s, }" % shape, b"\0" * 36)
    # 256 MiB of address space: allocating what the header claims (512 MiB or more) would abort the run
    r = run(exe, "--q", qpath, "--k", paths["k"], "--v", paths["v"], check=False, mem_limit=256 << 20)
    assert r.returncode == 1, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert f"error: q: {qpath}: {expect}" in r.stderr, r.stderr


def test_shape_too_large_names_limit(exe, tmp_path):
    paths, _ = small_problem(tmp_path)
    qpath = tmp_path / "big.npy"
    write_crafted(qpath, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2147483647, 2, 2), }")
    r = run(exe, "--q", qpath, "--k", paths["k"], "--v", paths["v"], check=False)
    assert r.returncode == 1
    assert "shape too large" in r.stderr and "16 GiB" in r.stderr, r.stderr


@pytest.mark.parametrize("header,ok", [
    ("{'descr': '<u2', 'fortran_order': False , 'shape': (1, 16, 2, 64), }", True),
    ("{'descr': '<u2', 'fortran_order' : False  , 'shape' : ( 1, 16, 2, 64 ), }", True),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 16, 2, 64,), }", True),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (1,16,2,64 , ), }", True),
    ("{'shape': (1, 16, 2, 64), 'fortran_order': False, 'descr': '<u2'}", True),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (1 16 2 64), }", False),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 16 2, 64), }", False),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 16, 2,, 64), }", False),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (,1, 16, 2, 64), }", False),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (1, 16, 2, 64x), }", False),
    ("{'descr': '<u2', 'fortran_order': False, 'shape': (1, -16, 2, 64), }", False),
    ("{'descr': '<u2', 'fortran_order': True, 'shape': (1, 16, 2, 64), }", False),
])
def test_header_parsing(exe, tmp_path, header, ok):
    paths, (q, k, v) = small_problem(tmp_path)
    qpath = tmp_path / "q_crafted.npy"
    write_crafted(qpath, header, encode(q, "<u2").tobytes())
    r = run(exe, "--q", qpath, "--k", paths["k"], "--v", paths["v"], "--out", tmp_path / "o.npy", "--no-fp8",
            check=False)
    if ok:
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr
        ref, _ = reference(*(to_bf16(x).astype(np.float64) for x in (q, k, v)), True, 1.0 / 8)
        out = np.load(tmp_path / "o.npy").view(ml_dtypes.bfloat16).astype(np.float64)
        assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 5e-3
    else:
        assert r.returncode == 1, r.stdout[-2000:] + r.stderr
        assert f"error: q: {qpath}: " in r.stderr, r.stderr
        if "True" not in header:
            assert "shape" in r.stderr, r.stderr


@pytest.mark.parametrize("where", ["v", "q", "k_inf"])
def test_non_finite_output_fails(exe, tmp_path, where):
    paths, (q, k, v) = small_problem(tmp_path)
    if where == "v":
        v[0, 3, 1, 7] = np.nan  # every row of head 1 that sees key 3 gets NaN in channel 7
        save(paths["v"], encode(v, "<u2"))
    elif where == "q":
        q[0, 9, 0, 0] = np.nan  # one whole row (and its softmax_lse) NaN
        save(paths["q"], encode(q, "<u2"))
    else:
        k[0, 2, 0, :] = np.inf  # scores of +-inf: NaN after the max subtraction
        save(paths["k"], encode(k, "<u2"))
    r = run(exe, "--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--out", tmp_path / "o.npy",
            "--lse", tmp_path / "lse.npy", check=False)
    out = np.load(tmp_path / "o.npy").view(ml_dtypes.bfloat16).astype(np.float32)
    lse = np.load(tmp_path / "lse.npy")
    n_out = int((~np.isfinite(out)).sum())
    n_lse = int((~np.isfinite(lse)).sum())  # causal with seqlen_q == seqlen_k: every row sees a key
    assert n_out > 0
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr
    assert "non-finite" in r.stderr, r.stderr
    m = re.search(r"non-finite values: out (\d+), softmax_lse (\d+)", r.stdout)
    assert m and (int(m.group(1)), int(m.group(2))) == (n_out, n_lse), (m and m.groups(), n_out, n_lse)
    # the fp64 comparison does not hide the non-finite pairs
    assert re.search(r"out: rel_fro \S+\s+max_abs nan", r.stdout), r.stdout


def test_empty_rows_are_not_non_finite_errors(exe, tmp_path):
    """Causal with seqlen_q > seqlen_k: rows that see no key have softmax_lse -inf and out 0, legitimately."""
    rng = np.random.default_rng(5)
    q, k, v = make_inputs(rng, 1, 24, 8, 2, 2, 32, 32)
    for name, x in (("q", q), ("k", k), ("v", v)):
        save(tmp_path / f"{name}.npy", encode(x, "<u2"))
    r = run(exe, "--q", tmp_path / "q.npy", "--k", tmp_path / "k.npy", "--v", tmp_path / "v.npy", "--lse",
            tmp_path / "lse.npy")
    assert np.isneginf(np.load(tmp_path / "lse.npy")).sum() == 2 * 16
    assert "non-finite values: out 0, softmax_lse 0" in r.stdout, r.stdout


@pytest.mark.parametrize("dqk,dv", [(8, 8), (24, 24), (40, 40), (72, 72), (64, 24)])
def test_fp8_report_skipped_for_head_dim(exe, tmp_path, dqk, dv):
    paths, (q, k, v) = small_problem(tmp_path, dqk, dv)
    r = run(exe, "--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--out", tmp_path / "o.npy",
            check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    bad = dqk if dqk % 16 else dv
    what = "head_dim" if dqk == dv else ("head_dim_qk" if dqk % 16 else "head_dim_v")
    assert f"FP8 report skipped: {what} {bad} is not a multiple of 16 for e4m3fn" in r.stdout, r.stdout
    assert "fp8_zyfa_rel_fro=-1" in r.stdout
    ref, _ = reference(*(to_bf16(x).astype(np.float64) for x in (q, k, v)), True, 1.0 / np.sqrt(dqk))
    out = np.load(tmp_path / "o.npy").view(ml_dtypes.bfloat16).astype(np.float64)
    assert np.linalg.norm(out - ref) / np.linalg.norm(ref) < 5e-3


@pytest.mark.parametrize("which", ["q", "v"])
def test_fp8_report_skipped_for_tiny_inputs(exe, tmp_path, which):
    paths, (q, k, v) = small_problem(tmp_path)
    x = {"q": q, "v": v}[which]
    x *= np.float32(1e-39) / np.abs(x).max()  # fp32/bf16 subnormal range: amax / 448 is not a normal fp32
    save(paths[which], encode(x, "<u2"))
    r = run(exe, "--q", paths["q"], "--k", paths["k"], "--v", paths["v"], check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert re.search(rf"^FP8 report skipped: {which}: .*too small", r.stdout, re.M), r.stdout
    fields = dict(kv.split("=") for kv in re.search(r"^SUMMARY (.*)$", r.stdout, re.M).group(1).split())
    assert fields["fp8_zyfa_rel_fro"].startswith("-1")
    # the bf16 result stands; tiny v gives bf16-subnormal outputs (few mantissa bits), so only q is checked tightly
    assert float(fields["rel_fro"]) < (5e-3 if which == "q" else 0.5)


def test_fp8_report_runs_on_valid_fp8_problem(exe, tmp_path):
    """The skip is not taken when the FP8 report can run."""
    paths, _ = small_problem(tmp_path, 32, 16)
    r = run(exe, "--q", paths["q"], "--k", paths["k"], "--v", paths["v"])
    assert "FP8 report skipped" not in r.stdout
    assert re.search(r"^\| zyfa \| \d", r.stdout, re.M), r.stdout


@pytest.mark.parametrize("shape", [(1, 16, 64, 2), (1, 2, 16, 64), (2, 8, 2, 64), (16, 2, 64, 1)])
def test_expected_shape_must_match_out(exe, tmp_path, shape):
    paths, (q, k, v) = small_problem(tmp_path)
    ref, _ = reference(*(to_bf16(x).astype(np.float64) for x in (q, k, v)), True, 1.0 / 8)
    ex = tmp_path / "expected.npy"
    save(ex, ref.astype(np.float32).reshape(shape))  # same element count, wrong shape
    r = run(exe, "--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--expected", ex, "--no-fp8",
            check=False)
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr
    assert f"error: --expected: {ex} has shape" in r.stderr and "out is [1, 16, 2, 64]" in r.stderr, r.stderr
    # the right shape (4-D, or 3-D for batch 1) is accepted
    for good in (ref.shape, ref.shape[1:]):
        save(ex, ref.astype(np.float32).reshape(good))
        r = run(exe, "--q", paths["q"], "--k", paths["k"], "--v", paths["v"], "--expected", ex, "--no-fp8")
        assert "vs the model's own attention output" in r.stdout
