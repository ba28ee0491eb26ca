"""The built-in (head_dim_qk, head_dim_v) pairs, read from THE list in include/zyfa/head_dims.hpp
(ZYFA_BUILTIN_HEAD_DIMS), so Python tests never spell it again."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]


def builtin_head_dims():
    """[(qk, v), ...] in the header's order."""
    text = (ROOT / "include" / "zyfa" / "head_dims.hpp").read_text()
    m = re.search(r"#define ZYFA_BUILTIN_HEAD_DIMS\(X\)\s*(.*)", text)
    assert m, "ZYFA_BUILTIN_HEAD_DIMS not found in include/zyfa/head_dims.hpp"
    pairs = [(int(a), int(b)) for a, b in re.findall(r"X\((\d+),\s*(\d+)\)", m.group(1))]
    assert pairs, "ZYFA_BUILTIN_HEAD_DIMS is empty"
    return pairs


def builtin_head_dims_text():
    """'(64, 64), (128, 128), ...' exactly as zyfa::builtin_head_dims_text() prints it."""
    return ", ".join(f"({a}, {b})" for a, b in builtin_head_dims())
