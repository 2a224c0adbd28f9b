"""Server cost of one typed tool: ``typedmcp.app.McpApp`` against the official SDK's
``MCPServer`` (mcp 2.3.0) and FastMCP 4.1.6, the same ``async def echo(text: str) -> str``
on each, over stdio and Streamable HTTP (issue 18, requirement 12, second part).

Run from the repository root::

    .venv/bin/python benchmarks/bench_app_peers.py [--calls N] [--rounds N] [--quick]

The client is the same raw JSON-RPC writer for every server, so the differences are the
servers': it starts the server, sends ``initialize`` (2025-11-25) and
``notifications/initialized``, then ``--calls`` sequential ``tools/call`` requests, each
written when the previous answer has been read. Over stdio, lines on the server's
stdin/stdout; over HTTP, one keep-alive HTTP/1.1 connection to the server under uvicorn
(the same settings for all: ``peers/_uvicorn.py``), POSTs with the session id, answers read
as JSON or as the SSE stream each server chooses (Content-Length or chunked bodies). The
HTTP client is a lean one on a blocking socket (:class:`RawHttp`: every request's bytes
built before the timing starts, one ``sendall`` per call), so what it costs per call, which
every server's rate pays alike, stays small; it is printed beside the servers' CPU. Every
answer is checked: its id, a successful result, the echoed text. Then Streamable HTTP at
2026-07-28, the stateless era: no ``initialize`` and no session; each ``tools/call`` POST
carries its own ``_meta`` (protocol version, client capabilities and info) and the
``MCP-Protocol-Version``/``Mcp-Method``/``Mcp-Name`` headers, and its answer must be a
2026-07-28 result (``resultType: "complete"``); a server that cannot serve it gets a row
saying so instead of a rate. Calls per second; rounds
alternate between the servers; medians and the ratios ours/SDK and ours/FastMCP printed.
A fourth server, the floor (``peers/floor_echo.py``), has no MCP in it: it parses each
request and writes a canned answer around the echoed text, on the same transport (for HTTP
the same uvicorn settings), so its rate is the most any server could show with this client,
and its CPU per call what the transport alone costs; the closing lines give, per transport
and peer, McpApp's server CPU ratio against the goal (the issue's "server cost", >= 3x), the
calls/s ratio, and the floor's calls/s ratio beside it (the ceiling of that column).
Every HTTP server runs on the same event loop: ``--loop auto`` (the default, as uvicorn's own
default) is uvloop when it is installed (``typedmcp[http]`` installs it; the peers, in the same
environment, get it too), else asyncio; ``--loop asyncio`` or ``--loop uvloop`` picks one.
``--quick`` (CI's smoke run) makes few calls, one round, and checks only that every server
answers.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

PEERS = Path(__file__).resolve().parent / "peers"
#: The row of a server with no MCP in it (``peers/floor_echo.py``): what the transport and the
#: client alone cost, so the most any server could show on this machine.
FLOOR = "floor (no MCP)"
SERVERS = {
    "McpApp": PEERS / "app_echo_server.py",
    "SDK MCPServer": PEERS / "sdk_mcpserver_echo.py",
    "FastMCP": PEERS / "fastmcp_echo.py",
    FLOOR: PEERS / "floor_echo.py",
}
OURS = "McpApp"
PEER_NAMES = ("SDK MCPServer", "FastMCP")
GOAL = 3.0
VERSION = "2025-11-25"
INITIALIZE = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
STATELESS_VERSION = "2026-07-28"
#: What a 2026-07-28 request carries in ``params._meta`` in place of ``initialize``.
STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


class CannotServe(Exception):
    """A server answered, but not as the protocol revision asked for requires."""


def call(number: int) -> dict[str, Any]:
    """The ``number``-th ``tools/call`` request."""
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"hi {number}"}}}


def checked(script: Path, number: int, reply: dict[str, Any]) -> None:
    """Stop the run if ``reply`` is not the successful answer to call ``number``: its id,
    a result that is no error, and a text block that echoes ``hi <number>``."""
    result = reply.get("result")
    content = result.get("content") if isinstance(result, dict) else None
    if (
        reply.get("id") != number
        or not isinstance(content, list)
        or result.get("isError")  # type: ignore[union-attr]
        or not any(isinstance(block, dict) and block.get("text") == f"hi {number}" for block in content)
    ):
        raise SystemExit(f"{script.name}: tools/call {number} failed: {reply}")


def cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used, from ``/proc/<pid>/stat``
    (every thread, ended ones too; counted in clock ticks of 10 ms)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict[str, int]:
    """CPU nanoseconds of each live thread of process ``pid`` (``/proc/<pid>/task/*/schedstat``:
    exact, where :func:`cpu_seconds` counts 10 ms ticks)."""
    found: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            found[task.name] = int((task / "schedstat").read_text().split()[0])
    return found


class ServerCpu:
    """The CPU a server process spends between :meth:`start` and :meth:`per_call`: exact
    (per-thread nanoseconds) when its threads are the same at both ends; otherwise (a thread
    ended, and its time with it) the process's clock ticks, which count ended threads too."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.threads = thread_cpu(pid)
        self.ticks = cpu_seconds(pid)

    def per_call(self, calls: int) -> float:
        """CPU microseconds per call since this was made."""
        threads, ticks = thread_cpu(self.pid), cpu_seconds(self.pid)
        if threads.keys() == self.threads.keys():
            return (sum(threads.values()) - sum(self.threads.values())) / 1e3 / calls
        return (ticks - self.ticks) / calls * 1e6


#: One timed run: (calls/s, the load generator's CPU us per call, the server's CPU us per call).
Run = tuple[float, float, float]


def line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


def stdio_rate(script: Path, calls: int) -> Run:
    """Calls per second over the server's stdin/stdout, and CPU us per call of each side."""
    process = subprocess.Popen(
        [sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def answer(number: int) -> dict[str, Any]:
        while True:  # skip notifications (none are expected)
            raw = stdout.readline()
            if not raw:
                raise SystemExit(f"{script.name}: the server closed stdout")
            reply: dict[str, Any] = json.loads(raw)
            if reply.get("id") == number:
                return reply

    try:
        stdin.write(line(INITIALIZE))
        stdin.flush()
        if "result" not in answer(0):
            raise SystemExit(f"{script.name}: initialize failed")
        stdin.write(line(INITIALIZED))
        requests = [line(call(n)) for n in range(1, calls + 1)]
        server_cpu = ServerCpu(process.pid)
        start, start_cpu = time.perf_counter(), time.process_time()
        for number, request in enumerate(requests, 1):
            stdin.write(request)
            stdin.flush()
            checked(script, number, answer(number))
        elapsed = time.perf_counter() - start
        return (calls / elapsed, (time.process_time() - start_cpu) / calls * 1e6, server_cpu.per_call(calls))
    finally:
        stdin.close()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class RawHttp:
    """One keep-alive HTTP/1.1 connection on a blocking socket, for a sequential run: a
    request is bytes built beforehand (:meth:`request`), sent with one ``sendall``; the
    response's head is parsed, its body read by Content-Length or chunked encoding (an SSE
    reply ends with its stream), and none of it is taken on trust (:meth:`exchange` raises
    on a closed connection, a bad status line, a body that is neither)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n".encode()
        self.buffer = bytearray()

    def close(self) -> None:
        self.sock.close()

    def request(self, message: object, headers: dict[str, str]) -> bytes:
        """The bytes of a POST of ``message`` (JSON) with ``headers``."""
        body = json.dumps(message).encode()
        lines = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        return self.head + f"{lines}content-length: {len(body)}\r\n\r\n".encode() + body

    def _more(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def _line(self) -> bytes:
        while (end := self.buffer.find(b"\r\n")) < 0:
            self._more()
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 2]
        return line

    def _exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            self._more()
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def exchange(self, request: bytes) -> tuple[int, dict[str, str], bytes]:
        """Send ``request``; the response's status, headers (names lower-case) and body."""
        self.sock.sendall(request)
        status_line = self._line()
        if not status_line.startswith(b"HTTP/1.1 "):
            raise ConnectionError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
        headers: dict[str, str] = {}
        while line := self._line():
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            return int(status_line[9:12]), headers, self._exactly(int(headers["content-length"]))
        if headers.get("transfer-encoding", "").lower() != "chunked":
            raise ConnectionError(f"a response with neither Content-Length nor chunked body: {headers}")
        parts: list[bytes] = []
        while size := int(self._line().split(b";")[0], 16):
            parts.append(self._exactly(size))
            self._line()
        while self._line():  # (trailers, if any, up to the empty line)
            pass
        return int(status_line[9:12]), headers, b"".join(parts)


def http_answer(headers: dict[str, str], body: bytes, number: int | None) -> dict[str, Any] | None:
    """The JSON-RPC answer with id ``number`` in a response (JSON or an SSE stream)."""
    if not body:
        return None
    if headers.get("content-type", "").startswith("text/event-stream"):
        for raw in body.decode().splitlines():
            if raw.startswith("data:") and raw[5:].strip():
                message: dict[str, Any] = json.loads(raw[5:])
                if message.get("id") == number:
                    return message
        return None
    found: dict[str, Any] = json.loads(body)
    return found


#: What every POST of the run sends (a session or 2026-07-28's headers are added to it).
POST_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@contextlib.contextmanager
def http_server(script: Path) -> Iterator[tuple[subprocess.Popen[bytes], RawHttp]]:
    """``script`` serving HTTP (it prints ``PORT <n>``) and one keep-alive connection to it;
    the process is stopped on the way out."""
    process = subprocess.Popen(
        [sys.executable, str(script), "http"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=PEERS
    )
    assert process.stdout is not None
    try:
        ready = process.stdout.readline().decode()
        if not ready.startswith("PORT "):
            raise SystemExit(f"{script.name}: the HTTP server did not start ({ready!r})")
        connection = RawHttp(int(ready.split()[1]))
        try:
            yield process, connection
        finally:
            connection.close()
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def timed(process: subprocess.Popen[bytes], calls: int, run: Callable[[], None]) -> Run:
    """``run()`` (``calls`` calls) timed: calls per second, and CPU us per call of the
    load generator (this process) and of the server."""
    server_cpu = ServerCpu(process.pid)
    start, start_cpu = time.perf_counter(), time.process_time()
    run()
    return (calls / (time.perf_counter() - start), (time.process_time() - start_cpu) / calls * 1e6,
            server_cpu.per_call(calls))


def http_rate(script: Path, calls: int) -> Run:
    """Calls per second over Streamable HTTP (one keep-alive connection), and CPU us per
    call of each side."""
    with http_server(script) as (process, connection):
        status, headers, body = connection.exchange(connection.request(INITIALIZE, POST_HEADERS))
        reply, session = http_answer(headers, body, 0), headers.get("mcp-session-id")
        if status != 200 or reply is None or "result" not in reply or session is None:
            raise SystemExit(f"{script.name}: initialize over HTTP failed: {status} {reply}")
        session_headers = {**POST_HEADERS, "mcp-session-id": session, "mcp-protocol-version": VERSION}
        status, _, _ = connection.exchange(connection.request(INITIALIZED, session_headers))
        if status != 202:
            raise SystemExit(f"{script.name}: notifications/initialized got HTTP {status}")
        requests = [connection.request(call(n), session_headers) for n in range(1, calls + 1)]

        def run() -> None:
            exchange = connection.exchange
            for number, request in enumerate(requests, 1):
                status, headers, body = exchange(request)
                if status != 200:
                    raise SystemExit(f"{script.name}: tools/call {number} got HTTP {status}: {body[:160]!r}")
                checked(script, number, http_answer(headers, body, number) or {})

        return timed(process, calls, run)


def stateless_call(number: int) -> dict[str, Any]:
    """The ``number``-th ``tools/call`` request of the 2026-07-28 era (its own ``_meta``)."""
    request = call(number)
    request["params"]["_meta"] = STATELESS_META
    return request


def stateless_http_rate(script: Path, calls: int) -> Run:
    """Calls per second over Streamable HTTP at 2026-07-28 (one keep-alive connection, no
    session), and CPU us per call of each side; :class:`CannotServe` when an answer is not
    a 2026-07-28 result."""
    with http_server(script) as (process, connection):
        headers = {
            **POST_HEADERS,
            "mcp-protocol-version": STATELESS_VERSION, "mcp-method": "tools/call", "mcp-name": "echo",
        }
        requests = [connection.request(stateless_call(n), headers) for n in range(calls + 1)]

        def exchange(number: int) -> None:
            status, reply_headers, body = connection.exchange(requests[number])
            reply = http_answer(reply_headers, body, number) or {}
            result = reply.get("result")
            if status != 200 or not isinstance(result, dict) or result.get("resultType") != "complete":
                raise CannotServe(f"HTTP {status}: {json.dumps(reply)[:160]}")
            checked(script, number, reply)

        exchange(0)  # (one unmeasured call: the answer says whether it serves 2026-07-28)

        def run() -> None:
            for number in range(1, calls + 1):
                exchange(number)

        return timed(process, calls, run)


TRANSPORTS: dict[str, Callable[[Path, int], Run]] = {
    "stdio": stdio_rate,
    "Streamable HTTP": http_rate,
    f"HTTP {STATELESS_VERSION}": stateless_http_rate,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--loop", choices=("auto", "asyncio", "uvloop"), default="auto",
                        help="the event loop uvicorn runs every HTTP server on; auto (the default, as "
                             "uvicorn's): uvloop when it is installed, else asyncio")
    parser.add_argument("--quick", action="store_true", help="CI smoke run: 20 calls, 1 round")
    options = parser.parse_args()
    calls, rounds = (20, 1) if options.quick else (options.calls, options.rounds)
    loop = options.loop if options.loop != "auto" else "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    os.environ["BENCH_UVICORN_LOOP"] = loop  # (read by peers/_uvicorn.py in each server)
    print(f"{calls} sequential tools/call per run, {rounds} round(s), medians; HTTP servers on uvicorn's "
          f"{loop} loop; CPU us per call of the server (/proc: its threads' schedstat, or its stat's "
          "ticks when a thread ended) and of the load generator (process_time), the figures a busy machine "
          "disturbs least")
    print(f"{'transport':<16} {'server':<14} {'calls/s':>10} {'McpApp / it':>12} "
          f"{'server CPU us':>14} {'it / McpApp CPU':>16} {'client CPU us':>14}")
    verdicts: list[str] = []
    for transport, rate_of in TRANSPORTS.items():
        runs: dict[str, list[Run]] = {name: [] for name in SERVERS}
        refused: dict[str, str] = {}
        for _ in range(rounds):
            for name, script in SERVERS.items():
                if name in refused:
                    continue
                try:
                    runs[name].append(rate_of(script, calls))
                except CannotServe as reason:
                    refused[name] = str(reason)
        for needed in (OURS, FLOOR):
            if needed in refused:
                raise SystemExit(f"{SERVERS[needed].name}: {transport}: {refused[needed]}")
        rates = {name: statistics.median(run[0] for run in found) for name, found in runs.items() if found}
        cpus = {name: statistics.median(run[2] for run in found) for name, found in runs.items() if found}
        for name in SERVERS:
            if name in refused:
                print(f"{transport:<16} {name:<14} {'-':>10} {'-':>12}  cannot serve it: {refused[name]}")
                continue
            client_cpu = statistics.median(run[1] for run in runs[name])
            cpu_ratio = f"{cpus[name] / cpus[OURS]:.2f}x" if cpus[OURS] else "-"
            print(f"{transport:<16} {name:<14} {rates[name]:>10,.0f} {rates[OURS] / rates[name]:>11.2f}x "
                  f"{cpus[name]:>14,.0f} {cpu_ratio:>16} {client_cpu:>14,.0f}")
        verdicts += [verdict(transport, peer, rates, cpus, judged=not options.quick)
                     for peer in PEER_NAMES if peer in rates]
    print(f"goal: McpApp's server cost (CPU per call) at most 1/{GOAL:g} of each peer's; calls/s beside it, "
          f"with the ceiling the floor sets (a server with no MCP in it, on the same transport and client)")
    for text in verdicts:
        print(text)


def verdict(
    transport: str, peer: str, rates: dict[str, float], cpus: dict[str, float], *, judged: bool = True
) -> str:
    """One line: McpApp against ``peer`` on ``transport``, by server CPU and by calls/s,
    and the most calls/s a server could show over ``peer`` here (the floor's); ``judged``
    False (a ``--quick`` run's 20 calls) says the figures are too rough to judge."""
    cpu_ratio = cpus[peer] / cpus[OURS] if cpus[OURS] else float("inf")
    rate_ratio, ceiling = rates[OURS] / rates[peer], rates[FLOOR] / rates[peer]
    met = ("met" if cpu_ratio >= GOAL else "NOT met") if judged else "--quick: too few calls to judge"
    return (f"  {transport} vs {peer}: server CPU {cpu_ratio:.2f}x less ({met}); calls/s {rate_ratio:.2f}x "
            f"(ceiling {ceiling:.2f}x: the floor; McpApp {cpus[OURS] - cpus[FLOOR]:,.0f} us of CPU above it)")


if __name__ == "__main__":
    main()
