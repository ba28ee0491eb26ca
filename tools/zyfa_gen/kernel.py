"""Kernel description: name, kernel arguments (the packed kernarg layout), launch shape and the Program.

The argument list is the single source of three things that must agree: the ``.amdgpu_metadata`` ``.args``
entries, the ``.amdhsa_kernarg_size`` of the kernel descriptor, and the C++ argument struct written into the
generated ``include/zyfa/fp8/gfx950/<kernel>.inc`` (pinned there with ``static_assert(offsetof/sizeof)``).
"""
from __future__ import annotations

import dataclasses

from .ir import Program

__all__ = ["Arg", "KernelSpec"]

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

    def __post_init__(self):
        off = 0
        for a in self.args:
            if a.kind not in _KINDS:
                raise ValueError(f"argument {a.name}: unknown kind {a.kind!r}")
            off = (off + a.size - 1) // a.size * a.size
            a.offset = off
            off += a.size
        self.kernarg_size = (off + 7) // 8 * 8
        if not 1 <= self.workgroup_size <= 1024 or self.workgroup_size % 64:
            raise ValueError(f"{self.name}: workgroup_size {self.workgroup_size} must be a multiple of 64 in [64, 1024]")
        if not 0 <= self.lds_bytes <= 163840:
            raise ValueError(f"{self.name}: lds_bytes {self.lds_bytes} exceeds gfx950's 160 KiB")
