"""Kernel description: name, kernel arguments (the packed kernarg layout), launch shape and the Program.

The argument list is the single source of three things that must agree: the ``.amdgpu_metadata`` ``.args``
entries, the ``.amdhsa_kernarg_size`` of the kernel descriptor, and the C++ argument struct written into the
generated ``include/zyfa/fp8/gfx950/<kernel>.inc`` (pinned there with ``static_assert(offsetof/sizeof)``).
"""
from __future__ import annotations

import dataclasses

from .ir import Program

__all__ = ["Arg", "KernelSpec", "layout_args", "load_kernargs"]

# C++ type, size in bytes, metadata value_kind, metadata value_type (for by_value args)
_KINDS = {
    "ptr": (8, "global_buffer"),
    "u32": (4, "by_value"),
    "i32": (4, "by_value"),
    "f32": (4, "by_value"),
}


@dataclasses.dataclass
class Arg:
    """One kernel argument. kind: "ptr" (64-bit global pointer), "u32", "i32" or "f32".
    ctype: the C++ type of the struct member (e.g. ``const std::uint8_t*``). doc: one line for the struct."""
    name: str
    kind: str
    ctype: str
    doc: str
    const: bool = False  # pointer to read-only data (metadata .is_const / .access read_only)
    offset: int = -1

    @property
    def size(self) -> int:
        return _KINDS[self.kind][0]

    @property
    def value_kind(self) -> str:
        return _KINDS[self.kind][1]


@dataclasses.dataclass
class KernelSpec:
    """A generated kernel. `args` get packed offsets (natural alignment) in __post_init__; the kernarg
    segment is rounded up to 8 bytes (its alignment) and the C++ struct gets explicit padding to match."""
    name: str
    doc: str
    args: list
    program: Program
    workgroup_size: int = 64
    lds_bytes: int = 0
    kernarg_size: int = 0
    #: workgroup ids the dispatcher writes after the kernarg pointer: 1 = x (s2), 3 = x, y, z (s2, s3, s4)
    workgroup_ids: int = 1

    def __post_init__(self):
        self.kernarg_size = layout_args(self.args)
        if not 1 <= self.workgroup_size <= 1024 or self.workgroup_size % 64:
            raise ValueError(f"{self.name}: workgroup_size {self.workgroup_size} must be a multiple of 64 in [64, 1024]")
        if self.workgroup_ids not in (1, 3):
            raise ValueError(f"{self.name}: workgroup_ids must be 1 (x) or 3 (x, y, z)")
        if not 0 <= self.lds_bytes <= 163840:
            raise ValueError(f"{self.name}: lds_bytes {self.lds_bytes} exceeds gfx950's 160 KiB")


def layout_args(args: list) -> int:
    """Assigns each Arg its offset (natural alignment) and returns the kernarg segment size (rounded to 8).
    The one layout used by the kernel code (:func:`load_kernargs`), the metadata and the C++ struct."""
    off = 0
    for a in args:
        if a.kind not in _KINDS:
            raise ValueError(f"argument {a.name}: unknown kind {a.kind!r}")
        off = (off + a.size - 1) // a.size * a.size
        a.offset = off
        off += a.size
    return (off + 7) // 8 * 8


def load_kernargs(p: Program, args: list, kernarg_ptr, prefix: str = "arg") -> dict:
    """Emits the scalar loads of the whole kernarg segment of `args` from `kernarg_ptr` (s[0:1]) and returns
    {argument name: SGPR slice} (a pointer is 2 SGPRs, a 32-bit value 1). Offsets come from
    :func:`layout_args`, the same layout the metadata and the C++ struct use, so they are never written twice.
    The segment is loaded in naturally aligned pieces of 8/4/2/1 dwords (``s_load_dwordx8`` ... ``s_load_dword``)
    into one virtual SGPR range per piece; the waitcnt pass waits for them where they are first read."""
    size = layout_args(args)
    dwords = size // 4
    pieces = []
    at = 0
    while at < dwords:
        for w in (8, 4, 2, 1):
            if at % w == 0 and at + w <= dwords:
                break
        pieces.append((at, w))
        at += w
    regs = []
    for at, w in pieces:
        r = p.sreg(f"{prefix}{at}_{at + w - 1}", w)
        mnem = "s_load_dword" if w == 1 else f"s_load_dwordx{w}"
        names = [a.name for a in args if at * 4 <= a.offset < (at + w) * 4]
        getattr(p, mnem)(r, kernarg_ptr, hex(4 * at), comment=", ".join(names) or "padding")
        regs.append((at, w, r))
    out = {}
    for a in args:
        d = a.offset // 4
        for at, w, r in regs:
            if at <= d < at + w:
                out[a.name] = r[d - at:d - at + a.size // 4]
    return out
