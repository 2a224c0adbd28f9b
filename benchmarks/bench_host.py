"""The host (``typedmcp.host``) beside the official SDK's ``ClientSessionGroup``
(mcp 2.3.0), in one run, on the same stdio server program (``peers/ours_server.py``):

* start-up of 10 stdio servers, against the start-up of one (goal: at most 1.5x);
* a routed ``tools/call`` (``host.call_tool("s__echo")``) against a direct call on the same
  connection (``client.call_tool``): the routing overhead (goal: under 10%); the SDK's
  ``group.call_tool`` against ``session.call_tool`` on its same session, beside it;
* the gateway (``mcp-host serve --stdio`` in front of the server) against a direct
  connection to the server, both driven by our client, one call at a time and 16 in
  flight: calls per second, and the CPU microseconds per call of every process on each
  path; beside them three relays that parse nothing, the floor of any stdio gateway here:
  ``peers/line_relay.py`` on asyncio's loop and on uvloop, and ``socat`` (C; its row is
  skipped, saying why, where socat is not installed);
* the gateway's pass-through in process, without I/O: its own CPU per call, with the
  answers spliced from the server's line and with every answer parsed (``--lane-only``).

    .venv/bin/python benchmarks/bench_host.py [--quick] [--json PATH] [--gateway-only] [--lane-only] [--calls N] [--rounds N]

``--quick`` (CI) runs in well under a minute with small samples; its figures are rough.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVER = HERE / "peers" / "ours_server.py"
RELAY = HERE / "peers" / "line_relay.py"
ARGUMENTS = {"text": "hello"}
GOAL_STARTUP_RATIO = 1.5
GOAL_OVERHEAD = 0.10


#: How long a "slow" server waits before it serves (as one that opens a database or a remote
#: session first would): start-up that is waiting, not computing.
SLOW_WAIT = 2.0


def entry(wait: float = 0.0) -> dict[str, Any]:
    if not wait:
        return {"command": sys.executable, "args": [str(SERVER), "stdio"]}
    script = (f"import runpy, sys, time; time.sleep({wait}); sys.argv = [{str(SERVER)!r}, 'stdio']; "
              f"runpy.run_path({str(SERVER)!r}, run_name='__main__')")
    return {"command": sys.executable, "args": ["-c", script]}


async def timed_rounds(
    paths: dict[str, Callable[[], Awaitable[Any]]], calls: int, rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """(calls per second, this process's CPU microseconds per call) of each path,
    ``rounds`` times, round-robin (so load drifts hit every path alike); the first round
    is a warm-up and dropped. CPU time is what a loaded machine disturbs least: the
    server runs in its own process, so a path's extra client-side work shows there."""
    rates: dict[str, list[float]] = {name: [] for name in paths}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    for round_index in range(rounds + 1):
        for name, call in paths.items():
            began, began_cpu = time.perf_counter(), time.process_time()
            for _ in range(calls):
                await call()
            if round_index:
                rates[name].append(calls / (time.perf_counter() - began))
                cpu[name].append((time.process_time() - began_cpu) / calls * 1e6)
    return rates, cpu


# -- start-up ----------------------------------------------------------------------------------


CHILD_CPU: list[float] = []  # the servers' CPU seconds from spawn to ready, per host start-up


def children_cpu() -> float:
    """CPU seconds (user + system) used so far by this process's live child processes, from
    ``/proc/<pid>/stat`` (0.0 where there is no /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == os.getpid():  # ppid; utime and stime follow at 11 and 12
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


async def host_startup(count: int, wait: float = 0.0) -> float:
    from typedmcp.host import Host

    began = time.perf_counter()
    async with Host({f"s{i}": entry(wait) for i in range(count)}) as host:
        elapsed = time.perf_counter() - began
        CHILD_CPU.append(children_cpu())  # the servers are up, nothing else has run on them
        assert len(host.ready()) == count, host.status()
    return elapsed


async def sdk_startup(count: int) -> float:
    from mcp.client.session_group import ClientSessionGroup
    from mcp.client.stdio import StdioServerParameters

    names = itertools.count()
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"], env=dict(os.environ))
    began = time.perf_counter()
    async with ClientSessionGroup(component_name_hook=lambda name, info: f"{next(names)}_{name}") as group:
        for _ in range(count):  # its API connects one server at a time
            await group.connect_to_server(params)
        elapsed = time.perf_counter() - began
        assert len(group.sessions) == count
    return elapsed


async def startup_rows(repeats: int) -> list[dict[str, Any]]:
    ours_one, ours_ten, sdk_one, sdk_ten, cpu_ten = [], [], [], [], []
    await host_startup(1)  # untimed: warm the bytecode caches
    for _ in range(repeats):
        ours_one.append(await host_startup(1))
        ours_ten.append(await host_startup(10))
        cpu_ten.append(CHILD_CPU[-1])
        sdk_one.append(await sdk_startup(1))
        sdk_ten.append(await sdk_startup(10))
    ours_ratio = statistics.median(ours_ten) / max(ours_one)
    slow_one = [await host_startup(1, SLOW_WAIT) for _ in range(repeats)]
    slow_ten = [await host_startup(10, SLOW_WAIT) for _ in range(repeats)]
    slow_ratio = statistics.median(slow_ten) / max(slow_one)
    return [
        {"row": "start-up, 1 stdio server, s", "ours": statistics.median(ours_one), "sdk": statistics.median(sdk_one)},
        {"row": "start-up, 10 stdio servers, s", "ours": statistics.median(ours_ten), "sdk": statistics.median(sdk_ten),
         "note": f"ours 10/slowest 1: {ours_ratio:.2f}x (goal <= {GOAL_STARTUP_RATIO}x); "
                 f"SDK 10/1: {statistics.median(sdk_ten) / statistics.median(sdk_one):.2f}x (it connects one at a time)"},
        {"row": "start-up, 10 stdio servers: the servers' own CPU, s", "ours": statistics.median(cpu_ten),
         "note": f"{os.cpu_count()} CPUs: 10 servers starting at once use "
                 f"{statistics.median(cpu_ten):.1f} CPU-s until they are ready, so start-up cannot "
                 f"take less than {statistics.median(cpu_ten) / (os.cpu_count() or 1):.2f} s here, "
                 "however it is scheduled (the 1.5x goal assumes a core per server)"},
        {"row": f"start-up, 1 stdio server that waits {SLOW_WAIT:.0f} s first, s", "ours": statistics.median(slow_one)},
        {"row": f"start-up, 10 stdio servers that wait {SLOW_WAIT:.0f} s first, s", "ours": statistics.median(slow_ten),
         "note": f"ours 10 waiting servers/slowest 1: {slow_ratio:.2f}x (goal <= {GOAL_STARTUP_RATIO}x; "
                 f"one at a time would take {10 * statistics.median(slow_one):.0f} s)"},
    ]


# -- routing overhead --------------------------------------------------------------------------


async def routing_rows(calls: int, rounds: int) -> list[dict[str, Any]]:
    from mcp.client.session_group import ClientSessionGroup
    from mcp.client.stdio import StdioServerParameters

    from typedmcp.host import Host

    async with Host({"s": entry()}) as host:
        client = host.server("s").client

        async def direct() -> Any:
            return await client.call_tool(name="echo", arguments=ARGUMENTS)

        async def routed() -> Any:
            return await host.call_tool("s__echo", ARGUMENTS)

        assert (await routed()).content[0].text == "hello"
        ours, ours_cpu = await timed_rounds({"direct": direct, "routed": routed}, calls, rounds)
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), "stdio"], env=dict(os.environ))
    async with ClientSessionGroup() as group:
        session = await group.connect_to_server(params)

        async def sdk_direct() -> Any:
            return await session.call_tool("echo", ARGUMENTS)

        async def sdk_routed() -> Any:
            return await group.call_tool("echo", ARGUMENTS)

        assert (await sdk_routed()).content[0].text == "hello"
        sdk, sdk_cpu = await timed_rounds({"direct": sdk_direct, "routed": sdk_routed}, calls, rounds)
    # paired: each round's routed rate against the same round's direct rate
    ours_overhead = statistics.median(d / r - 1 for d, r in zip(ours["direct"], ours["routed"], strict=True))
    sdk_overhead = statistics.median(d / r - 1 for d, r in zip(sdk["direct"], sdk["routed"], strict=True))
    extra_cpu = statistics.median(ours_cpu["routed"]) - statistics.median(ours_cpu["direct"])
    direct_wall = 1e6 / statistics.median(ours["direct"])
    return [
        {"row": "direct call on the host's connection, calls/s", "ours": statistics.median(ours["direct"]),
         "sdk": statistics.median(sdk["direct"])},
        {"row": "routed call (host / ClientSessionGroup), calls/s", "ours": statistics.median(ours["routed"]),
         "sdk": statistics.median(sdk["routed"]),
         "note": f"routing overhead, wall time (paired): ours {ours_overhead:+.1%} (goal < {GOAL_OVERHEAD:.0%}), "
                 f"SDK {sdk_overhead:+.1%}"},
        {"row": "client CPU per direct call, us", "ours": statistics.median(ours_cpu["direct"]),
         "sdk": statistics.median(sdk_cpu["direct"])},
        {"row": "client CPU per routed call, us", "ours": statistics.median(ours_cpu["routed"]),
         "sdk": statistics.median(sdk_cpu["routed"]),
         "note": f"routing's extra CPU: {extra_cpu:+.1f} us per call = {extra_cpu / direct_wall:+.1%} of a "
                 f"direct call's {direct_wall:.0f} us (the load-proof estimate of the overhead)"},
    ]


# -- gateway -----------------------------------------------------------------------------------

#: Calls in flight at once on each connection in the concurrent rows (CPU-bound there).
CONCURRENT = 16
#: The goal for a call through the gateway against a direct call (issue 22, requirement 5).
GOAL_GATEWAY_RATIO = 0.7
#: The gateway process's CPU per sequential call the pass-through aims at, microseconds.
GOAL_GATEWAY_CPU_US = 80.0


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process visible in /proc."""
    found: dict[int, tuple[int, str]] = {}
    for folder in Path("/proc").glob("[0-9]*"):
        try:
            parent = int((folder / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (folder / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        found[int(folder.name)] = (parent, command)
    return found


def cpu_ns(pid: int) -> int:
    """CPU nanoseconds every thread of process ``pid`` has run so far
    (``/proc/<pid>/task/*/schedstat``: finer than the 10 ms clock ticks of ``stat``)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(task.read_text().split()[0])
    return total


def socat_missing() -> str | None:
    """Why the C relay row cannot run here (None: it can)."""
    import shutil

    if shutil.which("socat") is None:
        return "socat is not installed (Debian: apt-get install socat; .ci/run installs it)"
    if any(" " in part for part in (sys.executable, str(SERVER))):
        return "socat's EXEC splits its command on spaces, and a path here holds one"
    return None


class GatewayPath:
    """One way to the echo server: a connected client, the tool name to call on it, and
    the processes it runs through (role -> pid), whose CPU each batch records."""

    def __init__(self, name: str, client: Any, tool: str) -> None:
        self.name = name
        self.client = client
        self.tool = tool
        self.pids: dict[str, int] = {}

    async def call(self) -> Any:
        return await self.client.call_tool(name=self.tool, arguments=ARGUMENTS)

    async def batch(self, calls: int, in_flight: int) -> tuple[float, dict[str, float]]:
        """(calls per second, CPU microseconds per call of this process ("client") and of
        each of the path's processes) over ``calls`` calls, ``in_flight`` at a time."""
        began_ns = {role: cpu_ns(pid) for role, pid in self.pids.items()}
        began, began_cpu = time.perf_counter(), time.process_time()

        async def worker(count: int) -> None:
            for _ in range(count):
                await self.call()

        share, extra = divmod(calls, in_flight)
        await asyncio.gather(*(worker(share + (index < extra)) for index in range(in_flight)))
        rate = calls / (time.perf_counter() - began)
        used = {"client": (time.process_time() - began_cpu) / calls * 1e6}
        used.update({role: (cpu_ns(pid) - began_ns[role]) / calls / 1e3 for role, pid in self.pids.items()})
        return rate, used


def find_pids(paths: dict[str, GatewayPath]) -> None:
    """Each path's processes, found in /proc by their command lines: this process's stdio
    children, and the server each gateway or relay runs."""
    table = _processes()
    children = {pid: command for pid, (parent, command) in table.items() if parent == os.getpid()}

    def child_of(parent: int) -> int:
        return next(pid for pid, (owner, _command) in table.items() if owner == parent)

    def middle(matches: Callable[[str], bool]) -> int:
        return next(pid for pid, command in children.items() if matches(command))

    for name, path in paths.items():
        if name == "direct":
            path.pids["server"] = middle(lambda c: str(SERVER) in c and str(RELAY) not in c
                                         and "socat" not in c and "typedmcp.host.cli" not in c)
            continue
        if name == "gateway":
            hop = middle(lambda c: "typedmcp.host.cli" in c)
        elif name == "relay, uvloop":
            hop = middle(lambda c: str(RELAY) in c and "--uvloop" in c)
        elif name == "relay, asyncio":
            hop = middle(lambda c: str(RELAY) in c and "--uvloop" not in c)
        else:
            hop = middle(lambda c: c.startswith("socat"))
        path.pids.update({"hop": hop, "server": child_of(hop)})


async def gateway_rows(calls: int, rounds: int) -> list[dict[str, Any]]:
    """Calls/s through ``mcp-host serve --stdio`` against direct, one call at a time and
    :data:`CONCURRENT` at a time, beside three relays that parse nothing (the floor of any
    stdio gateway): asyncio's loop, uvloop, and ``socat`` (C). With each, the CPU
    microseconds per call of every process on the path (client, gateway or relay, server),
    the figure a loaded machine disturbs least."""
    from typedmcp.connecting import connect_stdio

    server = [sys.executable, str(SERVER), "stdio"]
    no_socat = socat_missing()
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"s": entry()}}))
        commands = {
            "direct": (server, "echo"),
            "gateway": ([sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(config), "--stdio"],
                        "s__echo"),
            "relay, asyncio": ([sys.executable, str(RELAY), *server], "echo"),
            "relay, uvloop": ([sys.executable, str(RELAY), "--uvloop", *server], "echo"),
        }
        if no_socat is None:
            # (pipes: the server's stdio are pipes, as with the others; a socketpair by default)
            commands["relay, socat (C)"] = (["socat", "-", "EXEC:" + " ".join(server) + ",pipes"], "echo")
        async with contextlib.AsyncExitStack() as stack:
            paths = {name: GatewayPath(name, await stack.enter_async_context(connect_stdio(command)), tool)
                     for name, (command, tool) in commands.items()}
            for path in paths.values():  # each path answers (in time) before it is timed
                answered = await asyncio.wait_for(path.call(), 30)
                assert answered.content[0].text == "hello", path.name
            find_pids(paths)
            results: dict[tuple[str, int], list[tuple[float, dict[str, float]]]] = {}
            for round_index in range(rounds + 1):  # round-robin; the first round warms up
                for in_flight in (1, CONCURRENT):
                    for name, path in paths.items():
                        measured = await path.batch(calls, in_flight)
                        if round_index:
                            results.setdefault((name, in_flight), []).append(measured)
    return gateway_table(results, list(commands), no_socat)


def gateway_table(
    results: dict[tuple[str, int], list[tuple[float, dict[str, float]]]], names: list[str],
    no_socat: str | None,
) -> list[dict[str, Any]]:
    """The gateway rows from each path's measured rounds (paired ratios: each round's path
    against the same round's direct)."""

    def rate(name: str, in_flight: int) -> float:
        return statistics.median(r for r, _cpu in results[(name, in_flight)])

    def ratio(name: str, in_flight: int) -> float:
        pairs = zip(results[("direct", in_flight)], results[(name, in_flight)], strict=True)
        return statistics.median(path[0] / direct[0] for direct, path in pairs)

    def cpu(name: str, in_flight: int) -> dict[str, float]:
        rounds = [used for _rate, used in results[(name, in_flight)]]
        return {role: statistics.median(used[role] for used in rounds) for role in rounds[0]}

    def described(name: str, in_flight: int) -> str:
        roles = {"client": "client", "hop": "gateway" if name == "gateway" else "relay", "server": "server"}
        used = cpu(name, in_flight)
        return ", ".join(f"{roles[role]} {us:.1f}" for role, us in used.items()) + f" (sum {sum(used.values()):.1f})"

    relays = [name for name in names if name.startswith("relay")]
    floor = max(ratio(name, 1) for name in relays)
    rows: list[dict[str, Any]] = []
    for in_flight in (1, CONCURRENT):
        how = "one call at a time" if in_flight == 1 else f"{in_flight} calls in flight"
        for name in names:
            row: dict[str, Any] = {"row": f"stdio calls/s, {how}: {name}", "ours": rate(name, in_flight)}
            if name != "direct":
                row["note"] = f"{name}/direct, {how} (paired): {ratio(name, in_flight):.2f}x"
            rows.append(row)
        rows.append({"row": f"CPU us per call, {how}, summed over the path's processes",
                     "ours": sum(cpu("gateway", in_flight).values()),
                     "note": f"CPU us per call, {how}: " + "; ".join(
                         f"{name}: {described(name, in_flight)}" for name in names)})
    goal = ratio("gateway", 1)
    verdict = (f"the {GOAL_GATEWAY_RATIO}x goal is above the floor on this machine: no stdio gateway "
               f"reaches it one call at a time here (the best relay, parsing nothing, {floor:.2f}x)"
               if floor < GOAL_GATEWAY_RATIO else
               f"the best relay reaches {floor:.2f}x, so {GOAL_GATEWAY_RATIO}x is physically possible here")
    rows.append({"row": "gateway/direct, one call at a time (goal >= 0.7x)", "ours": goal,
                 "note": f"gateway {goal:.2f}x of direct one call at a time (goal >= {GOAL_GATEWAY_RATIO}x); "
                         f"{verdict}; {CONCURRENT} in flight: gateway {ratio('gateway', CONCURRENT):.2f}x; "
                         f"the gateway process's CPU per call {cpu('gateway', 1)['hop']:.1f} us one at a time "
                         f"(goal <= {GOAL_GATEWAY_CPU_US:.0f} us; the uvloop relay's "
                         f"{cpu('relay, uvloop', 1)['hop']:.1f} us), {cpu('gateway', CONCURRENT)['hop']:.1f} us "
                         f"with {CONCURRENT} in flight"})
    if no_socat is not None:
        rows.append({"row": "stdio calls/s: relay, socat (C): skipped", "ours": 0.0, "note": f"no socat row: {no_socat}"})
    return rows


def render(rows: list[dict[str, Any]], quick: bool) -> str:
    lines = [
        f"bench_host ({'quick: rough figures' if quick else 'full'}); python {sys.version.split()[0]}, "
        f"load {os.getloadavg()[0]:.2f}",
        "",
        "| measurement | ours | SDK (mcp 2.3.0) |",
        "|---|---|---|",
    ]
    for row in rows:
        sdk = row.get("sdk")
        lines.append(f"| {row['row']} | {row['ours']:,.3f} | {'' if sdk is None else f'{sdk:,.3f}'} |")
    lines.append("")
    lines.extend(f"- {row['note']}" for row in rows if "note" in row)
    return "\n".join(lines)


# -- the pass-through in process ---------------------------------------------------------------


class _NoSplice:
    """Stands in for the lane's splice: every answer is parsed, completed and dumped."""

    def answer(self, *_args: Any) -> None:
        return None


class _Recorder:
    """A transport stand-in that keeps what is written (``send_now`` takes every line)."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    async def receive(self) -> bytes | None:
        await asyncio.sleep(3600)
        return None

    async def send(self, data: bytes) -> None:
        self.lines.append(data)

    def send_now(self, data: bytes) -> bool:
        self.lines.append(data)
        return True


async def lane_rows(calls: int, rounds: int) -> list[dict[str, Any]]:
    """The gateway's own Python per passed-through call, without I/O: the pass-through of
    ``serve_passing`` on a real host (its server connected), the caller's request lines
    handed to the gateway engine's read path and the server's answer lines (as
    ``peers/ours_server.py`` writes them) to the server connection's, :data:`CONCURRENT` at
    a time; this process's CPU per call, with the answers spliced from the server's line
    and with the splice turned off (every answer parsed, completed and dumped)."""
    from typedmcp.engine.jsonrpc import Engine, encode
    from typedmcp.host import Host
    from typedmcp.host.fastlane import PassLane
    from typedmcp.host.fastpath import PassThrough
    from typedmcp.host.gateway import gateway_options
    from typedmcp.stateless.router import build_router

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    result = {"content": [{"text": ARGUMENTS["text"], "type": "text"}], "resultType": "complete",
              "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "bench-ours", "version": "1.0.0"}}}
    requests = [encode({"jsonrpc": "2.0", "id": index, "method": "tools/call",
                        "params": {"name": "s__echo", "arguments": ARGUMENTS, "_meta": meta}}) for index in range(calls)]
    cpu: dict[str, list[float]] = {"spliced": [], "parsed": []}
    async with Host({"s": entry()}) as host:
        handlers, options, unsubscribe = gateway_options(host)
        router = build_router(handlers, **options)
        passage = PassThrough(host, router, handlers)
        caller = _Recorder()
        engine = Engine(caller, passage, accept_batches=router.accepts_batches)
        passage.attach(engine)
        lane: Any = PassLane(passage)
        engine.lane = lane
        upstream = host.server("s").session.engine
        server, upstream.transport = upstream.transport, _Recorder()
        splice: Any = getattr(lane, "splice", None)  # (None: a runtime from before the splice)
        if splice is None:
            del cpu["spliced"]
        try:
            for round_index in range(rounds + 1):
                for way in cpu:
                    if splice is not None:
                        lane.splice = splice if way == "spliced" else _NoSplice()
                    caller.lines.clear()
                    began = time.process_time()
                    for start in range(0, calls, CONCURRENT):
                        for line in requests[start:start + CONCURRENT]:
                            engine._receive_now(line)
                        for upstream_id in range(upstream._next_id - min(CONCURRENT, calls - start) + 1, upstream._next_id + 1):
                            upstream._receive_now(encode({"jsonrpc": "2.0", "id": upstream_id, "result": result}))
                    used = (time.process_time() - began) / calls * 1e6
                    assert len(caller.lines) == calls and json.loads(caller.lines[-1])["result"]["content"][0]["text"] == "hello"
                    if round_index:
                        cpu[way].append(used)
        finally:
            upstream.transport = server
            unsubscribe()
    parsed = statistics.median(cpu["parsed"])
    spliced = statistics.median(cpu["spliced"]) if "spliced" in cpu else parsed
    how = (f"{spliced:.2f} us with answers spliced from the server's line, {parsed:.2f} us with every answer "
           "parsed, completed and dumped" if "spliced" in cpu else f"{parsed:.2f} us (a runtime without the splice)")
    return [{"row": "gateway pass-through in process (no I/O), CPU us per call", "ours": spliced,
             "note": f"the gateway's own Python per passed-through call, {CONCURRENT} in flight, in process: "
                     f"{how} (the timed loop also encodes the server's answer lines, about 1 us a call)"}]


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.quick:
        repeats, calls, rounds = 1, 200, 3
    else:
        repeats, calls, rounds = 5, 2000, 7
    calls = args.calls or calls
    rounds = args.rounds or rounds
    if args.lane_only:
        return await lane_rows(calls * 4, rounds)
    if args.gateway_only:
        return await gateway_rows(calls, rounds)
    rows = await startup_rows(repeats)
    rows += await routing_rows(calls, rounds)
    rows += await gateway_rows(calls, rounds)
    rows += await lane_rows(calls * 4, rounds)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small samples (CI): under a minute")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    parser.add_argument("--gateway-only", action="store_true", help="the gateway rows alone")
    parser.add_argument("--lane-only", action="store_true",
                        help="the pass-through in process alone (CPU per call without I/O)")
    parser.add_argument("--calls", type=int, default=0, help="calls per round (default: 2000, quick 200)")
    parser.add_argument("--rounds", type=int, default=0, help="measured rounds (default: 7, quick 3)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    import logging

    logging.basicConfig(level=logging.ERROR)
    began = time.perf_counter()
    rows = asyncio.run(main_async(args))
    print(render(rows, args.quick))
    print(f"\n({time.perf_counter() - began:.1f} s)")
    if args.json:
        with contextlib.suppress(OSError):
            args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
