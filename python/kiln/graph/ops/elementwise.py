"""kiln.graph.ops.elementwise: elementwise ops (``max.graph.ops`` names).

Each is one MO op (mo.abs, mo.add, ...) except where a docstring says it is
composed. Binary ops broadcast (numpy rules); a Python number meeting a value
takes the value's dtype (``x + 1.0``, ``2 * x``); kiln checks dtypes as the op
is added (kiln.DTypeError names the op and operand).
"""

from __future__ import annotations

from typing import Any, Callable

from ...dtype import DType
from . import _core
from ..value import TensorValue

__all__ = ["abs", "negate", "exp", "log", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "relu",
           "gelu", "silu", "erf", "sin", "cos", "floor", "round", "trunc", "ceil", "acos", "asin",
           "atan", "atanh", "is_nan", "is_inf", "logical_not", "add", "sub", "mul", "div",
           "floor_div", "pow", "mod", "equal", "not_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_xor", "where", "cast", "max", "min"]


def _unary(mo: str, doc: str) -> Callable[[Any], TensorValue]:
    def op(x: Any) -> TensorValue:
        return _core.add_op1(mo, [x])

    op.__name__ = op.__qualname__ = mo[3:]
    op.__doc__ = doc
    return op


def _binary(mo: str, doc: str) -> Callable[[Any, Any], TensorValue]:
    def op(lhs: Any, rhs: Any) -> TensorValue:
        return _core.add_op1(mo, [lhs, rhs])

    op.__name__ = op.__qualname__ = mo[3:]
    op.__doc__ = doc
    return op


abs = _unary("mo.abs", "|x|, elementwise (float or int).")
negate = _unary("mo.negate", "-x, elementwise (float or int).")
exp = _unary("mo.exp", "e ** x, elementwise (float).")
log = _unary("mo.log", "The natural logarithm of x, elementwise (float).")
log1p = _unary("mo.log1p", "log(1 + x), elementwise (float).")
sqrt = _unary("mo.sqrt", "The square root of x, elementwise (float).")
rsqrt = _unary("mo.rsqrt", "1 / sqrt(x), elementwise (float).")
tanh = _unary("mo.tanh", "tanh(x), elementwise (float).")
sigmoid = _unary("mo.sigmoid", "1 / (1 + exp(-x)), elementwise (float).")
relu = _unary("mo.relu", "max(x, 0), elementwise (float or int).")
silu = _unary("mo.silu", "x * sigmoid(x), elementwise (float).")
erf = _unary("mo.erf", "The error function of x, elementwise (float).")
sin = _unary("mo.sin", "sin(x), elementwise (float).")
cos = _unary("mo.cos", "cos(x), elementwise (float).")
floor = _unary("mo.floor", "The largest integer <= x, elementwise (float).")
round = _unary("mo.round", "x rounded to the nearest integer, half to even (float).")
trunc = _unary("mo.trunc", "x rounded toward zero, elementwise (float).")
ceil = _unary("mo.ceil", "The smallest integer >= x, elementwise (float; kiln's, not MAX's).")
acos = _unary("mo.acos", "arccos(x), elementwise (float; kiln's, not MAX's).")
asin = _unary("mo.asin", "arcsin(x), elementwise (float; kiln's, not MAX's).")
atan = _unary("mo.atan", "arctan(x), elementwise (float; kiln's, not MAX's).")
atanh = _unary("mo.atanh", "artanh(x), elementwise (float).")
is_nan = _unary("mo.is_nan", "x != x: a bool tensor, true where x is NaN.")
is_inf = _unary("mo.is_inf", "A bool tensor, true where x is +-inf.")
logical_not = _unary("mo.logical_not", "not x, elementwise (bool).")

add = _binary("mo.add", "lhs + rhs, broadcast.")
sub = _binary("mo.sub", "lhs - rhs, broadcast.")
mul = _binary("mo.mul", "lhs * rhs, broadcast.")
div = _binary("mo.div", "lhs / rhs (true division; ints give f64), broadcast.")
floor_div = _binary("mo.floor_div", "floor(lhs / rhs) (Python //), broadcast.")
pow = _binary("mo.pow", "lhs ** rhs, broadcast.")
mod = _binary("mo.mod", "lhs % rhs (the divisor's sign, as Python), broadcast.")
equal = _binary("mo.equal", "lhs == rhs: a bool tensor, broadcast.")
not_equal = _binary("mo.not_equal", "lhs != rhs: a bool tensor, broadcast.")
greater = _binary("mo.greater", "lhs > rhs: a bool tensor, broadcast.")
greater_equal = _binary("mo.greater_equal", "lhs >= rhs: a bool tensor, broadcast.")
logical_and = _binary("mo.logical_and", "lhs and rhs (bool), broadcast.")
logical_or = _binary("mo.logical_or", "lhs or rhs (bool), broadcast.")
logical_xor = _binary("mo.logical_xor", "lhs xor rhs (bool), broadcast.")


def gelu(x: Any, approximate: str = "none") -> TensorValue:
    """The Gaussian error linear unit; approximate: "none", "tanh" or "quick"."""
    if approximate not in ("none", "tanh", "quick"):
        raise ValueError(f"gelu: approximate must be 'none', 'tanh' or 'quick', "
                         f"got {approximate!r}")
    attrs = None if approximate == "none" else {"approximate": approximate}
    return _core.add_op1("mo.gelu", [x], attrs)


def where(condition: Any, x: Any, y: Any) -> TensorValue:
    """x where condition (bool) is true, else y; all three broadcast."""
    like = x if isinstance(x, TensorValue) else y if isinstance(y, TensorValue) else None
    g = _core.graph_of(condition, x, y)
    c = _core.as_value(condition, graph=g)
    if like is None:
        like = _core.as_value(x, graph=g)
    return _core.add_op1("mo.where", [c, _core.as_value(x, like, g), _core.as_value(y, like, g)])


def cast(x: Any, dtype: DType) -> TensorValue:
    """x converted to dtype, elementwise."""
    return _core.add_op1("mo.cast", [x], {"dtype": DType(dtype)})


def max(x: Any, y: Any = None, /, axis: int | None = None) -> TensorValue:
    """With y: the elementwise maximum of x and y (broadcast). Without: x's
    maximum along axis (default -1), kept with size 1."""
    if y is not None:
        return _core.add_op1("mo.max", [x, y])
    return _reduce("mo.max", x, -1 if axis is None else axis)


def min(x: Any, y: Any = None, /, axis: int | None = None) -> TensorValue:
    """With y: the elementwise minimum of x and y (broadcast). Without: x's
    minimum along axis (default -1), kept with size 1."""
    if y is not None:
        return _core.add_op1("mo.min", [x, y])
    return _reduce("mo.min", x, -1 if axis is None else axis)


def _reduce(mo: str, x: Any, axis: int) -> TensorValue:
    v = _core.as_value(x)
    return _core.add_op1(mo, [v], {"axis": _core.normalize_axis(axis, v.rank)})
