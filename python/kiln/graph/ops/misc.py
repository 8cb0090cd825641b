"""kiln.graph.ops.misc: constants, range, matmul / outer, print, transfer_to and fence.

outer is composed (unsqueeze, mul); the others are one MO op each. range's
length is static when start, stop and step are numbers; otherwise out_dim
(or a fresh symbol, which kiln sets from the operands' values).
"""

from __future__ import annotations

import math
from typing import Any

from ...dtype import DType
from . import _core
from ._core import constant
from ..type import TensorType, _device_ref
from ..value import TensorValue

__all__ = ["constant", "constant_external", "range", "matmul", "outer", "print", "transfer_to",
           "fence"]


def constant_external(name: str, type: TensorType) -> TensorValue:
    """A weight named name of type `type`, bound when the model is loaded
    (``weights_registry``)."""
    g = _core.graph_of()
    return TensorValue(g, g._g.add_weight(name, type.dtype._kiln,
                                          [_core.dim_text(d) for d in type.shape]))


def range(start: Any, stop: Any, step: Any = 1, out_dim: Any = None, *,
          dtype: DType | None = None, device: Any = None) -> TensorValue:
    """start, start + step, ... up to (not including) stop, as a 1-D tensor
    of dtype (default: the operands' dtype, else float32)."""
    from .shape import _fresh_symbol

    vals = (start, stop, step)
    tv = next((v for v in vals if isinstance(v, TensorValue)), None)
    if dtype is None:
        dtype = tv.dtype if tv is not None else DType.float32
    dtype = DType(dtype)
    g = _core.graph_of(*vals)
    ops = [v if isinstance(v, TensorValue) else _core.constant(v, dtype, graph=g) for v in vals]
    for name, o in zip(("start", "stop", "step"), ops):
        if o.rank != 0:
            raise ValueError(f"range: {name} must be a scalar (rank 0), got rank {o.rank}")
    if out_dim is not None:
        n = _core.dim_text(out_dim)
    elif tv is None:
        if step == 0:
            raise ValueError("range: step must be nonzero")
        n = str(max(0, math.ceil((stop - start) / step)))
    else:
        n = _fresh_symbol(g, "range")
    return _core.add_op1("mo.range", ops, None, _core.tensor_type(dtype, [n]))


def matmul(lhs: Any, rhs: Any) -> TensorValue:
    """The matrix product over the last two axes (batch axes broadcast; a
    1-D operand is a vector)."""
    return _core.add_op1("mo.matmul", [lhs, rhs])


def outer(lhs: Any, rhs: Any) -> TensorValue:
    """The outer product of two vectors: result[i, j] = lhs[i] * rhs[j]."""
    from .shape import unsqueeze

    a, b = _core.as_value(lhs), _core.as_value(rhs)
    if a.rank != 1 or b.rank != 1:
        raise ValueError(f"outer: both operands must be 1-D, got ranks {a.rank} and {b.rank}")
    return _core.add_op1("mo.mul", [unsqueeze(a, 1), unsqueeze(b, 0)])


def print(value: Any, label: str = "debug_tensor") -> None:
    """Print value (label: tensor<...> [elements]) to stderr when the graph runs."""
    _core.add_op1("mo.print", [value], {"label": label})


def transfer_to(x: Any, device: Any) -> TensorValue:
    """x on device (a DeviceRef or a kiln.driver device)."""
    ref = _device_ref(device)
    return _core.add_op1("mo.transfer_to", [x], {"device": f"{ref.device_type}:{ref.id}"})


def fence(*values: Any) -> list[Any]:
    """The values, unchanged (MAX's scheduling barrier). kiln runs a graph's
    ops in one order that respects their data and chain dependencies, with
    no asynchronous reordering across devices, so a fence adds no op."""
    return list(values)
