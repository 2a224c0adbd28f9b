"""What the runtime benchmarks share: ``bench_runtime.py`` (handshake era) and
``bench_stateless.py`` (stateless era) measure the same ``echo`` tool on the same peers.

Peers and child processes, connections (one client on one server, able to run a batch of
calls), round-robin timing, the HTTP server launcher, profiling helpers, the environment
report, the printed table's throughput rows and the command line. Each script keeps what is
its own: which pairs it opens and how, how a pair is checked, its report's notes.
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
import sys
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

PEERS = Path(__file__).resolve().parent / "peers"
OURS_SERVER = PEERS / "ours_server.py"
SDK_SERVER = PEERS / "sdk_server.py"
SDK_REQUIREMENT = "mcp==2.3.0"

# Targets: ours/SDK calls per second (higher is better), the same in both eras.
TARGET_STDIO_SPEEDUP = 5.0
TARGET_HTTP_SPEEDUP = 3.0
TARGET_INPROCESS_SPEEDUP = 5.0

THROUGHPUT = (
    ("stdio", "stdio tools/call, calls/s", TARGET_STDIO_SPEEDUP),
    ("http", "Streamable HTTP tools/call, calls/s", TARGET_HTTP_SPEEDUP),
    ("https", "Streamable HTTP over TLS tools/call, calls/s", TARGET_HTTP_SPEEDUP),
    ("inprocess", "in-process tools/call, calls/s", TARGET_INPROCESS_SPEEDUP),
)

ARGUMENTS: dict[str, Any] = {"text": "hello"}
EXPECTED_TEXT = "hello"


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


def load_peer(script: Path) -> ModuleType:
    """Import a peer script by path, once (the in-process rows reuse the servers' handlers)."""
    name = f"bench_peer_{script.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, script)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {script}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def fail(message: str) -> SystemExit:
    return SystemExit(f"benchmark self-check failed: {message}")


# --------------------------------------------------------------------------------------
# Connections: one client connected to one server, able to run a batch of calls
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Connection:
    """An open client: ``call(text)`` returns the echoed text; ``batch(n)`` makes n calls;
    ``version`` and ``discovered`` are what negotiation settled on, where a script asks."""

    call: Callable[[str], Awaitable[str]]
    batch: Callable[[int], Awaitable[None]]
    version: str | None = None
    discovered: Sequence[str] = ()


Opener = Callable[[], contextlib.AbstractAsyncContextManager[Connection]]


def text_of(result: Any) -> str:
    """The text of a one-block, non-error tool result, ours or the SDK's."""
    content = result.content
    if result.is_error or len(content) != 1 or getattr(content[0], "type", None) != "text":
        raise fail(f"not one text block: {result!r}")
    text: str = content[0].text
    return text


def ours_connection(client: Any, *, checked: bool) -> Connection:
    """Our generated ``Client``: ``await client.call_tool(name=..., arguments=...)``.

    ``checked``: the batch checks every reply (the stateless benchmark) or not."""

    async def call(text: str) -> str:
        return text_of(await client.call_tool(name="echo", arguments={"text": text}))

    async def batch(count: int) -> None:
        call_tool = client.call_tool
        for _ in range(count):
            await call_tool(name="echo", arguments=ARGUMENTS)

    async def checked_batch(count: int) -> None:
        call_tool = client.call_tool
        for _ in range(count):
            result = await call_tool(name="echo", arguments=ARGUMENTS)
            if result.content[0].text != EXPECTED_TEXT or result.is_error:
                raise fail(f"ours answered {result!r}")

    return Connection(call, checked_batch if checked else batch)


def sdk_connection(client: Any, *, checked: bool) -> Connection:
    """The SDK's ``ClientSession`` or ``mcp.Client``: ``await client.call_tool(name, arguments)``.

    ``checked``: the batch checks every reply (the stateless benchmark) or not."""

    async def call(text: str) -> str:
        return text_of(await client.call_tool("echo", {"text": text}))

    async def batch(count: int) -> None:
        call_tool = client.call_tool
        for _ in range(count):
            await call_tool("echo", ARGUMENTS)

    async def checked_batch(count: int) -> None:
        call_tool = client.call_tool
        for _ in range(count):
            result = await call_tool("echo", ARGUMENTS)
            if result.content[0].text != EXPECTED_TEXT or result.is_error:
                raise fail(f"SDK answered {result!r}")

    return Connection(call, checked_batch if checked else batch)


@contextlib.asynccontextmanager
async def ours_in_memory(
    connector: str, protocol: Any, *, script: Path = OURS_SERVER
) -> AsyncIterator[Any]:
    """Our client and a peer's handlers in this process, joined by ``typedmcp.connecting.<connector>``:
    ``connect_direct`` (no transport, no JSON-RPC: a request is a call of the server's
    dispatcher) or ``connect_memory`` (JSON-RPC bytes between two engines); yields the
    client."""
    from typedmcp import connecting as launchers

    peer = load_peer(script)
    server_info = {"name": peer.NAME, "version": peer.VERSION}
    connect = getattr(launchers, connector)
    async with connect(
        peer.Echo(), protocol=protocol, server_options={"server_info": server_info}
    ) as client:
        yield client


@dataclass(frozen=True)
class Tls:
    """A test CA (``ca``: the bundle clients trust) and a certificate of 127.0.0.1 signed by
    it, for both servers of the HTTPS rows (``--tls CERT KEY``)."""

    ca: str
    cert: str
    key: str

    @property
    def server_args(self) -> list[str]:
        return ["--tls", self.cert, self.key]


def make_tls(folder: Path) -> Tls:
    """A fresh test CA and server certificate (trustme), written to ``folder``."""
    import trustme

    authority = trustme.CA()
    leaf = authority.issue_cert("127.0.0.1")
    authority.cert_pem.write_to_path(str(folder / "ca.pem"))
    leaf.cert_chain_pems[0].write_to_path(str(folder / "server.pem"))
    leaf.private_key_pem.write_to_path(str(folder / "server.key"))
    return Tls(str(folder / "ca.pem"), str(folder / "server.pem"), str(folder / "server.key"))


def sdk_http_client(tls: Tls) -> Any:
    """The SDK's HTTP client as ``create_mcp_http_client`` makes it (30 s, 300 s to read),
    trusting ``tls.ca``: ``streamable_http_client(url, http_client=...)``."""
    import ssl

    import httpx2

    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(30.0, read=300.0), verify=ssl.create_default_context(cafile=tls.ca)
    )


@contextlib.asynccontextmanager
async def http_server(command: list[str]) -> AsyncIterator[str]:
    """Start a peer under uvicorn (it picks a free port and prints it); stop it at the end.
    Its URL is ``https://`` when the command has ``--tls``."""
    process = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, env=child_env()
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 60)
        if not line.startswith(b"PORT "):
            raise SystemExit(f"{command} did not start: {line!r}")
        scheme = "https" if "--tls" in command else "http"
        yield f"{scheme}://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except asyncio.TimeoutError:
                process.kill()
                await process.wait()


# --------------------------------------------------------------------------------------
# Timing: open and check, warm up, then round-robin batches; paired ratios
# --------------------------------------------------------------------------------------


def descendants_cpu() -> float:
    """CPU seconds (user + system) used so far by every live descendant of this process
    (its servers, and what they spawned), from ``/proc/<pid>/stat``; 0.0 without /proc."""
    parents: dict[int, int] = {}
    used: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # gone meanwhile
            continue
        pid = int(stat.parent.name)
        parents[pid] = int(fields[1])  # ppid; utime and stime are fields 11 and 12
        used[pid] = (int(fields[11]) + int(fields[12])) / tick
    mine, total, frontier = os.getpid(), 0.0, [os.getpid()]
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    while frontier:
        for child in children.get(frontier.pop(), ()):
            if child != mine:
                total += used[child]
                frontier.append(child)
    return total


@dataclass(frozen=True)
class Batch:
    """One timed batch: calls/s, and CPU microseconds per call of this process (the client,
    and in-process also the server) and of its child processes (the server, over stdio and
    HTTP; the other pairs' servers sit idle meanwhile). CPU time is the figure a busy machine
    disturbs least; /proc counts in clock ticks (10 ms), so small batches give rough CPU."""

    calls_s: float
    client_cpu_us: float
    server_cpu_us: float


async def timed_batch(connection: Connection, count: int, *, loop_passes: int) -> Batch:
    """One batch of ``count`` sequential calls: calls/s and CPU per call (see :class:`Batch`).

    The clock stops after ``loop_passes`` more event-loop passes, so work the calls left
    scheduled (the last steps of requests that were served eagerly in-process, cancelled
    timeout timers) is counted too."""
    gc.collect()
    start_children = descendants_cpu()
    start, start_cpu = time.perf_counter(), time.process_time()
    await connection.batch(count)
    for _ in range(loop_passes):
        await asyncio.sleep(0)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - start_cpu
    children = descendants_cpu() - start_children
    return Batch(count / elapsed, cpu / count * 1e6, children / count * 1e6)


async def timed(connection: Connection, count: int, *, loop_passes: int) -> float:
    """Calls per second over one batch of ``count`` sequential calls (see :func:`timed_batch`)."""
    return (await timed_batch(connection, count, loop_passes=loop_passes)).calls_s


OpenPair = Callable[[str, Opener, contextlib.AsyncExitStack], Awaitable[Connection]]


async def round_robin(
    openers: Mapping[str, Opener],
    count: int,
    *,
    repeats: int,
    warmup_calls: int,
    open_pair: OpenPair,
    loop_passes: int,
    cpu: dict[str, list[Batch]] | None = None,
) -> dict[str, list[float]]:
    """Open (and check, by ``open_pair``) every pair, warm it up, then time batches of
    ``count`` calls round-robin: calls/s samples per pair (and every :class:`Batch`, with
    its CPU figures, in ``cpu`` when given).

    Connections stay open during the whole comparison (idle ones cost nothing but memory);
    each round times every pair once, in a rotating order, so drift in the machine's load
    spreads over all of them."""
    async with contextlib.AsyncExitStack() as stack:
        connections: dict[str, Connection] = {}
        for name, opener in openers.items():
            connection = await open_pair(name, opener, stack)
            await connection.batch(warmup_calls)
            connections[name] = connection
        names = list(connections)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for repeat in range(repeats):
            shift = repeat % len(names)
            for name in names[shift:] + names[:shift]:
                batch = await timed_batch(connections[name], count, loop_passes=loop_passes)
                samples[name].append(batch.calls_s)
                if cpu is not None:
                    cpu.setdefault(name, []).append(batch)
    return samples


def cpu_figures(batches: Sequence[Batch]) -> dict[str, float]:
    """Median CPU microseconds per call of a pair's batches: client, server, both."""
    return {
        "client_cpu_us": median([b.client_cpu_us for b in batches]),
        "server_cpu_us": median([b.server_cpu_us for b in batches]),
        "cpu_us": median([b.client_cpu_us + b.server_cpu_us for b in batches]),
    }


def cpu_cell(figures: Mapping[str, Any]) -> str:
    """``client+server=total`` CPU us per call, or "" when not measured."""
    if "cpu_us" not in figures:
        return ""
    return (f"{figures['client_cpu_us']:.0f}+{figures['server_cpu_us']:.0f}"
            f"={figures['cpu_us']:.0f}")


def ratios(ours: Sequence[float], sdk: Sequence[float]) -> list[float]:
    """ours/SDK within each round."""
    return [a / b for a, b in zip(ours, sdk, strict=True)]


def paired(ours: Sequence[float], sdk: Sequence[float]) -> float:
    """Median over rounds of ours/SDK within the round (steadier than a ratio of medians)."""
    return median(ratios(ours, sdk))


# --------------------------------------------------------------------------------------
# Profiling (--profile DIR): our server under cProfile in its own process
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


async def profile_ours(
    directory: Path,
    *,
    count: int,
    warmup_calls: int,
    open_pair: OpenPair,
    stdio: Callable[[list[str]], contextlib.AbstractAsyncContextManager[Connection]],
    http: Callable[[str], contextlib.AbstractAsyncContextManager[Connection]],
    inprocess: Opener,
) -> dict[str, str]:
    """Profile ``count`` calls of ours over stdio, HTTP and in-process; client and server apart.

    stdio and HTTP: the client is profiled in this process around the batch; the server runs
    under cProfile in its own process (dumped when it exits), so its profile also holds
    startup and idle waiting: read it by ``tottime`` and by the handler path. In-process:
    one profile holding both sides."""
    directory.mkdir(parents=True, exist_ok=True)
    outputs: dict[str, str] = {}

    async def run_client(opener: Opener, name: str) -> None:
        async with contextlib.AsyncExitStack() as stack:
            connection = await open_pair(name, opener, stack)
            await connection.batch(warmup_calls)
            profiler = cProfile.Profile()
            profiler.enable()
            await connection.batch(count)
            profiler.disable()
        path = directory / f"{name}.pstats"
        profiler.dump_stats(str(path))
        outputs[name] = str(path)

    server_stdio = directory / "ours_stdio_server.pstats"
    await run_client(
        lambda: stdio(profiled_server(server_stdio, OURS_SERVER, "stdio")), "ours_stdio_client"
    )
    outputs["ours_stdio_server"] = str(server_stdio)
    server_http = directory / "ours_http_server.pstats"
    async with http_server(profiled_server(server_http, OURS_SERVER, "http")) as url:
        await run_client(lambda: http(url), "ours_http_client")
    outputs["ours_http_server"] = str(server_http)
    await run_client(inprocess, "ours_inprocess_both")
    return outputs


# --------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------

DISTRIBUTIONS = (
    "pydantic",
    "pydantic-core",
    "mcp",
    "mcp-codegen",
    "uvicorn",
    "httptools",
    "anyio",
    "httpx2",
    "aiohttp",
)


def versions(*extra: str) -> dict[str, str]:
    found = {"python": platform.python_version(), "platform": platform.platform()}
    for dist in (*DISTRIBUTIONS, *extra):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "not installed"
    found["cpus"] = str(os.cpu_count())
    import ssl

    found["openssl"] = ssl.OPENSSL_VERSION
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


def throughput_rows(
    report: Mapping[str, Any],
    heads: Mapping[str, Mapping[str, Any]],
    labels: Mapping[str, str],
    *,
    hidden: Sequence[str],
) -> list[tuple[str, ...]]:
    """Each throughput section's headline row (with target and verdict), then its other
    paths but ``hidden`` ones: another SDK configuration in the SDK column (ratio = ours /
    it; ``*`` marks the one compared), a mixed pair or another of ours in the ours column
    (ratio = it / the compared SDK pair, for information)."""
    rows: list[tuple[str, ...]] = []
    for key, label, target in THROUGHPUT:
        if f"{key}_calls_s" not in heads:
            continue
        head = heads[f"{key}_calls_s"]
        paths = report[key]["paths"]
        ours_figures, sdk_figures = paths[report[key]["ours"]], paths[report[key]["sdk"]]
        cpu_ratio = ""
        if "cpu_us" in ours_figures and "cpu_us" in sdk_figures and ours_figures["cpu_us"]:
            cpu_ratio = f" ({sdk_figures['cpu_us'] / ours_figures['cpu_us']:.2f}x)"
        rows.append(
            (
                label,
                f"{head['ours']:,.0f}",
                f"{head['sdk']:,.0f}",
                f"{head['ratio']:.2f}x",
                f">= {target:g}x",
                verdict(head["met"]),
                f"{cpu_cell(ours_figures)} | {cpu_cell(sdk_figures)}{cpu_ratio}",
            )
        )
        for name, figures in report[key]["paths"].items():
            if name in hidden:
                continue
            rate = figures["median_calls_s"]
            if name == "sdk" or (name.startswith("sdk_") and not name.startswith("sdk_client")):
                marker = "*" if name == head["sdk_path"] else " "
                rows.append(
                    (
                        f" {marker}{labels[name]}",
                        "",
                        f"{rate:,.0f}",
                        f"{head['ours'] / rate:.2f}x",
                        "",
                        "",
                        f"| {cpu_cell(figures)}",
                    )
                )
            else:
                rows.append(
                    (
                        f"  {labels[name]} (info)",
                        f"{rate:,.0f}",
                        "",
                        f"{rate / head['sdk']:.2f}x",
                        "",
                        "",
                        f"{cpu_cell(figures)} |",
                    )
                )
    return rows


def load_note(report: Mapping[str, Any]) -> list[str]:
    """The load-average note under the table, if the platform has one."""
    start_load, end_load = report.get("load_average_start"), report.get("load_average_end")
    if start_load is None or end_load is None:
        return []
    busy = start_load > 0.5 * int(report["environment"]["cpus"] or 1)
    return [
        f"1-min load average at start/end: {start_load:.2f}/{end_load:.2f}"
        + ("  (other work was running before the start: expect noisy figures)" if busy else "")
    ]


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def parse_args(
    doc: str | None, sections: Sequence[str], argv: Sequence[str] | None
) -> tuple[argparse.Namespace, list[str]]:
    """The options both scripts take; the sections chosen with ``--only``."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0] if doc else None)
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
        default=",".join(sections),
        metavar="LIST",
        help=f"comma-separated sections to run (default: all of {','.join(sections)})",
    )
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="also profile our client and server (cProfile dumps in DIR) and print top costs",
    )
    args = parser.parse_args(argv)
    chosen = [part.strip() for part in args.only.split(",") if part.strip()]
    unknown = set(chosen) - set(sections)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    return args, chosen


def environment(*extra: str) -> dict[str, str]:
    """``versions()``; exits unless the SDK is installed, warns unless it is the one pinned,
    and silences its deprecation warnings."""
    env = versions(*extra)
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
    return env


def finish(
    report: dict[str, Any],
    args: argparse.Namespace,
    started: float,
    *,
    headlines: Callable[[Mapping[str, Any]], dict[str, dict[str, Any]]],
    render: Callable[[Mapping[str, Any]], str],
    profile: Callable[[Path], Coroutine[Any, Any, dict[str, str]]],
) -> int:
    """Print the table, profile if asked (``--profile``), write the JSON (``--json``)."""
    report["elapsed_s"] = time.perf_counter() - started
    report["load_average_end"] = load_average()
    report["headlines"] = headlines(report)
    print(render(report))
    print(f"\n(benchmark took {report['elapsed_s']:.0f} s)")
    if args.profile is not None:
        print("profiling ours ...", file=sys.stderr)
        outputs = asyncio.run(profile(args.profile))
        report["profiles"] = outputs
        for name, path in outputs.items():
            print(f"\n=== profile: {name} ({path}) ===")
            print(top_costs(Path(path)))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0
