"""zyfa: causal prefill attention kernels with FlashAttention's Python interface.

    import torch, zyfa
    out = zyfa.flash_attn_func(q, k, v, causal=True)                       # q [b, s, h, d] bf16, CPU or CUDA
    out, lse = zyfa.flash_attn_func(q, k, v, causal=True, return_attn_probs=True)
    out = zyfa.flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=True)
    out, lse = zyfa.merge_attn_states(out_a, lse_a, out_b, lse_b)

A CPU tensor runs zyfa's host backend (the executable specification, single-threaded: for checking and small
problems), a CUDA tensor the GPU kernels (sm_90a: BF16, and FP8 e4m3fn with zyfa's Lean P recipe for head dims
(128, 128) and (192, 128)). The three operations are torch.library custom ops (torch.ops.zyfa.fwd, .varlen_fwd,
.merge_attn_states) with fake implementations: torch.compile(fullgraph=True) traces them without graph breaks.
Forward only (no autograd). Errors: TypeError / ValueError naming the argument, NotImplementedError naming an
unsupported option (dropout_p > 0, window_size, softcap, alibi_slopes, block_table) or input (an FP8 or head-dim
case this build has no kernel for).
"""
import math
from typing import Optional, Tuple

import numbers

import torch

from . import _lib

__version__ = "0.1.0"
__all__ = ["flash_attn_func", "flash_attn_varlen_func", "merge_attn_states"]

_QKV_DTYPES = tuple(t for t in (torch.bfloat16, getattr(torch, "float8_e4m3fn", None)) if t is not None)
_NEG_INF = -math.inf


# ----------------------------------------------------------------------------------------------------------------
# argument checks (metadata only: they run while torch.compile traces)

def _tensor(name, t, ndim, layout):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dims {layout}, got {t.dim()} (shape {tuple(t.shape)})")


def _qkv(q, k, v, ndim, layout_q, layout_kv):
    _tensor("q", q, ndim, layout_q)
    _tensor("k", k, ndim, layout_kv)
    _tensor("v", v, ndim, layout_kv)
    if q.dtype not in _QKV_DTYPES:
        raise TypeError(f"q: dtype {q.dtype} is not supported (torch.bfloat16, or torch.float8_e4m3fn with descales)")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: dtype {t.dtype} differs from q's {q.dtype}")
        if t.device != q.device:
            raise ValueError(f"{name}: on device {t.device}, q on {q.device}")


def _check_merge(out_a, lse_a, out_b, lse_b):
    """merge_attn_states' argument checks; run by the wrapper and by the custom op itself (real and fake), so that
    torch.ops.zyfa.merge_attn_states called directly is checked too."""
    _tensor("out_a", out_a, out_a.dim() if isinstance(out_a, torch.Tensor) and out_a.dim() in (3, 4) else 4,
            "[batch, seqlen, num_heads, head_dim] or [total, num_heads, head_dim]")
    four = out_a.dim() == 4
    _tensor("out_b", out_b, out_a.dim(), "as out_a")
    _tensor("lse_a", lse_a, out_a.dim() - 1, "[batch, num_heads, seqlen] or [num_heads, total]")
    _tensor("lse_b", lse_b, out_a.dim() - 1, "as lse_a")
    for name, t in (("out_a", out_a), ("out_b", out_b)):
        if t.dtype not in (torch.bfloat16, torch.float32):
            raise TypeError(f"{name}: dtype {t.dtype} is not supported (torch.bfloat16 or torch.float32)")
    for name, t in (("lse_a", lse_a), ("lse_b", lse_b)):
        if t.dtype != torch.float32:
            raise TypeError(f"{name}: dtype {t.dtype}, expected torch.float32")
    for name, t in (("out_b", out_b), ("lse_a", lse_a), ("lse_b", lse_b)):
        if t.device != out_a.device:
            raise ValueError(f"{name}: on device {t.device}, out_a on {out_a.device}")
    if out_b.shape != out_a.shape:
        raise ValueError(f"out_b: shape {tuple(out_b.shape)} differs from out_a's {tuple(out_a.shape)}")
    want = (out_a.shape[0], out_a.shape[2], out_a.shape[1]) if four else (out_a.shape[1], out_a.shape[0])
    for name, t in (("lse_a", lse_a), ("lse_b", lse_b)):
        if tuple(t.shape) != tuple(want):
            raise ValueError(f"{name}: shape {tuple(t.shape)}, expected {tuple(want)} from out_a")

    if out_a.shape[-1] < 1:
        raise ValueError(f"out_a: head_dim must be >= 1, got shape {tuple(out_a.shape)}")

def _check_shapes(q, k, v, varlen):
    """Shape agreement of q, k, v (fixed length [b, s, h, d] or varlen [t, h, d]), checked in Python as well so that
    inputs the C++ layer never sees (no key, no batch, no query row) are still rejected by name."""
    o = 0 if varlen else 1  # index of the seqlen dim
    if not varlen and not (q.shape[0] == k.shape[0] == v.shape[0]):
        raise ValueError(f"k/v: batch {k.shape[0]}/{v.shape[0]} differs from q's {q.shape[0]}")
    if k.shape[o] != v.shape[o]:
        raise ValueError(f"v: {v.shape[o]} keys, k has {k.shape[o]}")
    if k.shape[o + 1] != v.shape[o + 1]:
        raise ValueError(f"v: num_heads_k {v.shape[o + 1]} differs from k's {k.shape[o + 1]}")
    if k.shape[o + 2] != q.shape[o + 2]:
        raise ValueError(f"k: shape[{o + 2}] (head_dim_qk) is {k.shape[o + 2]}, expected {q.shape[o + 2]} from q "
                         "(head_dim_qk)")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.shape[o + 1] < 1 or t.shape[o + 2] < 1:
            raise ValueError(f"{name}: num_heads and head_dim must be >= 1, got shape {tuple(t.shape)}")
    for name, t, dim in (("q", q, "head_dim_qk"), ("v", v, "head_dim_v")):  # as make_params, for empty inputs too
        if (t.shape[o + 2] * t.element_size()) % 16 != 0:
            raise ValueError(f"{name}: shape[{o + 2}] ({dim}) is {t.shape[o + 2]}, not a multiple of 16 bytes "
                             f"({16 // t.element_size()} elements of {t.dtype})")
    if q.shape[o + 1] % k.shape[o + 1] != 0:
        raise ValueError(f"k: num_heads_k ({k.shape[o + 1]}) must divide q's num_heads ({q.shape[o + 1]})")


def _check_cu_seqlens(q, cu_seqlens_q, cu_seqlens_k):
    for name, cu in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        _tensor(name, cu, 1, "[batch + 1]")
        if cu.dtype != torch.int32:
            raise TypeError(f"{name}: dtype {cu.dtype}, expected torch.int32")
        if cu.device != q.device:
            raise ValueError(f"{name}: on device {cu.device}, q on {q.device}")
    if cu_seqlens_k.shape[0] != cu_seqlens_q.shape[0]:
        raise ValueError(f"cu_seqlens_k: {cu_seqlens_k.shape[0]} entries, cu_seqlens_q has {cu_seqlens_q.shape[0]}")
    if cu_seqlens_q.shape[0] < 2:
        raise ValueError("cu_seqlens_q: must have at least two entries (batch + 1, batch >= 1)")


def _check_offsets(name, max_name, cu, total, max_seqlen):
    """Host-side check of offsets read with .tolist() (the CUDA per-sequence path)."""
    if cu[0] != 0:
        raise ValueError(f"{name}: entry 0 must be 0, got {cu[0]}")
    for i in range(1, len(cu)):
        if cu[i] < cu[i - 1]:
            raise ValueError(f"{name}: entry {i} ({cu[i]}) is less than entry {i - 1} ({cu[i - 1]})")
        if cu[i] - cu[i - 1] > max_seqlen:
            raise ValueError(f"{max_name}: {max_seqlen} is less than sequence {i - 1}'s length {cu[i] - cu[i - 1]}")
    if cu[-1] > total:
        raise ValueError(f"{name}: last entry {cu[-1]} exceeds the {total} packed rows")


def _unsupported_options(dropout_p, window_size, softcap, alibi_slopes):
    if window_size is not None:
        try:
            pair = tuple(window_size)
        except TypeError:
            raise TypeError(f"window_size: expected a (left, right) pair, got {type(window_size).__name__}") from None
        if len(pair) != 2:
            raise TypeError(f"window_size: expected a (left, right) pair, got {len(pair)} values")
    if dropout_p != 0.0:
        raise NotImplementedError(f"dropout_p: {dropout_p} is not supported (zyfa is an inference kernel: dropout_p "
                                  "must be 0.0)")
    if window_size is not None and tuple(window_size) != (-1, -1):
        raise NotImplementedError(f"window_size: {tuple(window_size)} is not supported (sliding-window attention); "
                                  "only (-1, -1)")
    if softcap != 0.0:
        raise NotImplementedError(f"softcap: {softcap} is not supported; only 0.0")
    if alibi_slopes is not None:
        raise NotImplementedError("alibi_slopes: ALiBi is not supported; only None")


def _real(name, x, what):
    """A real number (not a bool) as a Python float; TypeError / ValueError naming the argument."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name}: expected {what}, got {type(x).__name__}")
    try:
        return float(x)
    except OverflowError:
        raise ValueError(f"{name}: {x} does not fit a float") from None


def _causal(causal):
    """causal as a bool: a bool (Python or NumPy) or the ints 0 and 1; anything else is a TypeError, so that a
    string such as "no" is not silently taken as True."""
    if isinstance(causal, bool) or (type(causal).__module__ == "numpy" and type(causal).__name__ in ("bool", "bool_")):
        return bool(causal)
    if isinstance(causal, numbers.Integral) and int(causal) in (0, 1):
        return bool(causal)
    raise TypeError(f"causal: expected a bool, got {type(causal).__name__} {causal!r}")


def _descale(name, x, device):
    """None, a number or a one-element tensor -> None or a one-element fp32 tensor."""
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        if x.numel() != 1:
            raise NotImplementedError(f"{name}: per-head or per-batch descales (shape {tuple(x.shape)}) are not "
                                      "supported; pass one per-tensor value")
        return x.reshape(1).to(torch.float32)
    return torch.tensor([_real(name, x, "None, a float or a one-element tensor")], dtype=torch.float32)


def _scale(softmax_scale):
    if softmax_scale is None:
        return None
    x = _real("softmax_scale", softmax_scale, "None or a float")
    if not math.isfinite(x) or x <= 0.0:
        raise ValueError(f"zyfa: softmax_scale: must be finite and > 0, got {x}")  # as the C++ validation says it
    return x


# ----------------------------------------------------------------------------------------------------------------
# the custom ops (real implementations run the C library; fake ones give shapes)

def _aligned(t: torch.Tensor) -> torch.Tensor:
    """t itself when zyfa accepts its layout (contiguous last dim, 16-byte aligned data and strides), else a
    contiguous copy in a fresh (aligned) allocation (as FlashAttention makes non-contiguous inputs contiguous)."""
    esize = t.element_size()

    def ok(x):
        return x.stride(-1) == 1 and x.data_ptr() % 16 == 0 and all(
            (x.stride(d) * esize) % 16 == 0 for d in range(x.dim() - 1) if x.shape[d] > 1)
    if ok(t):
        return t
    c = t.contiguous()  # t itself when t is contiguous but misaligned: then a real copy
    return c if ok(c) else t.clone(memory_format=torch.contiguous_format)


def _options(softmax_scale, causal, qd, kd, vd):
    o = _lib.Options()
    o.causal = 1 if causal else 0
    o.has_scale = 0 if softmax_scale is None else 1
    o.softmax_scale = 0.0 if softmax_scale is None else softmax_scale
    o.q_descale = 1.0 if qd is None else float(qd.item())
    o.k_descale = 1.0 if kd is None else float(kd.item())
    o.v_descale = 1.0 if vd is None else float(vd.item())
    return o


class _device_guard:
    def __init__(self, device):
        self.ctx = torch.cuda.device(device) if device.type == "cuda" else None

    def __enter__(self):
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *a):
        if self.ctx is not None:
            self.ctx.__exit__(*a)


@torch.library.custom_op("zyfa::fwd", mutates_args=())
def _fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax_scale: Optional[float], causal: bool,
         q_descale: Optional[torch.Tensor], k_descale: Optional[torch.Tensor],
         v_descale: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    """out [b, seqlen_q, num_heads, head_dim_v] bf16, softmax_lse [b, num_heads, seqlen_q] fp32 (natural log)."""
    _qkv(q, k, v, 4, "[batch, seqlen_q, num_heads, head_dim]", "[batch, seqlen_k, num_heads_k, head_dim]")
    _check_shapes(q, k, v, varlen=False)
    b, sq, h, _ = q.shape
    sk, dv = k.shape[1], v.shape[3]
    out = torch.empty((b, sq, h, dv), dtype=torch.bfloat16, device=q.device)
    lse = torch.empty((b, h, sq), dtype=torch.float32, device=q.device)
    if out.numel() == 0 or lse.numel() == 0:
        return out, lse
    if sk == 0:  # no key at all: every row sees nothing
        return out.zero_(), lse.fill_(_NEG_INF)
    lib = _lib.library_for(q.device)
    q, k, v = _aligned(q), _aligned(k), _aligned(v)
    err = _lib.err_buffer()
    opts = _options(softmax_scale, causal, q_descale, k_descale, v_descale)
    with _device_guard(q.device):
        code = lib.zyfa_fwd(_lib.tensor4(q), _lib.tensor4(k), _lib.tensor4(v), _lib.tensor4(out), lse.data_ptr(),
                            opts, _lib.stream_of(q.device), err, len(err))
    _lib.check(code, err)
    return out, lse


@_fwd.register_fake
def _fwd_fake(q, k, v, softmax_scale, causal, q_descale, k_descale, v_descale):
    _qkv(q, k, v, 4, "[batch, seqlen_q, num_heads, head_dim]", "[batch, seqlen_k, num_heads_k, head_dim]")
    _check_shapes(q, k, v, varlen=False)
    b, sq, h, _ = q.shape
    return (q.new_empty((b, sq, h, v.shape[3]), dtype=torch.bfloat16),
            q.new_empty((b, h, sq), dtype=torch.float32))


@torch.library.custom_op("zyfa::varlen_fwd", mutates_args=())
def _varlen_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens_q: torch.Tensor,
                cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int, softmax_scale: Optional[float],
                causal: bool, q_descale: Optional[torch.Tensor], k_descale: Optional[torch.Tensor],
                v_descale: Optional[torch.Tensor]) -> Tuple[torch.Tensor, torch.Tensor]:
    """out [total_q, num_heads, head_dim_v] bf16, softmax_lse [num_heads, total_q] fp32 (natural log)."""
    _qkv(q, k, v, 3, "[total_q, num_heads, head_dim]", "[total_k, num_heads_k, head_dim]")
    _check_shapes(q, k, v, varlen=True)
    _check_cu_seqlens(q, cu_seqlens_q, cu_seqlens_k)
    tq, h, _ = q.shape
    tk, dv = k.shape[0], v.shape[2]
    out = torch.empty((tq, h, dv), dtype=torch.bfloat16, device=q.device)
    lse = torch.empty((h, tq), dtype=torch.float32, device=q.device)
    batch = cu_seqlens_q.numel() - 1
    if out.numel() == 0 or lse.numel() == 0:  # nothing to compute; the offsets are still checked
        _check_offsets("cu_seqlens_q", "max_seqlen_q", cu_seqlens_q.tolist(), tq, max_seqlen_q)
        _check_offsets("cu_seqlens_k", "max_seqlen_k", cu_seqlens_k.tolist(), tk, max_seqlen_k)
        return out, lse
    if tk == 0 and q.device.type != "cuda":  # no key anywhere (the offsets are still checked below for CUDA)
        cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
        _check_offsets("cu_seqlens_q", "max_seqlen_q", cq, tq, max_seqlen_q)
        _check_offsets("cu_seqlens_k", "max_seqlen_k", ck, tk, max_seqlen_k)
        return out.zero_(), lse.fill_(_NEG_INF)
    if q.device.type == "cuda":
        # The offsets are checked on the host (the GPU kernels skip inconsistent sequences instead of reporting them).
        cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
        _check_offsets("cu_seqlens_q", "max_seqlen_q", cq, tq, max_seqlen_q)
        _check_offsets("cu_seqlens_k", "max_seqlen_k", ck, tk, max_seqlen_k)
        # rows past cu_seqlens_q[-1] are not attention rows (the kernel does not write them): defined, not left
        # uninitialized
        out[cq[-1]:].zero_()
        lse[:, cq[-1]:].fill_(_NEG_INF)
        if cq[-1] == 0:
            return out, lse
        if tk == 0:  # no key anywhere: every row sees nothing
            return out.zero_(), lse.fill_(_NEG_INF)
        # every length is <= the packed length (checked above): the C++ entry takes max_seqlen in [1, total]
        max_seqlen_q, max_seqlen_k = min(max_seqlen_q, tq), min(max_seqlen_k, tk)
        try:
            return _varlen_launch(q, k, v, cu_seqlens_q, cu_seqlens_k, batch, max_seqlen_q, max_seqlen_k, out, lse,
                                  softmax_scale, causal, q_descale, k_descale, v_descale)
        except NotImplementedError:
            if q.dtype != torch.bfloat16:
                raise
        # A BF16 head-dim pair without a varlen launch in this build: one flash_attn_func per sequence (the same
        # results).
        for b in range(batch):
            q0, q1, k0, k1 = cq[b], cq[b + 1], ck[b], ck[b + 1]
            if q1 == q0:
                continue
            if k1 == k0:
                out[q0:q1].zero_()
                lse[:, q0:q1].fill_(_NEG_INF)
                continue
            o_b, l_b = _fwd(q[None, q0:q1], k[None, k0:k1], v[None, k0:k1], softmax_scale, causal, q_descale,
                            k_descale, v_descale)
            out[q0:q1].copy_(o_b[0])
            lse[:, q0:q1].copy_(l_b[0])
        return out, lse
    return _varlen_launch(q, k, v, cu_seqlens_q, cu_seqlens_k, batch, max_seqlen_q, max_seqlen_k, out, lse,
                          softmax_scale, causal, q_descale, k_descale, v_descale)


def _varlen_launch(q, k, v, cu_seqlens_q, cu_seqlens_k, batch, max_seqlen_q, max_seqlen_k, out, lse, softmax_scale,
                   causal, q_descale, k_descale, v_descale):
    """zyfa_varlen_fwd into out [total_q, h, dv] / lse [h, total_q] (the C entry's errors raised as in _lib.check)."""
    lib = _lib.library_for(q.device)
    q, k, v = _aligned(q), _aligned(k), _aligned(v)
    cu_q, cu_k = cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous()
    err = _lib.err_buffer()
    opts = _options(softmax_scale, causal, q_descale, k_descale, v_descale)
    with _device_guard(q.device):
        code = lib.zyfa_varlen_fwd(_lib.tensor4(q.unsqueeze(0)), _lib.tensor4(k.unsqueeze(0)),
                                   _lib.tensor4(v.unsqueeze(0)), _lib.tensor4(out.unsqueeze(0)), lse.data_ptr(),
                                   cu_q.data_ptr(), cu_k.data_ptr(), batch, max_seqlen_q, max_seqlen_k, opts,
                                   _lib.stream_of(q.device), err, len(err))
    _lib.check(code, err)
    return out, lse


@_varlen_fwd.register_fake
def _varlen_fwd_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, softmax_scale, causal,
                     q_descale, k_descale, v_descale):
    tq, h, _ = q.shape
    return (q.new_empty((tq, h, v.shape[2]), dtype=torch.bfloat16),
            q.new_empty((h, tq), dtype=torch.float32))


@torch.library.custom_op("zyfa::merge_attn_states", mutates_args=())
def _merge(out_a: torch.Tensor, lse_a: torch.Tensor, out_b: torch.Tensor,
           lse_b: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """4-D: out [b, s, h, d], lse [b, h, s]; 3-D (varlen): out [t, h, d], lse [h, t]."""
    _check_merge(out_a, lse_a, out_b, lse_b)
    dtype = torch.promote_types(out_a.dtype, out_b.dtype)
    out = torch.empty(out_a.shape, dtype=dtype, device=out_a.device)
    lse = torch.empty(lse_a.shape, dtype=torch.float32, device=out_a.device)
    if out.numel() == 0:
        return out, lse
    lib = _lib.library_for(out_a.device)
    views = [out_a, out_b, out] if out_a.dim() == 4 else [x.unsqueeze(0) for x in (out_a, out_b, out)]
    lviews = [lse_a, lse_b, lse] if lse_a.dim() == 3 else [x.unsqueeze(0) for x in (lse_a, lse_b, lse)]
    err = _lib.err_buffer()
    with _device_guard(out_a.device):
        code = lib.zyfa_merge(_lib.tensor4(views[0]), _lib.lse3(lviews[0]), _lib.tensor4(views[1]),
                              _lib.lse3(lviews[1]), _lib.tensor4(views[2]), _lib.lse3(lviews[2]),
                              _lib.stream_of(out_a.device), err, len(err))
    _lib.check(code, err)
    return out, lse


@_merge.register_fake
def _merge_fake(out_a, lse_a, out_b, lse_b):
    _check_merge(out_a, lse_a, out_b, lse_b)
    return (out_a.new_empty(out_a.shape, dtype=torch.promote_types(out_a.dtype, out_b.dtype)),
            lse_a.new_empty(lse_a.shape, dtype=torch.float32))


def _flash_attn_func_portable(q, k, v, causal=False, softmax_scale=None):
    """Testing aid, not public API: flash_attn_func (bf16, returns (out, softmax_lse)) through the portable BF16
    kernel only (mma.sync on NVIDIA). On an H100/H200 flash_attn_func (and flash_attn_varlen_func) prefers the
    sm_90a warp-specialized wgmma kernel, whose results differ from the portable kernel's by rounding.
    CPU tensors: the host backend, as flash_attn_func. Not a custom op (eager only)."""
    _qkv(q, k, v, 4, "[batch, seqlen_q, num_heads, head_dim]", "[batch, seqlen_k, num_heads_k, head_dim]")
    b, sq, h, _ = q.shape
    out = torch.empty((b, sq, h, v.shape[3]), dtype=torch.bfloat16, device=q.device)
    lse = torch.empty((b, h, sq), dtype=torch.float32, device=q.device)
    lib = _lib.library_for(q.device)
    q, k, v = _aligned(q), _aligned(k), _aligned(v)
    err = _lib.err_buffer()
    opts = _options(_scale(softmax_scale), causal, None, None, None)
    with _device_guard(q.device):
        code = lib.zyfa_fwd_portable(_lib.tensor4(q), _lib.tensor4(k), _lib.tensor4(v), _lib.tensor4(out),
                                     lse.data_ptr(), opts, _lib.stream_of(q.device), err, len(err))
    _lib.check(code, err)
    return out, lse


# ----------------------------------------------------------------------------------------------------------------
# the public functions (FlashAttention's signatures)

def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                    alibi_slopes=None, deterministic=False, return_attn_probs=False, *, q_descale=None,
                    k_descale=None, v_descale=None):
    """Attention forward, FlashAttention's ``flash_attn_func`` (same positional signature; FA3's descales as keywords).

    Arguments:
        q: [batch, seqlen_q, num_heads, head_dim_qk]; k: [batch, seqlen_k, num_heads_k, head_dim_qk];
            v: [batch, seqlen_k, num_heads_k, head_dim_v]. torch.bfloat16, or torch.float8_e4m3fn with descales;
            any strides (a copy is made when the last dim is not contiguous or a stride is not a multiple of 16
            bytes). num_heads % num_heads_k == 0 (GQA/MQA: query head h reads key/value head
            h // (num_heads // num_heads_k)). CPU tensors: host backend; CUDA tensors: GPU kernels.
        dropout_p: must be 0.0 (NotImplementedError otherwise).
        softmax_scale: multiplier of q.k^T; default 1 / sqrt(head_dim_qk).
        causal: bool (or 0/1; anything else is a TypeError): bottom-right aligned causal mask (FlashAttention >= 2.1):
            query i sees key j iff j <= i + seqlen_k - seqlen_q; a row that sees no key gives out 0 and softmax_lse
            -inf.
        window_size, softcap, alibi_slopes: only the defaults (NotImplementedError otherwise).
        deterministic: accepted; zyfa's forward is always deterministic.
        return_attn_probs: also return softmax_lse (FA3's (out, softmax_lse)); the attention matrix itself is never
            materialized.
        q_descale, k_descale, v_descale: FP8 only: per-tensor dequantization factors (float or one-element tensor;
            real value = code * descale); None = 1.

    Returns:
        out [batch, seqlen_q, num_heads, head_dim_v] bf16; with return_attn_probs also
        softmax_lse [batch, num_heads, seqlen_q] fp32, natural log.

    Raises:
        TypeError / ValueError naming the argument (wrong type, dtype, dims, device; what zyfa's C++ validation
        rejects, e.g. "k: shape[3] (head_dim_qk) is 64, expected 128 from q (head_dim_qk)"); NotImplementedError for
        unsupported options and for inputs this build has no kernel for (a head-dim pair that is not built in for
        CUDA: BF16 (64, 64), (128, 128), (256, 256), (192, 128); FP8 (128, 128), (192, 128); FP8 off sm_90a).
    """
    _qkv(q, k, v, 4, "[batch, seqlen_q, num_heads, head_dim]", "[batch, seqlen_k, num_heads_k, head_dim]")
    _check_shapes(q, k, v, varlen=False)
    _unsupported_options(dropout_p, window_size, softcap, alibi_slopes)
    out, lse = torch.ops.zyfa.fwd(q, k, v, _scale(softmax_scale), _causal(causal),
                                  _descale("q_descale", q_descale, q.device), _descale("k_descale", k_descale, q.device),
                                  _descale("v_descale", v_descale, q.device))
    return (out, lse) if return_attn_probs else out


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                           deterministic=False, return_attn_probs=False, block_table=None, *, q_descale=None,
                           k_descale=None, v_descale=None):
    """Variable-length attention forward, FlashAttention's ``flash_attn_varlen_func``.

    Arguments:
        q: [total_q, num_heads, head_dim_qk]; k: [total_k, num_heads_k, head_dim_qk];
            v: [total_k, num_heads_k, head_dim_v] (packed sequences; dtypes as flash_attn_func).
        cu_seqlens_q, cu_seqlens_k: torch.int32 [batch + 1] on q's device, non-decreasing from 0: sequence b is
            rows cu_seqlens_q[b]:cu_seqlens_q[b+1] of q against keys cu_seqlens_k[b]:cu_seqlens_k[b+1] of k/v; empty
            sequences are allowed (no query row: nothing; no key: out 0, lse -inf). The offsets are checked on the
            host (ValueError naming cu_seqlens_q/_k or max_seqlen_q/_k); on CUDA that reads them back (one
            synchronization), then one kernel launch runs every sequence (on an H100/H200 with TMA-addressable
            tensors; elsewhere the portable kernel). CUDA: rows past cu_seqlens_q[-1] are 0 with lse
            -inf; CPU: not written.
        max_seqlen_q, max_seqlen_k: ints, the longest query / key sequence.
        causal: bottom-right aligned per sequence. Other options as flash_attn_func; block_table (paged KV) must be
            None.

    Returns:
        out [total_q, num_heads, head_dim_v] bf16; with return_attn_probs also softmax_lse [num_heads, total_q] fp32
        (natural log). Each sequence equals, bit for bit, flash_attn_func's result on that sequence alone (CPU: the
        host backend; CUDA: the varlen call runs the kernel flash_attn_func picks for the sequence's rows: on an
        H100/H200 the sm_90a wgmma kernel, else the portable one).

    Raises: as flash_attn_func; TypeError if cu_seqlens are not int32 tensors or max_seqlen not ints.
    """
    _qkv(q, k, v, 3, "[total_q, num_heads, head_dim]", "[total_k, num_heads_k, head_dim]")
    _unsupported_options(dropout_p, window_size, softcap, alibi_slopes)
    if block_table is not None:
        raise NotImplementedError("block_table: paged KV is not supported; only None")
    _check_shapes(q, k, v, varlen=True)
    _check_cu_seqlens(q, cu_seqlens_q, cu_seqlens_k)
    for name, m in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if isinstance(m, bool) or not isinstance(m, int):
            raise TypeError(f"{name}: expected an int, got {type(m).__name__}")
        if m < 0:
            raise ValueError(f"{name}: must be >= 0, got {m}")
    out, lse = torch.ops.zyfa.varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                         _scale(softmax_scale), _causal(causal),
                                         _descale("q_descale", q_descale, q.device),
                                         _descale("k_descale", k_descale, q.device),
                                         _descale("v_descale", v_descale, q.device))
    return (out, lse) if return_attn_probs else out


def merge_attn_states(out_a, lse_a, out_b, lse_b):
    """Merges two partial attention results over disjoint key sets of the same query rows by their LSEs
    (split-KV, cascade and context-parallel attention; vLLM's and FlashInfer's merge_attn_states).

    Arguments:
        out_a, out_b: [batch, seqlen, num_heads, head_dim] (flash_attn_func's layout) or [total, num_heads, head_dim]
            (varlen's), torch.bfloat16 or torch.float32, any strides.
        lse_a, lse_b: fp32 natural-log LSEs, [batch, num_heads, seqlen] or [num_heads, total] (the matching
            softmax_lse layout). A row with LSE -inf (it saw no key) takes the other side exactly; both -inf gives 0
            and -inf; NaN or +inf gives a NaN row.

    Returns:
        (out, lse): out in the promoted dtype of out_a and out_b (fp32 if either is fp32), lse fp32, computed in
        fp32: m = max(lse_a, lse_b), out = (e^(lse_a-m) out_a + e^(lse_b-m) out_b) / (e^(lse_a-m) + e^(lse_b-m)),
        lse = m + log(e^(lse_a-m) + e^(lse_b-m)).

    Raises:
        TypeError / ValueError naming the argument (dtype, dims, shapes, devices).
    """
    _check_merge(out_a, lse_a, out_b, lse_b)
    return torch.ops.zyfa.merge_attn_states(out_a, lse_a, out_b, lse_b)
