"""kiln.graph.value: the values ops take and make, as ``max.graph.TensorValue``.

A TensorValue is a placeholder for a tensor of a graph under construction:
its dtype, shape and device are known (kiln infers them as each op is
added), its data is not. Python operators and methods build ops
(``a @ b``, ``a + 1.0``, ``x[..., :4]``, ``x.T``, ``x.reshape(...)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..dtype import DType
from .dim import Shape
from .type import BufferType, DeviceRef, TensorType

if TYPE_CHECKING:
    from .graph import Graph

__all__ = ["Value", "TensorValue", "TensorValueLike", "BufferValue"]


class Value:
    """Any value of a graph."""

    @property
    def buffer(self) -> "BufferValue":
        """The value as a BufferValue (TypeError for any other kind)."""
        if not isinstance(self, BufferValue):
            raise TypeError(f"{self!r} is not a buffer value")
        return self

    @property
    def tensor(self) -> "TensorValue":
        """The value as a TensorValue (TypeError for any other kind)."""
        if not isinstance(self, TensorValue):
            raise TypeError(f"{self!r} is not a tensor value")
        return self


class _ShapedValue(Value):
    """What tensors and buffers share: a graph, a dtype, dims and a device."""

    __slots__ = ("_graph", "_v")

    def __init__(self, graph: "Graph", v: Any) -> None:
        self._graph = graph
        self._v = v  # kiln._kiln.Value

    @property
    def graph(self) -> "Graph":
        """The graph the value belongs to."""
        return self._graph

    @property
    def dtype(self) -> DType:
        """The element type."""
        return DType._from_kiln(self._v.dtype)

    @property
    def shape(self) -> Shape:
        """The dims (StaticDim, SymbolicDim, AlgebraicDim)."""
        return Shape(self._v.dims)

    @property
    def rank(self) -> int:
        """Number of dims."""
        return len(self._v.dims)

    @property
    def device(self) -> DeviceRef:
        """Where the value lives as the graph types it (a tensor's ``.to(DeviceRef.GPU())``
        moves it; buffers live on the host: they run on the CPU runtime)."""
        gpu = self._v.gpu
        return DeviceRef.GPU(gpu) if gpu >= 0 else DeviceRef.CPU()


class TensorValue(_ShapedValue):
    """A tensor value of a graph (made by ops and ``graph.inputs``)."""

    __slots__ = ()
    __array_priority__ = 1000  # numpy defers `ndarray + value` to us

    @property
    def type(self) -> TensorType:
        """dtype, shape and device as a TensorType."""
        return TensorType(self.dtype, list(self._v.dims), self.device)

    def __repr__(self) -> str:
        return f"TensorValue({self.type.to_mlir()})"

    # ---- methods (max.graph.TensorValue) ----
    @property
    def T(self) -> "TensorValue":
        """The last two axes swapped."""
        return _ops().transpose(self, -1, -2)

    def reshape(self, shape: Any) -> "TensorValue":
        """ops.reshape: the same elements in a new shape (one -1 inferred)."""
        return _ops().reshape(self, shape)

    def transpose(self, dim_1: int, dim_2: int) -> "TensorValue":
        """ops.transpose: two axes swapped."""
        return _ops().transpose(self, dim_1, dim_2)

    def permute(self, dims: list[int]) -> "TensorValue":
        """ops.permute: the axes reordered."""
        return _ops().permute(self, dims)

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> "TensorValue":
        """ops.flatten: axes start_dim..end_dim merged into one."""
        return _ops().flatten(self, start_dim, end_dim)

    def broadcast_to(self, shape: Any) -> "TensorValue":
        """ops.broadcast_to: broadcast to shape."""
        return _ops().broadcast_to(self, shape)

    def cast(self, dtype: DType) -> "TensorValue":
        """ops.cast: converted to dtype."""
        return _ops().cast(self, dtype)

    def rebind(self, shape: Any, message: str = "") -> "TensorValue":
        """ops.rebind: asserted to have shape."""
        return _ops().rebind(self, shape, message)

    def to(self, device: DeviceRef) -> "TensorValue":
        """ops.transfer_to: the value on device."""
        return _ops().transfer_to(self, device)

    def argmax(self, axis: int = -1) -> "TensorValue":
        """ops.argmax along axis (kept with size 1)."""
        return _ops().argmax(self, axis)

    def max(self, axis: int = -1) -> "TensorValue":
        """ops.max along axis (kept with size 1)."""
        return _ops().max(self, axis=axis)

    def min(self, axis: int = -1) -> "TensorValue":
        """ops.min along axis (kept with size 1)."""
        return _ops().min(self, axis=axis)

    def mean(self, axis: int = -1) -> "TensorValue":
        """ops.mean along axis (kept with size 1)."""
        return _ops().mean(self, axis)

    def var(self, axis: int = -1) -> "TensorValue":
        """The (population) variance along axis, kept with size 1."""
        m = self.mean(axis)
        d = self - m
        return (d * d).mean(axis)

    def stdev(self, axis: int = -1) -> "TensorValue":
        """The standard deviation along axis, kept with size 1."""
        return _ops().sqrt(self.var(axis))

    def print(self, label: str = "debug_tensor") -> None:
        """ops.print: print the value when the graph runs."""
        _ops().print(self, label)

    def __getitem__(self, index: Any) -> "TensorValue":
        """numpy indexing (ops.slice_tensor): ints drop an axis, slices take
        steps, ``...`` fills axes, None adds one; negative indices count from
        the end (``x[..., :4]``, ``x[1:, ::2]``, ``x[None]``, ``x[-1]``)."""
        return _ops().slice_tensor(self, index if isinstance(index, tuple) else (index,))

    # ---- operators ----
    def __add__(self, o): return _ops().add(self, o)
    def __radd__(self, o): return _ops().add(o, self)
    def __sub__(self, o): return _ops().sub(self, o)
    def __rsub__(self, o): return _ops().sub(o, self)
    def __mul__(self, o): return _ops().mul(self, o)
    def __rmul__(self, o): return _ops().mul(o, self)
    def __truediv__(self, o): return _ops().div(self, o)
    def __rtruediv__(self, o): return _ops().div(o, self)
    def __floordiv__(self, o): return _ops().floor_div(self, o)
    def __rfloordiv__(self, o): return _ops().floor_div(o, self)
    def __mod__(self, o): return _ops().mod(self, o)
    def __rmod__(self, o): return _ops().mod(o, self)
    def __pow__(self, o): return _ops().pow(self, o)
    def __rpow__(self, o): return _ops().pow(o, self)
    def __matmul__(self, o): return _ops().matmul(self, o)
    def __rmatmul__(self, o): return _ops().matmul(o, self)
    def __neg__(self): return _ops().negate(self)
    def __abs__(self): return _ops().abs(self)
    def __invert__(self): return _ops().logical_not(self)
    def __and__(self, o): return _ops().logical_and(self, o)
    def __rand__(self, o): return _ops().logical_and(o, self)
    def __or__(self, o): return _ops().logical_or(self, o)
    def __ror__(self, o): return _ops().logical_or(o, self)
    def __xor__(self, o): return _ops().logical_xor(self, o)
    def __rxor__(self, o): return _ops().logical_xor(o, self)
    def __eq__(self, o): return _ops().equal(self, o)  # type: ignore[override]
    def __ne__(self, o): return _ops().not_equal(self, o)  # type: ignore[override]
    def __lt__(self, o): return _ops().greater(o, self)
    def __le__(self, o): return _ops().greater_equal(o, self)
    def __gt__(self, o): return _ops().greater(self, o)
    def __ge__(self, o): return _ops().greater_equal(self, o)
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError("a graph value has no truth value while the graph is built "
                        "(use ops.where / ops.cond style ops)")


TensorValueLike = Any  # a TensorValue, a Python number, a numpy array


def _ops():
    from . import ops

    return ops


class BufferValue(_ShapedValue):
    """A mutable buffer of a graph (``max.graph.BufferValue``): a graph input
    of a BufferType (the caller's array, changed in place) or
    ``ops.buffer_create``'s. Read it with ``ops.buffer_load`` (a copy) and
    write it with ``ops.buffer_store`` / ``ops.buffer_store_slice``; the graph's
    chain orders them."""

    __slots__ = ()

    def __init__(self, graph: "Graph", v: Any) -> None:
        if getattr(v, "kind", "buffer") != "buffer":
            raise TypeError(f"a BufferValue needs a buffer, got a {v.kind}")
        super().__init__(graph, v)

    @property
    def type(self) -> BufferType:
        """dtype, shape and device as a BufferType."""
        return BufferType(self.dtype, list(self._v.dims), self.device)

    def __getitem__(self, index: Any) -> TensorValue:
        """A slice of the buffer's current contents (loaded, then sliced)."""
        return _ops().buffer_load(self)[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        """``buf[:, pos:pos + n] = new``: ops.buffer_store_slice."""
        _ops().buffer_store_slice(self, value, index)

    def __repr__(self) -> str:
        return f"BufferValue({self.type.to_mlir()})"


class _ChainValue(Value):
    """A chain (``!mo.chain``): orders the effects on buffers (Graph._current_chain)."""

    __slots__ = ("_graph", "_v")

    def __init__(self, graph: "Graph", v: Any) -> None:
        self._graph = graph
        self._v = v

    def __repr__(self) -> str:
        return "_ChainValue(!mo.chain)"
