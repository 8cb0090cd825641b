"""kiln.graph.ops.fft: irfft, the inverse real FFT (numpy.fft.irfft's meaning).

MAX's ``buffer_size_mb`` sizes a buffer MAX keeps between calls; kiln's
kernel needs none, so the argument is accepted and not used.
"""

from __future__ import annotations

import enum
from typing import Any

from . import _core
from ..value import TensorValue

__all__ = ["irfft", "Normalization"]


class Normalization(str, enum.Enum):
    """The scaling of irfft's result: divided by n (BACKWARD), sqrt(n) (ORTHO) or 1 (FORWARD)."""

    BACKWARD = "backward"
    ORTHO = "ortho"
    FORWARD = "forward"


def irfft(input_tensor: Any, n: int | None = None, axis: int = -1,
          normalization: Normalization | str = Normalization.BACKWARD,
          input_is_complex: bool = False, buffer_size_mb: int = 512) -> TensorValue:
    """The inverse real FFT along axis: n output values (None: 2 (m - 1));
    with input_is_complex the last dim (2) holds (re, im) and axis does not
    count it."""
    del buffer_size_mb  # kiln keeps no buffer between calls
    v = _core.as_value(input_tensor)
    rank = v.rank - (1 if input_is_complex else 0)
    norm = normalization.value if isinstance(normalization, Normalization) else str(normalization)
    # without a dim for axis kiln's rule refuses the node, saying why
    ax = _core.normalize_axis(axis, rank) if rank >= 1 else int(axis)
    attrs = {"n": -1 if n is None else int(n), "axis": ax,
             "normalization": norm.lower(), "input_is_complex": bool(input_is_complex)}
    return _core.add_op1("mo.irfft", [v], attrs)
