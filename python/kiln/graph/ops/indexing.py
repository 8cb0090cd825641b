"""kiln.graph.ops.indexing: slicing, gathers, scatters and nonzero.

slice_tensor takes numpy's index forms (as MAX's and TensorValue's
``x[...]``): ints, slices with steps, one ``...`` and None (a new axis);
negative indices count from the end. It is one mo.slice_tensor, then a
mo.squeeze per int index and a mo.unsqueeze per None. As in MAX, an axis may
be ``(slice(start, stop, step), out_dim)`` with bounds that are TensorValues
(1-D si32 / si64 of length 1: graph inputs or constants, read before the graph
runs): that axis is one more mo.slice_tensor with data operands, and its
length is the dim out_dim (a new symbol is bound from the data). The gathers and
scatters are one MO op each; indices are si32 / si64 (Python lists become
si64 constants).
"""

from __future__ import annotations

from typing import Any

from ...dtype import DType
from ..dim import Dim
from . import _core
from ..value import TensorValue

__all__ = ["slice_tensor", "gather", "gather_nd", "gather_elements", "scatter", "scatter_add",
           "scatter_mul", "scatter_max", "scatter_min", "scatter_nd", "scatter_nd_add",
           "scatter_nd_mul", "scatter_nd_max", "scatter_nd_min", "masked_scatter", "nonzero"]


def _index_of(i: Any) -> int | None:
    if isinstance(i, bool):
        return None
    try:
        return i.__index__()
    except (AttributeError, TypeError):
        return None


def _is_data_slice(i: Any) -> bool:
    """(slice, out_dim) with out_dim a symbol name or a Dim (an int would read as
    numpy's x[slice, int])."""
    return (isinstance(i, tuple) and len(i) == 2 and isinstance(i[0], slice)
            and isinstance(i[1], (str, Dim)))


def _data_bound(b: Any, default: int, like: TensorValue) -> TensorValue:
    """A bound of a data slice: a TensorValue as is, an int (or None: default)
    as a constant [1] of like's dtype."""
    if isinstance(b, TensorValue):
        return b
    i = default if b is None else _index_of(b)
    if i is None:
        raise TypeError(f"slice_tensor: a bound of a (slice, out_dim) entry is a TensorValue, "
                        f"an int or None, got {type(b).__name__}")
    return _core.constant([i], like.dtype, graph=like._graph)


def _slice_data(v: TensorValue, axis: int, sl: slice, out_dim: Any) -> TensorValue:
    """v sliced along axis by tensor bounds: mo.slice_tensor (x, start, stop, step, axes)."""
    like = next((b for b in (sl.start, sl.stop, sl.step) if isinstance(b, TensorValue)), None)
    if like is None:
        raise TypeError("slice_tensor: a (slice, out_dim) entry needs a TensorValue bound "
                        "(a plain slice takes ints)")
    if like.dtype not in (DType.int32, DType.int64):
        raise TypeError(f"slice_tensor: slice bounds are si32 / si64, got {like.dtype.mo_name}")
    step = _data_bound(sl.step, 1, like)
    start = _data_bound(sl.start, 0, like)
    stop = _data_bound(sl.stop, _core.INT64_MAX, like)
    axes = _core.constant([axis], like.dtype, graph=like._graph)
    dims = _core.dims_of(v)
    dims[axis] = _core.dim_text(out_dim)
    return _core.add_op1("mo.slice_tensor", [v, start, stop, step, axes],
                         result_type=_core.tensor_type(v.dtype, dims))


def _expand(indices: tuple, rank: int) -> list:
    """indices with `...` (or the missing trailing axes) as full slices."""
    for i in indices:
        if not (i is None or i is Ellipsis or isinstance(i, slice) or _index_of(i) is not None
                or _is_data_slice(i)):
            raise TypeError(f"slice_tensor: an index is an int, a slice, (slice, out_dim), "
                            f"... or None, got {type(i).__name__}")
    n_ell = sum(1 for i in indices if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("slice_tensor: an index can only have one ellipsis ('...')")
    consuming = sum(1 for i in indices if i is not None and i is not Ellipsis)
    if consuming > rank:
        raise IndexError(f"slice_tensor: too many indices ({consuming}) for a rank {rank} tensor")
    fill = [slice(None)] * (rank - consuming)
    if n_ell:
        k = indices.index(Ellipsis)
        return list(indices[:k]) + fill + list(indices[k + 1:])
    return list(indices) + fill


def slice_tensor(x: Any, indices: Any) -> TensorValue:
    """x indexed as numpy does: ints (the axis dropped), slices with steps,
    ``...`` and None (a new axis of size 1); negative indices count from the end."""
    v = _core.as_value(x)
    if not isinstance(indices, (tuple, list)) or _is_data_slice(indices):
        indices = (indices,)  # x[(slice(0, n), "n")] indexes axis 0
    entries = _expand(tuple(indices), v.rank)
    dims = _core.dims_of(v)
    start, stop, step, squeezed = [], [], [], []
    axis = 0
    data_slices = []
    for e in entries:
        if e is None:
            continue
        if _is_data_slice(e):
            data_slices.append((axis, e[0], e[1]))
            start.append(0), stop.append(_core.INT64_MAX), step.append(1)
        elif isinstance(e, slice):
            st = 1 if e.step is None else _index_of(e.step)
            if st is None or st == 0:
                raise ValueError(f"slice_tensor: axis {axis}: the step must be a nonzero int, "
                                 f"got {e.step!r}")
            lo = (_core.INT64_MIN if st < 0 else 0) if e.start is None else _index_of(e.start)
            hi = _core.INT64_MAX if e.stop is None else _index_of(e.stop)
            if lo is None or hi is None:
                raise TypeError(f"slice_tensor: axis {axis}: slice bounds must be ints, got {e}")
            if st < 0 and e.stop is None:
                hi = _core.INT64_MIN
            start.append(lo), stop.append(hi), step.append(st)
        else:
            i = _index_of(e)
            n = _core.static_dim(dims[axis])
            if n is not None and not -n <= i < n:
                raise IndexError(f"slice_tensor: index {i} is out of range for axis {axis} "
                                 f"of size {n}")
            start.append(i), stop.append(_core.INT64_MAX if i == -1 else i + 1), step.append(1)
            squeezed.append(axis)
        axis += 1
    out = v
    whole = all(a == 0 and b == _core.INT64_MAX and s == 1 for a, b, s in zip(start, stop, step))
    if not whole:
        out = _core.add_op1("mo.slice_tensor", [v], {"start": start, "stop": stop, "step": step})
    for a, sl, out_dim in data_slices:
        out = _slice_data(out, a, sl, out_dim)
    for a in reversed(squeezed):
        out = _core.add_op1("mo.squeeze", [out], {"axis": a})
    pos = 0
    for e in entries:
        if e is None:
            out = _core.add_op1("mo.unsqueeze", [out], {"axis": pos})
            pos += 1
        elif isinstance(e, slice) or _is_data_slice(e):
            pos += 1
    return out


def _indices(indices: Any, like: Any) -> TensorValue:
    if isinstance(indices, TensorValue):
        return indices
    return _core.constant(indices, DType.int64, graph=_core.graph_of(like))


def gather(input: Any, indices: Any, axis: int = -1) -> TensorValue:
    """input's slices along axis at indices: the result's shape is input's
    with dim `axis` replaced by indices' shape."""
    v = _core.as_value(input)
    return _core.add_op1("mo.gather", [v, _indices(indices, v)],
                         {"axis": _core.normalize_axis(axis, v.rank)})


def gather_nd(input: Any, indices: Any, batch_dims: int = 0) -> TensorValue:
    """input[b, indices[b, j, :], ...]: the last dim of indices indexes the
    leading dims of input after batch_dims batch dims."""
    v = _core.as_value(input)
    attrs = {"batch_dims": batch_dims} if batch_dims else None
    return _core.add_op1("mo.gather_nd", [v, _indices(indices, v)], attrs)


def gather_elements(input: Any, indices: Any, axis: int = -1) -> TensorValue:
    """input at indices along axis, elementwise (ONNX GatherElements; kiln's,
    not in MAX's list): the result has indices' shape."""
    v = _core.as_value(input)
    return _core.add_op1("mo.gather_elements", [v, _indices(indices, v)],
                         {"axis": _core.normalize_axis(axis, v.rank)})


def _scatter(mo: str, input: Any, updates: Any, indices: Any, axis: int | None) -> TensorValue:
    v = _core.as_value(input)
    u = _core.as_value(updates, v)
    attrs = None if axis is None else {"axis": _core.normalize_axis(axis, v.rank)}
    return _core.add_op1(mo, [v, u, _indices(indices, v)], attrs)


def scatter(input: Any, updates: Any, indices: Any, axis: int = -1) -> TensorValue:
    """input with updates written at indices along axis (the last write wins)."""
    return _scatter("mo.scatter", input, updates, indices, axis)


def scatter_add(input: Any, updates: Any, indices: Any, axis: int = -1) -> TensorValue:
    """scatter that adds updates into input (kiln's mo.scatter_add)."""
    return _scatter("mo.scatter_add", input, updates, indices, axis)


def scatter_mul(input: Any, updates: Any, indices: Any, axis: int = -1) -> TensorValue:
    """scatter that multiplies input by updates (kiln's mo.scatter_mul)."""
    return _scatter("mo.scatter_mul", input, updates, indices, axis)


def scatter_max(input: Any, updates: Any, indices: Any, axis: int = -1) -> TensorValue:
    """scatter that keeps the larger of input and updates (kiln's mo.scatter_max)."""
    return _scatter("mo.scatter_max", input, updates, indices, axis)


def scatter_min(input: Any, updates: Any, indices: Any, axis: int = -1) -> TensorValue:
    """scatter that keeps the smaller of input and updates (kiln's mo.scatter_min)."""
    return _scatter("mo.scatter_min", input, updates, indices, axis)


def scatter_nd(input: Any, updates: Any, indices: Any) -> TensorValue:
    """input with the slices at indices[j, :] set to updates[j]."""
    return _scatter("mo.scatter_nd", input, updates, indices, None)


def scatter_nd_add(input: Any, updates: Any, indices: Any) -> TensorValue:
    """scatter_nd that adds updates (kiln's mo.scatter_nd_add)."""
    return _scatter("mo.scatter_nd_add", input, updates, indices, None)


def scatter_nd_mul(input: Any, updates: Any, indices: Any) -> TensorValue:
    """scatter_nd that multiplies by updates (kiln's mo.scatter_nd_mul)."""
    return _scatter("mo.scatter_nd_mul", input, updates, indices, None)


def scatter_nd_max(input: Any, updates: Any, indices: Any) -> TensorValue:
    """scatter_nd that keeps the larger value (kiln's mo.scatter_nd_max)."""
    return _scatter("mo.scatter_nd_max", input, updates, indices, None)


def scatter_nd_min(input: Any, updates: Any, indices: Any) -> TensorValue:
    """scatter_nd that keeps the smaller value (kiln's mo.scatter_nd_min)."""
    return _scatter("mo.scatter_nd_min", input, updates, indices, None)


def masked_scatter(input: Any, mask: Any, updates: Any, out_dim: Any) -> TensorValue:
    """input with its elements where mask (bool, broadcast) is true taken, in
    row-major order, from updates (read flat). out_dim is accepted as MAX's."""
    v = _core.as_value(input)
    attrs = {"out_dim": _core.dim_text(out_dim)} if out_dim is not None else None
    return _core.add_op1("mo.masked_scatter", [v, _core.as_value(mask), _core.as_value(updates, v)],
                         attrs)


def nonzero(x: Any, out_dim: Any) -> TensorValue:
    """The indices (si64 [out_dim, rank]) of x's nonzero elements, row-major;
    out_dim is a new symbol whose value the op sets when it runs."""
    v = _core.as_value(x)
    return _core.add_op1("mo.nonzero", [v], None,
                         _core.tensor_type(DType.int64, [out_dim, v.rank]))
