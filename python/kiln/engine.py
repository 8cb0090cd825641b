"""kiln.engine: compile graphs and run them, as ``max.engine``.

``InferenceSession(devices=[CPU()])`` holds a kiln context (JIT, kernel
caches, thread pool); ``session.load(graph_or_path, weights_registry=...)``
compiles a ``Graph``, an MO text file or an ONNX file into a ``Model``;
``model.execute(*inputs)`` runs it. Compiles and executes release the GIL.

Observability: ``InferenceSession(trace=path, log_level="info", log=fn)``
writes a Chrome trace (Perfetto opens it) and routes kiln's log lines to
``fn(level, line)``; ``model.set_profile(True)`` then ``model.profile()``
gives per-kernel times. ``remote_cache="redis://host:port"`` shares compiled
kernels between machines.
"""

from __future__ import annotations

import atexit
import enum
import os
import weakref
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from . import _kiln
from .driver import CPU, Device, Tensor
from .dtype import DType

__all__ = ["InferenceSession", "Model", "TensorSpec", "SpecializePolicy", "Bucket",
           "CustomExtensionsType", "Profile", "ProfileRow", "LogCallback"]

LogCallback = Callable[[str, str], Any]  # fn(level, line): level "warn", "info" or "debug"

CustomExtensionsType = list  # paths of C (.c), LLVM IR (.ll) or bitcode (.bc) kernel libraries


class SpecializePolicy(enum.IntEnum):
    """When shape-specialized variants are compiled (kiln/runtime.h)."""

    OFF = 0
    SYNC = 1
    AHEAD = 2
    ASYNC = 3


class Bucket(enum.IntEnum):
    """How the values of a symbolic dim are grouped into variants."""

    EXACT = 0
    POW2 = 1
    MULTIPLE = 2


class TensorSpec:
    """Name, shape and dtype of a model input or output. ``shape`` holds an
    int per static dim and None per symbolic one; ``dims`` the dims as text
    ("batch")."""

    def __init__(self, shape: Sequence[int | None], dtype: DType, name: str,
                 dims: Sequence[str] = ()) -> None:
        self.shape = list(shape)
        self.dtype = dtype
        self.name = name
        self.dims = list(dims)

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype}, name={self.name!r})"


class ProfileRow(NamedTuple):
    """One kernel of a profile (a device model's copies in and out have node -1).

    kernel: the op, or a fused group's ops joined by '+' ("mo.matmul+mo.relu");
    shape: its first result's type as compiled ("[batch, 128] f32"); calls,
    total_ms, mean_ms: its calls and their time; share: of every row's total;
    gflop, gbyte: work over all calls (gflop is counted for matmuls only);
    rate, rate_unit: GFLOP/s where flops are counted, else GB/s (0.0, "" when
    it never ran)."""

    node: int
    kernel: str
    shape: str
    calls: int
    total_ms: float
    mean_ms: float
    share: float
    gflop: float
    gbyte: float
    rate: float
    rate_unit: str


def _row(t: tuple) -> ProfileRow:
    node, kernel, shape, calls, total_ms, mean_ms, share, gflop, gbyte = t
    s = total_ms / 1e3
    if s > 0 and gflop > 0:
        rate, unit = gflop / s, "GFLOP/s"
    elif s > 0 and gbyte > 0:
        rate, unit = gbyte / s, "GB/s"
    else:
        rate, unit = 0.0, ""
    return ProfileRow(node, kernel, shape, calls, total_ms, mean_ms, share, gflop, gbyte, rate,
                      unit)


class Profile(Sequence[ProfileRow]):
    """A snapshot of a model's profile: its rows in graph order (a sequence of
    ProfileRow), the executes counted and their wall time (``execute_ms``, each
    from entry to return)."""

    def __init__(self, executes: int, execute_ms: float, rows: list[ProfileRow]) -> None:
        self.executes = executes
        self.execute_ms = execute_ms
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: Any) -> Any:
        return self.rows[i]

    def __iter__(self) -> Iterator[ProfileRow]:
        return iter(self.rows)

    def __str__(self) -> str:
        total = sum(r.total_ms for r in self.rows)
        lines = [f"profile: {self.executes} executes, {self.execute_ms:.3f} ms in executes, "
                 f"{total:.3f} ms in kernels",
                 f"{'node':>4}  {'kernel':<32} {'shape':<24} {'calls':>7} {'total ms':>10} "
                 f"{'mean ms':>10} {'share':>6}  rate"]
        for r in self.rows:
            rate = f"{r.rate:.2f} {r.rate_unit}" if r.rate_unit else "-"
            lines.append(f"{r.node:>4}  {r.kernel[:32]:<32} {r.shape[:24]:<24} {r.calls:>7} "
                         f"{r.total_ms:>10.3f} {r.mean_ms:>10.4f} {100 * r.share:>5.1f}%  {rate}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"Profile(executes={self.executes}, execute_ms={self.execute_ms:.3f}, "
                f"rows={len(self.rows)})")


# Sessions whose log lines go to a Python callable: at exit kiln's threads
# (a background compile) must not call into an interpreter being finalized.
_logging_sessions: "weakref.WeakSet[InferenceSession]" = weakref.WeakSet()


@atexit.register
def _stop_python_logs() -> None:
    for s in list(_logging_sessions):
        s._ctx.set_log(None, "off")


def _paths(ext: Any) -> list[str]:
    if ext is None:
        return []
    if isinstance(ext, (str, os.PathLike)):
        return [os.fspath(ext)]
    return [os.fspath(e) for e in ext]


class InferenceSession:
    """Loads and compiles models (``max.engine.InferenceSession``).

    devices: where models run; the first is used (default: the CPU).
    num_threads: threads of the CPU pool (default: the CPUs this process may
    use). custom_extensions: kernel libraries (.c, .ll, .bc paths) that serve
    the graphs' ``ops.custom`` calls. cache_dir: the disk kernel cache
    (default: kiln's, from KILN_CACHE_DIR or ~/.cache/kiln; None turns it off
    when given explicitly). remote_cache: a Redis server shared by many
    machines ("redis://[[user]:password@]host[:port][/db]"), looked up after
    the disk cache (default: KILN_CACHE_REMOTE; None turns it off when given).
    trace: write a Chrome trace-event JSON file of compiles, executes and
    kernels (also KILN_TRACE). log: a callable ``fn(level, line)`` that gets
    kiln's log lines instead of stderr, from whichever thread logs (it holds
    the GIL then; it must not call kiln); log_level: "off", "warn" (default,
    or KILN_LOG), "info" or "debug". profile: count every model's kernel
    times (``Model.profile``)."""

    _NO_CACHE_ARG = object()

    def __init__(self, devices: Iterable[Device] | None = None, num_threads: int | None = None,
                 *, custom_extensions: Any = None, cache_dir: Any = _NO_CACHE_ARG,
                 specialize: SpecializePolicy | None = None,
                 remote_cache: Any = _NO_CACHE_ARG, trace: Any = None,
                 log: LogCallback | None = None, log_level: str | None = None,
                 profile: bool = False) -> None:
        self.devices = list(devices) if devices is not None else [CPU()]
        if not self.devices:
            raise ValueError("InferenceSession: devices is empty")
        self._ctx = _kiln.Context()
        if num_threads is not None:
            self._ctx.set_num_threads(int(num_threads))
        if cache_dir is not InferenceSession._NO_CACHE_ARG:
            self._ctx.set_cache_dir(None if cache_dir is None else os.fspath(cache_dir))
        if specialize is not None:
            self._ctx.set_specialize(int(specialize))
        self._trace: str | None = None
        if log is not None or log_level is not None:
            self.set_log(log, log_level)
        if remote_cache is not InferenceSession._NO_CACHE_ARG:
            self.set_remote_cache(remote_cache)
        if trace is not None:
            self.set_trace(trace)
        if profile:
            self.set_profile(True)
        self._libraries: set[str] = set()
        for p in _paths(custom_extensions):
            self._add_library(p)

    def _add_library(self, path: str) -> None:
        full = os.path.abspath(path)
        if full not in self._libraries:
            self._ctx.add_kernel_library(full)
            self._libraries.add(full)

    @property
    def num_threads(self) -> int:
        """Threads of the CPU pool."""
        return self._ctx.num_threads

    @property
    def cache_dir(self) -> str | None:
        """The disk kernel cache's directory, or None when off."""
        return self._ctx.cache_dir

    def set_cache_dir(self, path: Any, max_bytes: int = 0) -> None:
        """Use path (created when missing) as the disk kernel cache; None: no disk cache."""
        self._ctx.set_cache_dir(None if path is None else os.fspath(path), max_bytes)

    def add_cache_seed_dir(self, path: Any) -> None:
        """Read kernels from path (a cache directory shipped at deploy) after the own cache.

        The seed is never written. It must be a directory owned by you or root and not
        writable by group or others; KILN_CACHE_SEED_DIR does the same from the environment.
        """
        self._ctx.add_cache_seed_dir(os.fspath(path))

    @property
    def cache_status(self) -> str:
        """One line: "disk cache: DIR[, read-only][; seeds A:B]", or why it is off."""
        return self._ctx.cache_status

    @property
    def cache_warning(self) -> str | None:
        """The disk cache problem a user should fix (unwritable, foreign owner...), or None."""
        return self._ctx.cache_warning

    def set_log(self, fn: LogCallback | None, level: str | None = None) -> None:
        """Send kiln's log lines at or above level ("off", "warn", "info", "debug"; None:
        the level now) to ``fn(level, line)``; fn None: to stderr. fn runs on whichever
        thread logs (kiln's compile threads too) holding the GIL, one line at a time; it
        must not call kiln."""
        self._ctx.set_log(fn, self.log_level if level is None else level)
        if fn is None:
            _logging_sessions.discard(self)
        else:
            _logging_sessions.add(self)

    @property
    def log_level(self) -> str:
        """The level logged: "off", "warn", "info" or "debug"."""
        return self._ctx.log_level

    def set_trace(self, path: Any) -> None:
        """Write a Chrome trace-event JSON file (Perfetto, chrome://tracing) at path,
        created or truncated; None stops and closes the current one. The file is a whole
        JSON array after each write (``flush_trace``, a full buffer, stop, close)."""
        self._ctx.set_trace(None if path is None else os.fspath(path))
        self._trace = None if path is None else os.fspath(path)

    @property
    def trace_path(self) -> str | None:
        """The trace file being written, or None."""
        return self._trace

    def flush_trace(self) -> None:
        """Write the buffered trace events now."""
        self._ctx.flush_trace()

    def set_profile(self, on: bool) -> None:
        """Count the kernel times of every model of this session, later ones too."""
        self._ctx.set_profile(bool(on))

    def set_remote_cache(self, url: str | None, namespace: str | None = None,
                         timeout_ms: int = 0) -> None:
        """Use the Redis server at url as a shared kernel cache; None turns it off.

        namespace prefixes the keys (default KILN_CACHE_REMOTE_NS, else "kiln");
        timeout_ms bounds each connect and command (0: KILN_CACHE_REMOTE_TIMEOUT_MS,
        else 50). A bad URL raises; an unreachable server only costs compiles."""
        self._ctx.set_remote_cache(url, namespace, int(timeout_ms))

    @property
    def remote_cache_status(self) -> str:
        """One line: the remote cache in use, "remote cache off", or why it is unavailable."""
        return self._ctx.remote_cache_status

    @property
    def remote_cache_counts(self) -> dict[str, int]:
        """Kernels fetched (hits), lookups not served (misses), failed commands (errors)
        and kernels published, for the remote cache in use."""
        return self._ctx.remote_cache_counts()

    def flush_remote_cache(self, timeout_s: float | None = None) -> bool:
        """Wait until every kernel compiled here is published to the remote cache."""
        return self._ctx.flush_remote_cache(-1 if timeout_s is None else int(timeout_s * 1000))

    def set_specialize(self, policy: SpecializePolicy) -> None:
        """The specialization policy of this session's models that have none."""
        self._ctx.set_specialize(int(policy))

    def wait_compiles(self, timeout_s: float | None = None) -> bool:
        """Wait for background compiles (specialization, tier-up); True when idle."""
        return self._ctx.wait_compiles(-1 if timeout_s is None else int(timeout_s * 1000))

    def load(self, model: Any, *, custom_extensions: Any = None,
             weights_registry: Mapping[str, Any] | None = None) -> "Model":
        """Compile a ``kiln.graph.Graph``, an MO text file (.mlir, .mo) or an
        ONNX file (.onnx) into a Model. weights_registry binds the graph's
        weights by name (numpy arrays or DLPack producers, used without a copy
        where the model reads them in place: keep them unchanged)."""
        from .graph import Graph

        for p in _paths(custom_extensions):
            self._add_library(p)
        if isinstance(model, Graph):
            for p in model._custom_extensions:
                self._add_library(p)
            graph = model._finished()
        elif isinstance(model, (str, os.PathLike)):
            path = Path(model)
            if path.suffix == ".onnx":
                graph = _kiln.Graph.from_onnx(str(path))
            else:
                graph = _kiln.Graph.load(str(path))
        elif isinstance(model, _kiln.Graph):
            graph = model
        else:
            raise TypeError(f"load: expected a Graph or a path, got {type(model).__name__}")
        device = self.devices[0]
        m = _kiln.Model(self._ctx, graph, None if device.is_host else device)
        out = Model(m, self)
        for name, value in (weights_registry or {}).items():
            out.bind_weight(name, value)
        return out


def _spec(port: tuple) -> TensorSpec:
    name, dt, dims, static = port
    return TensorSpec([None if s < 0 else s for s in static], DType._from_kiln(dt), name, dims)


class Model:
    """A compiled model (``max.engine.Model``); made by ``InferenceSession.load``."""

    def __init__(self, m: "_kiln.Model", session: InferenceSession) -> None:
        self._m = m
        self._session = session
        # the C call itself, shadowing the method below: no Python frame per execute
        self.execute = m.execute

    def execute(self, *inputs: Any) -> list[Tensor]:
        """Run the model. Inputs: numpy arrays, kiln Tensors or DLPack
        producers, in order; C-contiguous host memory is read in place.
        Returns the outputs as Tensors (host ones share memory with
        ``to_numpy()``)."""
        return self._m.execute(*inputs)

    def __call__(self, *inputs: Any) -> list[Tensor]:
        return self._m.execute(*inputs)

    @property
    def input_metadata(self) -> list[TensorSpec]:
        """Name, shape and dtype of each input."""
        return [_spec(p) for p in self._m.inputs]

    @property
    def output_metadata(self) -> list[TensorSpec]:
        """Name, shape and dtype of each output."""
        return [_spec(p) for p in self._m.outputs]

    @property
    def weight_names(self) -> list[str]:
        """Names of the graph's weights (``mo.constant.external``)."""
        return [w[0] for w in self._m.weights]

    @property
    def compile_ms(self) -> float:
        """Wall time of the compile, in milliseconds."""
        return self._m.compile_ms

    def bind_weight(self, name: str, value: Any) -> None:
        """Bind (or rebind) a weight by name; the model keeps value alive."""
        self._m.bind_weight(name, value)

    def capture(self, graph_key: int, *inputs: Any) -> list[Tensor]:
        """Execute and keep the resolved binding under graph_key for replay."""
        return self._m.capture(graph_key, *inputs)

    def replay(self, graph_key: int, *inputs: Any) -> list[Tensor]:
        """Execute inputs of the captured shapes without re-solving them."""
        return self._m.replay(graph_key, *inputs)

    def debug_verify_replay(self, graph_key: int, *inputs: Any) -> None:
        """Raise if these inputs would not run the captured launch sequence."""
        self._m.verify_replay(graph_key, *inputs)

    def release(self, graph_key: int) -> None:
        """Drop a capture."""
        self._m.release(graph_key)

    def set_specialize(self, policy: SpecializePolicy) -> None:
        """This model's specialization policy."""
        self._m.set_specialize(int(policy))

    def set_bucket(self, symbol: str, kind: Bucket, n: int = 0) -> None:
        """Group a symbolic dim's values into variants (EXACT, POW2, MULTIPLE of n)."""
        self._m.set_bucket(symbol, int(kind), n)

    def set_max_variants(self, n: int) -> None:
        """Bound on this model's specialized variants."""
        self._m.set_max_variants(n)

    def specialize(self, **dims: int) -> None:
        """Compile the variant for these symbol values now (``batch=4, seq=128``)."""
        self._m.specialize(dims)

    @property
    def variants(self) -> int:
        """Specialized variants live now."""
        return self._m.variants

    def set_profile(self, on: bool) -> None:
        """Count this model's kernel times (True starts from zero; False stops, keeping them)."""
        self._m.set_profile(bool(on))

    def profile(self) -> Profile:
        """A snapshot of the kernel times counted so far: a row per kernel in graph order
        (a device model's copies in and out last), the executes and their time."""
        executes, execute_ms, rows = self._m.profile()
        return Profile(executes, execute_ms, [_row(r) for r in rows])
