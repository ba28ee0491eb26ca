"""The models' own tokenizers, rebuilt from the GGUF metadata (``tokenizer.ggml.*``), in pure Python.

Two algorithms, following llama.cpp's ``llama-vocab.cpp`` (the reference implementation for GGUF vocabularies):

- ``gpt2`` (byte-level BPE, SmolLM2): bytes are mapped to printable characters by GPT-2's ``bytes_to_unicode``; the
  text is pre-split by the regexes of the GGUF ``tokenizer.ggml.pre`` type (``smollm``: each digit alone, then GPT-2's
  pattern); each piece is merged by ``tokenizer.ggml.merges`` rank (lowest rank first).
- ``llama`` (SentencePiece BPE, Gemma 3): spaces become U+2581; starting from UTF-8 characters, the adjacent pair whose
  concatenation is a vocabulary token with the highest ``tokenizer.ggml.scores`` is merged (ties: leftmost) until
  no pair merges; symbols not in the vocabulary fall back to ``<0xXX>`` byte tokens.

Checked against llama.cpp (llama-cpp-python 0.3.36) on the capture text: see docs/activations.md.
"""
from __future__ import annotations

import heapq

import regex

# llama.cpp llama-vocab.cpp, LLAMA_VOCAB_PRE_TYPE_SMOLLM (same regexes as STARCODER/REFACT/...).
_PRE_REGEXES = {
    "smollm": [r"\p{N}", r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"],
}


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable-character table (openai/gpt-2, encoder.py)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _regex_split(text: str, patterns: list[str]) -> list[str]:
    """Apply llama.cpp's unicode_regex_split: each regex splits every current piece into matches and the
    unmatched spans between them (both kept, in order)."""
    pieces = [text]
    for pat in patterns:
        rx = regex.compile(pat)
        out = []
        for piece in pieces:
            pos = 0
            for m in rx.finditer(piece):
                if m.start() > pos:
                    out.append(piece[pos:m.start()])
                if m.end() > m.start():
                    out.append(m.group(0))
                pos = m.end()
            if pos < len(piece):
                out.append(piece[pos:])
        pieces = out
    return pieces


class Tokenizer:
    """Tokenizer built from GGUF metadata.

    Args:
        model: ``tokenizer.ggml.model`` ("gpt2" or "llama").
        tokens: ``tokenizer.ggml.tokens`` (list of str, index = token id).
        merges: ``tokenizer.ggml.merges`` (gpt2 only; "a b" strings in rank order).
        scores: ``tokenizer.ggml.scores`` (llama only).
        pre: ``tokenizer.ggml.pre`` (gpt2 only; "smollm" supported).
        bos_id: id of the BOS token, or None; ``add_bos``: prepend it in :meth:`encode`.
    Raises:
        ValueError: unsupported tokenizer model or pre-tokenizer.
    """

    def __init__(self, model: str, tokens: list[str], merges: list[str] | None = None,
                 scores: list[float] | None = None, pre: str | None = None,
                 bos_id: int | None = None, add_bos: bool = False, user_defined: list[str] | None = None):
        self.model = model
        # llama.cpp (tokenizer_st_partition) cuts user-defined tokens (token_type 4, e.g. Gemma's "\n\n" and space
        # runs) out of the text before running the BPE/SPM algorithm, longest first.
        ud = sorted(set(user_defined or []), key=len, reverse=True)
        self.user_defined_rx = regex.compile("|".join(regex.escape(t) for t in ud)) if ud else None
        self.tokens = tokens
        self.vocab = {t: i for i, t in enumerate(tokens)}
        self.bos_id = bos_id
        self.add_bos = add_bos
        if model == "gpt2":
            if pre not in _PRE_REGEXES:
                raise ValueError(f"tokenizer.ggml.pre: {pre!r} not supported (have {sorted(_PRE_REGEXES)})")
            self.patterns = _PRE_REGEXES[pre]
            self.ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(merges)}
            self.byte_enc = _bytes_to_unicode()
            self.cache: dict[str, list[int]] = {}
        elif model == "llama":
            if scores is None:
                raise ValueError("scores: required for the llama (SentencePiece) tokenizer")
            self.scores = scores
        else:
            raise ValueError(f"tokenizer.ggml.model: {model!r} not supported (gpt2, llama)")

    # --- byte-level BPE -------------------------------------------------------------------------------------
    def _bpe(self, word: str) -> list[int]:
        if word in self.cache:
            return self.cache[word]
        parts = list(word)
        while len(parts) > 1:
            best, best_rank = -1, None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best < 0:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        ids = [self.vocab[p] for p in parts]  # every byte character is a token in byte-level BPE vocabularies
        self.cache[word] = ids
        return ids

    def _encode_gpt2(self, text: str) -> list[int]:
        ids: list[int] = []
        for piece in _regex_split(text, self.patterns):
            word = "".join(self.byte_enc[b] for b in piece.encode("utf-8"))
            ids.extend(self._bpe(word))
        return ids

    # --- SentencePiece BPE ----------------------------------------------------------------------------------
    def _encode_spm(self, text: str) -> list[int]:
        text = text.replace(" ", "\u2581")
        sym = list(text)  # UTF-8 characters
        n = len(sym)
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n + 1))
        nxt[-1] = -1 if n else -1
        alive = [True] * n
        heap: list[tuple[float, int, int, str]] = []

        def push(left: int) -> None:
            right = nxt[left]
            if left < 0 or right < 0:
                return
            merged = sym[left] + sym[right]
            tid = self.vocab.get(merged)
            if tid is not None:
                heapq.heappush(heap, (-self.scores[tid], left, right, merged))

        for i in range(n - 1):
            push(i)
        while heap:
            _, left, right, merged = heapq.heappop(heap)
            if not alive[left] or not alive[right] or nxt[left] != right or sym[left] + sym[right] != merged:
                continue
            sym[left] = merged
            alive[right] = False
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            if prev[left] >= 0:
                push(prev[left])
            push(left)
        ids: list[int] = []
        i = 0 if n else -1
        while i >= 0:
            s = sym[i]
            tid = self.vocab.get(s)
            if tid is not None:
                ids.append(tid)
            else:
                ids.extend(self.vocab[f"<0x{b:02X}>"] for b in s.encode("utf-8"))
            i = nxt[i]
        return ids

    def _encode_raw(self, text: str) -> list[int]:
        return self._encode_gpt2(text) if self.model == "gpt2" else self._encode_spm(text)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (with the BOS id first when the GGUF says add_bos_token)."""
        ids: list[int] = []
        pos = 0
        if self.user_defined_rx is not None:
            for m in self.user_defined_rx.finditer(text):
                if m.start() > pos:
                    ids.extend(self._encode_raw(text[pos:m.start()]))
                ids.append(self.vocab[m.group(0)])
                pos = m.end()
        if pos < len(text):
            ids.extend(self._encode_raw(text[pos:]))
        if self.add_bos and self.bos_id is not None:
            ids = [self.bos_id] + ids
        return ids
