"""kiln's Python API on a real GPU (``Accelerator()``): graphs compiled for
it give the CPU's results, tensors move to it and back, a device-resident
input is read in place, and its profile accounts for the executes' time.
Skipped where no CUDA / HIP device is present (tools/gpu_check.sh runs it
on a GPU machine)."""

import numpy as np
import pytest

from kiln.driver import CPU, Accelerator, Tensor, accelerator_count
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import Graph, TensorType, ops

pytestmark = pytest.mark.skipif(accelerator_count() == 0, reason="no CUDA / HIP device here")


def mlp_graph() -> Graph:
    types = [TensorType(DType.float32, ["batch", 64]), TensorType(DType.float32, [64, 96]),
             TensorType(DType.float32, [96, 32])]
    with Graph("mlp", input_types=types) as g:
        x, w1, w2 = g.inputs
        g.output(ops.softmax(ops.matmul(ops.relu(ops.matmul(x, w1)), w2)))
    return g


def inputs(batch: int) -> list[np.ndarray]:
    rng = np.random.default_rng(batch)
    return [rng.standard_normal(s).astype(np.float32) for s in ((batch, 64), (64, 96), (96, 32))]


def test_a_graph_on_the_accelerator_matches_the_cpu() -> None:
    gpu = InferenceSession(devices=[Accelerator()], cache_dir=None).load(mlp_graph())
    cpu = InferenceSession(devices=[CPU()], cache_dir=None).load(mlp_graph())
    for batch in (1, 7, 128):  # one import, every batch
        ins = inputs(batch)
        (want,) = cpu.execute(*ins)
        (got,) = gpu.execute(*ins)
        np.testing.assert_allclose(got.to_numpy(), want.to_numpy(), rtol=1e-4, atol=1e-6)


def test_tensors_move_to_the_accelerator_and_back() -> None:
    dev = Accelerator()
    a = np.arange(24, dtype=np.float32).reshape(4, 6) - 12
    t = Tensor.from_numpy(a).to(dev)
    assert not t.is_host and t.device == dev
    np.testing.assert_array_equal(t.to_numpy(), a)
    with Graph("relu", input_types=[TensorType(DType.float32, ["n", 6])]) as g:
        g.output(ops.relu(g.inputs[0]))
    model = InferenceSession(devices=[dev], cache_dir=None).load(g)
    for x in (a, t):  # a host input, then one already on the device
        (y,) = model.execute(x)
        np.testing.assert_array_equal(y.to_numpy(), np.maximum(a, 0))


def test_a_data_error_on_the_accelerator_names_the_op() -> None:
    types = [TensorType(DType.float32, [8, 4]), TensorType(DType.int64, [3])]
    with Graph("gather", input_types=types) as g:
        g.output(ops.gather(g.inputs[0], g.inputs[1], axis=0))
    model = InferenceSession(devices=[Accelerator()], cache_dir=None).load(g)
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    (y,) = model.execute(x, np.array([0, 7, 3], dtype=np.int64))
    np.testing.assert_array_equal(y.to_numpy(), x[[0, 7, 3]])
    with pytest.raises(Exception, match="gather"):
        model.execute(x, np.array([0, 8, 3], dtype=np.int64))


def test_the_accelerators_profile_accounts_for_its_executes() -> None:
    model = InferenceSession(devices=[Accelerator()], cache_dir=None).load(mlp_graph())
    ins = inputs(64)
    model.execute(*ins)
    model.set_profile(True)
    for _ in range(5):
        model.execute(*ins)
    p = model.profile()
    assert p.executes == 5
    rows = {r.kernel: r for r in p if r.node < 0}
    assert set(rows) == {"copy in", "copy out", "launches and waits"}
    assert any(r.kernel.startswith("mo.matmul") for r in p if r.node >= 0)
    total = sum(r.total_ms for r in p)
    assert abs(total - p.execute_ms) <= 1e-6 * p.execute_ms + 1e-9, (total, p.execute_ms)
