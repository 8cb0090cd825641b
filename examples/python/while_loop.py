# From the MAX Python API docs, max.graph.ops.while_loop (one loop value), with max -> kiln in the imports.
from kiln.graph import Graph, ops
from kiln.dtype import DType
from kiln.graph import DeviceRef  # not imported in the docs' example

with Graph("while_loop_example") as g:
    x = ops.constant(0, dtype=DType.int32, device=DeviceRef.CPU())

    def pred(x):
        return x < 10

    def body(x):
        return x + 1

    result = ops.while_loop(x, pred, body)
    print(result)
