"""The documents state the same facts as the code: the built-in head-dim list (include/zyfa/head_dims.hpp) in
README.md, docs/interface.md and examples/custom_head_dim/README.md; and their links stay inside the repository."""
import pathlib
import re
import subprocess

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


# A relative Markdown link target: ](path) or ](path#anchor); URLs (scheme:) are left alone.
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _project_files():
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        return sorted({p for p in out.splitlines() if (ROOT / p).is_file()})
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        skip = {".git", ".venv", "build", "out", "__pycache__"}
        return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                      if p.is_file() and not skip & set(p.relative_to(ROOT).parts))


def test_markdown_links_stay_inside_the_repository():
    """Every relative link of every Markdown file names a file or folder of this repository."""
    docs = [rel for rel in _project_files() if rel.endswith(".md")]
    assert "README.md" in docs and len(docs) > 10
    bad = []
    for rel in docs:
        for n, line in enumerate((ROOT / rel).read_text(encoding="utf-8").splitlines(), 1):
            for m in _LINK.finditer(line):
                target = m.group(1)
                if re.match(r"[a-zA-Z][a-zA-Z+.-]*:", target):
                    continue
                path = ((ROOT / rel).parent / target).resolve()
                if not (path.is_relative_to(ROOT) and path.exists()):
                    bad.append(f"{rel}:{n}: {target}")
    assert not bad, "\n".join(bad)
