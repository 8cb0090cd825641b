#!/usr/bin/env python3
"""qmatmul_oracle.py - mo.qmatmul's meaning in numpy, written from llama.cpp's
published definitions (the lhs quantized to Q8_0 / Q8_K blocks, integer
block dots, f32 scaling; ir/qblock.h states the rule), independent of kiln's
C code, for tests/test_ops_quant.c.

For each block tensor blk.E of tests/gguf/small.gguf (written by
tools/gguf_testdata.py) and its activations small/x_blk.E.npy it writes
small/yq_blk.E.npy = qmatmul(x, blk.E) in float32: the block terms in f32,
summed in float64, rounded once. The gguf package reads the raw blocks; it
has no quantizer for activations, hence this file.

Run once, in the venv gguf_testdata.py names (CI reads the checked-in files):
  /tmp/gguf-venv/bin/python tools/qmatmul_oracle.py tests/gguf
"""
import os
import sys

import numpy as np
import gguf

F32 = np.float32
BLOCK = {"q4_0": (32, 18), "q8_0": (32, 34), "q4_k": (256, 144), "q5_k": (256, 176),
         "q6_k": (256, 210)}


def f16(b, at):
    """The f16 at byte `at` of each block, as float32."""
    return np.ascontiguousarray(b[..., at:at + 2]).view(np.float16)[..., 0].astype(F32)


def quantize_q8_0(x):
    """x [M, nb, 32] -> q int64, da float32 [M, nb] (d rounded to f16)."""
    amax = np.abs(x).max(axis=-1)
    d = (amax / F32(127)).astype(F32)
    idv = np.divide(F32(1), d, out=np.zeros_like(d), where=d != 0).astype(F32)
    q = np.clip(np.rint((x * idv[..., None]).astype(F32)), -127, 127).astype(np.int64)
    return q, d.astype(np.float16).astype(F32)


def quantize_q8_k(x):
    """x [M, nb, 256] -> q int64, da float32, bsums [M, nb, 16]."""
    i = np.abs(x).argmax(axis=-1)  # the first of the largest |x|
    xmax = np.take_along_axis(x, i[..., None], axis=-1)[..., 0]
    nz = xmax != 0
    iscale = np.divide(F32(-127), xmax, out=np.zeros_like(xmax), where=nz).astype(F32)
    q = np.clip(np.rint((x * iscale[..., None]).astype(F32)), -127, 127).astype(np.int64)
    da = np.divide(F32(1), iscale, out=np.zeros_like(iscale), where=nz).astype(F32)
    return q, da, q.reshape(q.shape[0], q.shape[1], 16, 16).sum(axis=-1)


def scale_min_k4(s):
    """12 packed bytes [..., 12] -> 6-bit scales and mins [..., 8]."""
    s = s.astype(np.int64)
    sc = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 15) | ((s[..., 0:4] >> 6) << 4)], -1)
    mn = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], -1)
    return sc, mn


def k45_values(b, five):
    """q4_k / q5_k blocks [N, nb, bytes] -> values 0..15 / 0..31 [N, nb, 256]."""
    qs = b[..., 48:176] if five else b[..., 16:144]
    qs = qs.astype(np.int64)
    out = []
    for c in range(4):
        lo, hi = qs[..., 32 * c:32 * c + 32] & 15, qs[..., 32 * c:32 * c + 32] >> 4
        if five:
            qh = b[..., 16:48].astype(np.int64)
            lo = lo + (((qh >> (2 * c)) & 1) << 4)
            hi = hi + (((qh >> (2 * c + 1)) & 1) << 4)
        out += [lo, hi]
    return np.concatenate(out, -1)


def q6_values(b):
    """q6_k blocks -> values -32..31 [N, nb, 256]."""
    out = []
    for h in range(2):
        ql = b[..., 64 * h:64 * h + 64].astype(np.int64)
        qh = b[..., 128 + 32 * h:160 + 32 * h].astype(np.int64)
        out += [(ql[..., :32] & 15) | ((qh & 3) << 4), (ql[..., 32:] & 15) | (((qh >> 2) & 3) << 4),
                (ql[..., :32] >> 4) | (((qh >> 4) & 3) << 4),
                (ql[..., 32:] >> 4) | (((qh >> 6) & 3) << 4)]
    return np.concatenate(out, -1) - 32


def qmatmul(enc, x, w):
    """x [M, K] float32, w [N, K / elems * bytes] uint8 -> [M, N] float32."""
    e, bb = BLOCK[enc]
    m, k = x.shape
    nb = k // e
    b = w.reshape(w.shape[0], nb, bb)
    xb = x.reshape(m, nb, e).astype(F32)
    dw = f16(b, 208 if enc == "q6_k" else 0)  # [N, nb]
    if enc in ("q4_0", "q8_0"):
        q, da = quantize_q8_0(xb)
        if enc == "q4_0":
            qs = b[..., 2:18].astype(np.int64)
            v = np.concatenate([qs & 15, qs >> 4], -1) - 8
        else:
            v = np.ascontiguousarray(b[..., 2:34]).view(np.int8).astype(np.int64)
        isum = np.einsum("nbi,mbi->mnb", v, q)
        dd = (dw[None] * da[:, None]).astype(F32)
        terms = (isum.astype(F32) * dd).astype(F32)
    else:
        q, da, bsums = quantize_q8_k(xb)
        dd = (dw[None] * da[:, None]).astype(F32)
        if enc == "q6_k":
            v = q6_values(b)
            sc = np.ascontiguousarray(b[..., 192:208]).view(np.int8).astype(np.int64)
            per16 = np.einsum("nbgi,mbgi->mnbg", v.reshape(*v.shape[:2], 16, 16),
                              q.reshape(m, nb, 16, 16))
            isum = (per16 * sc[None]).sum(-1)
            terms = (dd * isum.astype(F32)).astype(F32)
        else:
            v = k45_values(b, enc == "q5_k")
            sc, mn = scale_min_k4(b[..., 4:16])
            per32 = np.einsum("nbji,mbji->mnbj", v.reshape(*v.shape[:2], 8, 32),
                              q.reshape(m, nb, 8, 32))
            isum = (per32 * sc[None]).sum(-1)
            pair = bsums.reshape(m, nb, 8, 2).sum(-1)  # [M, nb, 8]
            msum = np.einsum("nbj,mbj->mnb", mn, pair)
            dm = (f16(b, 2)[None] * da[:, None]).astype(F32)
            hi = (dd * isum.astype(F32)).astype(F32)
            lo = (dm * msum.astype(F32)).astype(F32)
            terms = (hi - lo).astype(F32)
    return terms.astype(np.float64).sum(-1).astype(F32)


def main(out):
    r = gguf.GGUFReader(os.path.join(out, "small.gguf"))
    tensors = {t.name: t for t in r.tensors}
    for enc, (e, bb) in BLOCK.items():
        name = "blk." + enc
        x = np.load(os.path.join(out, "small", "x_%s.npy" % name))
        w = np.asarray(tensors[name].data).view(np.uint8).reshape(-1, x.shape[1] // e * bb)
        y = qmatmul(enc, x, w)
        np.save(os.path.join(out, "small", "yq_%s.npy" % name), y)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/gguf")
