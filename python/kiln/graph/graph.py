"""kiln.graph.graph: ``Graph``, a kiln graph built from Python, as ``max.graph.Graph``.

    with Graph("relu", input_types=[TensorType(DType.float32, [5])]) as g:
        g.output(ops.relu(g.inputs[0]))

Each op is added to the kiln graph (kiln's C builder) at once, so dtype and
shape errors are raised on the line that makes them. ``str(graph)`` is
kiln's MO text.
"""

from __future__ import annotations

import contextvars
import os
from typing import Any, Callable, Iterable, Sequence

from .. import _kiln
from .type import BufferType, TensorType
from .value import BufferValue, TensorValue, _ChainValue

__all__ = ["Graph"]

_CURRENT: contextvars.ContextVar["Graph | None"] = contextvars.ContextVar("kiln_graph",
                                                                         default=None)


class _ClassProperty:
    def __init__(self, f: Callable) -> None:
        self.f = f

    def __get__(self, obj: Any, cls: type) -> Any:
        return self.f(cls)


class Graph:
    """A graph of ops (``max.graph.Graph``).

    name: the graph's name. input_types: a TensorType per input (a BufferType:
    a BufferValue input, the caller's array, changed in place).
    forward: when given, called with the inputs inside the graph's context and
    its result made the output. path: load MO text (.mlir) or ONNX (.onnx)
    instead of building. custom_extensions: C / LLVM IR kernel libraries
    that serve ``ops.custom`` calls (loaded by ``InferenceSession.load``).
    """

    def __init__(self, name: str, forward: Callable | None = None,
                 input_types: Iterable[TensorType] = (), path: Any = None, *args: Any,
                 custom_extensions: Iterable[Any] = (), **kwargs: Any) -> None:
        self.name = name
        self._custom_extensions = [os.fspath(p) for p in custom_extensions]
        self._tokens: list[contextvars.Token] = []
        self._output_values: list[TensorValue] | None = None
        self._weights: dict[str, TensorValue] = {}
        self._parent: Graph | None = None  # the enclosing graph of a region or subgraph
        # a cond branch's values of enclosing graphs, as its own inputs (_capture);
        # None: the graph reads only its own values (graphs, loop regions, subgraphs)
        self._captures: list[tuple[TensorValue, TensorValue, TensorValue]] | None = None
        self._called: set[str] = set()  # subgraphs in this graph's module (ops.call)
        if path is not None:
            p = os.fspath(path)
            self._g = _kiln.Graph.from_onnx(p) if p.endswith(".onnx") else _kiln.Graph.load(p)
            self._inputs: tuple[TensorValue, ...] = ()
            self._output_values = []
            return
        self._g = _kiln.Graph(name)
        self._input_types = [t if isinstance(t, TensorType) else TensorType(*t)
                             for t in input_types]
        self._chain: _ChainValue | None = None
        self._inputs = tuple(self._add_input(i, t) for i, t in enumerate(self._input_types))
        if forward is not None:
            with self:
                out = forward(*self._inputs, *args, **kwargs)
                self.output(*(out if isinstance(out, (tuple, list)) else (out,)))

    def _add_input(self, i: int, t: TensorType) -> "TensorValue | BufferValue":
        gpu = t.device.id if t.device.is_gpu() else -1
        if isinstance(t, BufferType):
            return BufferValue(self, self._g.add_input(f"input{i}", t.dtype._kiln,
                                                       t.shape.to_mlir(), gpu, True))
        return TensorValue(self, self._g.add_input(f"input{i}", t.dtype._kiln, t.shape.to_mlir(),
                                                   gpu))

    # ---- the chain (MAX's Graph._current_chain) ----
    @property
    def _current_chain(self) -> _ChainValue:
        """The chain the next buffer op takes (a mo.chain.create the first time);
        each buffer op replaces it with the chain it returns."""
        if getattr(self, "_chain", None) is None:
            self._chain = _ChainValue(self, self._g.add_op("mo.chain.create", [], None,
                                                           "!mo.chain")[0])
        return self._chain

    @_current_chain.setter
    def _current_chain(self, chain: _ChainValue) -> None:
        self._chain = chain

    # ---- the current graph ----
    @_ClassProperty
    def current(cls) -> "Graph":
        """The graph whose ``with`` block is running (LookupError outside one)."""
        g = _CURRENT.get()
        if g is None:
            raise LookupError("no graph is being built: use `with Graph(...) as graph:`")
        return g

    def __enter__(self) -> "Graph":
        self._tokens.append(_CURRENT.set(self))
        return self

    def __exit__(self, *exc: Any) -> None:
        _CURRENT.reset(self._tokens.pop())

    # ---- inputs, outputs, weights ----
    @property
    def inputs(self) -> tuple[Any, ...]:
        """The graph's inputs, in order."""
        return self._inputs

    def output(self, *outputs: TensorValue) -> None:
        """Make these values the graph's outputs (and verify the graph)."""
        from . import ops

        vals = [ops._core.as_value(o, graph=self) for o in outputs]
        self._g.set_outputs([v._v for v in vals])
        self._output_values = vals

    @property
    def output_types(self) -> list[TensorType]:
        """The types of the outputs set by ``output``."""
        return [v.type for v in (self._output_values or [])]

    def add_weight(self, weight: Any, force_initial_weight_on_host: bool = True) -> TensorValue:
        """A value for ``weight`` (a ``Weight``), bound by name when the model
        is loaded (``weights_registry``). Adding the same name twice returns
        the same value."""
        if weight.name in self._weights:
            return self._weights[weight.name]
        v = TensorValue(self, self._g.add_weight(weight.name, weight.dtype._kiln,
                                                 weight.shape.to_mlir()))
        self._weights[weight.name] = v
        return v

    def add_subgraph(self, name: str, forward: Callable | None = None,
                     input_types: Iterable[TensorType] = (), path: Any = None,
                     custom_extensions: Iterable[Any] = ()) -> "Graph":
        """A graph that ``ops.call`` calls from this one (``max.graph.Graph.add_subgraph``):
        built now when forward is given, else in its own ``with`` block."""
        if path is not None:
            raise NotImplementedError("add_subgraph(path=...): build the subgraph instead")
        sub = Graph(name, forward, input_types, custom_extensions=custom_extensions)
        sub._parent = self
        return sub

    @property
    def kernel_libraries_paths(self) -> list[str]:
        """The custom_extensions paths (kernel libraries for ``ops.custom``)."""
        return list(self._custom_extensions)

    def _encloses(self, other: "Graph") -> bool:
        """Whether other is this graph or a cond branch nested in it (values of
        this graph may be read there: _capture)."""
        g: Graph | None = other
        while g is not None:
            if g is self:
                return True
            if getattr(g, "_captures", None) is None:
                return False
            g = g._parent
        return False

    def _capture(self, v: TensorValue) -> TensorValue:
        """v (a value of this graph or of an enclosing one) as a value of this
        graph: a value of an enclosing graph becomes an input of this cond
        branch, once (mo.if passes it in: ops.cond); branches nested in
        branches capture it at each level."""
        if v._graph is self:
            return v
        if isinstance(v, BufferValue):
            raise TypeError(f"region '{self.name}' reads a buffer of an enclosing graph: "
                            f"kiln's regions take tensors only")
        if getattr(self, "_captures", None) is None or self._parent is None:
            raise ValueError(f"graph '{self.name}' reads a value of another graph: a loop "
                             f"region or subgraph sees only its own inputs (pass the value "
                             f"through the loop values or the call's arguments)")
        for orig, _, inner in self._captures:
            if orig._v is v._v:
                return inner
        outer = self._parent._capture(v)
        t = outer.type
        gpu = t.device.id if t.device.is_gpu() else -1
        inner = TensorValue(self, self._g.add_input(f"capture{len(self._captures)}",
                                                    t.dtype._kiln, t.shape.to_mlir(), gpu))
        self._captures.append((v, outer, inner))
        return inner

    def _finished(self) -> "_kiln.Graph":
        if self._output_values is None:
            raise ValueError(f"graph '{self.name}' has no outputs: call graph.output(...)")
        return self._g

    # ---- text ----
    @classmethod
    def from_text(cls, text: str, name: str = "graph", filename: str | None = None) -> "Graph":
        """A graph parsed from MO text (as ``kiln check`` reads it)."""
        g = cls.__new__(cls)
        g.name = name
        g._custom_extensions = []
        g._tokens = []
        g._weights = {}
        g._parent = None
        g._captures = None
        g._called = set()
        g._inputs = ()
        g._chain = None
        g._output_values = []
        g._g = _kiln.Graph.parse(text, filename)
        return g

    def __str__(self) -> str:
        return self._g.print()

    def __repr__(self) -> str:
        return f"Graph({self.name!r})"
