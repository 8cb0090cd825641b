"""kiln.graph.ops: the graph ops, as ``max.graph.ops`` (names, argument order
and defaults of MAX's functions, over kiln's MO ops)."""

from __future__ import annotations

from typing import Any

from ...dtype import DType
from . import _core
from ._core import constant

__all__ = ["constant", "relu", "add", "sub", "mul", "div", "matmul", "transpose", "reshape"]


def relu(x: Any) -> Any:
    """max(x, 0), elementwise."""
    return _core.add_op1("mo.relu", [x])


def add(lhs: Any, rhs: Any) -> Any:
    """lhs + rhs, broadcast."""
    return _core.add_op1("mo.add", [lhs, rhs])


def sub(lhs: Any, rhs: Any) -> Any:
    """lhs - rhs, broadcast."""
    return _core.add_op1("mo.sub", [lhs, rhs])


def mul(lhs: Any, rhs: Any) -> Any:
    """lhs * rhs, broadcast."""
    return _core.add_op1("mo.mul", [lhs, rhs])


def div(lhs: Any, rhs: Any) -> Any:
    """lhs / rhs, broadcast."""
    return _core.add_op1("mo.div", [lhs, rhs])


def matmul(lhs: Any, rhs: Any) -> Any:
    """The matrix product over the last two axes (batch axes broadcast)."""
    return _core.add_op1("mo.matmul", [lhs, rhs])


def transpose(x: Any, axis_1: int, axis_2: int) -> Any:
    """x with two axes swapped."""
    return _core.add_op1("mo.transpose", [x], {"axis_1": axis_1, "axis_2": axis_2})


def reshape(x: Any, shape: Any) -> Any:
    """x with a new shape of the same element count (-1: inferred)."""
    raise NotImplementedError("reshape: in progress")
