"""kiln.graph.ops.reduction: reductions and scans along one axis.

As MAX's, a reduction keeps the reduced axis with size 1 (``sum(x [2, 3])``
is ``[2, 1]``); axes may be negative. ``max`` / ``min`` (elementwise with two
operands, reducing with one) live in elementwise.py.
"""

from __future__ import annotations

from typing import Any

from . import _core
from ..value import TensorValue

__all__ = ["sum", "mean", "prod", "argmax", "argmin", "cumsum"]


def _reduce(mo: str, x: Any, axis: int, extra: dict | None = None) -> TensorValue:
    v = _core.as_value(x)
    attrs = {"axis": _core.normalize_axis(axis, v.rank), **(extra or {})}
    return _core.add_op1(mo, [v], attrs)


def sum(x: Any, axis: int = -1) -> TensorValue:
    """The sum of x along axis, which is kept with size 1."""
    return _reduce("mo.sum", x, axis)


def mean(x: Any, axis: int = -1) -> TensorValue:
    """The mean of x along axis, which is kept with size 1."""
    return _reduce("mo.mean", x, axis)


def prod(x: Any, axis: int = -1) -> TensorValue:
    """The product of x along axis, kept with size 1 (kiln's mo.prod; not in MAX's list)."""
    return _reduce("mo.prod", x, axis)


def argmax(x: Any, axis: int = -1) -> TensorValue:
    """The index (si64) of the largest element along axis, kept with size 1."""
    return _reduce("mo.argmax", x, axis)


def argmin(x: Any, axis: int = -1) -> TensorValue:
    """The index (si64) of the smallest element along axis, kept with size 1."""
    return _reduce("mo.argmin", x, axis)


def cumsum(x: Any, axis: int = -1, exclusive: bool = False, reverse: bool = False) -> TensorValue:
    """The running sum of x along axis (exclusive: without the element itself;
    reverse: from the end of the axis); the result has x's type."""
    return _reduce("mo.cumsum", x, axis, {"exclusive": exclusive, "reverse": reverse})
