#!/usr/bin/env python3
"""gguf_testdata.py - write the GGUF test files under tests/gguf/ with the
`gguf` PyPI package (llama.cpp's own writer), and beside them what numpy
says they hold, for tests/test_gguf.c and tests/test_ops_quant.c.

Run once, in a venv (CI reads the checked-in files and needs no PyPI):
  python3 -m venv /tmp/gguf-venv && /tmp/gguf-venv/bin/pip install gguf numpy
  /tmp/gguf-venv/bin/python tools/gguf_testdata.py tests/gguf

Writes:
  small.gguf     metadata of every value type (arrays, nested arrays,
                 strings), tensors f32, f16, bf16 and one per block type
  aligned.gguf   general.alignment = 64, two tensors
  small/NAME.npy each tensor of small.gguf as float32, dequantized by
                 gguf.quants.dequantize (the package's numpy reference)
  small/x_NAME.npy, small/y_NAME.npy  activations x [3, K] and
                 y = x @ dequantize(NAME).T computed in float64, for qmatmul
Q4_0 / Q8_0 weights are quantized by the package; it cannot quantize the
K types, so their blocks are random bytes with the f16 scales set to small
finite values (any other byte pattern is a valid block).
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

rng = np.random.default_rng(21)


def kblocks(qtype, rows, k):
    """Random valid K-quant blocks [rows, k/256*bytes] (uint8)."""
    bsz = {T.Q4_K: 144, T.Q5_K: 176, T.Q6_K: 210}[qtype]
    nb = k // 256
    b = rng.integers(0, 256, size=(rows, nb, bsz), dtype=np.uint8)
    d = rng.uniform(0.001, 0.02, size=(rows, nb)).astype(np.float16).view(np.uint8)
    d = d.reshape(rows, nb, 2)
    if qtype == T.Q6_K:
        b[:, :, 208:210] = d
    else:
        dmin = rng.uniform(0.001, 0.02, size=(rows, nb)).astype(np.float16)
        b[:, :, 0:2] = d
        b[:, :, 2:4] = dmin.view(np.uint8).reshape(rows, nb, 2)
    return b.reshape(rows, nb * bsz)


def main(out):
    os.makedirs(os.path.join(out, "small"), exist_ok=True)
    w = gguf.GGUFWriter(os.path.join(out, "small.gguf"), "kiln-test")
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 1.5)
    w.add_bool("t.bool", True)
    w.add_string("t.str", "héllo")
    w.add_uint64("t.u64", 2**40 + 3)
    w.add_int64("t.i64", -(2**40) - 3)
    w.add_float64("t.f64", -2.25)
    w.add_array("t.ints", [1, 2, 3, 4])
    w.add_array("t.strs", ["a", "bc", ""])
    w.add_array("t.nested", [[1, 2], [3]])
    names = {}
    a = rng.standard_normal((3, 5)).astype(np.float32)
    w.add_tensor("plain.f32", a)
    names["plain.f32"] = a
    h = rng.standard_normal((4, 8)).astype(np.float16)
    w.add_tensor("plain.f16", h)
    names["plain.f16"] = h.astype(np.float32)
    bf = quants.quantize(rng.standard_normal((2, 6)).astype(np.float32), T.BF16)
    w.add_tensor("plain.bf16", bf, raw_dtype=T.BF16)
    names["plain.bf16"] = quants.dequantize(bf, T.BF16).astype(np.float32)
    shapes = {T.Q4_0: (6, 64), T.Q8_0: (5, 96), T.Q4_K: (4, 512), T.Q5_K: (3, 256),
              T.Q6_K: (5, 512)}
    for qt, (n, k) in shapes.items():
        name = "blk." + qt.name.lower()
        if qt in (T.Q4_0, T.Q8_0):
            q = quants.quantize(rng.standard_normal((n, k)).astype(np.float32), qt)
        else:
            q = kblocks(qt, n, k)
        w.add_tensor(name, q, raw_dtype=qt)
        deq = quants.dequantize(q, qt).astype(np.float32)
        assert deq.shape == (n, k)
        names[name] = deq
        x = rng.standard_normal((3, k)).astype(np.float32)
        np.save(os.path.join(out, "small", "x_%s.npy" % name), x)
        y = (x.astype(np.float64) @ deq.astype(np.float64).T).astype(np.float32)
        np.save(os.path.join(out, "small", "y_%s.npy" % name), y)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    for name, v in names.items():
        np.save(os.path.join(out, "small", name + ".npy"), v)

    w = gguf.GGUFWriter(os.path.join(out, "aligned.gguf"), "kiln-test")
    w.add_custom_alignment(64)
    w.add_tensor("a", np.arange(3, dtype=np.float32))
    w.add_tensor("b", quants.quantize(np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 64),
                                      T.Q8_0), raw_dtype=T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/gguf")
