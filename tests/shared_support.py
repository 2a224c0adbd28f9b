"""Real parts for the multi-worker tests: a redis-server, N single-process uvicorn workers,
and HAProxy balancing them round-robin with no affinity, each started on free loopback
ports with its files in a temporary folder, and stopped by the caller; and a small HTTP/1.1
client that reads SSE responses as they arrive."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

SERVERS = Path(__file__).resolve().parent / "servers"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s: {process.args!r}")


def stop(process: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


@dataclass
class Redis:
    """A redis-server of our own: no persistence, on a free port, restartable."""

    folder: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError("redis-server is not installed (Debian: apt-get install redis-server)")
        self.process = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.folder), "--protected-mode", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, self.process)

    def stop(self) -> None:
        stop(self.process)
        self.process = None


def start_workers(
    count: int, app: str, env: dict[str, str], *, app_dir: Path = SERVERS,
    unset: tuple[str, ...] = (),
) -> tuple[list[subprocess.Popen[bytes]], list[int]]:
    """``count`` single-process uvicorn servers of ``module:app``, each on its own port,
    with this environment plus ``env`` less ``unset``."""
    ports = [free_port() for _ in range(count)]
    environment = {name: value for name, value in os.environ.items() if name not in unset}
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "uvicorn", app, "--app-dir", str(app_dir), "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "warning", "--no-access-log"],
            env={**environment, **env}, stdout=subprocess.DEVNULL,
        )
        for port in ports
    ]
    try:
        for process, port in zip(processes, ports, strict=True):
            wait_port(port, process)
    except BaseException:
        for process in processes:
            stop(process)
        raise
    return processes, ports


HAPROXY_CONFIG = """\
global
    maxconn 4096
defaults
    mode http
    option http-no-delay
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    timeout tunnel 1h
frontend mcp
    bind 127.0.0.1:{port}
    default_backend workers
backend workers
    balance roundrobin
{servers}
"""


def start_haproxy(folder: Path, backends: list[int]) -> tuple[subprocess.Popen[bytes], int]:
    """HAProxy on a free port, balancing every request round-robin over ``backends``
    (no stickiness of any kind)."""
    binary = shutil.which("haproxy")
    if binary is None:
        raise RuntimeError("haproxy is not installed (Debian: apt-get install haproxy)")
    port = free_port()
    servers = "\n".join(f"    server w{i} 127.0.0.1:{p}" for i, p in enumerate(backends))
    config = folder / "haproxy.cfg"
    config.write_text(HAPROXY_CONFIG.format(port=port, servers=servers))
    process = subprocess.Popen([binary, "-f", str(config), "-db"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    wait_port(port, process)
    return process, port


# -- a small HTTP/1.1 client (no third-party HTTP library in the tests' dependencies) ------------


@dataclass
class Reply:
    status_code: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)


async def open_request(
    url: str, method: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int, dict[str, str]]:
    """Send one request on a new connection (``Connection: close``); the reader is left at
    the start of the response body."""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 80
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 22)
    data = json.dumps(body).encode() if body is not None else b""
    lines = [f"{method} {parts.path or '/'} HTTP/1.1", f"host: {host}:{port}", "connection: close",
             "accept: application/json, text/event-stream", f"content-length: {len(data)}"]
    if body is not None:
        lines.append("content-type: application/json")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
    status = await reader.readline()
    if not status:
        writer.close()
        raise ConnectionError(f"{url}: the server closed the connection")
    reply_headers: dict[str, str] = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        reply_headers[name.strip().lower()] = value.strip()
    return reader, writer, int(status.split()[1]), reply_headers


async def body_chunks(reader: asyncio.StreamReader, headers: dict[str, str]) -> AsyncIterator[bytes]:
    """The response body as it arrives (Content-Length, chunked, or until the end)."""
    if "content-length" in headers:
        yield await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding") == "chunked":
        while size := int((await reader.readline()).split(b";")[0].strip() or b"0", 16):
            yield await reader.readexactly(size)
            await reader.readline()
    else:
        while chunk := await reader.read(65536):
            yield chunk


async def request(url: str, method: str, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    reader, writer, status, reply_headers = await open_request(url, method, body, headers)
    try:
        return Reply(status, reply_headers, b"".join([chunk async for chunk in body_chunks(reader, reply_headers)]))
    finally:
        writer.close()


async def sse_lines(reader: asyncio.StreamReader, headers: dict[str, str]) -> AsyncIterator[str]:
    """The lines of an SSE response body, as they arrive."""
    pending = b""
    async for chunk in body_chunks(reader, headers):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.rstrip(b"\r").decode("utf-8")
