"""kiln.graph.ops.shape: ops that move data or change shapes, not values.

reshape / broadcast_to declare their result type to kiln (built here from
the shape given: ints, symbol names, Dims; reshape's one -1 is solved here,
as an expression of x's dims when they are symbolic). stack, chunk, flatten,
rebind, shape_to_tensor of a shape and as_interleaved_complex are composed
from kiln ops; the rest are one MO op each.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

from . import _core
from ..value import TensorValue

__all__ = ["reshape", "flatten", "transpose", "permute", "broadcast_to", "concat", "split",
           "chunk", "stack", "squeeze", "unsqueeze", "rebind", "tile", "shape_to_tensor",
           "repeat_interleave", "as_interleaved_complex"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _paren(t: str) -> str:
    return t if _IDENT.match(t) or re.fullmatch(r"\d+", t) else f"({t})"


def _product(dims: Iterable[str]) -> str:
    """The product of dim texts as one dim text (static parts multiplied out)."""
    static, syms = 1, []
    for d in dims:
        s = _core.static_dim(d)
        if s is None:
            syms.append(_paren(d))
        else:
            static *= s
    if not syms:
        return str(static)
    return " * ".join(([str(static)] if static != 1 else []) + syms)


def _solve_minus_one(xdims: list[str], target: list[str]) -> list[str]:
    holes = [i for i, d in enumerate(target) if d == "-1"]
    if len(holes) > 1:
        raise ValueError(f"reshape: at most one -1 in the shape, got {target}")
    if not holes:
        return target
    static_x, syms = 1, []
    for d in xdims:
        s = _core.static_dim(d)
        if s is None:
            syms.append(d)
        else:
            static_x *= s
    static_t, divs = 1, []
    for d in target:
        if d == "-1":
            continue
        s = _core.static_dim(d)
        if s is None:
            if d in syms:
                syms.remove(d)
            else:
                divs.append(d)
        else:
            static_t *= s
    if static_t == 0:
        raise ValueError(f"reshape: -1 is ambiguous with a 0 dim in {target}")
    if not syms and not divs:
        if static_x % static_t:
            raise ValueError(f"reshape: cannot reshape [{', '.join(xdims)}] ({static_x} "
                             f"elements) to {target}")
        solved = str(static_x // static_t)
    elif static_x % static_t == 0:
        solved = _product([str(static_x // static_t)] + syms)
        if divs:
            solved = f"({solved}) floordiv ({_product(divs)})"
    else:
        num, den = _product([str(static_x)] + syms), _product([str(static_t)] + divs)
        solved = f"({num}) floordiv ({den})"
    target = list(target)
    target[holes[0]] = solved
    return target


def reshape(x: Any, shape: Iterable[Any]) -> TensorValue:
    """x with a new shape of the same element count (one entry may be -1:
    inferred); shape entries are ints, symbol names or Dims."""
    v = _core.as_value(x)
    target = _solve_minus_one(_core.dims_of(v), [_core.dim_text(d) for d in shape])
    return _core.add_op1("mo.reshape", [v], None, _core.tensor_type(v.dtype, target))


def flatten(x: Any, start_dim: int = 0, end_dim: int = -1) -> TensorValue:
    """x with the axes start_dim..end_dim (inclusive) merged into one."""
    v = _core.as_value(x)
    dims = _core.dims_of(v)
    if v.rank == 0:
        return reshape(v, [1])
    s = _core.normalize_axis(start_dim, v.rank)
    e = _core.normalize_axis(end_dim, v.rank)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} is after end_dim {end_dim}")
    return reshape(v, dims[:s] + [_product(dims[s:e + 1])] + dims[e + 1:])


def transpose(x: Any, axis_1: int, axis_2: int) -> TensorValue:
    """x with axes axis_1 and axis_2 swapped (negative counts from the end)."""
    v = _core.as_value(x)
    a = _core.normalize_axis(axis_1, v.rank)
    b = _core.normalize_axis(axis_2, v.rank)
    return _core.add_op1("mo.transpose", [v], {"axis_1": a, "axis_2": b})


def permute(x: Any, dims: Sequence[int]) -> TensorValue:
    """x with its axes reordered: result axis i is x's axis dims[i]."""
    v = _core.as_value(x)
    if len(dims) != v.rank:
        raise ValueError(f"permute: dims {list(dims)} has {len(dims)} entries for a rank "
                         f"{v.rank} tensor")
    return _core.add_op1("mo.permute", [v],
                         {"dims": [_core.normalize_axis(d, v.rank) for d in dims]})


def broadcast_to(x: Any, shape: Any, out_dims: Iterable[Any] | None = None) -> TensorValue:
    """x broadcast (numpy rules) to shape: dims, or a 1-D int tensor whose
    values are the shape (then out_dims gives the result's dims)."""
    v = _core.as_value(x)
    if isinstance(shape, TensorValue):
        if out_dims is None:
            raise ValueError("broadcast_to: a shape tensor needs out_dims (the result's dims)")
        return _core.add_op1("mo.broadcast_to", [v, shape], None,
                             _core.tensor_type(v.dtype, out_dims))
    return _core.add_op1("mo.broadcast_to", [v], None, _core.tensor_type(v.dtype, shape))


def concat(original_vals: Iterable[Any], axis: int = 0) -> TensorValue:
    """The values joined along axis (one dtype and rank; other dims equal)."""
    vals = list(original_vals)
    if not vals:
        raise ValueError("concat: no values")
    like = next((v for v in vals if isinstance(v, TensorValue)), None)
    vs = [_core.as_value(v, like) for v in vals]
    return _core.add_op1("mo.concat", vs, {"axis": _core.normalize_axis(axis, vs[0].rank)})


def split(x: Any, split_sizes: Sequence[Any], axis: int = 0) -> list[TensorValue]:
    """x cut along axis into pieces of split_sizes (which sum to the axis'
    dim); one value per size. Sizes are ints or dims (symbolic ones are
    checked when the graph runs)."""
    v = _core.as_value(x)
    sizes = [_core.static_dim(s) for s in split_sizes]
    if not sizes:
        raise ValueError("split: split_sizes is empty")
    a = _core.normalize_axis(axis, v.rank)
    attrs = {"split_sizes": [-1 if s is None else s for s in sizes], "axis": a}
    if all(s is not None for s in sizes):
        return _core.add_op("mo.split", [v], attrs)
    dims = _core.dims_of(v)
    types = [_core.tensor_type(v.dtype, dims[:a] + [_core.dim_text(s)] + dims[a + 1:])
             for s in split_sizes]
    return _core.add_op("mo.split", [v], attrs, types)


def chunk(x: Any, chunks: int, axis: int = 0) -> list[TensorValue]:
    """x split into `chunks` equal pieces along axis (its dim must be static
    and divisible by chunks)."""
    v = _core.as_value(x)
    a = _core.normalize_axis(axis, v.rank)
    n = _core.static_dim(_core.dims_of(v)[a])
    if n is None or chunks <= 0 or n % chunks:
        raise ValueError(f"chunk: {chunks} chunks do not evenly divide dim "
                         f"{_core.dims_of(v)[a]} of axis {axis}")
    return split(v, [n // chunks] * chunks, a)


def stack(values: Iterable[Any], axis: int = 0) -> TensorValue:
    """The values (one type) joined along a new axis (negative: counted from
    the end of the result's shape)."""
    vals = [_core.as_value(v) for v in values]
    if not vals:
        raise ValueError("stack: no values")
    a = _core.normalize_axis(axis, vals[0].rank + 1)
    return concat([unsqueeze(v, a) for v in vals], a)


def squeeze(x: Any, axis: int) -> TensorValue:
    """x without axis, whose dim must be 1."""
    v = _core.as_value(x)
    return _core.add_op1("mo.squeeze", [v], {"axis": _core.normalize_axis(axis, v.rank)})


def unsqueeze(x: Any, axis: int) -> TensorValue:
    """x with a new axis of size 1 at axis (in [-rank - 1, rank])."""
    v = _core.as_value(x)
    return _core.add_op1("mo.unsqueeze", [v], {"axis": _core.normalize_axis(axis, v.rank + 1)})


def rebind(x: Any, shape: Iterable[Any], message: str = "", layout: Any = None) -> TensorValue:
    """x asserted to have shape (same element count): x itself when the dims
    already match, else kiln's reshape to the declared dims."""
    v = _core.as_value(x)
    target = [_core.dim_text(d) for d in shape]
    if target == _core.dims_of(v):
        return v
    if len(target) != v.rank:
        raise ValueError(f"rebind: shape {target} has rank {len(target)}, x has rank {v.rank}"
                         + (f" ({message})" if message else ""))
    return _core.add_op1("mo.reshape", [v], None, _core.tensor_type(v.dtype, target))


def tile(x: Any, repeats: Iterable[Any]) -> TensorValue:
    """x repeated repeats[i] times along each axis i (static repeats)."""
    v = _core.as_value(x)
    reps = [_core.static_dim(r) for r in repeats]
    if any(r is None for r in reps):
        raise ValueError(f"tile: repeats must be static ints, got {list(repeats)}")
    return _core.add_op1("mo.tile", [v], {"repeats": reps})


def shape_to_tensor(shape: Any) -> TensorValue:
    """A 1-D si64 tensor of a shape's dims. shape: a TensorValue (its run-time
    shape), or dims: ints, and symbols that some graph input's shape binds."""
    from ...dtype import DType

    if isinstance(shape, TensorValue):
        return _core.add_op1("mo.shape_to_tensor", [shape])
    dims = [_core.dim_text(d) for d in shape]
    g = _core.graph_of()
    parts: list[TensorValue] = []
    for d in dims:
        s = _core.static_dim(d)
        if s is not None:
            parts.append(_core.constant([s], DType.int64, graph=g))
            continue
        for inp in g.inputs:
            if d in _core.dims_of(inp):
                i = _core.dims_of(inp).index(d)
                whole = _core.add_op1("mo.shape_to_tensor", [inp])
                parts.append(_core.add_op1("mo.slice_tensor", [whole],
                                           {"start": [i], "stop": [i + 1], "step": [1]}))
                break
        else:
            raise ValueError(f"shape_to_tensor: dim {d} is not a dim of a graph input; "
                             "pass a tensor of that shape instead")
    if not parts:
        return _core.constant([], DType.int64, graph=g)
    return parts[0] if len(parts) == 1 else concat(parts, 0)


def _fresh_symbol(g: Any, prefix: str) -> str:
    n = getattr(g, "_ops_symbols", 0)
    g._ops_symbols = n + 1
    return f"{prefix}_{n}"


def repeat_interleave(x: Any, repeats: Any, axis: int | None = None,
                      out_dim: Any = None) -> TensorValue:
    """Each element of x repeated `repeats` times along axis (None: x
    flattened first). repeats: an int, or a 1-D integer tensor (a graph input
    or constant: one count per element, or one for all); the result's dim
    along axis is then out_dim (a new symbol when None)."""
    v = _core.as_value(x)
    attrs: dict = {}
    if axis is not None:
        attrs["axis"] = _core.normalize_axis(axis, v.rank)
    if not isinstance(repeats, TensorValue):
        attrs["repeats"] = int(repeats)
        return _core.add_op1("mo.repeat_interleave", [v], attrs)
    dim = _core.dim_text(out_dim) if out_dim is not None else _fresh_symbol(v._graph, "repeat")
    dims = [dim] if axis is None else [dim if i == attrs["axis"] else d
                                       for i, d in enumerate(v.shape.to_mlir())]
    return _core.add_op1("mo.repeat_interleave", [v, repeats], attrs,
                         _core.tensor_type(v.dtype, dims))


def as_interleaved_complex(x: Any) -> TensorValue:
    """x's last axis (even, alternating real, imag) as [..., n / 2, 2] pairs
    (kiln has no complex dtype: the pairs stay real)."""
    v = _core.as_value(x)
    dims = _core.dims_of(v)
    n = _core.static_dim(dims[-1])
    if n is not None and n % 2:
        raise ValueError(f"as_interleaved_complex: the last dim must be even, got {n}")
    half = str(n // 2) if n is not None else f"{_paren(dims[-1])} floordiv 2"
    return reshape(v, dims[:-1] + [half, 2])
