"""kiln.graph.ops shape ops against numpy: reshape (-1, symbolic dims),
flatten, transpose / permute / .T, broadcast_to, concat, split, chunk,
stack, squeeze / unsqueeze, tile, rebind, shape_to_tensor,
repeat_interleave, as_interleaved_complex, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.graph import Dim, TensorType, ops

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("shape", [[6, 4], [-1, 4], [4, -1], [24], [-1], [2, 3, 2, 2], [1, 24]])
def test_reshape_static(run, shape):
    np.testing.assert_array_equal(run(lambda v: ops.reshape(v, shape), X), X.reshape(shape))


def test_reshape_method_and_int_dtype(run):
    x = np.arange(6, dtype=np.int64)
    out = run(lambda v: v.reshape((3, 2)), x)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, x.reshape(3, 2))


def test_reshape_symbolic_two_sizes(build):
    t = [TensorType(DType.float32, ["batch", 4])]
    model = build(lambda v: [ops.reshape(v, [-1]), ops.reshape(v, ["batch", 2, -1]),
                             ops.reshape(v, [-1, 2])], t)
    for n in (1, 3):
        x = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
        a, b, c = [o.to_numpy() for o in model.execute(x)]
        np.testing.assert_array_equal(a, x.reshape(-1))
        np.testing.assert_array_equal(b, x.reshape(n, 2, 2))
        np.testing.assert_array_equal(c, x.reshape(-1, 2))


def test_reshape_accepts_dims(run):
    out = run(lambda v: ops.reshape(v, [Dim(6), "4"]), X)
    np.testing.assert_array_equal(out, X.reshape(6, 4))


def test_reshape_wrong_count_names_the_shapes():
    from kiln.graph import Graph

    with Graph("bad", input_types=[TensorType(DType.float32, [2, 3])]) as g:
        with pytest.raises(ValueError, match=r"cannot reshape \[2, 3\] \(6 elements\)"):
            ops.reshape(g.inputs[0], [4, -1])
        with pytest.raises(kiln.KilnError, match="reshape"):
            ops.reshape(g.inputs[0], [4, 2])


@pytest.mark.parametrize("start,end", [(0, -1), (1, -1), (0, 1), (1, 2), (-2, -1)])
def test_flatten(run, start, end):
    s, e = start % 3, end % 3
    ref = X.reshape(X.shape[:s] + (-1,) + X.shape[e + 1:])
    np.testing.assert_array_equal(run(lambda v: ops.flatten(v, start, end), X), ref)


def test_flatten_symbolic(build):
    model = build(lambda v: v.flatten(), [TensorType(DType.float32, ["n", 3])])
    x = np.ones((5, 3), np.float32)
    assert model.execute(x)[0].to_numpy().shape == (15,)


@pytest.mark.parametrize("a,b", [(0, 1), (-1, -2), (0, 2), (2, -3)])
def test_transpose(run, a, b):
    np.testing.assert_array_equal(run(lambda v: ops.transpose(v, a, b), X), np.swapaxes(X, a, b))


def test_T_and_transpose_method(run):
    t1, t2 = run(lambda v: [v.T, v.transpose(0, 1)], X)
    np.testing.assert_array_equal(t1, np.swapaxes(X, -1, -2))
    np.testing.assert_array_equal(t2, np.swapaxes(X, 0, 1))


@pytest.mark.parametrize("dims", [[2, 0, 1], [0, 2, 1], [-1, 0, 1]])
def test_permute(run, dims):
    np.testing.assert_array_equal(run(lambda v: v.permute(dims), X), np.transpose(X, dims))


def test_permute_wrong_length():
    from kiln.graph import Graph

    with Graph("bad", input_types=[TensorType(DType.float32, [2, 3])]) as g:
        with pytest.raises(ValueError, match="3 entries for a rank 2"):
            ops.permute(g.inputs[0], [0, 1, 2])


@pytest.mark.parametrize("shape", [[3, 4], [2, 3, 4], [4, 1, 3, 4]])
def test_broadcast_to(run, shape):
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    if len(shape) == 4:
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(run(lambda v: v.broadcast_to(shape), x),
                                  np.broadcast_to(x, shape))


def test_broadcast_to_symbolic(build):
    t = [TensorType(DType.float32, ["batch", 1]), TensorType(DType.float32, [1, 3])]
    model = build(lambda a, b: ops.broadcast_to(b, [a.shape[0], 3]) + a, t)
    for n in (2, 4):
        a, b = np.ones((n, 1), np.float32), np.arange(3, dtype=np.float32)[None]
        np.testing.assert_array_equal(model.execute(a, b)[0].to_numpy(), a + b)


def test_broadcast_to_bad_shape_is_an_error(build):
    with pytest.raises(kiln.KilnError, match="broadcast"):
        build(lambda v: ops.broadcast_to(v, [3, 5]), [TensorType(DType.float32, [3, 4])])


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(run, axis):
    b = X + 100
    np.testing.assert_array_equal(run(lambda u, v: ops.concat([u, v, u], axis), X, b),
                                  np.concatenate([X, b, X], axis))


def test_concat_symbolic(build):
    t = [TensorType(DType.float32, ["n", 2]), TensorType(DType.float32, ["m", 2])]
    model = build(lambda a, b: ops.concat([a, b]), t)
    a, b = np.ones((2, 2), np.float32), np.zeros((3, 2), np.float32)
    np.testing.assert_array_equal(model.execute(a, b)[0].to_numpy(), np.concatenate([a, b]))


def test_concat_dtype_mismatch(build):
    with pytest.raises(kiln.DTypeError, match="concat"):
        build(lambda a, b: ops.concat([a, b]),
              [TensorType(DType.float32, [2]), TensorType(DType.int32, [2])])


@pytest.mark.parametrize("sizes,axis", [([1, 1], 0), ([1, 2], 1), ([2, 1, 1], -1)])
def test_split(run, sizes, axis):
    outs = run(lambda v: ops.split(v, sizes, axis), X)
    refs = np.split(X, np.cumsum(sizes)[:-1], axis)
    assert len(outs) == len(sizes)
    for o, r in zip(outs, refs):
        np.testing.assert_array_equal(o, r)


def test_split_with_symbolic_sizes(build):
    t = [TensorType(DType.float32, [2, "a + b"]), TensorType(DType.float32, ["a"]),
         TensorType(DType.float32, ["b"])]
    model = build(lambda v, x, y: [p + q for p, q in zip(ops.split(v, ["a", "b"], 1), (x, y))],
                  t)
    assert [o.dims for o in model.output_metadata] == [["2", "a"], ["2", "b"]]
    v = np.arange(10, dtype=np.float32).reshape(2, 5)
    p, q = [o.to_numpy() for o in model.execute(v, np.zeros(2, np.float32),
                                                 np.ones(3, np.float32))]
    np.testing.assert_array_equal(p, v[:, :2])
    np.testing.assert_array_equal(q, v[:, 2:] + 1)


def test_split_sizes_must_sum(build):
    with pytest.raises(kiln.KilnError, match="split"):
        build(lambda v: ops.split(v, [1, 1], 1), [TensorType(DType.float32, [2, 3])])


def test_chunk(run):
    outs = run(lambda v: ops.chunk(v, 2, axis=-1), X)
    for o, r in zip(outs, np.split(X, 2, -1)):
        np.testing.assert_array_equal(o, r)


def test_chunk_uneven():
    from kiln.graph import Graph

    with Graph("bad", input_types=[TensorType(DType.float32, [2, 3])]) as g:
        with pytest.raises(ValueError, match="do not evenly divide"):
            ops.chunk(g.inputs[0], 2, 1)


@pytest.mark.parametrize("axis", [0, 1, 3, -1, -4])
def test_stack(run, axis):
    b = X * 2
    np.testing.assert_array_equal(run(lambda u, v: ops.stack([u, v], axis), X, b),
                                  np.stack([X, b], axis))


def test_squeeze_unsqueeze(run):
    x = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    outs = run(lambda v: [ops.squeeze(v, 1), ops.squeeze(v, -2), ops.unsqueeze(v, 0),
                          ops.unsqueeze(v, -1), ops.unsqueeze(v, 2)], x)
    refs = [x[:, 0], x[:, 0], x[None], x[..., None], x[:, :, None]]
    for o, r in zip(outs, refs):
        np.testing.assert_array_equal(o, r)


def test_squeeze_non_one_is_an_error(build):
    with pytest.raises(kiln.KilnError, match="squeeze"):
        build(lambda v: ops.squeeze(v, 0), [TensorType(DType.float32, [2, 3])])


@pytest.mark.parametrize("reps", [[1, 1, 1], [2, 1, 3], [1, 2, 1]])
def test_tile(run, reps):
    np.testing.assert_array_equal(run(lambda v: ops.tile(v, reps), X), np.tile(X, reps))


def test_rebind(build):
    t = [TensorType(DType.float32, ["batch", 4])]
    model = build(lambda v: [v.rebind(["batch", 4]), ops.rebind(v, [3, 4])], t)
    x = np.ones((3, 4), np.float32)
    a, b = [o.to_numpy() for o in model.execute(x)]
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(b, x)


def test_rebind_wrong_rank():
    from kiln.graph import Graph

    with Graph("bad", input_types=[TensorType(DType.float32, [2, 3])]) as g:
        with pytest.raises(ValueError, match="rank 1, x has rank 2"):
            ops.rebind(g.inputs[0], [6])


def test_shape_to_tensor(build):
    t = [TensorType(DType.float32, ["batch", 3])]
    model = build(lambda v: [ops.shape_to_tensor(v), ops.shape_to_tensor(["batch", 5])], t)
    for n in (2, 6):
        a, b = [o.to_numpy() for o in model.execute(np.zeros((n, 3), np.float32))]
        assert a.dtype == np.int64
        np.testing.assert_array_equal(a, [n, 3])
        np.testing.assert_array_equal(b, [n, 5])


@pytest.mark.parametrize("repeats,axis", [(2, 0), (3, -1), (2, None)])
def test_repeat_interleave_int(run, repeats, axis):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(run(lambda v: ops.repeat_interleave(v, repeats, axis), x),
                                  np.repeat(x, repeats, axis))


def test_repeat_interleave_tensor(build):
    t = [TensorType(DType.float32, [2, 3]), TensorType(DType.int64, [3])]
    model = build(lambda v, r: ops.repeat_interleave(v, r, axis=1), t)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for reps in ([1, 0, 2], [3, 1, 1]):
        r = np.array(reps, np.int64)
        (y,) = model.execute(x, r)
        np.testing.assert_array_equal(y.to_numpy(), np.repeat(x, r, axis=1))
    flat = build(lambda v, r: ops.repeat_interleave(v, r, out_dim="total"),
                 [TensorType(DType.float32, [4]), TensorType(DType.int64, [4])])
    assert flat.output_metadata[0].dims == ["total"]
    r = np.array([2, 0, 1, 3], np.int64)
    y = flat.execute(np.arange(4, dtype=np.float32), r)[0].to_numpy()
    np.testing.assert_array_equal(y, np.repeat(np.arange(4), r))


def test_as_interleaved_complex(run):
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(run(ops.as_interleaved_complex, x), x.reshape(2, 2, 2))


def test_rebind_mismatch_at_run_time(build):
    model = build(lambda v: ops.rebind(v, [3, 4]), [TensorType(DType.float32, ["batch", 4])])
    with pytest.raises(kiln.ShapeError, match=r"mo\.reshape.*4 \* batch = 8"):
        model.execute(np.ones((2, 4), np.float32))


def test_split_of_a_symbolic_axis_checked_at_run_time(build):
    model = build(lambda v: ops.split(v, [1, 1])[1], [TensorType(DType.float32, ["batch", 2])])
    np.testing.assert_array_equal(model.execute(X[0, :2, :2])[0].to_numpy(), X[0, 1:2, :2])
    with pytest.raises(kiln.ShapeError, match=r"mo\.split.*batch = 3"):
        model.execute(np.ones((3, 2), np.float32))
