"""A small keep-alive HTTP/1.1 client on asyncio streams (no HTTP library needed).

MCP uses a handful of request shapes (POST of one JSON message, GET of an SSE stream,
DELETE); :class:`HttpClient` sends them on pooled connections and :class:`Response`
reads JSON or SSE bodies (``Content-Length`` or chunked). A request is sent once; only
an idempotent one whose reused connection broke before any byte of the response is
sent again, and a pooled connection the server closed is noticed before it is used."""

from __future__ import annotations

import asyncio
import contextlib
import select
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import urlsplit


class ServerUnreachable(ConnectionError):
    """No TCP connection to the server's host and port (nothing was sent)."""


#: Requests HTTP lets a client repeat (RFC 9110 9.2.2); never POST.
IDEMPOTENT = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})


def request_head(
    method: str, target: str, host: str, headers: Mapping[str, str], body: bytes
) -> bytes:
    """The head of an HTTP/1.1 request (``Content-Length`` for a body, and for every POST)."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if method in ("POST", "PUT") or body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class SseEvent(NamedTuple):
    """One server-sent event: its type (``message`` when unnamed), id, data and retry."""

    kind: str
    id: str | None
    data: bytes
    retry: int | None


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    reader: asyncio.StreamReader
    connection: _Connection
    chunked: bool = False
    length: int | None = None

    async def read(self) -> bytes:
        if self.chunked:
            parts = [chunk async for chunk in self._chunks()]
            return b"".join(parts)
        if self.length is not None:
            return await self.reader.readexactly(self.length)
        return await self.reader.read()

    async def _chunks(self) -> AsyncIterator[bytes]:
        while True:
            size_line = await self.reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                await self.reader.readuntil(b"\r\n")
                return
            data = await self.reader.readexactly(size)
            await self.reader.readexactly(2)
            yield data

    async def events(self) -> AsyncIterator[tuple[str | None, bytes, int | None]]:
        """SSE events as ``(id, data, retry)``; comments and empty data skipped."""
        async for event in self.sse_events():
            yield event.id, event.data, event.retry

    async def sse_events(self) -> AsyncIterator[SseEvent]:
        """The body read as SSE events; comments and events without data (or retry) are
        skipped. The last ``id`` seen carries over to later events, as the spec says."""
        buffer = b""
        source = self._chunks() if self.chunked else self._raw()
        event_id: str | None = None
        kind = ""
        data_lines: list[bytes] = []
        retry: int | None = None
        async for chunk in source:
            buffer += chunk
            while True:
                end = buffer.find(b"\n")
                if end < 0:
                    break
                line = buffer[:end].rstrip(b"\r")
                buffer = buffer[end + 1 :]
                if not line:
                    if data_lines or retry is not None:
                        yield SseEvent(kind or "message", event_id, b"\n".join(data_lines), retry)
                    kind, data_lines, retry = "", [], None
                    continue
                name, _, value = line.partition(b":")
                value = value[1:] if value.startswith(b" ") else value
                if name == b"data":
                    data_lines.append(value)
                elif name == b"event":
                    kind = value.decode("utf-8", "replace")
                elif name == b"id":
                    event_id = value.decode("utf-8", "replace")
                elif name == b"retry" and value.isdigit():
                    retry = int(value)

    async def _raw(self) -> AsyncIterator[bytes]:
        while chunk := await self.reader.read(65536):
            yield chunk


def _has_input(fileno: int) -> bool:
    """Whether a socket has something to read (or its peer closed it), without waiting."""
    if fileno < 1024 or not hasattr(select, "poll"):  # select's range (FD_SETSIZE)
        return bool(select.select([fileno], [], [], 0)[0])
    poller = select.poll()
    poller.register(fileno, select.POLLIN)
    return bool(poller.poll(0))


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        sock = writer.get_extra_info("socket")
        self.fileno: int = sock.fileno() if sock is not None else -1

    def idle_and_open(self) -> bool:
        """Whether a pooled keep-alive connection can carry a request: the server has not
        closed it (nor sent anything, which it may not do between responses). The socket
        itself is asked, so a close the event loop has not processed yet counts too."""
        if self.reader.at_eof() or self.writer.is_closing() or self.fileno < 0:
            return False
        try:
            return not _has_input(self.fileno)
        except OSError:  # closed meanwhile
            return False

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


@dataclass
class HttpClient:
    """Keep-alive connections to one origin."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    _idle: list[_Connection] = field(default_factory=list)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme != "http":
            raise ValueError(
                f"only http:// URLs are supported, not {self.url!r} (for an https server, "
                "put a TLS-terminating proxy on a local http:// address)"
            )
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.path = parts.path or "/"
        if parts.query:
            self.path += "?" + parts.query
        self.host_header = parts.netloc

    async def _connect(self, reuse: bool = True) -> tuple[_Connection, bool]:
        """A connection for one request, and whether it is a reused keep-alive one. Pooled
        connections the server has closed are dropped here, before anything is written."""
        while reuse and self._idle:
            connection = self._idle.pop()
            if connection.idle_and_open():
                return connection, True
            connection.close()
        return await self._open(), False

    async def _open(self) -> _Connection:
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port, limit=2**26)
        except OSError as error:
            raise ServerUnreachable(
                f"cannot connect to {self.url}: "
                f"{'connection refused' if isinstance(error, ConnectionRefusedError) else error} "
                "(is the server running, and listening on that host and port?)"
            ) from error
        return _Connection(reader, writer)

    async def connect_ahead(self) -> None:
        """Open a connection now and pool it for the next request: :class:`ServerUnreachable`
        at once if the server is gone, without sending anything."""
        self._idle.append(await self._open())

    def release(self, response: Response) -> None:
        if response.headers.get("connection", "").lower() == "close":
            response.connection.close()
        else:
            self._idle.append(response.connection)

    async def request(
        self, method: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> Response:
        """Send one request and read the head of its response (the body is left to read).

        Sent once. Only an idempotent request (:data:`IDEMPOTENT`) whose reused keep-alive
        connection broke before any byte of the response came back is sent again, once, on
        a new connection; a POST's broken connection raises, whatever the server received.
        """
        merged = {**self.headers, **headers} if headers else self.headers
        head = request_head(method, self.path, self.host_header, merged, body)
        reuse = True
        while True:
            connection, reused = await self._connect(reuse)
            try:
                connection.writer.write(head + body)
                await connection.writer.drain()
                return await read_response(connection)
            except (ConnectionError, asyncio.IncompleteReadError) as error:
                connection.close()
                answered = isinstance(error, asyncio.IncompleteReadError) and bool(error.partial)
                if not reused or answered or method not in IDEMPOTENT:
                    raise
                reuse = False  # once more, on a new connection
            except BaseException:  # cancelled while waiting for the answer: never reused
                connection.close()
                raise

    async def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()


async def read_response(connection: _Connection) -> Response:
    """Read a response's status line and headers (names lower-cased); the body is left
    on the connection for :class:`Response` to read."""
    head = await connection.reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers: dict[str, str] = {}
    for line in header_lines:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    length = headers.get("content-length")
    return Response(
        status,
        headers,
        connection.reader,
        connection,
        chunked=headers.get("transfer-encoding", "").lower() == "chunked",
        length=int(length) if length is not None else None,
    )
