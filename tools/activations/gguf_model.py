"""GGUF weights -> float32 numpy forward pass of two decoder-only architectures, with attention capture.

Supported ``general.architecture`` values and the formulas used (each matches the Hugging Face ``transformers``
implementation of the upstream model; GGUF-specific conventions are from llama.cpp's ``convert_hf_to_gguf.py`` and
``src/models/*.cpp``):

- ``llama`` (SmolLM2): x = E[tok]; per layer: h = RMSNorm(x) (eps from GGUF); q, k, v = h Wqᵀ, h Wkᵀ, h Wvᵀ;
  RoPE on q, k (rotate-half / NeoX pairing (i, i + d/2), theta = ``llama.rope.freq_base``, positions 0..S-1);
  a = softmax(q kᵀ / sqrt(d) + causal) v (GQA: query head h uses kv head h // (H / H_kv)); x += a Woᵀ;
  x += W_down(SiLU(W_gate h) * W_up h) with h = RMSNorm(x); logits = RMSNorm(x) Eᵀ (tied) or W_outᵀ.
  llama.cpp's converter permutes the rows of Wq and Wk within each head so that GGUF files use the interleaved
  RoPE pairing (2i, 2i+1); this module undoes that permutation on load, so q and k come out in the upstream
  (Hugging Face) channel order with rotate-half RoPE. q·k is the same either way.
- ``gemma3`` (Gemma 3): x = E[tok] * sqrt(hidden); per layer: h = RMSNorm(x) w (GGUF norm weights already include
  Gemma's +1); q, k, v projections; per-head RMSNorm of q and k (``attn_q_norm``/``attn_k_norm``, eps 1e-6);
  NeoX RoPE with theta = ``gemma3.rope.freq_base`` (1e6) on global layers and 1e4 on sliding-window layers;
  softmax_scale = 1/sqrt(key_length) (= query_pre_attn_scalar**-0.5 for this model); every 6th layer (index % 6 == 5)
  is global causal, the others use a causal sliding window of ``gemma3.attention.sliding_window`` keys
  (query i sees keys j with i - j < window); x += RMSNorm(a Woᵀ) w_post_attn;
  x += RMSNorm(W_down(GELU_tanh(W_gate h) * W_up h)) w_post_ffw with h = RMSNorm(x) w_ffn; logits = RMSNorm(x) Eᵀ.

All arithmetic is float32 except RoPE angles (float64, then cast) and the log-softmax of the loss (float64).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

from .rope import apply_rope, unpermute_llama_qk
from .tokenizer import Tokenizer


@dataclasses.dataclass
class Config:
    """Model hyper-parameters read from GGUF metadata."""

    arch: str
    n_layers: int
    hidden: int
    n_heads: int
    n_heads_kv: int
    head_dim: int
    head_dim_v: int
    ffn: int
    eps: float
    rope_theta: float
    rope_theta_local: float | None
    sliding_window: int | None
    swa_period: int | None
    context_length: int
    softmax_scale: float

    def is_global(self, layer: int) -> bool:
        """True when ``layer`` uses full causal attention (False: sliding window)."""
        return self.sliding_window is None or (layer % self.swa_period) == self.swa_period - 1

    def rope_theta_of(self, layer: int) -> float:
        """RoPE base frequency used by ``layer``."""
        return self.rope_theta if self.is_global(layer) else self.rope_theta_local


def _field(reader: GGUFReader, key: str, default=None):
    f = reader.fields.get(key)
    return default if f is None else f.contents()


class GGUFModel:
    """A GGUF model fully dequantized to float32 in memory.

    Args:
        path: GGUF file (``llama`` or ``gemma3`` architecture).
    Raises:
        ValueError: unsupported architecture.
    """

    def __init__(self, path: str):
        r = GGUFReader(path)
        arch = _field(r, "general.architecture")
        if arch not in ("llama", "gemma3"):
            raise ValueError(f"general.architecture: {arch!r} not supported (llama, gemma3)")
        a = arch
        hidden = int(_field(r, f"{a}.embedding_length"))
        nh = int(_field(r, f"{a}.attention.head_count"))
        nkv = int(_field(r, f"{a}.attention.head_count_kv", nh))
        hd = int(_field(r, f"{a}.attention.key_length", hidden // nh))
        hdv = int(_field(r, f"{a}.attention.value_length", hd))
        if arch == "gemma3":
            sw = int(_field(r, f"{a}.attention.sliding_window"))
            # llama.cpp src/llama-model.cpp (LLM_ARCH_GEMMA3): swa pattern 6, local rope base 10000.
            cfg_local, period = 10000.0, 6
        else:
            sw, cfg_local, period = None, None, None
        self.config = Config(
            arch=arch, n_layers=int(_field(r, f"{a}.block_count")), hidden=hidden, n_heads=nh, n_heads_kv=nkv,
            head_dim=hd, head_dim_v=hdv, ffn=int(_field(r, f"{a}.feed_forward_length")),
            eps=float(_field(r, f"{a}.attention.layer_norm_rms_epsilon")),
            rope_theta=float(_field(r, f"{a}.rope.freq_base", 10000.0)), rope_theta_local=cfg_local,
            sliding_window=sw, swa_period=period, context_length=int(_field(r, f"{a}.context_length")),
            softmax_scale=1.0 / math.sqrt(hd))
        self.metadata = {k: _field(r, k) for k in r.fields if not k.startswith("tokenizer.ggml.")
                         and k != "tokenizer.chat_template"}
        self.quant_types = sorted({t.tensor_type.name for t in r.tensors})
        self.w: dict[str, np.ndarray] = {}
        for t in r.tensors:
            arr = dequantize(t.data, t.tensor_type).astype(np.float32, copy=False)
            # GGUF shape is [ne0 (inner), ne1, ...]; numpy arrays come out [ne1, ne0] = [out, in].
            self.w[t.name] = arr.reshape([int(x) for x in reversed(t.shape.tolist())])
        if arch == "llama":
            for i in range(self.config.n_layers):
                for name, heads in (("attn_q", nh), ("attn_k", nkv)):
                    key = f"blk.{i}.{name}.weight"
                    self.w[key] = unpermute_llama_qk(self.w[key], heads)
        tokens = _field(r, "tokenizer.ggml.tokens")
        ttype = _field(r, "tokenizer.ggml.token_type")
        self.tokenizer = Tokenizer(
            model=_field(r, "tokenizer.ggml.model"), tokens=tokens,
            merges=_field(r, "tokenizer.ggml.merges"), scores=_field(r, "tokenizer.ggml.scores"),
            pre=_field(r, "tokenizer.ggml.pre"), bos_id=_field(r, "tokenizer.ggml.bos_token_id"),
            add_bos=bool(_field(r, "tokenizer.ggml.add_bos_token", False)),
            user_defined=[t for t, ty in zip(tokens, ttype) if ty == 4])

    # ------------------------------------------------------------------------------------------------------
    def _rms(self, x: np.ndarray, w: np.ndarray | None, eps: float) -> np.ndarray:
        y = x * (1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)).astype(np.float32)
        return y * w if w is not None else y

    def _attention(self, q, k, v, window: int | None, block: int = 512) -> np.ndarray:
        """float32 causal (optionally sliding-window) GQA attention; q [S,H,d], k/v [S,Hkv,d]; returns [S,H,dv]."""
        c = self.config
        s = q.shape[0]
        g = c.n_heads // c.n_heads_kv
        out = np.empty((s, c.n_heads, v.shape[2]), dtype=np.float32)
        scale = np.float32(c.softmax_scale)
        for r0 in range(0, s, block):
            r1 = min(s, r0 + block)
            k0 = 0 if window is None else max(0, r0 - window + 1)
            qi = np.arange(r0, r1)[:, None]
            kj = np.arange(k0, r1)[None, :]
            mask = kj <= qi
            if window is not None:
                mask &= (qi - kj) < window
            for h in range(c.n_heads):
                sc = (q[r0:r1, h, :] @ k[k0:r1, h // g, :].T) * scale
                sc = np.where(mask, sc, np.float32(-np.inf))
                sc = np.exp(sc - sc.max(axis=1, keepdims=True))
                out[r0:r1, h, :] = (sc @ v[k0:r1, h // g, :]) / sc.sum(axis=1, keepdims=True)
        return out

    def forward(self, tokens: list[int], capture: set[int], logits_chunk: int = 256):
        """Run the model on ``tokens`` (one sequence).

        Returns:
            (captured, nll): captured[layer] = dict(q=[S,H,d], k=[S,Hkv,d], v=[S,Hkv,dv], out=[S,H,dv]) float32,
            post-RoPE q/k and the attention output before o_proj; nll [S-1] float64 = -log p(token[t+1] | ≤ t)
            in nats.
        """
        c, w = self.config, self.w
        s = len(tokens)
        ids = np.asarray(tokens)
        x = w["token_embd.weight"][ids].astype(np.float32)
        if c.arch == "gemma3":
            x = x * np.float32(math.sqrt(c.hidden))
        captured = {}
        for i in range(c.n_layers):
            p = f"blk.{i}."
            h = self._rms(x, w[p + "attn_norm.weight"], c.eps)
            q = (h @ w[p + "attn_q.weight"].T).reshape(s, c.n_heads, c.head_dim)
            k = (h @ w[p + "attn_k.weight"].T).reshape(s, c.n_heads_kv, c.head_dim)
            v = (h @ w[p + "attn_v.weight"].T).reshape(s, c.n_heads_kv, c.head_dim_v)
            if c.arch == "gemma3":
                q = self._rms(q, w[p + "attn_q_norm.weight"], c.eps)
                k = self._rms(k, w[p + "attn_k_norm.weight"], c.eps)
            theta = c.rope_theta_of(i)
            q = apply_rope(q, theta)
            k = apply_rope(k, theta)
            window = None if c.is_global(i) else c.sliding_window
            a = self._attention(q, k, v, window)
            if i in capture:
                captured[i] = dict(q=q, k=k, v=v, out=a)
            o = a.reshape(s, -1) @ w[p + "attn_output.weight"].T
            if c.arch == "gemma3":
                x = x + self._rms(o, w[p + "post_attention_norm.weight"], c.eps)
                h = self._rms(x, w[p + "ffn_norm.weight"], c.eps)
                gate = h @ w[p + "ffn_gate.weight"].T
                gate = 0.5 * gate * (1.0 + np.tanh(np.float32(math.sqrt(2.0 / math.pi))
                                                   * (gate + np.float32(0.044715) * gate ** 3)))
                f = (gate * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
                x = x + self._rms(f, w[p + "post_ffw_norm.weight"], c.eps)
            else:
                x = x + o
                h = self._rms(x, w[p + "ffn_norm.weight"], c.eps)
                gate = h @ w[p + "ffn_gate.weight"].T
                gate = gate / (1.0 + np.exp(-gate))
                x = x + (gate * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        x = self._rms(x, w["output_norm.weight"], c.eps)
        wout = w.get("output.weight", w["token_embd.weight"])
        nll = np.empty(s - 1, dtype=np.float64)
        for r0 in range(0, s - 1, logits_chunk):
            r1 = min(s - 1, r0 + logits_chunk)
            lg = (x[r0:r1] @ wout.T).astype(np.float64)
            m = lg.max(axis=1, keepdims=True)
            lse = m[:, 0] + np.log(np.exp(lg - m).sum(axis=1))
            nll[r0:r1] = lse - lg[np.arange(r1 - r0), ids[r0 + 1:r1 + 1]]
        return captured, nll
