"""kiln.graph.ops._core: how an op call becomes a kiln op.

``add_op("mo.add", [a, b])`` adds an op to the graph the operands belong to
(or ``Graph.current``) through kiln's C builder, which infers the result
types; ``attrs`` (a dict) is written as MO attribute text. ``as_value``
turns Python numbers and numpy arrays into constants, in the dtype of the
value they meet (``x + 1.0`` is ``x + constant(1.0, x.dtype)``).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from ...dtype import DType
from ..dim import Dim
from ..type import TensorType
from ..value import TensorValue

__all__ = ["add_op", "add_op1", "as_value", "format_attrs", "graph_of", "constant",
           "normalize_axis", "dim_text", "static_dim", "tensor_type", "INT64_MAX", "INT64_MIN",
           "dims_of"]

INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808


def graph_of(*values: Any):
    """The graph of the first TensorValue among values, else Graph.current."""
    from ..graph import Graph
    from ..weight import Weight

    for v in values:
        if isinstance(v, TensorValue):
            return v._graph
        if isinstance(v, Weight):
            return Graph.current
    return Graph.current


def _attr(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, DType):
        return v.mo_name
    if isinstance(v, Dim):
        return v.to_mlir()
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f) or math.isinf(f):
            return str(f)  # "nan", "inf", "-inf"
        r = repr(f)
        if "e" in r and "." not in r.split("e")[0]:
            m, e = r.split("e")
            r = f"{m}.0e{e}"
        return r
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr(x) for x in v) + "]"
    raise TypeError(f"no MO attribute form for {type(v).__name__} {v!r}")


def format_attrs(attrs: dict | None) -> str | None:
    """MO attribute text for a dict ({"axis": -1} -> "{axis = -1}"); None stays None."""
    if not attrs:
        return None
    return "{" + ", ".join(f"{k} = {_attr(v)}" for k, v in attrs.items() if v is not None) + "}"


def constant(value: Any, dtype: DType | None = None, device: Any = None,
             graph: Any = None) -> TensorValue:
    """A constant tensor of the graph (the data is copied into it)."""
    if dtype is not None:
        dtype = DType(dtype)
        arr = np.asarray(value, dtype=dtype.to_numpy())
    else:
        arr = np.asarray(value)
        if arr.dtype == np.float64 and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)  # a Python float is f32 unless asked
        dtype = DType.from_numpy(arr.dtype)
    shape = arr.shape  # np.ascontiguousarray makes a 0-d array 1-d: keep the rank here
    flat = np.ascontiguousarray(arr).reshape(-1)
    g = graph if graph is not None else graph_of()
    return TensorValue(g, g._g.add_constant(dtype._kiln, shape, flat.view(np.uint8)
                                           if flat.size else b""))


def as_value(x: Any, like: TensorValue | None = None, graph: Any = None) -> TensorValue:
    """x as a TensorValue: values pass; Weights become their graph value;
    Python numbers and numpy arrays become constants (numbers take the dtype
    of `like`)."""
    from ..weight import Weight

    if isinstance(x, TensorValue):
        return x
    if isinstance(x, Weight):
        return x._value()
    g = graph if graph is not None else (like._graph if like is not None else graph_of())
    if isinstance(x, (bool, int, float, np.number, np.bool_)) and like is not None:
        if (isinstance(x, (float, np.floating)) and like.dtype.is_integral()
                and not float(x).is_integer()):
            from ... import DTypeError

            raise DTypeError(f"the number {x!r} meets a {like.dtype.mo_name} value: "
                             f"it is not an integer (cast the value to a float dtype first)")
        return constant(x, like.dtype, graph=g)
    if isinstance(x, (bool, int, float, np.ndarray, np.number, np.bool_, list, tuple)):
        return constant(x, graph=g)
    raise TypeError(f"expected a graph value, a number or an array, got {type(x).__name__}")


def add_op(name: str, operands: Sequence[Any], attrs: dict | None = None,
           result_type: TensorType | str | Sequence[TensorType | str] | None = None
           ) -> list[TensorValue]:
    """Add op `name` ("mo.add" or "add"); returns every result. result_type:
    the declared type of its one result, or a list with one per result."""
    like = next((o for o in operands if isinstance(o, TensorValue)), None)
    g = _target_graph(operands, like)
    vals = [g._capture(v) if v._graph is not g and v._graph._encloses(g) else v
            for v in (as_value(o, like, graph=g) for o in operands)]
    if result_type is None or isinstance(result_type, (str, TensorType)):
        rt: Any = None if result_type is None else _type_text(result_type)
    else:
        rt = [_type_text(t) for t in result_type]
    return [TensorValue(g, v) for v in g._g.add_op(name, [v._v for v in vals],
                                                   format_attrs(attrs), rt)]


def _target_graph(operands: Sequence[Any], like: TensorValue | None) -> Any:
    """The graph an op goes to: the first value's, or the graph being built
    when that is a cond branch nested in the graphs of all the values (they
    are captured: Graph._capture)."""
    from ..graph import Graph

    try:
        cur = Graph.current
    except LookupError:
        cur = None
    vals = [o for o in operands if isinstance(o, TensorValue)]
    if (cur is not None and vals and any(v._graph is not cur for v in vals)
            and all(v._graph._encloses(cur) for v in vals)):
        return cur
    return like._graph if like is not None else graph_of(*operands)


def _type_text(t: TensorType | str) -> str:
    return t.to_mlir() if isinstance(t, TensorType) else t


def add_op1(name: str, operands: Sequence[Any], attrs: dict | None = None,
            result_type: TensorType | str | None = None) -> TensorValue:
    """add_op for an op with one result."""
    return add_op(name, operands, attrs, result_type)[0]


def normalize_axis(axis: int, rank: int) -> int:
    """axis in [-rank, rank) as a non-negative axis (IndexError otherwise)."""
    if not -rank <= axis < max(rank, 1):
        raise IndexError(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def dim_text(d: Any) -> str:
    """kiln's text of a dim given as an int, a symbol name, an expression or a Dim."""
    if isinstance(d, Dim):
        return d.to_mlir()
    if isinstance(d, (int, np.integer)) and not isinstance(d, bool):
        return str(int(d))
    return Dim(d).to_mlir()


def static_dim(d: Any) -> int | None:
    """The int of a static dim (an int, "4" or StaticDim(4)); None for a symbolic one."""
    t = dim_text(d)
    try:
        return int(t)
    except ValueError:
        return None


def tensor_type(dtype: DType, dims: Iterable[Any]) -> str:
    """MO type text for dtype and dims: ``!mo.tensor<[batch, 4], f32>``."""
    return f"!mo.tensor<[{', '.join(dim_text(d) for d in dims)}], {DType(dtype).mo_name}>"


def dims_of(x: TensorValue) -> list[str]:
    """x's dims as text."""
    return list(x._v.dims)
