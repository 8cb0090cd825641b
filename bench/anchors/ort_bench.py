"""ort_bench.py - kiln beside ONNX Runtime (and MAX, where installed) on the
same graphs, weights and inputs: bench/run_anchors.sh runs it.

What it does, in order:
  1. writes seeded random weights (.safetensors for kiln, written here by
     hand: u64 little-endian header length, JSON header, raw data; .npy for
     MAX) and inputs (.npy) under WORK/data;
  2. builds the equivalent ONNX models (opset 17) with onnx.helper and opens
     ONNX Runtime sessions on the CPU EP: intra_op_num_threads=1,
     inter_op_num_threads=1, sequential, graph optimizations ORT_ENABLE_ALL;
  3. per round: runs the kiln CLI on each case (`kiln run GRAPH --input ...
     --weights ... --repeat N --out DIR --stats`, whose median / min / max
     per-execute times it parses), kiln through libkiln.so with ctypes (timed
     from Python like ORT), ORT with io_binding (inputs and outputs bound
     once, preallocated), and bench_runtime (kiln's own C benchmark);
  4. runs MAX (bench/anchors/max_bench.py, in the Python that has `max`);
  5. checks every engine's outputs against ORT's (np.allclose, tolerance
     printed) and prints AGREE / DISAGREE per case, then the timing table:
     min / median / max per engine and the ratio of medians to ORT's. With
     several rounds, median = median of the rounds' medians, min and max
     over all runs.

Assumes: numpy, onnx, onnxruntime importable; kiln built (the paths come on
the command line). Guarantees: exit status 0 when every case ran and
agreed, 1 when any engine disagreed or failed (the table is still printed).

usage: ort_bench.py --kiln PATH --examples DIR --shared DIR --work DIR
                    [--libkiln PATH] [--bench-runtime PATH] [--rounds N] [--source DIR]
                    [--max-python PATH] [--max-cache DIR] [--max-cold-json F]
                    [--max-skip-reason TEXT] [--quick] [--max-only]
                    [--markdown FILE] [--json FILE]
(--json also holds, for bench/run.sh: per case and engine the output check
against ORT, the versions, and why MAX did not run when it did not.)
"""
import argparse
import ctypes
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np

SEED = 20240607

# case -> graph file, input names and shapes, output names, weights file,
# repeats (kiln CLI / ctypes / ORT, MAX).
CASES = {
    "relu": dict(graph=("examples", "relu.mlir"), inputs={"x": (5,)}, outputs=["y"],
                 weights=None, label="relu [5]", repeat=20000, max_repeat=5000),
    "mlp_b1": dict(graph=("examples", "mlp.mlir"), inputs={"pixels": (1, 784)},
                   outputs=["logits"], weights="mlp", label="mlp batch=1",
                   repeat=3000, max_repeat=2000),
    "mlp_b64": dict(graph=("examples", "mlp.mlir"), inputs={"pixels": (64, 784)},
                    outputs=["logits"], weights="mlp", label="mlp batch=64",
                    repeat=300, max_repeat=300),
    "attention": dict(graph=("shared", "ir-examples/attention_block.mlir"),
                      inputs={"q": (4, 128, 64), "k": (4, 128, 64)}, outputs=["p", "n"],
                      weights="attention", label="attention_block b=4 s=128",
                      repeat=200, max_repeat=200),
}

WEIGHT_SHAPES = {
    "mlp": {"fc1.weight": (784, 512), "fc1.bias": (512,), "fc2.weight": (512, 10),
            "fc2.bias": (10,)},
    "attention": {"ln.gamma": (64,), "ln.beta": (64,)},
}

# Tolerance of the comparison with ORT: |a - b| <= ATOL * scale + RTOL * |b|,
# scale = max(1, max |b|) so large-magnitude outputs get a matching atol.
RTOL, ATOL = 1e-4, 1e-5


# ---------------------------------------------------------------- data

def write_safetensors(path, tensors):
    """The safetensors format by hand: 8-byte little-endian header length,
    a JSON header {name: {dtype, shape, data_offsets}} padded with spaces to
    a multiple of 8, then the raw little-endian data in header order."""
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr, dtype="<f4")
        b = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


def make_data(work):
    """Seeded weights (nn.Linear-like init: U(+-1/sqrt(fan_in)); layer-norm
    gamma U(0.5, 1.5), beta U(-0.5, 0.5)) and inputs (relu and attention
    U(-1, 1), pixels U(0, 1))."""
    rng = np.random.default_rng(SEED)
    d = os.path.join(work, "data")
    os.makedirs(os.path.join(d, "weights"), exist_ok=True)
    weights = {}
    for group, shapes in WEIGHT_SHAPES.items():
        ws = {}
        for name, shape in shapes.items():
            if group == "mlp":
                fan_in = 784 if name.startswith("fc1") else 512
                a = rng.uniform(-1, 1, shape) / np.sqrt(fan_in)
            elif name == "ln.gamma":
                a = rng.uniform(0.5, 1.5, shape)
            else:
                a = rng.uniform(-0.5, 0.5, shape)
            ws[name] = a.astype(np.float32)
            np.save(os.path.join(d, "weights", name + ".npy"), ws[name])
        write_safetensors(os.path.join(d, group + ".safetensors"), ws)
        weights.update(ws)
    inputs = {}
    for case, c in CASES.items():
        os.makedirs(os.path.join(d, case), exist_ok=True)
        inputs[case] = {}
        for name, shape in c["inputs"].items():
            lo = 0.0 if name == "pixels" else -1.0
            a = rng.uniform(lo, 1.0, shape).astype(np.float32)
            np.save(os.path.join(d, case, name + ".npy"), a)
            inputs[case][name] = a
    return weights, inputs


# ---------------------------------------------------------------- ONNX + ORT

def onnx_models(weights):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def vi(name, shape):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))

    def init(name):
        return numpy_helper.from_array(weights[name], name)

    def model(graph):
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m.SerializeToString()

    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                             [vi("x", [5])], [vi("y", [5])])
    mlp = helper.make_graph(
        [helper.make_node("MatMul", ["pixels", "fc1.weight"], ["h0"]),
         helper.make_node("Add", ["h0", "fc1.bias"], ["h1"]),
         helper.make_node("Relu", ["h1"], ["h2"]),
         helper.make_node("MatMul", ["h2", "fc2.weight"], ["h3"]),
         helper.make_node("Add", ["h3", "fc2.bias"], ["logits"])],
        "mlp", [vi("pixels", ["batch", 784])], [vi("logits", ["batch", 10])],
        [init(n) for n in WEIGHT_SHAPES["mlp"]])
    attn = helper.make_graph(
        [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
         helper.make_node("MatMul", ["q", "kt"], ["s"]),
         helper.make_node("Mul", ["s", "scale"], ["ss"]),
         helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
         helper.make_node("Reshape", ["q", "flat_shape"], ["flat"]),
         helper.make_node("LayerNormalization", ["flat", "ln.gamma", "ln.beta"], ["n"],
                          axis=-1, epsilon=1e-5)],
        "attention_scores",
        [vi("q", ["batch", "seq", 64]), vi("k", ["batch", "seq", 64])],
        [vi("p", ["batch", "seq", "seq"]), vi("n", ["batch_seq", 64])],
        [numpy_helper.from_array(np.array(0.125, np.float32), "scale"),
         numpy_helper.from_array(np.array([-1, 64], np.int64), "flat_shape"),
         init("ln.gamma"), init("ln.beta")])
    return {"relu": model(relu), "mlp": model(mlp), "attention": model(attn)}


def ort_session(model_bytes):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    t0 = time.perf_counter()
    s = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    return s, (time.perf_counter() - t0) * 1e3


def ort_case(sess, ins, out_names, repeat):
    """Outputs once through sess.run, then timing through io_binding with
    inputs and preallocated outputs bound once (as kiln's CLI reuses its
    output tensors), so a timed call is only run_with_iobinding."""
    ref = sess.run(out_names, ins)
    outs = [np.empty_like(r) for r in ref]
    b = sess.io_binding()
    for name, a in ins.items():
        b.bind_cpu_input(name, a)
    for name, o in zip(out_names, outs):
        b.bind_output(name, "cpu", 0, np.float32, list(o.shape), o.ctypes.data)
    run = sess.run_with_iobinding
    for _ in range(max(20, repeat // 10)):
        run(b)
    clock = time.perf_counter_ns
    t = []
    for _ in range(repeat):
        t0 = clock()
        run(b)
        t.append((clock() - t0) / 1e3)
    return dict(zip(out_names, outs)), t


def ort_plain_run_us(sess, ins, out_names, repeat):
    """The same through plain sess.run (numpy in, new numpy out each call)."""
    for _ in range(max(20, repeat // 10)):
        sess.run(out_names, ins)
    clock = time.perf_counter_ns
    t = []
    for _ in range(repeat):
        t0 = clock()
        sess.run(out_names, ins)
        t.append((clock() - t0) / 1e3)
    return t


# ---------------------------------------------------------------- kiln

UNIT = {"us": 1.0, "ms": 1e3, "s": 1e6}
RE_EXEC = re.compile(r"execute x(\d+): median ([\d.]+) (us|ms|s), min ([\d.]+) (us|ms|s), "
                     r"max ([\d.]+) (us|ms|s)")
RE_COMPILE = re.compile(r"^compile: ([\d.]+) (us|ms|s)$", re.M)


def kiln_cli_case(kiln, graph, case, work, tag):
    c = CASES[case]
    d = os.path.join(work, "data")
    out = os.path.join(work, tag, case)
    cmd = [kiln, "run", graph]
    for name in c["inputs"]:
        cmd += ["--input", "%s=%s" % (name, os.path.join(d, case, name + ".npy"))]
    if c["weights"]:
        cmd += ["--weights", os.path.join(d, c["weights"] + ".safetensors")]
    cmd += ["--repeat", str(c["repeat"]), "--out", out, "--stats"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("kiln run failed (exit %d): %s\n  %s" %
                           (p.returncode, p.stderr.strip(), " ".join(cmd)))
    m = RE_EXEC.search(p.stdout)
    mc = RE_COMPILE.search(p.stdout)
    if not m or not mc:
        raise RuntimeError("cannot parse kiln run's output:\n" + p.stdout)
    g = m.groups()
    stats = dict(n=int(g[0]), median=float(g[1]) * UNIT[g[2]], min=float(g[3]) * UNIT[g[4]],
                 max=float(g[5]) * UNIT[g[6]])
    outs = {n: np.load(os.path.join(out, n + ".npy")) for n in c["outputs"]}
    return outs, stats, float(mc.group(1)) * UNIT[mc.group(2)] / 1e3, " ".join(cmd)


class Kiln:
    """libkiln.so through ctypes: the public C API (include/kiln/*.h)."""
    F32 = 11  # KILN_FLOAT32 (values are ABI)

    def __init__(self, path):
        L = self.L = ctypes.CDLL(path)
        P, I, S = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
        sig = {
            "kiln_status_new": (P, []), "kiln_status_free": (None, [P]),
            "kiln_status_message": (S, [P]),
            "kiln_graph_load": (P, [S, P]), "kiln_graph_free": (None, [P]),
            "kiln_context_new": (P, [P]), "kiln_context_free": (None, [P]),
            "kiln_model_compile": (P, [P, P, P]), "kiln_model_free": (None, [P]),
            "kiln_model_compile_ms": (ctypes.c_double, [P]),
            "kiln_model_num_inputs": (I, [P]), "kiln_model_num_outputs": (I, [P]),
            "kiln_model_input_name": (S, [P, I]), "kiln_model_output_name": (S, [P, I]),
            "kiln_tensor_borrow": (P, [I, I, ctypes.POINTER(ctypes.c_int64), P, P]),
            "kiln_tensor_free": (None, [P]), "kiln_tensor_data": (P, [P]),
            "kiln_tensor_rank": (I, [P]),
            "kiln_tensor_shape": (ctypes.POINTER(ctypes.c_int64), [P]),
            "kiln_model_bind_weight": (I, [P, S, P, P]),
            "kiln_model_execute": (I, [P, ctypes.POINTER(P), I, ctypes.POINTER(P), I, P]),
        }
        for name, (res, args) in sig.items():
            f = getattr(L, name)
            f.restype, f.argtypes = res, args
        self.st = L.kiln_status_new()
        self.ctx = self.check(L.kiln_context_new(self.st), "kiln_context_new")

    def check(self, ok, what):
        if not ok:
            raise RuntimeError("%s: %s" % (what, self.L.kiln_status_message(self.st).decode()))
        return ok

    def borrow(self, a):
        shape = (ctypes.c_int64 * max(1, a.ndim))(*a.shape)
        return self.check(self.L.kiln_tensor_borrow(self.F32, a.ndim, shape, a.ctypes.data,
                                                     self.st), "kiln_tensor_borrow")

    def case(self, graph, ins, weights, repeat):
        L, st = self.L, self.st
        g = self.check(L.kiln_graph_load(graph.encode(), st), "kiln_graph_load")
        m = self.check(L.kiln_model_compile(self.ctx, g, st), "kiln_model_compile")
        L.kiln_graph_free(g)
        compile_ms = L.kiln_model_compile_ms(m)
        keep = []
        try:
            for name, a in weights.items():
                t = self.borrow(a)
                keep.append(t)
                self.check(L.kiln_model_bind_weight(m, name.encode(), t, st) == 0,
                           "bind " + name)
            nin, nout = L.kiln_model_num_inputs(m), L.kiln_model_num_outputs(m)
            names = [L.kiln_model_input_name(m, i).decode() for i in range(nin)]
            tin = (ctypes.c_void_p * nin)(*[self.borrow(ins[n]) for n in names])
            keep += list(tin)
            tout = (ctypes.c_void_p * nout)()
            ex = L.kiln_model_execute
            self.check(ex(m, tin, nin, tout, nout, st) == 0, "kiln_model_execute")
            keep += list(tout)
            for _ in range(max(20, repeat // 10)):
                ex(m, tin, nin, tout, nout, st)
            clock = time.perf_counter_ns
            t = []
            for _ in range(repeat):
                t0 = clock()
                ex(m, tin, nin, tout, nout, st)
                t.append((clock() - t0) / 1e3)
            self.check(ex(m, tin, nin, tout, nout, st) == 0, "kiln_model_execute")
            outs = {}
            for i in range(nout):
                r = L.kiln_tensor_rank(tout[i])
                sh = L.kiln_tensor_shape(tout[i])
                shape = tuple(sh[j] for j in range(r))
                n = int(np.prod(shape)) if shape else 1
                buf = (ctypes.c_float * n).from_address(L.kiln_tensor_data(tout[i]))
                outs[L.kiln_model_output_name(m, i).decode()] = \
                    np.frombuffer(buf, np.float32).reshape(shape).copy()
            return outs, t, compile_ms
        finally:
            for t in keep:
                L.kiln_tensor_free(t)
            L.kiln_model_free(m)


RE_BR = re.compile(r"^execute (relu\.mlir|mlp\.mlir batch=1|mlp\.mlir batch=64)\s+(\d+)\s+"
                   r"([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+us$", re.M)
BR_CASE = {"relu.mlir": "relu", "mlp.mlir batch=1": "mlp_b1", "mlp.mlir batch=64": "mlp_b64"}


def bench_runtime(path, examples, quick):
    cmd = [path, examples] + (["--quick"] if quick else [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("bench_runtime failed: " + p.stderr.strip())
    res = {}
    for m in RE_BR.finditer(p.stdout):
        res[BR_CASE[m.group(1)]] = dict(n=int(m.group(2)), min=float(m.group(3)),
                                        median=float(m.group(4)), max=float(m.group(5)))
    return res


# ---------------------------------------------------------------- MAX

def run_max(args, work, rounds, quick, cache):
    env = dict(os.environ, MODULAR_TELEMETRY_ENABLED="0")
    if cache:
        os.makedirs(cache, exist_ok=True)
        env["XDG_CACHE_HOME"] = cache
    cmd = [args.max_python, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "max_bench.py"), work, "--rounds", str(rounds)]
    for case, c in CASES.items():
        cmd.append("%s=%d" % (case, max(20, c["max_repeat"] // (10 if quick else 1))))
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {"error": "max_bench.py exited %d without a result: %s" %
               (p.returncode, (p.stderr.strip().splitlines() or ["?"])[-1])}
    res["wall_s"] = wall
    if "error" in res:
        res["stderr_tail"] = p.stderr[-2000:]
    return res


# ---------------------------------------------------------------- report

def agg(blocks):
    """blocks: list of {min, median, max} (one per round) -> one."""
    return dict(min=min(b["min"] for b in blocks),
                median=statistics.median(b["median"] for b in blocks),
                max=max(b["max"] for b in blocks), rounds=len(blocks))


def summary(times):
    return dict(min=min(times), median=statistics.median(times), max=max(times))


def compare(got, ref):
    """(ok, worst |diff| / allowed, max |diff|)."""
    worst, maxdiff = 0.0, 0.0
    for name, r in ref.items():
        g = got.get(name)
        if g is None or g.shape != r.shape:
            return False, float("inf"), float("inf")
        r64, g64 = r.astype(np.float64), g.astype(np.float64)
        scale = max(1.0, float(np.abs(r64).max()))
        allowed = ATOL * scale + RTOL * np.abs(r64)
        d = np.abs(g64 - r64)
        if not np.all(np.isfinite(g64)):
            return False, float("inf"), float("inf")
        worst = max(worst, float((d / allowed).max()))
        maxdiff = max(maxdiff, float(d.max()))
    return worst <= 1.0, worst, maxdiff


def fmt_us(us):
    if us is None:
        return "-"
    if us >= 1000:
        return "%.3f ms" % (us / 1e3)
    return "%.2f us" % us if us >= 10 else "%.3f us" % us


def numpy_reference(case, ins, w):
    """float64 numpy: a third opinion on the outputs (ORT vs this is printed)."""
    f = {k: v.astype(np.float64) for k, v in ins.items()}
    if case == "relu":
        return {"y": np.maximum(f["x"], 0)}
    if case.startswith("mlp"):
        h = np.maximum(f["pixels"] @ w["fc1.weight"] + w["fc1.bias"], 0)
        return {"logits": h @ w["fc2.weight"] + w["fc2.bias"]}
    s = f["q"] @ f["k"].transpose(0, 2, 1) * 0.125
    e = np.exp(s - s.max(-1, keepdims=True))
    flat = f["q"].reshape(-1, 64)
    mu, var = flat.mean(-1, keepdims=True), flat.var(-1, keepdims=True)
    return {"p": e / e.sum(-1, keepdims=True),
            "n": (flat - mu) / np.sqrt(var + 1e-5) * w["ln.gamma"] + w["ln.beta"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--libkiln")
    ap.add_argument("--source", help="the source tree kiln was built from (for the header)")
    ap.add_argument("--bench-runtime")
    ap.add_argument("--examples", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-python")
    ap.add_argument("--max-cache")
    ap.add_argument("--max-cold-json")
    ap.add_argument("--max-skip-reason", help="why MAX is not run (printed in the report)")
    ap.add_argument("--max-only", action="store_true",
                    help="write the data, run MAX once (fills its cache), save its result "
                         "as --max-cold-json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--markdown")
    ap.add_argument("--json", help="also write the aggregated figures (us) here")
    args = ap.parse_args()
    if args.quick:
        for c in CASES.values():
            c["repeat"] = max(20, c["repeat"] // 10)

    import onnxruntime as ort
    os.makedirs(args.work, exist_ok=True)
    weights, inputs = make_data(args.work)
    w64 = {k: v.astype(np.float64) for k, v in weights.items()}
    graphs = {case: os.path.join(args.examples if c["graph"][0] == "examples" else args.shared,
                                 c["graph"][1]) for case, c in CASES.items()}

    if args.max_only:
        res = run_max(args, args.work, 1, True, args.max_cache)
        with open(args.max_cold_json, "w") as f:
            json.dump({k: v for k, v in res.items() if k != "cases"} |
                      {"load_ms": {c: v["load_ms"] for c, v in res.get("cases", {}).items()},
                       "date": time.strftime("%Y-%m-%d %H:%M")}, f, indent=1)
        print(json.dumps({k: v for k, v in res.items() if k != "cases"}))
        for c, v in res.get("cases", {}).items():
            print("MAX first load (cold cache) %-10s %10.0f ms" % (c, v["load_ms"]))
        return 0 if "error" not in res else 1

    models = onnx_models(weights)
    sessions, setup = {}, {}
    for key in ("relu", "mlp", "attention"):
        sessions[key], ms = ort_session(models[key])
        setup.setdefault("ORT session", {})[key] = ms
    sess_of = {"relu": "relu", "mlp_b1": "mlp", "mlp_b64": "mlp", "attention": "attention"}

    times = {}  # (case, engine) -> list of per-round {min, median, max}
    outputs = {}  # (case, engine) -> {name: array}
    failures = []
    notes = []
    kl = None
    if args.libkiln:
        try:
            kl = Kiln(args.libkiln)
        except (OSError, RuntimeError) as e:
            failures.append("libkiln via ctypes: %s" % e)
    t_start = time.perf_counter()
    for r in range(args.rounds):
        for case, c in CASES.items():
            try:
                o, s, cms, cmd = kiln_cli_case(args.kiln, graphs[case], case, args.work, "kiln-cli")
                outputs[(case, "kiln CLI [C]")] = o
                times.setdefault((case, "kiln CLI [C]"), []).append(s)
                setup.setdefault("kiln compile (CLI)", {}).setdefault(case, cms)
                if r == 0:
                    notes.append("kiln CLI: " + cmd)
            except RuntimeError as e:
                failures.append("%s kiln CLI: %s" % (case, e))
            if kl:
                wts = {n: weights[n] for n in WEIGHT_SHAPES.get(c["weights"], {})}
                try:
                    o, t, cms = kl.case(graphs[case], inputs[case], wts, c["repeat"])
                    outputs[(case, "kiln ctypes [Py]")] = o
                    times.setdefault((case, "kiln ctypes [Py]"), []).append(summary(t))
                    setup.setdefault("kiln compile (C API, one context)", {}).setdefault(case, cms)
                except RuntimeError as e:
                    failures.append("%s kiln ctypes: %s" % (case, e))
            o, t = ort_case(sessions[sess_of[case]], inputs[case], c["outputs"], c["repeat"])
            outputs[(case, "ORT io_binding [Py]")] = o
            times.setdefault((case, "ORT io_binding [Py]"), []).append(summary(t))
            if case == "relu":
                t = ort_plain_run_us(sessions["relu"], inputs[case], c["outputs"], c["repeat"])
                times.setdefault((case, "ORT sess.run [Py]"), []).append(summary(t))
        if args.bench_runtime:
            try:
                for case, s in bench_runtime(args.bench_runtime, args.examples, args.quick).items():
                    times.setdefault((case, "kiln bench_runtime [C]"), []).append(s)
            except (OSError, RuntimeError) as e:
                failures.append("bench_runtime: %s" % e)
    kiln_ort_s = time.perf_counter() - t_start

    max_res = None
    if args.max_python:
        max_res = run_max(args, args.work, args.rounds, args.quick, args.max_cache)
        if "error" in max_res:
            failures.append("MAX: %s" % max_res["error"])
        for case, v in max_res.get("cases", {}).items():
            outputs[(case, "MAX [Py]")] = {n: np.load(os.path.join(v["outputs"], n + ".npy"))
                                      for n in CASES[case]["outputs"]}
            times[(case, "MAX [Py]")] = [summary(b) for b in v["times_us"]]
            setup.setdefault("MAX load (warm cache)", {})[case] = v["load_ms"]

    # ---- report
    lines = []
    P = lines.append
    cpu = "?"
    try:
        for ln in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if ln.startswith("Model name:"):
                cpu = ln.split(":", 1)[1].strip()
    except OSError:
        pass
    kv = subprocess.run([args.kiln, "--version"], capture_output=True, text=True).stdout.strip()
    repo = args.source or os.path.dirname(os.path.abspath(args.examples))
    git = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "?"
    dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain"], capture_output=True,
                           text=True).stdout.splitlines()
    if dirty:
        git += " + %d uncommitted file(s)" % len(dirty)
    if git == "?":
        git = "%s (not a git checkout)" % repo
    P("# anchors %s, %s (%d CPUs), python %s" % (time.strftime("%Y-%m-%d %H:%M"), cpu,
                                                os.cpu_count() or 0, platform.python_version()))
    P("# %s, tree %s | onnxruntime %s | MAX %s" % (kv, git, ort.__version__,
                                                   (max_res or {}).get("version", "not run")))
    P("# one thread everywhere; %d round(s); median = median of round medians; "
      "min/max over all runs" % args.rounds)
    P("")
    P("## outputs vs ORT (|d| <= %g * max(1, max|ORT|) + %g * |ORT|)" % (ATOL, RTOL))
    all_ok = not failures
    checks = {}  # case -> engine -> {ok, max_abs_diff}
    for case in CASES:
        ref = outputs.get((case, "ORT io_binding [Py]"))
        ok_np, w_np, d_np = compare(ref, numpy_reference(case, inputs[case], w64))
        row = ["%-26s" % CASES[case]["label"],
               "ORT vs numpy-f64 %s (max|d| %.1e)" % ("ok" if ok_np else "OFF", d_np)]
        for eng in ("kiln CLI [C]", "kiln ctypes [Py]", "MAX [Py]"):
            got = outputs.get((case, eng))
            if got is None:
                continue
            ok, worst, d = compare(got, ref)
            all_ok &= ok
            checks.setdefault(case, {})[eng] = {"ok": ok, "max_abs_diff": d}
            row.append("%s %s (max|d| %.1e)" % (eng, "AGREE" if ok else "DISAGREE", d))
        P("  ".join(row))
    P("")
    P("## per-call time (execute / run only; [C] timed in C, [Py] timed from Python)")
    P("| case | engine | min | median | max | runs/round | / ORT io_binding median |")
    P("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    order = ["kiln CLI [C]", "kiln ctypes [Py]", "kiln bench_runtime [C]", "ORT io_binding [Py]",
             "ORT sess.run [Py]", "MAX [Py]"]
    for case in CASES:
        ref_key = (case, "ORT io_binding [Py]")
        ortm = agg(times[ref_key])["median"] if ref_key in times else None
        for eng in order:
            if (case, eng) not in times:
                continue
            a = agg(times[(case, eng)])
            n = times[(case, eng)][0].get("n") or (CASES[case]["repeat"] if eng != "MAX [Py]"
                                                    else len(max_res["cases"][case]["times_us"][0]))
            ratio = "%.2f" % (a["median"] / ortm) if ortm else "-"
            P("| %s | %s | %s | %s | %s | %d | %s |" % (CASES[case]["label"], eng, fmt_us(a["min"]),
                                                      fmt_us(a["median"]), fmt_us(a["max"]), n,
                                                      ratio))
    P("")
    P("## setup (first round; ms)")
    P("| what | " + " | ".join(CASES) + " |")
    P("| --- |" + " ---: |" * len(CASES))
    cold = None
    if args.max_cold_json and os.path.exists(args.max_cold_json):
        with open(args.max_cold_json) as f:
            cold = json.load(f)
        setup["MAX first load (cold cache, %s)" % cold.get("date", "?")] = cold.get("load_ms", {})
    for what, v in setup.items():
        vals = []
        for case in CASES:
            x = v.get(case, v.get(sess_of[case]) if what == "ORT session" else None)
            if what.startswith("MAX") and x == 0:
                vals.append("(one model)")  # max_bench.py loads mlp once for both batches
            else:
                vals.append("%.1f" % x if x is not None else "-")
        P("| %s | %s |" % (what, " | ".join(vals)))
    P("")
    P("kiln CLI times come from `kiln run --repeat N` (per-execute, C clock, no warm-up: "
      "the first call is in the runs; its text has 0.1 us resolution under 1 ms, too coarse "
      "for relu: see kiln ctypes / bench_runtime). kiln ctypes, ORT and MAX: Python "
      "perf_counter_ns around one call after a warm-up (each includes its binding's overhead). "
      "bench_runtime: kiln's C benchmark (C API, its own random data, same shapes).")
    if max_res:
        if "error" in max_res:
            P("MAX failed: %s" % max_res["error"])
        else:
            P("MAX: one process, pinned to CPU(s) %s (InferenceSession(num_threads=1) aborts in "
              "this version); %.0f s in all." % (max_res.get("cpus"), max_res["wall_s"]))
    else:
        P("MAX: not run: %s." % (args.max_skip_reason or "no --max-python given"))
    P("kiln + ORT rounds took %.0f s." % kiln_ort_s)
    for f in failures:
        P("FAILED: " + f)
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            if max_res is None:
                max_note = "not run: %s" % (args.max_skip_reason or "no --max-python given")
            elif "error" in max_res:
                max_note = "failed: %s" % max_res["error"]
            else:
                max_note = "ran: one process pinned to CPU(s) %s" % max_res.get("cpus")
            json.dump({"times": {"%s|%s" % k: agg(v) for k, v in times.items()},
                       "setup_ms": setup, "failures": failures, "agree": all_ok,
                       "checks": checks, "labels": {c: v["label"] for c, v in CASES.items()},
                       "versions": {"kiln": kv, "onnxruntime": ort.__version__,
                                    "max": (max_res or {}).get("version"), "tree": git,
                                    "python": platform.python_version()},
                       "max_note": max_note, "rounds": args.rounds}, f, indent=1)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
