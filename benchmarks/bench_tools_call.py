"""Benchmark a typed tool call (``mcp-codegen tools``) against a raw ``call_tool``.

Run from the repository root::

    .venv/bin/python benchmarks/bench_tools_call.py [--calls 2000] [--rounds 9] [--quick] [--clock cpu]

The server is an ``McpApp`` in this process with one async tool, ``forecast(city, unit)``, whose
result is structured (an output schema). Its ``tools/list`` is saved as a snapshot and a
package is generated from it (``mcp-codegen tools --manifest``, untimed). Then, over one
connection (``connect_direct``: no transport; ``connect_memory``: JSON-RPC bytes between two
engines), each round times ``--calls`` raw calls (``client.call_tool(name=..., arguments={...})``,
reading ``structuredContent["high"]``) and as many typed calls (``Tools(client).forecast(...)``:
the arguments built, ``Result`` validated), alternating which goes first. Reported:
the median microseconds per call of each, the median of the rounds' paired typed/raw
ratios, the overhead measured call by call (each round also makes ``--calls`` pairs of one
raw and one typed call, each timed alone, in alternating order: the steadiest end-to-end
figure on a loaded machine), and the typed layer's own work timed alone (the generated function over a client
answering a canned result, no I/O) as a share of a raw call: on a loaded machine the end-to-end difference
is noisier than the thing measured, the share is not. Goal: < 5 %.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

import mcp_generated.v2025_11_25 as v2025_11_25
from typedmcp import connecting
from typedmcp.app import McpApp

GOAL_PERCENT = 5.0
#: The clock the measurements read (``--clock cpu``: ``time.process_time``, this process's
#: CPU time, which leaves out the time other processes hold the cores of a shared machine).
clock: Callable[[], float] = time.perf_counter
PACKAGE = "bench_call_tools"


class Forecast(BaseModel):
    """A day's forecast."""

    city: str
    unit: Literal["C", "F"]
    high: float


def forecast_app() -> McpApp:
    """The server: one tool with an enum argument and a structured result."""
    app = McpApp("bench-tools-call", version="1.0.0")

    @app.tool()  # async: a sync tool runs in a worker thread, whose scheduling swamps the difference
    async def forecast(city: str, unit: Literal["C", "F"] = "C") -> Forecast:
        """The forecast for a city."""
        return Forecast(city=city, unit=unit, high=21.5 if unit == "C" else 70.7)

    return app


async def snapshot(app: McpApp) -> dict[str, Any]:
    """The app's ``tools/list``, as ``mcp-codegen tools --manifest`` reads it."""
    client: Any
    async with connecting.connect_direct(app, protocol=v2025_11_25) as client:
        listed = await client.list_tools()
    tools = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]
    return {"protocolVersion": "2025-11-25", "serverInfo": {"name": "bench-tools-call", "version": "1.0.0"},
            "tools": tools}


def generate(folder: Path, manifest: dict[str, Any]) -> Any:
    """Generate the package under ``folder`` and import it."""
    (folder / "tools.json").write_text(json.dumps(manifest))
    subprocess.run([sys.executable, "-m", "typedmcp_codegen", "tools", "--out", str(folder / PACKAGE),
                    "--manifest", str(folder / "tools.json")], check=True, capture_output=True)
    sys.path.insert(0, str(folder))
    return importlib.import_module(PACKAGE)


async def timed(batch: Callable[[int], Awaitable[None]], calls: int) -> float:
    """Microseconds per call of one batch."""
    started = clock()
    await batch(calls)
    return (clock() - started) / calls * 1e6


class CannedClient:
    """A client whose every ``call_tool`` answers the same result at once: no I/O, so a
    typed call through it is the typed layer's own work alone."""

    def __init__(self, result: Any) -> None:
        self.result = result

    async def call_tool(self, *, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return self.result


def wrapper_work(package: Any, calls: int) -> float:
    """Microseconds per call of the typed layer alone, no I/O: ``Tools(client).forecast``
    as generated (its arguments built as it builds them, the ``structuredContent`` validated
    as ``Result``) over a client that answers a canned result, less the same loop calling the
    canned client directly."""
    canned = CannedClient(v2025_11_25.models.CallToolResult(
        content=[], structured_content={"city": "Oslo", "unit": "F", "high": 70.7}))

    tools = package.Tools(canned)

    async def typed() -> float:
        started = clock()
        for _ in range(calls):
            await tools.forecast(city="Oslo", unit="F")
        return clock() - started

    async def bare() -> float:
        started = clock()
        for _ in range(calls):
            await canned.call_tool(name="forecast", arguments={"city": "Oslo", "unit": "F"})
        return clock() - started

    typed_seconds, bare_seconds = asyncio.run(typed()), asyncio.run(bare())
    return (typed_seconds - bare_seconds) / calls * 1e6


async def compare(connector: str, app: McpApp, package: Any, calls: int,
                  rounds: int) -> tuple[float, float, float, float]:
    """Median microseconds per raw and per typed call over one connection, the median of
    each round's typed/raw ratio (paired: both batches of a round share the load), and the
    median over rounds of the overhead measured call by call (a raw and a typed call in
    turn, each timed alone, the order swapped every pair: both see the same moment's load)."""
    client: Any
    async with getattr(connecting, connector)(app, protocol=v2025_11_25) as client:
        tools = package.Tools(client)

        async def raw(count: int) -> None:
            for _ in range(count):
                result = await client.call_tool(name="forecast", arguments={"city": "Oslo", "unit": "F"})
                if result.structured_content["high"] != 70.7:
                    raise SystemExit(f"raw call answered {result!r}")

        async def typed(count: int) -> None:
            for _ in range(count):
                result = await tools.forecast(city="Oslo", unit="F")
                if result.high != 70.7:
                    raise SystemExit(f"typed call answered {result!r}")

        async def in_turn(count: int) -> float:
            """typed/raw of ``count`` pairs of calls, each call timed on its own."""
            raw_total = typed_total = 0.0
            for number in range(count):
                first, second = (raw, typed) if number % 2 else (typed, raw)
                started = clock()
                await first(1)
                middle = clock()
                await second(1)
                ended = clock()
                raw_total += (middle - started) if first is raw else (ended - middle)
                typed_total += (ended - middle) if first is raw else (middle - started)
            return typed_total / raw_total

        await raw(max(calls // 10, 1))  # warm both paths
        await typed(max(calls // 10, 1))
        raw_times, typed_times, turns = [], [], []
        for round_number in range(rounds):
            if round_number % 2:
                typed_times.append(await timed(typed, calls))
                raw_times.append(await timed(raw, calls))
            else:
                raw_times.append(await timed(raw, calls))
                typed_times.append(await timed(typed, calls))
            turns.append(await in_turn(calls))
    paired = statistics.median(t / r for t, r in zip(typed_times, raw_times, strict=True))
    return (statistics.median(raw_times), statistics.median(typed_times), (paired - 1) * 100,
            (statistics.median(turns) - 1) * 100)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per batch")
    parser.add_argument("--rounds", type=int, default=9, help="batches of each kind per connection")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200 calls, 3 rounds")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: time.process_time (CPU time; steadier on a loaded machine)")
    options = parser.parse_args()
    global clock
    clock = time.process_time if options.clock == "cpu" else time.perf_counter
    calls, rounds = (200, 3) if options.quick else (options.calls, options.rounds)
    app = forecast_app()
    with tempfile.TemporaryDirectory() as folder:
        package = generate(Path(folder), asyncio.run(snapshot(app)))
        print(f"{calls} calls x {rounds} rounds per connection; medians")
        print("| connection | raw call_tool (µs) | typed call (µs) | overhead, paired rounds |"
              " overhead, call by call | typed layer alone (µs) | its share of a raw call |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        shares, overheads = [], []
        turn_overheads: list[float] = []
        for connector in ("connect_direct", "connect_memory"):
            raw, typed, overhead, in_turn = asyncio.run(compare(connector, app, package, calls, rounds))
            alone = statistics.median(wrapper_work(package, calls) for _ in range(rounds))
            shares.append(alone / raw * 100)
            overheads.append(overhead)
            turn_overheads.append(in_turn)
            print(f"| {connector} | {raw:.1f} | {typed:.1f} | {overhead:+.1f} % | {in_turn:+.1f} % |"
                  f" {alone:.1f} | {shares[-1]:.1f} % |", flush=True)
    for what, figures in (("end to end, paired rounds", overheads), ("end to end, call by call", turn_overheads),
                          ("the typed layer's own work", shares)):
        verdict = "met" if max(figures) < GOAL_PERCENT else "NOT met"
        print(f"goal < {GOAL_PERCENT:.0f} % ({what}): {verdict} (worst {max(figures):+.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
