# From the MAX docs, "Graph overview" (the Graph API ReLU example), with max -> kiln in the imports.
import numpy as np
from kiln.driver import CPU
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import Graph, TensorType, ops
# Build the graph
cpu = CPU()
input_type = TensorType(DType.float32, shape=[5], device=cpu)
with Graph("relu_graph", input_types=[input_type]) as graph:
    x = graph.inputs[0]
    graph.output(ops.relu(x))
# Compile the graph
session = InferenceSession(devices=[cpu])
model = session.load(graph)
# Run the computation and inspect results
input_data = np.array([1.0, -2.0, 3.0, -4.0, 5.0], dtype=np.float32)
result = model.execute(input_data)
print(np.from_dlpack(result[0]))
