"""Unit tests of the capture's tokenizers (toy vocabularies, against naive re-implementations) and of the Llama
q/k row un-permutation + RoPE convention. No model package needed (numpy + regex)."""
import itertools

import numpy as np
import pytest

from activations.rope import apply_rope, unpermute_llama_qk
from activations.tokenizer import Tokenizer, _bytes_to_unicode, _regex_split, _PRE_REGEXES


# --- SentencePiece BPE (Gemma) ---------------------------------------------------------------------------------
def _naive_spm(text, vocab, scores):
    """Greedy: merge the adjacent pair with the highest score (leftmost on ties) until none is in the vocab."""
    sym = list(text.replace(" ", "\u2581"))
    while True:
        best = None
        for i in range(len(sym) - 1):
            t = sym[i] + sym[i + 1]
            if t in vocab and (best is None or scores[vocab[t]] > scores[vocab[sym[best] + sym[best + 1]]]):
                best = i
        if best is None:
            break
        sym[best:best + 2] = [sym[best] + sym[best + 1]]
    ids = []
    for s in sym:
        ids.extend([vocab[s]] if s in vocab else [vocab[f"<0x{b:02X}>"] for b in s.encode()])
    return ids


def test_spm_matches_naive_greedy_merge_on_random_vocabularies():
    rng = np.random.default_rng(0)
    alphabet = ["a", "b", "c", "\u2581"]
    for trial in range(30):
        tokens = [f"<0x{b:02X}>" for b in range(256)] + ["a", "b", "\u2581"]  # 'c' only via byte fallback
        pieces = {"".join(p) for n in (2, 3, 4) for p in itertools.product(alphabet, repeat=n)}
        tokens += sorted(rng.choice(sorted(pieces), size=25, replace=False))
        scores = list(rng.permutation(len(tokens)).astype(float) - (0 if trial % 2 else len(tokens) // 2))
        if trial % 3 == 0:
            scores = [float(s // 7) for s in scores]  # many ties: leftmost pair must win
        tok = Tokenizer("llama", tokens, scores=scores)
        vocab = {t: i for i, t in enumerate(tokens)}
        for _ in range(20):
            text = "".join(rng.choice(["a", "b", "c", " "], size=int(rng.integers(0, 24))))
            assert tok.encode(text) == _naive_spm(text, vocab, scores), (text, tokens)


def test_spm_user_defined_tokens_are_cut_out_first_and_bos_added():
    tokens = ["<pad>", "<bos>", "\n", "\n\n", "a", "\u2581", "\u2581a", "b"] + [f"<0x{b:02X}>" for b in range(256)]
    scores = [0.0] * len(tokens)
    tok = Tokenizer("llama", tokens, scores=scores, bos_id=1, add_bos=True, user_defined=["\n", "\n\n"])
    assert tok.encode("a\n\n a\nb") == [1, 4, 3, 6, 2, 7]


# --- byte-level BPE (SmolLM2) ----------------------------------------------------------------------------------
def test_smollm_pre_tokenizer_splits_digits_and_gpt2_pieces():
    pieces = _regex_split("It's 2024, he said:  hello\n\nworld", _PRE_REGEXES["smollm"])
    # "\n\nworld": \s+(?!\S) takes only the first "\n"; the second matches nothing and stays a piece of its own
    # (llama.cpp keeps unmatched spans), as in GPT-2.
    assert pieces == ["It", "'s", " ", "2", "0", "2", "4", ",", " he", " said", ":", " ", " hello", "\n", "\n",
                      "world"]
    assert "".join(pieces) == "It's 2024, he said:  hello\n\nworld"


def test_bytes_to_unicode_is_a_bijection_with_gpt2_space():
    m = _bytes_to_unicode()
    assert len(m) == 256 and len(set(m.values())) == 256
    assert m[ord(" ")] == "\u0120" and m[ord("a")] == "a" and m[ord("\n")] == "\u010a"


def test_bpe_applies_merges_by_rank():
    bu = _bytes_to_unicode()
    base = [bu[b] for b in range(256)]
    tokens = base + ["th", "the", "\u0120t", "\u0120the", "he"]
    merges = ["t h", "th e", "\u0120 t", "\u0120t he", "h e"]  # rank 0 first
    tok = Tokenizer("gpt2", tokens, merges=merges, pre="smollm")
    v = {t: i for i, t in enumerate(tokens)}
    # lowest rank first among the pairs present: "t h" (0), then "th e" (1); no rule joins "Ġ" and "the"
    assert tok.encode("the") == [v["the"]]
    assert tok.encode(" the") == [v["\u0120"], v["the"]]
    # with "Ġ t" ranked first, " the" takes the other path: Ġt, h e -> he, Ġt he -> Ġthe
    tok2 = Tokenizer("gpt2", tokens, merges=["\u0120 t", "t h", "th e", "h e", "\u0120t he"], pre="smollm")
    assert tok2.encode(" the") == [v["\u0120the"]] and tok2.encode("the") == [v["the"]]
    assert tok.encode("xe") == [v["x"], v["e"]]
    with pytest.raises(ValueError):
        Tokenizer("gpt2", tokens, merges=merges, pre="unknown-pre")


# --- Llama q/k permutation and RoPE convention -------------------------------------------------------------------
def _gguf_permute(w, heads):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute (Hugging Face order -> GGUF order)."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _rope_interleaved(x, theta):
    """llama.cpp LLAMA_ROPE_TYPE_NORM: rotates pairs (2i, 2i+1) by p * theta^(-2i/d)."""
    s, _, d = x.shape
    ang = np.arange(s)[:, None] * theta ** (-np.arange(0, d, 2) / d)[None, :]
    c, sn = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    y = x.copy()
    y[..., 0::2] = x[..., 0::2] * c - x[..., 1::2] * sn
    y[..., 1::2] = x[..., 1::2] * c + x[..., 0::2] * sn
    return y


def test_unpermute_restores_hf_order_and_rope_conventions_agree():
    rng = np.random.default_rng(5)
    heads, d, hidden, s = 3, 16, 24, 11
    w_hf = rng.standard_normal((heads * d, hidden))
    w_gguf = _gguf_permute(w_hf, heads)
    assert not np.allclose(w_gguf, w_hf)
    assert np.array_equal(unpermute_llama_qk(w_gguf, heads), w_hf)
    x = rng.standard_normal((s, hidden))
    q_hf = apply_rope((x @ w_hf.T).reshape(s, heads, d), 1e4)
    q_gguf = _rope_interleaved((x @ w_gguf.T).reshape(s, heads, d), 1e4)
    # the same rotated vectors, only in a different channel order within each head
    perm = np.arange(d).reshape(2, d // 2).T.ravel()  # GGUF position j holds HF channel perm[j]
    assert np.allclose(q_gguf, q_hf[..., perm], atol=1e-12)
