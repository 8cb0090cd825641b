"""float16 graphs against numpy, an oracle written apart from kiln: a float op
on half floats is its float32 meaning on the operands widened exactly, each
result rounded once to nearest even (numpy's astype(float16) rounds so)."""

from __future__ import annotations

import numpy as np
import pytest

from kiln.graph import ops

RNG = np.random.default_rng(7)


def half(shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape).astype(np.float16)


def f32(a):
    return a.astype(np.float32)


def rounded(a):
    return a.astype(np.float16)


def assert_half_close(got, want, ulps=1):
    """got within `ulps` units in the last place of float16 of want."""
    assert got.dtype == np.float16 and got.shape == want.shape
    spacing = np.spacing(np.abs(want.astype(np.float16))).astype(np.float32)
    err = np.abs(f32(got) - f32(want))
    assert (err <= ulps * spacing + 1e-7).all(), f"max error {err.max()} ulps {ulps}"


@pytest.mark.parametrize("name,fn,ref,lo", [
    ("add", lambda x, y: ops.add(x, y), lambda x, y: x + y, -2.0),
    ("mul", lambda x, y: ops.mul(x, y), lambda x, y: x * y, -2.0),
    ("div", lambda x, y: ops.div(x, y), lambda x, y: x / y, 0.5),
    ("max", lambda x, y: ops.max(x, y), np.maximum, -2.0),
])
def test_binary_is_one_rounding_of_f32(run, name, fn, ref, lo):
    x, y = half((3, 17), lo), half((3, 17), lo)
    assert_half_close(run(fn, x, y), rounded(ref(f32(x), f32(y))), ulps=0)


@pytest.mark.parametrize("name,fn,ref", [
    ("exp", ops.exp, np.exp),
    ("tanh", ops.tanh, np.tanh),
    ("sqrt", lambda x: ops.sqrt(ops.abs(x)), lambda x: np.sqrt(np.abs(x))),
])
def test_unary(run, name, fn, ref):
    x = half((4, 33))
    assert_half_close(run(fn, x), rounded(ref(f32(x))))


def test_matmul_accumulates_in_f32(run):
    # 256 products: a float16 accumulator would be off by many ulps here
    a, b = half((5, 256), -1, 1), half((256, 7), -1, 1)
    want = rounded(f32(a).astype(np.float64) @ f32(b).astype(np.float64))
    assert_half_close(run(ops.matmul, a, b), want)


def test_softmax_of_a_matmul(run):
    x, w = half((2, 8)), half((8, 3))
    h = f32(rounded(f32(x) @ f32(w)))
    e = np.exp(h - h.max(-1, keepdims=True))
    want = rounded(e / e.sum(-1, keepdims=True))
    assert_half_close(run(lambda x, w: ops.softmax(ops.matmul(x, w)), x, w), want)


def test_sum_accumulates_in_f32(run):
    x = half((3, 1000), 0, 1)
    want = rounded(f32(x).astype(np.float64).sum(-1, keepdims=True))
    got = run(lambda x: ops.sum(x, axis=-1), x)
    assert_half_close(got, want)
