# From the MAX Python API docs, max.graph.TensorValue.dtype (also max.graph.Weight.dtype), with max -> kiln in the imports.
import numpy as np
from kiln.dtype import DType
from kiln.graph import Graph, ops
from kiln.graph import DeviceRef  # not imported in the docs' example

# Create a matrix with float32 values
matrix = np.array([[1, 2], [3, 4]], dtype=np.float32)

# Create a Graph context to work with tensors
with Graph("dtype_demo") as graph:
    # Create a constant tensor from the matrix
    tensor = ops.constant(matrix, dtype=DType.float32, device=DeviceRef.CPU())

    # Access tensor data type
    print(f"Data type: {tensor.dtype}")  # Output: DType.float32
