"""kiln.graph.ops.sorting: top_k, bottom_k and argsort (indices are si64).

Equal elements keep the lower index first; NaN sorts above every number.
"""

from __future__ import annotations

from typing import Any

from . import _core
from ..value import TensorValue

__all__ = ["top_k", "bottom_k", "argsort"]


def top_k(input: Any, k: int, axis: int = -1) -> tuple[TensorValue, TensorValue]:
    """The k largest elements along axis, descending, and their indices (si64)."""
    v = _core.as_value(input)
    vals, idx = _core.add_op("mo.top_k", [v], {"k": int(k),
                                               "axis": _core.normalize_axis(axis, v.rank)})
    return vals, idx


def bottom_k(input: Any, k: int, axis: int = -1) -> tuple[TensorValue, TensorValue]:
    """The k smallest elements along axis, ascending, and their indices
    (kiln's mo.bottom_k; not in MAX's list)."""
    v = _core.as_value(input)
    vals, idx = _core.add_op("mo.bottom_k", [v], {"k": int(k),
                                                  "axis": _core.normalize_axis(axis, v.rank)})
    return vals, idx


def argsort(x: Any, ascending: bool = True) -> TensorValue:
    """The indices (si64) that sort x along its first axis (stable)."""
    return _core.add_op1("mo.argsort", [x], {"axis": 0, "ascending": ascending})
