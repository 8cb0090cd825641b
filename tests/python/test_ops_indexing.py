"""kiln.graph.ops indexing against numpy: TensorValue slicing (ints, steps,
..., None, negative indices), slice_tensor, gathers, scatters,
masked_scatter and nonzero, and index errors."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.graph import Graph, TensorType, ops

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5)

INDICES = {
    "ellipsis_head": (Ellipsis, slice(None, 4)),
    "start_step": (slice(1, None), slice(None, None, 2)),
    "new_axis": (None,),
    "int": (1,),
    "neg_int": (-1,),
    "int_middle": (slice(None), -2),
    "neg_slice": (slice(-2, None), slice(None, -1)),
    "reverse": (slice(None, None, -1),),
    "reverse_step": (slice(None), slice(None, None, -2), slice(3, 0, -1)),
    "none_mix": (0, None, Ellipsis, None, 2),
    "ellipsis_int": (Ellipsis, 3),
    "clamped": (slice(1, 100), slice(-100, 2)),
    "empty": (slice(2, 1),),
    "ints_all": (2, 3, 4),
}


@pytest.mark.parametrize("idx", list(INDICES.values()), ids=list(INDICES))
def test_getitem_like_numpy(run, idx):
    out = run(lambda v: v[idx], X)
    ref = X[idx]
    assert out.shape == ref.shape
    np.testing.assert_array_equal(out, ref)


def test_slice_tensor_function(run):
    out = run(lambda v: ops.slice_tensor(v, [slice(None, None, -1), Ellipsis, None]), X)
    np.testing.assert_array_equal(out, X[::-1, ..., None])


def test_getitem_symbolic_batch(build):
    model = build(lambda v: [v[..., :2], v[1:, ::2], v[-1]], [TensorType(DType.float32,
                                                                          ["batch", 4])])
    for n in (2, 5):
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        a, b, c = [o.to_numpy() for o in model.execute(x)]
        np.testing.assert_array_equal(a, x[..., :2])
        np.testing.assert_array_equal(b, x[1:, ::2])
        np.testing.assert_array_equal(c, x[-1])


def test_getitem_tensor_bounds_bind_a_dim(build):
    """MAX's (slice, out_dim) with bounds from graph inputs: the result's dim
    is the symbol, bound from the data at each execute (negative too)."""
    types = [TensorType(DType.float32, [4, 6]), TensorType(DType.int64, [1]),
             TensorType(DType.int64, [1])]
    model = build(lambda v, lo, hi: v[1:, (slice(lo, hi), "k")], types)
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for lo, hi in ((0, 6), (1, 4), (2, -1), (5, 2)):
        out = model.execute(x, np.array([lo], np.int64), np.array([hi], np.int64))[0]
        np.testing.assert_array_equal(out.to_numpy(), x[1:, lo:hi])


def test_getitem_tensor_bounds_refused():
    with Graph("bad", input_types=[TensorType(DType.float32, [3, 4]),
                                   TensorType(DType.float32, [1])]) as g:
        x, f = g.inputs
        with pytest.raises(TypeError, match="a TensorValue bound"):
            x[(slice(0, 2), "k")]
        with pytest.raises(TypeError, match="si32 / si64"):
            x[(slice(0, f), "k")]


def test_getitem_errors():
    with Graph("bad", input_types=[TensorType(DType.float32, [3, 4])]) as g:
        x = g.inputs[0]
        with pytest.raises(IndexError, match="index 3 is out of range for axis 0 of size 3"):
            x[3]
        with pytest.raises(IndexError, match="too many indices"):
            x[0, 0, 0]
        with pytest.raises(IndexError, match="one ellipsis"):
            x[..., ...]
        with pytest.raises(ValueError, match="step must be a nonzero int"):
            x[::0]
        with pytest.raises(TypeError, match="an index is an int"):
            x["a"]


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather(run, axis):
    idx = np.array([[0, 2], [1, -1]], np.int64)
    out = run(lambda v, i: ops.gather(v, i, axis), X, idx)
    np.testing.assert_array_equal(out, np.take(X, idx, axis))


def test_gather_list_indices_and_int32(run):
    idx = np.array([2, 0], np.int32)
    a, b = run(lambda v, i: [ops.gather(v, [1, 1], axis=0), ops.gather(v, i, axis=1)], X, idx)
    np.testing.assert_array_equal(a, X[[1, 1]])
    np.testing.assert_array_equal(b, X[:, [2, 0]])


def test_gather_float_indices_is_a_dtype_error(build):
    with pytest.raises(kiln.DTypeError, match="indices"):
        build(lambda v, i: ops.gather(v, i, 0),
              [TensorType(DType.float32, [3]), TensorType(DType.float32, [2])])


def test_gather_out_of_range_is_an_execution_error(run):
    with pytest.raises(kiln.KilnError, match="gather"):
        run(lambda v, i: ops.gather(v, i, 0), X, np.array([5], np.int64))


def test_gather_nd(run):
    idx = np.array([[0, 1], [2, 3]], np.int64)
    np.testing.assert_array_equal(run(lambda v, i: ops.gather_nd(v, i), X, idx),
                                  X[idx[:, 0], idx[:, 1]])


def test_gather_nd_batch_dims(run):
    idx = np.array([[[1]], [[3]], [[0]]], np.int64)  # [3, 1, 1]
    out = run(lambda v, i: ops.gather_nd(v, i, batch_dims=1), X, idx)
    np.testing.assert_array_equal(out, np.stack([X[b, idx[b, :, 0]] for b in range(3)]))


def test_gather_elements(run):
    idx = np.array([[0, 4, 1], [2, 2, 3]], np.int64)
    x = X[0, :2]
    np.testing.assert_array_equal(run(lambda v, i: ops.gather_elements(v, i, -1), x, idx),
                                  np.take_along_axis(x, idx, -1))


SCATTER = [(ops.scatter, None), (ops.scatter_add, np.add), (ops.scatter_mul, np.multiply),
           (ops.scatter_max, np.maximum), (ops.scatter_min, np.minimum)]


@pytest.mark.parametrize("op,combine", SCATTER, ids=[s[0].__name__ for s in SCATTER])
def test_scatter(run, op, combine):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    upd = np.array([[10, -1], [20, 7]], np.float32)
    idx = np.array([[3, 0], [1, 1]], np.int64)
    ref = x.copy()
    for r in range(2):
        for c in range(2):
            j = idx[r, c]
            ref[r, j] = upd[r, c] if combine is None else combine(ref[r, j], upd[r, c])
    np.testing.assert_array_equal(run(lambda a, u, i: op(a, u, i, axis=-1), x, upd, idx), ref)


def test_scatter_nd_family(run):
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    upd = np.array([[1, 1, 1, 1], [2, 2, 2, 2]], np.float32)
    idx = np.array([[2], [0]], np.int64)
    a, b, c = run(lambda v, u, i: [ops.scatter_nd(v, u, i), ops.scatter_nd_add(v, u, i),
                                   ops.scatter_nd_max(v, u, i)], x, upd, idx)
    ref = x.copy()
    ref[[2, 0]] = upd
    np.testing.assert_array_equal(a, ref)
    ref = x.copy()
    ref[[2, 0]] += upd
    np.testing.assert_array_equal(b, ref)
    ref = x.copy()
    ref[[2, 0]] = np.maximum(ref[[2, 0]], upd)
    np.testing.assert_array_equal(c, ref)


def test_masked_scatter(run):
    x = np.zeros((2, 3), np.float32)
    mask = np.array([[True, False, True], [False, True, False]])
    upd = np.array([1, 2, 3, 4], np.float32)
    out = run(lambda v, m, u: ops.masked_scatter(v, m, u, "n"), x, mask, upd)
    ref = x.copy()
    ref[mask] = upd[:3]
    np.testing.assert_array_equal(out, ref)


def test_nonzero(build):
    model = build(lambda v: ops.nonzero(v, "nz"), [TensorType(DType.float32, ["n", 3])])
    for x in (np.array([[0, 1, 0], [2, 0, 3]], np.float32), np.zeros((1, 3), np.float32)):
        out = model.execute(x)[0].to_numpy()
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, np.argwhere(x))
