# From the MAX Python API docs, max.graph.ops.print (simple_add_graph), with max -> kiln in the imports.
import numpy as np  # not imported in the docs' example
from typing import Any  # not imported in the docs' example
from kiln.dtype import DType  # not imported in the docs' example
from kiln.graph import DeviceRef, Graph, TensorType, ops  # not imported in the docs' example

def add_tensors(a: np.ndarray, b: np.ndarray) -> dict[str, Any]:
    input_type = TensorType(dtype=DType.float32, shape=(1,), device=DeviceRef.CPU())
    with Graph(
        "simple_add_graph", input_types=(input_type, input_type)
    ) as graph:
        lhs, rhs = graph.inputs
        out = ops.add(lhs, rhs)
        ops.print(out, label="addition_output")  # Pass the output tensor here

        graph.output(out)
        print("final graph:", graph)
