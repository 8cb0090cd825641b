"""kiln.graph: build graphs in Python, as ``max.graph``."""

from . import ops, quantization
from .dim import AlgebraicDim, Dim, DimLike, Shape, ShapeLike, StaticDim, SymbolicDim
from .graph import Graph
from .quantization import QuantizationConfig, QuantizationEncoding
from .type import BufferType, ConvInputLayout, DeviceKind, DeviceRef, FilterLayout, TensorType
from .value import BufferValue, TensorValue, TensorValueLike, Value
from .weight import Weight

__all__ = ["Graph", "TensorType", "BufferType", "BufferValue", "DeviceRef", "DeviceKind",
           "TensorValue", "Value", "TensorValueLike", "Weight", "Dim", "StaticDim",
           "SymbolicDim", "AlgebraicDim", "Shape", "DimLike", "ShapeLike", "ops",
           "quantization", "QuantizationEncoding", "QuantizationConfig", "ConvInputLayout",
           "FilterLayout"]
