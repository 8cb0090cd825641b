"""kiln.graph.ops elementwise ops against numpy: unary and binary ops, dtypes,
broadcasting, Python scalars, the TensorValue operators and dtype errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.graph import TensorType, ops

RNG = np.random.default_rng(0)
X = RNG.uniform(-2, 2, (3, 4)).astype(np.float32)
POS = RNG.uniform(0.1, 2, (3, 4)).astype(np.float32)
UNIT = RNG.uniform(-0.9, 0.9, (3, 4)).astype(np.float32)
_erf = np.vectorize(math.erf)

UNARY = [
    (ops.abs, np.abs, X), (ops.negate, np.negative, X), (ops.exp, np.exp, X),
    (ops.log, np.log, POS), (ops.log1p, np.log1p, POS), (ops.sqrt, np.sqrt, POS),
    (ops.rsqrt, lambda a: 1 / np.sqrt(a), POS), (ops.tanh, np.tanh, X),
    (ops.sigmoid, lambda a: 1 / (1 + np.exp(-a)), X), (ops.relu, lambda a: np.maximum(a, 0), X),
    (ops.silu, lambda a: a / (1 + np.exp(-a)), X), (ops.erf, _erf, X), (ops.sin, np.sin, X),
    (ops.cos, np.cos, X), (ops.floor, np.floor, X), (ops.round, np.round, X * 3),
    (ops.trunc, np.trunc, X), (ops.ceil, np.ceil, X), (ops.acos, np.arccos, UNIT),
    (ops.asin, np.arcsin, UNIT), (ops.atan, np.arctan, X), (ops.atanh, np.arctanh, UNIT),
]


@pytest.mark.parametrize("op,ref,x", UNARY, ids=[u[0].__name__ for u in UNARY])
def test_unary_f32(run, op, ref, x):
    np.testing.assert_allclose(run(op, x), ref(x).astype(np.float32), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("op,ref", [(ops.exp, np.exp), (ops.tanh, np.tanh),
                                    (ops.sqrt, lambda a: np.sqrt(np.abs(a)))])
def test_unary_f64(run, op, ref):
    x = X.astype(np.float64)
    f = (lambda v: op(ops.abs(v))) if op is ops.sqrt else op
    np.testing.assert_allclose(run(f, x), ref(x), rtol=1e-12)


@pytest.mark.parametrize("op,ref", [(ops.abs, np.abs), (ops.negate, np.negative),
                                    (ops.relu, lambda a: np.maximum(a, 0))])
@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_unary_int(run, op, ref, dt):
    x = np.array([[-3, 0, 5], [7, -1, 2]], dtype=dt)
    out = run(op, x)
    assert out.dtype == dt
    np.testing.assert_array_equal(out, ref(x))


@pytest.mark.parametrize("approximate", ["none", "tanh", "quick"])
def test_gelu(run, approximate):
    ref = {"none": X * 0.5 * (1 + _erf(X / math.sqrt(2))),
           "tanh": 0.5 * X * (1 + np.tanh(math.sqrt(2 / math.pi) * (X + 0.044715 * X ** 3))),
           "quick": X / (1 + np.exp(-1.702 * X))}[approximate]
    np.testing.assert_allclose(run(lambda v: ops.gelu(v, approximate), X), ref, rtol=1e-5,
                               atol=1e-6)


def test_is_nan_is_inf(run):
    x = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    nan, inf = run(lambda v: [ops.is_nan(v), ops.is_inf(v)], x)
    np.testing.assert_array_equal(nan, np.isnan(x))
    np.testing.assert_array_equal(inf, np.isinf(x))


BINARY = [(ops.add, np.add), (ops.sub, np.subtract), (ops.mul, np.multiply),
          (ops.div, np.divide), (ops.max, np.maximum), (ops.min, np.minimum),
          (ops.floor_div, np.floor_divide), (ops.mod, np.mod)]


@pytest.mark.parametrize("op,ref", BINARY, ids=[b[1].__name__ for b in BINARY])
def test_binary_broadcast_f32(run, op, ref):
    a = RNG.uniform(-3, 3, (2, 1, 4)).astype(np.float32)
    b = RNG.uniform(0.5, 2, (3, 1)).astype(np.float32)
    out = run(op, a, b)
    assert out.shape == (2, 3, 4)
    np.testing.assert_allclose(out, ref(a, b), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op,ref", [(ops.add, np.add), (ops.sub, np.subtract),
                                    (ops.mul, np.multiply), (ops.floor_div, np.floor_divide),
                                    (ops.mod, np.mod), (ops.max, np.maximum)])
@pytest.mark.parametrize("dt", [np.int32, np.int64])
def test_binary_int(run, op, ref, dt):
    a = np.array([[-7, 3, 8], [5, -2, 0]], dt)
    b = np.array([3, -2, 5], dt)
    out = run(op, a, b)
    assert out.dtype == dt
    np.testing.assert_array_equal(out, ref(a, b))


def test_int_div_is_f64(run):
    a, b = np.array([7, -3], np.int32), np.array([2, 4], np.int32)
    out = run(ops.div, a, b)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, a / b)


def test_pow(run):
    np.testing.assert_allclose(run(lambda a: ops.pow(a, 3.0), POS), POS ** 3, rtol=1e-5)
    np.testing.assert_allclose(run(lambda a: a ** 0.5, POS), POS ** 0.5, rtol=1e-6)
    np.testing.assert_allclose(run(lambda a: 2.0 ** a, X), 2.0 ** X, rtol=1e-6)


@pytest.mark.parametrize("op,ref", [(ops.equal, np.equal), (ops.not_equal, np.not_equal),
                                    (ops.greater, np.greater),
                                    (ops.greater_equal, np.greater_equal)])
def test_compare(run, op, ref):
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b = np.array([2, 2, 7], np.float32)
    out = run(op, a, b)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, ref(a, b))


def test_logical(run):
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    outs = run(lambda x, y: [ops.logical_and(x, y), ops.logical_or(x, y),
                             ops.logical_xor(x, y), ops.logical_not(x), x & y, x | y, x ^ y, ~x],
               a, b)
    refs = [a & b, a | b, a ^ b, ~a, a & b, a | b, a ^ b, ~a]
    for o, r in zip(outs, refs):
        np.testing.assert_array_equal(o, r)


def test_where_broadcast_and_scalars(run):
    c = np.array([[True], [False]])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out1, out2 = run(lambda cv, xv: [ops.where(cv, xv, 0.0), ops.where(cv, -1.0, xv)], c, x)
    np.testing.assert_array_equal(out1, np.where(c, x, 0))
    np.testing.assert_array_equal(out2, np.where(c, -1, x))


@pytest.mark.parametrize("src,dst", [(np.float32, DType.int32), (np.float32, DType.float64),
                                     (np.int64, DType.float32), (np.int32, DType.bool)])
def test_cast(run, src, dst):
    x = np.array([0, 1.5, -2.7, 3], dtype=np.float64).astype(src)
    out = run(lambda v: ops.cast(v, dst), x)
    assert out.dtype == dst.to_numpy()
    np.testing.assert_array_equal(out, x.astype(dst.to_numpy()))


def test_operators_with_scalars(run):
    x = X
    outs = run(lambda v: [v + 1.0, 2 * v, v - 1, 1 - v, v / 2, 1.0 / (v * v + 1), -v, abs(v),
                          v // 1.0, v % 1.5], x)
    refs = [x + 1, 2 * x, x - 1, 1 - x, x / 2, 1 / (x * x + 1), -x, np.abs(x),
            np.floor_divide(x, 1), np.mod(x, 1.5)]
    for o, r in zip(outs, refs):
        assert o.dtype == np.float32
        np.testing.assert_allclose(o, r, rtol=1e-6, atol=1e-6)


def test_int_value_scalar_takes_its_dtype(run):
    x = np.array([1, 2, 3], np.int32)
    out = run(lambda v: v * 3 + 1, x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, x * 3 + 1)


def test_comparison_operators(run):
    x = np.array([-1.0, 0.0, 1.0], np.float32)
    outs = run(lambda v: [v > 0, v >= 0, v < 0, v <= 0, v == 0, v != 0], x)
    for o, r in zip(outs, [x > 0, x >= 0, x < 0, x <= 0, x == 0, x != 0]):
        np.testing.assert_array_equal(o, r)


def test_symbolic_batch_two_sizes(build):
    model = build(lambda v: ops.relu(v) * 2.0 + 1.0, [TensorType(DType.float32, ["batch", 4])])
    for n in (1, 5):
        x = RNG.standard_normal((n, 4)).astype(np.float32)
        out = model.execute(x)[0].to_numpy()
        np.testing.assert_allclose(out, np.maximum(x, 0) * 2 + 1, rtol=1e-6)


def test_float_op_on_ints_names_the_op(build):
    with pytest.raises(kiln.DTypeError, match=r"mo\.exp.*si32"):
        build(ops.exp, [TensorType(DType.int32, [3])])


def test_mixed_dtypes_name_both(build):
    with pytest.raises(kiln.DTypeError, match=r"mo\.add"):
        build(ops.add, [TensorType(DType.float32, [3]), TensorType(DType.float64, [3])])


def test_broadcast_mismatch_names_the_shapes(build):
    with pytest.raises(kiln.KilnError, match=r"mo\.mul"):
        build(ops.mul, [TensorType(DType.float32, [3]), TensorType(DType.float32, [4])])


def test_logical_on_floats_is_a_dtype_error(build):
    with pytest.raises(kiln.DTypeError, match="logical_and"):
        build(ops.logical_and, [TensorType(DType.float32, [2]), TensorType(DType.float32, [2])])


def test_gelu_bad_approximate():
    with pytest.raises(ValueError, match="approximate"):
        ops.gelu(None, "erf")


def test_fractional_number_meeting_an_int_value(build):
    with pytest.raises(kiln.DTypeError, match=r"1\.5 meets a si32 value"):
        build(lambda v: v + 1.5, [TensorType(DType.int32, [3])])


def test_execute_checks_input_dtype_and_shape(build):
    model = build(ops.relu, [TensorType(DType.float32, ["batch", 4])])
    with pytest.raises(kiln.ShapeError, match="axis 1 expected 4, got 5"):
        model.execute(np.ones((2, 5), np.float32))
    with pytest.raises(kiln.DTypeError, match="expected dtype f32, got f64"):
        model.execute(np.ones((2, 4), np.float64))
