"""kiln.nn.Module: weights and sublayers tracked as attributes, named by
path, state_dict / load_state_dict as max.nn.Module's."""

import numpy as np
import pytest

from kiln import nn
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import Graph, TensorType, Weight


class Scale(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.w = Weight("w", DType.float32, [n])

    def __call__(self, x):
        return x * self.w


class Two(nn.Module):
    def __init__(self) -> None:  # no super().__init__(), as MAX's docs allow
        self.a = Scale(3)
        self.b = Scale(3)
        self.note = "not a layer"

    def __call__(self, x):
        return self.b(self.a(x))


def test_paths_name_the_weights_and_unloaded_ones_read_as_zeros() -> None:
    m = Two()
    assert set(m.sublayers) == {"a", "b"} and m.layer_weights == {}
    sd = m.state_dict()
    assert list(sd) == ["a.w", "b.w"] and all(np.all(v == 0) for v in sd.values())
    assert [w.name for w in m.raw_state_dict().values()] == ["a.w", "b.w"]
    with pytest.raises(ValueError, match="a.w"):
        Two().state_dict(auto_initialize=False)


def test_loaded_values_run_in_a_graph() -> None:
    m = Two()
    m.load_state_dict({"a.w": np.array([1, 2, 3], np.float32),
                       "b.w": np.array([2, 2, 2], np.float32)})
    with Graph("two", input_types=[TensorType(DType.float32, [3])]) as g:
        g.output(m(g.inputs[0]))
    model = InferenceSession(cache_dir=None).load(g, weights_registry=m.state_dict())
    (y,) = model.execute(np.ones(3, np.float32))
    np.testing.assert_array_equal(y.to_numpy(), [2, 4, 6])


def test_load_state_dict_says_what_does_not_fit() -> None:
    m = Two()
    with pytest.raises(ValueError, match=r"missing \['b.w'\].*not used by the module \['c.w'\]"):
        m.load_state_dict({"a.w": np.zeros(3, np.float32), "c.w": np.zeros(3, np.float32)})
    m.load_state_dict({"a.w": np.ones(3, np.float32)}, strict=False)
    assert m.state_dict()["a.w"].tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="'b.w' is float64 \\[3\\]"):
        m.load_state_dict({"a.w": np.ones(3, np.float32), "b.w": np.ones(3)})
    with pytest.raises(ValueError, match="'a.w' is float32 \\[4\\]"):
        m.load_state_dict({"a.w": np.ones(4, np.float32), "b.w": np.ones(3, np.float32)})


def test_a_symbolic_weight_shape_is_named() -> None:
    class Dyn(nn.Module):
        def __init__(self) -> None:
            self.w = Weight("w", DType.float32, ["n"])

    with pytest.raises(ValueError, match="weight 'w': a module's weight needs a static shape"):
        Dyn().state_dict()
