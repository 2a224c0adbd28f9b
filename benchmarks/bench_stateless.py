"""Benchmark mcp-codegen's runtime at protocol 2026-07-28 beside the official SDK in auto mode.

Run from the repository root::

    /tmp/venv/bin/python benchmarks/bench_stateless.py [--quick] [--repeats N] [--json PATH]

The stateless-era twin of ``bench_runtime.py``: every request carries its own ``_meta``
(protocol version, client capabilities, client info); there is no ``initialize``. Both
clients negotiate the way their users get by default: ours with ``protocol="auto"``, the
SDK's ``mcp.Client`` with ``mode="auto"``; each probes ``server/discover`` once and the
script fails loudly unless both ends settled on 2026-07-28. Every measurement is sequential
``tools/call`` round trips per second of the same ``echo`` tool (``{"text": "hello"}`` in,
one text block out) served by the two minimal servers of ``benchmarks/peers/``:
``ours_server.py`` (a generated ``ServerHandlers`` subclass; ``run_stdio`` and ``http_app``
serve both eras) and ``sdk_server.py`` (the SDK's low-level ``Server``, which serves both eras
with no option: ``Server.run`` is ``serve_dual_era_loop`` and ``streamable_http_app()`` hands a
request carrying the 2026-07-28 envelope to its single-exchange entry). It measures:

1. stdio: ours = ``connect_stdio(..., protocol="auto")`` spawning ``ours_server.py stdio``;
   SDK = ``mcp.Client(StdioServerParameters(...))`` spawning ``sdk_server.py stdio``;
2. Streamable HTTP, servers under uvicorn on 127.0.0.1 (``peers/_uvicorn.py``): ours =
   ``connect_http(url, protocol="auto")`` against ``http_app``; SDK = ``mcp.Client(url)``
   against ``Server.streamable_http_app()`` in its default SSE mode and with
   ``json_response=True``; the faster SDK configuration is the one compared;
3. in-process, like with like: ours = ``memory.connect_direct(handlers, protocol="auto")``
   (no transport and no JSON-RPC: the client's request is a call of the server's
   ``build_router`` dispatcher; params and results are still validated on both sides);
   SDK = ``mcp.Client(server)`` in auto mode (``_connect_inproc``: a ``DirectDispatcher``
   pair driving ``modern_on_request``, no JSON-RPC framing and no serialisation either).
   For information: ours ``memory.connect_memory`` (JSON-RPC bytes handed between two
   engines) and ``mcp.Client(InMemoryTransport(server))`` in auto mode (JSON-RPC message
   objects through anyio memory streams, the server's ``serve_dual_era_loop``); and ours
   with the same tool on handlers typed with ``mcp_generated.v2026_07_28``
   (``peers/ours_server_modern.py``; ``ours_server.py``'s handlers are typed with 2025-11-25,
   so serving 2026-07-28 the runtime validates params with those types).

Mixed pairs (our client with the SDK server and the SDK client with ours, stdio and HTTP) are
shown for information. Every reply is checked (one text block ``hello``, not an error), so no
error is ever timed.

Caching: neither side can answer a ``tools/call`` from a cache. In 2026-07-28 only the list
verbs, ``resources/read`` (and ``server/discover``) are cacheable; ``CallToolResult`` has no
``ttlMs``/``cacheScope``. The SDK ``Client`` keeps its default ``CacheConfig()`` (what auto
mode users get), but its ``call_tool`` never consults the response cache (only the list verbs
and ``read_resource`` do); our client has no response cache. The self-check before timing
sends two different texts and requires each to come back, so every reply is the server's.

``--profile DIR`` also profiles our client (in this process) and our server (in its own
process) over stdio and HTTP, and both in-process, and prints their top costs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import importlib
import importlib.util
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

PEERS = Path(__file__).resolve().parent / "peers"
OURS_SERVER = PEERS / "ours_server.py"
OURS_MODERN_SERVER = PEERS / "ours_server_modern.py"
SDK_SERVER = PEERS / "sdk_server.py"
PACKAGE = "mcp_generated.v2026_07_28"
REVISION = "2026-07-28"
SDK_REQUIREMENT = "mcp==2.3.0"

# Targets: ours/SDK calls per second (higher is better), the same as the handshake era's.
TARGET_STDIO_SPEEDUP = 5.0
TARGET_HTTP_SPEEDUP = 3.0
TARGET_INPROCESS_SPEEDUP = 5.0

ARGUMENTS: dict[str, Any] = {"text": "hello"}
EXPECTED_TEXT = "hello"
PROBE_TEXT = "caching check"  # a second text for the self-check: replies are not replayed


@dataclass(frozen=True)
class Settings:
    """How many calls and samples each measurement takes."""

    repeats: int
    stdio_calls: int
    http_calls: int
    inprocess_calls: int
    warmup_calls: int

    @classmethod
    def make(cls, *, quick: bool, repeats: int | None) -> Settings:
        if quick:
            base = cls(
                repeats=3, stdio_calls=300, http_calls=150, inprocess_calls=500, warmup_calls=100
            )
        else:
            base = cls(
                repeats=7, stdio_calls=2000, http_calls=600, inprocess_calls=3000, warmup_calls=300
            )
        return base if repeats is None else replace(base, repeats=max(1, repeats))


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def server_command(script: Path, *args: str) -> list[str]:
    return [sys.executable, str(script), *args]


def child_env() -> dict[str, str]:
    """This environment for every child, with bytecode caching on (as in bench_runtime)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def load_peer(name: str, path: Path) -> ModuleType:
    """Import a peer script by path (the in-process rows reuse the servers' handlers)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def fail(message: str) -> SystemExit:
    return SystemExit(f"benchmark self-check failed: {message}")


# --------------------------------------------------------------------------------------
# Connections: one client connected to one server, checked on every reply
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Connection:
    """An open client: ``call(text)`` returns the echoed text; ``batch(n)`` makes n checked
    calls; ``version`` and ``discovered`` are what negotiation settled on."""

    call: Callable[[str], Awaitable[str]]
    batch: Callable[[int], Awaitable[None]]
    version: str | None
    discovered: list[str]


def text_of(result: Any) -> str:
    """The text of a one-block, non-error tool result, ours or the SDK's."""
    content = result.content
    if result.is_error or len(content) != 1 or getattr(content[0], "type", None) != "text":
        raise fail(f"not one text block: {result!r}")
    text: str = content[0].text
    return text


def ours_connection(client: Any) -> Connection:
    """Our generated ``Client``: ``await client.call_tool(name=..., arguments=...)``."""
    session = client.session

    async def call(text: str) -> str:
        return text_of(await client.call_tool(name="echo", arguments={"text": text}))

    async def batch(count: int) -> None:
        call_tool = client.call_tool
        for _ in range(count):
            result = await call_tool(name="echo", arguments=ARGUMENTS)
            if result.content[0].text != EXPECTED_TEXT or result.is_error:
                raise fail(f"ours answered {result!r}")

    discovery = session.discovery
    discovered = list(discovery.supported_versions) if discovery is not None else []
    return Connection(call, batch, session.protocol_version, discovered)


def sdk_connection(client: Any) -> Connection:
    """The SDK's ``mcp.Client``: ``await client.call_tool(name, arguments)``."""

    async def call(text: str) -> str:
        return text_of(await client.call_tool("echo", {"text": text}))

    async def batch(count: int) -> None:
        call_tool = client.call_tool
        for _ in range(count):
            result = await call_tool("echo", ARGUMENTS)
            if result.content[0].text != EXPECTED_TEXT or result.is_error:
                raise fail(f"SDK answered {result!r}")

    discovery = client.session.discover_result
    discovered = list(discovery.supported_versions) if discovery is not None else []
    return Connection(call, batch, client.protocol_version, discovered)


@contextlib.asynccontextmanager
async def ours_stdio(command: list[str]) -> AsyncIterator[Connection]:
    from mcp_codegen.runtime.client import connect_stdio

    async with connect_stdio(command, protocol="auto", env=child_env()) as client:
        yield ours_connection(client)


@contextlib.asynccontextmanager
async def sdk_stdio(command: list[str]) -> AsyncIterator[Connection]:
    from mcp import Client, StdioServerParameters

    parameters = StdioServerParameters(command=command[0], args=command[1:], env=child_env())
    async with Client(parameters) as client:  # mode="auto", cache=CacheConfig()
        yield sdk_connection(client)


@contextlib.asynccontextmanager
async def ours_http(url: str) -> AsyncIterator[Connection]:
    from mcp_codegen.runtime.client import connect_http

    async with connect_http(url, protocol="auto") as client:
        yield ours_connection(client)


@contextlib.asynccontextmanager
async def sdk_http(url: str) -> AsyncIterator[Connection]:
    from mcp import Client

    async with Client(url) as client:  # mode="auto", cache=CacheConfig()
        yield sdk_connection(client)


@contextlib.asynccontextmanager
async def ours_inprocess(
    script: Path = OURS_SERVER, connector: str = "connect_direct"
) -> AsyncIterator[Connection]:
    """Our client and server in this process: ``connect_direct`` (no transport, no JSON-RPC:
    a request is a call of the server's dispatcher, as the SDK's DirectDispatcher does) or
    ``connect_memory`` (JSON-RPC bytes between two engines)."""
    from mcp_codegen.runtime import memory

    peer = load_peer(f"bench_peer_{script.stem}", script)
    server_info = {"name": peer.NAME, "version": peer.VERSION}
    connect = getattr(memory, connector)
    async with connect(peer.Echo(), protocol="auto", server_options={"server_info": server_info}) as client:
        yield ours_connection(client)


@contextlib.asynccontextmanager
async def sdk_inprocess_direct() -> AsyncIterator[Connection]:
    """``mcp.Client(server)`` in auto mode: the SDK's in-process path at 2026-07-28."""
    from mcp import Client

    peer = load_peer("bench_peer_sdk", SDK_SERVER)
    async with Client(peer.build()) as client:
        yield sdk_connection(client)


@contextlib.asynccontextmanager
async def sdk_inprocess_streams() -> AsyncIterator[Connection]:
    """``mcp.Client(InMemoryTransport(server))`` in auto mode: JSON-RPC over memory streams."""
    from mcp import Client
    from mcp.client._memory import InMemoryTransport

    peer = load_peer("bench_peer_sdk", SDK_SERVER)
    async with Client(InMemoryTransport(peer.build())) as client:
        yield sdk_connection(client)


# --------------------------------------------------------------------------------------
# Timing: check, warm up, then round-robin batches; medians and paired ratios
# --------------------------------------------------------------------------------------

Opener = Callable[[], contextlib.AbstractAsyncContextManager[Connection]]


async def timed(connection: Connection, count: int) -> float:
    """Calls per second over one batch of ``count`` sequential, checked calls.

    Two event-loop passes end the timed span: ours in-process answers a call without ever
    yielding to the loop (the server's handler runs eagerly inside the client's send), so
    the last step of each request's task and the cancelled timeout timers would otherwise
    run after the clock stops. The passes count that deferred work; they cost the other
    paths nothing measurable."""
    gc.collect()
    start = time.perf_counter()
    await connection.batch(count)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    return count / (time.perf_counter() - start)


async def open_checked(name: str, opener: Opener, stack: contextlib.AsyncExitStack) -> Connection:
    """Open a pair and check it: 2026-07-28 negotiated through server/discover, replies echo."""
    connection = await stack.enter_async_context(opener())
    if connection.version != REVISION:
        raise fail(f"{name} negotiated {connection.version!r}, not {REVISION}")
    if REVISION not in connection.discovered:
        raise fail(f"{name}: server/discover did not list {REVISION} ({connection.discovered})")
    for text in (EXPECTED_TEXT, PROBE_TEXT, EXPECTED_TEXT):
        echoed = await connection.call(text)
        if echoed != text:
            raise fail(f"{name} echoed {echoed!r} for {text!r}")
    return connection


async def compare(
    openers: Mapping[str, Opener], count: int, settings: Settings, *, baseline: str
) -> dict[str, dict[str, Any]]:
    """Open every pair, check it, warm it up, then time batches round-robin (a rotating
    order per round, so drift in the machine's load spreads over all of them)."""
    async with contextlib.AsyncExitStack() as stack:
        connections: dict[str, Connection] = {}
        for name, opener in openers.items():
            connection = await open_checked(name, opener, stack)
            await connection.batch(settings.warmup_calls)
            connections[name] = connection
        names = list(connections)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for repeat in range(settings.repeats):
            shift = repeat % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(await timed(connections[name], count))
    results: dict[str, dict[str, Any]] = {}
    for name, values in samples.items():
        results[name] = {
            "samples_calls_s": values,
            "median_calls_s": median(values),
            "min_calls_s": min(values),
            "max_calls_s": max(values),
            "calls_per_batch": count,
            f"paired_ratio_to_{baseline}": paired(samples, name, baseline),
        }
    return results


def ratios(samples: Mapping[str, Sequence[float]], ours: str, sdk: str) -> list[float]:
    """ours/SDK within each round."""
    return [a / b for a, b in zip(samples[ours], samples[sdk], strict=True)]


def paired(samples: Mapping[str, Sequence[float]], ours: str, sdk: str) -> float:
    """Median over rounds of ours/SDK within the round (steadier than a ratio of medians)."""
    return median(ratios(samples, ours, sdk))


def section(paths: dict[str, dict[str, Any]], sdk_candidates: Sequence[str]) -> dict[str, Any]:
    """A measured section: the faster SDK candidate is the one compared (conservative)."""
    sdk = max(sdk_candidates, key=lambda name: float(paths[name]["median_calls_s"]))
    samples = {name: figures["samples_calls_s"] for name, figures in paths.items()}
    per_round = ratios(samples, "ours", sdk)
    return {
        "paths": paths,
        "ours": "ours",
        "sdk": sdk,
        "ratio_of_medians": paths["ours"]["median_calls_s"] / paths[sdk]["median_calls_s"],
        "paired_ratio": median(per_round),
        "per_round_ratios": per_round,
    }


# --------------------------------------------------------------------------------------
# The three sections
# --------------------------------------------------------------------------------------


async def bench_stdio(settings: Settings) -> dict[str, Any]:
    ours_cmd = server_command(OURS_SERVER, "stdio")
    sdk_cmd = server_command(SDK_SERVER, "stdio")
    openers: dict[str, Opener] = {
        "ours": lambda: ours_stdio(ours_cmd),
        "sdk": lambda: sdk_stdio(sdk_cmd),
        "ours_client_sdk_server": lambda: ours_stdio(sdk_cmd),
        "sdk_client_ours_server": lambda: sdk_stdio(ours_cmd),
    }
    paths = await compare(openers, settings.stdio_calls, settings, baseline="sdk")
    return section(paths, ["sdk"])


@contextlib.asynccontextmanager
async def http_server(command: list[str]) -> AsyncIterator[str]:
    """Start a peer under uvicorn (it picks a free port and prints it); stop it at the end."""
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, env=child_env()
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        if not line.startswith(b"PORT "):
            raise SystemExit(f"{command} did not start: {line!r}")
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except asyncio.TimeoutError:
                process.kill()
                await process.wait()


async def bench_http(settings: Settings) -> dict[str, Any]:
    async with (
        http_server(server_command(OURS_SERVER, "http")) as ours_url,
        http_server(server_command(SDK_SERVER, "http")) as sdk_sse_url,
        http_server(server_command(SDK_SERVER, "http", "--json-response")) as sdk_json_url,
    ):
        openers: dict[str, Opener] = {
            "ours": lambda: ours_http(ours_url),
            "sdk_sse": lambda: sdk_http(sdk_sse_url),
            "sdk_json": lambda: sdk_http(sdk_json_url),
            "ours_client_sdk_server": lambda: ours_http(sdk_sse_url),
            "sdk_client_ours_server": lambda: sdk_http(ours_url),
        }
        paths = await compare(openers, settings.http_calls, settings, baseline="sdk_sse")
    return section(paths, ["sdk_sse", "sdk_json"])


async def bench_inprocess(settings: Settings) -> dict[str, Any]:
    openers: dict[str, Opener] = {
        "ours": ours_inprocess,
        "ours_modern_handlers": lambda: ours_inprocess(OURS_MODERN_SERVER),
        "ours_memory": lambda: ours_inprocess(connector="connect_memory"),
        "sdk_direct": sdk_inprocess_direct,
        "sdk_streams": sdk_inprocess_streams,
    }
    paths = await compare(openers, settings.inprocess_calls, settings, baseline="sdk_direct")
    # like with like: no JSON-RPC on either side (ours_memory vs sdk_streams: info rows)
    return {**section(paths, ["sdk_direct"]), "ours_path": "mcp_codegen.runtime.memory.connect_direct"}


# --------------------------------------------------------------------------------------
# Profiling (--profile DIR): our client and our server, separately
# --------------------------------------------------------------------------------------

_PROFILED_SERVER = r"""
import cProfile, os, runpy, signal, sys
output, script, *args = sys.argv[1:]
sys.path.insert(0, os.path.dirname(script))
profiler = cProfile.Profile()
def stop(*_):
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, stop)
sys.argv = [script, *args]
profiler.enable()
try:
    runpy.run_path(script, run_name="__main__")
except (KeyboardInterrupt, SystemExit):
    pass
finally:
    profiler.disable()
    profiler.dump_stats(output)
"""


def profiled_server(output: Path, script: Path, *args: str) -> list[str]:
    return [sys.executable, "-c", _PROFILED_SERVER, str(output), str(script), *args]


def top_costs(path: Path, limit: int = 25) -> str:
    buffer = io.StringIO()
    stats = pstats.Stats(str(path), stream=buffer)
    stats.strip_dirs().sort_stats("tottime").print_stats(limit)
    stats.sort_stats("cumulative").print_stats(limit)
    return buffer.getvalue()


async def profile_ours(settings: Settings, directory: Path) -> dict[str, str]:
    """cProfile of n stateless calls: client in this process, server in its own (its dump also
    holds startup and idle waiting: read it by tottime), and both sides in-process."""
    directory.mkdir(parents=True, exist_ok=True)
    count = max(settings.stdio_calls, 2000)
    outputs: dict[str, str] = {}

    async def run_client(opener: Opener, name: str) -> None:
        async with contextlib.AsyncExitStack() as stack:
            connection = await open_checked(name, opener, stack)
            await connection.batch(settings.warmup_calls)
            profiler = cProfile.Profile()
            profiler.enable()
            await connection.batch(count)
            profiler.disable()
        path = directory / f"{name}.pstats"
        profiler.dump_stats(str(path))
        outputs[name] = str(path)

    server_stdio = directory / "ours_stdio_server.pstats"
    await run_client(
        lambda: ours_stdio(profiled_server(server_stdio, OURS_SERVER, "stdio")), "ours_stdio_client"
    )
    outputs["ours_stdio_server"] = str(server_stdio)
    server_http = directory / "ours_http_server.pstats"
    async with http_server(profiled_server(server_http, OURS_SERVER, "http")) as url:
        await run_client(lambda: ours_http(url), "ours_http_client")
    outputs["ours_http_server"] = str(server_http)
    await run_client(ours_inprocess, "ours_inprocess_both")
    return outputs


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def versions() -> dict[str, str]:
    found = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in (
        "pydantic",
        "pydantic-core",
        "mcp",
        "mcp-codegen",
        "uvicorn",
        "httptools",
        "anyio",
        "httpx2",
    ):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    found["cpus"] = str(os.cpu_count())
    return found


def load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            cell.ljust(width) if column == 0 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
        if index == 0:
            lines.append("  ".join("-" * width for width in widths))
    return "\n".join(lines)


THROUGHPUT = (
    ("stdio", "stdio tools/call, calls/s", TARGET_STDIO_SPEEDUP),
    ("http", "Streamable HTTP tools/call, calls/s", TARGET_HTTP_SPEEDUP),
    ("inprocess", "in-process tools/call, calls/s", TARGET_INPROCESS_SPEEDUP),
)

LABELS = {
    "sdk": "SDK Client(StdioServerParameters), auto",
    "sdk_sse": "SDK server, SSE mode (default)",
    "sdk_json": "SDK server, json_response=True",
    "sdk_direct": "SDK Client(server), auto: DirectDispatcher",
    "sdk_streams": "SDK Client(InMemoryTransport(server)), auto",
    "ours_client_sdk_server": "mixed: ours client -> SDK server",
    "sdk_client_ours_server": "mixed: SDK client -> ours server",
    "ours_modern_handlers": "ours, handlers typed with v2026_07_28",
    "ours_memory": "ours connect_memory (JSON-RPC bytes, two engines)",
}


def headlines(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The figures the targets are about: ours, SDK, ratio, paired ratio, target, met."""
    out: dict[str, dict[str, Any]] = {}
    for key, _label, target in THROUGHPUT:
        measured = report.get(key)
        if measured is None:
            continue
        paths = measured["paths"]
        ours = paths["ours"]["median_calls_s"]
        sdk = paths[measured["sdk"]]["median_calls_s"]
        out[f"{key}_calls_s"] = {
            "ours": ours,
            "sdk": sdk,
            "sdk_path": measured["sdk"],
            "ratio": ours / sdk,
            "paired_ratio": measured["paired_ratio"],
            "per_round_min": min(measured["per_round_ratios"]),
            "per_round_max": max(measured["per_round_ratios"]),
            "target": f"ours/SDK >= {target:g}",
            "met": ours / sdk >= target,
        }
    return out


def render(report: Mapping[str, Any]) -> str:
    heads = headlines(report)
    rows: list[tuple[str, ...]] = [
        ("measurement at 2026-07-28 (median)", "ours", "SDK mcp 2.3.0", "ratio", "target", "met")
    ]
    for key, label, target in THROUGHPUT:
        if f"{key}_calls_s" not in heads:
            continue
        head = heads[f"{key}_calls_s"]
        rows.append(
            (
                label,
                f"{head['ours']:,.0f}",
                f"{head['sdk']:,.0f}",
                f"{head['ratio']:.2f}x",
                f">= {target:g}x",
                "yes" if head["met"] else "NO",
            )
        )
        for name, figures in report[key]["paths"].items():
            if name == "ours":
                continue
            rate = figures["median_calls_s"]
            if name == "sdk" or (name.startswith("sdk_") and not name.startswith("sdk_client")):
                marker = "*" if name == head["sdk_path"] else " "
                rows.append(
                    (
                        f" {marker}{LABELS[name]}",
                        "",
                        f"{rate:,.0f}",
                        f"{head['ours'] / rate:.2f}x",
                        "",
                        "",
                    )
                )
            else:
                rows.append(
                    (
                        f"  {LABELS[name]} (info)",
                        f"{rate:,.0f}",
                        "",
                        f"{rate / head['sdk']:.2f}x",
                        "",
                        "",
                    )
                )
    env = report["environment"]
    header = (
        f"mcp-codegen runtime benchmark, stateless era: {PACKAGE} on mcp_codegen.runtime vs "
        f"{SDK_REQUIREMENT} in auto mode | python {env['python']}, pydantic {env['pydantic']}, "
        f"uvicorn {env['uvicorn']} + httptools {env['httptools']}, anyio {env['anyio']}, "
        f"httpx2 {env['httpx2']}, {env['cpus']} CPUs\nsettings: {report['settings']}"
    )
    notes = [
        "ratio = ours/SDK calls/s (higher is better); * = the SDK configuration compared (the "
        "faster one). Mixed rows: calls/s of that pair and its ratio to the compared SDK pair.",
        'each call: one sequential tools/call of \'echo\' {"text": "hello"} with the 2026-07-28 '
        "_meta, awaited and checked before the next; both clients negotiated 2026-07-28 by "
        "server/discover (auto mode), verified before timing.",
    ]
    if "inprocess" in report:
        notes.append(
            f"in-process: ours = {report['inprocess']['ours_path']} (no transport, no JSON-RPC; "
            "params and results validated on both sides) vs SDK Client(server) DirectDispatcher "
            "(no JSON-RPC either); info: ours connect_memory (JSON-RPC bytes between two engines) "
            "and SDK Client(InMemoryTransport(server)) (message objects through anyio streams)"
        )
    spreads = [
        f"{key} {found['paired_ratio']:.2f}x "
        f"({found['per_round_min']:.2f}-{found['per_round_max']:.2f})"
        for key, _label, _target in THROUGHPUT
        if (found := heads.get(f"{key}_calls_s")) is not None
    ]
    if spreads:
        notes.append("paired ratio, median (min-max) of per-round ours/SDK: " + ", ".join(spreads))
    start_load, end_load = report.get("load_average_start"), report.get("load_average_end")
    if start_load is not None and end_load is not None:
        busy = start_load > 0.5 * int(env["cpus"] or 1)
        notes.append(
            f"1-min load average at start/end: {start_load:.2f}/{end_load:.2f}"
            + ("  (other work was running before the start: expect noisy figures)" if busy else "")
        )
    return "\n".join([header, "", table(rows), "", *notes])


SECTIONS = ("stdio", "http", "inprocess")


async def measure(settings: Settings, sections: Sequence[str]) -> dict[str, Any]:
    benches = {"stdio": bench_stdio, "http": bench_http, "inprocess": bench_inprocess}
    report: dict[str, Any] = {}
    for name in SECTIONS:
        if name in sections:
            print(f"measuring {name} ...", file=sys.stderr)
            report[name] = await benches[name](settings)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--quick", action="store_true", help="fewer calls and samples: a CI smoke run (< 60 s)"
    )
    parser.add_argument(
        "--repeats", type=int, default=None, metavar="N", help="timed batches per pair"
    )
    parser.add_argument(
        "--json", type=Path, default=None, metavar="PATH", help="also write every figure to PATH"
    )
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        metavar="LIST",
        help=f"comma-separated sections to run (default: all of {','.join(SECTIONS)})",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="also profile our client and server (cProfile dumps in DIR) and print top costs",
    )
    args = parser.parse_args(argv)
    sections = [part.strip() for part in args.only.split(",") if part.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")

    settings = Settings.make(quick=args.quick, repeats=args.repeats)
    env = versions()
    if env["mcp"] == "not installed":
        sys.exit(f"the comparison needs the official SDK: pip install '{SDK_REQUIREMENT}'")
    if env["mcp"] != SDK_REQUIREMENT.split("==")[1]:
        print(
            f"warning: mcp {env['mcp']} installed; the paths described are {SDK_REQUIREMENT}'s",
            file=sys.stderr,
        )
    with contextlib.suppress(ImportError):
        from mcp.shared.exceptions import MCPDeprecationWarning

        warnings.simplefilter("ignore", MCPDeprecationWarning)

    started = time.perf_counter()
    report: dict[str, Any] = {
        "revision": REVISION,
        "sdk": SDK_REQUIREMENT,
        "environment": env,
        "settings": {
            "repeats": settings.repeats,
            "stdio_calls": settings.stdio_calls,
            "http_calls": settings.http_calls,
            "inprocess_calls": settings.inprocess_calls,
            "warmup_calls": settings.warmup_calls,
        },
        "load_average_start": load_average(),
    }
    report.update(asyncio.run(measure(settings, sections)))
    report["elapsed_s"] = time.perf_counter() - started
    report["load_average_end"] = load_average()
    report["headlines"] = headlines(report)
    print(render(report))
    print(f"\n(benchmark took {report['elapsed_s']:.0f} s)")
    if args.profile is not None:
        print("profiling ours ...", file=sys.stderr)
        outputs = asyncio.run(profile_ours(settings, args.profile))
        report["profiles"] = outputs
        for name, path in outputs.items():
            print(f"\n=== profile: {name} ({path}) ===")
            print(top_costs(Path(path)))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
