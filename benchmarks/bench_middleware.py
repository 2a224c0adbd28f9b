"""Benchmark the server middleware chain: per-call cost of three built-in middlewares
against none, in process.

Run from the repository root::

    .venv/bin/python benchmarks/bench_middleware.py [--calls 2000] [--rounds 7] [--clock cpu|wall] [--quick]

One ``McpApp`` with an async ``echo`` tool is served over ``connect_direct`` (no transport,
so the chain is a visible share of a call) in both eras, once per configuration:

* ``none``: no middleware (the sessions hold no chain);
* ``none, check bypassed`` (handshake era): the session's entry replaced by the dispatch
  it wraps, so the difference to ``none`` is what the "is there a chain?" test costs;
* ``access log``: :class:`AccessLog` writing to a logger with a ``NullHandler`` (the JSON
  line is built and handed over, nothing is written);
* ``timing``, ``rate limit`` (a token bucket too large to refuse), and all three at once.

Each round times ``--calls`` calls of every configuration, in an order rotated per round;
``--clock cpu`` (default) counts this process's CPU time, so other load on the machine
inflates the figures less than wall time would. Reported: the median microseconds per call
and the median of the per-round ratios to ``none`` of the same era (a ratio comes from
one round, so both of its terms saw the same machine).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import statistics
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import mcp_generated.v2025_11_25 as v2025_11_25
import mcp_generated.v2026_07_28 as v2026_07_28
from typedmcp.app import McpApp
from typedmcp.connecting import connect_direct
from typedmcp.protocol.middleware import Middleware
from typedmcp.protocol.middleware_builtin import AccessLog, RateLimit, Timing
from typedmcp.protocol.server import ServerSession

ERAS = {"2025-11-25": v2025_11_25, "2026-07-28": v2026_07_28}
BYPASSED = "none, check bypassed"


def null_logger() -> logging.Logger:
    """A logger that takes INFO records and drops them (a NullHandler, no propagation)."""
    logger = logging.getLogger("bench.middleware.access")
    logger.handlers[:] = [logging.NullHandler()]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def configurations() -> dict[str, Callable[[], list[Middleware]]]:
    """Configuration name -> a fresh middleware list."""
    generous = 1e9  # a bucket no benchmark empties
    return {
        "none": list,
        BYPASSED: list,
        "access log": lambda: [AccessLog(null_logger())],
        "timing": lambda: [Timing()],
        "rate limit": lambda: [RateLimit(rate=generous, burst=10**9)],
        "all three": lambda: [AccessLog(null_logger()), Timing(), RateLimit(rate=generous, burst=10**9)],
    }


def echo_app(middleware: list[Middleware]) -> McpApp:
    app = McpApp("bench-middleware", version="1.0.0", middleware=middleware)

    @app.tool()
    async def echo(text: str) -> str:
        """Say it back."""
        return text

    return app


@contextlib.contextmanager
def check_bypassed(active: bool) -> Any:
    """While ``active``: handshake sessions dispatch without the middleware test."""
    if not active:
        yield
        return
    original = ServerSession.handle_request
    ServerSession.handle_request = ServerSession._dispatch  # type: ignore[method-assign]
    try:
        yield
    finally:
        ServerSession.handle_request = original  # type: ignore[method-assign]


async def timed(client: Any, calls: int, clock: Callable[[], float], bypass: bool) -> float:
    """Microseconds per call over ``calls`` calls."""
    with check_bypassed(bypass):
        started = clock()
        for _ in range(calls):
            result = await client.call_tool(name="echo", arguments={"text": "hi"})
        elapsed = clock() - started
    if result.content[0].text != "hi":
        raise SystemExit(f"benchmark self-check failed: {result!r}")
    return elapsed / calls * 1e6


@contextlib.asynccontextmanager
async def clients(era: Any, names: list[str]) -> AsyncIterator[dict[str, Any]]:
    made = configurations()
    async with contextlib.AsyncExitStack() as stack:
        opened = {}
        for name in names:
            opened[name] = await stack.enter_async_context(connect_direct(echo_app(made[name]()), protocol=era))
        yield opened


async def run(calls: int, rounds: int, clock: Callable[[], float]) -> dict[str, dict[str, tuple[float, float]]]:
    report: dict[str, dict[str, tuple[float, float]]] = {}
    for version, era in ERAS.items():
        names = [name for name in configurations() if version == "2025-11-25" or name != BYPASSED]
        samples: dict[str, list[float]] = {name: [] for name in names}
        ratios: dict[str, list[float]] = {name: [] for name in names}
        async with clients(era, names) as opened:
            for name in names:  # warm up, untimed
                await timed(opened[name], max(10, calls // 10), clock, name == BYPASSED)
            for index in range(rounds):
                order = names[index % len(names):] + names[: index % len(names)]
                this_round = {name: await timed(opened[name], calls, clock, name == BYPASSED) for name in order}
                for name in names:
                    samples[name].append(this_round[name])
                    ratios[name].append(this_round[name] / this_round["none"])
        report[version] = {
            name: (statistics.median(samples[name]), statistics.median(ratios[name])) for name in names
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    parser.add_argument("--quick", action="store_true", help="a smoke run (CI): few calls, 3 rounds")
    args = parser.parse_args()
    calls, rounds = (200, 3) if args.quick else (args.calls, args.rounds)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    report = asyncio.run(run(calls, rounds, clock))
    print(f"server middleware, in process (connect_direct), {calls} calls x {rounds} rounds, "
          f"{args.clock} time per call")
    for version, rows in report.items():
        print(f"\n  {version}")
        print(f"  {'configuration':<24}{'us/call':>10}{'ratio to none':>16}")
        for name, (micros, ratio) in rows.items():
            print(f"  {name:<24}{micros:>10.1f}{ratio:>16.3f}")


if __name__ == "__main__":
    main()
