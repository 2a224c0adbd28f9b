"""Streamable HTTP client: a small keep-alive HTTP/1.1 client on asyncio streams.

No HTTP library is needed: MCP uses a handful of request shapes (POST of one JSON message,
GET of an SSE stream, DELETE), and a direct implementation avoids the per-call overhead
that caps general-purpose clients. Responses are JSON or SSE (``Content-Length`` or
chunked); every message they carry is handed to the JSON-RPC engine.

The stateless era (2026-07-28) is POST only: no session, no GET stream, no DELETE; every
POST carries the request-metadata headers (:func:`request_headers`), and closing a reply
stream is how a request is cancelled.

A message is POSTed once, never again: a POST whose connection breaks may have reached the
server (and a tool may have run), so the call fails with :class:`ResponseLost` and the caller
decides whether to send it again, as a new request with a new id (the transport rules: HC-5,
HC-6). The only request sent twice is an idempotent one (GET, DELETE) whose reused
keep-alive connection broke before any byte of the response came back; a pooled connection
the server has closed is noticed before it is used (:meth:`HttpClient._connect`), and a
refused connection means nothing was sent (:class:`ServerUnreachable`). Resuming a broken
SSE reply with GET + ``Last-Event-ID`` (handshake era) is not a re-send: it reads the rest
of the same reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import select
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from pydantic_core import from_json, to_json

from .jsonrpc import ConnectionClosed
from .modern import (
    HEADER_ANNOTATION,
    NAME_PARAM,
    encode_header_value,
    header_form,
)

if TYPE_CHECKING:
    from .oauth import HttpAuth

logger = logging.getLogger("mcp_codegen.runtime")


class ServerUnreachable(ConnectionError):
    """No TCP connection to the server's host and port (nothing was sent)."""


class ResponseLost(ConnectionClosed, ConnectionError):
    """The connection broke after a message was sent and before its response came (in the
    handshake era: and resuming the reply failed). The request may have run on the server;
    it is never sent again by the client: send it again (a new request, with a new id) only
    where running it twice is harmless."""


#: Requests HTTP lets a client repeat (RFC 9110 9.2.2); never POST.
IDEMPOTENT = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
#: How many times a handshake-era reply stream is resumed (GET + Last-Event-ID) before
#: the request is given up as lost.
MAX_RESUMPTIONS = 10


class HttpError(Exception):
    """A non-success HTTP status from the server."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
        self.status = status
        self.body = body


class AuthRequired(HttpError):
    """401/403: the server wants (other) credentials; ``challenge`` is its WWW-Authenticate."""

    def __init__(self, status: int, body: bytes, challenge: str) -> None:
        super().__init__(status, body)
        self.challenge = challenge


class SessionExpired(HttpError):
    """404 for a request that carried a session id: the client must initialize again."""


class NotAnMcpReply(HttpError):
    """A 2xx reply that is neither JSON-RPC in ``application/json`` nor an SSE stream: the
    URL is not an MCP endpoint (a web page, a proxy's error page, ...)."""

    def __init__(self, status: int, body: bytes, content_type: str, url: str) -> None:
        super().__init__(status, body)
        self.args = (
            f"{url} answered HTTP {status} with {content_type or 'no Content-Type'!r} and "
            f"{'a body that is not JSON' if content_type.startswith('application/json') else 'no JSON-RPC'}"
            ": it does not look like an MCP endpoint (check the URL and its path, e.g. /mcp)",
        )


# -- stateless-era request-metadata headers ------------------------------------------------

#: The per-request headers of the POST being sent (set by the session around one request;
#: the transport's ``send`` runs in the same task, so it sees them).
REQUEST_HEADERS: ContextVar[Mapping[str, str] | None] = ContextVar(
    "mcp_request_headers", default=None
)

ParamHeaders = dict[tuple[str, ...], str]
"""Where a tool's ``x-mcp-header`` parameters sit in its arguments -> their header token."""

_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 token
_HEADER_TYPES = frozenset({"string", "integer", "boolean"})
_NOT_SCHEMAS = frozenset({"const", "enum", "default", "examples"})


class InvalidHeaderAnnotation(ValueError):
    """A tool's ``x-mcp-header`` annotations break the rules (such a tool is not used)."""


def param_headers(input_schema: Any) -> ParamHeaders:
    """The ``x-mcp-header`` annotations of a tool's input schema, by property path.

    Valid only on ``string``/``integer``/``boolean`` properties reached from the root
    through ``properties`` alone, as non-empty RFC 9110 tokens unique ignoring case;
    anything else raises :class:`InvalidHeaderAnnotation`.
    """
    found: ParamHeaders = {}
    seen: set[str] = set()

    def walk(node: Any, path: tuple[str, ...] | None) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, None)
            return
        if not isinstance(node, dict):
            return
        if HEADER_ANNOTATION in node:
            token = node[HEADER_ANNOTATION]
            where = ".".join(path) if path else "(not a property)"
            if not path:
                raise InvalidHeaderAnnotation(f"{where}: {HEADER_ANNOTATION} outside properties")
            if not isinstance(token, str) or not _TOKEN.match(token):
                raise InvalidHeaderAnnotation(f"{where}: {token!r} is not a header token")
            if node.get("type") not in _HEADER_TYPES:
                raise InvalidHeaderAnnotation(
                    f"{where}: {HEADER_ANNOTATION} on a {node.get('type')!r} property"
                )
            if token.lower() in seen:
                raise InvalidHeaderAnnotation(f"{where}: header {token!r} is used twice")
            seen.add(token.lower())
            found[path] = token
        for key, value in node.items():
            if key in _NOT_SCHEMAS or key == HEADER_ANNOTATION:
                continue
            if key == "properties" and path is not None and isinstance(value, dict):
                for name, child in value.items():
                    walk(child, (*path, name))
            else:
                walk(value, None)

    walk(input_schema, ())
    return found


def request_headers(
    method: str, params: Mapping[str, Any] | None, version: str, params_headers: ParamHeaders | None
) -> dict[str, str]:
    """The request-metadata headers of one stateless-era POST: ``MCP-Protocol-Version``,
    ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-{Name}`` (Base64 sentinel when needed)."""
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    name_field = NAME_PARAM.get(method)
    if name_field is not None and params:
        name = params.get(name_field)
        if isinstance(name, str):
            headers["Mcp-Name"] = encode_header_value(name)
    if params_headers and params:
        arguments = params.get("arguments")
        for path, token in params_headers.items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, Mapping) else None
            form = header_form(value) if value is not None else None
            if form is not None:
                headers["Mcp-Param-" + token] = encode_header_value(form)
    return headers


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


Deliver = Callable[[bytes], Coroutine[Any, Any, None]]


_NOT_JSON = object()


def _request_id_of(data: bytes) -> Any:
    """The id of a request we are about to POST (None for notifications and responses)."""
    try:
        message = from_json(data, allow_inf_nan=False)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" in message:
        return message.get("id")
    return None


def _error_for(body: bytes, request_id: Any) -> bytes:
    """An id-less JSON-RPC error body re-addressed to ``request_id`` (empty if not one)."""
    try:
        message = from_json(body, allow_inf_nan=False)
    except ValueError:
        return b""
    if not isinstance(message, dict) or message.get("id") is not None or "error" not in message:
        return b""
    return to_json({**message, "id": request_id})


def _response_id(data: bytes) -> Any:
    """The id a response answers (None for requests and notifications)."""
    if b'"result"' not in data and b'"error"' not in data:
        return None
    try:
        message = from_json(data, allow_inf_nan=False)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" not in message:
        return message.get("id")
    return None


def with_bearer(headers: Mapping[str, str] | None, bearer_token: str | None) -> dict[str, str]:
    """``headers`` plus an ``Authorization: Bearer`` header when there is a token."""
    found = dict(headers or {})
    if bearer_token:
        found["Authorization"] = f"Bearer {bearer_token}"
    return found


async def authorized_request(
    http: HttpClient, auth: HttpAuth | None, method: str, body: bytes, headers: dict[str, str]
) -> Response:
    """``http.request``, through ``auth`` (credentials, challenges answered) when there is one."""
    if auth is not None:
        return await auth.send(http, method, body, headers)
    return await http.request(method, body, headers)


class HttpClientTransport:
    """The client side of Streamable HTTP as an engine transport.

    ``send`` POSTs one message and hands whatever the response carries (JSON or SSE) to
    ``deliver``; the session id and protocol-version headers are kept and sent after the
    handshake. A GET stream for server-initiated messages is opened on demand.

    ``send`` returns once the reply is in: a request's response has been delivered, or the
    request has failed (:class:`ResponseLost`, naming the server). A handshake-era reply
    stream that breaks is resumed within ``send`` (GET + ``Last-Event-ID``), so a pending
    request never outlives its caller's task, and a dead server fails it at once.

    With ``modern`` set (stateless era) no session id is kept, each POST also carries
    :data:`REQUEST_HEADERS`, an id-less JSON-RPC error body answers the request it came
    for, and a reply stream that ends without the response fails the request.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        bearer_token: str | None = None,
        auth: HttpAuth | None = None,
    ) -> None:
        base = {"Accept": "application/json, text/event-stream", **with_bearer(headers, bearer_token)}
        self.http = HttpClient(url, base)
        self.auth = auth  # OAuth: credentials on every POST, challenges answered (oauth.py)
        self.deliver: Deliver | None = None
        #: where a reply already parsed here goes (the engine's ``receive_message``)
        self.deliver_message: Callable[[Any], Coroutine[Any, Any, None]] | None = None
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.modern = False
        self._closed = asyncio.Event()
        self._get_task: asyncio.Task[None] | None = None
        self.last_event_id: str | None = None
        self.retry_ms = 1000
        #: requests whose reply stream is being resumed -> resolved when the response
        #: comes on another stream (or failed when the transport closes)
        self._resuming: dict[Any, asyncio.Future[None]] = {}

    @property
    def closed_reason(self) -> str:
        """Why requests still waiting when the engine stops are failed."""
        return f"the connection to {self.http.url} was closed"

    def _session_headers(self) -> dict[str, str]:
        headers = {}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _lost(self, request_id: Any, why: str) -> ResponseLost:
        what = "a message" if request_id is None else f"request {request_id!r}"
        return ResponseLost(
            f"{what} to {self.http.url} got no response: {why}. It may have run on the "
            "server and is not sent again; send it again (a new request) only if running "
            "it twice is harmless"
        )

    async def receive(self) -> bytes | None:
        await self._closed.wait()
        return None

    async def send(self, data: bytes) -> None:
        """POST one message; deliver what comes back; resume a broken SSE reply via GET.

        A POST is never sent twice: if its connection breaks, :class:`ResponseLost`."""
        headers = {"Content-Type": "application/json", **self._session_headers()}
        if self.modern:
            extra = REQUEST_HEADERS.get()
            if extra:
                headers.update(extra)
        try:
            response = await authorized_request(self.http, self.auth, "POST", data, headers)
        except ServerUnreachable:
            raise  # nothing was sent
        except (OSError, asyncio.IncompleteReadError) as error:
            raise self._lost(_request_id_of(data), how_it_broke(error)) from None
        try:
            await self._handle(response, data)
        except ResponseLost:
            response.connection.close()
            raise
        except (OSError, asyncio.IncompleteReadError) as error:  # the reply broke off
            response.connection.close()
            raise self._lost(_request_id_of(data), how_it_broke(error)) from None
        except BaseException:
            # Cancelled (the caller timed out) or broken mid-reply: the connection is in an
            # unknown state, so it is closed, never reused.
            response.connection.close()
            raise

    async def _handle(self, response: Response, sent: bytes) -> None:
        """Deliver what a POST's response carries (the id of the request ``sent`` is read
        only when the reply needs it: an error body or an SSE stream)."""
        if response.status == 202:
            await response.read()
            self.http.release(response)
            return
        content_type = response.headers.get("content-type", "")
        if response.status != 200:
            body = await response.read()
            self.http.release(response)
            if response.status == 404 and self.session_id:
                raise SessionExpired(response.status, body)
            request_id = _request_id_of(sent)
            if content_type.startswith("application/json") and request_id is not None and self.deliver:
                answered = _response_id(body)
                if answered is None and self.modern:
                    body = _error_for(body, request_id)  # an id-less error answers this POST
                    answered = request_id if body else None
                if answered == request_id:
                    await self.deliver(body)  # a JSON-RPC error answering our request
                    return
            if response.status in (401, 403):
                raise AuthRequired(
                    response.status, body, response.headers.get("www-authenticate", "")
                )
            raise HttpError(response.status, body)
        if not self.session_id and not self.modern and "mcp-session-id" in response.headers:
            self.session_id = response.headers["mcp-session-id"]
        if content_type.startswith("text/event-stream"):
            request_id = _request_id_of(sent)
            answered, last_id, why = await self._consume(response, request_id)
            if request_id is None or answered:
                return
            if self.modern:  # no resumption in the stateless era: the caller decides
                raise self._lost(request_id, f"the reply stream {why}")
            await self._resume(request_id, last_id, why)
            return
        body = await response.read()
        self.http.release(response)
        if not body:
            return
        # parsed here, once: garbage is never answered with a parse error POSTed back
        message: Any = _NOT_JSON
        if content_type.startswith("application/json"):
            with contextlib.suppress(ValueError):
                message = from_json(body, allow_inf_nan=False, cache_strings="keys")
        if message is _NOT_JSON:
            raise NotAnMcpReply(response.status, body, content_type, self.http.url)
        if self.deliver_message is not None:
            await self.deliver_message(message)
        elif self.deliver is not None:
            await self.deliver(body)

    async def _consume(
        self, response: Response, request_id: Any = None, last_id: str | None = None
    ) -> tuple[bool, str | None, str]:
        """Deliver an SSE reply's messages. Returns whether the response to ``request_id``
        came, the id of this stream's last event (where a resumption starts), and how the
        stream ended (for an error message)."""
        try:
            async for event_id, data, retry in response.events():
                if event_id is not None:
                    last_id = self.last_event_id = event_id
                if retry is not None:
                    self.retry_ms = retry
                if data and self.deliver:
                    responded = await self._deliver(data)
                    if request_id is not None and responded == request_id:
                        # the stream has served its purpose; do not wait for its end
                        response.connection.close()
                        return True, last_id, ""
        except (OSError, asyncio.IncompleteReadError) as error:
            response.connection.close()
            return False, last_id, f"broke off ({how_it_broke(error)})"
        except BaseException:
            response.connection.close()
            raise
        self.http.release(response)  # the stream ended cleanly: the connection is reusable
        return False, last_id, "ended before the response"

    async def _deliver(self, data: bytes) -> Any:
        """Hand a message to the engine; a response to a request being resumed ends its
        resumption. Returns the id the message answers (None unless it is a response)."""
        answered = _response_id(data)
        if answered is not None and self._resuming:
            waiter = self._resuming.get(answered)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        assert self.deliver is not None
        await self.deliver(data)
        return answered

    async def _resume(self, request_id: Any, last_id: str | None, why: str) -> None:
        """The reply stream of ``request_id`` ended before its response: resume it, in the
        caller's task, with GET + the ``Last-Event-ID`` of that same stream (2025-11-25 SSE
        polling: after waiting ``retry`` ms) until the response arrives, here or on another
        stream. Each attempt opens its connection before the wait, so a server that is gone
        fails the request at once, however long ``retry`` is (one that dies during the wait:
        when it ends). Raises :class:`ResponseLost` when the stream cannot be resumed: no
        event id, the server gone or refusing, too many attempts.
        """
        if last_id is None:
            raise self._lost(request_id, f"the reply stream {why}, with no event id to resume from")
        resume_from: str = last_id
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._resuming[request_id] = waiter
        try:
            for _attempt in range(MAX_RESUMPTIONS):
                try:
                    await self.http.connect_ahead()
                except ServerUnreachable as error:
                    raise self._lost(request_id, f"the reply stream {why}, and {error}") from None
                await asyncio.wait({waiter}, timeout=self.retry_ms / 1000)
                if waiter.done():
                    waiter.result()  # answered elsewhere (or raises: the transport closed)
                    return
                headers = {
                    "Accept": "text/event-stream",
                    "Last-Event-ID": resume_from,
                    **self._session_headers(),
                }
                try:
                    response = await self.http.request("GET", b"", headers)
                except (OSError, asyncio.IncompleteReadError) as error:
                    raise self._lost(
                        request_id,
                        f"the reply stream {why}, and resuming it failed ({how_it_broke(error)})",
                    ) from None
                if response.status != 200:
                    response.connection.close()
                    raise self._lost(
                        request_id,
                        f"the reply stream {why}, and resuming it got HTTP {response.status}",
                    )
                answered, last_id, why = await self._consume_or_answer(
                    response, request_id, resume_from, waiter
                )
                if answered:
                    return
                resume_from = last_id or resume_from
            raise self._lost(request_id, f"the reply stream {why}, {MAX_RESUMPTIONS} times")
        finally:
            self._resuming.pop(request_id, None)
            if waiter.done() and not waiter.cancelled():
                waiter.exception()  # retrieved, whatever happens to it
            else:
                waiter.cancel()

    async def _consume_or_answer(
        self, response: Response, request_id: Any, last_id: str, waiter: asyncio.Future[None]
    ) -> tuple[bool, str | None, str]:
        """Read a resumed stream until it ends or the response came (on it, or elsewhere:
        ``waiter``); what :meth:`_consume` returns."""
        consume = asyncio.ensure_future(self._consume(response, request_id, last_id))
        either: set[asyncio.Future[Any]] = {consume, waiter}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not consume.done():
                consume.cancel()  # it closes its connection
                await asyncio.wait({consume})
        if not waiter.done():
            return consume.result()
        if not consume.cancelled():
            consume.exception()  # nothing left unretrieved
        waiter.result()  # raises if the transport closed
        return True, last_id, ""

    async def start_get_stream(self, timeout: float = 2.0) -> None:
        """Listen for server-initiated messages (a 405 means the server offers none).

        Returns once the server has answered the GET (or after ``timeout``), so the stream
        is in place before the next request is sent.
        """
        if self._get_task is not None:  # a stream of an earlier session (re-initialize)
            self._get_task.cancel()
            await asyncio.gather(self._get_task, return_exceptions=True)
        ready = asyncio.Event()
        self._get_task = asyncio.create_task(self._get_stream(ready))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(ready.wait(), timeout)

    async def _get_stream(self, ready: asyncio.Event) -> None:
        """The GET stream's task: it ends quietly when the server goes away (requests in
        flight fail on their own streams) and never with an exception."""
        client = HttpClient(self.http.url, dict(self.http.headers))
        response: Response | None = None
        try:
            while not self._closed.is_set():
                headers = {"Accept": "text/event-stream", **self._session_headers()}
                response = await client.request("GET", b"", headers)
                ready.set()
                if response.status != 200:
                    await response.read()
                    return
                async for _event_id, data, _retry in response.events():
                    if data and self.deliver:
                        await self._deliver(data)
                response.connection.close()
                await asyncio.sleep(self.retry_ms / 1000)  # no tight loop on short streams
        except (OSError, asyncio.IncompleteReadError):
            return
        except Exception:
            logger.exception("the GET stream of %s failed", self.http.url)
        finally:
            ready.set()
            if response is not None:
                response.connection.close()  # cancelled mid-stream: never left open
            await client.close()

    async def close(self) -> None:
        """End the session (DELETE) and close connections."""
        self._closed.set()
        for request_id, waiter in list(self._resuming.items()):
            if not waiter.done():
                waiter.set_exception(self._lost(request_id, "the client closed the connection"))
        if self._get_task is not None:
            self._get_task.cancel()
            with contextlib.suppress(BaseException):
                await self._get_task
        if self.session_id:
            with contextlib.suppress(Exception):
                response = await self.http.request("DELETE", b"", self._session_headers())
                await response.read()
                self.http.release(response)
        await self.http.close()


def how_it_broke(error: BaseException) -> str:
    """How a connection broke, in words."""
    if isinstance(error, asyncio.IncompleteReadError):
        return "the server closed the connection"
    if isinstance(error, ConnectionResetError):
        return "the connection was reset"
    return str(error) or type(error).__name__
