"""One attention call (hd128, 16 heads, 16K tokens: batch 2 x seqlen 8192 unless SEQLEN is given; HEADDIM 64 or 256
gives 2048 / HEADDIM heads) for Nsight Compute, by zyfa or by FlashAttention-3:
    ncu --clock-control none -k regex:fwd_kernel_ws --launch-count 1 ... python3 bench/profile_ws.py LIB CAUSAL [0 [SEQLEN [HEADDIM]]]
    ncu --clock-control none -k regex:device_kernel --launch-count 1 ... python3 bench/profile_ws.py LIB CAUSAL fa3 [SEQLEN [HEADDIM]]
(FA3: the fa3_fwd_interface module of the fa3-fwd wheel on PYTHONPATH; FA3's kernel is named device_kernel.)
A number as the third argument profiles that impl of bench/zyfa_capi.cu's zyfa_capi_fwd."""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    sys.exit(__doc__)

import torch  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_sm90_ws import Zyfa  # noqa: E402

causal = sys.argv[2] == "1"
seqlen = int(sys.argv[4]) if len(sys.argv) > 4 else 8192
batch = max(1, 16384 // seqlen)
d = int(sys.argv[5]) if len(sys.argv) > 5 else 128
heads = 2048 // d
q, k, v = (torch.randn(batch, seqlen, heads, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
if len(sys.argv) > 3 and sys.argv[3] == "fa3":
    import fa3_fwd_interface as fa3
    fa3.flash_attn_func(q, k, v, causal=causal)
else:
    zy = Zyfa(sys.argv[1])
    out = torch.empty_like(q)
    lse = torch.empty(batch, heads, seqlen, device="cuda", dtype=torch.float32)
    impl = int(sys.argv[3]) if len(sys.argv) > 3 else 0  # zyfa_capi_fwd's impl (2-6: the default order)
    zy(impl, q, k, v, out, lse, causal)
torch.cuda.synchronize()
