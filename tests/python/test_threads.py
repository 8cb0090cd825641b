"""Threads: compile and execute release the GIL, so other Python threads run
meanwhile, and one model serves several threads at once."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import Graph, TensorType, ops


def matmul_graph(n):
    with Graph("mm", input_types=[TensorType(DType.float32, [n, n]),
                                  TensorType(DType.float32, [n, n])]) as g:
        g.output(ops.matmul(g.inputs[0], g.inputs[1]))
    return g


def test_execute_releases_the_gil():
    model = InferenceSession(num_threads=1, cache_dir=None).load(matmul_graph(768))
    a = np.ones((768, 768), np.float32)
    stop, count = threading.Event(), [0]

    def spin():
        while not stop.is_set():
            count[0] += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        model.execute(a, a)  # warm
        before = count[0]
        for _ in range(3):  # tens of ms each: while the GIL is held, count cannot move
            (y,) = model.execute(a, a)
        moved = count[0] - before
    finally:
        stop.set()
        spinner.join()
    assert y.to_numpy()[0, 0] == 768
    assert moved > 1000, f"the spinning thread ran {moved} times during three executes"


def test_one_model_many_threads():
    with Graph("affine", input_types=[TensorType(DType.float32, ["n", 8])]) as g:
        g.output(ops.add(ops.mul(g.inputs[0], 2.0), 1.0))
    model = InferenceSession(num_threads=1, cache_dir=None).load(g)

    def run(i):
        x = np.full((i % 5 + 1, 8), float(i), np.float32)
        for _ in range(20):
            (y,) = model.execute(x)
            np.testing.assert_array_equal(y.to_numpy(), x * 2 + 1)
        return i

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(run, range(16))) == list(range(16))


def test_compiles_in_parallel_threads():
    session = InferenceSession(num_threads=1, cache_dir=None)
    with ThreadPoolExecutor(2) as pool:
        models = list(pool.map(lambda n: session.load(matmul_graph(n)), (8, 16)))
    for n, m in zip((8, 16), models):
        (y,) = m.execute(np.eye(n, dtype=np.float32), np.eye(n, dtype=np.float32))
        np.testing.assert_array_equal(y.to_numpy(), np.eye(n))
