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
import ipaddress
import logging
import math
import secrets
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..engine.jsonrpc import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_IN_FLIGHT,
    INVALID_REQUEST,
    TOO_MANY_REQUESTS,
    Engine,
    RpcError,
    batch_too_long,
    checked_limit,
    encode_error,
    is_request_id,
    parse_error,
    quoted,
    too_many_in_flight,
)
from ..engine.peer_json import decode
from ..protocol.deadlines import Deadlines
from ..protocol.errors import SERVED_AT
from ..protocol.origin import BearerCheck, serving_origin
from ..protocol.server import ServerSession
from .asgi import (
    BODY_READ_TIMEOUT,
    Receive,
    Scope,
    Send,
    accepts,
    check_body_read_timeout,
    error_code,
    freeze_startup_objects,
    read_limited_body,
    refused_json_post,
    respond,
    respond_error,
    respond_json,
)
from .access_gate import refused_post
from .events import EventStore, MemoryEventStore
from .http_auth import authenticate
from .http_hosts import HostCheck
from .http_sse_server import SseEndpoint, SsePaths
from .http_mount import Mountable, mount_prefix, origin_of, route_path
from .http_shared import HttpSession, SessionTable, SharedSessions, SharedState
from .http_stateless import RETRY_AFTER, ModernEndpoint, asks_stateless_era, claims
from .http_streams import (
    REPLAY_GRACE_SECONDS,
    SessionTransport,
    Stream,
    _background,
    _current_stream,
    _event,
    _settle,
    _stream_events,
)

logger = logging.getLogger("typedmcp")

SESSION_HEADER = "mcp-session-id"
#: The most often a worker logs a WARNING for requests naming another worker's sessions.
FOREIGN_SESSION_WARNING_SECONDS = 60.0
VERSION_HEADER = "mcp-protocol-version"


class HttpApp(Mountable):
    """The ASGI application. Build it with :func:`http_app`.

    Session limits: each client (the principal with ``auth``, else the client's address)
    holds at most ``max_sessions_per_client`` sessions; a new one ends the client's least
    recently used idle session, or is refused with 429 when all of them are in use. When
    the server holds ``max_sessions``, a new session ends the least recently used idle
    session of anyone, or is refused with 503 when every session is in use. A session is
    idle when no request of it is in flight, no stream of it is open and no handler of it
    runs; an idle session also ends after ``session_idle_timeout`` seconds without use (its
    last use: the end of its last request, or the last time making room found it busy). The
    sessions are kept in order of last use (:class:`~.http_shared.SessionTable`), so making
    room costs the same however many sessions are live.

    Request limits: a 2025-03-26 batch holds at most ``max_batch`` messages (a longer one is
    refused as a whole: 413, a -32600 naming the limit); a session runs at most
    ``max_in_flight`` requests at once (a batch counts each), and a POST that would take it
    over is refused with 429, ``Retry-After: 1`` and a -32029 naming the limit (an
    HTTP+SSE connection likewise; a 2026-07-28 client, which has no session, by its
    owner: see :meth:`owner`).

    ``legacy_sse``: True (or :class:`~.http_sse_server.SsePaths`) also serves the deprecated
    2024-11-05 HTTP+SSE transport (GET ``/sse``, POST ``/messages/``), with the same Origin and
    credential checks. ``freeze_gc``: at lifespan start-up, freeze the start-up objects out of
    the cyclic GC (:func:`~.asgi.freeze_startup_objects`).
    """

    def __init__(
        self,
        make_session: Callable[[], ServerSession] | None,
        *,
        path: str = "/mcp",
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body_bytes: int = 4 * 1024 * 1024,
        body_read_timeout: float = BODY_READ_TIMEOUT,
        max_sessions: int = 1000,
        max_sessions_per_client: int = 100,
        session_idle_timeout: float = 1800.0,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        auth: BearerCheck | None = None,
        event_store: EventStore | None = None,
        retry_ms: int = 1000,
        replay_grace: float = REPLAY_GRACE_SECONDS,
        modern: ModernEndpoint | None = None,
        legacy_versions: Iterable[str] = (),
        legacy_sse: bool | SsePaths = False,
        shared: SharedSessions | None = None,
        state: SharedState | None = None,
        freeze_gc: bool = True,
        refuse_stateless: Callable[[Any], RpcError] | None = None,
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
        # Without ``modern``: the error a 2026-07-28 request gets (given its params).
        self.refuse_stateless = refuse_stateless
        # Session ids start with this process's tag: a worker can tell an id minted by
        # another worker (no session affinity) from one that expired.
        self.worker_tag = secrets.token_hex(3)
        # Where SSE events are kept for resumption; one store serves every session.
        self.event_store: EventStore = event_store if event_store is not None else MemoryEventStore()
        self.retry_ms = retry_ms  # the SSE ``retry`` field: how long a client waits to resume
        self.replay_grace = replay_grace  # how long a stream written in full stays replayable
        self.path = path.rstrip("/") or "/"
        self.allowed_hosts = frozenset(allowed_hosts) if allowed_hosts is not None else None
        self.allowed_origins = frozenset(allowed_origins) if allowed_origins is not None else None
        self._host_check = HostCheck()  # (its verdicts, per Host and Origin)
        self.max_body_bytes = max_body_bytes
        self.body_read_timeout = check_body_read_timeout(body_read_timeout)
        self.body_deadlines = Deadlines()  # (the body reads' time limits: one timer for all)
        self.max_sessions = max_sessions
        self.max_sessions_per_client = max_sessions_per_client
        self.session_idle_timeout = session_idle_timeout
        self._foreign_warned_at, self._foreign_unwarned = -math.inf, 0  # (see _foreign_session)
        self.max_batch = checked_limit("max_batch", max_batch)
        self.max_in_flight = checked_limit("max_in_flight", max_in_flight)
        if modern is not None:  # (per client there: that era has no sessions)
            modern.max_in_flight = self.max_in_flight
        self.auth = auth
        # by id, in order of last use: expiry and eviction look at the front only
        self.sessions = SessionTable()
        self.metadata_path = self.public_metadata_path()  # (in this app: the prefix is above it)
        paths = legacy_sse if isinstance(legacy_sse, SsePaths) else None
        self.legacy_sse = SseEndpoint(self, paths) if legacy_sse else None
        # Handshake-era sessions any worker serves, their state in Redis (see http_shared);
        # None: in this process, each served by the worker that created it.
        self.shared, self.state, self.freeze_gc = shared, state, freeze_gc  # (state: lifespan)
        self.started = False  # the lifespan's start-up has run (and no shut-down since)
        if shared is not None:
            shared.attach(self)

    # -- ASGI entry -------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        root = mount_prefix(scope)
        path = route_path(scope["path"], root)
        if self.auth is not None and path in (self.metadata_path, "/.well-known/oauth-protected-resource"):
            await respond_json(send, 200, self.metadata_document(scope, headers, root))
            return
        sse = self.legacy_sse if self.legacy_sse is not None and self.legacy_sse.serves(path) else None
        if path != self.path and sse is None:
            await respond(send, 404, SERVED_AT + f"{root}{self.path}".encode(), "text/plain")
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
        with serving_origin(headers, principal):  # (ctx.headers, ctx.principal)
            await self._serve(scope, path, headers, principal, sse, receive, send)

    async def _serve(
        self, scope: Scope, path: str, headers: dict[str, str], principal: Any,
        sse: SseEndpoint | None, receive: Receive, send: Send,
    ) -> None:
        """Serve a request that passed the origin and bearer checks (``path``: below the
        mount's ``root_path``)."""
        if sse is not None:  # the deprecated HTTP+SSE endpoints
            await sse.handle(scope, path, headers, principal, receive, send)
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

    async def start(self) -> None:
        """Start-up (the ASGI lifespan's; mounted, :meth:`lifespan`'s): state, frozen GC."""
        if self.state is not None:
            await self.state.start()
        if self.freeze_gc:  # (once per process)
            freeze_startup_objects()
        self.started = True

    async def stop(self) -> None:
        """Shut-down: end every session and stream, close the shared state."""
        self.started = False
        if self.modern is not None:
            self.modern.server.close()
        if self.shared is not None:
            self.shared.close()  # (the sessions live on in the other workers)
        for session in list(self.sessions.values()):
            self._end(session)
        if self.legacy_sse is not None:
            self.legacy_sse.close()
        if self.state is not None:
            await self.state.close()

    # -- checks ---------------------------------------------------------------------------

    def _check_origin(self, headers: dict[str, str]) -> str | None:
        """Why the request's Host or Origin is refused (403), or None (see :mod:`.http_hosts`)."""
        return self._host_check.problem(headers, self.allowed_hosts, self.allowed_origins)

    async def _authenticated(self, scope: Scope, headers: dict[str, str], send: Send) -> Any:
        """The principal of a valid bearer token; else None, after answering 401 or 503."""
        assert self.auth is not None
        metadata_url = origin_of(scope, headers) + self.public_metadata_path(mount_prefix(scope))
        return await authenticate(self.auth, scope, headers, send, metadata_url)

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
            self._foreign_session(session_id)
            return None, 404, (
                "Not Found: this session belongs to another server process; the deployment needs "
                "session affinity on Mcp-Session-Id (or use protocol 2026-07-28, which has no "
                "sessions); initialize again"
            )
        if session is None or session.principal != principal:
            return None, 404, "Not Found: unknown or expired session; initialize again"
        self.sessions.touch(session)
        return session, 200, ""

    def _foreign_session(self, session_id: str) -> None:
        """Log a request for a session another worker created: a deployment without session
        affinity, or anyone making ids up (no credential is needed to send one). At most one
        WARNING per :data:`FOREIGN_SESSION_WARNING_SECONDS`, counting the requests logged at
        DEBUG since the last one."""
        now = time.monotonic()
        if now - self._foreign_warned_at < FOREIGN_SESSION_WARNING_SECONDS:
            self._foreign_unwarned += 1
            logger.debug("session %s was created by another worker process", session_id[:8])
            return
        more = self._foreign_unwarned
        self._foreign_warned_at, self._foreign_unwarned = now, 0
        logger.warning(
            "session %s was created by another worker process%s: route each Mcp-Session-Id "
            "to the worker that created it (session affinity), or serve 2026-07-28 statelessly",
            session_id[:8],
            f" (and {more} more requests for such sessions since this was last logged)" if more else "",
        )

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
        if self.shared is not None:
            session, status, problem = await self.shared.open(headers.get(SESSION_HEADER), principal)
        else:
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
            self.sessions.touch(session)

    # -- POST -------------------------------------------------------------------------------

    async def _post(
        self, scope: Scope, headers: dict[str, str], principal: Any, receive: Receive, send: Send
    ) -> None:
        if await refused_json_post(headers, send, self.max_body_bytes):
            return
        accept = headers.get("accept", "")
        if not accepts(accept, "application/json") or not accepts(accept, "text/event-stream"):
            problem = "Not Acceptable: Accept must list application/json and text/event-stream"
            await respond_error(send, 406, RpcError(INVALID_REQUEST, problem))
            return
        body = await read_limited_body(
            receive, send, self.max_body_bytes, self.body_read_timeout, self.body_deadlines
        )
        if body is None:
            return
        try:
            message = decode(body, cache_strings="keys")
        except ValueError as exc:
            await respond_error(send, 400, parse_error(body, exc))
            return
        if principal is not None and await refused_post(self, scope, headers, message, principal, send):
            return  # 403: the token may not do this (before any handler runs)
        if self.modern is not None and (
            self.make_session is None
            or claims(headers, message, self.legacy_versions, self.modern.versions)
        ):
            await self.modern.post(headers, message, principal, receive, send, self.owner(scope, principal))
            return
        if self.modern is None and self.refuse_stateless and asks_stateless_era(headers, message):
            why = encode_error(message["id"], self.refuse_stateless(message.get("params")))
            return await respond(send, 400, why, "application/json")
        if isinstance(message, dict) and message.get("method") == "initialize" and "id" in message:
            await self._initialize(message, principal, self.owner(scope, principal), send)
            return
        session = await self._open(headers, principal, send)
        if session is None:
            return
        session.active += 1  # in flight (what :meth:`_serving` does, inline: every POST comes here)
        try:
            if isinstance(message, list):
                await self._post_batch(session, message, receive, send)
            elif not isinstance(message, dict):
                await respond_error(
                    send, 400, RpcError(INVALID_REQUEST, "Invalid Request: not an object")
                )
            elif self.shared is not None and await self.shared.handled(session, message, send):
                return  # (passed on to another worker, or a change of the session's state)
            elif "method" in message and "id" in message:
                await self._run(session, message, send, receive)
            else:
                reply = await session.engine._route(message, in_batch=False)
                if reply is not None:
                    await respond(send, 400, reply, "application/json")
                else:
                    await respond(send, 202, b"", None)
        finally:
            session.active -= 1
            self.sessions.touch(session)

    async def _initialize(
        self, message: dict[str, Any], principal: Any, owner: Any, send: Send
    ) -> None:
        refused = await self.shared.make_room(owner) if self.shared else self._make_room(owner)
        if refused is not None:
            await respond_error(send, refused[0], RpcError(INVALID_REQUEST, refused[1]))
            return
        session = self.new_session(f"{self.worker_tag}-{secrets.token_urlsafe(24)}")
        session.principal, session.owner, server = principal, owner, session.server
        reply = await self._run(session, message, None, None)
        if server.package is None:  # initialize failed: no session is kept
            await _settle(self.event_store.forget(session.id))
            await respond(send, 200, reply or b"", "application/json")
            return
        # 2025-11-25 SSE polling: prime POST streams; the client resumes dropped ones.
        session.transport.polling = server.package.version >= "2025-11-25"
        self.sessions[session.id] = session
        if self.shared is not None:
            await self.shared.created(session)
        await respond(
            send, 200, reply or b"", "application/json", [(b"mcp-session-id", session.id.encode())]
        )

    def new_session(self, session_id: str, tag: str | None = None) -> HttpSession:
        """A session's objects (server session, engine, transport), not yet initialized;
        ``tag``: the stream tag of a session created by another worker."""
        assert self.make_session is not None
        server = self.make_session()
        shared = self.shared
        transport = (
            shared.transport(session_id, tag) if shared is not None
            else SessionTransport(session_id, self.event_store, self.replay_grace)
        )
        engine = (shared.engine_class if shared is not None else Engine)(
            transport,
            server,
            accept_batches=lambda: server.package is not None and server.package.accepts_batches,
            max_batch=self.max_batch,
            max_in_flight=self.max_in_flight,
        )
        server.engine = engine
        return HttpSession(session_id, server, engine, transport)

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
                code = error_code(immediate)
                if code == TOO_MANY_REQUESTS:  # the session is at max_in_flight
                    await respond(send, 429, immediate, "application/json", RETRY_AFTER)
                else:
                    await respond(send, 400 if code == INVALID_REQUEST else 200, immediate, "application/json")
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
        engine = session.engine
        if len(batch) > engine.max_batch:
            await respond_error(send, 413, batch_too_long(len(batch), engine.max_batch))
            return
        if engine._no_room_for(len(batch)):
            await respond_error(send, 429, too_many_in_flight(engine.in_flight(), engine.max_in_flight), RETRY_AFTER)
            return
        stream = session.transport.new_stream()
        token = _current_stream.set(stream)
        try:  # the task, and the handlers it starts, send to this POST's stream
            task = engine.start_batch(batch)
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
        if self.shared is not None:  # the GET stream is in the shared event store
            with self._serving(session):
                await self.shared.serve_get(session, headers, receive, send)
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
        if self.shared is not None:
            await self.shared.deleted(session)  # every worker ends it
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
        idle_since = self.sessions.clock() - session.last_seen
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
        server's). None when there is room; else the status and message of a refusal.

        The session table keeps the sessions in order of last use, overall and per owner:
        this looks at the front of those orders (expired sessions, then busy ones on the way
        to an idle one), so its cost does not grow with the number of live sessions."""
        sessions = self.sessions
        for session in sessions.take_expired(self.session_idle_timeout):
            self._end(session)
        while (held := sessions.count_of(owner)) >= self.max_sessions_per_client:
            victim = sessions.least_recently_used_idle_of(owner)
            if victim is None:
                return 429, (
                    f"Too Many Requests: this client already has {held} sessions in use; "
                    "end one it no longer needs with DELETE"
                )
            self._evict(victim, "this client's session cap")
        while len(sessions) >= self.max_sessions:
            victim = sessions.least_recently_used_idle()
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
