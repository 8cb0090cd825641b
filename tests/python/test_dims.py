"""kiln.graph.dim: static, symbolic and algebraic dims, their arithmetic,
and graphs whose types use them."""

import numpy as np
import pytest

import kiln
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import AlgebraicDim, Dim, Graph, StaticDim, SymbolicDim, TensorType, ops


def test_dim_kinds_and_arithmetic():
    assert Dim(4) == StaticDim(4) and isinstance(Dim("4"), StaticDim)
    assert isinstance(Dim("batch"), SymbolicDim) and Dim("batch").name == "batch"
    assert isinstance(Dim("n + 1"), AlgebraicDim)
    assert Dim(Dim("batch")) == Dim("batch") and SymbolicDim(SymbolicDim("x")).name == "x"
    b, s = Dim("batch"), Dim("seq")
    assert (b * s).to_mlir() == "batch * seq"
    assert (2 * (s + 1)).to_mlir() == "2 * (seq + 1)"
    assert (s // 4).to_mlir() == "seq floordiv 4"
    assert StaticDim(6) * 7 == 42 and StaticDim(7) // 2 == 3
    assert [p.name for p in (b * s + b).parameters] == ["batch", "seq"]
    with pytest.raises(ValueError):
        SymbolicDim("not an identifier")
    with pytest.raises(TypeError):
        Dim(True)


def test_algebraic_dims_in_a_graph():
    # [batch, seq] flattened to [batch * seq]; a second input of [seq + 1]
    b, s = Dim("batch"), Dim("seq")
    with Graph("alg", input_types=[TensorType(DType.float32, [b, s]),
                                   TensorType(DType.float32, [s + 1])]) as g:
        x, y = g.inputs
        flat = x.reshape([b * s])
        assert flat.shape == [b * s]
        g.output(flat, ops.sum(y, -1))
    model = InferenceSession(cache_dir=None).load(g)
    assert model.output_metadata[0].dims == ["batch * seq"]
    for batch, seq in ((2, 3), (1, 5)):
        x = np.arange(batch * seq, dtype=np.float32).reshape(batch, seq)
        f, t = model.execute(x, np.ones(seq + 1, np.float32))
        np.testing.assert_array_equal(f.to_numpy(), x.reshape(-1))
        assert t.to_numpy().item() == seq + 1
    with pytest.raises(kiln.ShapeError, match="input 1"):  # seq + 1 must hold
        model.execute(np.zeros((2, 3), np.float32), np.ones(3, np.float32))
