# From the MAX Python API docs, max.graph.Graph (the Linear layer example), with max -> kiln in the imports.
from dataclasses import dataclass

import numpy as np
from kiln.dtype import DType
from kiln.graph import Graph, TensorType, TensorValue, ops
from kiln.graph import DeviceRef  # not imported in the docs' example

@dataclass
class Linear:
    weight: np.ndarray
    bias: np.ndarray

    def __call__(self, x: TensorValue) -> TensorValue:
        weight_tensor = ops.constant(self.weight, dtype=DType.float32, device=DeviceRef.CPU())
        bias_tensor = ops.constant(self.bias, dtype=DType.float32, device=DeviceRef.CPU())
        return ops.matmul(x, weight_tensor) + bias_tensor

linear_graph = Graph(
    "linear",
    Linear(np.ones((2, 2)), np.ones((2,))),
    input_types=[TensorType(DType.float32, (2,))]
)
