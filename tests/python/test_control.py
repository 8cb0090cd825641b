"""kiln.graph.ops control flow: cond, while_loop, Graph.add_subgraph and
ops.call (kiln's mo.if, mo.while, mo.call), built from Python and run."""

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
