"""The documents state the same facts as the code: the built-in head-dim list (include/zyfa/head_dims.hpp) in
README.md, docs/interface.md and examples/custom_head_dim/README.md."""
import pathlib

from head_dims import builtin_head_dims, builtin_head_dims_text

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_head_dim_list_is_not_empty_and_unique():
    pairs = builtin_head_dims()
    assert len(pairs) == len(set(pairs)) >= 1
    assert all(qk % 8 == 0 and v % 8 == 0 for qk, v in pairs)


def test_docs_list_the_builtin_head_dims():
    text = builtin_head_dims_text()
    for doc in ("README.md", "docs/interface.md", "examples/custom_head_dim/README.md"):
        assert text in (ROOT / doc).read_text(), f"{doc} does not list the built-in head dims as {text}"
