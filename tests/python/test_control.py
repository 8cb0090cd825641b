"""kiln.graph.ops control flow: cond, while_loop, Graph.add_subgraph and
ops.call (kiln's mo.if, mo.while, mo.call), built from Python and run; cond
branches that read values of the enclosing graphs (MAX's closures)."""

from __future__ import annotations

import numpy as np
import pytest

from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import DeviceRef, Graph, TensorType, ops


def run(graph, *inputs):
    model = InferenceSession(num_threads=1).load(graph)
    return [r.to_numpy() for r in model.execute(*inputs)]


@pytest.mark.parametrize("p", [True, False])
def test_cond_returns_the_branch_its_predicate_picks(p):
    with Graph("cond", input_types=[TensorType(DType.bool, [], DeviceRef.CPU())]) as g:
        out = ops.cond(g.inputs[0], [TensorType(DType.int32, [], DeviceRef.CPU())],
                       lambda: ops.constant(1, DType.int32, device=DeviceRef.CPU()),
                       lambda: ops.constant(0, DType.int32, device=DeviceRef.CPU()))
        g.output(*out)
    assert run(g, np.array(p))[0] == (1 if p else 0)


F = TensorType(DType.float32, ["n"], DeviceRef.CPU())
B = TensorType(DType.bool, [], DeviceRef.CPU())


def _closure_graph():
    """Branches reading x, y and a value computed outside (z), in different
    orders and with a constant of their own."""
    with Graph("closure", input_types=[B, F, TensorType(DType.float32, ["m"])]) as g:
        p, x, y = g.inputs
        z = x * 2.0
        out = ops.cond(p, [F], lambda: z * x + 1.0, lambda: x - ops.sum(y, 0))
        g.output(*out)
    return g


@pytest.mark.parametrize("p", [True, False])
def test_cond_branches_read_values_of_the_enclosing_graph(p):
    g = _closure_graph()
    x, y = np.array([1, -2, 3], np.float32), np.arange(5, dtype=np.float32)
    want = 2 * x * x + 1 if p else x - y.sum()
    np.testing.assert_array_equal(run(g, np.array(p), x, y)[0], want)
    # the captured values are mo.if's operands and both branches' inputs, and
    # the text reads back to the same graph
    text = str(g)
    assert text.count("%capture2: !mo.tensor<[m], f32>") == 2, text
    again = Graph.from_text(text)
    assert str(again) == text
    np.testing.assert_array_equal(run(again, np.array(p), x, y)[0], want)


@pytest.mark.parametrize("p, q", [(True, True), (True, False), (False, True)])
def test_a_nested_cond_reads_the_outer_graph_and_its_own_branch(p, q):
    t = TensorType(DType.float32, [3], DeviceRef.CPU())
    with Graph("nested", input_types=[B, B, t]) as g:
        a, b, x = g.inputs
        ten = x + 10.0

        def outer_then():
            h = x * 3.0  # a value of this branch, read by the inner one
            return ops.cond(b, [t], lambda: h + ten, lambda: h - x)[0]

        g.output(*ops.cond(a, [t], outer_then, lambda: -ten))
    xv = np.array([1, 2, 3], np.float32)
    want = (3 * xv + xv + 10 if q else 2 * xv) if p else -(xv + 10)
    np.testing.assert_array_equal(run(g, np.array(p), np.array(q), xv)[0], want)


def test_a_cond_inside_a_loop_body_cannot_read_the_graph_outside_the_loop():
    t = TensorType(DType.int64, [], DeviceRef.CPU())
    with Graph("loop", input_types=[t, t]) as g:
        i0, outer = g.inputs
        with pytest.raises(Exception, match="another graph"):
            ops.while_loop(i0, lambda i: i < 3,
                           lambda i: ops.cond(i > 0, [t], lambda: i + outer, lambda: i + 1))


def test_while_loop_trip_count_comes_from_an_input():
    t = TensorType(DType.int64, [], DeviceRef.CPU())
    with Graph("loop", input_types=[t]) as g:
        zero = ops.constant(0, DType.int64, device=DeviceRef.CPU())
        i, n, acc = ops.while_loop((zero, g.inputs[0], zero),
                                   lambda i, n, acc: i < n,
                                   lambda i, n, acc: [i + 1, n, acc + i])
        g.output(i, acc)
    i, acc = run(g, np.array(7, np.int64))
    assert i == 7 and acc == sum(range(7))


def test_a_subgraph_called_three_times_with_different_weights():
    x_t = TensorType(DType.float32, [2, 4], DeviceRef.CPU())
    w_t = TensorType(DType.float32, [4, 4], DeviceRef.CPU())
    with Graph("model", input_types=[x_t, w_t, w_t, w_t]) as g:
        layer = g.add_subgraph("layer", lambda x, w: ops.relu(x @ w) + x,
                               input_types=[x_t, w_t])
        y = g.inputs[0]
        for w in g.inputs[1:]:
            y = ops.call(layer, y, w)
        g.output(y)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    ws = [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(3)]
    want = x
    for w in ws:
        want = np.maximum(want @ w, 0) + want
    np.testing.assert_allclose(run(g, x, *ws)[0], want, rtol=1e-5, atol=1e-5)
    assert str(g).count("mo.call @layer") == 3


def test_a_region_that_reads_an_outer_value_is_refused():
    t = TensorType(DType.int64, [], DeviceRef.CPU())
    with Graph("loop", input_types=[t, t]) as g:
        outer = g.inputs[1]
        with pytest.raises(Exception, match="another graph"):
            ops.while_loop(g.inputs[0], lambda i: i < outer, lambda i: i + 1)


def test_a_call_inside_a_loop_body_finds_the_subgraph_in_the_module():
    i_t = TensorType(DType.int64, [], DeviceRef.CPU())
    x_t = TensorType(DType.float32, [4], DeviceRef.CPU())
    with Graph("m", input_types=[i_t, x_t]) as g:
        dbl = g.add_subgraph("dbl", lambda x: x + x, input_types=[x_t])
        i, x = ops.while_loop((g.inputs[0], g.inputs[1]), lambda i, x: i > 0,
                              lambda i, x: [i - 1, ops.call(dbl, x)])
        g.output(i, x)
    i, x = run(g, np.array(3, np.int64), np.arange(4, dtype=np.float32))
    assert i == 0
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32) * 8)
    text = str(g)
    assert text.count("mo.graph @dbl") == 1 and "mo.call @dbl" in text
