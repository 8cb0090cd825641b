# From the MAX Python API docs, max.graph.ops.gather_nd, with max -> kiln in the imports.
from kiln.dtype import DType  # not imported in the docs' example
from kiln.graph import Graph, TensorType, ops  # not imported in the docs' example

input_shape = ["a", "b", "c", "d", "e"]
indices_shape = ["a", "f", 3]
input_type = TensorType(DType.bfloat16, input_shape)
indices_type = TensorType(DType.int32, indices_shape)
with Graph("gather_nd", input_types=[input_type, indices_type]) as graph:
    input, indices = graph.inputs
    gathered = ops.gather_nd(input, indices, batch_dims=1)
    print(gathered.type)
## Output: TensorType(dtype=DType.bfloat16, shape=["a", "f", "e"])
