"""Every kiln error is a kiln.KilnError subclass with kiln's message, naming
what and where (inputs by name and axis, text by line:col)."""

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import Graph, TensorType, ops


@pytest.fixture(scope="module")
def model():
    with Graph("g", input_types=[TensorType(DType.float32, ["batch", 4])]) as g:
        g.output(ops.relu(g.inputs[0]))
    return InferenceSession(cache_dir=None).load(g)


def test_hierarchy():
    for cls in (kiln.ParseError, kiln.VerifyError, kiln.ShapeError, kiln.DTypeError,
                kiln.CompileError, kiln.ExecutionError, kiln.NotFoundError,
                kiln.UnsupportedError, kiln.InvalidArgumentError, kiln.KilnIOError):
        assert issubclass(cls, kiln.KilnError)
    assert issubclass(kiln.ShapeError, ValueError)
    assert issubclass(kiln.DTypeError, TypeError)
    assert issubclass(kiln.ExecutionError, RuntimeError)
    assert issubclass(kiln.NotFoundError, LookupError)


def test_wrong_axis_names_the_input_and_axis(model):
    with pytest.raises(kiln.ShapeError, match=r"input 0 \(input0\): axis 1 expected 4, got 5"):
        model.execute(np.zeros((2, 5), np.float32))


def test_wrong_rank(model):
    with pytest.raises(kiln.ShapeError, match="input0"):
        model.execute(np.zeros(4, np.float32))


def test_wrong_dtype(model):
    with pytest.raises(kiln.DTypeError, match="expected dtype f32, got si64"):
        model.execute(np.zeros((1, 4), np.int64))


def test_wrong_input_count(model):
    with pytest.raises(TypeError, match="takes 1 input, got 2"):
        model.execute(np.zeros((1, 4), np.float32), np.zeros((1, 4), np.float32))


def test_not_an_array(model):
    with pytest.raises(TypeError, match=r"input 0 \(input0\).*got dict"):
        model.execute({})


def test_parse_error_has_line_and_column():
    with pytest.raises(kiln.ParseError, match=r"bad.mlir:2:\d+"):
        Graph.from_text("mo.graph @g(%x: !mo.tensor<[2], f32>) -> (!mo.tensor<[2], f32>) {\n"
                        "  %y = mo.nosuchop(%x) : !mo.tensor<[2], f32>\n"
                        "  mo.output %y : !mo.tensor<[2], f32>\n}\n", filename="bad.mlir")


def test_op_dtype_error_at_build_time():
    with Graph("g", input_types=[TensorType(DType.int32, [2])]):
        x = Graph.current.inputs[0]
        with pytest.raises(kiln.DTypeError, match="mo.exp|exp"):
            kiln.graph.ops._core.add_op1("mo.exp", [x])


def test_broadcast_shape_error_at_build_time():
    with Graph("g", input_types=[TensorType(DType.float32, [2, 3]),
                                 TensorType(DType.float32, [4])]) as g:
        with pytest.raises(kiln.VerifyError):
            ops.add(g.inputs[0], g.inputs[1])


def test_missing_files():
    with pytest.raises(kiln.KilnError, match="nosuch.mlir"):
        InferenceSession(cache_dir=None).load("/nonexistent/nosuch.mlir")
    with pytest.raises(kiln.KilnError, match="nosuch.onnx"):
        InferenceSession(cache_dir=None).load("/nonexistent/nosuch.onnx")


def test_malformed_onnx_bytes():
    with pytest.raises(kiln.KilnError):
        kiln._kiln.Graph.from_onnx(b"\x08\x07garbage")


def test_ops_outside_a_graph():
    with pytest.raises(LookupError, match="no graph"):
        ops.constant(1.0)
