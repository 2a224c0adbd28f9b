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
import ipaddress
import logging
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic_core import from_json

from .events import Event, EventStore, MemoryEventStore
from .jsonrpc import (
    INVALID_REQUEST,
    Engine,
    RpcError,
    is_request_id,
    parse_error,
    quoted,
)
from .asgi import (
    SSE_HEADERS,
    Receive,
    Scope,
    Send,
    accepts,
    disconnected,
    error_code,
    read_limited_body,
    refused_json_post,
    respond,
    respond_error,
    respond_json,
)
from .http_modern import ModernEndpoint, claims
from .http_sse import SseEndpoint, SsePaths
from .server import ServerSession

logger = logging.getLogger("mcp_codegen.runtime")

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
#: An open stream's window of recent events (for live delivery and quick resumption).
MAX_EVENTS_PER_STREAM = 10_000
MAX_WINDOW_BYTES = 1024 * 1024
#: How long a stream written in full stays replayable (see ``SessionTransport.delivered``).
REPLAY_GRACE_SECONDS = 10.0


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
    """One stream of a session: a request's reply or the GET stream. Every event is
    delivered live; once the stream is SSE (``stored``: from the start for the GET stream,
    from :meth:`store_events` on for a request's reply, which stays plain JSON if it can),
    its events also go to the session's :class:`EventStore` for resumption. A window of
    the latest events (at most ``MAX_EVENTS_PER_STREAM`` and ``MAX_WINDOW_BYTES``, the
    newest always) is kept here while the stream is open, so following it live never reads
    the store; a reader falling further behind skips what left the window.

    Events are numbered from 1; the event id on the wire is ``<stream id>.<index>``, and
    ``<stream id>.0`` (the priming event of 2025-11-25) means "before the first event".
    """

    def __init__(
        self,
        stream_id: str,
        store: EventStore,
        session_id: str,
        *,
        polling: bool = False,
        stored: bool = False,
    ) -> None:
        self.id = stream_id
        self.store = store
        self.session_id = session_id
        self.polling = polling  # 2025-11-25+: the client resumes a dropped POST stream
        self.stored = stored  # its events go to the store (it is, or will be, SSE)
        self.events: deque[bytes] = deque()
        self.size = 0  # bytes in ``events``
        self.first = 1  # the index of events[0]: older events were dropped from the window
        self.closed = False
        self.drops = 0  # how many times the server dropped the connections following it
        self._changed = asyncio.Event()

    @property
    def end(self) -> int:
        """The index the next event will get."""
        return self.first + len(self.events)

    def append(self, data: bytes) -> Awaitable[None] | None:
        """Add an event: live at once; what the store returns (an awaitable when it does
        I/O) is for the sender to await."""
        index = self.end
        events = self.events
        events.append(data)
        self.size += len(data)
        while len(events) > 1 and (
            len(events) > MAX_EVENTS_PER_STREAM or self.size > MAX_WINDOW_BYTES
        ):
            self.size -= len(events.popleft())
            self.first += 1
        self._changed.set()
        if self.stored:
            return self.store.append(self.session_id, self.id, index, data)
        return None

    async def store_events(self) -> None:
        """The stream is SSE from now on (replayable): the store gets what the window holds
        and every event after it."""
        self.stored = True
        pending = [
            self.store.append(self.session_id, self.id, self.first + offset, data)
            for offset, data in enumerate(self.events)
        ]
        for awaitable in pending:
            if awaitable is not None:
                await awaitable

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    def drop_connections(self) -> None:
        """End the HTTP responses following this stream now (after a ``retry`` field);
        the stream goes on, and the client resumes it with GET + ``Last-Event-ID``."""
        self.drops += 1
        self._changed.set()

    def event_id(self, index: int) -> str:
        return f"{self.id}.{index}"

    def follow(self, start: int = 1, drops: int | None = None) -> AsyncIterator[tuple[str, bytes]]:
        """``(event id, data)`` from ``start`` on (or from the oldest event still kept),
        live, until the stream closes, or until its connections are dropped after the
        ``drops``-th time (default: from now on); then ``("", b"")`` comes last."""
        return self._follow(start, self.drops if drops is None else drops)

    async def _follow(self, start: int, drops: int) -> AsyncIterator[tuple[str, bytes]]:
        index = start
        while True:
            index = max(index, self.first)
            while index < self.end:
                yield self.event_id(index), self.events[index - self.first]
                index = max(index + 1, self.first)
            if self.closed:
                return
            if self.drops != drops:
                yield "", b""
                return
            self._changed.clear()
            if index < self.end or self.closed or self.drops != drops:
                continue
            await self._changed.wait()


_current_stream: contextvars.ContextVar[Stream | None] = contextvars.ContextVar(
    "mcp_current_stream", default=None
)


def close_sse_stream() -> bool:
    """From a handler: drop the connection of the SSE stream answering the current request
    (2025-11-25 SSE polling), after sending a ``retry`` field. The handler goes on; the
    client reconnects with GET + ``Last-Event-ID`` and gets the rest, the response
    included. False (nothing done) outside an HTTP request or for older sessions."""
    stream = _current_stream.get()
    if stream is None or not stream.polling or stream.closed:
        return False
    stream.drop_connections()
    return True


class SessionTransport:
    """Routes what the engine sends: to the POST stream of the request being served (a
    context variable, inherited by its handler task) while that stream is open, else to
    the session's GET stream. A stream of another session is never written to, whatever
    context the sender runs in.

    Stream ids are ``<tag>p<n>`` (POST replies) and ``<tag>g`` (the GET stream), where the
    tag is random per session: event ids are unique over the session's streams, name their
    stream, and an id from another session never matches one of ours.
    """

    def __init__(
        self,
        session_id: str,
        store: EventStore | None = None,
        replay_grace: float = REPLAY_GRACE_SECONDS,
    ) -> None:
        self.session_id = session_id
        self.store: EventStore = store if store is not None else MemoryEventStore()
        self.replay_grace = replay_grace
        # Streams written in full, with when they stop being replayable (oldest first).
        self._delivered: deque[tuple[float, str]] = deque()
        self.tag = secrets.token_hex(4)
        self.polling = False  # set once the session has negotiated 2025-11-25 or later
        self.standalone = Stream(self.tag + "g", self.store, session_id, stored=True)
        self.streams: dict[str, Stream] = {self.standalone.id: self.standalone}  # open ones
        self._counter = 0

    def new_stream(self) -> Stream:
        self._counter += 1
        stream = Stream(
            f"{self.tag}p{self._counter}", self.store, self.session_id, polling=self.polling
        )
        self.streams[stream.id] = stream
        return stream

    def close_stream(self, stream: Stream) -> None:
        """The stream is complete: from now on it is resumed from the store only."""
        stream.close()
        self.streams.pop(stream.id, None)

    async def delivered(self, stream_id: str) -> None:
        """A complete stream was written in full to a live connection. The connection may
        still break before the client has read its end (the kernel took the bytes, nothing
        more is known), so it stays replayable for ``replay_grace`` seconds, then the store
        forgets it (checked as later streams are delivered; all of it at session end).
        Memory stays bounded meanwhile by the store's per-session limits."""
        now = time.monotonic()
        self._delivered.append((now + self.replay_grace, stream_id))
        delivered = self._delivered
        while delivered and delivered[0][0] <= now:
            await _settle(self.store.forget(self.session_id, delivered.popleft()[1]))

    async def resume(self, last_event_id: str) -> tuple[Stream | None, AsyncIterator[tuple[str, bytes]]] | None:
        """What follows ``last_event_id`` on its own stream (the stream, if still open, and
        the events); None for an id that names no stream of this session."""
        stream_id, _, index = last_event_id.rpartition(".")
        if not index.isdigit() or not stream_id.startswith(self.tag):
            return None
        after = int(index)
        stream = self.streams.get(stream_id)
        if stream is not None and after + 1 >= stream.first:
            return stream, stream.follow(after + 1)  # all of it is still in memory
        end = stream.end if stream is not None else None
        history = await self.store.replay(self.session_id, stream_id, after)
        if history is None and stream is None:
            return None
        return stream, _chain(stream_id, history or [], stream, end)

    async def receive(self) -> bytes | None:  # the engine's read loop is not used over HTTP
        return None

    async def send(self, data: bytes) -> None:
        stream = _current_stream.get()
        if stream is None or stream.closed or stream.session_id != self.session_id:
            # Not sent by a request of this session that is still open (a task that outlived
            # its request, or work another session's request started): the GET stream.
            stream = self.standalone
            if stream.closed:  # the session has ended
                return
        pending = stream.append(data)
        if pending is not None:
            await pending


async def _chain(
    stream_id: str, history: list[Event], stream: Stream | None, end: int | None
) -> AsyncIterator[tuple[str, bytes]]:
    """Stored events, then (for a stream still open) the live ones from ``end`` on."""
    for index, data in history:
        if end is None or index < end:
            yield f"{stream_id}.{index}", data
    if stream is not None and end is not None:
        async for event in stream.follow(end):
            yield event


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
    owner: Any = None  # whose sessions it counts with against the per-client cap
    active: int = 0  # HTTP requests of this session being served right now

    def busy(self) -> bool:
        """Serving an HTTP request (an open GET stream included) or running a handler."""
        return self.active > 0 or bool(self.engine._incoming)


class HttpApp:
    """The ASGI application. Build it with :func:`http_app`.

    Session limits: each client (the principal with ``auth``, else the client's address)
    holds at most ``max_sessions_per_client`` sessions; a new one ends the client's least
    recently used idle session, or is refused with 429 when all of them are in use. When
    the server holds ``max_sessions``, a new session ends the least recently used idle
    session of anyone, or is refused with 503 when every session is in use. A session is
    idle when no request of it is in flight, no stream of it is open and no handler of it
    runs; an idle session also ends after ``session_idle_timeout`` seconds.

    ``legacy_sse``: True (or :class:`~mcp_codegen.runtime.http_sse.SsePaths`) also serves
    the deprecated 2024-11-05 HTTP+SSE transport beside the MCP endpoint (GET ``/sse``,
    POST ``/messages/``; see ``http_sse``), with the same Origin and credential checks.
    """

    def __init__(
        self,
        make_session: Callable[[], ServerSession] | None,
        *,
        path: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body_bytes: int = 4 * 1024 * 1024,
        max_sessions: int = 1000,
        max_sessions_per_client: int = 100,
        session_idle_timeout: float = 1800.0,
        auth: BearerAuth | None = None,
        event_store: EventStore | None = None,
        retry_ms: int = 1000,
        replay_grace: float = REPLAY_GRACE_SECONDS,
        modern: ModernEndpoint | None = None,
        legacy_versions: Iterable[str] = (),
        legacy_sse: bool | SsePaths = False,
    ) -> None:
        if make_session is None and modern is None:
            raise ValueError("HttpApp needs handshake-era sessions, a stateless endpoint, or both")
        for name, limit in (("max_sessions", max_sessions), ("max_sessions_per_client", max_sessions_per_client)):
            if limit < 1:
                raise ValueError(f"{name} must be at least 1 (got {limit})")
        self.make_session = make_session
        # 2026-07-28 requests (no session) go to ``modern``; the era routing needs to know
        # which version headers name a handshake-era revision.
        self.modern = modern
        self.legacy_versions = list(legacy_versions)
        # Session ids start with this process's tag: a worker can tell an id minted by
        # another worker (no session affinity) from one that expired.
        self.worker_tag = secrets.token_hex(3)
        # Where SSE events are kept for resumption; one store serves every session.
        self.event_store: EventStore = event_store if event_store is not None else MemoryEventStore()
        self.retry_ms = retry_ms  # the SSE ``retry`` field: how long a client waits to resume
        self.replay_grace = replay_grace  # how long a stream written in full stays replayable
        self.path = path.rstrip("/") or "/"
        self.allowed_hosts = set(allowed_hosts) if allowed_hosts is not None else None
        self.allowed_origins = set(allowed_origins) if allowed_origins is not None else None
        self.max_body_bytes = max_body_bytes
        self.max_sessions = max_sessions
        self.max_sessions_per_client = max_sessions_per_client
        self.session_idle_timeout = session_idle_timeout
        self.auth = auth
        self.sessions: dict[str, HttpSession] = {}
        self.metadata_path = "/.well-known/oauth-protected-resource" + (
            "" if self.path == "/" else self.path
        )
        paths = legacy_sse if isinstance(legacy_sse, SsePaths) else None
        self.legacy_sse = SseEndpoint(self, paths) if legacy_sse else None

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
            await respond_json(send, 200, self.auth.resource_metadata)
            return
        sse = self.legacy_sse if self.legacy_sse is not None and self.legacy_sse.serves(path) else None
        if path != self.path and sse is None:
            await respond(send, 404, b"Not Found", "text/plain")
            return
        problem = self._check_origin(headers)
        if problem:
            await respond_error(send, 403, RpcError(INVALID_REQUEST, problem))
            return
        principal = None
        if self.auth is not None:
            principal = await self._authenticated(scope, headers, send)
            if principal is None:
                return
        if sse is not None:  # the deprecated HTTP+SSE endpoints
            await sse.handle(scope, headers, principal, receive, send)
            return
        method = scope["method"]
        if method in ("GET", "DELETE") and (
            self.make_session is None
            or (self.modern is not None and SESSION_HEADER not in headers)
        ):
            # 2026-07-28 has no GET stream and no session to delete (H-26, H-52)
            await respond(send, 405, b"Method Not Allowed", "text/plain", [(b"allow", b"POST")])
            return
        if method == "POST":
            await self._post(scope, headers, principal, receive, send)
        elif method == "GET":
            await self._get(headers, principal, receive, send)
        elif method == "DELETE":
            await self._delete(headers, principal, send)
        else:
            await respond(
                send, 405, b"Method Not Allowed", "text/plain", [(b"allow", b"GET, POST, DELETE")]
            )

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self.modern is not None:
                    self.modern.server.close()
                for session in list(self.sessions.values()):
                    self._end(session)
                if self.legacy_sse is not None:
                    self.legacy_sse.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- checks ---------------------------------------------------------------------------

    def _check_origin(self, headers: dict[str, str]) -> str | None:
        host = headers.get("host", "")
        hostname = urlsplit(f"//{host}").hostname or ""
        if self.allowed_hosts is not None:
            if host not in self.allowed_hosts and hostname not in self.allowed_hosts:
                return f"Forbidden: host {quoted(host)} is not allowed"
        elif hostname not in LOOPBACK_HOSTS and f"[{hostname}]" not in LOOPBACK_HOSTS:
            return f"Forbidden: host {quoted(host)} is not allowed (loopback only by default)"
        origin = headers.get("origin")
        if origin is None:
            return None
        if self.allowed_origins is not None:
            return None if origin in self.allowed_origins else f"Forbidden: origin {quoted(origin)}"
        origin_host = urlsplit(origin).hostname or ""
        if origin_host not in LOOPBACK_HOSTS and f"[{origin_host}]" not in LOOPBACK_HOSTS:
            return f"Forbidden: origin {quoted(origin)} is not allowed"
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
        await respond_error(
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
        if session is None and not session_id.startswith(self.worker_tag + "-") and "-" in session_id:
            logger.warning(
                "session %s was created by another worker process: route each Mcp-Session-Id "
                "to the worker that created it (session affinity), or serve 2026-07-28 statelessly",
                session_id[:8],
            )
            return None, 404, (
                "Not Found: this session belongs to another server process; the deployment needs "
                "session affinity on Mcp-Session-Id (or use protocol 2026-07-28, which has no "
                "sessions); initialize again"
            )
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
            return f"Bad Request: unsupported MCP-Protocol-Version {quoted(version)}"
        return f"Bad Request: MCP-Protocol-Version {quoted(version)} differs from the negotiated {quoted(negotiated)}"

    async def _open(
        self, headers: dict[str, str], principal: Any, send: Send
    ) -> HttpSession | None:
        """The request's session, with its version header checked; else None, answered."""
        session, status, problem = self._session_for(headers, principal)
        if session is None:
            await respond_error(send, status, RpcError(INVALID_REQUEST, problem))
            return None
        problem_version = self._check_version(session, headers)
        if problem_version:
            await respond_error(send, 400, RpcError(INVALID_REQUEST, problem_version))
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
        self, scope: Scope, headers: dict[str, str], principal: Any, receive: Receive, send: Send
    ) -> None:
        if await refused_json_post(headers, send, self.max_body_bytes):
            return
        accept = headers.get("accept", "")
        if not accepts(accept, "application/json") or not accepts(accept, "text/event-stream"):
            await respond_error(
                send,
                406,
                RpcError(
                    INVALID_REQUEST,
                    "Not Acceptable: Accept must list application/json and text/event-stream",
                ),
            )
            return
        body = await read_limited_body(receive, send, self.max_body_bytes)
        if body is None:
            return
        try:
            message = from_json(body, allow_inf_nan=False, cache_strings="keys")
        except ValueError as exc:
            await respond_error(send, 400, parse_error(body, exc))
            return
        if self.modern is not None and (
            self.make_session is None
            or claims(headers, message, self.legacy_versions, self.modern.versions)
        ):
            await self.modern.post(headers, message, principal, receive, send)
            return
        if isinstance(message, dict) and message.get("method") == "initialize" and "id" in message:
            await self._initialize(message, principal, self.owner(scope, principal), send)
            return
        session = await self._open(headers, principal, send)
        if session is None:
            return
        with self._serving(session):
            if isinstance(message, list):
                await self._post_batch(session, message, receive, send)
            elif not isinstance(message, dict):
                await respond_error(
                    send, 400, RpcError(INVALID_REQUEST, "Invalid Request: not an object")
                )
            elif "method" in message and "id" in message:
                await self._run(session, message, send, receive)
            else:
                reply = await session.engine._route(message, in_batch=False)
                if reply is not None:
                    await respond(send, 400, reply, "application/json")
                else:
                    await respond(send, 202, b"", None)

    async def _initialize(
        self, message: dict[str, Any], principal: Any, owner: Any, send: Send
    ) -> None:
        refused = self._make_room(owner)
        if refused is not None:
            await respond_error(send, refused[0], RpcError(INVALID_REQUEST, refused[1]))
            return
        assert self.make_session is not None
        server = self.make_session()
        session_id = f"{self.worker_tag}-{secrets.token_urlsafe(24)}"
        transport = SessionTransport(session_id, self.event_store, self.replay_grace)
        engine = Engine(
            transport,
            server,
            accept_batches=lambda: server.package is not None and server.package.accepts_batches,
        )
        server.engine = engine
        session = HttpSession(session_id, server, engine, transport)
        session.principal = principal
        session.owner = owner
        reply = await self._run(session, message, None, None)
        if server.package is None:  # initialize failed: no session is kept
            await _settle(self.event_store.forget(session_id))
            await respond(send, 200, reply or b"", "application/json")
            return
        # 2025-11-25 SSE polling: prime POST streams; the client resumes dropped ones.
        transport.polling = server.package.version >= "2025-11-25"
        self.sessions[session.id] = session
        await respond(
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
            session.transport.close_stream(stream)
            if send is not None:
                status = 400 if error_code(immediate) == INVALID_REQUEST else 200
                await respond(send, status, immediate, "application/json")
            return immediate
        incoming = session.engine._incoming.get(request_id) if is_request_id(request_id) else None  # type: ignore[arg-type]
        if send is None or receive is None:
            if incoming is not None:
                await asyncio.wait({incoming.task})
            session.transport.close_stream(stream)
            return stream.events[-1] if stream.events else None
        await self._reply(session, stream, incoming.task if incoming else None, send, receive, 200)
        return None

    async def _reply(
        self,
        session: HttpSession,
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
            if not task.done() and stream.end == 2:
                await asyncio.sleep(0)  # the first event may be the result of a finishing task
        transport = session.transport
        if task is None or task.done():
            transport.close_stream(stream)
            if stream.end == 2:
                await respond(send, 200, stream.events[0], "application/json")
                return
            if stream.end == 1 and empty_status == 202:
                await respond(send, 202, b"", None)
                return
        else:
            task.add_done_callback(lambda _: transport.close_stream(stream))
        await stream.store_events()  # an SSE stream: replayable from now on
        # 2025-11-25: open with an id-bearing empty event, so even a connection lost before
        # the first message can be resumed (older clients choke on empty data: none for them).
        priming = _event(stream.event_id(0), b"", self.retry_ms) if stream.polling else b""
        events = stream.follow(1, drops=0)  # a drop asked for before this point counts too
        written = await _stream_events(send, receive, events, priming, self.retry_ms)
        if written is not None and stream.closed and stream.end > 1 and written == stream.event_id(stream.end - 1):
            await transport.delivered(stream.id)

    async def _post_batch(
        self, session: HttpSession, batch: list[Any], receive: Receive, send: Send
    ) -> None:
        if session.server.package is None or not session.server.package.accepts_batches:
            await respond_error(
                send, 400, RpcError(INVALID_REQUEST, "Invalid Request: batches are not allowed")
            )
            return
        if not batch:
            await respond_error(send, 400, RpcError(INVALID_REQUEST, "Invalid Request: empty batch"))
            return
        stream = session.transport.new_stream()
        token = _current_stream.set(stream)
        try:  # the task, and the handlers it starts, send to this POST's stream
            task = asyncio.ensure_future(session.engine._receive_batch(batch))
        finally:
            _current_stream.reset(token)
        await self._reply(session, stream, task, send, receive, 202)

    # -- GET and DELETE ---------------------------------------------------------------------

    async def _get(
        self, headers: dict[str, str], principal: Any, receive: Receive, send: Send
    ) -> None:
        if not accepts(headers.get("accept", ""), "text/event-stream"):
            await respond_error(
                send, 406, RpcError(INVALID_REQUEST, "Not Acceptable: Accept must list text/event-stream")
            )
            return
        session = await self._open(headers, principal, send)
        if session is None:
            return
        standalone = session.transport.standalone
        stream: Stream | None = standalone
        events = standalone.follow(standalone.end)
        last_event = headers.get("last-event-id")
        if last_event:
            found = await session.transport.resume(last_event)
            if found is None:
                await respond_error(send, 404, RpcError(INVALID_REQUEST, "Not Found: unknown Last-Event-ID"))
                return
            stream, events = found
        if stream is standalone and session.get_connected:
            await respond_error(
                send, 409, RpcError(INVALID_REQUEST, "Conflict: this session already has a GET stream")
            )
            return
        with self._serving(session):
            if stream is not standalone:
                assert last_event
                written = await _stream_events(send, receive, events, b"", self.retry_ms)
                # Delivered in full: the stream had ended (and everything the store kept of
                # it went out), or it has ended since and its last event went out.
                if written is not None and (
                    stream is None
                    or (stream.closed and (written or last_event) == stream.event_id(stream.end - 1))
                ):
                    await session.transport.delivered(last_event.rpartition(".")[0])
                return
            session.get_connected = True
            try:
                await _stream_events(send, receive, events, b"", self.retry_ms)
            finally:
                session.get_connected = False

    async def _delete(self, headers: dict[str, str], principal: Any, send: Send) -> None:
        session = await self._open(headers, principal, send)
        if session is None:
            return
        self._end(session)
        await respond(send, 200, b"", None)

    def _end(self, session: HttpSession) -> None:
        self.sessions.pop(session.id, None)
        session.server.close()  # no more server-wide change notifications
        session.transport.standalone.close()
        pending = self.event_store.forget(session.id)
        if pending is not None:
            _background(pending)
        for incoming in list(session.engine._incoming.values()):
            incoming.cancelled = True
            incoming.task.cancel()

    def _expired(self, session: HttpSession) -> bool:
        """Idle (no request in flight, no open stream, no handler running) for too long."""
        idle_since = time.monotonic() - session.last_seen
        return idle_since > self.session_idle_timeout and not session.busy()

    def owner(self, scope: Scope, principal: Any) -> Any:
        """Whose sessions count together against ``max_sessions_per_client``: the principal
        with authentication on, else the client's address, an IPv6 one by its /64 (behind a
        reverse proxy, let the ASGI server take it from the forwarding headers, e.g. uvicorn
        ``--proxy-headers``)."""
        if self.auth is not None:
            return principal
        client = scope.get("client")
        return _network_of(client[0]) if client else None

    def _make_room(self, owner: Any) -> tuple[int, str] | None:
        """Make room for a new session of ``owner``: end expired sessions, then, at a cap,
        the least recently used idle session of ``owner`` (its own cap) or of anyone (the
        server's). None when there is room; else the status and message of a refusal."""
        own = []
        for session in list(self.sessions.values()):
            if self._expired(session):
                self._end(session)
            elif session.owner == owner:
                own.append(session)
        while len(own) >= self.max_sessions_per_client:
            victim = _least_recently_used_idle(own)
            if victim is None:
                return 429, (
                    f"Too Many Requests: this client already has {len(own)} sessions in use; "
                    "end one it no longer needs with DELETE"
                )
            own.remove(victim)
            self._evict(victim, "this client's session cap")
        while len(self.sessions) >= self.max_sessions:
            victim = _least_recently_used_idle(self.sessions.values())
            if victim is None:
                return 503, "Service Unavailable: too many sessions in use; try again later"
            self._evict(victim, "the server's session cap")
        return None

    def _evict(self, session: HttpSession, cap: str) -> None:
        logger.info("ended idle session %s... to make room under %s", session.id[:12], cap)
        self._end(session)


def _network_of(host: str) -> str:
    """A client address as its owner: an IPv6 address by its /64 (what one subscriber
    usually has to pick addresses from), an IPv4 one (mapped into IPv6 or not) by itself."""
    if ":" not in host:
        return host
    try:
        address = ipaddress.IPv6Address(host)
    except ValueError:
        return host
    if address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(ipaddress.IPv6Network((address, 64), strict=False))


def _least_recently_used_idle(sessions: Iterable[HttpSession]) -> HttpSession | None:
    idle = [session for session in sessions if not session.busy()]
    return min(idle, key=lambda session: session.last_seen) if idle else None


def http_app(handlers: object, *, path: str = "/mcp", **options: Any) -> HttpApp:
    """An ASGI app serving ``handlers`` over Streamable HTTP (one server session per client).

    Server options (``server_info``, ``instructions``, ``list_changed``, ``packages``) go to
    each session; HTTP options are those of :class:`HttpApp`. ``legacy_sse=True`` also
    serves 2024-11-05 clients over the deprecated HTTP+SSE transport (GET ``/sse``, POST
    ``/messages/``; pass :class:`~mcp_codegen.runtime.http_sse.SsePaths` for other paths).
    """
    from .stateless import MODERN_OPTIONS, Eras

    server_keys = {
        "server_info", "instructions", "list_changed", "validate_tools", "tasks", "packages",
        "changes", *MODERN_OPTIONS,
    }
    eras = Eras.of(handlers, **{k: v for k, v in options.items() if k in server_keys})
    app_options = {k: v for k, v in options.items() if k not in server_keys}
    modern = eras.stateless_server(handlers)

    def make_session() -> ServerSession:
        session = eras.handshake_session(handlers)
        assert session is not None
        return session

    return HttpApp(
        make_session if eras.handshake else None,
        path=path,
        modern=ModernEndpoint(modern) if modern is not None else None,
        legacy_versions=[p.version for p in eras.handshake],
        **app_options,
    )


# -- small ASGI helpers -----------------------------------------------------------------------


def _event(event_id: str, data: bytes, retry_ms: int | None = None) -> bytes:
    """One SSE event: ``event: message``, its id, an optional ``retry``, one data line."""
    retry = b"retry: %d\n" % retry_ms if retry_ms is not None else b""
    return b"event: message\nid: " + event_id.encode() + b"\n" + retry + b"data: " + data + b"\n\n"


async def _pump(send: Send, events: AsyncIterator[tuple[str, bytes]], retry_ms: int) -> str:
    """Write ``events``; return the id of the last one written ("" for none)."""
    written = ""
    async for event_id, data in events:
        if not event_id:  # the server drops this connection: say when to come back
            chunk = b"retry: %d\n\n" % retry_ms
        else:
            chunk = b"event: message\nid: " + event_id.encode() + b"\ndata: " + data + b"\n\n"
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        written = event_id or written
    return written


_BACKGROUND: set[asyncio.Future[Any]] = set()


def _background(pending: Awaitable[None]) -> None:
    """Let an event store's clean-up run on its own (from code that cannot await), in an
    empty context (it may be another session's), its failure logged."""
    future = contextvars.Context().run(asyncio.ensure_future, pending)
    _BACKGROUND.add(future)
    future.add_done_callback(_background_done)


def _background_done(future: asyncio.Future[None]) -> None:
    _BACKGROUND.discard(future)
    if not future.cancelled() and future.exception() is not None:
        logger.error("event store clean-up failed", exc_info=future.exception())


async def _settle(pending: Awaitable[None] | None) -> None:
    if pending is not None:
        await pending


async def _stream_events(
    send: Send,
    receive: Receive,
    events: AsyncIterator[tuple[str, bytes]],
    priming: bytes,
    retry_ms: int,
) -> str | None:
    """Write ``priming`` then ``events`` as SSE until they end or the client hangs up.

    A hang-up ends only this HTTP response: the stream itself (and the handler feeding it)
    goes on, and its events stay replayable with ``Last-Event-ID``. Returns the id of the
    last event written ("" for none) when the response ended with the connection still
    open, None when the client hung up first: the server cannot know more of delivery.
    """
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                *SSE_HEADERS,
            ],
        }
    )
    if priming:
        await send({"type": "http.response.body", "body": priming, "more_body": True})
    pump = asyncio.ensure_future(_pump(send, events, retry_ms))
    hangup = asyncio.ensure_future(disconnected(receive))
    try:
        await asyncio.wait({pump, hangup}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pump, hangup):
            task.cancel()
        await asyncio.gather(pump, hangup, return_exceptions=True)
    if pump.cancelled() or pump.exception() is not None:
        return None  # the client is gone (or the server's send failed): nothing more to write
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return None if not hangup.cancelled() else pump.result()
