"""kiln.graph.ops.control: ``cond``, ``while_loop`` and ``call``, as in
``max.graph.ops``, over kiln's mo.if, mo.while and mo.call.

Each branch, loop predicate and loop body is built as a graph of its own (a
region) from the Python function, its inputs typed like the values it
receives. A cond branch may read values of the enclosing graphs, as in MAX
(closures): each one becomes an input of both branches and an operand of
the mo.if (Graph._capture), so the IR, the interpreter and the runtimes see
explicit operands. Loop regions see only their inputs: a predicate or body
that reads a value of the enclosing graph raises (pass it through the loop's
values).
``call`` calls a graph made with ``Graph.add_subgraph``; the subgraph joins
the outermost graph's module the first time it is called.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from ..type import TensorType
from ..value import TensorValue
from ._core import _target_graph, _type_text, as_value, format_attrs, graph_of

__all__ = ["call", "cond", "while_loop"]


def _region(parent: Any, name: str, types: Sequence[TensorType], fn: Callable,
            *, pass_inputs: bool = True, captures: list | None = None) -> Any:
    """A region built from fn. captures: None, the region reads only its
    inputs; a list, it may read values of enclosing graphs, these (orig,
    outer, inner) captures of another branch taken first, in their order."""
    from ..graph import Graph

    r = Graph(name, input_types=types)
    r._parent = parent
    if captures is not None:
        r._captures = []
        for orig, _, _ in captures:
            r._capture(orig)
    with r:
        out = fn(*r.inputs) if pass_inputs else fn()
        if out is None:
            raise ValueError(f"region '{name}' returns no value: kiln's control flow needs "
                             f"results (buffers are not supported yet)")
        r.output(*(out if isinstance(out, (list, tuple)) else (out,)))
    return r


def _module_of(g: Any) -> Any:
    while getattr(g, "_parent", None) is not None:
        g = g._parent
    return g


def while_loop(initial_values: Iterable[Any] | Any, predicate: Callable,
               body: Callable) -> list[TensorValue]:
    """Run ``body`` on the loop values while ``predicate`` on them is true
    (a bool scalar); returns the last loop values. Each loop value keeps its
    dtype and rank; a symbolic dim may change from one iteration to the next."""
    if isinstance(initial_values, (list, tuple)):
        init = list(initial_values)
    else:
        init = [initial_values]
    if not init:
        raise ValueError("while_loop needs at least one initial value")
    g = graph_of(*init)
    vals = [as_value(v, graph=g) for v in init]
    types = [v.type for v in vals]
    cond_g = _region(g, "cond", types, predicate)
    body_g = _region(g, "body", types, body)
    res = g._g.add_region_op("mo.while", [v._v for v in vals], [cond_g._g, body_g._g], [])
    return [TensorValue(g, r) for r in res]


def cond(pred: Any, out_types: Iterable[TensorType] | None, then_fn: Callable,
         else_fn: Callable) -> list[TensorValue]:
    """The results of ``then_fn()`` when ``pred`` (a bool scalar) is true,
    else of ``else_fn()``; both must return values of ``out_types``. The
    branches may read values of the enclosing graphs (closures, as in MAX):
    they are passed to the mo.if as operands."""
    if out_types is None:
        raise ValueError("cond without out_types (branches that only mutate buffers) is not "
                         "supported: kiln has no buffers yet")
    types = [t if isinstance(t, TensorType) else TensorType(*t) for t in out_types]
    g = _target_graph([pred], pred if isinstance(pred, TensorValue) else None)
    p = as_value(pred, graph=g)
    if p._graph is not g and p._graph._encloses(g):
        p = g._capture(p)
    then_g = _region(g, "then", [], then_fn, pass_inputs=False, captures=[])
    # the else branch takes the then branch's captures first, in their order,
    # then its own, which the then branch gets as unused inputs: both branches
    # take the same inputs, mo.if's operands after the predicate
    else_g = _region(g, "else", [], else_fn, pass_inputs=False, captures=then_g._captures)
    for orig, _, _ in else_g._captures[len(then_g._captures):]:
        then_g._capture(orig)
    args = [outer._v for _, outer, _ in else_g._captures]
    res = g._g.add_region_op("mo.if", [p._v, *args], [then_g._g, else_g._g],
                             [_type_text(t) for t in types])
    return [TensorValue(g, r) for r in res]


def call(graph: Any, *args: Any, prefix: str = "") -> TensorValue | list[TensorValue]:
    """Call ``graph`` (made by ``Graph.add_subgraph``) on ``args``; ``prefix``
    goes before the names of the subgraph's weights. Returns its one result,
    or the list of its results."""
    g = graph_of(*args)
    vals = [as_value(a, graph=g) for a in args]
    module = _module_of(g)
    if graph.name not in module._called:
        module._g.add_subgraph(graph._finished())
        module._called.add(graph.name)
    types = [_type_text(t) for t in graph.output_types]
    res = g._g.add_op("mo.call", [v._v for v in vals],
                      format_attrs({"callee": graph.name, "prefix": prefix or None}), types)
    out = [TensorValue(g, r) for r in res]
    return out[0] if len(out) == 1 else out
