"""Per-CTA start and end times of the sm_90a BF16 kernel (an experiment build with -DZYFA_WS_CTA_TIMES=1, see
bench/patches/sm90_ws_cta_times.patch), on a GPU machine:

    python3 bench/cta_times.py build-ab/ctat.so [SEQLEN ...]

hd128, 16 heads, 16K tokens, causal. Per seqlen, the median over 7 calls of: the kernel's span (first CTA start to
last CTA end), the spread of the CTAs' starts, their ends as fractions of the span, the SMs' idle share
(1 - mean CTA time / span), the heaviest CTA's key tiles over the mean, and the time per key tile of each CTA."""
import ctypes
import statistics
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_sm90_ws import Zyfa  # noqa: E402

zy = Zyfa(sys.argv[1])
lib = zy.lib
for seqlen in [int(s) for s in sys.argv[2:]] or [2048, 4096, 8192, 16384]:
    batch, heads, d = 16384 // seqlen, 16, 128
    q, k, v = (torch.randn(batch, seqlen, heads, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)
    lse = torch.empty(batch, heads, seqlen, device="cuda", dtype=torch.float32)
    for _ in range(10):
        zy(0, q, k, v, out, lse, True)
    n = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for _ in range(7):
        torch.cuda.synchronize()
        assert lib.zyfa_capi_cta_times(None, ctypes.c_int(n)) == 0
        zy(0, q, k, v, out, lse, True)
        torch.cuda.synchronize()
        buf = (ctypes.c_ulonglong * (4 * n))()
        assert lib.zyfa_capi_cta_times(buf, ctypes.c_int(n)) == 0
        start = [buf[4 * i] for i in range(n)]
        end = [buf[4 * i + 1] for i in range(n)]
        keys = [buf[4 * i + 2] & 0xFFFFFFFF for i in range(n)]
        tiles = [buf[4 * i + 2] >> 32 for i in range(n)]
        t0 = min(start)
        span = max(end) - t0
        busy = [e - s for s, e in zip(start, end)]
        ends = sorted((e - t0) / span for e in end)
        per_key = [b / kt for b, kt in zip(busy, keys)]
        rows.append({
            "span_us": span / 1e3,
            "start_spread_us": (max(start) - t0) / 1e3,
            "end_min": ends[0], "end_p10": ends[n // 10], "end_p50": ends[n // 2], "end_p90": ends[9 * n // 10],
            "idle": 1 - statistics.mean(busy) / span,
            "keys_max_over_mean": max(keys) / statistics.mean(keys),
            "tiles_min_max": f"{min(tiles)}-{max(tiles)}",
            "ns_per_key_tile_min_med_max": f"{min(per_key):.0f}/{statistics.median(per_key):.0f}/{max(per_key):.0f}",
            "corr_keys_busy": statistics.correlation(keys, busy) if len(set(keys)) > 1 else float("nan"),
        })
    print(f"seqlen {seqlen} batch {batch}: median of 7 calls (last call's strings)")
    for key in rows[0]:
        vals = [r[key] for r in rows]
        med = statistics.median(vals) if not isinstance(vals[0], str) else vals[-1]
        print(f"  {key:30s} {med:.4f}" if not isinstance(med, str) else f"  {key:30s} {med}")
    # the last call's CTAs, slowest first: busy time against key tiles
    order = sorted(range(n), key=lambda i: -end[i])
    print("  slowest 5 CTAs (cta, sm, work tiles, key tiles, start us, end us):",
          [(i, buf[4 * i + 3], tiles[i], keys[i], round((start[i] - t0) / 1e3, 1), round((end[i] - t0) / 1e3, 1))
           for i in order[:5]])
    print("  fastest 3 CTAs:", [(i, buf[4 * i + 3], tiles[i], keys[i], round((end[i] - t0) / 1e3, 1))
                                for i in order[-3:]])
