"""Shared fixtures of the kiln.graph.ops tests: one InferenceSession per test
module (its disk cache in a tmp dir) and helpers that build a tiny graph,
compile it and run it on numpy inputs."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pytest

from kiln.driver import CPU
from kiln.dtype import DType
from kiln.engine import InferenceSession
from kiln.graph import Graph, TensorType


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> InferenceSession:
    return InferenceSession(devices=[CPU()], cache_dir=tmp_path_factory.mktemp("kiln-cache"))


def types_of(arrays: Sequence[np.ndarray]) -> list[TensorType]:
    """A static TensorType per array."""
    return [TensorType(DType.from_numpy(a.dtype), a.shape) for a in arrays]


@pytest.fixture(scope="module")
def build(session: InferenceSession) -> Callable[..., Any]:
    """build(fn, types, **load_kwargs) -> compiled Model of Graph(fn, types)."""

    def _build(fn: Callable, types: Sequence[TensorType], **kw: Any):
        return session.load(Graph("t", fn, input_types=types), **kw)

    return _build


@pytest.fixture(scope="module")
def run(build: Callable[..., Any]) -> Callable[..., Any]:
    """run(fn, *arrays, types=None): fn's graph on the arrays; one numpy
    array per output (the array itself when there is one output)."""

    def _run(fn: Callable, *arrays: np.ndarray, types: Sequence[TensorType] | None = None):
        arrays = tuple(np.asarray(a, order="C") for a in arrays)
        model = build(fn, types or types_of(arrays))
        outs = [o.to_numpy() for o in model.execute(*arrays)]
        return outs[0] if len(outs) == 1 else outs

    return _run
