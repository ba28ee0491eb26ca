"""Top-level splitting of LLVM-syntax gfx950 instruction text (operand lists and modifier words).

"Top level" means outside brackets and parentheses, so ``v[0:3]``, ``abs(v1)``, ``hwreg(HW_REG_MODE, 0, 4)``
and ``offset:[1,2]`` stay one field. Used by :mod:`gfx950emu.asm` and :mod:`gfx950hazard.isa`.
"""
from __future__ import annotations

__all__ = ["split_commas", "split_words"]


def split_commas(s: str) -> list[str]:
    """Splits ``s`` on commas that are not inside brackets or parentheses; each field is stripped.

    Returns ``[]`` for ``""``. Empty fields are kept, including a trailing one (``"a,"`` -> ``["a", ""]``,
    ``" "`` -> ``[""]``); callers that want no empty last field drop it themselves."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if cur or out:
        out.append("".join(cur).strip())
    return out


def split_words(s: str, quotes: bool = False) -> list[str]:
    """Splits ``s`` on whitespace that is not inside brackets or parentheses (and, with ``quotes=True``, not
    inside a double-quoted string, whose brackets then do not count either; the quotes stay in the word).

    Empty words are dropped: returns ``[]`` for blank input."""
    out, depth, cur, q = [], 0, [], False
    for ch in s:
        if quotes and ch == '"':
            q = not q
        if not q:
            if ch in "[(":
                depth += 1
            elif ch in "])":
                depth -= 1
        if ch.isspace() and depth == 0 and not q:
            if cur:
                out.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur))
    return out
