"""Requests per second of stateless (2026-07-28) ``tools/call`` with 1, 2 and 4 uvicorn workers.

Run from the repository root::

    /tmp/venv/bin/python benchmarks/bench_workers.py [--quick] [--connections N] [--seconds S]

The server is ``benchmarks/peers/ours_app.py`` (the runtime benchmark's ``echo`` tool) under
``gunicorn -k uvicorn.workers.UvicornWorker -w N`` (or, with ``--server uvicorn``,
``uvicorn --workers N``: httptools, asyncio loop, no access log). The load comes from this
process: N keep-alive connections, each sending sequential POSTs with the era's headers
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``) and ``_meta``; every reply is
checked. The kernel spreads the connections over the workers; no state is shared between
them. The load generator runs on the same machine (2 cores here), so it competes with the
workers for CPU: the figures show how the runtime scales on this box, not a server's ceiling.

Why gunicorn by default: ``uvicorn --workers N`` (N > 1) binds its listening socket without
``TCP_NODELAY`` (asyncio enables it only on sockets created with ``proto=IPPROTO_TCP``), so
a reply written in two parts (headers, then body) waits for the client's delayed ACK: about
40 ms per request on Linux, for any ASGI app. gunicorn sets ``TCP_NODELAY`` on its socket.
``--server uvicorn`` shows the difference.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

PEERS = Path(__file__).resolve().parent / "peers"
MODERN = "2026-07-28"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _request() -> bytes:
    """One ``tools/call`` POST (every connection resends it: request ids need not differ)."""
    body = json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hello"},
                   "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                             "io.modelcontextprotocol/clientCapabilities": {}}},
    }).encode()
    head = (
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        "accept: application/json, text/event-stream\r\n"
        f"mcp-protocol-version: {MODERN}\r\nmcp-method: tools/call\r\nmcp-name: echo\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


REQUEST = _request()


async def _connection(port: int, deadline: float, counts: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = REQUEST
    done = 0
    try:
        while time.perf_counter() < deadline:
            writer.write(request)
            status_line = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length)
            if b" 200 " not in status_line or b'"Hello' in body or b'"hello"' not in body:
                raise RuntimeError(f"unexpected reply: {status_line!r} {body[:200]!r}")
            done += 1
    finally:
        writer.close()
        counts.append(done)


async def _load(port: int, connections: int, seconds: float) -> float:
    counts: list[int] = []
    start = time.perf_counter()
    await asyncio.gather(*(_connection(port, start + seconds, counts) for _ in range(connections)))
    return sum(counts) / (time.perf_counter() - start)


def _command(server: str, workers: int, port: int) -> list[str]:
    if server == "gunicorn":
        return [sys.executable, "-m", "gunicorn", "ours_app:app", "--chdir", str(PEERS),
                "-k", "uvicorn.workers.UvicornWorker", "-w", str(workers),
                "-b", f"127.0.0.1:{port}", "--log-level", "warning"]
    return [sys.executable, "-m", "uvicorn", "ours_app:app", "--app-dir", str(PEERS),
            "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
            "--http", "httptools", "--loop", "asyncio", "--no-access-log", "--log-level", "warning"]


def _start(server: str, workers: int) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    process = subprocess.Popen(
        _command(server, workers, port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            asyncio.run(_load(port, workers, 0.2))  # every worker up and warmed
            return process, port
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{server} with {workers} workers did not start")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="short runs: a CI smoke run")
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument(
        "--server", choices=("gunicorn", "uvicorn"), default="gunicorn",
        help="gunicorn -k uvicorn.workers.UvicornWorker (default), or uvicorn --workers",
    )
    args = parser.parse_args(argv)
    seconds = args.seconds or (1.0 if args.quick else 3.0)
    repeats = args.repeats or (1 if args.quick else 3)
    print(f"{args.server}: stateless tools/call over HTTP, {args.connections} keep-alive connections, "
          f"{seconds:g} s x {repeats} runs per setting, {os.cpu_count()} CPUs")
    print(f"{'workers':>8} {'median req/s':>13} {'runs':>30}")
    medians: dict[int, float] = {}
    for workers in (1, 2, 4):
        process, port = _start(args.server, workers)
        try:
            runs = [asyncio.run(_load(port, args.connections, seconds)) for _ in range(repeats)]
        finally:
            process.terminate()
            process.wait(timeout=15)
        medians[workers] = statistics.median(runs)
        print(f"{workers:>8} {medians[workers]:>13,.0f} {', '.join(f'{r:,.0f}' for r in runs):>30}")
    print(f"scaling: 2 workers {medians[2] / medians[1]:.2f}x, 4 workers {medians[4] / medians[1]:.2f}x of 1")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
