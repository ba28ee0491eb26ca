"""One FP8 (e4m3fn) attention call for Nsight Compute, by zyfa's sm_90a FP8 kernel or by FlashAttention-3's FP8 kernel:
    ncu --clock-control none -k regex:^fwd_kernel$ --launch-count 1 ... python3 bench/profile_fp8.py LIB CAUSAL [MODE [SEQLEN [DQK]]]
    ncu --clock-control none -k regex:device_kernel --launch-count 1 ... python3 bench/profile_fp8.py LIB CAUSAL fa3 [SEQLEN [DQK]]
MODE: zyfa_capi_fp8_fwd's mode (0 Lean P, 1 the exp2 twin); fa3: the fa3_fwd_interface module of the fa3-fwd wheel on
PYTHONPATH (its kernel is named device_kernel). 16 heads, 16K tokens (batch = 16384 / SEQLEN, SEQLEN 8192 unless
given), head_dim_qk DQK (128 unless given), head_dim_v 128, N(0, 1) inputs quantized per tensor as
bench/bench_fp8_sm90.py does."""
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    sys.exit(__doc__)

import torch  # noqa: E402

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_fp8_sm90 import ZyfaFp8, quantize  # noqa: E402

causal = sys.argv[2] == "1"
who = sys.argv[3] if len(sys.argv) > 3 else "0"
seqlen = int(sys.argv[4]) if len(sys.argv) > 4 else 8192
dqk = int(sys.argv[5]) if len(sys.argv) > 5 else 128
batch, heads = max(1, 16384 // seqlen), 16
q, k, v = (torch.randn(batch, seqlen, heads, d, device="cuda", dtype=torch.bfloat16) for d in (dqk, dqk, 128))
(q8, qd), (k8, kd), (v8, vd) = quantize(q), quantize(k), quantize(v)
if who == "fa3":
    import fa3_fwd_interface as fa3
    desc = [torch.full((batch, heads), d, device="cuda", dtype=torch.float32) for d in (qd, kd, vd)]
    fa3.flash_attn_func(q8, k8, v8, causal=causal, q_descale=desc[0], k_descale=desc[1], v_descale=desc[2])
else:
    zy = ZyfaFp8(sys.argv[1])
    out = torch.empty(batch, seqlen, heads, 128, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(batch, heads, seqlen, device="cuda", dtype=torch.float32)
    zy.fp8(int(who), q8, k8, v8, out, lse, causal, (qd, kd, vd))
torch.cuda.synchronize()
