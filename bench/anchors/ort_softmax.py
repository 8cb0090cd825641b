"""ort_softmax.py - ONNX Runtime's side of bench_softmax (bench/softmax.c):
Softmax(axis=-1) on x [B, H, S, S] f32, and Softmax(x * 0.125 + mask) with
mask [1, 1, S, S], on one thread (intra_op_num_threads=1,
inter_op_num_threads=1, sequential, ORT_ENABLE_ALL), inputs and the output
bound once through io_binding so a timed call is only run_with_iobinding.

Prints one line per case in bench_softmax's formats (min / median / max
microseconds over the runs); --tsv: R <case> ort 1 us <runs> <min> <median>
<max>.

Assumes numpy, onnx and onnxruntime importable (the anchors venv,
bench/run_anchors.sh --install-max makes it).

usage: ort_softmax.py [--runs N] [--shape B,H,S] [--cpu-time] [--tsv]
  --cpu-time: time with the calling thread's CPU clock (ORT on one intra-op
  thread runs its kernels in the caller): steadier on a loaded machine
"""
import argparse
import time

import numpy as np


def model(shape, masked):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    b, h, s = shape
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, h, s, s])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, h, s, s])
    inputs, inits = [x], []
    if masked:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, s, s]))
        inits.append(numpy_helper.from_array(np.array(0.125, np.float32), "scale"))
        nodes = [helper.make_node("Mul", ["x", "scale"], ["xs"]),
                 helper.make_node("Add", ["xs", "mask"], ["t"]),
                 helper.make_node("Softmax", ["t"], ["y"], axis=-1)]
    else:
        nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "softmax", inputs, [y], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m.SerializeToString()


def session(model_bytes):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def time_case(shape, masked, runs, clock=time.perf_counter_ns):
    b, h, s = shape
    rng = np.random.default_rng(12345)
    ins = {"x": rng.uniform(-8, 8, (b, h, s, s)).astype(np.float32)}
    if masked:
        ins["mask"] = np.where(np.arange(s)[None, :] > np.arange(s)[:, None], -10000.0,
                               0.0).astype(np.float32).reshape(1, 1, s, s)
    sess = session(model(shape, masked))
    out = np.empty((b, h, s, s), np.float32)
    bind = sess.io_binding()
    for name, a in ins.items():
        bind.bind_cpu_input(name, a)
    bind.bind_output("y", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
    for _ in range(3):
        sess.run_with_iobinding(bind)
    t = []
    for _ in range(runs):
        t0 = clock()
        sess.run_with_iobinding(bind)
        t.append((clock() - t0) / 1e3)
    t.sort()
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--shape", default="1,12,384")
    ap.add_argument("--cpu-time", action="store_true")
    ap.add_argument("--tsv", action="store_true")
    a = ap.parse_args()
    shape = tuple(int(v) for v in a.shape.split(","))
    for masked in (False, True):
        clock = time.thread_time_ns if a.cpu_time else time.perf_counter_ns
        t = time_case(shape, masked, max(1, a.runs), clock)
        case = "scale+mask+softmax" if masked else "softmax"
        med = float(np.median(t))
        if a.tsv:
            print(f"R\t{case}\tort\t1\tus\t{len(t)}\t{t[0]:.3f}\t{med:.3f}\t{t[-1]:.3f}")
        else:
            print(f"{case:<20} ort   1 thr {len(t):5d} runs {t[0]:10.2f} {med:10.2f} "
                  f"{t[-1]:10.2f} us (min median max)")


if __name__ == "__main__":
    main()
