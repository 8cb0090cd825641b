"""kiln.graph.ops reductions and scans against numpy: every axis (negative
ones too), dtypes, the kept size-1 axis, symbolic dims and bad axes."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.graph import TensorType, ops

RNG = np.random.default_rng(1)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)

REDUCE = [(ops.sum, np.sum), (ops.mean, np.mean), (ops.max, np.max), (ops.min, np.min),
          (ops.prod, np.prod)]


@pytest.mark.parametrize("op,ref", REDUCE, ids=[r[1].__name__ for r in REDUCE])
@pytest.mark.parametrize("axis", [0, 1, -1, -3])
def test_reduce_keeps_axis(run, op, ref, axis):
    out = run(lambda v: op(v, axis=axis), X)
    np.testing.assert_allclose(out, ref(X, axis=axis, keepdims=True), rtol=1e-5, atol=1e-6)


def test_reduce_default_axis_is_last(run):
    outs = run(lambda v: [ops.sum(v), ops.mean(v), ops.max(v), ops.min(v), ops.argmax(v)], X)
    refs = [X.sum(-1, keepdims=True), X.mean(-1, keepdims=True), X.max(-1, keepdims=True),
            X.min(-1, keepdims=True), X.argmax(-1)[..., None]]
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_reduce_int(run, dt):
    x = np.array([[3, -1, 4], [1, 5, -9]], dt)
    s, mx, mn = run(lambda v: [ops.sum(v, 0), ops.max(v, axis=1), ops.min(v, axis=-1)], x)
    assert s.dtype == dt
    np.testing.assert_array_equal(s, x.sum(0, keepdims=True))
    np.testing.assert_array_equal(mx, x.max(1, keepdims=True))
    np.testing.assert_array_equal(mn, x.min(-1, keepdims=True))


@pytest.mark.parametrize("axis", [0, -1, 1])
def test_argmax_argmin(run, axis):
    amax, amin = run(lambda v: [ops.argmax(v, axis), ops.argmin(v, axis)], X)
    assert amax.dtype == np.int64
    np.testing.assert_array_equal(amax, np.expand_dims(X.argmax(axis), axis))
    np.testing.assert_array_equal(amin, np.expand_dims(X.argmin(axis), axis))


def _cumsum_ref(x, axis, exclusive, reverse):
    y = np.flip(x, axis) if reverse else x
    c = np.cumsum(y, axis)
    if exclusive:
        c = c - y
    return np.flip(c, axis) if reverse else c


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [-1, 0])
def test_cumsum(run, axis, exclusive, reverse):
    out = run(lambda v: ops.cumsum(v, axis=axis, exclusive=exclusive, reverse=reverse), X)
    np.testing.assert_allclose(out, _cumsum_ref(X, axis, exclusive, reverse), rtol=1e-5,
                               atol=1e-5)


def test_tensor_value_methods(run):
    outs = run(lambda v: [v.max(), v.min(axis=0), v.mean(1), v.argmax(0), v.var(), v.stdev()], X)
    refs = [X.max(-1, keepdims=True), X.min(0, keepdims=True), X.mean(1, keepdims=True),
            X.argmax(0)[None], X.var(-1, keepdims=True), X.std(-1, keepdims=True)]
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-6)


def test_size_one_axis(run):
    x = RNG.standard_normal((3, 1)).astype(np.float32)
    np.testing.assert_allclose(run(lambda v: ops.sum(v, -1), x), x)


def test_symbolic_batch_two_sizes(build):
    model = build(lambda v: [ops.sum(v, 0), ops.mean(v, -1)],
                  [TensorType(DType.float32, ["batch", 3])])
    for n in (2, 7):
        x = RNG.standard_normal((n, 3)).astype(np.float32)
        s, m = [t.to_numpy() for t in model.execute(x)]
        np.testing.assert_allclose(s, x.sum(0, keepdims=True), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m, x.mean(-1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_axis_out_of_range(build):
    with pytest.raises(IndexError, match="axis 2 is out of range for rank 2"):
        build(lambda v: ops.sum(v, axis=2), [TensorType(DType.float32, [2, 3])])


def test_reduce_bool_is_a_dtype_error(build):
    with pytest.raises(kiln.DTypeError, match=r"mo\.sum"):
        build(lambda v: ops.sum(v), [TensorType(DType.bool, [2, 3])])
