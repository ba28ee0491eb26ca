"""Bit-for-bit comparison of builds of bench/zyfa_capi.cu (impl 0, zyfa::flash_attn_func) on a GPU machine.

A kernel change that only reorders work (issue order, barriers, where a value is packed) must give the same bits as
the build before it; this runs every build on the same inputs and compares out (bf16) and LSE (fp32) as integers.
Shapes: the four built-in head-dim pairs x six (batch, seqlen_q, seqlen_k, heads, heads_k) shapes (tails, GQA/MQA,
seqlen_q < / > seqlen_k) x seqlen_k + {0, 77} x causal and not x four patterns of Inf/NaN in K and V (none, a whole
key, single elements, a strided grid), outputs poisoned with NaN beforehand.
    python3 bench/ab_bitwise.py BASE.so OTHER.so [MORE.so ...]
Prints one line per differing case and a summary; exit status 1 when any case differs or a build fails.
"""
import argparse
import itertools
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_sm90_ws import Zyfa  # noqa: E402

DIMS = [(64, 64), (128, 128), (256, 256), (192, 128)]
SHAPES = [(2, 1024, 1024, 4, 2), (1, 777, 777, 3, 3), (2, 2048, 2048, 8, 8), (1, 300, 1000, 2, 1),
          (3, 513, 129, 2, 2), (1, 4096, 4096, 16, 4)]  # batch, seqlen_q, seqlen_k, num_heads, num_heads_k


def poison(k, v, pattern):
    sk = k.shape[1]
    if pattern == 1:
        v[:, sk - 5] = float("inf")
    elif pattern == 2:
        v[0, sk // 2, 0, 3] = float("nan")
        k[0, sk // 3, 0, 1] = float("inf")
    elif pattern == 3:
        v[:, ::37, :, ::5] = float("-inf")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base")
    ap.add_argument("others", nargs="+")
    args = ap.parse_args()
    libs = [Zyfa(p) for p in [args.base] + args.others]
    cases = differ = 0
    for (dqk, dv), (b, sq, sk0, h, hk), extra, causal, pattern in itertools.product(
            DIMS, SHAPES, [0, 77], [True, False], range(4)):
        sk = sk0 + extra
        g = torch.Generator(device="cuda").manual_seed(cases)
        q = torch.randn(b, sq, h, dqk, device="cuda", dtype=torch.bfloat16, generator=g)
        k = torch.randn(b, sk, hk, dqk, device="cuda", dtype=torch.bfloat16, generator=g)
        v = torch.randn(b, sk, hk, dv, device="cuda", dtype=torch.bfloat16, generator=g)
        poison(k, v, pattern)
        res = []
        for lib in libs:
            out = torch.full((b, sq, h, dv), float("nan"), device="cuda", dtype=torch.bfloat16)
            lse = torch.full((b, h, sq), float("nan"), device="cuda", dtype=torch.float32)
            lib(0, q, k, v, out, lse, causal)
            torch.cuda.synchronize()
            res.append((out.view(torch.int16).clone(), lse.view(torch.int32).clone()))
        for path, (o, l) in zip(args.others, res[1:]):
            if not (torch.equal(o, res[0][0]) and torch.equal(l, res[0][1])):
                differ += 1
                print(f"DIFF {path}: d=({dqk},{dv}) b={b} sq={sq} sk={sk} h={h} hk={hk} causal={int(causal)} "
                      f"pattern={pattern}", flush=True)
        cases += 1
    print(f"ab_bitwise: {cases} cases x {len(args.others)} builds against {args.base}: {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
