"""The host (``typedmcp.host``) beside the official SDK's ``ClientSessionGroup``
(mcp 2.3.0), in one run, on the same stdio server program (``peers/ours_server.py``):

* start-up of 10 stdio servers, against the start-up of one (goal: at most 1.5x);
* a routed ``tools/call`` (``host.call_tool("s__echo")``) against a direct call on the same
  connection (``client.call_tool``): the routing overhead (goal: under 10%); the SDK's
  ``group.call_tool`` against ``session.call_tool`` on its same session, beside it;
* the gateway (``mcp-host serve --stdio`` in front of the server) against a direct
  connection to the server, both driven by our client: calls per second, and the CPU
  microseconds per call of every process on each path; beside them a line relay
  (``peers/line_relay.py``, parsing nothing), the floor of any stdio gateway here.

    .venv/bin/python benchmarks/bench_host.py [--quick] [--json PATH]

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


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used, from ``/proc/<pid>/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def gateway_pids() -> tuple[int, int, int]:
    """(direct server, gateway, the gateway's server): this process's stdio children, found
    by their command lines in /proc."""
    table = _processes()
    children = {pid: command for pid, (parent, command) in table.items() if parent == os.getpid()}
    gateway = next(pid for pid, command in children.items() if "typedmcp.host.cli" in command)
    direct = next(pid for pid, command in children.items()
                  if str(SERVER) in command and str(RELAY) not in command)
    behind = next(pid for pid, (parent, _command) in table.items() if parent == gateway)
    return direct, gateway, behind


async def gateway_rows(calls: int, rounds: int) -> list[dict[str, Any]]:
    """Calls/s through ``mcp-host serve --stdio`` against direct, with the CPU microseconds
    per call of every process on each path (client, gateway, server), the figure a loaded
    machine disturbs least."""
    from typedmcp.connecting import connect_stdio

    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"s": entry()}}))
        gateway = [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(config), "--stdio"]
        async with (
            connect_stdio([sys.executable, str(SERVER), "stdio"]) as server,
            connect_stdio(gateway) as through,
            connect_stdio([sys.executable, str(RELAY), sys.executable, str(SERVER), "stdio"]) as relayed,
        ):
            direct_pid, gateway_pid, behind_pid = gateway_pids()
            used: dict[str, list[float]] = {"direct server": [], "gateway": [], "server behind": []}

            def per_call(pid: int, began: float) -> float:
                return (cpu_seconds(pid) - began) / calls * 1e6

            async def direct() -> Any:
                return await server.call_tool(name="echo", arguments=ARGUMENTS)

            async def via_gateway() -> Any:
                return await through.call_tool(name="s__echo", arguments=ARGUMENTS)

            async def via_relay() -> Any:
                return await relayed.call_tool(name="echo", arguments=ARGUMENTS)

            assert (await via_gateway()).content[0].text == "hello"
            assert (await via_relay()).content[0].text == "hello"

            async def direct_batch() -> Any:
                began = cpu_seconds(direct_pid)
                for _ in range(calls):
                    await direct()
                used["direct server"].append(per_call(direct_pid, began))

            async def gateway_batch() -> Any:
                began_gateway, began_behind = cpu_seconds(gateway_pid), cpu_seconds(behind_pid)
                for _ in range(calls):
                    await via_gateway()
                used["gateway"].append(per_call(gateway_pid, began_gateway))
                used["server behind"].append(per_call(behind_pid, began_behind))

            async def relay_batch() -> Any:
                for _ in range(calls):
                    await via_relay()

            rates, cpu = await timed_rounds(
                {"direct": direct_batch, "gateway": gateway_batch, "relay": relay_batch}, 1, rounds
            )
    rates = {name: [rate * calls for rate in values] for name, values in rates.items()}
    cpu = {name: [us / calls for us in values] for name, values in cpu.items()}
    for name in used:
        del used[name][0]  # the warm-up round, as timed_rounds drops it
    ratio = statistics.median(g / d for d, g in zip(rates["direct"], rates["gateway"], strict=True))
    floor = statistics.median(r / d for d, r in zip(rates["direct"], rates["relay"], strict=True))
    direct_cpu = statistics.median(cpu["direct"]) + statistics.median(used["direct server"])
    gateway_cpu = (statistics.median(cpu["gateway"]) + statistics.median(used["gateway"])
                   + statistics.median(used["server behind"]))
    return [
        {"row": "stdio calls/s: direct to the server", "ours": statistics.median(rates["direct"])},
        {"row": "stdio calls/s: through the gateway", "ours": statistics.median(rates["gateway"]),
         "note": f"gateway/direct (paired): {ratio:.2f}x (two hops: client -> gateway -> server)"},
        {"row": "stdio calls/s: through a line relay (no parsing: the floor of any gateway)",
         "ours": statistics.median(rates["relay"]),
         "note": f"line relay/direct (paired): {floor:.2f}x (peers/line_relay.py: the extra process and "
                 "pipe hop alone; no gateway can do better on this machine)"},
        {"row": "direct: CPU us per call, client + server", "ours": direct_cpu,
         "note": f"direct, CPU us per call: client {statistics.median(cpu['direct']):.1f}, "
                 f"server {statistics.median(used['direct server']):.1f}"},
        {"row": "gateway: CPU us per call, client + gateway + server", "ours": gateway_cpu,
         "note": f"through the gateway, CPU us per call: client {statistics.median(cpu['gateway']):.1f}, "
                 f"gateway {statistics.median(used['gateway']):.1f}, "
                 f"server {statistics.median(used['server behind']):.1f}; "
                 f"direct/gateway CPU {direct_cpu / gateway_cpu:.2f}x"},
    ]


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


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.quick:
        repeats, calls, rounds = 1, 200, 3
    else:
        repeats, calls, rounds = 5, 2000, 7
    rows = await startup_rows(repeats)
    rows += await routing_rows(calls, rounds)
    rows += await gateway_rows(calls, rounds)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small samples (CI): under a minute")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
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
