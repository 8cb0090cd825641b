"""kiln.graph buffers: BufferType inputs changed in place (numpy arrays and
kiln Tensors), the chain orders loads and stores, a KV-cache append by
slices with a position from data, buffer_create, inplace_custom on a buffer,
and the refusals (a read-only array, a buffer output)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from kiln.dtype import DType
from kiln.graph import BufferType, BufferValue, DeviceRef, Graph, TensorType, ops

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_buffer_input_is_changed_in_place_and_loads_follow_the_chain(session):
    bt, xt = BufferType(DType.float32, [4]), TensorType(DType.float32, [4])
    with Graph("acc", input_types=[bt, xt]) as g:
        buf, x = g.inputs
        assert isinstance(buf, BufferValue) and buf.type == bt
        old = ops.buffer_load(buf)
        ops.buffer_store(buf, old + x)
        g.output(ops.buffer_load(buf) * 2.0, old)
    assert "!mo.buffer<[4], f32>" in str(g) and "mo.mutable.store" in str(g)
    model = session.load(g)
    acc = np.zeros(4, np.float32)
    x = np.arange(4, dtype=np.float32)
    for k in range(1, 4):
        doubled, before = [o.to_numpy() for o in model.execute(acc, x)]
        np.testing.assert_array_equal(acc, k * x)
        np.testing.assert_array_equal(doubled, 2 * k * x)
        np.testing.assert_array_equal(before, (k - 1) * x)


def test_a_kv_cache_appends_at_a_position_given_as_data(session):
    ct = BufferType(DType.float32, [2, 8, 3])
    nt = TensorType(DType.float32, [2, "n", 3])
    pt = TensorType(DType.int64, [])
    with Graph("kv", input_types=[ct, nt, pt]) as g:
        cache, new, pos = g.inputs
        cache[:, pos:, :] = new
        g.output(ops.buffer_load(cache))
    model = session.load(g)
    cache = np.zeros((2, 8, 3), np.float32)
    want = np.zeros_like(cache)
    at = 0
    rng = np.random.default_rng(7)
    for n in (3, 1, 2):
        new = rng.standard_normal((2, n, 3)).astype(np.float32)
        (out,) = model.execute(cache, new, np.array(at, np.int64))
        want[:, at:at + n] = new
        at += n
        np.testing.assert_array_equal(cache, want)
        np.testing.assert_array_equal(out.to_numpy(), want)
    with pytest.raises(Exception, match="outside the buffer"):
        model.execute(cache, np.ones((2, 2, 3), np.float32), np.array(7, np.int64))


def test_buffer_create_and_inplace_custom_on_a_buffer(session):
    lib = os.path.join(REPO, "examples", "custom_ops", "rms_norm.c")
    bt, gt = BufferType(DType.float32, [2, 64]), TensorType(DType.float32, [64])
    with Graph("rms_buf", input_types=[bt, gt], custom_extensions=[lib]) as g:
        buf, gamma = g.inputs
        scratch = ops.buffer_create(TensorType(DType.float32, [2, 64]))
        ops.buffer_store(scratch, ops.buffer_load(buf))
        assert ops.inplace_custom("rms_norm", DeviceRef.CPU(), [buf, gamma],
                                  parameters={"epsilon": 1e-6}) == []
        g.output(ops.buffer_load(scratch))
    xv = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
    x = xv.copy()
    (kept,) = session.load(g).execute(x, np.ones(64, np.float32))
    np.testing.assert_array_equal(kept.to_numpy(), xv)
    np.testing.assert_allclose(x, xv / np.sqrt((xv * xv).mean(-1, keepdims=True) + 1e-6),
                               rtol=1e-4, atol=1e-5)


def test_a_read_only_array_is_refused_as_a_buffer(session):
    with Graph("ro", input_types=[BufferType(DType.float32, [3])]) as g:
        ops.buffer_store(g.inputs[0], ops.buffer_load(g.inputs[0]) + 1.0)
        g.output(ops.buffer_load(g.inputs[0]))
    model = session.load(g)
    ro = np.zeros(3, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match=r"^input 0 \(\w+\) is a buffer the model changes in place"):
        model.execute(ro)
    with pytest.raises(ValueError, match="changes in place"):
        model.execute(np.zeros(6, np.float32)[::2])
    with pytest.raises(Exception, match=r"input 0 \(\w+\)"):  # not an array at all
        model.execute(object())


def test_a_buffer_is_not_an_output_or_an_operand_of_a_tensor_op():
    with Graph("bad", input_types=[BufferType(DType.float32, [3])]) as g:
        with pytest.raises(TypeError):
            ops.relu(g.inputs[0])
        with pytest.raises(Exception, match="buffer"):
            g._g.set_outputs([g.inputs[0]._v])
