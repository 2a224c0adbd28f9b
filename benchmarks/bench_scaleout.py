"""Several workers behind a load balancer, state in memory or in Redis (issue 12).

Run from the repository root (needs ``redis-server`` and ``haproxy`` on the PATH)::

    .venv/bin/python benchmarks/bench_scaleout.py [--quick] [--json PATH]

Every worker is one process of ``peers/ours_shared_server.py`` (uvicorn, one event loop) on
its own port; HAProxy balances them: round-robin with no affinity, or, for handshake-era
sessions kept in memory, sticky on ``Mcp-Session-Id`` (the affinity option). The load comes
from this process (raw HTTP/1.1 keep-alive connections on asyncio, every reply checked), on
the same cores as the workers: each table gives the CPU each part used, the load generator's
included, so its share is known.

1. **Throughput**, 1, 2 and 4 workers, ``tools/call`` in both eras: stateless 2026-07-28
   requests (no state either way), and 2025-11-25 session requests, in memory with affinity
   or in Redis without.
2. **Cost of the Redis path** per session request: one connection, sequential calls, the
   latency added and the Redis commands each request costs.
3. **Fan-out**: 1,000 ``subscriptions/listen`` streams spread over the workers; one change
   published on one worker; the time until each stream has it.
4. **One worker under 200 clients x 20 calls**, ours beside the official SDK's server in the
   same run, both eras: calls/s and p99 latency.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy (explicit_package_bases) knows this file as benchmarks.bench_scaleout
    from benchmarks import _http_load as http_load
else:  # run as a script, benchmarks/ is sys.path[0]
    import _http_load as http_load

HANDSHAKE, META, MODERN, MODERN_HEADERS = http_load.HANDSHAKE, http_load.META, http_load.MODERN, http_load.MODERN_HEADERS
Connection = http_load.Connection
start_server, start_session, _call_body, _check = (
    http_load.start_server, http_load.start_session, http_load.call_body, http_load.check_reply)
_cpu_seconds, _free_port, _stop, _wait_port = (
    http_load.cpu_seconds, http_load.free_port, http_load.stop, http_load.wait_port)

PEERS = Path(__file__).resolve().parent / "peers"


# -- processes ------------------------------------------------------------------------------


@contextmanager
def redis_server(folder: Path) -> Any:
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (Debian: apt-get install redis-server)")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port, process)
        yield process, f"redis://127.0.0.1:{port}/0", port
    finally:
        _stop(process)


HAPROXY = """\
global
    maxconn 8000
defaults
    mode http
    option http-no-delay
    timeout connect 2s
    timeout client 120s
    timeout server 120s
frontend mcp
    bind 127.0.0.1:{port}
    default_backend workers
backend workers
    balance roundrobin
{sticky}{servers}
"""
STICKY = """\
    stick-table type string len 80 size 100k expire 30m
    stick on req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
"""


@dataclass
class Deployment:
    url_port: int
    processes: dict[str, list[subprocess.Popen[bytes]]]  # "workers", "haproxy", "redis"

    def cpu(self) -> dict[str, float]:
        return {
            name: sum(_cpu_seconds(process.pid) for process in processes)
            for name, processes in self.processes.items()
        }


@contextmanager
def deployment(workers: int, redis: tuple[subprocess.Popen[bytes], str, int] | None, *,
               sticky: bool, folder: Path) -> Any:
    env = {"MCP_REQUEST_STATE_KEY": "bench"}
    if redis is not None:
        env["MCP_REDIS_URL"] = redis[1]
        env["MCP_REDIS_PREFIX"] = f"bench{time.monotonic_ns()}:"
    started = [start_server([sys.executable, str(PEERS / "ours_shared_server.py")], env) for _ in range(workers)]
    port = _free_port()
    config = folder / f"haproxy-{port}.cfg"
    servers = "\n".join(f"    server w{i} 127.0.0.1:{p}" for i, (_, p) in enumerate(started))
    config.write_text(HAPROXY.format(port=port, sticky=STICKY if sticky else "", servers=servers))
    balancer = subprocess.Popen([shutil.which("haproxy") or "haproxy", "-f", str(config), "-db"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    processes = {"workers": [p for p, _ in started], "haproxy": [balancer]}
    if redis is not None:
        processes["redis"] = [redis[0]]
    try:
        _wait_port(port, balancer)
        yield Deployment(port, processes)
    finally:
        for process in (balancer, *processes["workers"]):
            _stop(process)


async def _load(port: int, era: str, connections: int, seconds: float) -> tuple[float, float]:
    """Requests/s over ``connections`` keep-alive connections for ``seconds``, and the CPU
    seconds this process spent meanwhile."""
    opened = [await Connection.open(port) for _ in range(connections)]
    headers = [MODERN_HEADERS if era == MODERN else await start_session(c) for c in opened]
    body = _call_body(era)
    counts = []

    async def run(connection: Connection, extra: dict[str, str], deadline: float) -> None:
        done = 0
        while time.perf_counter() < deadline:
            status, _, reply = await connection.request(body, extra)
            _check(status, reply)
            done += 1
        counts.append(done)

    cpu = time.process_time()
    start = time.perf_counter()
    await asyncio.gather(*(run(c, h, start + seconds) for c, h in zip(opened, headers, strict=True)))
    elapsed = time.perf_counter() - start
    for connection in opened:
        connection.close()
    return sum(counts) / elapsed, time.process_time() - cpu


# -- 1. throughput --------------------------------------------------------------------------


async def throughput(settings: argparse.Namespace, folder: Path, redis: Any) -> list[dict[str, Any]]:
    rows = []
    for workers in (1, 2, 4):
        for state in ("memory", "redis"):
            for era in (MODERN, HANDSHAKE):
                sticky = state == "memory" and era == HANDSHAKE
                with deployment(workers, redis if state == "redis" else None, sticky=sticky, folder=folder) as deployed:
                    await _load(deployed.url_port, era, workers * 2, 0.3)  # warm every worker
                    runs = []
                    for _ in range(settings.repeats):
                        before, wall = deployed.cpu(), time.perf_counter()
                        rate, own_cpu = await _load(deployed.url_port, era, settings.connections, settings.seconds)
                        wall = time.perf_counter() - wall
                        after = deployed.cpu()
                        shares = {name: (after[name] - before[name]) / wall for name in after}
                        shares["load generator"] = own_cpu / wall
                        runs.append((rate, shares))
                rate = statistics.median(r for r, _ in runs)
                shares = {name: statistics.median(s[name] for _, s in runs) for name in runs[0][1]}
                rows.append({"workers": workers, "state": state, "era": era,
                             "balancer": "sticky on Mcp-Session-Id" if sticky else "round-robin",
                             "requests_s": rate, "runs": [r for r, _ in runs], "cpu_cores": shares})
                print(f"  {workers} worker(s) {state:6} {era} {rows[-1]['balancer']:25} {rate:>8,.0f} req/s   "
                      + "  ".join(f"{name} {share:.2f}" for name, share in shares.items()))
    return rows


# -- 2. cost per request ----------------------------------------------------------------------


async def _sessions(port: int, sessions: int, calls: int) -> list[list[float]]:
    """``sessions`` sessions one after the other, each ``calls`` sequential calls on one
    connection: the latency of each call, by its position in its session."""
    by_position: list[list[float]] = [[] for _ in range(calls)]
    body = _call_body(HANDSHAKE)
    for _ in range(sessions):
        connection = await Connection.open(port)
        session = await start_session(connection)
        for position in range(calls):
            started = time.perf_counter()
            status, _, reply = await connection.request(body, session)
            by_position[position].append(time.perf_counter() - started)
            _check(status, reply)
        connection.close()
    return by_position


def _redis_calls(port: int) -> int:
    """Commands Redis has run so far (INFO commandstats), read with redis-cli."""
    output = subprocess.run(["redis-cli", "-p", str(port), "info", "commandstats"],
                            capture_output=True, text=True, check=True).stdout
    return sum(int(line.split("calls=")[1].split(",")[0]) for line in output.splitlines() if "calls=" in line)


async def cost(settings: argparse.Namespace, folder: Path, redis: Any) -> dict[str, Any]:
    """Sequential 2025-11-25 calls, session after session: in memory (one worker) and in
    Redis (two workers, round-robin: a session's requests alternate between them, so its
    first requests on each worker load it from Redis, and a change of its state, such as
    ``notifications/initialized``, makes the other worker load it again)."""
    result: dict[str, Any] = {}
    sessions, calls = settings.cost_sessions, 20
    for state, workers in (("memory", 1), ("redis", 2)):
        with deployment(workers, redis if state == "redis" else None, sticky=False, folder=folder) as deployed:
            await _sessions(deployed.url_port, 5, calls)  # warm up
            commands = _redis_calls(redis[2])
            by_position = await _sessions(deployed.url_port, sessions, calls)
            commands = _redis_calls(redis[2]) - commands
        steady = [latency for position in by_position[4:] for latency in position]
        result[state] = {
            "first_us": [statistics.median(position) * 1e6 for position in by_position[:4]],
            "steady_median_us": statistics.median(steady) * 1e6,
            "steady_p99_us": sorted(steady)[int(len(steady) * 0.99)] * 1e6,
            # per request, the session's initialize and initialized included in the count
            "redis_commands_per_request": commands / (sessions * (calls + 2)),
        }
        row = result[state]
        print(f"  {state:6} ({workers} worker{'s' if workers > 1 else ''}): calls 1-4 of a session "
              + ", ".join(f"{us:.0f}" for us in row["first_us"])
              + f" us; from the 5th on {row['steady_median_us']:.0f} us (median), "
              f"p99 {row['steady_p99_us']:.0f} us; {row['redis_commands_per_request']:.2f} Redis commands per request")
    result["added_steady_us"] = result["redis"]["steady_median_us"] - result["memory"]["steady_median_us"]
    return result


# -- 3. fan-out -------------------------------------------------------------------------------


async def _listen(port: int) -> Connection:
    connection = await Connection.open(port)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"toolsListChanged": True}, "_meta": META}}).encode()
    connection.send(body, {"mcp-protocol-version": MODERN, "mcp-method": "subscriptions/listen"})
    status, _ = await connection.head()
    if status != 200:
        raise RuntimeError(f"listen: {status}")
    while b"acknowledged" not in await connection.reader.readline():
        pass
    return connection


async def _until_changed(connection: Connection) -> float:
    while b"list_changed" not in await connection.reader.readline():
        pass
    return time.perf_counter()


async def fan_out(settings: argparse.Namespace, folder: Path, redis: Any) -> list[dict[str, Any]]:
    rows = []
    for workers, state in ((1, "memory"), (2, "redis"), (4, "redis")):
        with deployment(workers, redis if state == "redis" else None, sticky=False, folder=folder) as deployed:
            streams = []
            for start in range(0, settings.streams, 100):
                streams += await asyncio.gather(*(_listen(deployed.url_port) for _ in range(start, min(start + 100, settings.streams))))
            trigger = await Connection.open(deployed.url_port)
            samples = []
            for _ in range(settings.fanout_repeats):
                waiting = [asyncio.ensure_future(_until_changed(stream)) for stream in streams]
                await asyncio.sleep(0.2)
                body = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                    "name": "change", "arguments": {}, "_meta": META}}).encode()
                started = time.perf_counter()
                status, _, reply = await trigger.request(body, {**MODERN_HEADERS, "mcp-name": "change"})
                if status != 200:
                    raise RuntimeError(f"change: {status} {reply[:200]!r}")
                arrived = await asyncio.wait_for(asyncio.gather(*waiting), 60)
                delays = sorted(t - started for t in arrived)
                samples.append(delays)
            for stream in streams:
                stream.close()
            trigger.close()
        delays = sorted(d for sample in samples for d in sample)
        row = {"workers": workers, "state": state, "streams": len(streams),
               "p50_ms": delays[len(delays) // 2] * 1e3, "p99_ms": delays[int(len(delays) * 0.99)] * 1e3,
               "max_ms": delays[-1] * 1e3}
        rows.append(row)
        print(f"  {workers} worker(s) {state:6} {len(streams)} listen streams: p50 {row['p50_ms']:.1f} ms, "
              f"p99 {row['p99_ms']:.1f} ms, max {row['max_ms']:.1f} ms")
    return rows


# -- 4. one worker, many clients: ours beside the SDK's server --------------------------------


async def _clients(port: int, era: str, clients: int, calls: int) -> tuple[float, list[float], float]:
    latencies: list[float] = []

    async def client() -> None:
        connection = await Connection.open(port)
        try:
            headers = dict(MODERN_HEADERS) if era == MODERN else await start_session(connection)
            for request_id in range(1, calls + 1):
                started = time.perf_counter()
                status, _, reply = await connection.request(_call_body(era, request_id), headers)
                latencies.append(time.perf_counter() - started)
                _check(status, reply)
        finally:
            connection.close()

    cpu = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    wall = time.perf_counter() - started
    return clients * calls / wall, latencies, (time.process_time() - cpu) / wall


async def many_clients(settings: argparse.Namespace) -> list[dict[str, Any]]:
    servers = {
        "ours": [sys.executable, str(PEERS / "ours_shared_server.py")],
        "sdk_sse": [sys.executable, str(PEERS / "sdk_server.py"), "http"],
        "sdk_json": [sys.executable, str(PEERS / "sdk_server.py"), "http", "--json-response"],
    }
    rows = []
    for era in (HANDSHAKE, MODERN):
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in servers}
        started = {name: start_server(command, {"MCP_REQUEST_STATE_KEY": "bench"}) for name, command in servers.items()}
        try:
            for _, port in started.values():
                await _clients(port, era, 20, 5)  # warm up
            for _ in range(settings.repeats):
                for name, (_, port) in started.items():  # round-robin over the servers
                    rate, latencies, own = await _clients(port, era, settings.clients, settings.calls)
                    latencies.sort()
                    results[name].append((rate, latencies[int(len(latencies) * 0.99)], own))
        finally:
            for process, _ in started.values():
                _stop(process)
        summary = {name: {"calls_s": statistics.median(r for r, _, _ in runs),
                          "p99_ms": statistics.median(p for _, p, _ in runs) * 1e3,
                          "load_generator_cores": statistics.median(o for _, _, o in runs)}
                   for name, runs in results.items()}
        sdk = max(("sdk_sse", "sdk_json"), key=lambda name: summary[name]["calls_s"])
        row = {"era": era, "clients": settings.clients, "calls": settings.calls, **summary, "sdk_best": sdk,
               "throughput_ratio": summary["ours"]["calls_s"] / summary[sdk]["calls_s"],
               "p99_ratio": summary["ours"]["p99_ms"] / summary[sdk]["p99_ms"]}
        rows.append(row)
        print(f"  {era}: ours {summary['ours']['calls_s']:,.0f} calls/s p99 {summary['ours']['p99_ms']:.1f} ms; "
              f"SDK ({sdk}) {summary[sdk]['calls_s']:,.0f} calls/s p99 {summary[sdk]['p99_ms']:.1f} ms; "
              f"throughput {row['throughput_ratio']:.2f}x (goal >= 3x), p99 {row['p99_ratio']:.2f}x (goal <= 0.33x)")
    return rows


# -- main -----------------------------------------------------------------------------------


def session_limits() -> str:
    """How the session limits of our server and the SDK's are set (peers/_uvicorn.py)."""
    import runpy

    return str(runpy.run_path(str(PEERS / "_uvicorn.py"))["SESSION_LIMITS"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a CI smoke run (< 60 s)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    quick = args.quick
    args.seconds = 0.5 if quick else 3.0
    args.repeats = 1 if quick else 3
    args.connections = 16
    args.cost_sessions = 10 if quick else 100
    args.streams = 200 if quick else 1000
    args.fanout_repeats = 1 if quick else 5
    args.clients, args.calls = (50, 5) if quick else (200, 20)
    for tool in ("redis-server", "haproxy", "redis-cli"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt-get install redis-server haproxy)")
    load = os.getloadavg()
    print(f"bench_scaleout: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
          f"{' (quick)' if quick else ''}")
    report: dict[str, Any] = {"quick": quick, "load_before": load, "session_limits": session_limits()}
    print(f"sessions: {report['session_limits']}")

    async def run() -> None:
        with tempfile.TemporaryDirectory() as folder_name:
            folder = Path(folder_name)
            with redis_server(folder) as redis:
                print(f"1. tools/call through HAProxy, {args.connections} connections, {args.seconds:g} s x "
                      f"{args.repeats} (CPU in cores used, median)")
                report["throughput"] = await throughput(args, folder, redis)
                print("2. the Redis path per request")
                report["cost"] = await cost(args, folder, redis)
                print(f"3. fan-out of one change to {args.streams} listen streams")
                report["fan_out"] = await fan_out(args, folder, redis)
        print(f"4. one worker, {args.clients} clients x {args.calls} calls, ours beside the SDK's server")
        report["many_clients"] = await many_clients(args)

    asyncio.run(run())
    report["load_after"] = os.getloadavg()
    print(f"load average after: {report['load_after'][0]:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
