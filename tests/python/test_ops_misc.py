"""kiln.graph.ops misc, sorting, random and custom ops: constants, range,
matmul / @ / outer, print, transfer_to, weights, top_k / bottom_k /
argsort, random tensors and ops.custom end to end with a C kernel library."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.graph import DeviceRef, Graph, TensorType, Weight, ops

RNG = np.random.default_rng(3)
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_constant_dtypes_and_rank0(run):
    outs = run(lambda v: [v + ops.constant(np.arange(3), DType.float32),
                          ops.constant(2.5, DType.float64) + v.cast(DType.float64),
                          ops.constant([[True, False, True]]) & (v > 0)],
               np.array([1, -2, 3], np.float32))
    np.testing.assert_array_equal(outs[0], [1, -1, 5])
    assert outs[1].dtype == np.float64
    np.testing.assert_array_equal(outs[1], [3.5, 0.5, 5.5])
    np.testing.assert_array_equal(outs[2], [[True, False, True]])


@pytest.mark.parametrize("start,stop,step,dt", [(0, 5, 1, DType.int64), (2, -3, -2, DType.int32),
                                                (0.5, 2.0, 0.25, DType.float32)])
def test_range_static(run, start, stop, step, dt):
    out = run(lambda v: ops.range(start, stop, step, dtype=dt), np.zeros(1, np.float32))
    ref = np.arange(start, stop, step, dtype=dt.to_numpy())
    assert out.dtype == ref.dtype
    np.testing.assert_allclose(out, ref)


def test_range_from_tensors(run):
    out = run(lambda a, b: ops.range(a, b, 1, out_dim=4), np.array(3, np.int64),
              np.array(7, np.int64))
    np.testing.assert_array_equal(out, [3, 4, 5, 6])


def test_range_needs_scalars():
    with Graph("bad", input_types=[TensorType(DType.int64, [2])]) as g:
        with pytest.raises(ValueError, match="start must be a scalar"):
            ops.range(g.inputs[0], 5, 1)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((2, 3, 4), (4, 2)), ((2, 1, 3, 4), (5, 4, 2)),
                                   ((4,), (4, 3)), ((3, 4), (4,))])
def test_matmul_broadcast(run, sa, sb):
    a = RNG.standard_normal(sa).astype(np.float32)
    b = RNG.standard_normal(sb).astype(np.float32)
    out1, out2 = run(lambda x, y: [ops.matmul(x, y), x @ y], a, b)
    np.testing.assert_allclose(out1, a @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out2, a @ b, rtol=1e-5, atol=1e-5)


def test_matmul_int_and_symbolic(build):
    model = build(lambda x, y: x @ y, [TensorType(DType.int32, ["m", 3]),
                                       TensorType(DType.int32, [3, 2])])
    b = np.arange(6, dtype=np.int32).reshape(3, 2)
    for m in (1, 4):
        a = np.arange(m * 3, dtype=np.int32).reshape(m, 3)
        np.testing.assert_array_equal(model.execute(a, b)[0].to_numpy(), a @ b)


def test_matmul_inner_dim_mismatch(build):
    with pytest.raises(kiln.KilnError, match="matmul"):
        build(ops.matmul, [TensorType(DType.float32, [2, 3]), TensorType(DType.float32, [4, 2])])


def test_outer(run):
    a, b = np.arange(3, dtype=np.float32), np.arange(4, dtype=np.float32) + 1
    np.testing.assert_array_equal(run(ops.outer, a, b), np.outer(a, b))


def test_print_writes_label(run, capfd):
    x = np.array([1.5, 2.0], np.float32)

    def f(v):
        ops.print(v * 2.0, label="twice")
        v.print("plain")
        return v + 1.0

    np.testing.assert_array_equal(run(f, x), x + 1)
    err = capfd.readouterr().err
    assert "twice:" in err and "3" in err and "plain:" in err


def test_transfer_to_cpu(run):
    x = np.arange(3, dtype=np.float32)
    a, b = run(lambda v: [ops.transfer_to(v, DeviceRef.CPU()), v.to(DeviceRef.CPU())], x)
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x)


def test_weights_and_constant_external(session):
    w = Weight("w", DType.float32, [3, 2])
    with Graph("wts", input_types=[TensorType(DType.float32, ["n", 3])]) as g:
        bias = ops.constant_external("b", TensorType(DType.float32, [2]))
        g.output(g.inputs[0] @ w + bias)
    wv = RNG.standard_normal((3, 2)).astype(np.float32)
    bv = np.array([1, -1], np.float32)
    model = session.load(g, weights_registry={"w": wv, "b": bv})
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    np.testing.assert_allclose(model.execute(x)[0].to_numpy(), x @ wv + bv, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [-1, 0])
def test_top_k_bottom_k(run, axis):
    x = RNG.permutation(24).astype(np.float32).reshape(4, 6)
    tv, ti, bv, bi = run(lambda v: [*ops.top_k(v, 3, axis), *ops.bottom_k(v, 2, axis)], x)
    order = np.argsort(-x, axis, kind="stable")
    np.testing.assert_array_equal(ti, np.take(order, range(3), axis))
    np.testing.assert_array_equal(tv, np.take_along_axis(x, ti, axis))
    asc = np.argsort(x, axis, kind="stable")
    np.testing.assert_array_equal(bi, np.take(asc, range(2), axis))
    assert ti.dtype == np.int64 and bv.dtype == np.float32


def test_top_k_too_large(build):
    with pytest.raises(kiln.KilnError, match="top_k"):
        build(lambda v: ops.top_k(v, 5)[0], [TensorType(DType.float32, [3])])


@pytest.mark.parametrize("ascending", [True, False])
def test_argsort(run, ascending):
    x = np.array([3.0, 1.0, 2.0, 1.0, 5.0], np.float32)
    ref = np.argsort(x if ascending else -x, kind="stable")
    out = run(lambda v: ops.argsort(v, ascending), x)
    np.testing.assert_array_equal(out, ref)


def test_random_uniform_and_gaussian(build):
    t = TensorType(DType.float32, [2000])

    def f(v):
        ops.random.set_seed(7)
        return [ops.random.uniform(t, range=(2, 4)) + v, ops.random.gaussian(t, 1.0, 0.5),
                ops.random.normal(t), ops.random.uniform(t, (2, 4))]

    model = build(f, [TensorType(DType.float32, [1])])
    u, g, n, u2 = [o.to_numpy() for o in model.execute(np.zeros(1, np.float32))]
    assert u.min() >= 2 and u.max() < 4 and abs(u.mean() - 3) < 0.1
    assert abs(g.mean() - 1) < 0.1 and abs(g.std() - 0.5) < 0.05
    assert abs(n.mean()) < 0.15 and not np.array_equal(u, u2)
    again = model.execute(np.zeros(1, np.float32))[0].to_numpy()
    np.testing.assert_array_equal(again, u)


def test_random_rejects_int_dtype(build):
    with pytest.raises(kiln.KilnError, match="random"):
        build(lambda v: ops.random.uniform(TensorType(DType.int32, [3])),
              [TensorType(DType.float32, [1])])


@pytest.mark.skipif(shutil.which("clang-19") is None and shutil.which("clang") is None,
                    reason="custom kernels are compiled with clang")
def test_custom_rms_norm_end_to_end(session):
    lib = os.path.join(REPO, "examples", "custom_ops", "rms_norm.c")
    x_t = TensorType(DType.float32, ["rows", 64])
    g_t = TensorType(DType.float32, [64])
    with Graph("rms", input_types=[x_t, g_t], custom_extensions=[lib]) as g:
        x, gamma = g.inputs
        (y,) = ops.custom("rms_norm", DeviceRef.CPU(), [x, gamma], [x_t],
                          parameters={"epsilon": 1e-6})
        g.output(ops.silu(y))
    model = session.load(g)
    gamma = RNG.standard_normal(64).astype(np.float32)
    for rows in (1, 3):
        xv = RNG.standard_normal((rows, 64)).astype(np.float32)
        n = xv / np.sqrt((xv * xv).mean(-1, keepdims=True) + 1e-6) * gamma
        np.testing.assert_allclose(model.execute(xv, gamma)[0].to_numpy(),
                                   n / (1 + np.exp(-n)), rtol=1e-4, atol=1e-5)


def test_custom_unknown_symbol_names_it(session):
    lib = os.path.join(REPO, "examples", "custom_ops", "rms_norm.c")
    t = TensorType(DType.float32, [4])
    with Graph("nosym", input_types=[t], custom_extensions=[lib]) as g:
        g.output(ops.custom("no_such_kernel", DeviceRef.CPU(), [g.inputs[0]], [t])[0])
    with pytest.raises(kiln.KilnError, match="no_such_kernel"):
        session.load(g)


def test_custom_with_two_results(session):
    lib = os.path.join(REPO, "tests", "python", "kernels", "row_min_max.c")
    t = TensorType(DType.float32, ["rows", 5])
    with Graph("two", input_types=[t], custom_extensions=[lib]) as g:
        lo, hi = ops.custom("row_min_max", DeviceRef.CPU(), [g.inputs[0]],
                            [TensorType(DType.float32, ["rows"])] * 2)
        g.output(lo, hi)
    model = session.load(g)
    x = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    a, b = [o.to_numpy() for o in model.execute(x)]
    np.testing.assert_array_equal(a, x.min(1))
    np.testing.assert_array_equal(b, x.max(1))
    with Graph("none", input_types=[t]) as g:
        with pytest.raises(ValueError, match="out_types is empty"):
            ops.custom("row_min_max", DeviceRef.CPU(), [g.inputs[0]], [])


def test_inplace_custom_returns_the_updated_copy(session):
    lib = os.path.join(REPO, "examples", "custom_ops", "rms_norm.c")
    x_t, g_t = TensorType(DType.float32, [2, 64]), TensorType(DType.float32, [64])
    with Graph("rms_inplace", input_types=[x_t, g_t], custom_extensions=[lib]) as g:
        (y,) = ops.inplace_custom("rms_norm", DeviceRef.CPU(), list(g.inputs),
                                  parameters={"epsilon": 1e-6})
        g.output(y, g.inputs[0] + 0.0)
    xv = RNG.standard_normal((2, 64)).astype(np.float32)
    gamma = np.ones(64, np.float32)
    y, x_after = [o.to_numpy() for o in session.load(g).execute(xv, gamma)]
    np.testing.assert_allclose(y, xv / np.sqrt((xv * xv).mean(-1, keepdims=True) + 1e-6),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(x_after, xv)
