"""fp64 reference attention for the Python package's tests (FlashAttention semantics: BSHD, bottom-right causal,
GQA), independent of zyfa."""
import math

import torch


def attention_ref(q, k, v, causal=False, softmax_scale=None):
    """q [b, sq, h, d], k/v [b, sk, hk, d*] (any dtype) -> out [b, sq, h, dv] fp64, lse [b, h, sq] fp64 (natural log).
    Rows that see no key: out 0, lse -inf."""
    b, sq, h, d = q.shape
    sk, hk = k.shape[1], k.shape[2]
    scale = softmax_scale if softmax_scale is not None else 1.0 / math.sqrt(d)
    g = h // hk
    qf = q.double().transpose(1, 2)                                   # b h sq d
    kf = k.double().repeat_interleave(g, dim=2).transpose(1, 2)       # b h sk d
    vf = v.double().repeat_interleave(g, dim=2).transpose(1, 2)
    s = torch.matmul(qf, kf.transpose(-1, -2)) * scale                # b h sq sk
    if causal:
        i = torch.arange(sq).view(-1, 1)
        j = torch.arange(sk).view(1, -1)
        s = s.masked_fill((j > i + sk - sq).to(s.device), -math.inf)
    lse = torch.logsumexp(s, dim=-1)                                  # b h sq
    p = torch.exp(s - lse.unsqueeze(-1))
    p = torch.nan_to_num(p, nan=0.0)                                  # rows with no key
    out = torch.matmul(p, vf).transpose(1, 2)                         # b sq h dv
    return out, lse
