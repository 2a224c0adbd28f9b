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
   ``json_response=True``; the faster SDK configuration is the one compared. Then the same
   over TLS, both sides (a test CA made for the run; ours with ``verify=`` that CA, the SDK
   as ``mcp.Client(streamable_http_client(url, http_client=...))`` with an
   ``httpx2.AsyncClient`` trusting it);
3. in-process, like with like: ours = ``connect_direct(handlers, protocol="auto")``
   (no transport and no JSON-RPC: the client's request is a call of the server's
   ``build_router`` dispatcher; params and results are still validated on both sides);
   SDK = ``mcp.Client(server)`` in auto mode (``_connect_inproc``: a ``DirectDispatcher``
   pair driving ``modern_on_request``, no JSON-RPC framing and no serialisation either).
   For information: ours ``connect_memory`` (JSON-RPC bytes handed between two
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

import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy (explicit_package_bases) knows this file as benchmarks.bench_stateless
    from benchmarks import _common as common
else:  # run as a script, benchmarks/ is sys.path[0]
    import _common as common

OURS_MODERN_SERVER = common.PEERS / "ours_server_modern.py"
PACKAGE = "mcp_generated.v2026_07_28"
REVISION = "2026-07-28"

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


# --------------------------------------------------------------------------------------
# Connections: one client connected to one server, checked on every reply
# --------------------------------------------------------------------------------------


def ours_checked(client: Any) -> common.Connection:
    """Our generated ``Client``, every reply checked, with what it negotiated."""
    session = client.session
    discovery = session.discovery
    discovered = list(discovery.supported_versions) if discovery is not None else []
    connection = common.ours_connection(client, checked=True)
    return replace(connection, version=session.protocol_version, discovered=discovered)


def sdk_checked(client: Any) -> common.Connection:
    """The SDK's ``mcp.Client``, every reply checked, with what it negotiated."""
    discovery = client.session.discover_result
    discovered = list(discovery.supported_versions) if discovery is not None else []
    connection = common.sdk_connection(client, checked=True)
    return replace(connection, version=client.protocol_version, discovered=discovered)


@contextlib.asynccontextmanager
async def ours_stdio(command: list[str]) -> AsyncIterator[common.Connection]:
    from typedmcp.connecting import connect_stdio

    async with connect_stdio(command, protocol="auto", env=common.child_env()) as client:
        yield ours_checked(client)


@contextlib.asynccontextmanager
async def sdk_stdio(command: list[str]) -> AsyncIterator[common.Connection]:
    from mcp import Client, StdioServerParameters

    parameters = StdioServerParameters(command=command[0], args=command[1:], env=common.child_env())
    async with Client(parameters) as client:  # mode="auto", cache=CacheConfig()
        yield sdk_checked(client)


@contextlib.asynccontextmanager
async def ours_http(url: str, tls: common.Tls | None = None) -> AsyncIterator[common.Connection]:
    from typedmcp.connecting import connect_http

    trust = tls.ca if tls is not None else True
    async with connect_http(url, protocol="auto", verify=trust) as client:
        yield ours_checked(client)


@contextlib.asynccontextmanager
async def sdk_http(url: str, tls: common.Tls | None = None) -> AsyncIterator[common.Connection]:
    from mcp import Client

    if tls is None:
        async with Client(url) as client:  # mode="auto", cache=CacheConfig()
            yield sdk_checked(client)
        return
    from mcp.client.streamable_http import streamable_http_client

    async with (
        common.sdk_http_client(tls) as http_client,
        Client(streamable_http_client(url, http_client=http_client)) as client,
    ):
        yield sdk_checked(client)


@contextlib.asynccontextmanager
async def ours_inprocess(
    script: Path = common.OURS_SERVER, connector: str = "connect_direct"
) -> AsyncIterator[common.Connection]:
    """Our client and server in this process: ``connect_direct`` (no transport, no JSON-RPC:
    a request is a call of the server's dispatcher, as the SDK's DirectDispatcher does) or
    ``connect_memory`` (JSON-RPC bytes between two engines)."""
    async with common.ours_in_memory(connector, "auto", script=script) as client:
        yield ours_checked(client)


@contextlib.asynccontextmanager
async def sdk_inprocess_direct() -> AsyncIterator[common.Connection]:
    """``mcp.Client(server)`` in auto mode: the SDK's in-process path at 2026-07-28."""
    from mcp import Client

    async with Client(common.load_peer(common.SDK_SERVER).build()) as client:
        yield sdk_checked(client)


@contextlib.asynccontextmanager
async def sdk_inprocess_streams() -> AsyncIterator[common.Connection]:
    """``mcp.Client(InMemoryTransport(server))`` in auto mode: JSON-RPC over memory streams."""
    from mcp import Client
    from mcp.client._memory import InMemoryTransport

    async with Client(InMemoryTransport(common.load_peer(common.SDK_SERVER).build())) as client:
        yield sdk_checked(client)


# --------------------------------------------------------------------------------------
# Timing: check, warm up, then round-robin batches; medians and paired ratios
# --------------------------------------------------------------------------------------

# Two event-loop passes end each timed span: ours in-process answers a call without ever
# yielding to the loop (the server's handler runs eagerly inside the client's send), so the
# last step of each request's task and the cancelled timeout timers would otherwise run
# after the clock stops. The passes count that deferred work; they cost the other paths
# nothing measurable.
LOOP_PASSES = 2


async def open_checked(
    name: str, opener: common.Opener, stack: contextlib.AsyncExitStack
) -> common.Connection:
    """Open a pair and check it: 2026-07-28 negotiated through server/discover, replies echo."""
    connection = await stack.enter_async_context(opener())
    if connection.version != REVISION:
        raise common.fail(f"{name} negotiated {connection.version!r}, not {REVISION}")
    if REVISION not in connection.discovered:
        raise common.fail(
            f"{name}: server/discover did not list {REVISION} ({connection.discovered})"
        )
    for text in (common.EXPECTED_TEXT, PROBE_TEXT, common.EXPECTED_TEXT):
        echoed = await connection.call(text)
        if echoed != text:
            raise common.fail(f"{name} echoed {echoed!r} for {text!r}")
    return connection


async def compare(
    openers: Mapping[str, common.Opener], count: int, settings: Settings, *, baseline: str
) -> dict[str, dict[str, Any]]:
    """Open every pair, check it, warm it up, then time batches round-robin (a rotating
    order per round, so drift in the machine's load spreads over all of them)."""
    batches: dict[str, list[common.Batch]] = {}
    samples = await common.round_robin(
        openers,
        count,
        repeats=settings.repeats,
        warmup_calls=settings.warmup_calls,
        open_pair=open_checked,
        loop_passes=LOOP_PASSES,
        cpu=batches,
    )
    return {
        name: {
            "samples_calls_s": values,
            "median_calls_s": common.median(values),
            "min_calls_s": min(values),
            "max_calls_s": max(values),
            "calls_per_batch": count,
            f"paired_ratio_to_{baseline}": common.paired(values, samples[baseline]),
            **common.cpu_figures(batches[name]),
        }
        for name, values in samples.items()
    }


def section(paths: dict[str, dict[str, Any]], sdk_candidates: Sequence[str]) -> dict[str, Any]:
    """A measured section: the faster SDK candidate is the one compared (conservative)."""
    sdk = max(sdk_candidates, key=lambda name: float(paths[name]["median_calls_s"]))
    per_round = common.ratios(paths["ours"]["samples_calls_s"], paths[sdk]["samples_calls_s"])
    return {
        "paths": paths,
        "ours": "ours",
        "sdk": sdk,
        "ratio_of_medians": paths["ours"]["median_calls_s"] / paths[sdk]["median_calls_s"],
        "paired_ratio": common.median(per_round),
        "per_round_ratios": per_round,
    }


# --------------------------------------------------------------------------------------
# The three sections
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
    return section(paths, ["sdk"])


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
                    "sdk_client_ours_server": lambda: sdk_http(ours_url),
                }
            )
        paths = await compare(openers, settings.http_calls, settings, baseline="sdk_sse")
    return section(paths, ["sdk_sse", "sdk_json"])


async def bench_https(settings: Settings) -> dict[str, Any]:
    """The HTTP pairs over TLS, with a test CA made for the run."""
    with tempfile.TemporaryDirectory() as folder:
        return await bench_http(settings, common.make_tls(Path(folder)))


async def bench_inprocess(settings: Settings) -> dict[str, Any]:
    openers: dict[str, common.Opener] = {
        "ours": ours_inprocess,
        "ours_modern_handlers": lambda: ours_inprocess(OURS_MODERN_SERVER),
        "ours_memory": lambda: ours_inprocess(connector="connect_memory"),
        "sdk_direct": sdk_inprocess_direct,
        "sdk_streams": sdk_inprocess_streams,
    }
    paths = await compare(openers, settings.inprocess_calls, settings, baseline="sdk_direct")
    # like with like: no JSON-RPC on either side (ours_memory vs sdk_streams: info rows)
    return {
        **section(paths, ["sdk_direct"]),
        "ours_path": "typedmcp.connecting.connect_direct",
    }


async def profile_ours(settings: Settings, directory: Path) -> dict[str, str]:
    """cProfile of n stateless calls: client in this process, server in its own (its dump also
    holds startup and idle waiting: read it by tottime), and both sides in-process."""
    return await common.profile_ours(
        directory,
        count=max(settings.stdio_calls, 2000),
        warmup_calls=settings.warmup_calls,
        open_pair=open_checked,
        stdio=ours_stdio,
        http=ours_http,
        inprocess=ours_inprocess,
    )


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------


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
    for key, _label, target in common.THROUGHPUT:
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
        ("measurement at 2026-07-28 (median)", "ours", "SDK mcp 2.3.0", "ratio", "target", "met",
         "CPU us/call client+server: ours | SDK (SDK/ours)")
    ]
    rows.extend(common.throughput_rows(report, heads, LABELS, hidden=("ours",)))
    env = report["environment"]
    header = (
        f"mcp-codegen runtime benchmark, stateless era: {PACKAGE} on typedmcp vs "
        f"{common.SDK_REQUIREMENT} in auto mode | python {env['python']}, pydantic {env['pydantic']}, "
        f"uvicorn {env['uvicorn']} + httptools {env['httptools']}, anyio {env['anyio']}, "
        f"httpx2 {env['httpx2']}, aiohttp {env['aiohttp']}, {env['openssl']}, {env['cpus']} CPUs"
        f"\nsettings: {report['settings']}"
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
        for key, _label, _target in common.THROUGHPUT
        if (found := heads.get(f"{key}_calls_s")) is not None
    ]
    if spreads:
        notes.append("paired ratio, median (min-max) of per-round ours/SDK: " + ", ".join(spreads))
    notes.extend(common.load_note(report))
    return "\n".join([header, "", common.table(rows), "", *notes])


SECTIONS = ("stdio", "http", "inprocess")


async def measure(settings: Settings, sections: Sequence[str]) -> dict[str, Any]:
    benches = {
        "stdio": bench_stdio,
        "http": bench_http,
        "https": bench_https,  # part of the http section: the same pairs over TLS
        "inprocess": bench_inprocess,
    }
    report: dict[str, Any] = {}
    for name in benches:
        if name in sections or (name == "https" and "http" in sections):
            print(f"measuring {name} ...", file=sys.stderr)
            report[name] = await benches[name](settings)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args, sections = common.parse_args(__doc__, SECTIONS, argv)
    settings = Settings.make(quick=args.quick, repeats=args.repeats)
    env = common.environment()
    started = time.perf_counter()
    report: dict[str, Any] = {
        "revision": REVISION,
        "sdk": common.SDK_REQUIREMENT,
        "environment": env,
        "settings": asdict(settings),
        "load_average_start": common.load_average(),
    }
    report.update(asyncio.run(measure(settings, sections)))
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
