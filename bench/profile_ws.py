"""One zyfa call (hd128, batch 2, seqlen 8192, 16 heads; causal from argv[2]) for Nsight Compute:
    ncu --clock-control none -k regex:fwd_kernel_ws --launch-count 1 ... python3 bench/profile_ws.py LIB CAUSAL"""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_sm90_ws import Zyfa  # noqa: E402

zy = Zyfa(sys.argv[1])
causal = sys.argv[2] == "1"
q, k, v = (torch.randn(2, 8192, 16, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3))
out = torch.empty_like(q)
lse = torch.empty(2, 16, 8192, device="cuda", dtype=torch.float32)
zy(0, q, k, v, out, lse, causal)
torch.cuda.synchronize()
