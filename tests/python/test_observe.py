"""Observability from Python: traces, log lines to a callable (from kiln's
own threads too, holding the GIL), per-kernel profiles on the host and on
simt-emu, and the remote (Redis) kernel cache shared by two sessions."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import kiln
from kiln.driver import SimtEmulator
from kiln.dtype import DType
from kiln.engine import InferenceSession, Profile, ProfileRow
from kiln.graph import Graph, TensorType, ops


def mlp_graph(name: str = "mlp", k: int = 64, n: int = 96, m: int = 32) -> Graph:
    """relu(x @ w1) @ w2 with the batch symbolic: two GEMM kernels."""
    types = [TensorType(DType.float32, ["batch", k]), TensorType(DType.float32, [k, n]),
             TensorType(DType.float32, [n, m])]
    with Graph(name, input_types=types) as g:
        x, w1, w2 = g.inputs
        g.output(ops.matmul(ops.relu(ops.matmul(x, w1)), w2))
    return g


def mlp_inputs(batch: int = 32, k: int = 64, n: int = 96, m: int = 32) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in ((batch, k), (k, n), (n, m))]


def read_trace(path: Path) -> list[dict]:
    events = json.loads(path.read_text())
    assert isinstance(events, list)
    return events


def test_trace_is_json_with_compiles_executes_and_kernels(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    session = InferenceSession(cache_dir=None, trace=trace)
    assert session.trace_path == os.fspath(trace)
    model = session.load(mlp_graph())
    for _ in range(3):
        model.execute(*mlp_inputs())
    session.flush_trace()  # a whole JSON array while the session lives
    events = read_trace(trace)
    names = [e.get("name") for e in events]
    assert names.count("execute @mlp") == 3
    assert names.count("compile model @mlp") == 1
    assert sum(1 for e in events if e.get("cat") == "kernel") >= 3
    session.set_trace(None)
    assert session.trace_path is None
    model.execute(*mlp_inputs())
    assert [e.get("name") for e in read_trace(trace)].count("execute @mlp") == 3, "stopped"


def test_trace_to_an_unwritable_path_raises() -> None:
    with pytest.raises(kiln.KilnError, match="/nonexistent/dir/t.json"):
        InferenceSession(cache_dir=None, trace="/nonexistent/dir/t.json")


def test_log_callable_gets_the_lines_at_its_level() -> None:
    lines: list[tuple[str, str]] = []
    session = InferenceSession(cache_dir=None, log=lambda lv, line: lines.append((lv, line)),
                               log_level="info")
    assert session.log_level == "info"
    session.load(mlp_graph())
    assert any(lv == "info" and "compiled model @mlp" in line for lv, line in lines), lines
    assert all(lv in ("warn", "info") for lv, _ in lines), "no debug lines at info"
    quiet: list[tuple[str, str]] = []
    session.set_log(lambda lv, line: quiet.append((lv, line)), "warn")
    session.load(mlp_graph("mlp2"))
    assert quiet == [], "a clean compile says nothing at warn"
    session.set_log(None, "debug")
    session.set_log(lambda lv, line: quiet.append((lv, line)))  # no level: it stays
    assert session.log_level == "debug"
    session.set_log(None, "warn")
    assert session.log_level == "warn"
    with pytest.raises(ValueError, match="loud"):
        session.set_log(None, "loud")
    with pytest.raises(TypeError):
        session.set_log(42, "info")  # type: ignore[arg-type]


def test_log_callable_runs_on_kiln_threads_holding_the_gil() -> None:
    """Executes on many Python threads and compiles (some on kiln's pool) log
    at debug while the main thread also calls setters that log: every line
    arrives, from whichever thread, and nothing deadlocks."""
    seen: list[tuple[int, str]] = []

    def log(level: str, line: str) -> None:
        seen.append((threading.get_ident(), line))  # Python work: needs the GIL

    session = InferenceSession(cache_dir=None, num_threads=2, log=log, log_level="debug")
    models = [session.load(mlp_graph(f"m{i}")) for i in range(3)]
    errors: list[BaseException] = []

    def work(m) -> None:
        try:
            for b in (8, 16, 24, 32):
                m.execute(*mlp_inputs(b))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for _ in range(20):  # takes kiln's log lock while kiln threads log
        session.set_log(log, "debug")
    for t in threads:
        t.join(60)
        assert not t.is_alive(), "an execute hung"
    assert not errors, errors
    assert session.wait_compiles(60)
    assert any("compiled kernel" in line for _, line in seen), seen[:5]


def test_an_exception_in_the_log_callable_does_not_reach_kiln(monkeypatch) -> None:
    import sys

    hooked: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: hooked.append(u.exc_value))

    def bad(level: str, line: str) -> None:
        raise RuntimeError("log sink broken")

    session = InferenceSession(cache_dir=None, log=bad, log_level="info")
    model = session.load(mlp_graph())
    (y,) = model.execute(*mlp_inputs())
    assert y.to_numpy().shape == (32, 32)
    assert any(isinstance(e, RuntimeError) for e in hooked)


def check_profile(p: Profile, n: int, kernels: int) -> None:
    assert p.executes == n
    assert len(p) >= kernels
    for row in p.rows[:kernels]:
        assert isinstance(row, ProfileRow)
        assert row.calls == n and row.node >= 0
        assert row.kernel.startswith("mo.")
        assert row.rate > 0 and row.rate_unit in ("GFLOP/s", "GB/s")
    assert abs(sum(r.share for r in p) - 1.0) < 1e-9
    total = sum(r.total_ms for r in p)
    assert 0.9 * p.execute_ms <= total <= p.execute_ms * (1 + 1e-9), (total, p.execute_ms)
    assert "mo.matmul" in str(p)


def test_profile_rows_sum_to_the_execute_time() -> None:
    # big enough that the kernels are most of an execute, in sanitized builds too
    session = InferenceSession(cache_dir=None)
    model = session.load(mlp_graph(k=256, n=512, m=64))
    ins = mlp_inputs(512, k=256, n=512, m=64)
    model.execute(*ins)  # the binding's plan: not what is timed
    model.set_profile(True)
    for _ in range(10):
        model.execute(*ins)
    p = model.profile()
    check_profile(p, 10, 2)
    gflop = sum(r.gflop for r in p)
    assert gflop == pytest.approx(10 * 2 * 512 * (256 * 512 + 512 * 64) / 1e9)
    model.set_profile(False)
    model.execute(*ins)
    assert model.profile().executes == 10, "stopped: the counts are kept"


def test_profile_of_a_simt_emu_model_has_kernels_and_copies() -> None:
    session = InferenceSession(devices=[SimtEmulator()], cache_dir=None)
    model = session.load(mlp_graph())
    ins = mlp_inputs(16)
    model.execute(*ins)
    model.set_profile(True)
    for _ in range(3):
        model.execute(*ins)
    p = model.profile()
    kernels = [r for r in p if r.node >= 0]
    check_profile(p, 3, len(kernels))
    copies = {r.kernel: r for r in p if r.node < 0}
    assert copies["copy in"].calls == 9 and copies["copy out"].calls == 3
    assert copies["launches and waits"].calls == 3


def test_session_profile_covers_models_loaded_later() -> None:
    session = InferenceSession(cache_dir=None, profile=True)
    model = session.load(mlp_graph())
    model.execute(*mlp_inputs())
    assert model.profile().executes == 1


# ---- the remote cache ----

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_url(tmp_path: Path):
    binary = shutil.which("redis-server")
    if not binary:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                time.sleep(0.02)
        else:
            pytest.fail("redis-server did not answer PING")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()
        proc.wait()


def test_remote_cache_serves_a_second_session(redis_url: str, tmp_path: Path) -> None:
    first = InferenceSession(cache_dir=tmp_path / "a", remote_cache=redis_url)
    assert redis_url.split("//")[1].split("/")[0] in first.remote_cache_status
    first.load(mlp_graph())
    assert first.flush_remote_cache(30)
    assert first.remote_cache_counts["published"] >= 2
    second = InferenceSession(cache_dir=tmp_path / "b")  # its own, empty disk cache
    second.set_remote_cache(redis_url, timeout_ms=1000)
    model = second.load(mlp_graph())
    assert second.remote_cache_counts["hits"] >= 2
    (y,) = model.execute(*mlp_inputs())
    x, w1, w2 = mlp_inputs()
    np.testing.assert_allclose(y.to_numpy(), np.maximum(x @ w1, 0) @ w2, rtol=1e-4, atol=1e-4)


def test_remote_cache_url_is_checked_and_can_be_turned_off() -> None:
    with pytest.raises(kiln.KilnError, match="redis"):
        InferenceSession(cache_dir=None, remote_cache="http://127.0.0.1:6379")
    session = InferenceSession(cache_dir=None, remote_cache="redis://127.0.0.1:1/0")
    assert "127.0.0.1:1" in session.remote_cache_status
    session.set_remote_cache(None)
    assert session.remote_cache_status.startswith("remote cache off")
