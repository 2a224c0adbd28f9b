"""The raw HTTP/1.1 load generator the HTTP benchmarks share (``bench_scaleout.py``,
``bench_concurrency.py``): server processes that print ``PORT <n>``, their CPU time from
/proc, and a small keep-alive JSON-RPC client that checks every reply (Content-Length or
chunked bodies, so JSON and SSE replies alike) with the ``tools/call`` bodies of both eras.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

MODERN, HANDSHAKE = "2026-07-28", "2025-11-25"
TICKS = os.sysconf("SC_CLK_TCK")
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


# -- processes ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process so far (Linux /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def cpu_ns(pid: int) -> int:
    """CPU nanoseconds every thread of a process has run so far (Linux
    /proc/<pid>/task/*/schedstat): finer than :func:`cpu_seconds`' clock ticks (10 ms), so
    a run of a few hundred calls still gives CPU per call. Threads that have ended are not
    counted; servers here run one event-loop thread."""
    total = 0
    for task in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(task.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total


def descendants(pid: int) -> list[int]:
    """The process ids of ``pid``'s children, theirs, and so on (from /proc/*/stat)."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def tree_cpu_ns(pid: int) -> int:
    """:func:`cpu_ns` of a process and all its descendants (a server whose workers are
    child processes, such as granian's)."""
    return sum(cpu_ns(each) for each in (pid, *descendants(pid)))


def wait_port(port: int, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_server(command: list[str], env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    process = subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.PIPE)
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith(b"PORT "):
        stop(process)
        raise RuntimeError(f"{command} did not start: {line!r}")
    return process, int(line.split()[1])


# -- a small HTTP/1.1 client ------------------------------------------------------------------


class Connection:
    """One keep-alive connection; replies with Content-Length or chunked bodies."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, port: int) -> None:
        self.reader, self.writer = reader, writer
        self.host = f"host: 127.0.0.1:{port}"

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 20)
        return cls(reader, writer, port)

    def close(self) -> None:
        self.writer.close()

    def send(self, body: bytes, headers: dict[str, str], method: str = "POST") -> None:
        head = [f"{method} /mcp HTTP/1.1", self.host, "content-type: application/json",
                "accept: application/json, text/event-stream", f"content-length: {len(body)}"]
        head += [f"{name}: {value}" for name, value in headers.items()]
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)

    async def head(self) -> tuple[int, dict[str, str]]:
        status = await self.reader.readline()
        if not status:
            raise ConnectionError("the server closed the connection")
        headers = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(status.split()[1]), headers

    async def body(self, headers: dict[str, str]) -> bytes:
        if "content-length" in headers:
            return await self.reader.readexactly(int(headers["content-length"]))
        if headers.get("transfer-encoding") == "chunked":
            parts: list[bytes] = []
            while True:
                size = int((await self.reader.readline()).strip().split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    return b"".join(parts)
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
        return b""

    async def request(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        self.send(body, headers)
        status, reply_headers = await self.head()
        return status, reply_headers, await self.body(reply_headers)


def call_body(era: str, request_id: int = 1) -> bytes:
    params: dict[str, Any] = {"name": "echo", "arguments": {"text": "hello"}}
    if era == MODERN:
        params["_meta"] = META
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


MODERN_HEADERS = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "echo"}
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}).encode()
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


def check_reply(status: int, body: bytes) -> None:
    if status != 200 or b'"hello"' not in body:
        raise RuntimeError(f"unexpected reply: {status} {body[:200]!r}")


async def start_session(connection: Connection) -> dict[str, str]:
    status, headers, body = await connection.request(INITIALIZE, {})
    if status != 200 or "mcp-session-id" not in headers:
        raise RuntimeError(f"initialize failed: {status} {body[:200]!r}")
    session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": HANDSHAKE}
    status, _, _ = await connection.request(INITIALIZED, session)
    if status != 202:
        raise RuntimeError(f"notifications/initialized: {status}")
    return session
