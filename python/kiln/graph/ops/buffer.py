"""kiln.graph.ops.buffer: mutable buffers (``max.graph.ops.buffer_*``).

Each op takes the graph's current chain and makes the chain it returns the
current one (``Graph._current_chain``), so the buffer ops of a graph run in
the order they were called: a load after a store sees it. A load is a copy:
a tensor loaded before a store keeps the old contents.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...dtype import DType
from . import _core
from ..type import BufferType, TensorType
from ..value import BufferValue, TensorValue, _ChainValue

__all__ = ["buffer_create", "buffer_load", "buffer_store", "buffer_store_slice"]


def _chained(g: Any, op: str, operands: list, result_types: Any = None) -> list:
    res = g._g.add_op(op, [*operands, g._current_chain._v], None, result_types)
    g._current_chain = _ChainValue(g, res[-1])
    return res


def buffer_create(type: BufferType | TensorType) -> BufferValue:
    """A buffer of the graph itself (zeroed when the graph starts)."""
    from ..graph import Graph

    g = Graph.current
    bt = type if isinstance(type, BufferType) else type.as_buffer()
    return BufferValue(g, g._g.add_op("mo.buffer.create", [], None, bt.to_mlir())[0])


def buffer_load(x: BufferValue) -> TensorValue:
    """A tensor holding the buffer's contents now (a copy)."""
    x = x.buffer
    return TensorValue(x.graph, _chained(x.graph, "mo.mutable.load", [x._v])[0])


def buffer_store(destination: BufferValue, source: Any) -> None:
    """Copy source (the buffer's dtype and shape) into the buffer."""
    d = destination.buffer
    src = _core.as_value(source, graph=d.graph) if not isinstance(source, TensorValue) else source
    _chained(d.graph, "mo.mutable.store", [d._v, src._v])


def _starts(d: BufferValue, src: TensorValue, indices: Any) -> TensorValue:
    """The si64 start of each axis from MAX-style indices: per axis a slice
    (start[:stop]) whose start is an int or a scalar TensorValue, or an int;
    Ellipsis fills whole axes. The length of each axis is the source's."""
    idx = list(indices) if isinstance(indices, (tuple, list)) else [indices]
    if any(i is Ellipsis for i in idx):
        k = idx.index(Ellipsis)
        idx[k:k + 1] = [slice(None)] * (d.rank - len(idx) + 1)
    idx += [slice(None)] * (d.rank - len(idx))
    if len(idx) != d.rank:
        raise IndexError(f"buffer_store_slice: {len(idx)} indices for a buffer of rank {d.rank}")
    parts: list[Any] = []
    for a, i in enumerate(idx):
        if isinstance(i, slice):
            if i.step not in (None, 1):
                raise ValueError(f"buffer_store_slice: axis {a}: only step 1 is supported")
            parts.append(0 if i.start is None else i.start)
        elif isinstance(i, (int, np.integer, TensorValue)):
            parts.append(i)
        else:
            raise TypeError(f"buffer_store_slice: axis {a}: unsupported index {i!r}")
    if all(isinstance(p, (int, np.integer)) for p in parts):
        return _core.constant(np.asarray(parts, dtype=np.int64), graph=d.graph)
    from . import concat, reshape

    pieces = []
    for p in parts:
        if isinstance(p, TensorValue):
            pieces.append(reshape(p.cast(DType.int64) if p.dtype != DType.int64 else p, [1]))
        else:
            pieces.append(_core.constant(np.asarray([int(p)], dtype=np.int64), graph=d.graph))
    return concat(pieces, 0)


def buffer_store_slice(destination: BufferValue, source: Any, indices: Sequence[Any]) -> None:
    """Write source into a slice of the buffer (``buf[:, pos:pos + n] = new``):
    indices give each axis's start (a slice's start, an int or a scalar
    tensor); the slice's extent is the source's shape. A slice outside the
    buffer is an error when the graph runs."""
    d = destination.buffer
    src = source if isinstance(source, TensorValue) else _core.as_value(source, graph=d.graph)
    if src.rank != d.rank:
        raise ValueError(f"buffer_store_slice: the source has rank {src.rank}, the buffer "
                         f"{d.rank} (unsqueeze the source so each buffer axis has one)")
    start = _starts(d, src, indices)
    _chained(d.graph, "mo.mutable.store.slice", [d._v, src._v, start._v])
