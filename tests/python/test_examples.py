"""The MAX docs' graph examples in examples/python/, run as scripts.

Each script runs in a subprocess (sys.executable, PYTHONPATH passed
through). Most of the docs' examples only build a graph and print the
types they see; for those, a driver runs the script (runpy), makes the
values the example computes the graph's outputs, compiles and executes it
with kiln and prints the results as JSON, so that the test checks both the
printed lines and the numbers against numpy.

An example whose op kiln.graph.ops does not have yet is skipped, naming
the op (it runs by itself once the op lands). One that stops on an op
that exists but raises a bare NotImplementedError (a placeholder in ops)
is an expected failure that names it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import kiln.graph.ops

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "python"

DRIVER = """\
import json, runpy, sys
import numpy as np
ns = runpy.run_path(sys.argv[1], run_name="__main__")
{body}
"""

# Make the listed values the graph's outputs, run it, print the results.
RUN_BODY = """\
from kiln.engine import InferenceSession
graph = ns[{graph!r}]
outs = []
for e in {outputs!r}:
    v = eval(e, ns)
    outs.extend(v if isinstance(v, (list, tuple)) else [v])
if outs:  # else the example set them (Graph(..., forward))
    graph.output(*outs)
model = InferenceSession(num_threads=1).load(graph)
rng = np.random.default_rng(0)
inputs = [rng.standard_normal(s).astype(np.float32) for s in {inputs!r}]
res = model.execute(*inputs)
print("RESULT " + json.dumps({{
    "inputs": [a.tolist() for a in inputs],
    "outputs": [r.to_numpy().tolist() for r in res],
    "dtypes": [str(r.to_numpy().dtype) for r in res]}}))
"""


@dataclass
class Example:
    script: str
    needs: list[str] = field(default_factory=list)  # kiln.graph.ops functions it uses
    driver: str | None = None  # code run after the script (ns: its globals)
    check: Callable[[str], None] | None = None  # gets stdout


def run_driver(graph: str, outputs: list[str], inputs: list[tuple] = ()) -> str:
    return RUN_BODY.format(graph=graph, outputs=outputs, inputs=[list(s) for s in inputs])


# ---- checks ----

MATRIX = np.array([[1, 2], [3, 4]], dtype=np.float32)
MATRIX23 = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)


def line(out: str, prefix: str) -> str:
    """The rest of the printed line that starts with prefix."""
    for ln in out.splitlines():
        if ln.startswith(prefix):
            return ln[len(prefix):].strip()
    raise AssertionError(f"no line starting {prefix!r} in:\n{out}")


def shape_of(text: str) -> list[int]:
    """The ints of a printed shape: "[2, 3]" or "[Dim(2), Dim(3)]"."""
    return [int(d) for d in re.findall(r"-?\d+", text)]


def result(out: str) -> dict:
    return json.loads(line(out, "RESULT "))


def close(got, want, dtype=None) -> None:
    got = np.asarray(got, dtype=dtype if dtype is not None else np.asarray(want).dtype)
    assert got.shape == np.shape(want), (got.shape, np.shape(want))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def shapes_printed(out: str, expect: dict[str, tuple]) -> None:
    for prefix, shape in expect.items():
        assert shape_of(line(out, prefix)) == list(shape), line(out, prefix)


def check_relu(out: str) -> None:
    got = np.array(out.strip().strip("[]").split(), dtype=np.float32)
    x = np.array([1.0, -2.0, 3.0, -4.0, 5.0], dtype=np.float32)
    close(got, np.maximum(x, 0))


def check_mlp_module(out: str) -> None:
    lines = out.strip().splitlines()
    assert lines[0] == ("{'up.weight': [10, 5], 'gate.weight': [10, 5], "
                        "'down.weight': [5, 10]}"), lines[0]
    assert lines[-1] == "matches numpy: True", out


def check_linear(out: str) -> None:
    r = result(out)
    x = np.asarray(r["inputs"][0], np.float32)
    close(r["outputs"][0], x @ np.ones((2, 2), np.float32) + np.ones(2, np.float32))


def check_add_graph(out: str) -> None:
    text = line(out, "final graph:")
    assert "simple_add_graph" in text + out and "add" in out


def check_tensor_demo(out: str) -> None:
    shapes_printed(out, {"Shape:": MATRIX.shape, "Original shape:": MATRIX.shape,
                         "Transposed shape:": MATRIX.T.shape})
    assert line(out, "Data type:") == "DType.float32"
    r = result(out)
    close(r["outputs"][0], MATRIX.T)
    close(r["outputs"][1], MATRIX * 2)


def reduction(name: str, label: str, f: Callable[[np.ndarray], np.ndarray],
              dtype=None) -> Callable[[str], None]:
    def check(out: str) -> None:
        x = np.zeros((2, 3))
        shapes_printed(out, {"Input shape:": x.shape, f"{label} shape:": f(x).shape})
        r = result(out)
        x = np.asarray(r["inputs"][0], np.float32)
        close(r["outputs"][0], f(x), dtype)

    check.__name__ = f"check_{name}"
    return check


def check_broadcast_to(out: str) -> None:
    want = np.broadcast_to(MATRIX, (3, 2, 2))
    shapes_printed(out, {"Original shape:": MATRIX.shape, "Broadcasted shape:": want.shape})
    close(result(out)["outputs"][0], want)


def check_cast(out: str) -> None:
    assert line(out, "Original dtype:") == "DType.float32"
    assert line(out, "Casted dtype:") == "DType.int32"
    r = result(out)
    assert r["dtypes"] == ["int32"]
    close(r["outputs"][0], MATRIX.astype(np.int32))


def check_dtype(out: str) -> None:
    assert line(out, "Data type:") == "DType.float32"
    close(result(out)["outputs"][0], MATRIX)


def check_flatten(out: str) -> None:
    shapes_printed(out, {"Original shape:": MATRIX.shape,
                         "Flattened shape:": MATRIX.ravel().shape})
    close(result(out)["outputs"][0], MATRIX.ravel())


def check_rank(out: str) -> None:
    assert int(line(out, "Rank:")) == MATRIX.ndim
    close(result(out)["outputs"][0], MATRIX)


def check_reshape(out: str) -> None:
    want = MATRIX.reshape(1, 4)
    shapes_printed(out, {"Original shape:": MATRIX.shape, "Reshaped shape:": want.shape})
    close(result(out)["outputs"][0], want)


def check_shape(out: str) -> None:
    shapes_printed(out, {"Shape:": MATRIX.shape})
    close(result(out)["outputs"][0], MATRIX)


def check_to_device(out: str) -> None:
    assert "gpu" in line(out, "New device:").lower()


def check_transpose(out: str) -> None:
    shapes_printed(out, {"Original shape:": MATRIX23.shape,
                         "Transposed shape:": MATRIX23.T.shape})
    close(result(out)["outputs"][0], MATRIX23.T)


def check_value(out: str) -> None:
    assert "TensorValue" in line(out, "Type of c:")
    assert line(out, "Is c a Value?") == "True"
    close(result(out)["outputs"][0], np.array([5, 7, 9], np.float32))


def check_gather_nd(out: str) -> None:
    text = out.strip().splitlines()[-1]
    assert "bfloat16" in text
    assert re.findall(r"\b[a-z]\b", text.split("shape=")[1])[:3] == ["a", "f", "e"], text


def check_while_loop(out: str) -> None:
    close(result(out)["outputs"][0], np.array(10, np.int32))


def check_while_loop_two(out: str) -> None:
    r = result(out)
    close(r["outputs"][0], np.array(10, np.int32))
    close(r["outputs"][1], np.array(15, np.int32))


def keep(f: Callable) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: f(x, axis=1, keepdims=True)


CASES = [
    Example("relu_graph.py", ["relu"], None, check_relu),
    Example("linear_graph.py", ["constant", "matmul", "add"],
            run_driver("linear_graph", [], [(2,)]), check_linear),
    Example("add_graph.py", ["add", "print"],
            "ns['add_tensors'](np.array([1.0], np.float32), np.array([2.0], np.float32))",
            check_add_graph),
    Example("tensor_demo.py", ["constant", "transpose", "mul"],
            run_driver("graph", ["transposed", "doubled"]), check_tensor_demo),
    Example("argmax_demo.py", ["argmax"], run_driver("graph", ["indices"], [(2, 3)]),
            reduction("argmax", "Argmax", lambda x: np.argmax(x, axis=1)[:, None], np.int64)),
    Example("broadcast_to_demo.py", ["constant", "broadcast_to"],
            run_driver("graph", ["broadcasted_tensor"]), check_broadcast_to),
    Example("cast_demo.py", ["constant", "cast"], run_driver("graph", ["casted_tensor"]),
            check_cast),
    Example("dtype_demo.py", ["constant"], run_driver("graph", ["tensor"]), check_dtype),
    Example("flatten_demo.py", ["constant", "flatten"],
            run_driver("graph", ["flattened_tensor"]), check_flatten),
    Example("max_demo.py", ["max"], run_driver("graph", ["m"], [(2, 3)]),
            reduction("max", "Max", keep(np.max))),
    Example("mean_demo.py", ["mean"], run_driver("graph", ["mu"], [(2, 3)]),
            reduction("mean", "Mean", keep(np.mean))),
    Example("min_demo.py", ["min"], run_driver("graph", ["mn"], [(2, 3)]),
            reduction("min", "Min", keep(np.min))),
    Example("rank_demo.py", ["constant"], run_driver("graph", ["tensor"]), check_rank),
    Example("reshape_demo.py", ["constant", "reshape"],
            run_driver("graph", ["reshaped_tensor"]), check_reshape),
    Example("shape_demo.py", ["constant"], run_driver("graph", ["tensor"]), check_shape),
    Example("stdev_demo.py", ["mean", "sub", "mul", "sqrt"],
            run_driver("graph", ["sd"], [(2, 3)]),
            reduction("stdev", "Stdev", keep(np.std))),
    Example("to_device_example.py", ["constant", "transfer_to"], None, check_to_device),
    Example("transpose_demo.py", ["constant", "transpose"],
            run_driver("graph", ["transposed_tensor"]), check_transpose),
    Example("var_demo.py", ["mean", "sub", "mul"], run_driver("graph", ["vr"], [(2, 3)]),
            reduction("var", "Var", keep(np.var))),
    Example("value_example.py", ["constant", "add"], run_driver("graph", ["c"]), check_value),
    Example("gather_nd.py", ["gather_nd"], None, check_gather_nd),
    Example("mlp_module.py", ["silu"], None, check_mlp_module),
    Example("while_loop.py", ["constant", "while_loop", "greater", "add"],
            run_driver("g", ["result"]), check_while_loop),
    Example("while_loop_two_values.py",
            ["constant", "while_loop", "logical_and", "greater", "add"],
            run_driver("g", ["results"]), check_while_loop_two),
]


def run_example(ex: Example, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["KILN_CACHE_DIR"] = str(tmp_path / "cache")
    if env.get("PYTHONPATH"):  # the script runs in tmp_path: make the entries absolute
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    script = str(EXAMPLES / ex.script)
    if ex.driver is None:
        cmd = [sys.executable, script]
    else:
        cmd = [sys.executable, "-c", DRIVER.format(body=ex.driver), script]
    return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


def test_every_example_has_a_case() -> None:
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert scripts == sorted(ex.script for ex in CASES)


def test_every_example_names_its_source() -> None:
    for p in EXAMPLES.glob("*.py"):
        first = p.read_text().splitlines()[0]
        assert first.startswith("# From the MAX"), p.name


@pytest.mark.parametrize("ex", CASES, ids=[ex.script[:-3] for ex in CASES])
def test_example(ex: Example, tmp_path: Path) -> None:
    missing = [n for n in ex.needs if not hasattr(kiln.graph.ops, n)]
    if missing:
        pytest.skip(f"kiln.graph.ops has no {', '.join(missing)} yet")
    p = run_example(ex, tmp_path)
    if p.returncode != 0:
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
        if last.startswith("NotImplementedError:"):
            pytest.xfail(f"{ex.script}: {last}")
        pytest.fail(f"{ex.script} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    assert ex.check is not None
    ex.check(p.stdout)
