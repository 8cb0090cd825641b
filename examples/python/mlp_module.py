# From the MAX Python API docs, max.nn.layer.Module (the MLP example), with max -> kiln in the
# imports, then run. Two slips of the example are mended: Linear's weight
# used `in_dim` where the argument is `in_dims`, and its shape is (out_dims,
# in_dims) so that `x @ self.weight.T` multiplies; MLP's __init__ does not
# call super().__init__(), which kiln's Module, like the example, allows.
import numpy as np

from kiln import nn
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import DeviceRef, Graph, TensorType, Weight, ops


class Linear(nn.Module):
    def __init__(self, in_dims, out_dims):
        super().__init__()
        self.weight = Weight("weight", DType.float32, (out_dims, in_dims), DeviceRef.CPU())

    def __call__(self, x):
        return x @ self.weight.T


class MLP(nn.Module):
    def __init__(self):
        self.up = Linear(5, 10)
        self.gate = Linear(5, 10)
        self.down = Linear(10, 5)

    def __call__(self, x):
        return self.down(ops.silu(self.gate(x)) + self.up(x))


model = MLP()
print({name: list(v.shape) for name, v in model.state_dict().items()})

rng = np.random.default_rng(0)
model.load_state_dict({name: rng.standard_normal(v.shape).astype(np.float32)
                       for name, v in model.state_dict().items()})
with Graph("mlp", input_types=[TensorType(DType.float32, ["batch", 5], DeviceRef.CPU())]) as g:
    g.output(model(g.inputs[0]))
session = InferenceSession()
compiled = session.load(g, weights_registry=model.state_dict())
x = rng.standard_normal((3, 5)).astype(np.float32)
(y,) = compiled.execute(x)
w = model.state_dict()
silu = lambda v: v / (1 + np.exp(-v))
want = (silu(x @ w["gate.weight"].T) + x @ w["up.weight"].T) @ w["down.weight"].T
print("matches numpy:", np.allclose(y.to_numpy(), want, rtol=1e-5, atol=1e-5))
