"""The deprecated HTTP+SSE transport of 2024-11-05, served beside the Streamable HTTP endpoint.

``GET <stream path>`` (``/sse``) opens one connection: the first SSE event, ``endpoint``,
names the URI the client POSTs its messages to (``<messages path>?session_id=<key>``), and
every server->client message follows as an ``event: message``. ``POST`` there carries one
JSON-RPC message, answered ``202 Accepted`` with an empty body; its reply goes out on the
stream. Each stream has its own handshake-era :class:`ServerSession` (made by the HTTP app's
session factory), pinned to the revisions this transport belongs to (2024-11-05): a client
asking for a newer one is answered with 2024-11-05, as version negotiation says. The stream
ending ends the session and cancels its running handlers.

Origin/Host and bearer-token checks are the HTTP app's own (it calls :meth:`SseEndpoint.handle`
after them). Errors: missing key 400, unknown or closed key 404, bad JSON 400, body too
large 413, a non-JSON content type 415, too many requests in flight 429 (the connection has
``max_in_flight`` requests running or waiting to be read; ``Retry-After: 1``); each with a
JSON-RPC error body saying why.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import parse_qs, quote


from ..engine.jsonrpc import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_IN_FLIGHT,
    INVALID_REQUEST,
    Engine,
    RpcError,
    parse_error,
    too_many_in_flight,
)
from ..engine.peer_json import decode
from ..protocol.deadlines import Deadlines
from ..protocol.server import ServerSession
from .access_gate import refused_access
from .asgi import (
    SSE_HEADERS,
    Receive,
    Scope,
    Send,
    accepts,
    disconnected,
    read_limited_body,
    refused_json_post,
    respond,
    respond_error,
)

logger = logging.getLogger("typedmcp")

#: The revisions whose HTTP transport is HTTP+SSE (2025-03-26 replaced it).
SSE_REVISIONS = ("2024-11-05",)
#: The query parameter of the POST URI that names the connection.
KEY_PARAM = "session_id"
#: Server->client messages a stream may hold before handlers wait for the client to read.
MAX_QUEUED_MESSAGES = 1000
#: How long a sender waits for room in a full stream before the client, which has stopped
#: reading, is cut off (its stream and session end).
STALLED_CLIENT_SECONDS = 30.0


class SseHost(Protocol):
    """What :class:`SseEndpoint` takes from the Streamable HTTP app it serves beside
    (:class:`~typedmcp.transports.http_server.HttpApp`): its session factory, endpoint
    path, limits and the owner of a request."""

    @property
    def make_session(self) -> Callable[[], ServerSession] | None: ...

    @property
    def path(self) -> str: ...

    @property
    def max_body_bytes(self) -> int: ...

    @property
    def body_read_timeout(self) -> float: ...

    @property
    def body_deadlines(self) -> Deadlines: ...

    @property
    def max_sessions(self) -> int: ...

    @property
    def max_batch(self) -> int: ...

    @property
    def max_in_flight(self) -> int: ...

    @property
    def max_sessions_per_client(self) -> int: ...

    def owner(self, scope: Scope, principal: Any) -> Any: ...

    def public_metadata_path(self, prefix: str = "") -> str: ...


@dataclass(frozen=True)
class SsePaths:
    """Where the deprecated endpoints live: the SSE stream (GET) and the messages (POST)."""

    stream: str = "/sse"
    messages: str = "/messages/"


class SseConnection:
    """One SSE stream: its server session and engine. It is the engine's transport:
    ``receive`` yields what the client POSTs, ``send`` queues what goes out on the stream."""

    #: What the server middleware context calls this transport.
    transport_name = "sse"
    #: The ``network.transport`` of the OpenTelemetry conventions (``protocol/telemetry``).
    network_transport = "tcp"

    def __init__(
        self, key: str, server: ServerSession, principal: Any, owner: Any = None, *,
        max_batch: int = DEFAULT_MAX_BATCH, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.key = key
        self.server = server
        self.principal = principal  # who opened the stream: no one else may POST to it
        self.owner = owner  # whose streams it counts with against the per-client cap
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.outbox: asyncio.Queue[bytes] = asyncio.Queue(MAX_QUEUED_MESSAGES)
        self.ended = asyncio.Event()
        self.stalled = False  # cut off for not reading: no more writes to its response
        self.engine = Engine(
            self,
            server,
            accept_batches=lambda: server.package is not None and server.package.accepts_batches,
            eof_grace=0,  # the stream is gone: running handlers are cancelled at once
            max_batch=max_batch,
            max_in_flight=max_in_flight,
        )
        server.engine = self.engine

    @property
    def session_id(self) -> str:
        """The stream's key (its ``session_id`` query parameter): its session's id."""
        return self.key

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, data: bytes) -> None:
        if self.ended.is_set():
            return
        if not self.outbox.full():
            self.outbox.put_nowait(data)
            return
        # The client has left MAX_QUEUED_MESSAGES unread: wait for room, but only while the
        # stream lasts and at most STALLED_CLIENT_SECONDS, so senders (one per published
        # change, say) never pile up behind a client that stopped reading.
        put = asyncio.ensure_future(self.outbox.put(data))
        ended = asyncio.ensure_future(self.ended.wait())
        try:
            await asyncio.wait({put, ended}, timeout=STALLED_CLIENT_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        finally:
            put.cancel()
            ended.cancel()
        if not put.done() and not self.ended.is_set():
            logger.warning(
                "HTTP+SSE client read nothing for %.0f s with %d messages queued: closing its stream",
                STALLED_CLIENT_SECONDS,
                self.outbox.qsize(),
            )
            self.stalled = True
            self.close()

    def close(self) -> None:
        """End the stream and the session; the engine cancels what still runs."""
        if self.ended.is_set():
            return
        self.ended.set()
        self.inbox.put_nowait(None)
        self.server.close()


class SseEndpoint:
    """The two deprecated endpoints of one :class:`~typedmcp.transports.http_server.HttpApp`,
    whose session factory, limits and checks they share. Built by the app when it is given
    ``legacy_sse``; :meth:`serves` tells the app which paths to hand over."""

    def __init__(self, app: SseHost, paths: SsePaths | None = None) -> None:
        paths = paths or SsePaths()
        if app.make_session is None:
            raise ValueError("legacy_sse needs handshake-era sessions: the server serves none")
        self.stream_path = _normalised(paths.stream)
        self.messages_path = _normalised(paths.messages)
        if len({self.stream_path, self.messages_path, app.path}) != 3:
            raise ValueError(
                f"legacy_sse paths {paths.stream!r} and {paths.messages!r} must differ from "
                f"each other and from the MCP endpoint {app.path!r}"
            )
        self.endpoint = paths.messages  # as given: announced with its trailing slash, if any
        self.make_session: Callable[[], ServerSession] = app.make_session
        self.max_body_bytes = app.max_body_bytes
        self.body_read_timeout, self.body_deadlines = app.body_read_timeout, app.body_deadlines
        self.max_batch, self.max_in_flight = app.max_batch, app.max_in_flight
        self.max_connections = app.max_sessions
        # Every stream is a live connection, never idle: a client over its cap is refused
        # (429) rather than cutting another of its streams, and it cannot fill the server.
        self.max_connections_per_client = app.max_sessions_per_client
        self.owner_of = app.owner
        self.host = app  # (where a 403's challenge points: its protected-resource metadata)
        self.connections: dict[str, SseConnection] = {}
        self._engines: set[asyncio.Future[None]] = set()
        probe = self.make_session()
        probe.close()
        if not _pinned(probe.packages):
            raise ValueError(
                "legacy_sse serves the HTTP+SSE transport of protocol "
                f"{', '.join(SSE_REVISIONS)}, which is not among the revisions the server "
                f"serves ({', '.join(probe.supported_versions)}); generate that revision beside "
                "the handlers' package (mcp_generated has it)"
            )

    def serves(self, path: str) -> bool:
        """Whether ``path`` (without its trailing slash) is one of the two endpoints."""
        return path in (self.stream_path, self.messages_path)

    async def handle(
        self, scope: Scope, path: str, headers: dict[str, str], principal: Any,
        receive: Receive, send: Send,
    ) -> None:
        """Serve a request to one of the two endpoints (Origin, Host and credentials
        already checked by the app; ``principal`` is who the credentials name); ``path``: the
        request's path below the mount prefix (``root_path``), without a trailing slash."""
        method = scope["method"]
        if path == self.stream_path:
            if method != "GET":
                await respond(send, 405, b"Method Not Allowed", "text/plain", [(b"allow", b"GET")])
                return
            await self._stream(scope, headers, principal, receive, send)
        elif method != "POST":
            await respond(send, 405, b"Method Not Allowed", "text/plain", [(b"allow", b"POST")])
        else:
            await self._post(scope, headers, principal, receive, send)

    def close(self) -> None:
        """End every stream (server shutdown)."""
        for connection in list(self.connections.values()):
            connection.close()

    # -- GET: the stream --------------------------------------------------------------------

    def _new_session(self) -> ServerSession:
        server = self.make_session()
        server.packages = _pinned(server.packages)
        return server

    async def _stream(
        self, scope: Scope, headers: dict[str, str], principal: Any, receive: Receive, send: Send
    ) -> None:
        accept = headers.get("accept")
        if accept is not None and not accepts(accept, "text/event-stream"):
            await respond_error(
                send, 406, RpcError(INVALID_REQUEST, "Not Acceptable: Accept must list text/event-stream")
            )
            return
        owner = self.owner_of(scope, principal)
        if sum(1 for c in self.connections.values() if c.owner == owner) >= self.max_connections_per_client:
            await respond_error(
                send,
                429,
                RpcError(
                    INVALID_REQUEST,
                    "Too Many Requests: this client has too many SSE connections open; close one",
                ),
            )
            return
        if len(self.connections) >= self.max_connections:
            await respond_error(
                send, 503, RpcError(INVALID_REQUEST, "Service Unavailable: too many SSE connections")
            )
            return
        key = secrets.token_hex(16)
        connection = SseConnection(
            key, self._new_session(), principal, owner,
            max_batch=self.max_batch, max_in_flight=self.max_in_flight,
        )
        self.connections[key] = connection
        running = asyncio.ensure_future(connection.engine.run())
        self._engines.add(running)
        running.add_done_callback(self._engines.discard)
        root = str(scope.get("root_path", "")).rstrip("/")
        uri = f"{quote(root + self.endpoint)}?{KEY_PARAM}={key}"
        try:
            await send({"type": "http.response.start", "status": 200, "headers": list(SSE_HEADERS)})
            await _write(send, b"event: endpoint\ndata: " + uri.encode() + b"\n\n")
            await _follow(connection, receive, send)
        finally:
            self.connections.pop(key, None)
            connection.close()

    # -- POST: the messages -----------------------------------------------------------------

    async def _post(
        self, scope: Scope, headers: dict[str, str], principal: Any, receive: Receive, send: Send
    ) -> None:
        keys = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(KEY_PARAM)
        if not keys:
            await respond_error(
                send,
                400,
                RpcError(
                    INVALID_REQUEST,
                    f"Bad Request: missing {KEY_PARAM} query parameter; POST to the URI of the "
                    "SSE stream's endpoint event",
                ),
            )
            return
        connection = self.connections.get(keys[0])
        if connection is None or connection.principal != principal:
            await respond_error(
                send,
                404,
                RpcError(INVALID_REQUEST, "Not Found: unknown or closed SSE connection; open a new stream"),
            )
            return
        if await refused_json_post(
            headers, send, self.max_body_bytes, default_type="application/json"
        ):
            return
        body = await read_limited_body(
            receive, send, self.max_body_bytes, self.body_read_timeout, self.body_deadlines
        )
        if body is None:
            return
        engine = connection.engine
        message, problem = _shaped(body, engine.accept_batches())
        if problem is not None:
            await respond_error(send, 400, problem)
            return
        # Requests (a batch: its elements) the connection runs or has yet to read: over
        # max_in_flight, refused (the engine stops reading at the limit, so the queue is
        # bounded); a response or a notification (a cancel) is always taken.
        waiting = engine.in_flight() + connection.inbox.qsize()
        if waiting >= engine.max_in_flight and (isinstance(message, list) or ("id" in message and "method" in message)):
            await respond_error(
                send, 429, too_many_in_flight(waiting, engine.max_in_flight), [(b"retry-after", b"1")]
            )
            return
        policy = connection.server.access_policy
        if policy and principal is not None and await refused_access(
            self.host, scope, headers, policy, message, principal, send
        ):
            return  # 403: the token may not do this (nothing reached the stream)
        await connection.inbox.put(body)
        await respond(send, 202, b"", None)


# -- helpers -------------------------------------------------------------------------------------


def _normalised(path: str) -> str:
    return "/" + path.strip("/")


def _pinned(packages: list[Any]) -> list[Any]:
    return [p for p in packages if p.version in SSE_REVISIONS]


def _shaped(body: bytes, batches: bool) -> tuple[Any, RpcError | None]:
    """``body`` parsed, and why it is not one JSON-RPC message (or an allowed batch); None
    when it is."""
    try:
        message = decode(body)
    except ValueError as exc:
        return None, parse_error(body, exc)
    if isinstance(message, list):
        if not batches:
            return message, RpcError(INVALID_REQUEST, "Invalid Request: batches are not allowed")
        if not message:
            return message, RpcError(INVALID_REQUEST, "Invalid Request: empty batch")
        return message, None
    if not isinstance(message, dict):
        return message, RpcError(INVALID_REQUEST, "Invalid Request: not a JSON-RPC message")
    return message, None


async def _write(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})


async def _pump(connection: SseConnection, send: Send) -> None:
    while True:
        data = await connection.outbox.get()
        await _write(send, b"event: message\ndata: " + data + b"\n\n")


async def _follow(connection: SseConnection, receive: Receive, send: Send) -> None:
    """Write the connection's messages until the client hangs up or the server ends it."""
    pump = asyncio.ensure_future(_pump(connection, send))
    hangup = asyncio.ensure_future(disconnected(receive))
    ended = asyncio.ensure_future(connection.ended.wait())
    tasks = (pump, hangup, ended)
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if ended.cancelled() or connection.stalled:
        return  # the client hung up (or writing failed), or stopped reading: nothing more
    await send({"type": "http.response.body", "body": b"", "more_body": False})
