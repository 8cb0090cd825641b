"""kiln.graph.weight: ``Weight``, a named tensor bound when the model loads."""

from __future__ import annotations

from typing import Any

from ..dtype import DType
from .dim import Shape, ShapeLike
from .type import DeviceRef, _device_ref
from .value import TensorValue

__all__ = ["Weight"]


class Weight:
    """A weight (``max.graph.Weight``): name, dtype, shape and device. Use it in
    ops like a value inside a graph (it is added with ``Graph.add_weight``);
    bind its data with ``session.load(graph, weights_registry={name: array})``.
    A quantized weight (``quantization_encoding``, kiln.graph.quantization) is
    uint8 of whole blocks, read by ``ops.dequantize`` / ``ops.qmatmul``."""

    def __init__(self, name: str, dtype: DType, shape: ShapeLike, device: Any = None,
                 quantization_encoding: Any = None, align: int | None = None,
                 **kwargs: Any) -> None:
        self.name = name
        self.dtype = DType(dtype)
        if quantization_encoding is not None and self.dtype != DType.uint8:
            raise ValueError(f"weight {name!r}: a quantized weight holds its blocks as uint8, "
                             f"got {self.dtype}")
        self.quantization_encoding = quantization_encoding
        self.shape = Shape(shape)
        self.device: DeviceRef = _device_ref(device)
        self.align = align

    def _value(self) -> TensorValue:
        from .graph import Graph

        return Graph.current.add_weight(self)

    @property
    def rank(self) -> int:
        """Number of dims."""
        return len(self.shape)

    def __repr__(self) -> str:
        return f"Weight({self.name!r}, {self.dtype}, {self.shape!r})"


def _forward(name: str):
    def method(self: Weight, *args: Any) -> Any:
        return getattr(self._value(), name)(*args)

    method.__name__ = name
    method.__doc__ = f"TensorValue.{name} of the weight's graph value."
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__truediv__", "__rtruediv__", "__matmul__", "__rmatmul__", "__neg__",
              "__pow__", "__getitem__", "reshape", "transpose", "permute", "flatten",
              "broadcast_to", "cast", "to"):
    setattr(Weight, _name, _forward(_name))
Weight.T = property(lambda self: self._value().T,  # type: ignore[attr-defined]
                    doc="The weight's graph value with its last two axes swapped.")
