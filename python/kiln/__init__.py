"""kiln: a graph compiler and JIT inference runtime, with MAX's Python API.

Modules mirror MAX's: ``kiln.driver`` (devices, tensors), ``kiln.dtype``
(DType), ``kiln.engine`` (InferenceSession, Model), ``kiln.graph`` (Graph,
TensorType, ops). Every error kiln reports is a ``kiln.KilnError``.
"""

from ._kiln import (CompileError, DTypeError, ExecutionError, InvalidArgumentError,
                    KilnError, KilnIOError, NotFoundError, ParseError, ShapeError,
                    UnsupportedError, VerifyError)
from ._kiln import version as _c_version
from . import driver, dtype, engine, graph
from .dtype import DType

__version__ = "0.1.0"

__all__ = ["driver", "dtype", "engine", "graph", "DType", "KilnError", "ParseError",
           "VerifyError", "ShapeError", "DTypeError", "CompileError", "ExecutionError",
           "NotFoundError", "InvalidArgumentError", "KilnIOError", "UnsupportedError",
           "version"]


def version() -> str:
    """kiln's version and the LLVM it was built with ("0.1.0 (LLVM 19.1.7)")."""
    return _c_version()
