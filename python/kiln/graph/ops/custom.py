"""kiln.graph.ops.custom: ops served by kernel libraries (kiln/kernel.h).

``custom(name, device, values, out_types, parameters)`` is one mo.custom with
``symbol = name`` and each parameter an attribute the kernel reads by name.
The library is given as the Graph's custom_extensions (or the session's).
kiln's builder declares one result per mo.custom (kiln_graph_add_op).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...dtype import DType
from . import _core
from ..type import TensorType
from ..value import TensorValue

__all__ = ["custom", "inplace_custom"]


def _params(parameters: Mapping[str, Any] | None) -> dict:
    out: dict = {}
    for k, v in (parameters or {}).items():
        if k == "symbol" or k.startswith("kiln."):
            raise ValueError(f"custom: parameter name {k!r} is reserved")
        out[k] = v.mo_name if isinstance(v, DType) else v
    return out


def _values(values: Sequence[Any]) -> list[TensorValue]:
    like = next((v for v in values if isinstance(v, TensorValue)), None)
    return [_core.as_value(v, like) for v in values]


def custom(name: str, device: Any, values: Sequence[Any], out_types: Sequence[TensorType],
           parameters: Mapping[str, Any] | None = None) -> list[TensorValue]:
    """The kernel `name` of a kernel library applied to values; one result
    per entry of out_types (parameters reach the kernel as kiln_param_*)."""
    out_types = list(out_types)
    if not out_types:
        raise ValueError("custom: out_types is empty")
    attrs = {"symbol": name, **_params(parameters)}
    return _core.add_op("mo.custom", _values(values), attrs,
                        [_core.tensor_type(t.dtype, t.shape) for t in out_types])


def inplace_custom(name: str, device: Any, values: Sequence[Any], out_types: Any = None,
                   parameters: Mapping[str, Any] | None = None) -> list[TensorValue]:
    """The kernel `name` updating values[0]. On a tensor: it updates a copy,
    returned as [that copy] (kiln's tensors are immutable). On a BufferValue:
    the kernel gets the buffer's own memory (the caller's array) and changes
    it in place, ordered by the graph's chain (a load, the kernel and a store
    that the runtime turns into no copies: src/buffers.h); the result is []
    as in MAX."""
    from ..value import BufferValue
    from .buffer import buffer_load, buffer_store

    attrs = {"symbol": name, **_params(parameters)}
    vals = list(values)
    if vals and isinstance(vals[0], BufferValue):
        buf = vals[0]
        (updated,) = _core.add_op("mo.inplace_custom",
                                  _values([buffer_load(buf), *vals[1:]]), attrs)
        buffer_store(buf, updated)
        return []
    return _core.add_op("mo.inplace_custom", _values(values), attrs)
