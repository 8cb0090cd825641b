"""kiln.graph.ops.random: random tensors (``max.graph.ops.random``).

Each call is one mo.random.uniform / mo.random.normal of the type `like`.
The seed (set_seed, default 0) is the graph's: each call takes the next one,
so two calls in one graph differ and a graph gives the same numbers on every
run (element i is a function of the seed and i only).
"""

from __future__ import annotations

from typing import Any

from . import _core
from ..type import TensorType
from ..value import TensorValue

__all__ = ["uniform", "gaussian", "normal", "set_seed"]


def set_seed(seed: int) -> None:
    """Seed the current graph's random ops (those added from now on)."""
    _core.graph_of()._ops_seed = int(seed)


def _next_seed(g: Any) -> int:
    s = getattr(g, "_ops_seed", 0)
    g._ops_seed = s + 1
    return s


def _type(like: Any) -> str:
    if isinstance(like, TensorValue):
        like = like.type
    if not isinstance(like, TensorType):
        raise TypeError(f"random: like is a TensorType, got {type(like).__name__}")
    return _core.tensor_type(like.dtype, like.shape)


def uniform(like: Any, range: tuple[float, float] = (0, 1)) -> TensorValue:
    """A tensor of like's type (f32 / f64) of numbers uniform in [range[0], range[1])."""
    g = _core.graph_of()
    low, high = range
    return _core.add_op1("mo.random.uniform", [],
                         {"seed": _next_seed(g), "low": float(low), "high": float(high)},
                         _type(like))


def gaussian(like: Any, mean: float = 0.0, std: float = 1.0) -> TensorValue:
    """A tensor of like's type (f32 / f64) of normally distributed numbers."""
    g = _core.graph_of()
    return _core.add_op1("mo.random.normal", [],
                         {"seed": _next_seed(g), "mean": float(mean), "std": float(std)},
                         _type(like))


normal = gaussian
