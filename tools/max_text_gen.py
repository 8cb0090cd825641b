#!/usr/bin/env python3
"""max_text_gen.py - writes tests/max_text/: graphs built with MAX's Python
API (the `max` PyPI package), printed with str(graph), and the inputs and
outputs MAX's own engine computes for them, so kiln's test can run the text
MAX prints and compare with MAX.

Never run in CI (it needs the `max` package, ~1 GB): run it by hand in a venv
with `pip install max numpy` when the corpus should grow, and commit what it
writes. Each case NAME gives:
  NAME.mlir              the printed graph
  NAME/input<i>.npy      its inputs (seeded)
  NAME/output<i>.npy     MAX's outputs on the CPU
  NAME/dims.txt          the symbolic dims' values, "sym=value" a line
  NAME/weights.safetensors  the weights, when the graph has any

usage: tools/max_text_gen.py [OUT_DIR [CASE...]]   (default: tests/max_text, every case)"""
import json
import os
import struct
import sys

import numpy as np
from max import engine
from max.driver import CPU
from max.dtype import DType
from max.graph import DeviceRef, Graph, TensorType, Weight, ops

DEV = DeviceRef.CPU()
F32, F64, I64, I32, BOOL = DType.float32, DType.float64, DType.int64, DType.int32, DType.bool
NP = {F32: np.float32, F64: np.float64, I64: np.int64, I32: np.int32, BOOL: np.bool_}
ST = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int64): "I64",
      np.dtype(np.int32): "I32", np.dtype(np.bool_): "BOOL"}
CASES = []


def case(inputs, dims, weights=None):
    """Register a builder: inputs = [(dtype, shape)], dims = {sym: value},
    weights = {name: array}."""
    def wrap(fn):
        CASES.append((fn.__name__, inputs, dims, weights or {}, fn))
        return fn
    return wrap


def T(dt, shape):
    return TensorType(dt, shape, device=DEV)


def const(v, dt=F32):
    return ops.constant(np.asarray(v, NP[dt]), dt, device=DEV)


@case([(F32, ["batch", 16])], {"batch": 3})
def unary(x):
    a = ops.abs(x) + 0.5
    return [ops.exp(x), ops.log(a), ops.log1p(a), ops.sqrt(a), ops.rsqrt(a), ops.tanh(x),
            ops.sigmoid(x), ops.relu(x), ops.gelu(x), ops.gelu(x, approximate="tanh"),
            ops.silu(x), ops.erf(x), ops.sin(x), ops.cos(x), ops.floor(x), ops.round(x),
            ops.trunc(x), -x, ops.negate(x)]


@case([(F32, ["n", 8]), (F32, [8])], {"n": 5})
def binary(x, y):
    return [x + y, x - y, x * y, x / (ops.abs(y) + 1.0), ops.max(x, y), ops.min(x, y),
            ops.pow(ops.abs(x) + 1.0, y), ops.mod(x, ops.abs(y) + 1.0), x * 2.0 + 1.0,
            2.0 - x]


@case([(F32, ["n", 8]), (F32, ["n", 8])], {"n": 4})
def compare(x, y):
    gt, ge = x > y, x >= y
    eq, ne = ops.equal(x, y), ops.not_equal(x, y)
    return [ops.cast(gt, F32), ops.cast(ge, F32), ops.cast(eq, F32), ops.cast(ne, F32),
            ops.where(gt, x, y), ops.cast(ops.logical_and(gt, ne), F32),
            ops.cast(ops.logical_or(gt, eq), F32), ops.cast(ops.logical_xor(gt, ge), F32),
            ops.cast(ops.logical_not(gt), F32), ops.cast(ops.is_nan(x / y), F32),
            ops.cast(ops.is_inf(x / (y - y)), F32), x < y, x <= y]


@case([(F32, ["b", 6, 10])], {"b": 2})
def reduce(x):
    return [ops.sum(x, axis=-1), ops.mean(x, axis=1), ops.max(x, axis=0), ops.min(x, axis=2),
            ops.argmax(x, axis=-1), ops.argmin(x, axis=1), ops.softmax(x),
            ops.logsoftmax(x), ops.softmax(x, axis=1)]


@case([(F32, ["b", "s", 32])], {"b": 2, "s": 5},
      {"ln.gamma": np.linspace(0.5, 1.5, 32, dtype=np.float32),
       "ln.beta": np.linspace(-0.1, 0.1, 32, dtype=np.float32)})
def norm(x):
    g = Weight("ln.gamma", F32, [32], device=DEV)
    b = Weight("ln.beta", F32, [32], device=DEV)
    return [ops.layer_norm(x, gamma=g, beta=b, epsilon=1e-5),
            ops.layer_norm(x, gamma=const(np.ones(32)), beta=const(np.zeros(32)), epsilon=1e-6)]


@case([(F32, ["b", "s", 12])], {"b": 2, "s": 3})
def movement(x):
    r = ops.reshape(x, ["b", "s", 3, 4])
    return [r, ops.transpose(x, 1, 2), ops.permute(r, [0, 2, 1, 3]), ops.reshape(x, [-1, 12]),
            ops.broadcast_to(ops.unsqueeze(x, 1), ["b", 2, "s", 12]),
            ops.concat([x, x * 2.0], axis=-1), ops.concat([x, x], axis=0),
            ops.squeeze(ops.unsqueeze(x, 0), 0), ops.unsqueeze(x, -1), x.T if False else
            ops.transpose(x, -1, 0)]


@case([(F32, ["b", 10, 12])], {"b": 2})
def slicing(x):
    a, b2, c = ops.split(x, [2, 3, 5], axis=1)
    return [a, b2, c, x[:, 1:7, ::2], x[..., 3], x[:, -3:, 2:10:3], x[0]]


@case([(F32, [7, 5]), (I64, ["n", 3])], {"n": 2})
def gather(x, idx):
    return [ops.gather(x, idx, axis=0), ops.gather(x, ops.cast(idx, I32), axis=0)]


@case([(F32, ["m", 24])], {"m": 5},
      {"fc1.weight": np.random.default_rng(1).standard_normal((24, 16), np.float32) * 0.2,
       "fc1.bias": np.random.default_rng(2).standard_normal(16, np.float32) * 0.1,
       "fc2.weight": np.random.default_rng(3).standard_normal((16, 4), np.float32) * 0.2})
def mlp(x):
    w1 = Weight("fc1.weight", F32, [24, 16], device=DEV)
    b1 = Weight("fc1.bias", F32, [16], device=DEV)
    w2 = Weight("fc2.weight", F32, [16, 4], device=DEV)
    h = ops.relu(x @ w1 + b1)
    return [ops.softmax(h @ w2), ops.matmul(h, ops.transpose(h, 0, 1))]


@case([(F32, ["b", 4, "s", 8]), (F32, ["b", 4, "s", 8]), (F32, ["b", 4, "s", 8])], {"b": 1, "s": 6})
def attention(q, k, v):
    s = (q @ ops.transpose(k, -1, -2)) * 0.35355339
    return [ops.softmax(s) @ v]


@case([(I64, ["n", 6]), (I32, [6])], {"n": 3})
def integers(a, b):
    bb = ops.cast(b, I64)
    return [a + bb, a * bb, a - 3, ops.max(a, bb), ops.abs(a), ops.cast(a, F32),
            ops.sum(a, axis=-1), ops.cast(ops.cast(a, F32) * 0.5, I64)]


@case([(F32, ["r", 6]), (F32, [6])], {"r": 4})
def extra(x, y):
    a = ops.abs(x)
    return [ops.ceil(x), ops.acos(ops.tanh(x)), ops.atanh(ops.tanh(x) * 0.5),
            ops.floor_div(x, ops.abs(y) + 0.5), ops.prod(x, axis=1), ops.cumsum(x, axis=-1),
            ops.band_part(ops.reshape(x, ["r", 2, 3]), num_lower=0, num_upper=1),
            ops.squeeze(ops.unsqueeze(a, 1), 1), x[1:, 1:5:2], x[:, :-1], ops.flatten(x),
            ops.stack([x, a], axis=0), ops.outer(y, y)]


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr)
        header[name] = {"dtype": ST[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [off, off + arr.nbytes]}
        blobs.append(arr.tobytes())
        off += arr.nbytes
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def input_array(rng, dt, shape, dims, index):
    shape = [dims[d] if isinstance(d, str) else d for d in shape]
    if dt in (I64, I32):
        hi = 7 if index == 1 and dt == I64 else 20  # gather indices stay in range
        return rng.integers(0, hi, size=shape).astype(NP[dt])
    return rng.standard_normal(shape).astype(NP[dt])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "max_text")
    os.makedirs(out, exist_ok=True)
    session = engine.InferenceSession(devices=[CPU()])
    rng = np.random.default_rng(20261125)
    only = set(sys.argv[2:])
    for name, inputs, dims, weights, fn in CASES:
        if only and name not in only:
            continue
        with Graph(name, input_types=[T(dt, sh) for dt, sh in inputs]) as g:
            outs = fn(*[v.tensor for v in g.inputs])
            g.output(*outs)
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(out, name + ".mlir"), "w") as f:
            f.write(str(g) + "\n")
        arrays = [input_array(rng, dt, sh, dims, i) for i, (dt, sh) in enumerate(inputs)]
        model = session.load(g, weights_registry=weights)
        results = model.execute(*arrays)
        for i, a in enumerate(arrays):
            np.save(os.path.join(d, "input%d.npy" % i), a)
        for i, r in enumerate(results):
            np.save(os.path.join(d, "output%d.npy" % i), r.to_numpy())
        with open(os.path.join(d, "dims.txt"), "w") as f:
            f.writelines("%s=%d\n" % kv for kv in dims.items())
        if weights:
            write_safetensors(os.path.join(d, "weights.safetensors"), weights)
        print("max_text_gen: %s: %d inputs, %d outputs" % (name, len(arrays), len(results)))


if __name__ == "__main__":
    main()
