"""The documents state the same facts as the code: the built-in head-dim list (include/zyfa/head_dims.hpp) in
README.md, docs/interface.md and examples/custom_head_dim/README.md; and every project file speaks of the project
alone."""
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


# Words and paths that do not describe zyfa itself (paths outside the repository included).
_FOREIGN = re.compile(r"\bissue \d+|\.\./shared/|\b(?:KINDS|HOPPER|H200)\.md\b|\blent\b|\bdevice machine\b|\bborrowed\b",
                      re.IGNORECASE)
# Files not yet cleaned, each with the one hit it may still have.
_PENDING: dict = {}


def _project_files():
    try:
        out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        return sorted({p for p in out.splitlines() if (ROOT / p).is_file()})
    except (OSError, subprocess.CalledProcessError):  # not a git checkout
        skip = {".git", ".venv", "build", "out", "__pycache__"}
        return sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                      if p.is_file() and not skip & set(p.relative_to(ROOT).parts))


def test_project_files_speak_of_the_project_alone():
    """No project file uses a word or path of the _FOREIGN pattern (this file, which defines it, excepted)."""
    me = pathlib.Path(__file__).resolve().relative_to(ROOT).as_posix()
    files = _project_files()
    assert "README.md" in files and len(files) > 100
    hits = []
    for rel in files:
        if rel == me:
            continue
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary (.png, .npy.gz)
        for n, line in enumerate(text.splitlines(), 1):
            for m in _FOREIGN.finditer(line):
                if _PENDING.get(rel) != m.group(0).lower():
                    hits.append(f"{rel}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)
