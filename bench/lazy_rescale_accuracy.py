#!/usr/bin/env python3
"""Accuracy of lazy online-softmax rescaling (bf16/sm90/config_ws.hpp, kRescaleThreshold), modelled on the host.

The sm_90a BF16 kernel's online softmax per query row: key tiles of 128 keys visited last to first, fp32 running max
m, row sum l and O, P = exp2(s * scale_log2 - m * scale_log2) summed into l in fp32 and rounded to bf16 for P.V, O / l
rounded to bf16 at the end. Eager (threshold 0, -DZYFA_SM90_RESCALE_THRESHOLD=0): m moves on every increase. Lazy
(threshold 8, the default; FlashAttention-4's conditional rescale): m moves only when a tile's max exceeds it by more
than 8 log2 units. Both against the fp64 reference (tools/accuracy/spec.py attention_ref, natural-log LSE), causal,
on random inputs and the real activations in data/activations/.
Prints max and RMS |out - ref|, max |lse - ref| and the mean number of max moves per row after its first key tile.
A model, not the kernel's bits: exact exp2 (the kernel's ex2.approx), s * scale - base rounded twice (one fma there),
O rescaled on every tile (the kernel skips factors that are exactly 1), hd128 and 128-key tiles only.
Usage: python3 bench/lazy_rescale_accuracy.py   (numpy, ml_dtypes; about 2 s)
"""
import glob
import gzip
import os
import sys

import ml_dtypes
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from accuracy.spec import attention_ref, bf16 as round_bf16  # noqa: E402

BF16 = ml_dtypes.bfloat16


def online(q, k, v, scale_log2, threshold, block_n=128):
    """The kernel's arithmetic (fp32, P in bf16 for P.V); returns out (bf16 values), lse (natural log), moves/row."""
    sq, sk = q.shape[0], k.shape[0]
    s_all = q.astype(np.float32) @ k.astype(np.float32).T
    s_all = np.where(np.arange(sk)[None, :] <= np.arange(sq)[:, None] + (sk - sq), s_all, -np.inf)
    m = np.full(sq, -np.inf, np.float32)
    l = np.zeros(sq, np.float32)
    o = np.zeros((sq, v.shape[1]), np.float32)
    margin = np.float32(min(threshold / scale_log2, np.finfo(np.float32).max))
    moves = np.zeros(sq)
    for n in reversed(range((sk + block_n - 1) // block_n)):
        s = s_all[:, n * block_n:(n + 1) * block_n]
        mx = np.maximum(m, s.max(axis=1))
        if threshold > 0:
            mx = np.where(mx > m + margin, mx, m)
        base = np.where(mx == -np.inf, 0, mx * scale_log2).astype(np.float32)
        with np.errstate(invalid="ignore"):
            corr = np.exp2(m * scale_log2 - base).astype(np.float32)
        moves += (mx != m) & (m != -np.inf)
        p = np.exp2(s * scale_log2 - base[:, None]).astype(np.float32)
        l = l * corr + p.sum(axis=1)
        o = o * corr[:, None] + round_bf16(p) @ v[n * block_n:(n + 1) * block_n].astype(np.float32)
        m = mx
    return round_bf16(o / l[:, None]), (m * scale_log2 + np.log2(l)) * np.log(2), moves.mean()


def case(name, q, k, v):
    scale = 1 / np.sqrt(q.shape[1])
    ref_o, ref_lse = attention_ref(q[:, None], k[:, None], v[:, None], scale)  # one head, seqlen_q == seqlen_k
    ref_o, ref_lse = ref_o[:, 0], ref_lse[0]
    cells = []
    for threshold in (0.0, 8.0):
        o, lse, moves = online(q, k, v, np.float32(scale * np.log2(np.e)), threshold)
        d = o - ref_o
        cells.append(f"{threshold:g}: {np.abs(d).max():.2e} {np.sqrt((d * d).mean()):.2e} "
                     f"{np.abs(lse - ref_lse).max():.1e} {moves:.2f}")
    print(f"{name:34s} | " + " | ".join(cells))


def main():
    print(f"{'case':34s} | threshold: max|dO| rms|dO| max|dLSE| moves/row (eager | lazy)")
    rng = np.random.default_rng(0)
    q, k, v = (round_bf16(rng.standard_normal((2048, 128)).astype(np.float32)) for _ in range(3))
    case("random N(0,1), hd128, 2048", q, k, v)
    case("random, q x 3 (peaky rows)", round_bf16(q * 3), k, v)
    k_sink = k.copy()
    k_sink[0] *= 8
    case("random, q x 3, key 0 x 8 (a sink)", round_bf16(q * 3), round_bf16(k_sink), v)
    for model in sorted(glob.glob(os.path.join(ROOT, "data", "activations", "*"))):
        def load(t):
            return np.load(gzip.open(glob.glob(f"{model}/layer*_{t}.npy.gz")[0])).view(BF16).astype(np.float32)
        Q, K, V = load("q"), load("k"), load("v")
        group = Q.shape[2] // K.shape[2]
        for h in range(0, Q.shape[2], max(1, Q.shape[2] // 3)):
            case(f"{os.path.basename(model)} head {h}", Q[0, :, h], K[0, :, h // group], V[0, :, h // group])


if __name__ == "__main__":
    main()
