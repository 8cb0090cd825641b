"""decoder.py - a small GPT-style decoder that generates with kiln: pre-norm
layers with rotary positions, a causal mask (key index <= position), a GELU MLP and
an output projection; random weights from a fixed seed. The K and V caches are
buffers the caller owns (BufferType inputs, one numpy array per layer and
kind): each execute appends its tokens' keys and values at their positions
(buffer_store_slice) and attends over the written part of the caches only,
cache[:, :total] with total = the tokens cached after the call, a slice whose
bound is a graph input (MAX's ``(slice(None, total), "total")``): kiln reads
it before the graph runs and binds the symbolic dim total, so the attention's
shapes grow by one every step and variants specialize on them. One graph
serves the prompt (n tokens) and every decode step (n = 1): the host drives
the loop, one execute per step.

    python3 examples/decoder/decoder.py [--steps 64] [--prompt 1,7,3] [--check]
    python3 examples/decoder/decoder.py --emit-mlir dec.mlir --weights-out dec.safetensors
    kiln run dec.mlir --weights dec.safetensors --generate 64 --prompt 1,7,3

--check compares the logits of every step with tools/decoder_ref.py (numpy,
recomputed from scratch without a cache) and stops at the first mismatch.
--emit-mlir writes the graph as MO text, its weights as named Weights, and
--weights-out those weights (.safetensors): kiln run --generate drives that
graph by its input convention (kiln run --help)."""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np

from kiln.driver import CPU
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import BufferType, Graph, TensorType, Weight, ops

CONFIG = {"vocab": 64, "dim": 32, "heads": 2, "head_dim": 16, "ffn": 64, "layers": 2,
          "max_len": 640, "eps": 1e-5, "seed": 2024}


def make_weights(cfg: dict) -> dict:
    """Seeded random f32 weights (scaled so activations stay O(1))."""
    rng = np.random.default_rng(cfg["seed"])
    d, f, hd = cfg["dim"], cfg["ffn"], cfg["head_dim"]
    hh = cfg["heads"] * hd

    def mat(r: int, c: int) -> np.ndarray:
        return (rng.standard_normal((r, c)) / math.sqrt(r)).astype(np.float32)

    w = {"embed": rng.standard_normal((cfg["vocab"], d)).astype(np.float32),
         "inv_freq": (1.0 / 10000 ** (np.arange(0, hd, 2) / hd)).astype(np.float32),
         "lnf.g": np.ones(d, np.float32), "lnf.b": np.zeros(d, np.float32),
         "unembed": (3 * mat(d, cfg["vocab"])).astype(np.float32)}
    for li in range(cfg["layers"]):
        p = f"l{li}."
        w.update({p + "wq": mat(d, hh), p + "wk": mat(d, hh), p + "wv": mat(d, hh),
                  p + "wo": mat(hh, d), p + "w1": mat(d, f), p + "w2": mat(f, d)})
        for ln in ("ln1", "ln2"):
            w[p + ln + ".g"] = (1 + 0.1 * rng.standard_normal(d)).astype(np.float32)
            w[p + ln + ".b"] = (0.1 * rng.standard_normal(d)).astype(np.float32)
    return w


def _rotary(x, cos, sin, half: int):
    """x [heads, n, hd]; cos / sin [n, hd/2]: pairs (i, i + hd/2) rotated."""
    x1, x2 = x[..., :half], x[..., half:]
    return ops.concat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def build_graph(w: dict, cfg: dict, external: bool = False) -> Graph:
    """Inputs: tokens si64 [n], positions si64 [n] (consecutive, from the
    number of tokens already cached), total si64 [1] (the tokens cached after
    this call: positions[-1] + 1), then K and V caches per layer
    (f32 [heads, max_len, head_dim] buffers). Output: logits [n, vocab].
    external: the weights are the graph's Weights, named as in w (bound at
    load, e.g. from a .safetensors file), instead of constants in it."""
    heads, hd, t = cfg["heads"], cfg["head_dim"], cfg["max_len"]
    cache = BufferType(DType.float32, [heads, t, hd])
    types = [TensorType(DType.int64, ["n"]), TensorType(DType.int64, ["n"]),
             TensorType(DType.int64, [1])]
    types += [cache] * (2 * cfg["layers"])
    with Graph("decoder", input_types=types) as g:
        tokens, positions, total, *caches = g.inputs
        written = (slice(None, total), "total")  # the cached part: [0, total)
        if external:
            c = {k: g.add_weight(Weight(k, DType.float32, list(v.shape))) for k, v in w.items()}
        else:
            c = {k: ops.constant(v) for k, v in w.items()}
        start = positions[0]  # where this call's tokens go in the caches
        ang = ops.cast(positions, DType.float32).reshape([-1, 1]) * c["inv_freq"].reshape([1, -1])
        cos, sin = ops.cos(ang), ops.sin(ang)
        # causal over absolute positions: the query at position p sees keys 0..p.
        # A key-index vector compared with the positions costs O(n * total) per
        # execute (kiln folds no constants: a band_part triangle of [max_len,
        # max_len] would be recomputed every step and would not grow with total)
        key_index = ops.constant(np.arange(t, dtype=np.int64))[written]  # [total]
        allowed = key_index.reshape([1, -1]) <= positions.reshape([-1, 1])  # [n, total]
        x = ops.gather(c["embed"], tokens, 0)
        for li in range(cfg["layers"]):
            p = f"l{li}."
            kc, vc = caches[2 * li], caches[2 * li + 1]
            h = ops.layer_norm(x, c[p + "ln1.g"], c[p + "ln1.b"], cfg["eps"])

            def heads_of(m):
                return (h @ m).reshape([-1, heads, hd]).permute([1, 0, 2])

            q = _rotary(heads_of(c[p + "wq"]), cos, sin, hd // 2)
            k = _rotary(heads_of(c[p + "wk"]), cos, sin, hd // 2)
            kc[:, start:, :] = k
            vc[:, start:, :] = heads_of(c[p + "wv"])
            keys, values = kc[:, written, :], vc[:, written, :]  # [heads, total, hd]
            s = q @ keys.transpose(-1, -2) * (1.0 / math.sqrt(hd))
            s = ops.where(allowed, s, -1e30)
            a = ops.softmax(s) @ values  # [heads, n, hd]
            x = x + a.permute([1, 0, 2]).reshape([-1, heads * hd]) @ c[p + "wo"]
            h = ops.layer_norm(x, c[p + "ln2.g"], c[p + "ln2.b"], cfg["eps"])
            x = x + ops.gelu(h @ c[p + "w1"]) @ c[p + "w2"]
        x = ops.layer_norm(x, c["lnf.g"], c["lnf.b"], cfg["eps"])
        g.output(x @ c["unembed"])
    return g


class Decoder:
    """The compiled decoder and the caches it appends to (owned here)."""

    def __init__(self, cfg: dict = CONFIG, session: InferenceSession | None = None) -> None:
        self.cfg = cfg
        self.weights = make_weights(cfg)
        self.session = session or InferenceSession(devices=[CPU()])
        self.model = self.session.load(build_graph(self.weights, cfg))
        shape = (cfg["heads"], cfg["max_len"], cfg["head_dim"])
        self.caches = [np.zeros(shape, np.float32) for _ in range(2 * cfg["layers"])]
        self.length = 0  # tokens in the caches

    def step(self, tokens: np.ndarray) -> np.ndarray:
        """Append tokens (si64 [n]); their logits [n, vocab]."""
        n = len(tokens)
        if self.length + n > self.cfg["max_len"]:
            raise ValueError(f"the caches hold {self.cfg['max_len']} tokens")
        pos = np.arange(self.length, self.length + n, dtype=np.int64)
        total = np.asarray([self.length + n], np.int64)
        (logits,) = self.model.execute(np.asarray(tokens, np.int64), pos, total, *self.caches)
        self.length += n
        return logits.to_numpy()


def generate(dec: Decoder, prompt: list[int], steps: int, check=None) -> list[int]:
    """Greedy: prefill the prompt, then one execute per new token. check(tokens,
    logits) is called after every execute with all tokens so far and the
    logits of the ones just run."""
    tokens = list(prompt)
    logits = dec.step(np.asarray(prompt, np.int64))
    if check:
        check(tokens, logits)
    for _ in range(steps):
        tokens.append(int(np.argmax(logits[-1])))
        logits = dec.step(np.asarray(tokens[-1:], np.int64))
        if check:
            check(tokens, logits)
    return tokens


def reference_check(dec: Decoder, rtol: float = 2e-4, atol: float = 2e-4):
    """A check for generate: kiln's logits against tools/decoder_ref.py."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "tools"))
    from decoder_ref import reference_logits

    def check(tokens: list[int], logits: np.ndarray) -> None:
        want = reference_logits(dec.weights, dec.cfg, np.asarray(tokens))[-len(logits):]
        np.testing.assert_allclose(logits, want, rtol=rtol, atol=atol,
                                   err_msg=f"logits after {len(tokens)} tokens")

    return check


def write_safetensors(path: str, tensors: dict) -> None:
    """tensors (name -> f32 numpy array) as a .safetensors file: an 8-byte
    little-endian header length, the JSON header, then the data in order."""
    header, blobs, at = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a, np.float32).tobytes()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def emit(mlir_path: str, weights_path: str, cfg: dict = CONFIG) -> None:
    """The decoder as MO text with its weights as Weights, and the weights as
    .safetensors: what ``kiln run --generate`` drives."""
    w = make_weights(cfg)
    with open(mlir_path, "w") as f:
        f.write(str(build_graph(w, cfg, external=True)))
    write_safetensors(weights_path, w)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--prompt", default="1,7,3,12,5", help="comma-separated token ids")
    ap.add_argument("--check", action="store_true", help="compare with tools/decoder_ref.py")
    ap.add_argument("--emit-mlir", metavar="FILE", help="write the graph's MO text and exit")
    ap.add_argument("--weights-out", metavar="FILE", help="with --emit-mlir: the weights")
    args = ap.parse_args()
    if args.emit_mlir or args.weights_out:
        if not (args.emit_mlir and args.weights_out):
            ap.error("--emit-mlir and --weights-out go together")
        emit(args.emit_mlir, args.weights_out)
        return
    dec = Decoder()
    prompt = [int(t) for t in args.prompt.split(",")]
    t0 = time.perf_counter()
    out = generate(dec, prompt, args.steps, reference_check(dec) if args.check else None)
    dt = time.perf_counter() - t0
    print("prompt:", prompt)
    print("generated:", out[len(prompt):])
    print(f"{args.steps} steps in {dt:.3f} s" + (" (checked every step)" if args.check else ""))


if __name__ == "__main__":
    main()
