"""What the benchmarks count (issue 22, requirement 4): the runtime's own paths, the SDK's
fastest, and CPU time per call beside each side. No timing here: the comparisons are fed
made-up figures, so each test checks which path a benchmark counts, never how fast it is."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from typedmcp.engine.jsonrpc import DEFAULT_MAX_IN_FLIGHT, Engine

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def benchmarks() -> Iterator[dict[str, ModuleType]]:
    """The benchmark scripts as modules (they import ``_common`` from beside themselves)."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield {name: importlib.import_module(name) for name in ("bench_generator", "bench_runtime", "_common")}
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_generator_counts_the_runtime_path_even_when_an_alternative_is_faster(
    benchmarks: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = benchmarks["bench_generator"]

    def made_up(candidates: dict[str, Any], count: int, settings: Any) -> dict[str, dict[str, Any]]:
        # every alternative twice as fast as the runtime's own path
        return {name: {"median_msg_s": 1.0 if "runtime:" in name else 2.0, "median_cpu_us": 1.0}
                for name in candidates}

    monkeypatch.setattr(generator, "compare", made_up)
    settings = generator.Settings.make(quick=True, repeats=None)
    report = generator.bench_throughput(settings)
    assert report["tools_call"]["ours_path"] == f"ours: {generator.RUNTIME_CALL}"
    assert report["tools_list"]["ours_path"] == f"ours: {generator.RUNTIME_LIST}"


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}',
        b'{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"x"}}',
        b'{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}',
        b'{"jsonrpc":"2.0","id":1,"method":7}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","n":NaN}}',
        b"[1, 2]",
    ],
)
def test_the_generator_s_runtime_path_takes_what_the_engine_s_fast_path_takes(
    benchmarks: dict[str, ModuleType], line: bytes
) -> None:
    """The counted request path accepts exactly the lines ``Engine._receive_now`` starts a
    handler for (it refuses the rest, which the engine leaves to its read loop)."""
    started: list[str] = []

    class Recorder(Engine):
        def _start(self, request_id: Any, method: str, params: Any, *, send: bool) -> None:
            started.append(method)

    engine = Recorder.__new__(Recorder)
    engine._incoming, engine._reserved, engine.lane = {}, 0, None
    engine.max_in_flight = DEFAULT_MAX_IN_FLIGHT
    taken_by_engine = engine._receive_now(line) and bool(started)
    receive = benchmarks["bench_generator"].runtime_paths()["call"]
    try:
        receive(line)
    except ValueError:  # refused (pydantic's ValidationError is one too)
        taken_by_benchmark = False
    else:
        taken_by_benchmark = True
    assert taken_by_benchmark == taken_by_engine


def test_runtime_in_process_row_is_compared_with_the_sdk_s_faster_path(
    benchmarks: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = benchmarks["bench_runtime"]
    for faster in ("sdk_memory", "sdk_direct_dispatcher"):

        async def made_up(openers: dict[str, Any], count: int, settings: Any, *, baseline: str,
                          faster: str = faster) -> dict[str, dict[str, Any]]:
            return {name: {"median_calls_s": 2.0 if name == faster else 1.0} for name in openers}

        monkeypatch.setattr(runtime, "compare", made_up)
        section = asyncio.run(runtime.bench_inprocess(runtime.Settings.make(quick=True, repeats=None)))
        assert section["sdk"] == faster


def test_cpu_of_child_processes_is_counted(benchmarks: dict[str, ModuleType]) -> None:
    """``descendants_cpu`` (the server side of every stdio and HTTP row) sees the CPU a
    child process's own child burns (the SDK's stdio client, for one, spawns the server
    from a child)."""
    common = benchmarks["_common"]
    burn = ("import sys, time\nend = time.process_time() + 0.3\n"
            "while time.process_time() < end: pass\nprint('burnt', flush=True)\nsys.stdin.read()\n")
    script = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {burn!r}])"
    before = common.descendants_cpu()
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline() == b"burnt\n"  # the grandchild has burnt its 0.3 s
        assert common.descendants_cpu() - before >= 0.25
    finally:
        child.stdin.close()
        child.wait(10)
        child.stdout.close()
