"""ctypes access to zyfa's FP8 host specification (tools/accuracy/spec_capi.cpp) plus the fp64/bf16 references.

Every FP8 number of the studies comes from the C++ specification (include/zyfa/host/fp8_spec.hpp) through
``fp8_attention``; this module only quantizes (quantize.hpp's rule), builds the shared library, and computes the
fp64 and bf16 references in numpy.
"""
from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import subprocess

import ml_dtypes
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
FN = ml_dtypes.float8_e4m3fn
F32 = np.float32
#: Fp8Recipe values (fp8_spec.hpp, enum order)
RECIPES = ["aiter_like", "scaled_p", "zyfa", "zyfa_exact", "aiter_asm_hd128", "aiter_asm_hd256", "aiter_ck", "fa3",
           "zyfa_v2"]
LSE_MODES = ["corrected", "exact", "mean_bias"]
_LIB = None


def lib(build_dir: pathlib.Path | None = None):
    """Builds (if needed) and loads spec_capi.so; rebuilt when the headers or the source are newer."""
    global _LIB
    if _LIB is not None:
        return _LIB
    build_dir = build_dir or pathlib.Path(os.environ.get("ZYFA_ACCURACY_BUILD", ROOT / "build" / "accuracy"))
    build_dir.mkdir(parents=True, exist_ok=True)
    so = build_dir / "spec_capi.so"
    src = ROOT / "tools" / "accuracy" / "spec_capi.cpp"
    deps = [src, *sorted((ROOT / "include" / "zyfa").rglob("*.hpp"))]
    if not so.exists() or any(d.stat().st_mtime > so.stat().st_mtime for d in deps):
        cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
        subprocess.run([cxx, "-std=c++17", "-O3", "-ffp-contract=off", "-shared", "-fPIC", "-pthread",
                        f"-I{ROOT / 'include'}", str(src), "-o", str(so)], check=True)
    _LIB = ctypes.CDLL(str(so))
    i64, f32, u8p, fp = ctypes.c_int64, ctypes.c_float, ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_float)
    _LIB.zyfa_spec_attention.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, i64, i64, i64, i64, i64, i64, i64,
                                         i64, f32, f32, f32, f32, u8p, u8p, u8p, fp, fp, ctypes.c_int]
    _LIB.zyfa_spec_attention.restype = ctypes.c_int
    return _LIB


def quantize(x: np.ndarray):
    """Per-tensor e4m3fn quantization (zyfa::host::quantize_e4m3fn): descale = amax / 448, codes = RNE(x / d)."""
    x = np.asarray(x, F32)
    amax = F32(np.abs(x).max())
    d = F32(amax / F32(448)) if amax > 0 else F32(1)
    return np.clip(x / d, -448, 448).astype(FN), d


def fp8_attention(recipe: str, q8, k8, v8, qd, kd, vd, scale: float, window: int = 0, key_lo: int = 0,
                  key_hi: int | None = None, lse_mode: str = "corrected", block_max_code: int = -1,
                  threads: int | None = None):
    """One causal layer [S, H, D] (e4m3fn arrays) through the C++ specification. Returns (out fp32 [S, H, DV],
    lse fp32 [H, S])."""
    S, H, D = q8.shape
    HK, DV = k8.shape[1], v8.shape[2]
    q, k, v = (np.ascontiguousarray(a).view(np.uint8) for a in (q8, k8, v8))
    out = np.empty((S, H, DV), F32)
    lse = np.empty((H, S), F32)
    u8p, fp = ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_float)
    rc = lib().zyfa_spec_attention(
        RECIPES.index(recipe), LSE_MODES.index(lse_mode), block_max_code, S, H, HK, D, DV, window, key_lo,
        S if key_hi is None else key_hi, F32(scale), F32(qd), F32(kd), F32(vd), q.ctypes.data_as(u8p),
        k.ctypes.data_as(u8p), v.ctypes.data_as(u8p), out.ctypes.data_as(fp), lse.ctypes.data_as(fp),
        threads or os.cpu_count() or 1)
    if rc != 0:
        raise ValueError("zyfa_spec_attention: bad arguments")
    return out, lse


def attention_ref(q, k, v, scale: float, window: int = 0, dtype=np.float64, block: int = 256):
    """Causal (optionally sliding-window) GQA attention in ``dtype``; q [S, H, D], k/v [S, HK, D*]. Returns
    (out [S, H, DV] in dtype, lse [H, S] natural log, float64)."""
    S, H, _ = q.shape
    g = H // k.shape[1]
    q, k, v = (np.asarray(a, dtype) for a in (q, k, v))
    out = np.empty((S, H, v.shape[2]), dtype)
    lse = np.empty((H, S))
    # contiguous per-head copies: numpy's matmul falls back to a slow loop on strided operands
    kh = [np.ascontiguousarray(k[:, j]) for j in range(k.shape[1])]
    vh = [np.ascontiguousarray(v[:, j]) for j in range(v.shape[1])]
    qh = [np.ascontiguousarray(q[:, j]) for j in range(H)]
    for r0 in range(0, S, block):
        r1 = min(S, r0 + block)
        k0 = 0 if window <= 0 else max(0, r0 - window + 1)
        qi, kj = np.arange(r0, r1)[:, None], np.arange(k0, r1)[None, :]
        mask = kj <= qi
        if window > 0:
            mask &= (qi - kj) < window
        for h in range(H):
            s = (qh[h][r0:r1] @ kh[h // g][k0:r1].T) * dtype(scale)
            s = np.where(mask, s, -np.inf)
            m = s.max(axis=1, keepdims=True)
            e = np.exp(s - m)
            z = e.sum(axis=1, keepdims=True)
            out[r0:r1, h] = (e @ vh[h // g][k0:r1]) / z
            lse[h, r0:r1] = (m + np.log(z))[:, 0]
    return out, lse


def bf16(x):
    """Round to bf16 (RNE) and back to float32."""
    return np.asarray(x, F32).astype(ml_dtypes.bfloat16).astype(F32)


def rel_fro(a, ref) -> float:
    a, ref = np.asarray(a, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(a - ref) / np.linalg.norm(ref))
