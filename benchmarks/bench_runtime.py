"""Benchmark mcp-codegen's runtime beside the official SDK's, end to end, in one run.

Run from the repository root::

    /tmp/venv/bin/python benchmarks/bench_runtime.py [--quick] [--repeats N] [--json PATH]

Every measurement uses the same tool, ``echo`` (one string argument, one text block back),
served by two equivalent minimal servers in ``benchmarks/peers/``: ``ours_server.py``
(a generated ``ServerHandlers`` subclass on ``typedmcp``) and ``sdk_server.py``
(the low-level ``mcp.server.lowlevel.Server`` of ``mcp==2.3.0``). It measures:

1. stdio: sequential ``tools/call`` round trips per second, each client spawning its server
   as a subprocess (ours: ``connect_stdio``; SDK: ``stdio_client`` + ``ClientSession``);
2. Streamable HTTP: the same against servers under uvicorn on 127.0.0.1 (ours: ``http_app``
   + ``connect_http``; SDK: ``Server.streamable_http_app()`` + ``streamable_http_client`` +
   ``ClientSession``), with the SDK server both in its default SSE-reply mode and with
   ``json_response=True``; the faster SDK configuration is the one compared. Then the same
   over TLS, both sides (a test CA made for the run: the servers under uvicorn with its
   certificate, both clients trusting it: ``verify=`` for ours, an ``httpx2.AsyncClient``
   with that trust for the SDK's);
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

import asyncio
import contextlib
import importlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy (explicit_package_bases) knows this file as benchmarks.bench_runtime
    from benchmarks import _common as common
else:  # run as a script, benchmarks/ is sys.path[0]
    import _common as common

PACKAGE = "mcp_generated.v2025_11_25"
REVISION = "2025-11-25"

# Target for cold start: ours/SDK seconds (lower is better); throughput: common.THROUGHPUT.
TARGET_COLD_RATIO = 1 / 3


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


# --------------------------------------------------------------------------------------
# Connections: one client connected to one server, able to run a batch of unchecked calls
# --------------------------------------------------------------------------------------


def ours_protocol() -> ModuleType:
    return importlib.import_module(PACKAGE)


@contextlib.asynccontextmanager
async def ours_stdio(command: list[str]) -> AsyncIterator[common.Connection]:
    from typedmcp.connecting import connect_stdio

    async with connect_stdio(command, protocol=ours_protocol(), env=common.child_env()) as client:
        yield common.ours_connection(client, checked=False)


@contextlib.asynccontextmanager
async def sdk_stdio(command: list[str]) -> AsyncIterator[common.Connection]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    parameters = StdioServerParameters(command=command[0], args=command[1:], env=common.child_env())
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield common.sdk_connection(session, checked=False)


@contextlib.asynccontextmanager
async def ours_http(url: str, tls: common.Tls | None = None) -> AsyncIterator[common.Connection]:
    from typedmcp.connecting import connect_http

    trust = tls.ca if tls is not None else True
    async with connect_http(url, protocol=ours_protocol(), verify=trust) as client:
        yield common.ours_connection(client, checked=False)


@contextlib.asynccontextmanager
async def sdk_http(url: str, tls: common.Tls | None = None) -> AsyncIterator[common.Connection]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with contextlib.AsyncExitStack() as stack:
        http_client = None
        if tls is not None:
            http_client = await stack.enter_async_context(common.sdk_http_client(tls))
        read, write = await stack.enter_async_context(
            streamable_http_client(url, http_client=http_client)
        )
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield common.sdk_connection(session, checked=False)


@contextlib.asynccontextmanager
async def ours_inprocess() -> AsyncIterator[common.Connection]:
    """Our ``ServerSession`` + ``Engine`` and our ``ClientSession`` + ``Engine`` in this
    process, joined by the runtime's ``connect_memory`` (framed bytes handed straight
    to the other engine): the whole per-call path of both sides (JSON encode/decode, envelope
    checks, params and result validation, tool-argument validation, handler dispatch, a task
    per request, started eagerly) minus only the OS transport."""
    async with common.ours_in_memory("connect_memory", ours_protocol()) as client:
        yield common.ours_connection(client, checked=False)


@contextlib.asynccontextmanager
async def ours_direct() -> AsyncIterator[common.Connection]:
    """Information only: ``connect_direct``, our in-process path without a transport
    or JSON-RPC (a request is a call of the server's dispatcher), pinned to this revision."""
    async with common.ours_in_memory("connect_direct", ours_protocol()) as client:
        yield common.ours_connection(client, checked=False)


@contextlib.asynccontextmanager
async def sdk_inprocess() -> AsyncIterator[common.Connection]:
    """The SDK's own in-memory transport (``InMemoryTransport``, what ``mcp.Client(server,
    mode="legacy")`` uses): the low-level server's ``Server.run`` loop and a ``ClientSession``
    joined by anyio memory object streams that carry ``SessionMessage`` objects (typed
    JSON-RPC messages, never serialised to bytes)."""
    from mcp.client._memory import InMemoryTransport
    from mcp.client.session import ClientSession

    async with (
        InMemoryTransport(common.load_peer(common.SDK_SERVER).build()) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield common.sdk_connection(session, checked=False)


@contextlib.asynccontextmanager
async def sdk_direct() -> AsyncIterator[common.Connection]:
    """Information only: ``mcp.Client(server)`` in its default mode, which for an in-process
    server skips JSON-RPC altogether (a ``DirectDispatcher`` pair, protocol 2026-07-28)."""
    from mcp.client.client import Client

    async with Client(common.load_peer(common.SDK_SERVER).build(), cache=None) as client:
        yield common.sdk_connection(client, checked=False)


# --------------------------------------------------------------------------------------
# Timing: warm up, check, then round-robin batches; medians and paired ratios
# --------------------------------------------------------------------------------------


async def compare(
    openers: Mapping[str, common.Opener],
    count: int,
    settings: Settings,
    *,
    baseline: str,
) -> dict[str, dict[str, Any]]:
    """Open every pair, check its answer, warm it up, then time batches round-robin.

    The clock of each batch stops after one more event-loop pass, so work the calls left
    scheduled (the empty last steps of requests that were served eagerly in-process, say)
    is counted too.
    """
    setup_s: dict[str, float] = {}

    async def open_pair(
        name: str, opener: common.Opener, stack: contextlib.AsyncExitStack
    ) -> common.Connection:
        start = time.perf_counter()
        connection = await stack.enter_async_context(opener())
        setup_s[name] = time.perf_counter() - start
        echoed = await connection.call(common.EXPECTED_TEXT)
        if echoed != common.EXPECTED_TEXT:
            raise common.fail(f"{name} echoed {echoed!r}")
        return connection

    batches: dict[str, list[common.Batch]] = {}
    samples = await common.round_robin(
        openers,
        count,
        repeats=settings.repeats,
        warmup_calls=settings.warmup_calls,
        open_pair=open_pair,
        loop_passes=1,
        cpu=batches,
    )
    return {
        name: {
            "samples_calls_s": values,
            "median_calls_s": common.median(values),
            "calls_per_batch": count,
            "connect_s": setup_s[name],
            f"paired_ratio_to_{baseline}": common.paired(values, samples[baseline]),
            **common.cpu_figures(batches[name]),
        }
        for name, values in samples.items()
    }


# --------------------------------------------------------------------------------------
# 1. stdio
# --------------------------------------------------------------------------------------


async def bench_stdio(settings: Settings) -> dict[str, Any]:
    ours_cmd = common.server_command(common.OURS_SERVER, "stdio")
    sdk_cmd = common.server_command(common.SDK_SERVER, "stdio")
    openers: dict[str, common.Opener] = {
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


async def bench_http(settings: Settings, tls: common.Tls | None = None) -> dict[str, Any]:
    """Plain HTTP, or with ``tls`` both sides over TLS (no mixed pairs then)."""
    extra = tls.server_args if tls is not None else []
    async with (
        common.http_server(common.server_command(common.OURS_SERVER, "http", *extra)) as ours_url,
        common.http_server(common.server_command(common.SDK_SERVER, "http", *extra)) as sdk_sse_url,
        common.http_server(
            common.server_command(common.SDK_SERVER, "http", "--json-response", *extra)
        ) as sdk_json_url,
    ):
        openers: dict[str, common.Opener] = {
            "ours": lambda: ours_http(ours_url, tls),
            "sdk_sse": lambda: sdk_http(sdk_sse_url, tls),
            "sdk_json": lambda: sdk_http(sdk_json_url, tls),
        }
        if tls is None:
            openers.update(
                {
                    "ours_client_sdk_server": lambda: ours_http(sdk_sse_url),
                    "ours_client_sdk_json_server": lambda: ours_http(sdk_json_url),
                    "sdk_client_ours_server": lambda: sdk_http(ours_url),
                }
            )
        paths = await compare(openers, settings.http_calls, settings, baseline="sdk_sse")
    # Conservative: the faster of the SDK's two server configurations is the one compared.
    sdk = max(("sdk_sse", "sdk_json"), key=lambda name: paths[name]["median_calls_s"])
    return {"paths": paths, "ours": "ours", "sdk": sdk}


# --------------------------------------------------------------------------------------
# 3. In-process
# --------------------------------------------------------------------------------------


async def bench_inprocess(settings: Settings) -> dict[str, Any]:
    openers: dict[str, common.Opener] = {
        "ours": ours_inprocess,
        "sdk_memory": sdk_inprocess,
        "sdk_direct_dispatcher": sdk_direct,
        "ours_direct": ours_direct,
    }
    paths = await compare(openers, settings.inprocess_calls, settings, baseline="sdk_memory")
    # The SDK's fastest in-process path is the one compared, as with its two HTTP modes:
    # mcp.Client(server) (a DirectDispatcher, no JSON-RPC) or InMemoryTransport.
    sdk = max(("sdk_memory", "sdk_direct_dispatcher"), key=lambda name: paths[name]["median_calls_s"])
    return {
        "paths": paths,
        "ours": "ours",
        "sdk": sdk,
        "ours_path": "typedmcp.connecting.connect_memory",
    }


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
            "params": {"name": "echo", "arguments": common.ARGUMENTS},
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
        common.server_command(script, "stdio"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=common.child_env(),
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
    if (
        b'"protocolVersion":"2025-11-25"' not in answer
        or common.EXPECTED_TEXT.encode() not in called
    ):
        raise SystemExit(f"cold start self-check failed for {script.name}: {answer!r} {called!r}")
    return {"initialize_s": initialize_s, "ready_s": ready_s, "first_call_s": first_call_s}


_CLIENT_PROCESS = {
    "ours": r"""
import time
_t0 = time.perf_counter()
import asyncio, os, sys
import mcp_generated.v2025_11_25 as protocol
from typedmcp.connecting import connect_stdio

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
    script = common.OURS_SERVER if side == "ours" else common.SDK_SERVER
    proc = subprocess.run(
        [sys.executable, "-c", _CLIENT_PROCESS[side], str(script)],
        capture_output=True,
        text=True,
        env=common.child_env(),
        check=False,
        timeout=120,
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].endswith(f" {common.EXPECTED_TEXT}"):
        raise SystemExit(f"client process ({side}) failed:\n{proc.stdout}\n{proc.stderr}")
    return float(lines[-1].split()[0])


def bench_cold(settings: Settings) -> dict[str, Any]:
    """Fresh processes, ours and the SDK's alternating (first one of each untimed: .pyc)."""
    sides = {"ours": common.OURS_SERVER, "sdk": common.SDK_SERVER}
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
            key: {"samples_s": values, "median_s": common.median(values)}
            for key, values in server[side].items()
        }
        result[side]["client_process_s"] = {
            "samples_s": client[side],
            "median_s": common.median(client[side]),
        }
    return result


# --------------------------------------------------------------------------------------
# Profiling (--profile DIR): our client and our server, separately
# --------------------------------------------------------------------------------------


async def profile_ours(settings: Settings, directory: Path) -> dict[str, str]:
    """Profile n calls of ours over stdio, HTTP and in-process; client and server apart."""

    async def open_pair(
        name: str, opener: common.Opener, stack: contextlib.AsyncExitStack
    ) -> common.Connection:
        return await stack.enter_async_context(opener())

    return await common.profile_ours(
        directory,
        count=max(settings.stdio_calls, 2000),
        warmup_calls=settings.warmup_calls,
        open_pair=open_pair,
        stdio=ours_stdio,
        http=ours_http,
        inprocess=ours_inprocess,
    )


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


def headlines(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The figures the targets are about: ours, SDK, ratio, paired ratio, target, met."""
    out: dict[str, dict[str, Any]] = {}
    for key, _label, target in common.THROUGHPUT:
        section = report.get(key)
        if section is None:
            continue
        paths = section["paths"]
        ours_figures, sdk_figures = paths[section["ours"]], paths[section["sdk"]]
        ours = ours_figures["median_calls_s"]
        sdk = sdk_figures["median_calls_s"]
        out[f"{key}_calls_s"] = {
            "ours": ours,
            "sdk": sdk,
            "sdk_path": section["sdk"],
            "ratio": ours / sdk,
            "paired_ratio": common.paired(
                ours_figures["samples_calls_s"], sdk_figures["samples_calls_s"]
            ),
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
    "sdk_memory": "SDK InMemoryTransport + ClientSession (Client(server, mode='legacy'))",
    "sdk_direct_dispatcher": "SDK Client(server), its default: direct dispatcher, 2026-07-28",
    "ours_direct": "ours connect_direct (no transport, no JSON-RPC)",
}


def render(report: Mapping[str, Any]) -> str:
    """The printed table: headline rows (with target and verdict), detail rows indented."""
    heads = headlines(report)
    rows: list[tuple[str, ...]] = [
        ("measurement (median)", "ours", "SDK mcp 2.3.0", "ratio", "target", "met",
         "CPU us/call client+server: ours | SDK (SDK/ours)")
    ]
    rows.extend(common.throughput_rows(report, heads, LABELS, hidden=("ours", "sdk")))
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
                common.verdict(head["met"]),
                "",
            )
        )
        for key, label in (
            ("initialize_s", "  spawn -> initialize result"),
            ("first_call_s", "  spawn -> first tools/call result (info)"),
            ("client_process_s", "  client process: imports+spawn+init+call (info)"),
        ):
            ours, sdk = cold["ours"][key]["median_s"], cold["sdk"][key]["median_s"]
            rows.append((label, ms(ours), ms(sdk), f"{ours / sdk:.2f}x", "", "", ""))

    env = report["environment"]
    header = (
        f"mcp-codegen runtime benchmark: {PACKAGE} on typedmcp vs {common.SDK_REQUIREMENT} "
        f"| python {env['python']}, pydantic {env['pydantic']} (core {env['pydantic-core']}), "
        f"uvicorn {env['uvicorn']} + httptools {env['httptools']}, anyio {env['anyio']}, "
        f"httpx2 {env['httpx2']}, aiohttp {env['aiohttp']}, {env['openssl']}, {env['cpus']} CPUs"
        f"\nsettings: {report['settings']}"
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
            "straight to the other engine, both engines and sessions); SDK = the faster (*) of "
            "InMemoryTransport + ClientSession (SessionMessage objects through anyio memory "
            "streams, no serialisation) and Client(server) (a DirectDispatcher: no JSON-RPC)"
        )
    notes.append(
        "per call, our server also validates the tool arguments against the inputSchema "
        "(a plain-Python check for simple schemas, else jsonschema; the SDK's low-level "
        "server does not in the handshake era)"
    )
    paired_notes = [
        f"{key} {heads[f'{key}_calls_s']['paired_ratio']:.2f}x"
        for key, _label, _target in common.THROUGHPUT
        if f"{key}_calls_s" in heads
    ]
    if paired_notes:
        notes.append("paired ratio (median of per-round ours/SDK): " + ", ".join(paired_notes))
    notes.extend(common.load_note(report))
    return "\n".join([header, "", common.table(rows), "", *notes])


async def measure(settings: Settings, sections: Sequence[str]) -> dict[str, Any]:
    report: dict[str, Any] = {}
    if "stdio" in sections:
        print("measuring stdio ...", file=sys.stderr)
        report["stdio"] = await bench_stdio(settings)
    if "http" in sections:
        print("measuring Streamable HTTP ...", file=sys.stderr)
        report["http"] = await bench_http(settings)
        print("measuring Streamable HTTP over TLS ...", file=sys.stderr)
        with tempfile.TemporaryDirectory() as folder:
            report["https"] = await bench_http(settings, common.make_tls(Path(folder)))
    if "inprocess" in sections:
        print("measuring in-process ...", file=sys.stderr)
        report["inprocess"] = await bench_inprocess(settings)
    return report


SECTIONS = ("stdio", "http", "inprocess", "cold")


def main(argv: Sequence[str] | None = None) -> int:
    args, sections = common.parse_args(__doc__, SECTIONS, argv)
    settings = Settings.make(quick=args.quick, repeats=args.repeats)
    env = common.environment("starlette")
    started = time.perf_counter()
    report: dict[str, Any] = {
        "revision": REVISION,
        "sdk": common.SDK_REQUIREMENT,
        "environment": env,
        "settings": asdict(settings),
        "load_average_start": common.load_average(),
    }
    report.update(asyncio.run(measure(settings, sections)))
    if "cold" in sections:
        print("measuring cold start ...", file=sys.stderr)
        report["cold"] = bench_cold(settings)
    return common.finish(
        report,
        args,
        started,
        headlines=headlines,
        render=render,
        profile=lambda directory: profile_ours(settings, directory),
    )


if __name__ == "__main__":
    raise SystemExit(main())
