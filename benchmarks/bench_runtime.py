"""Benchmark mcp-codegen's runtime beside the official SDK's, end to end, in one run.

Run from the repository root::

    /tmp/venv/bin/python benchmarks/bench_runtime.py [--quick] [--repeats N] [--json PATH]

Every measurement uses the same tool, ``echo`` (one string argument, one text block back),
served by two equivalent minimal servers in ``benchmarks/peers/``: ``ours_server.py``
(a generated ``ServerHandlers`` subclass on ``mcp_codegen.runtime``) and ``sdk_server.py``
(the low-level ``mcp.server.lowlevel.Server`` of ``mcp==2.3.0``). It measures:

1. stdio: sequential ``tools/call`` round trips per second, each client spawning its server
   as a subprocess (ours: ``connect_stdio``; SDK: ``stdio_client`` + ``ClientSession``);
2. Streamable HTTP: the same against servers under uvicorn on 127.0.0.1 (ours: ``http_app``
   + ``connect_http``; SDK: ``Server.streamable_http_app()`` + ``streamable_http_client`` +
   ``ClientSession``), with the SDK server both in its default SSE-reply mode and with
   ``json_response=True``; the faster SDK configuration is the one compared;
3. in-process, no transport: client and server in this process (ours: ``ServerSession`` +
   ``Engine`` and ``ClientSession`` + ``Engine`` over a pair of asyncio queues carrying bytes;
   SDK: ``mcp.client._memory.InMemoryTransport``, anyio memory streams carrying message
   objects, + ``ClientSession``);
4. cold start: a fresh server process per sample, driven by a raw blocking pipe writer (the
   same bytes for both): spawn -> ``initialize`` answered -> ``notifications/initialized``
   written; plus, for information, the first ``tools/call`` and a whole fresh client process.

Mixed pairs (our client with the SDK server, the SDK client with ours) are shown for
information. ``--profile DIR`` also profiles our client and our server (cProfile, each side
separately) over stdio, HTTP and in-process, and prints their top costs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import importlib.util
import io
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
PEERS = Path(__file__).resolve().parent / "peers"
OURS_SERVER = PEERS / "ours_server.py"
SDK_SERVER = PEERS / "sdk_server.py"
PACKAGE = "mcp_generated.v2025_11_25"
REVISION = "2025-11-25"
SDK_REQUIREMENT = "mcp==2.3.0"

# Targets: ours/SDK calls per second (higher is better); ours/SDK seconds for cold start.
TARGET_STDIO_SPEEDUP = 5.0
TARGET_HTTP_SPEEDUP = 3.0
TARGET_INPROCESS_SPEEDUP = 5.0
TARGET_COLD_RATIO = 1 / 3

ARGUMENTS: dict[str, Any] = {"text": "hello"}
EXPECTED_TEXT = "hello"


@dataclass(frozen=True)
class Settings:
    """How many calls and samples each measurement takes."""

    repeats: int
    stdio_calls: int
    http_calls: int
    inprocess_calls: int
    cold_runs: int
    warmup_calls: int

    @classmethod
    def make(cls, *, quick: bool, repeats: int | None) -> Settings:
        if quick:
            base = cls(
                repeats=3,
                stdio_calls=300,
                http_calls=150,
                inprocess_calls=500,
                cold_runs=5,
                warmup_calls=100,
            )
        else:
            base = cls(
                repeats=7,
                stdio_calls=2000,
                http_calls=600,
                inprocess_calls=3000,
                cold_runs=11,
                warmup_calls=300,
            )
        if repeats is None:
            return base
        n = max(1, repeats)
        return replace(base, repeats=n, cold_runs=max(n, 3))


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def server_command(script: Path, *args: str) -> list[str]:
    return [sys.executable, str(script), *args]


def child_env() -> dict[str, str]:
    """The same environment for every server and client process: this one's, except that
    bytecode caching is on (``PYTHONDONTWRITEBYTECODE`` would make every cold start compile
    whichever modules lack a current ``.pyc``; the untimed first spawns write them)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def load_peer(name: str, path: Path) -> ModuleType:
    """Import a peer script by path (the in-process rows reuse the servers' handlers)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------------------
# Connections: one client connected to one server, able to run a batch of calls
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Connection:
    """An open client: ``call_once`` returns the echoed text; ``batch(n)`` makes n calls."""

    call_once: Callable[[], Awaitable[str]]
    batch: Callable[[int], Awaitable[None]]


def text_of(result: Any) -> str:
    """The text of a one-block tool result, ours or the SDK's."""
    block = result.content[0]
    if getattr(block, "type", None) != "text":
        raise SystemExit(f"benchmark self-check failed: not a text block: {result!r}")
    text: str = block.text
    return text


def ours_connection(client: Any) -> Connection:
    """Our generated ``Client``: ``await client.call_tool(name=..., arguments=...)``."""

    async def call_once() -> str:
        return text_of(await client.call_tool(name="echo", arguments=ARGUMENTS))

    async def batch(count: int) -> None:
        call_tool = client.call_tool
        for _ in range(count):
            await call_tool(name="echo", arguments=ARGUMENTS)

    return Connection(call_once, batch)


def sdk_connection(session: Any) -> Connection:
    """The SDK's ``ClientSession``: ``await session.call_tool(name, arguments)``."""

    async def call_once() -> str:
        return text_of(await session.call_tool("echo", ARGUMENTS))

    async def batch(count: int) -> None:
        call_tool = session.call_tool
        for _ in range(count):
            await call_tool("echo", ARGUMENTS)

    return Connection(call_once, batch)


def ours_protocol() -> ModuleType:
    return importlib.import_module(PACKAGE)


@contextlib.asynccontextmanager
async def ours_stdio(command: list[str]) -> AsyncIterator[Connection]:
    from mcp_codegen.runtime.client import connect_stdio

    async with connect_stdio(command, protocol=ours_protocol(), env=child_env()) as client:
        yield ours_connection(client)


@contextlib.asynccontextmanager
async def sdk_stdio(command: list[str]) -> AsyncIterator[Connection]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    parameters = StdioServerParameters(command=command[0], args=command[1:], env=child_env())
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield sdk_connection(session)


@contextlib.asynccontextmanager
async def ours_http(url: str) -> AsyncIterator[Connection]:
    from mcp_codegen.runtime.client import connect_http

    async with connect_http(url, protocol=ours_protocol()) as client:
        yield ours_connection(client)


@contextlib.asynccontextmanager
async def sdk_http(url: str) -> AsyncIterator[Connection]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield sdk_connection(session)


class QueueTransport:
    """One end of an in-memory transport pair for our engine: bytes through asyncio queues.

    Only used when the runtime has no ``mcp_codegen.runtime.memory`` module of its own.
    """

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]):
        self.inbox = inbox
        self.outbox = outbox

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, data: bytes) -> None:
        self.outbox.put_nowait(data)


def ours_memory_connector() -> tuple[str, Any]:
    """The runtime's own in-process connector (``memory.connect_memory``) if it has one."""
    try:
        memory = importlib.import_module("mcp_codegen.runtime.memory")
    except ImportError:
        return "benchmark QueueTransport pair + server.serve + client.connect", None
    return "mcp_codegen.runtime.memory.connect_memory", memory.connect_memory


@contextlib.asynccontextmanager
async def ours_inprocess() -> AsyncIterator[Connection]:
    """Our ``ServerSession`` + ``Engine`` and our ``ClientSession`` + ``Engine`` in this
    process, joined by an in-memory pipe of framed bytes (the runtime's ``connect_memory``,
    else two asyncio queues): the whole per-call path of both sides (JSON encode/decode,
    envelope checks, params and result validation, tool-argument validation, handler
    dispatch, a task per request, started eagerly) minus only the OS transport."""
    peer = load_peer("bench_peer_ours", OURS_SERVER)
    server_info = {"name": peer.NAME, "version": peer.VERSION}
    _label, connect_memory = ours_memory_connector()
    if connect_memory is not None:
        async with connect_memory(
            peer.Echo(), protocol=ours_protocol(), server_options={"server_info": server_info}
        ) as client:
            yield ours_connection(client)
        return

    from mcp_codegen.runtime.client import ClientSession, connect
    from mcp_codegen.runtime.server import serve

    to_server: asyncio.Queue[bytes | None] = asyncio.Queue()
    to_client: asyncio.Queue[bytes | None] = asyncio.Queue()
    server = asyncio.create_task(
        serve(peer.Echo(), QueueTransport(to_server, to_client), server_info=server_info)
    )
    session = ClientSession([ours_protocol()])
    try:
        async with connect(QueueTransport(to_client, to_server), session) as client:
            yield ours_connection(client)
    finally:
        to_server.put_nowait(None)
        try:
            await asyncio.wait_for(server, 5)
        except asyncio.TimeoutError:
            server.cancel()


@contextlib.asynccontextmanager
async def ours_direct() -> AsyncIterator[Connection]:
    """Information only: ``memory.connect_direct``, our in-process path without a transport
    or JSON-RPC (a request is a call of the server's dispatcher), pinned to this revision."""
    from mcp_codegen.runtime.memory import connect_direct

    peer = load_peer("bench_peer_ours_direct", OURS_SERVER)
    server_info = {"name": peer.NAME, "version": peer.VERSION}
    async with connect_direct(
        peer.Echo(), protocol=ours_protocol(), server_options={"server_info": server_info}
    ) as client:
        yield ours_connection(client)


@contextlib.asynccontextmanager
async def sdk_inprocess() -> AsyncIterator[Connection]:
    """The SDK's own in-memory transport (``InMemoryTransport``, what ``mcp.Client(server,
    mode="legacy")`` uses): the low-level server's ``Server.run`` loop and a ``ClientSession``
    joined by anyio memory object streams that carry ``SessionMessage`` objects (typed
    JSON-RPC messages, never serialised to bytes)."""
    from mcp.client._memory import InMemoryTransport
    from mcp.client.session import ClientSession

    peer = load_peer("bench_peer_sdk", SDK_SERVER)
    async with (
        InMemoryTransport(peer.build()) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield sdk_connection(session)


@contextlib.asynccontextmanager
async def sdk_direct() -> AsyncIterator[Connection]:
    """Information only: ``mcp.Client(server)`` in its default mode, which for an in-process
    server skips JSON-RPC altogether (a ``DirectDispatcher`` pair, protocol 2026-07-28)."""
    from mcp.client.client import Client

    peer = load_peer("bench_peer_sdk_direct", SDK_SERVER)
    async with Client(peer.build(), cache=None) as client:
        yield sdk_connection(client)


# --------------------------------------------------------------------------------------
# Timing: warm up, check, then round-robin batches; medians and paired ratios
# --------------------------------------------------------------------------------------

Opener = Callable[[], contextlib.AbstractAsyncContextManager[Connection]]


async def timed(connection: Connection, count: int) -> float:
    """Calls per second over one batch of ``count`` sequential calls.

    The clock stops after one more event-loop pass, so work the calls left scheduled (the
    empty last steps of requests that were served eagerly in-process, say) is counted too.
    """
    gc.collect()
    start = time.perf_counter()
    await connection.batch(count)
    await asyncio.sleep(0)
    return count / (time.perf_counter() - start)


async def compare(
    openers: Mapping[str, Opener],
    count: int,
    settings: Settings,
    *,
    baseline: str,
) -> dict[str, dict[str, Any]]:
    """Open every pair, check its answer, warm it up, then time batches round-robin.

    Connections stay open during the whole comparison (idle ones cost nothing but memory);
    each round times every pair once, in a rotating order, so drift in the machine's load
    spreads over all of them.
    """
    async with contextlib.AsyncExitStack() as stack:
        connections: dict[str, Connection] = {}
        setup_s: dict[str, float] = {}
        for name, opener in openers.items():
            start = time.perf_counter()
            connection = await stack.enter_async_context(opener())
            setup_s[name] = time.perf_counter() - start
            echoed = await connection.call_once()
            if echoed != EXPECTED_TEXT:
                raise SystemExit(f"benchmark self-check failed: {name} echoed {echoed!r}")
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
        paired = [value / base for value, base in zip(values, samples[baseline], strict=True)]
        results[name] = {
            "samples_calls_s": values,
            "median_calls_s": median(values),
            "calls_per_batch": count,
            "connect_s": setup_s[name],
            f"paired_ratio_to_{baseline}": median(paired),
        }
    return results


def paired(results: Mapping[str, Mapping[str, Any]], ours: str, sdk: str) -> float:
    """Median over rounds of ours/SDK within the round."""
    pairs = zip(results[ours]["samples_calls_s"], results[sdk]["samples_calls_s"], strict=True)
    return median([a / b for a, b in pairs])


# --------------------------------------------------------------------------------------
# 1. stdio
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
    return {"paths": paths, "ours": "ours", "sdk": "sdk"}


# --------------------------------------------------------------------------------------
# 2. Streamable HTTP
# --------------------------------------------------------------------------------------


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
            "ours_client_sdk_json_server": lambda: ours_http(sdk_json_url),
            "sdk_client_ours_server": lambda: sdk_http(ours_url),
        }
        paths = await compare(openers, settings.http_calls, settings, baseline="sdk_sse")
    # Conservative: the faster of the SDK's two server configurations is the one compared.
    sdk = max(("sdk_sse", "sdk_json"), key=lambda name: paths[name]["median_calls_s"])
    return {"paths": paths, "ours": "ours", "sdk": sdk}


# --------------------------------------------------------------------------------------
# 3. In-process
# --------------------------------------------------------------------------------------


async def bench_inprocess(settings: Settings) -> dict[str, Any]:
    openers: dict[str, Opener] = {
        "ours": ours_inprocess,
        "sdk": sdk_inprocess,
        "sdk_direct_dispatcher": sdk_direct,
        "ours_direct": ours_direct,
    }
    paths = await compare(openers, settings.inprocess_calls, settings, baseline="sdk")
    return {"paths": paths, "ours": "ours", "sdk": "sdk", "ours_path": ours_memory_connector()[0]}


# --------------------------------------------------------------------------------------
# 4. Cold start
# --------------------------------------------------------------------------------------

INITIALIZE_LINE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": REVISION,
                "capabilities": {},
                "clientInfo": {"name": "bench-runtime", "version": "1.0.0"},
            },
        },
        separators=(",", ":"),
    ).encode()
    + b"\n"
)
INITIALIZED_LINE = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
CALL_LINE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": ARGUMENTS},
        },
        separators=(",", ":"),
    ).encode()
    + b"\n"
)


def cold_once(script: Path) -> dict[str, float]:
    """Spawn a stdio server; seconds from spawn to: initialize answered, initialized written,
    first tools/call answered. A raw blocking pipe driver, the same bytes for both servers."""
    start = time.perf_counter()
    process = subprocess.Popen(
        server_command(script, "stdio"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=child_env(),
        bufsize=0,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(INITIALIZE_LINE)
        answer = process.stdout.readline()
        initialize_s = time.perf_counter() - start
        process.stdin.write(INITIALIZED_LINE)
        ready_s = time.perf_counter() - start
        process.stdin.write(CALL_LINE)
        called = process.stdout.readline()
        first_call_s = time.perf_counter() - start
    finally:
        process.stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()
    if b'"protocolVersion":"2025-11-25"' not in answer or EXPECTED_TEXT.encode() not in called:
        raise SystemExit(f"cold start self-check failed for {script.name}: {answer!r} {called!r}")
    return {"initialize_s": initialize_s, "ready_s": ready_s, "first_call_s": first_call_s}


_CLIENT_PROCESS = {
    "ours": r"""
import time
_t0 = time.perf_counter()
import asyncio, os, sys
import mcp_generated.v2025_11_25 as protocol
from mcp_codegen.runtime.client import connect_stdio

async def main():
    async with connect_stdio([sys.executable, sys.argv[1], "stdio"], protocol=protocol,
                             env=dict(os.environ)) as client:
        result = await client.call_tool(name="echo", arguments={"text": "hello"})
        print(repr(time.perf_counter() - _t0), result.content[0].text, flush=True)

asyncio.run(main())
""",
    "sdk": r"""
import time
_t0 = time.perf_counter()
import os, sys, warnings
import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPDeprecationWarning
warnings.simplefilter("ignore", MCPDeprecationWarning)

async def main():
    parameters = StdioServerParameters(command=sys.executable, args=[sys.argv[1], "stdio"],
                                       env=dict(os.environ))
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("echo", {"text": "hello"})
        print(repr(time.perf_counter() - _t0), result.content[0].text, flush=True)

anyio.run(main)
""",
}


def client_process_once(side: str) -> float:
    """A fresh client process: its imports + spawning its server + initialize + one call,
    timed inside the child from before its first import to the first result."""
    script = OURS_SERVER if side == "ours" else SDK_SERVER
    proc = subprocess.run(
        [sys.executable, "-c", _CLIENT_PROCESS[side], str(script)],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
        timeout=120,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].endswith(f" {EXPECTED_TEXT}"):
        raise SystemExit(f"client process ({side}) failed:\n{proc.stdout}\n{proc.stderr}")
    return float(lines[-1].split()[0])


def bench_cold(settings: Settings) -> dict[str, Any]:
    """Fresh processes, ours and the SDK's alternating (first one of each untimed: .pyc)."""
    sides = {"ours": OURS_SERVER, "sdk": SDK_SERVER}
    for script in sides.values():
        cold_once(script)
    server: dict[str, dict[str, list[float]]] = {
        side: {"initialize_s": [], "ready_s": [], "first_call_s": []} for side in sides
    }
    client: dict[str, list[float]] = {side: [] for side in sides}
    for run in range(settings.cold_runs):
        order = list(sides) if run % 2 == 0 else list(reversed(sides))
        for side in order:
            for key, value in cold_once(sides[side]).items():
                server[side][key].append(value)
    for side in sides:
        client_process_once(side)
    for run in range(settings.cold_runs):
        order = list(sides) if run % 2 == 0 else list(reversed(sides))
        for side in order:
            client[side].append(client_process_once(side))
    result: dict[str, Any] = {}
    for side in sides:
        result[side] = {
            key: {"samples_s": values, "median_s": median(values)}
            for key, values in server[side].items()
        }
        result[side]["client_process_s"] = {
            "samples_s": client[side],
            "median_s": median(client[side]),
        }
    return result


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
    """The top entries by own time, and by cumulative time, of a cProfile dump."""
    buffer = io.StringIO()
    stats = pstats.Stats(str(path), stream=buffer)
    stats.strip_dirs().sort_stats("tottime").print_stats(limit)
    stats.sort_stats("cumulative").print_stats(limit)
    return buffer.getvalue()


async def profile_ours(settings: Settings, directory: Path) -> dict[str, str]:
    """Profile n calls of ours over stdio, HTTP and in-process; client and server apart.

    stdio and HTTP: the client is profiled in this process around the timed batch; the server
    runs under cProfile in its own process (dumped when it exits), so its profile also holds
    startup and idle waiting: read it by ``tottime`` and by the handler path. In-process:
    one profile holding both sides.
    """
    directory.mkdir(parents=True, exist_ok=True)
    count = max(settings.stdio_calls, 2000)
    outputs: dict[str, str] = {}

    async def run_client(connection: Connection, name: str) -> None:
        await connection.batch(settings.warmup_calls)
        profiler = cProfile.Profile()
        profiler.enable()
        await connection.batch(count)
        profiler.disable()
        path = directory / f"{name}.pstats"
        profiler.dump_stats(str(path))
        outputs[name] = str(path)

    server_stdio = directory / "ours_stdio_server.pstats"
    async with ours_stdio(profiled_server(server_stdio, OURS_SERVER, "stdio")) as connection:
        await run_client(connection, "ours_stdio_client")
    outputs["ours_stdio_server"] = str(server_stdio)

    server_http = directory / "ours_http_server.pstats"
    async with (
        http_server(profiled_server(server_http, OURS_SERVER, "http")) as url,
        ours_http(url) as connection,
    ):
        await run_client(connection, "ours_http_client")
    outputs["ours_http_server"] = str(server_http)

    async with ours_inprocess() as connection:
        await run_client(connection, "ours_inprocess_both")
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
        "starlette",
    ):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    found["cpus"] = str(os.cpu_count())
    return found


def load_average() -> float | None:
    """The 1-minute load average, where the platform has one (other work skews the figures)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def verdict(ok: bool) -> str:
    return "yes" if ok else "NO"


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


def headlines(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The figures the targets are about: ours, SDK, ratio, paired ratio, target, met."""
    out: dict[str, dict[str, Any]] = {}
    for key, _label, target in THROUGHPUT:
        section = report.get(key)
        if section is None:
            continue
        paths = section["paths"]
        ours = paths[section["ours"]]["median_calls_s"]
        sdk = paths[section["sdk"]]["median_calls_s"]
        out[f"{key}_calls_s"] = {
            "ours": ours,
            "sdk": sdk,
            "sdk_path": section["sdk"],
            "ratio": ours / sdk,
            "paired_ratio": paired(paths, section["ours"], section["sdk"]),
            "target": f"ours/SDK >= {target:g}",
            "met": ours / sdk >= target,
        }
    cold = report.get("cold")
    if cold is not None:
        ours = cold["ours"]["ready_s"]["median_s"]
        sdk = cold["sdk"]["ready_s"]["median_s"]
        out["cold_start_s"] = {
            "ours": ours,
            "sdk": sdk,
            "ratio": ours / sdk,
            "target": "ours/SDK <= 1/3",
            "met": ours / sdk <= TARGET_COLD_RATIO,
        }
    return out


LABELS = {
    "ours_client_sdk_server": "mixed: ours client -> SDK server",
    "ours_client_sdk_json_server": "mixed: ours client -> SDK server (JSON replies)",
    "sdk_client_ours_server": "mixed: SDK client -> ours server",
    "sdk_sse": "SDK server, SSE replies (default)",
    "sdk_json": "SDK server, JSON replies (json_response=True)",
    "sdk_direct_dispatcher": "SDK Client(server), direct dispatcher, 2026-07-28",
    "ours_direct": "ours connect_direct (no transport, no JSON-RPC)",
}


def render(report: Mapping[str, Any]) -> str:
    """The printed table: headline rows (with target and verdict), detail rows indented."""
    heads = headlines(report)
    rows: list[tuple[str, ...]] = [
        ("measurement (median)", "ours", "SDK mcp 2.3.0", "ratio", "target", "met")
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
                verdict(head["met"]),
            )
        )
        paths = report[key]["paths"]
        for name, figures in paths.items():
            if name in ("ours", "sdk"):
                continue
            rate = figures["median_calls_s"]
            marker = "*" if name == head["sdk_path"] else " "
            if name.startswith("sdk_") and not name.startswith("sdk_client"):
                # Another SDK configuration: in the SDK column, ratio = ours / it.
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
                # A mixed pair: in the ours column, ratio = it / the SDK pair (info).
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
    cold = report.get("cold")
    if cold is not None:

        def ms(seconds: float) -> str:
            return f"{seconds * 1e3:.0f} ms"

        head = heads["cold_start_s"]
        rows.append(
            (
                "cold start, spawn -> initialized (stdio)",
                ms(head["ours"]),
                ms(head["sdk"]),
                f"{head['ratio']:.2f}x",
                "<= 0.33x",
                verdict(head["met"]),
            )
        )
        for key, label in (
            ("initialize_s", "  spawn -> initialize result"),
            ("first_call_s", "  spawn -> first tools/call result (info)"),
            ("client_process_s", "  client process: imports+spawn+init+call (info)"),
        ):
            ours, sdk = cold["ours"][key]["median_s"], cold["sdk"][key]["median_s"]
            rows.append((label, ms(ours), ms(sdk), f"{ours / sdk:.2f}x", "", ""))

    env = report["environment"]
    header = (
        f"mcp-codegen runtime benchmark: {PACKAGE} on mcp_codegen.runtime vs {SDK_REQUIREMENT} "
        f"| python {env['python']}, pydantic {env['pydantic']} (core {env['pydantic-core']}), "
        f"uvicorn {env['uvicorn']} + httptools {env['httptools']}, anyio {env['anyio']}, "
        f"httpx2 {env['httpx2']}, {env['cpus']} CPUs\nsettings: {report['settings']}"
    )
    notes = [
        "ratio: throughput = ours/SDK calls/s (higher is better); cold start = ours/SDK "
        "seconds (lower is better). Mixed rows: calls/s of that pair and its ratio to the "
        "SDK pair. * = the SDK configuration compared (the faster of the two).",
        'each call: one sequential tools/call of \'echo\' {"text": "hello"} -> one text '
        "block, awaited before the next; connections opened, checked and warmed up first.",
    ]
    if "inprocess" in report:
        notes.append(
            f"in-process: ours = {report['inprocess']['ours_path']} (JSON bytes handed "
            "straight to the other engine, both engines and sessions); SDK = InMemoryTransport + ClientSession "
            "(SessionMessage objects through anyio memory streams, no serialisation)"
        )
    notes.append(
        "per call, our server also validates the tool arguments against the inputSchema "
        "(a plain-Python check for simple schemas, else jsonschema; the SDK's low-level "
        "server does not in the handshake era)"
    )
    paired_notes = [
        f"{key} {heads[f'{key}_calls_s']['paired_ratio']:.2f}x"
        for key, _label, _target in THROUGHPUT
        if f"{key}_calls_s" in heads
    ]
    if paired_notes:
        notes.append("paired ratio (median of per-round ours/SDK): " + ", ".join(paired_notes))
    start_load, end_load = report.get("load_average_start"), report.get("load_average_end")
    if start_load is not None and end_load is not None:
        busy = start_load > 0.5 * int(env["cpus"] or 1)
        notes.append(
            f"1-min load average at start/end: {start_load:.2f}/{end_load:.2f}"
            + ("  (other work was running before the start: expect noisy figures)" if busy else "")
        )
    return "\n".join([header, "", table(rows), "", *notes])


async def measure(settings: Settings, sections: Sequence[str]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    if "stdio" in sections:
        print("measuring stdio ...", file=sys.stderr)
        report["stdio"] = await bench_stdio(settings)
    if "http" in sections:
        print("measuring Streamable HTTP ...", file=sys.stderr)
        report["http"] = await bench_http(settings)
    if "inprocess" in sections:
        print("measuring in-process ...", file=sys.stderr)
        report["inprocess"] = await bench_inprocess(settings)
    return report


SECTIONS = ("stdio", "http", "inprocess", "cold")


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
            f"warning: mcp {env['mcp']} installed; the SDK paths here are those of "
            f"{SDK_REQUIREMENT}",
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
            "cold_runs": settings.cold_runs,
            "warmup_calls": settings.warmup_calls,
        },
        "load_average_start": load_average(),
    }
    report.update(asyncio.run(measure(settings, sections)))
    if "cold" in sections:
        print("measuring cold start ...", file=sys.stderr)
        report["cold"] = bench_cold(settings)
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
