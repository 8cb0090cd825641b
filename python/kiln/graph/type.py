"""kiln.graph.type: tensor types and device references, as ``max.graph.type``."""

from __future__ import annotations

import enum
from typing import Any

from ..dtype import DType
from .dim import Dim, Shape, ShapeLike

__all__ = ["DeviceKind", "DeviceRef", "TensorType", "BufferType", "ConvInputLayout",
           "FilterLayout"]


class ConvInputLayout(enum.Enum):
    """Where the channels of a convolution's input are (N, C, spatial)."""

    NHWC = "NHWC"
    NCHW = "NCHW"


class FilterLayout(enum.Enum):
    """A convolution filter's layout: R, S (Q) its spatial axes, C the
    input's channels, F the filters (conv2d_transpose: as MAX documents)."""

    RSCF = "RSCF"
    FCRS = "FCRS"
    CFRS = "CFRS"
    QRSCF = "QRSCF"
    FCQRS = "FCQRS"


class DeviceKind:
    """The kinds of DeviceRef: ``DeviceKind.CPU`` ("cpu"), ``DeviceKind.GPU`` ("gpu")."""

    CPU = "cpu"
    GPU = "gpu"


class DeviceRef:
    """Where a value lives in a graph: ``DeviceRef.CPU()`` or ``DeviceRef.GPU(0)``."""

    def __init__(self, device_type: str = "cpu", id: int = 0) -> None:
        self.device_type = str(device_type).lower()
        self.id = int(id)

    @staticmethod
    def CPU(id: int = 0) -> "DeviceRef":
        """The host."""
        return DeviceRef("cpu", id)

    @staticmethod
    def GPU(id: int = 0) -> "DeviceRef":
        """GPU number id."""
        return DeviceRef("gpu", id)

    @staticmethod
    def from_device(device: Any) -> "DeviceRef":
        """The reference for a kiln.driver device (the CPU and simt-emu are "cpu"
        here: an emulated GPU runs the whole graph)."""
        if device is None or getattr(device, "kind", "cpu") in ("cpu", "simt-emu"):
            return DeviceRef.CPU()
        return DeviceRef.GPU(getattr(device, "ordinal", 0))

    def is_cpu(self) -> bool:
        """True for the host."""
        return self.device_type == "cpu"

    def is_gpu(self) -> bool:
        """True for a GPU."""
        return self.device_type == "gpu"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DeviceRef) and other.device_type == self.device_type
                and other.id == self.id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.id))

    def __repr__(self) -> str:
        return f"DeviceRef.{self.device_type.upper()}({self.id})"


def _device_ref(device: Any) -> DeviceRef:
    if device is None:
        return DeviceRef.CPU()
    if isinstance(device, DeviceRef):
        return device
    return DeviceRef.from_device(device)


class TensorType:
    """The type of a tensor value: dtype, shape (ints, symbol names or Dims)
    and device (``TensorType(DType.float32, ["batch", 784], DeviceRef.CPU())``)."""

    def __init__(self, dtype: DType, shape: ShapeLike, device: Any = None) -> None:
        self.dtype = DType(dtype)
        self.shape = Shape(shape)
        self.device = _device_ref(device)

    @property
    def rank(self) -> int:
        """Number of dims."""
        return len(self.shape)

    def to_mlir(self) -> str:
        """kiln's type text: ``!mo.tensor<[batch, 784], f32>`` (``, gpu:0`` on a GPU)."""
        dims = ", ".join(d.to_mlir() for d in self.shape)
        where = f", gpu:{self.device.id}" if self.device.is_gpu() else ""
        return f"!mo.tensor<[{dims}], {self.dtype.mo_name}{where}>"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, TensorType) and other.dtype == self.dtype
                and other.shape == self.shape and other.device == self.device)

    def __hash__(self) -> int:
        return hash((self.dtype, tuple(self.shape.to_mlir())))

    def __repr__(self) -> str:
        return f"TensorType(dtype={self.dtype}, shape={self.shape!r}, device={self.device!r})"

    def as_buffer(self) -> "BufferType":
        """The buffer type of the same dtype, shape and device."""
        return BufferType(self.dtype, self.shape, self.device)


class BufferType(TensorType):
    """The type of a mutable buffer (``max.graph.BufferType``): a tensor the
    graph changes in place. A graph input of this type is the caller's array,
    written by ``ops.buffer_store`` / ``ops.buffer_store_slice`` and kept
    across executes (a KV cache)."""

    def to_mlir(self) -> str:
        """kiln's type text: ``!mo.buffer<[batch, 784], f32>``."""
        return "!mo.buffer" + super().to_mlir()[len("!mo.tensor"):]

    def as_tensor(self) -> TensorType:
        """The tensor type of the same dtype, shape and device."""
        return TensorType(self.dtype, self.shape, self.device)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BufferType) and super().__eq__(other)

    def __hash__(self) -> int:
        return hash(("buffer", super().__hash__()))

    def __repr__(self) -> str:
        return f"BufferType(dtype={self.dtype}, shape={self.shape!r}, device={self.device!r})"
