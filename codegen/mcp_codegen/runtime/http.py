"""Streamable HTTP server (handshake era): a plain ASGI app, served by uvicorn or any ASGI server.

One endpoint (``/mcp`` by default): POST carries one JSON-RPC message (or a 2025-03-26
batch); a request is answered with ``application/json`` when its handler sends nothing
before the result, and switches to ``text/event-stream`` as soon as it does (progress, log
messages, server-to-client requests). GET opens the session's stream for server-initiated
messages; DELETE ends the session. Checks run in the order the protocol checklist gives:
Origin/Host (403), authentication (401), size (413), content type (415), Accept (406),
JSON (400 with -32700), session (400/404), protocol-version header (400).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic_core import from_json

from .jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Engine,
    RpcError,
    encode_error,
    is_request_id,
)
from .server import ServerSession

logger = logging.getLogger("mcp_codegen.runtime")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
MAX_EVENTS_PER_STREAM = 10_000


@dataclass
class BearerAuth:
    """Bearer-token check: ``verify(token)`` returns a principal (any value) or None.

    ``resource_metadata`` is the RFC 9728 protected-resource metadata document served at
    ``/.well-known/oauth-protected-resource<endpoint path>``; its URL goes into the
    ``WWW-Authenticate`` challenge of every 401.
    """

    verify: Callable[[str], Awaitable[Any] | Any]
    resource_metadata: dict[str, Any]


class Stream:
    """One SSE stream's events. Every event is delivered live; the last
    ``MAX_EVENTS_PER_STREAM`` are also kept for replay (``Last-Event-ID``) while the
    session lives."""

    def __init__(self, stream_id: str) -> None:
        self.id = stream_id
        self.events: deque[bytes] = deque()
        self.first = 0  # the index of events[0]: older events were dropped from the window
        self.closed = False
        self._changed = asyncio.Event()

    @property
    def end(self) -> int:
        """The index the next event will get (how many were ever appended)."""
        return self.first + len(self.events)

    def append(self, data: bytes) -> None:
        self.events.append(data)
        if len(self.events) > MAX_EVENTS_PER_STREAM:
            self.events.popleft()
            self.first += 1
        self._changed.set()

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    def event_id(self, index: int) -> str:
        return f"{self.id}.{index}"

    async def follow(self, start: int = 0) -> AsyncIterator[tuple[str, bytes]]:
        """Yield ``(event id, data)`` from ``start`` on (or from the oldest event still kept),
        live, until the stream closes."""
        index = start
        while True:
            index = max(index, self.first)
            while index < self.end:
                yield self.event_id(index), self.events[index - self.first]
                index = max(index + 1, self.first)
            if self.closed:
                return
            self._changed.clear()
            if index < self.end or self.closed:
                continue
            await self._changed.wait()


_current_stream: contextvars.ContextVar[Stream | None] = contextvars.ContextVar(
    "mcp_current_stream", default=None
)


class SessionTransport:
    """Routes what the engine sends: to the POST stream of the request being served (a
    context variable, inherited by its handler task), else to the session's GET stream."""

    def __init__(self) -> None:
        self.standalone = Stream("g")
        self.streams: dict[str, Stream] = {"g": self.standalone}
        self._counter = 0

    def new_stream(self) -> Stream:
        self._counter += 1
        stream = Stream(f"p{self._counter}")
        self.streams[stream.id] = stream
        if len(self.streams) > 1000:  # forget the oldest closed streams
            for key in [k for k, s in self.streams.items() if s.closed][:100]:
                del self.streams[key]
        return stream

    async def receive(self) -> bytes | None:  # the engine's read loop is not used over HTTP
        return None

    async def send(self, data: bytes) -> None:
        stream = _current_stream.get() or self.standalone
        stream.append(data)


@dataclass
class HttpSession:
    """One MCP session: its server session, engine and streams."""

    id: str
    server: ServerSession
    engine: Engine
    transport: SessionTransport
    last_seen: float = field(default_factory=time.monotonic)
    get_connected: bool = False
    principal: Any = None  # who initialized it (with auth on): no one else may use it
    active: int = 0  # HTTP requests of this session being served right now

    def busy(self) -> bool:
        """Serving an HTTP request (an open GET stream included) or running a handler."""
        return self.active > 0 or bool(self.engine._incoming)


class HttpApp:
    """The ASGI application. Build it with :func:`http_app`."""

    def __init__(
        self,
        make_session: Callable[[], ServerSession],
        *,
        path: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body_bytes: int = 4 * 1024 * 1024,
        max_sessions: int = 1000,
        session_idle_timeout: float = 1800.0,
        auth: BearerAuth | None = None,
    ) -> None:
        self.make_session = make_session
        self.path = path.rstrip("/") or "/"
        self.allowed_hosts = set(allowed_hosts) if allowed_hosts is not None else None
        self.allowed_origins = set(allowed_origins) if allowed_origins is not None else None
        self.max_body_bytes = max_body_bytes
        self.max_sessions = max_sessions
        self.session_idle_timeout = session_idle_timeout
        self.auth = auth
        self.sessions: dict[str, HttpSession] = {}
        self.metadata_path = "/.well-known/oauth-protected-resource" + (
            "" if self.path == "/" else self.path
        )

    # -- ASGI entry -------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path = scope["path"].rstrip("/") or "/"
        if self.auth is not None and path in (self.metadata_path, "/.well-known/oauth-protected-resource"):
            await _respond_json(send, 200, self.auth.resource_metadata)
            return
        if path != self.path:
            await _respond(send, 404, b"Not Found", "text/plain")
            return
        problem = self._check_origin(headers)
        if problem:
            await _respond_error(send, 403, RpcError(INVALID_REQUEST, problem))
            return
        principal = None
        if self.auth is not None:
            principal = await self._authenticated(scope, headers, send)
            if principal is None:
                return
        method = scope["method"]
        if method == "POST":
            await self._post(headers, principal, receive, send)
        elif method == "GET":
            await self._get(headers, principal, receive, send)
        elif method == "DELETE":
            await self._delete(headers, principal, send)
        else:
            await _respond(
                send, 405, b"Method Not Allowed", "text/plain", [(b"allow", b"GET, POST, DELETE")]
            )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for session in list(self.sessions.values()):
                    self._end(session)
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- checks ---------------------------------------------------------------------------

    def _check_origin(self, headers: dict[str, str]) -> str | None:
        host = headers.get("host", "")
        hostname = urlsplit(f"//{host}").hostname or ""
        if self.allowed_hosts is not None:
            if host not in self.allowed_hosts and hostname not in self.allowed_hosts:
                return f"Forbidden: host {host!r} is not allowed"
        elif hostname not in LOOPBACK_HOSTS and f"[{hostname}]" not in LOOPBACK_HOSTS:
            return f"Forbidden: host {host!r} is not allowed (loopback only by default)"
        origin = headers.get("origin")
        if origin is None:
            return None
        if self.allowed_origins is not None:
            return None if origin in self.allowed_origins else f"Forbidden: origin {origin!r}"
        origin_host = urlsplit(origin).hostname or ""
        if origin_host not in LOOPBACK_HOSTS and f"[{origin_host}]" not in LOOPBACK_HOSTS:
            return f"Forbidden: origin {origin!r} is not allowed"
        return None

    async def _authenticated(self, scope: Scope, headers: dict[str, str], send: Send) -> Any:
        """The principal of a valid bearer token; else None, after answering 401."""
        assert self.auth is not None
        authorization = headers.get("authorization", "")
        token = authorization[7:].strip() if authorization.lower().startswith("bearer ") else ""
        principal = None
        if token:
            principal = self.auth.verify(token)
            if asyncio.iscoroutine(principal):
                principal = await principal
        if principal is not None:
            scope.setdefault("state", {})["mcp_principal"] = principal
            return principal
        host = headers.get("host", "localhost")
        scheme = scope.get("scheme", "http")
        challenge = f'Bearer resource_metadata="{scheme}://{host}{self.metadata_path}"'
        if token:
            challenge += ', error="invalid_token"'
        await _respond_error(
            send,
            401,
            RpcError(INVALID_REQUEST, "Unauthorized: a valid bearer token is required"),
            [(b"www-authenticate", challenge.encode("latin-1"))],
        )
        return None

    def _session_for(
        self, headers: dict[str, str], principal: Any
    ) -> tuple[HttpSession | None, int, str]:
        session_id = headers.get(SESSION_HEADER)
        if session_id is None:
            return None, 400, "Bad Request: missing Mcp-Session-Id header; initialize first"
        session = self.sessions.get(session_id)
        if session is not None and self._expired(session):
            self._end(session)
            session = None
        # A session is only usable with the credential that opened it; to anyone else it
        # does not exist.
        if session is None or session.principal != principal:
            return None, 404, "Not Found: unknown or expired session; initialize again"
        session.last_seen = time.monotonic()
        return session, 200, ""

    def _check_version(self, session: HttpSession, headers: dict[str, str]) -> str | None:
        version = headers.get(VERSION_HEADER)
        negotiated = session.server.package.version if session.server.package else None
        if version is None or version == negotiated:
            return None
        if version not in session.server.supported_versions:
            return f"Bad Request: unsupported MCP-Protocol-Version {version!r}"
        return f"Bad Request: MCP-Protocol-Version {version!r} differs from the negotiated {negotiated!r}"

    async def _open(
        self, headers: dict[str, str], principal: Any, send: Send
    ) -> HttpSession | None:
        """The request's session, with its version header checked; else None, answered."""
        session, status, problem = self._session_for(headers, principal)
        if session is None:
            await _respond_error(send, status, RpcError(INVALID_REQUEST, problem))
            return None
        problem_version = self._check_version(session, headers)
        if problem_version:
            await _respond_error(send, 400, RpcError(INVALID_REQUEST, problem_version))
            return None
        return session

    @contextlib.contextmanager
    def _serving(self, session: HttpSession) -> Iterator[None]:
        """Mark an HTTP request of ``session`` in flight: a session is idle only between them."""
        session.active += 1
        try:
            yield
        finally:
            session.active -= 1
            session.last_seen = time.monotonic()

    # -- POST -------------------------------------------------------------------------------

    async def _post(
        self, headers: dict[str, str], principal: Any, receive: Receive, send: Send
    ) -> None:
        declared = headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await _respond_error(send, 413, RpcError(INVALID_REQUEST, "Payload Too Large"))
            return
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            await _respond_error(
                send, 415, RpcError(INVALID_REQUEST, "Unsupported Media Type: use application/json")
            )
            return
        accept = headers.get("accept", "")
        if not _accepts(accept, "application/json") or not _accepts(accept, "text/event-stream"):
            await _respond_error(
                send,
                406,
                RpcError(
                    INVALID_REQUEST,
                    "Not Acceptable: Accept must list application/json and text/event-stream",
                ),
            )
            return
        body = await _read_body(receive, self.max_body_bytes)
        if body is None:
            await _respond_error(send, 413, RpcError(INVALID_REQUEST, "Payload Too Large"))
            return
        try:
            message = from_json(body, cache_strings="keys")
        except ValueError as exc:
            await _respond_error(send, 400, RpcError(PARSE_ERROR, f"Parse error: {exc}"))
            return
        if isinstance(message, dict) and message.get("method") == "initialize" and "id" in message:
            await self._initialize(message, principal, send)
            return
        session = await self._open(headers, principal, send)
        if session is None:
            return
        with self._serving(session):
            if isinstance(message, list):
                await self._post_batch(session, message, receive, send)
            elif not isinstance(message, dict):
                await _respond_error(
                    send, 400, RpcError(INVALID_REQUEST, "Invalid Request: not an object")
                )
            elif "method" in message and "id" in message:
                await self._run(session, message, send, receive)
            else:
                reply = await session.engine._route(message, in_batch=False)
                if reply is not None:
                    await _respond(send, 400, reply, "application/json")
                else:
                    await _respond(send, 202, b"", None)

    async def _initialize(self, message: dict[str, Any], principal: Any, send: Send) -> None:
        self._expire_idle()
        if len(self.sessions) >= self.max_sessions:
            await _respond_error(
                send, 503, RpcError(INVALID_REQUEST, "Service Unavailable: too many sessions")
            )
            return
        server = self.make_session()
        transport = SessionTransport()
        engine = Engine(
            transport,
            server,
            accept_batches=lambda: server.package is not None and server.package.accepts_batches,
        )
        server.engine = engine
        session = HttpSession(secrets.token_urlsafe(24), server, engine, transport)
        session.principal = principal
        reply = await self._run(session, message, None, None)
        if server.package is None:  # initialize failed: no session is kept
            await _respond(send, 200, reply or b"", "application/json")
            return
        self.sessions[session.id] = session
        await _respond(
            send, 200, reply or b"", "application/json", [(b"mcp-session-id", session.id.encode())]
        )

    async def _run(
        self,
        session: HttpSession,
        message: dict[str, Any],
        send: Send | None,
        receive: Receive | None,
    ) -> bytes | None:
        """Serve one request, answering on ``send`` (see :meth:`_reply`); without ``send``,
        wait for the handler and return its response."""
        request_id = message.get("id")
        stream = session.transport.new_stream()
        token = _current_stream.set(stream)
        try:
            immediate = await session.engine._route(message, in_batch=False)
        finally:
            _current_stream.reset(token)
        if immediate is not None:  # an error found before any handler ran
            stream.close()
            if send is not None:
                status = 400 if _error_code(immediate) == INVALID_REQUEST else 200
                await _respond(send, status, immediate, "application/json")
            return immediate
        incoming = session.engine._incoming.get(request_id) if is_request_id(request_id) else None  # type: ignore[arg-type]
        if send is None or receive is None:
            if incoming is not None:
                await asyncio.wait({incoming.task})
            stream.close()
            return stream.events[-1] if stream.events else None
        await self._reply(stream, incoming.task if incoming else None, send, receive, 200)
        return None

    async def _reply(
        self,
        stream: Stream,
        task: asyncio.Future[Any] | None,
        send: Send,
        receive: Receive,
        empty_status: int,
    ) -> None:
        """Answer with the one message ``task`` produced as JSON if it sent nothing before
        it; as soon as it sends more (progress, log messages, requests to the client),
        switch to SSE. ``task`` done with nothing sent: ``empty_status`` (202 for a batch of
        notifications; for a cancelled request, an SSE stream that ends without a response).
        """
        if task is not None and not task.done():
            waiter = asyncio.ensure_future(stream._changed.wait())
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            if not task.done() and stream.end == 1:
                await asyncio.sleep(0)  # the first event may be the result of a finishing task
        if task is None or task.done():
            stream.close()
            if stream.end == 1:
                await _respond(send, 200, stream.events[0], "application/json")
                return
            if stream.end == 0 and empty_status == 202:
                await _respond(send, 202, b"", None)
                return
        else:
            task.add_done_callback(lambda _: stream.close())
        await _stream_events(send, receive, stream, 0)

    async def _post_batch(
        self, session: HttpSession, batch: list[Any], receive: Receive, send: Send
    ) -> None:
        if session.server.package is None or not session.server.package.accepts_batches:
            await _respond_error(
                send, 400, RpcError(INVALID_REQUEST, "Invalid Request: batches are not allowed")
            )
            return
        if not batch:
            await _respond_error(send, 400, RpcError(INVALID_REQUEST, "Invalid Request: empty batch"))
            return
        stream = session.transport.new_stream()
        token = _current_stream.set(stream)
        try:  # the task, and the handlers it starts, send to this POST's stream
            task = asyncio.ensure_future(session.engine._receive_batch(batch))
        finally:
            _current_stream.reset(token)
        await self._reply(stream, task, send, receive, 202)

    # -- GET and DELETE ---------------------------------------------------------------------

    async def _get(
        self, headers: dict[str, str], principal: Any, receive: Receive, send: Send
    ) -> None:
        if not _accepts(headers.get("accept", ""), "text/event-stream"):
            await _respond_error(
                send, 406, RpcError(INVALID_REQUEST, "Not Acceptable: Accept must list text/event-stream")
            )
            return
        session = await self._open(headers, principal, send)
        if session is None:
            return
        standalone = session.transport.standalone
        stream, start = standalone, standalone.end
        last_event = headers.get("last-event-id")
        if last_event:
            stream_id, _, index = last_event.rpartition(".")
            found = session.transport.streams.get(stream_id)
            if found is None or not index.isdigit():
                await _respond_error(send, 404, RpcError(INVALID_REQUEST, "Not Found: unknown Last-Event-ID"))
                return
            stream, start = found, int(index) + 1
        if stream is standalone and session.get_connected:
            await _respond_error(
                send, 409, RpcError(INVALID_REQUEST, "Conflict: this session already has a GET stream")
            )
            return
        with self._serving(session):
            if stream is not standalone:
                await _stream_events(send, receive, stream, start)
                return
            session.get_connected = True
            try:
                await _stream_events(send, receive, stream, start)
            finally:
                session.get_connected = False

    async def _delete(self, headers: dict[str, str], principal: Any, send: Send) -> None:
        session = await self._open(headers, principal, send)
        if session is None:
            return
        self._end(session)
        await _respond(send, 200, b"", None)

    def _end(self, session: HttpSession) -> None:
        self.sessions.pop(session.id, None)
        session.transport.standalone.close()
        for incoming in list(session.engine._incoming.values()):
            incoming.cancelled = True
            incoming.task.cancel()

    def _expired(self, session: HttpSession) -> bool:
        """Idle (no request in flight, no open stream, no handler running) for too long."""
        idle_since = time.monotonic() - session.last_seen
        return idle_since > self.session_idle_timeout and not session.busy()

    def _expire_idle(self) -> None:
        for session in [s for s in self.sessions.values() if self._expired(s)]:
            self._end(session)


def http_app(handlers: object, *, path: str = "/mcp", **options: Any) -> HttpApp:
    """An ASGI app serving ``handlers`` over Streamable HTTP (one server session per client).

    Server options (``server_info``, ``instructions``, ``list_changed``, ``packages``) go to
    each session; HTTP options are those of :class:`HttpApp`.
    """
    session_keys = {"server_info", "instructions", "list_changed", "packages"}
    session_options = {k: v for k, v in options.items() if k in session_keys}
    app_options = {k: v for k, v in options.items() if k not in session_keys}
    return HttpApp(lambda: ServerSession(handlers, **session_options), path=path, **app_options)


# -- small ASGI helpers -----------------------------------------------------------------------


def _accepts(accept: str, media_type: str) -> bool:
    kinds = {part.split(";")[0].strip().lower() for part in accept.split(",")}
    major = media_type.split("/")[0]
    return bool(kinds & {media_type, f"{major}/*", "*/*"})


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: str | None,
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    headers = [(b"content-length", str(len(body)).encode())]
    if content_type:
        headers.append((b"content-type", content_type.encode()))
    headers.extend(extra_headers or [])
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _respond_json(send: Send, status: int, document: Any) -> None:
    await _respond(send, status, json.dumps(document).encode("utf-8"), "application/json")


async def _respond_error(
    send: Send,
    status: int,
    error: RpcError,
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await _respond(send, status, encode_error(None, error), "application/json", extra_headers)


def _error_code(reply: bytes) -> Any:
    """The error code of an encoded error response (None for anything else)."""
    try:
        message = from_json(reply)
    except ValueError:
        return None
    error = message.get("error") if isinstance(message, dict) else None
    return error.get("code") if isinstance(error, dict) else None


async def _disconnected(receive: Receive) -> None:
    """Return when the client hangs up (the request body has been read already)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def _pump(send: Send, stream: Stream, start: int) -> None:
    async for event_id, data in stream.follow(start):
        chunk = b"event: message\nid: " + event_id.encode() + b"\ndata: " + data + b"\n\n"
        await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _stream_events(send: Send, receive: Receive, stream: Stream, start: int) -> None:
    """Write ``stream`` as SSE from event ``start`` until it closes or the client hangs up.

    A hang-up ends only this HTTP response: the stream itself (and the handler feeding it)
    goes on, and its events stay replayable with ``Last-Event-ID``.
    """
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),
            ],
        }
    )
    pump = asyncio.ensure_future(_pump(send, stream, start))
    hangup = asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({pump, hangup}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pump, hangup):
            task.cancel()
        await asyncio.gather(pump, hangup, return_exceptions=True)
    if pump.cancelled() or pump.exception() is not None:
        return  # the client is gone (or the server's send failed): nothing more to write
    await send({"type": "http.response.body", "body": b"", "more_body": False})
