# From the MAX Python API docs, max.graph.Value, with max -> kiln in the imports.
from kiln.graph import Graph, ops, Value
from kiln.dtype import DType
import numpy as np
from kiln.graph import DeviceRef  # not imported in the docs' example

with Graph("value_example") as graph:
    # Create input values
    a = ops.constant(np.array([1, 2, 3]), dtype=DType.float32, device=DeviceRef.CPU())
    b = ops.constant(np.array([4, 5, 6]), dtype=DType.float32, device=DeviceRef.CPU())

    # Use values to perform operations
    c = a + b  # c is a Value representing the addition

    # Demonstrate that the result is a Value
    print(f"Type of c: {type(c)}")
    print(f"Is c a Value? {isinstance(c, Value)}")
