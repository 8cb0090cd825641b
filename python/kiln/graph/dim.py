"""kiln.graph.dim: tensor dims, as ``max.graph.dim``.

A dim is static (``StaticDim(784)``), symbolic (``SymbolicDim("batch")``,
set by the inputs at execute) or algebraic (``AlgebraicDim`` from ``+ - *
//`` on dims: ``batch * seq``). Each is kiln's dim text underneath
(``to_mlir()``), the form kiln's C API takes and prints.
"""

from __future__ import annotations

import re
from typing import Iterable, Union

__all__ = ["Dim", "StaticDim", "SymbolicDim", "AlgebraicDim", "Shape", "DimLike", "ShapeLike"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Dim:
    """A dim: ``Dim(5)`` is static, ``Dim("batch")`` symbolic, ``Dim("n + 1")`` algebraic."""

    def __new__(cls, value: "DimLike") -> "Dim":
        if cls is not Dim:
            return super().__new__(cls)
        if isinstance(value, Dim):
            return value
        if isinstance(value, bool):
            raise TypeError("a dim is an int or a str, not a bool")
        if isinstance(value, int):
            return StaticDim(value)
        if isinstance(value, str):
            text = value.strip()
            if re.fullmatch(r"-?\d+", text):
                return StaticDim(int(text))
            if _IDENT.match(text):
                return SymbolicDim(text)
            return AlgebraicDim(text)
        if hasattr(value, "__index__"):
            return StaticDim(value.__index__())
        raise TypeError(f"a dim is an int or a str, got {type(value).__name__}")

    def to_mlir(self) -> str:
        """kiln's dim text ("784", "batch", "batch * seq")."""
        raise NotImplementedError

    @property
    def parameters(self) -> list["SymbolicDim"]:
        """The symbols the dim uses."""
        return [SymbolicDim(s) for s in dict.fromkeys(_IDENT_ANY.findall(self.to_mlir()))
                if s not in _KEYWORDS]

    def _expr(self) -> str:
        return self.to_mlir()

    def _op(self, op: str, other: "DimLike", right: bool = False) -> "Dim":
        o = Dim(other)
        a, b = (o, self) if right else (self, o)
        if isinstance(a, StaticDim) and isinstance(b, StaticDim):
            x, y = a.dim, b.dim
            return StaticDim({"+": x + y, "-": x - y, "*": x * y, "floordiv": x // y,
                              "mod": x % y}[op])
        return AlgebraicDim(f"{a._expr()} {op} {b._expr()}")

    def __add__(self, o): return self._op("+", o)
    def __radd__(self, o): return self._op("+", o, True)
    def __sub__(self, o): return self._op("-", o)
    def __rsub__(self, o): return self._op("-", o, True)
    def __mul__(self, o): return self._op("*", o)
    def __rmul__(self, o): return self._op("*", o, True)
    def __floordiv__(self, o): return self._op("floordiv", o)
    def __mod__(self, o): return self._op("mod", o)

    def __eq__(self, other: object) -> bool:
        try:
            return Dim(other).to_mlir() == self.to_mlir()  # type: ignore[arg-type]
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.to_mlir())

    def __str__(self) -> str:
        return self.to_mlir()

    def __repr__(self) -> str:
        return f"Dim({self.to_mlir()!r})"


_IDENT_ANY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYWORDS = {"floordiv", "ceildiv", "mod"}


class StaticDim(Dim):
    """A dim known when the graph is built."""

    def __init__(self, value: "int | StaticDim") -> None:
        self.dim = value.dim if isinstance(value, StaticDim) else int(value)

    def to_mlir(self) -> str:
        return str(self.dim)

    def _expr(self) -> str:
        return str(self.dim) if self.dim >= 0 else f"({self.dim})"

    def __int__(self) -> int:
        return self.dim

    def __index__(self) -> int:
        return self.dim

    def __repr__(self) -> str:
        return f"StaticDim({self.dim})"


class SymbolicDim(Dim):
    """A named dim, set by the inputs' shapes at each execute."""

    def __init__(self, name: "str | SymbolicDim") -> None:
        if isinstance(name, SymbolicDim):
            name = name.name
        if not _IDENT.match(name):
            raise ValueError(f"a symbolic dim is an identifier, got {name!r}")
        self.name = name

    def to_mlir(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"SymbolicDim({self.name!r})"


class AlgebraicDim(Dim):
    """An expression of dims (``batch * seq``, ``n floordiv 4``)."""

    def __init__(self, value: "str | Dim") -> None:
        self.text = value.to_mlir() if isinstance(value, Dim) else str(value).strip()

    def to_mlir(self) -> str:
        return self.text

    def _expr(self) -> str:
        return f"({self.text})"

    def __repr__(self) -> str:
        return f"AlgebraicDim({self.text!r})"


DimLike = Union[int, str, Dim]


class Shape(list):
    """A list of Dims (``value.shape``); compares equal to lists of ints / strs."""

    def __init__(self, dims: Iterable[DimLike] = ()) -> None:
        super().__init__(Dim(d) for d in dims)

    @property
    def rank(self) -> int:
        """Number of dims."""
        return len(self)

    @property
    def static_dims(self) -> list[int]:
        """The ints of a fully static shape (ValueError otherwise)."""
        out = []
        for d in self:
            if not isinstance(d, StaticDim):
                raise ValueError(f"shape {self} has a non-static dim {d}")
            out.append(d.dim)
        return out

    def to_mlir(self) -> list[str]:
        """The dims as kiln's dim texts."""
        return [d.to_mlir() for d in self]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, (list, tuple)):
            return NotImplemented
        try:
            return len(self) == len(other) and all(a == Dim(b) for a, b in zip(self, other))
        except TypeError:
            return False

    def __repr__(self) -> str:
        return "[" + ", ".join(d.to_mlir() for d in self) + "]"


ShapeLike = Iterable[DimLike]
