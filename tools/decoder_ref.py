"""decoder_ref.py - the numpy reference for examples/decoder: the same small
GPT-style decoder (pre-norm layers, rotary positions, causal attention,
GELU MLP, an output projection), computed from scratch over the whole sequence
at every step, without a KV cache, so it checks kiln's cached decode
independently.

    logits = reference_logits(weights, config, tokens)   # [len(tokens), vocab]

The weights come from examples/decoder/decoder.py's make_weights (a fixed
seed); this file only computes."""

from __future__ import annotations

import math

import numpy as np


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def _gelu(x: np.ndarray) -> np.ndarray:
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _rotary(x: np.ndarray, pos: np.ndarray, inv_freq: np.ndarray) -> np.ndarray:
    """x [heads, n, hd]: pairs (i, i + hd/2) rotated by pos * inv_freq[i]."""
    ang = pos[:, None] * inv_freq[None, :]
    c, s = np.cos(ang), np.sin(ang)
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return np.concatenate([x1 * c - x2 * s, x1 * s + x2 * c], axis=-1)


def reference_logits(w: dict, cfg: dict, tokens: np.ndarray) -> np.ndarray:
    """Logits of every position of tokens (float64 throughout)."""
    w = {k: np.asarray(v, np.float64) for k, v in w.items()}
    n, heads, hd = len(tokens), cfg["heads"], cfg["head_dim"]
    pos = np.arange(n, dtype=np.float64)
    inv_freq = w["inv_freq"]
    x = w["embed"][tokens]
    causal = np.tril(np.ones((n, n), bool))
    for li in range(cfg["layers"]):
        p = f"l{li}."
        h = _layer_norm(x, w[p + "ln1.g"], w[p + "ln1.b"], cfg["eps"])
        q = (h @ w[p + "wq"]).reshape(n, heads, hd).transpose(1, 0, 2)
        k = (h @ w[p + "wk"]).reshape(n, heads, hd).transpose(1, 0, 2)
        v = (h @ w[p + "wv"]).reshape(n, heads, hd).transpose(1, 0, 2)
        q, k = _rotary(q, pos, inv_freq), _rotary(k, pos, inv_freq)
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.where(causal, s, -np.inf)
        s = np.exp(s - s.max(-1, keepdims=True))
        a = (s / s.sum(-1, keepdims=True)) @ v
        x = x + a.transpose(1, 0, 2).reshape(n, heads * hd) @ w[p + "wo"]
        h = _layer_norm(x, w[p + "ln2.g"], w[p + "ln2.b"], cfg["eps"])
        x = x + _gelu(h @ w[p + "w1"]) @ w[p + "w2"]
    x = _layer_norm(x, w["lnf.g"], w["lnf.b"], cfg["eps"])
    return x @ w["unembed"]
