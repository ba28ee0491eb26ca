"""ctypes bindings of zyfa's C ABI (python/zyfa/csrc/capi.cpp): _zyfa_host.so (host backend) and, when built,
_zyfa_cuda.so (GPU kernels). Internal: the public functions are in zyfa/__init__.py."""
from __future__ import annotations

import ctypes
import os

import torch

_HERE = os.path.dirname(os.path.abspath(__file__))

# zyfa::DType codes (include/zyfa/dtype.hpp)
DTYPE_CODE = {torch.bfloat16: 0, torch.float32: 1}
if hasattr(torch, "float8_e4m3fn"):
    DTYPE_CODE[torch.float8_e4m3fn] = 2
if hasattr(torch, "float8_e4m3fnuz"):
    DTYPE_CODE[torch.float8_e4m3fnuz] = 3

# zyfa::StatusCode
OK, INVALID_ARGUMENT, UNSUPPORTED, RUNTIME_ERROR = 0, 1, 2, 3


class Tensor(ctypes.Structure):
    """zyfa_tensor: data, dtype code, BSHD shape and element strides."""

    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("reserved", ctypes.c_int32),
                ("shape", ctypes.c_int64 * 4), ("stride", ctypes.c_int64 * 4)]


class Lse(ctypes.Structure):
    """zyfa_lse: fp32 [batch, num_heads, seqlen] with element strides; data None: not written."""

    _fields_ = [("data", ctypes.c_void_p), ("stride", ctypes.c_int64 * 3)]


class Options(ctypes.Structure):
    """zyfa_options."""

    _fields_ = [("causal", ctypes.c_int32), ("has_scale", ctypes.c_int32), ("softmax_scale", ctypes.c_float),
                ("q_descale", ctypes.c_float), ("k_descale", ctypes.c_float), ("v_descale", ctypes.c_float)]


def tensor4(t: torch.Tensor) -> Tensor:
    """A zyfa_tensor of a 4-D torch tensor (its own shape and strides, in elements)."""
    assert t.dim() == 4
    r = Tensor()
    r.data = t.data_ptr()
    r.dtype = DTYPE_CODE[t.dtype]
    for d in range(4):
        r.shape[d] = t.shape[d]
        r.stride[d] = t.stride(d)
    return r


def lse3(t: torch.Tensor | None) -> Lse:
    """A zyfa_lse of a 3-D fp32 tensor [batch, num_heads, seqlen] (None: not written)."""
    r = Lse()
    if t is None:
        r.data = None
        return r
    assert t.dim() == 3 and t.dtype == torch.float32
    r.data = t.data_ptr()
    for d in range(3):
        r.stride[d] = t.stride(d)
    return r


_P = ctypes.POINTER
_SIGS = {
    "zyfa_backend": ([], ctypes.c_int),
    "zyfa_set_device": ([ctypes.c_int, ctypes.c_char_p, ctypes.c_int], ctypes.c_int),
    "zyfa_fwd": ([_P(Tensor), _P(Tensor), _P(Tensor), _P(Tensor), ctypes.c_void_p, _P(Options), ctypes.c_void_p,
                  ctypes.c_char_p, ctypes.c_int], ctypes.c_int),
    "zyfa_fwd_portable": ([_P(Tensor), _P(Tensor), _P(Tensor), _P(Tensor), ctypes.c_void_p, _P(Options),
                           ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int], ctypes.c_int),
    "zyfa_varlen_fwd": ([_P(Tensor), _P(Tensor), _P(Tensor), _P(Tensor), ctypes.c_void_p, ctypes.c_void_p,
                         ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, _P(Options),
                         ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int], ctypes.c_int),
    "zyfa_merge": ([_P(Tensor), _P(Lse), _P(Tensor), _P(Lse), _P(Tensor), _P(Lse), ctypes.c_void_p, ctypes.c_char_p,
                    ctypes.c_int], ctypes.c_int),
}


def _load(name: str):
    path = os.path.join(_HERE, name)
    if not os.path.exists(path):
        return None
    lib = ctypes.CDLL(path)
    for fn, (args, res) in _SIGS.items():
        f = getattr(lib, fn)
        f.argtypes, f.restype = args, res
    return lib


HOST = _load("_zyfa_host.so")
CUDA = _load("_zyfa_cuda.so")
if HOST is None:
    raise ImportError(f"zyfa: {os.path.join(_HERE, '_zyfa_host.so')} is missing; install the package with "
                      "`pip install .` from the zyfa repository (README, Python)")


def library_for(device: torch.device):
    """The C library that runs tensors on `device`: the host backend for CPU, the GPU kernels for CUDA."""
    if device.type == "cpu":
        return HOST
    if device.type == "cuda":
        if getattr(torch.version, "hip", None):
            raise NotImplementedError("zyfa: the Python package has no HIP (AMD) build yet; the C++ library does "
                                      "(include/zyfa/flash_attn.hpp)")
        if CUDA is None:
            raise NotImplementedError("zyfa: this build has no CUDA kernels (_zyfa_cuda.so: nvcc was not found "
                                      "when the package was built; rebuild with nvcc on PATH or ZYFA_NVCC set)")
        return CUDA
    raise NotImplementedError(f"zyfa: device type {device.type!r} is not supported (cpu or cuda)")


def stream_of(device: torch.device):
    """Makes `device` current in the library's own CUDA runtime (zyfa_set_device) and returns torch's current CUDA
    stream handle of `device` (None for CPU)."""
    if device.type != "cuda":
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    err = err_buffer()
    check(CUDA.zyfa_set_device(index, err, len(err)), err)
    return torch.cuda.current_stream(index).cuda_stream


def check(code: int, err: ctypes.Array) -> None:
    """Raises the Python exception of a zyfa status: ValueError (invalid_argument; the message names the
    argument), NotImplementedError (unsupported), RuntimeError (runtime_error)."""
    if code == OK:
        return
    msg = "zyfa: " + err.value.decode(errors="replace")
    if code == INVALID_ARGUMENT:
        raise ValueError(msg)
    if code == UNSUPPORTED:
        raise NotImplementedError(msg)
    raise RuntimeError(msg)


def err_buffer():
    return ctypes.create_string_buffer(1024)
