"""max_bench.py - the MAX side of the anchors (run by ort_bench.py in the
Python environment that has `max` installed; not imported by anything else).

Builds, with max.graph, the same graphs as kiln's relu.mlir, mlp.mlir and
attention_block.mlir (symbolic dims where kiln has them, weights bound by
name through a weights registry, as kiln binds them), loads them into one
InferenceSession on the CPU with num_threads=1, runs each case on the
inputs ort_bench.py wrote, saves the outputs as .npy and times execute.

One thread: max 26.7's InferenceSession(num_threads=1) aborts the process
("LLVM ERROR: AsyncRT::getOrCreateCPUDevice called requesting different
options to those used to create the existing CPUDevice": the session makes
a default CPU() before passing num_threads on), so instead this process pins
itself to one CPU (sched_setaffinity) before max is imported, and MAX's
runtime sizes its thread pool from that.

Assumes: WORK/data/<case>/<input>.npy and WORK/data/weights/<name>.npy exist
(ort_bench.py writes them); MODULAR_TELEMETRY_ENABLED=0 is set by the caller.
Guarantees: prints exactly one JSON object on its last stdout line:
{"version": ..., "cases": {case: {"load_ms", "times_us", "outputs"}}}, or
{"error": "..."} if MAX could not build, load or run a graph.

usage: max_bench.py WORK_DIR CASE=REPEAT... [--rounds N] [--out-tag TAG]
(times_us is a list of N lists of REPEAT times; mlp_b1 and mlp_b64 share one
loaded model, so the second's load_ms is 0.)
"""
import json
import os
import sys
import time
import traceback

import numpy as np


def build(case):
    from max.dtype import DType
    from max.graph import DeviceRef, Graph, TensorType, Weight, ops

    cpu = DeviceRef.CPU()
    f32 = DType.float32
    if case == "relu":
        with Graph("relu", input_types=[TensorType(f32, [5], device=cpu)]) as g:
            (x,) = g.inputs
            g.output(ops.relu(x))
        return g, ["x"], ["y"], []
    if case.startswith("mlp"):
        with Graph("mlp", input_types=[TensorType(f32, ["batch", 784], device=cpu)]) as g:
            (x,) = g.inputs
            w1 = g.add_weight(Weight("fc1.weight", f32, [784, 512], cpu))
            b1 = g.add_weight(Weight("fc1.bias", f32, [512], cpu))
            w2 = g.add_weight(Weight("fc2.weight", f32, [512, 10], cpu))
            b2 = g.add_weight(Weight("fc2.bias", f32, [10], cpu))
            h = ops.relu(ops.matmul(x, w1) + b1)
            g.output(ops.matmul(h, w2) + b2)
        return g, ["pixels"], ["logits"], ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    if case == "attention":
        t = TensorType(f32, ["batch", "seq", 64], device=cpu)
        with Graph("attention_scores", input_types=[t, t]) as g:
            q, k = g.inputs
            s = ops.matmul(q, ops.transpose(k, 1, 2))
            p = ops.softmax(s * ops.constant(0.125, f32, device=cpu), axis=-1)
            flat = ops.reshape(q, [-1, 64])
            gamma = g.add_weight(Weight("ln.gamma", f32, [64], cpu))
            beta = g.add_weight(Weight("ln.beta", f32, [64], cpu))
            n = ops.layer_norm(flat, gamma, beta, 1e-5)
            g.output(p, n)
        return g, ["q", "k"], ["p", "n"], ["ln.gamma", "ln.beta"]
    raise ValueError("unknown case " + case)


def main(argv):
    work = argv[1]
    cases = [a.split("=") for a in argv[2:] if "=" in a]
    tag = argv[argv.index("--out-tag") + 1] if "--out-tag" in argv else "max"
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 1
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    import max as max_pkg
    from max import engine
    from max.driver import CPU, Buffer

    version = getattr(max_pkg, "__version__", "?")
    try:
        from importlib.metadata import version as pkg_version
        version = pkg_version("max")
    except Exception:
        pass
    sess = engine.InferenceSession(devices=[CPU()])
    res, loaded = {}, {}
    for case, repeat in cases:
        repeat = int(repeat)
        g, in_names, out_names, w_names = build(case)
        d = os.path.join(work, "data", case)
        key = case.split("_")[0]
        load_ms = 0.0
        if key not in loaded:
            reg = {w: np.load(os.path.join(work, "data", "weights", w + ".npy")) for w in w_names}
            t0 = time.perf_counter()
            loaded[key] = sess.load(g, weights_registry=reg)
            load_ms = (time.perf_counter() - t0) * 1e3
        model = loaded[key]
        ins = [Buffer.from_numpy(np.load(os.path.join(d, n + ".npy"))) for n in in_names]
        outs = model.execute(*ins)
        od = os.path.join(work, tag, case)
        os.makedirs(od, exist_ok=True)
        for n, o in zip(out_names, outs):
            np.save(os.path.join(od, n + ".npy"), o.to_numpy())
        for _ in range(max(10, repeat // 10)):
            model.execute(*ins)
        times = []
        clock = time.perf_counter_ns
        for _ in range(rounds):
            t = []
            for _ in range(repeat):
                t0 = clock()
                model.execute(*ins)
                t.append((clock() - t0) / 1e3)
            times.append(t)
        res[case] = {"load_ms": load_ms, "times_us": times, "outputs": od}
    return {"version": version, "cpus": sorted(os.sched_getaffinity(0)), "cases": res}


if __name__ == "__main__":
    try:
        out = main(sys.argv)
    except Exception as e:  # report, the caller prints the reason in the table
        traceback.print_exc(file=sys.stderr)
        out = {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}
    print(json.dumps(out))
