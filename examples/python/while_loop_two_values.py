# From the MAX Python API docs, max.graph.ops.while_loop (two loop values), with max -> kiln in the imports.
from kiln.graph import Graph, ops
from kiln.dtype import DType
from kiln.graph import DeviceRef  # not imported in the docs' example

with Graph("while_loop_example") as g:
    x = ops.constant(0, dtype=DType.int32, device=DeviceRef.CPU())
    y = ops.constant(5, dtype=DType.int32, device=DeviceRef.CPU())

    def pred(x, y):
        return ops.logical_and(x < 10, y < 15)

    def body(x, y):
        return [x + 1, y + 1]

    results = ops.while_loop((x, y), pred, body)
    print(results)
