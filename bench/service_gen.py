"""service_gen.py - the model and the request traces of bench/service.c.

Writes, into OUT_DIR, from one seed:
  encoder.mlir          a BERT-style encoder in kiln's MO text: L post-LN
                        layers (hidden 768, 12 heads of 64, FFN 3072, exact
                        gelu), input [batch, seq, 768] (embeddings already
                        applied; no attention mask: batch-1 requests carry no
                        padding), weights as mo.constant.external;
  encoder.safetensors   those weights (F32), written by hand;
  encoder.onnx          the same network and weights for ONNX Runtime
                        (opset 20, dynamic batch / seq, weights as
                        initializers);
  uniform.trace         REQUESTS requests, seq uniform in 1..MAX_SEQ;
  skewed.trace          80% of the requests on 4 lengths, the rest uniform.
A trace line is "SEQ GAP_MS" (GAP_MS: time since the previous arrival,
exponential with mean --gap-ms; bench/service.c uses it only with --gaps).
'#' starts a comment line.

Both model files compute the same math in the same order of ops; the
driver checks their outputs agree before it times anything.

usage: service_gen.py OUT_DIR [--layers 4] [--requests 500] [--max-seq 256]
                      [--seed 20251125] [--gap-ms 50]
"""
import argparse
import json
import os

import numpy as np

HIDDEN, HEADS, HEAD_DIM, FFN = 768, 12, 64, 3072
LN_EPS = 1e-12  # BERT's
SKEWED_LENGTHS = (16, 32, 64, 128)  # the four lengths that get 80% of the skewed trace


# ---------------------------------------------------------------- weights

def make_weights(layers, rng):
    """nn.Linear-like init: U(+-1/sqrt(fan_in)) for weights and biases;
    layer-norm gamma U(0.5, 1.5), beta U(-0.1, 0.1). Matmul weights are
    [in, out] (y = x W + b) on both sides."""
    w = {}

    def linear(name, fan_in, fan_out):
        s = 1.0 / np.sqrt(fan_in)
        w[name + ".weight"] = rng.uniform(-s, s, (fan_in, fan_out)).astype(np.float32)
        w[name + ".bias"] = rng.uniform(-s, s, (fan_out,)).astype(np.float32)

    def norm(name):
        w[name + ".gamma"] = rng.uniform(0.5, 1.5, (HIDDEN,)).astype(np.float32)
        w[name + ".beta"] = rng.uniform(-0.1, 0.1, (HIDDEN,)).astype(np.float32)

    for i in range(layers):
        p = f"l{i}."
        for n in ("q", "k", "v", "o"):
            linear(p + n, HIDDEN, HIDDEN)
        norm(p + "ln1")
        linear(p + "ffn1", HIDDEN, FFN)
        linear(p + "ffn2", FFN, HIDDEN)
        norm(p + "ln2")
    return w


def write_safetensors(path, tensors):
    """8-byte little-endian header length, a JSON header {name: {dtype,
    shape, data_offsets}} padded with spaces to a multiple of 8, then the
    raw little-endian data in header order."""
    header, off = {}, 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


# ---------------------------------------------------------------- MO text

class Mo:
    """Emits MO text one op a line, keeping each value's type."""

    def __init__(self):
        self.lines, self.types, self.n = [], {}, 0

    @staticmethod
    def ty(dims):
        return "!mo.tensor<[" + ", ".join(str(d) for d in dims) + "], f32>"

    def val(self, dims):
        self.n += 1
        v = f"%v{self.n}"
        self.types[v] = dims
        return v

    def op(self, name, operands, dims, attrs=None, short=False):
        """short: the one-type form 'op(%x) : T' (unary ops, softmax)."""
        v = self.val(dims)
        a = f" {{{attrs}}}" if attrs else ""
        if short:
            sig = self.ty(dims)
        else:
            ins = ", ".join(self.ty(self.types[o]) for o in operands)
            sig = f"({ins}) -> {self.ty(dims)}"
        self.lines.append(f"  {v} = mo.{name}({', '.join(operands)}){a} : {sig}")
        return v

    def weight(self, name, dims):
        v = self.val(dims)
        self.lines.append(f'  {v} = mo.constant.external {{name = "{name}"}} : {self.ty(dims)}')
        return v

    def scalar(self, x):
        v = self.val([])
        self.lines.append(f"  {v} = mo.constant {{value = #M.dense_array<{x!r}> : tensor<f32>}}"
                          f" : {self.ty([])}")
        return v


def mo_encoder(layers):
    m = Mo()
    rows = "batch * seq"
    x = "%hidden"
    m.types[x] = ["batch", "seq", HIDDEN]
    h = m.op("reshape", [x], [rows, HIDDEN])
    scale = m.scalar(float(1.0 / np.sqrt(HEAD_DIM)))

    def linear(inp, name, fan_in, fan_out):
        wv = m.weight(name + ".weight", [fan_in, fan_out])
        bv = m.weight(name + ".bias", [fan_out])
        y = m.op("matmul", [inp, wv], [rows, fan_out])
        return m.op("add", [y, bv], [rows, fan_out])

    def norm(inp, name):
        g = m.weight(name + ".gamma", [HIDDEN])
        b = m.weight(name + ".beta", [HIDDEN])
        return m.op("layer_norm", [inp, g, b], [rows, HIDDEN], f"epsilon = {LN_EPS!r}")

    def heads(inp):  # [rows, 768] -> [batch, 12, seq, 64]
        r = m.op("reshape", [inp], ["batch", "seq", HEADS, HEAD_DIM])
        return m.op("permute", [r], ["batch", HEADS, "seq", HEAD_DIM], "dims = [0, 2, 1, 3]")

    for i in range(layers):
        p = f"l{i}."
        q = heads(linear(h, p + "q", HIDDEN, HIDDEN))
        k = heads(linear(h, p + "k", HIDDEN, HIDDEN))
        v = heads(linear(h, p + "v", HIDDEN, HIDDEN))
        kt = m.op("transpose", [k], ["batch", HEADS, HEAD_DIM, "seq"], "axis_1 = 2, axis_2 = 3")
        s = m.op("matmul", [q, kt], ["batch", HEADS, "seq", "seq"])
        s = m.op("mul", [s, scale], ["batch", HEADS, "seq", "seq"])
        pr = m.op("softmax", [s], ["batch", HEADS, "seq", "seq"], "axis = -1", short=True)
        c = m.op("matmul", [pr, v], ["batch", HEADS, "seq", HEAD_DIM])
        c = m.op("permute", [c], ["batch", "seq", HEADS, HEAD_DIM], "dims = [0, 2, 1, 3]")
        c = m.op("reshape", [c], [rows, HIDDEN])
        a = linear(c, p + "o", HIDDEN, HIDDEN)
        h = norm(m.op("add", [h, a], [rows, HIDDEN]), p + "ln1")
        f = m.op("gelu", [linear(h, p + "ffn1", HIDDEN, FFN)], [rows, FFN], short=True)
        f = linear(f, p + "ffn2", FFN, HIDDEN)
        h = norm(m.op("add", [h, f], [rows, HIDDEN]), p + "ln2")
    y = m.op("reshape", [h], ["batch", "seq", HIDDEN])
    ty = Mo.ty(["batch", "seq", HIDDEN])
    head = (f"// A {layers}-layer BERT-style encoder (hidden {HIDDEN}, {HEADS} heads, FFN {FFN}),"
            " written by bench/service_gen.py.\n"
            f"mo.graph @encoder<batch, seq>(%hidden: {ty}) -> ({ty}) attributes"
            ' {argument_names = ["hidden"], result_names = ["out"]} {')
    return "\n".join([head] + m.lines + [f"  mo.output {y} : {ty}", "}", ""])


# ---------------------------------------------------------------- ONNX

def onnx_encoder(layers, w):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits = [], [numpy_helper.from_array(a, n) for n, a in w.items()]
    consts = {"scale": np.array(1.0 / np.sqrt(HEAD_DIM), np.float32),
              "heads_shape": np.array([0, 0, HEADS, HEAD_DIM], np.int64),
              "hidden_shape": np.array([0, 0, HIDDEN], np.int64)}
    inits += [numpy_helper.from_array(a, n) for n, a in consts.items()]
    count = [0]

    def node(op, ins, **attrs):
        count[0] += 1
        out = f"t{count[0]}"
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def linear(x, name):
        return node("Add", [node("MatMul", [x, name + ".weight"]), name + ".bias"])

    def norm(x, name):
        return node("LayerNormalization", [x, name + ".gamma", name + ".beta"],
                    axis=-1, epsilon=LN_EPS)

    def heads(x):
        return node("Transpose", [node("Reshape", [x, "heads_shape"])], perm=[0, 2, 1, 3])

    h = "hidden"
    for i in range(layers):
        p = f"l{i}."
        q = heads(linear(h, p + "q"))
        k = heads(linear(h, p + "k"))
        v = heads(linear(h, p + "v"))
        kt = node("Transpose", [k], perm=[0, 1, 3, 2])
        s = node("Mul", [node("MatMul", [q, kt]), "scale"])
        c = node("MatMul", [node("Softmax", [s], axis=-1), v])
        c = node("Reshape", [node("Transpose", [c], perm=[0, 2, 1, 3]), "hidden_shape"])
        h = norm(node("Add", [h, linear(c, p + "o")]), p + "ln1")
        f = linear(node("Gelu", [linear(h, p + "ffn1")]), p + "ffn2")
        h = norm(node("Add", [h, f]), p + "ln2")
    nodes.append(helper.make_node("Identity", [h], ["out"]))
    io = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch", "seq", HIDDEN])
    g = helper.make_graph(nodes, "encoder", [io("hidden")], [io("out")], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    return model.SerializeToString()


# ---------------------------------------------------------------- traces

def write_trace(path, lengths, rng, gap_ms, what):
    gaps = rng.exponential(gap_ms, len(lengths))
    with open(path, "w") as f:
        f.write(f"# {what}: {len(lengths)} requests; columns: seq gap_ms\n")
        for s, g in zip(lengths, gaps):
            f.write(f"{int(s)} {g:.3f}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--max-seq", type=int, default=256)
    ap.add_argument("--seed", type=int, default=20251125)
    ap.add_argument("--gap-ms", type=float, default=50.0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)

    w = make_weights(args.layers, rng)
    write_safetensors(os.path.join(args.out, "encoder.safetensors"), w)
    with open(os.path.join(args.out, "encoder.mlir"), "w") as f:
        f.write(mo_encoder(args.layers))
    with open(os.path.join(args.out, "encoder.onnx"), "wb") as f:
        f.write(onnx_encoder(args.layers, w))

    n, top = args.requests, args.max_seq
    uniform = rng.integers(1, top + 1, n)
    hot = np.array([s for s in SKEWED_LENGTHS if s <= top] or [top])
    skewed = np.where(rng.random(n) < 0.8, rng.choice(hot, n), rng.integers(1, top + 1, n))
    write_trace(os.path.join(args.out, "uniform.trace"), uniform, rng, args.gap_ms,
                f"seq uniform in 1..{top}, seed {args.seed}")
    write_trace(os.path.join(args.out, "skewed.trace"), skewed, rng, args.gap_ms,
                f"80% on seq {', '.join(map(str, hot))}, the rest uniform in 1..{top},"
                f" seed {args.seed}")
    print(f"service_gen: {args.layers} layers, {len(w)} weights, {n} requests per trace"
          f" -> {args.out}")


if __name__ == "__main__":
    main()
