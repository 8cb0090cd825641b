#!/usr/bin/env python3
"""python_overhead.py - what kiln's Python ``model.execute`` costs over the C call,
beside ONNX Runtime's Python ``session.run``, all in one run.

The model is the one bench_chain times for its execute overhead
(overhead_relu16): relu over 16 f32, one op, one thread.

  - C execute: bench_chain's overhead_relu16 row (kiln_model_execute with
    preallocated, borrowed input and output tensors), run as a subprocess
    (--bench-chain, or build-bench/bench_chain, build/bench_chain).
  - Python execute: ``model.execute(x)`` from ``kiln.engine`` in this
    interpreter (kiln must import: PYTHONPATH=python with the extension
    built, or an installed wheel), x a numpy array (read in place), and
    again with x already a kiln Tensor. Each call returns a new output
    Tensor (kiln allocates it: the Python API has no preallocated outputs).
  - ORT Python run: ``session.run(None, {"x": x})`` on the same graph as a
    1-node ONNX model (intra/inter-op threads 1, sequential), in the Python
    that has onnx and onnxruntime (--ort-python; default: the anchors' venv,
    $KILN_MAX_VENV or ~/.cache/kiln-anchors/max-venv).

Each sample is the mean of a batch of back-to-back calls; the table shows
the median over samples in microseconds per call. The goal (the Python
API's issue): Python execute <= C execute + 3 us.

usage: python3 bench/python_overhead.py [--quick] [--tsv] [--bench-chain PATH]
                                        [--ort-python PATH]
  --tsv: also print R <case> <engine> <threads> us <samples> <min> <median> <max>
         lines, bench_chain's format.
Exit status: 0, or 1 when a part could not be measured or the output is wrong.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BATCH = 32
GOAL_US = 3.0

# The ORT side, run by the Python that has onnxruntime: argv[1] = samples.
ORT_SCRIPT = r"""
import statistics, sys, time
import numpy as np
import onnx
from onnx import TensorProto, helper
import onnxruntime as ort

samples, batch = int(sys.argv[1]), int(sys.argv[2])
x_info = helper.make_tensor_value_info("x", TensorProto.FLOAT, [16])
y_info = helper.make_tensor_value_info("y", TensorProto.FLOAT, [16])
graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu16", [x_info], [y_info])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
x = (np.arange(16, dtype=np.float32) - 8)
feed = {"x": x}
run = sess.run
for _ in range(1000):
    y = run(None, feed)
assert np.array_equal(y[0], np.maximum(x, 0)), y
t = []
clock = time.perf_counter_ns
for _ in range(samples):
    t0 = clock()
    for _ in range(batch):
        run(None, feed)
    t.append((clock() - t0) / batch / 1000.0)
print("ORT", ort.__version__, min(t), statistics.median(t), max(t))
"""


def default_ort_python() -> str:
    venv = os.environ.get("KILN_MAX_VENV") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
        "kiln-anchors", "max-venv")
    return os.path.join(venv, "bin", "python")


def default_bench_chain() -> str | None:
    for d in ("build-bench", "build"):
        p = REPO / d / "bench_chain"
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def time_calls(f, arg, samples: int) -> list[float]:
    """us per call of f(arg): one sample per batch of BATCH calls."""
    clock = time.perf_counter_ns
    t = []
    for _ in range(samples):
        t0 = clock()
        for _ in range(BATCH):
            f(arg)
        t.append((clock() - t0) / BATCH / 1000.0)
    return t


def kiln_python(samples: int) -> dict[str, list[float]]:
    import numpy as np

    from kiln.driver import CPU, Tensor
    from kiln.dtype import DType
    from kiln.engine import InferenceSession
    from kiln.graph import Graph, TensorType, ops

    with Graph("relu16", input_types=[TensorType(DType.float32, [16])]) as g:
        g.output(ops.relu(g.inputs[0]))
    model = InferenceSession(devices=[CPU()], num_threads=1).load(g)
    x = np.arange(16, dtype=np.float32) - 8
    xt = Tensor.from_numpy(x)
    execute = model.execute  # the C method itself (kiln.engine binds it per model)
    for _ in range(1000):
        y = execute(x)
        execute(xt)
    if not np.array_equal(y[0].to_numpy(), np.maximum(x, 0)):
        raise SystemExit(f"python_overhead: kiln's relu output is wrong: {y[0].to_numpy()}")
    return {"numpy": time_calls(execute, x, samples), "tensor": time_calls(execute, xt, samples)}


def c_execute(bench_chain: str, quick: bool) -> tuple[list[float], str]:
    """(min, median, max) of bench_chain's overhead_relu16 row (1 thread)."""
    cmd = [bench_chain, "--tsv", "--n", "4096"] + (["--quick"] if quick else [])
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-300:]}")
    for ln in p.stdout.splitlines():
        f = ln.split("\t")
        if f[:4] == ["R", "overhead_relu16", "kiln", "1"] and f[4] == "us":
            return [float(f[6]), float(f[7]), float(f[8])], f[5]
    raise RuntimeError(f"{bench_chain}: no overhead_relu16 kiln 1 row")


def ort_python(python: str, samples: int) -> tuple[list[float], str]:
    p = subprocess.run([python, "-c", ORT_SCRIPT, str(samples), str(BATCH)],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{python}: ORT part exited {p.returncode}: "
                           f"{p.stderr.strip()[-300:]}")
    f = p.stdout.split()
    i = f.index("ORT")
    return [float(f[i + 2]), float(f[i + 3]), float(f[i + 4])], f[i + 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the calls")
    ap.add_argument("--tsv", action="store_true", help="also print R lines")
    ap.add_argument("--bench-chain", default=os.environ.get("KILN_BENCH_CHAIN"),
                    help="bench_chain binary (default: build-bench/, build/)")
    ap.add_argument("--ort-python", default=None,
                    help="a Python with numpy, onnx and onnxruntime")
    a = ap.parse_args()
    samples = 625 if a.quick else 6250  # bench_chain's 20000 / 200000 calls in batches of 32

    rows: list[tuple[str, str, list[float] | None, str, str]] = []  # label, engine, mmm, n, note
    ok = True

    def stats(t: list[float]) -> list[float]:
        return [min(t), statistics.median(t), max(t)]

    chain = a.bench_chain or default_bench_chain()
    c = None
    try:
        if not chain:
            raise RuntimeError("no bench_chain (build it: make -C build-bench bench_chain, "
                               "or pass --bench-chain)")
        c, c_samples = c_execute(chain, a.quick)
        rows.append(("C kiln_model_execute", "kiln C", c, c_samples, f"bench_chain, {c_samples} samples"))
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
        rows.append(("C kiln_model_execute", "kiln C", None, "0", str(e)))
        ok = False

    py = kiln_python(samples)
    rows.append(("Python model.execute(numpy)", "kiln Python", stats(py["numpy"]),
                 str(samples), f"{samples} samples"))
    rows.append(("Python model.execute(Tensor)", "kiln Python Tensor", stats(py["tensor"]),
                 str(samples), f"{samples} samples"))

    ort_py = a.ort_python or default_ort_python()
    o = None
    try:
        o, ver = ort_python(ort_py, samples)
        rows.append(("ORT Python session.run", "ORT Python", o, str(samples), f"onnxruntime {ver}"))
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        rows.append(("ORT Python session.run", "ORT Python", None, "0", str(e)))
        ok = False

    print("execute overhead, relu [16] f32, 1 thread: us per call "
          f"(each sample the mean of {BATCH} calls)")
    print(f"  {'':30} {'min':>8} {'median':>8} {'max':>8}")
    for label, _, mmm, _, note in rows:
        if mmm is None:
            print(f"  {label:30} not measured: {note}")
        else:
            print(f"  {label:30} {mmm[0]:8.3f} {mmm[1]:8.3f} {mmm[2]:8.3f}   {note}")
    pm = statistics.median(py["numpy"])
    if c is not None:
        over = pm - c[1]
        print(f"  Python over C (median): {over:.3f} us (goal <= {GOAL_US:g} us: "
              f"{'met' if over <= GOAL_US else 'NOT met'})")
    if o is not None:
        print(f"  ORT session.run / kiln model.execute (median): {o[1] / pm:.2f}x")
    if a.tsv:
        for _, engine, mmm, n, _ in rows:
            if mmm is not None:
                print(f"R\tpython_overhead_relu16\t{engine}\t1\tus\t{n}\t"
                      f"{mmm[0]:.4f}\t{mmm[1]:.4f}\t{mmm[2]:.4f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
