"""kiln.nn.layer: ``Module``, a model component that tracks its weights and
sublayers (``max.nn.layer.Module``).

Attributes holding a ``Weight`` or a ``Module`` are recorded as they are set
(a subclass need not call ``super().__init__()``). ``state_dict()`` and
``load_state_dict()`` name each weight by its path ("down.weight") and give
the ``Weight`` objects those names, so a graph built from the module after
either call names its weights uniquely, and ``state_dict()`` is the
``weights_registry`` that ``InferenceSession.load`` takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..graph.weight import Weight

__all__ = ["Module"]


def _static_shape(path: str, w: Weight) -> tuple[int, ...]:
    """w's shape as ints; a ValueError naming the weight if a dim is symbolic."""
    try:
        return tuple(int(str(d)) for d in w.shape)
    except ValueError:
        raise ValueError(f"weight {path!r}: a module's weight needs a static shape, "
                         f"got {list(w.shape)}") from None


class Module:
    """Base class for layers: weights and sublayers set as attributes are
    tracked; ``state_dict`` / ``load_state_dict`` get and set their values."""

    def _registry(self, kind: str) -> dict[str, Any]:
        try:
            return object.__getattribute__(self, kind)
        except AttributeError:
            reg: dict[str, Any] = {}
            object.__setattr__(self, kind, reg)
            return reg

    def __setattr__(self, name: str, value: Any) -> None:
        self._registry("_kiln_weights").pop(name, None)
        self._registry("_kiln_layers").pop(name, None)
        if isinstance(value, Weight):
            self._registry("_kiln_weights")[name] = value
        elif isinstance(value, Module):
            self._registry("_kiln_layers")[name] = value
        object.__setattr__(self, name, value)

    @property
    def layer_weights(self) -> dict[str, Weight]:
        """This layer's own weights by attribute name (not its sublayers')."""
        return dict(self._registry("_kiln_weights"))

    @property
    def sublayers(self) -> dict[str, Module]:
        """This layer's direct sublayers by attribute name."""
        return dict(self._registry("_kiln_layers"))

    def raw_state_dict(self) -> dict[str, Weight]:
        """Every ``Weight`` of the module and its sublayers by path
        ("up.weight"); each weight is renamed to its path."""
        out: dict[str, Weight] = {}
        self._collect("", out)
        return out

    def _collect(self, prefix: str, out: dict[str, Weight]) -> None:
        for name, w in self._registry("_kiln_weights").items():
            path = prefix + name
            w.name = path
            out[path] = w
        for name, layer in self._registry("_kiln_layers").items():
            layer._collect(prefix + name + ".", out)

    def load_state_dict(self, state_dict: Mapping[str, Any], *,
                        override_quantization_encoding: bool = False,
                        weight_alignment: int | None = None, strict: bool = True) -> None:
        """Set every weight's value from state_dict (name -> numpy array or
        anything numpy can read, a kiln Tensor included). strict: a missing
        weight or an unused key is a ValueError. A value whose shape or dtype
        differs from its weight's is a ValueError either way."""
        weights = self.raw_state_dict()
        if strict:
            missing = sorted(set(weights) - set(state_dict))
            unused = sorted(set(state_dict) - set(weights))
            if missing or unused:
                raise ValueError("load_state_dict: " + "; ".join(
                    p for p in (f"missing {missing}" if missing else "",
                                f"not used by the module {unused}" if unused else "") if p))
        for path, w in weights.items():
            if path not in state_dict:
                continue
            v = state_dict[path]
            arr = v.to_numpy() if hasattr(v, "to_numpy") else np.asarray(v)
            want = _static_shape(path, w)
            if arr.shape != want or arr.dtype != w.dtype.to_numpy():
                raise ValueError(f"load_state_dict: {path!r} is {arr.dtype} {list(arr.shape)}, "
                                 f"the weight is {w.dtype} {list(want)}")
            if weight_alignment is not None:
                w.align = weight_alignment
            object.__setattr__(w, "_kiln_value", arr)

    def state_dict(self, auto_initialize: bool = True) -> dict[str, Any]:
        """Every weight's value by path: the one load_state_dict set, else
        zeros (auto_initialize) or a ValueError naming the weight."""
        out: dict[str, Any] = {}
        for path, w in self.raw_state_dict().items():
            v = getattr(w, "_kiln_value", None)
            if v is None:
                if not auto_initialize:
                    raise ValueError(f"state_dict: weight {path!r} has no value")
                v = np.zeros(_static_shape(path, w), dtype=w.dtype.to_numpy())
                object.__setattr__(w, "_kiln_value", v)
            out[path] = v
        return out
