"""Type stubs for kiln._kiln, kiln's C extension (python/ext/*.c).

dtype arguments and attributes are kiln's dtype numbers (``kiln.DType._kiln``,
``kiln_dtype`` in kiln/common.h); dims are kiln's dim text ("784",
"batch", "batch * seq"). Arguments the C code parses positionally are
positional-only here. The kiln package wraps these classes in the
MAX-shaped API (kiln.graph, kiln.engine, kiln.driver).
"""

import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, final

from typing_extensions import Buffer, Self, disjoint_base

# An input or weight: a numpy array or other buffer-protocol object, a
# Tensor, or an object with __dlpack__ (host memory).
_TensorLike = Any
# (name, dtype number, dims as text, static size of each dim or -1)
_Port = tuple[str, int, tuple[str, ...], tuple[int, ...]]
_ProfileRow = tuple[int, str, str, int, float, float, float, float, float]

# ---- module functions ----

def version() -> str:
    """kiln_version(): "0.1.0 (LLVM 19.1.7)"."""

def dtype_name(dtype: int, /) -> str:
    """MO spelling of a kiln dtype number ("f32"); ValueError for no dtype."""

def dtype_size(dtype: int, /) -> int:
    """Bytes per element of a kiln dtype number; ValueError for no dtype."""

# ---- exceptions (module.c): one per kiln_code, each also a builtin ----

class KilnError(Exception):
    """Any error kiln reports."""

class InvalidArgumentError(KilnError, ValueError):
    """A bad argument: an index out of range, an unknown option."""

class ParseError(KilnError, ValueError):
    """Malformed IR text, ONNX or C source."""

class VerifyError(KilnError, ValueError):
    """A well-formed graph that breaks an op's rules (a bad attribute, shape or dtype)."""

class ShapeError(KilnError, ValueError):
    """A shape that does not fit: an input's axis, an op's operands."""

class NotFoundError(KilnError, LookupError):
    """A missing input, weight, file or device."""

class KilnIOError(KilnError, OSError):
    """A file kiln cannot read or write."""

class CompileError(KilnError):
    """LLVM or clang failed to compile a kernel."""

class ExecutionError(KilnError, RuntimeError):
    """A kernel reported a data error while running (an index out of range, ...)."""

class UnsupportedError(KilnError, NotImplementedError):
    """A valid request kiln cannot serve (yet); the message says what."""

class DTypeError(VerifyError, TypeError):
    """A dtype that does not fit (a verify or shape error whose message is about a dtype)."""

# ---- graph.c ----

@final
class Graph:
    """Graph(name='graph'): a kiln graph (kiln_graph) under construction or parsed."""

    def __new__(cls, name: str = "graph") -> Self: ...
    @classmethod
    def parse(cls, text: str, filename: str | None = None, /) -> Graph:
        """A graph from MO text."""
    @classmethod
    def load(cls, path: str, /) -> Graph:
        """A graph from an MO text file."""
    @classmethod
    def from_onnx(cls, path_or_bytes: str | Buffer, /) -> Graph:
        """A graph imported from an ONNX model (a path, or the model's bytes;
        weights become constants). The GIL is released while it imports."""
    def add_input(self, name: str | None, dtype: int, dims: Sequence[str], gpu: int = -1,
                  buffer: bool = False, /) -> Value:
        """A new input (name None: unnamed), typed on gpu:N when gpu >= 0; with
        buffer, a !mo.buffer the model changes in place."""
    def add_weight(self, name: str, dtype: int, dims: Sequence[str], /) -> Value:
        """A new weight, bound by name on the model (Model.bind_weight)."""
    def add_op(self, op: str, operands: Sequence[Value], attrs: str | None = None,
               result_types: str | Sequence[str] | None = None, /) -> list[Value]:
        """Add op (its MO name) with attributes as MO text ("{axis = -1}") and,
        optionally, declared result types as MO text (one, or one per
        result); returns every result."""
    def add_region_op(self, op: str, operands: Sequence[Value], regions: Sequence[Graph],
                      result_types: Sequence[str], /) -> list[Value]:
        """mo.if / mo.while with its two regions (copied); result_types may
        be empty for mo.while (the operands' types)."""
    def add_subgraph(self, graph: Graph, /) -> None:
        """A copy of graph joins this graph's module (mo.call's callees)."""
    def add_constant(self, dtype: int, shape: Sequence[int], buffer: Buffer, /) -> Value:
        """A constant; the buffer's bytes (C order, exactly the size the dtype
        and shape need) are copied into the graph."""
    def set_outputs(self, values: Sequence[Value],
                    names: Sequence[str | None] | None = None, /) -> None:
        """Make values the graph's outputs (optionally named)."""
    def declare_symbol(self, name: str, /) -> None:
        """Declare a symbolic dim by name."""
    def verify(self) -> None:
        """Check the whole graph; raises the error kiln finds."""
    def print(self) -> str:
        """The canonical MO text."""

@final
class Value:
    """A value of a kiln graph (kiln_value); made by Graph, not instantiable."""

    @property
    def dtype(self) -> int:
        """kiln dtype number."""
    @property
    def dims(self) -> tuple[str, ...]:
        """Dims as MO text: ('batch', '784')."""
    @property
    def gpu(self) -> int:
        """N when the graph types the value on gpu:N, -1 on the host."""
    @property
    def graph(self) -> Graph:
        """The Graph it belongs to (kept alive by the value)."""
    @property
    def kind(self) -> str:
        """'tensor', 'buffer' or 'chain'."""
    @property
    def id(self) -> int:
        """Identity of the underlying kiln_value."""

# ---- tensor.c ----

@disjoint_base
class Tensor:
    """Tensor(dtype, shape, device=None): a kiln_tensor (host or device memory).

    Zeroed on the host, undefined on a device. Host tensors export their
    memory through the buffer protocol and DLPack without copying."""

    def __new__(cls, dtype: int, shape: Sequence[int], device: Device | None = None) -> Self: ...
    @classmethod
    def from_object(cls, obj: _TensorLike, /) -> Self:
        """A Tensor over a numpy array's or DLPack producer's memory (no copy
        when it is C-contiguous host memory; a strided one is copied; a
        Tensor is returned as is)."""
    @classmethod
    def _set_tensor_class(cls, tensor_class: type[Tensor], /) -> None:
        """The class (Tensor or a subclass) of the tensors the extension makes."""
    def copy_to(self, device: Device | None = None, /) -> Self:
        """A copy on device (the host for None)."""
    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None,
                   copy: bool | None = None) -> Any:
        """A "dltensor" capsule over the tensor's memory (no copy; copy=True
        raises BufferError)."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """(DLPack device type, device id): (1, 0) on the host."""
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview:
            """The buffer protocol (host tensors; BufferError for device memory
            and for dtypes without a buffer format, like bfloat16)."""
    @property
    def _dtype(self) -> int:
        """kiln dtype number."""
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape."""
    @property
    def _device(self) -> Device | None:
        """The Device of a device tensor, None on the host."""
    @property
    def nbytes(self) -> int:
        """Bytes of the elements."""
    @property
    def data_ptr(self) -> int:
        """Address of the elements (host or device)."""

# ---- model.c ----

@disjoint_base
class Device:
    """Device(spec='cpu'): a device kiln opened (kiln_device): "cpu",
    "cuda", "cuda:1", "hip", "simt-emu"."""

    def __new__(cls, spec: str = "cpu") -> Self: ...
    @property
    def label(self) -> str:
        """"cpu", "cuda:0", "simt-emu"."""
    @property
    def kind(self) -> str:
        """"cpu", "cuda", "hip" or "simt-emu"."""
    @property
    def ordinal(self) -> int:
        """The device's number among its kind."""
    @property
    def description(self) -> str:
        """What the driver says it is."""
    def synchronize(self) -> None:
        """Wait for the device's queued work (the GIL released)."""
    @classmethod
    def count(cls, kind: str, /) -> int:
        """Devices of that kind here ("cpu", "cuda", "hip", "simt-emu")."""

@final
class Context:
    """Context(): a kiln context (JIT, caches, thread pool)."""

    def __new__(cls) -> Self: ...
    @property
    def num_threads(self) -> int:
        """Threads of the context's pool."""
    @property
    def target(self) -> str:
        """The host target as the JIT sees it."""
    @property
    def cache_dir(self) -> str | None:
        """The disk cache's directory, or None."""
    @property
    def cache_status(self) -> str:
        """One line: the disk cache's directory, read-only or not, its seeds."""
    @property
    def cache_warning(self) -> str | None:
        """The disk cache problem a user should fix, or None."""
    def add_cache_seed_dir(self, dir: str, /) -> None:
        """A read-only cache layer read after the own directory."""
    def set_num_threads(self, n: int, /) -> None:
        """Threads of the pool; 0: the default."""
    def set_cache_dir(self, dir: str | None, max_bytes: int = 0, /) -> None:
        """Use dir as the disk kernel cache (None: none)."""
    def set_specialize(self, policy: int, /) -> None:
        """The specialization policy (kiln.engine.SpecializePolicy)."""
    def set_max_variants(self, n: int, /) -> None:
        """Bound on each model's specialized variants."""
    def set_code_limit(self, nbytes: int, /) -> None:
        """Bound on the JIT's code memory."""
    def set_tier_up(self, min_kernels: int, /) -> None:
        """Recompile hot models' kernels; 0: off."""
    def add_kernel_library(self, path: str, /) -> None:
        """Custom kernels from a .c, .ll or .bc file (the GIL released)."""
    def wait_compiles(self, timeout_ms: int = -1, /) -> bool:
        """Wait for background compiles; True when idle."""
    def counter(self, number: int, /) -> float:
        """A context counter (kiln_counter)."""
    def set_log(self, fn: Callable[[str, str], Any] | None, level: str | int, /) -> None:
        """Send log lines at or above level ("off", "warn", "info", "debug") to
        fn(level, line), called holding the GIL from whichever thread logs;
        None: stderr."""
    @property
    def log_level(self) -> str:
        """The level logged: "off", "warn", "info" or "debug"."""
    def set_trace(self, path: str | bytes | os.PathLike[str] | None, /) -> None:
        """Write a Chrome trace-event JSON file at path; None stops."""
    def flush_trace(self) -> None:
        """Write the buffered trace events now."""
    def set_profile(self, on: bool, /) -> None:
        """Count the kernel times of every model of the context."""
    def set_remote_cache(self, url: str | None, namespace: str | None = None,
                         timeout_ms: int = 0, /) -> None:
        """Use a Redis server (redis://...) as a shared kernel cache; None: off."""
    def flush_remote_cache(self, timeout_ms: int = -1, /) -> bool:
        """Wait until every kernel queued for the remote cache is published."""
    def remote_cache_counts(self) -> dict[str, int]:
        """{"hits", "misses", "errors", "published"} of the remote cache in use."""
    @property
    def remote_cache_status(self) -> str:
        """One line: the remote cache in use, off, or why it is unavailable."""

@final
class Model:
    """Model(context, graph, device=None): a compiled kiln model (the GIL
    released while it compiles)."""

    def __new__(cls, context: Context, graph: Graph, device: Device | None = None) -> Self: ...
    def execute(self, *inputs: _TensorLike) -> list[Tensor]:
        """Run the model on inputs (read in place when C-contiguous host
        memory); the GIL is released while it runs."""
    def capture(self, key: int, *inputs: _TensorLike) -> list[Tensor]:
        """Execute and keep the resolved launch sequence under key."""
    def replay(self, key: int, *inputs: _TensorLike) -> list[Tensor]:
        """Execute inputs of the captured shapes without re-solving them."""
    def verify_replay(self, key: int, *inputs: _TensorLike) -> None:
        """Raise if these inputs would not run the captured sequence."""
    def release(self, key: int, /) -> None:
        """Drop a capture."""
    def bind_weight(self, name: str, array: _TensorLike, /) -> None:
        """Bind a weight; the model borrows (and keeps alive) the array's memory."""
    def set_specialize(self, policy: int, /) -> None:
        """This model's specialization policy."""
    def set_max_variants(self, n: int, /) -> None:
        """Bound on this model's specialized variants."""
    def set_bucket(self, symbol: str, kind: int, n: int = 0, /) -> None:
        """Group a symbolic dim's values into variants (kiln.engine.Bucket)."""
    def specialize(self, dims: dict[str, int], /) -> None:
        """Compile the variant for these symbol values now (a dict)."""
    def counter(self, number: int, /) -> float:
        """A model counter (kiln_counter)."""
    def set_profile(self, on: bool, /) -> None:
        """Count this model's kernel times (True: from zero)."""
    def profile(self) -> tuple[int, float, list[_ProfileRow]]:
        """(executes, execute_ms, rows): a row per kernel (node, kernel, shape,
        calls, total_ms, mean_ms, share, gflop, gbyte); copies have node -1."""
    @property
    def inputs(self) -> list[_Port]:
        """[(name, dtype, dims, static dims)] of the inputs."""
    @property
    def outputs(self) -> list[_Port]:
        """[(name, dtype, dims, static dims)] of the outputs."""
    @property
    def weights(self) -> list[tuple[str, int, tuple[str, ...]]]:
        """[(name, dtype, dims)] of the weights."""
    @property
    def compile_ms(self) -> float:
        """Wall time of the compile."""
    @property
    def variants(self) -> int:
        """Live specialized variants."""
