"""Streamable HTTP for the stateless era (2026-07-28): one POST, one request, no session.

The handshake-era app (:mod:`.http_server`) hands a POST here when the era routing says so
(checklist H-52). Checks run in the order the checklist settles on (its section 6, item 13):
required headers present (-32020) -> required ``_meta`` present (-32602) -> headers equal
the body (-32020) -> version supported (-32022) -> method exists (HTTP 404, -32601) ->
``Mcp-Param-*`` headers of tool arguments (-32020) -> the handler, whose missing client
capability is -32021. Every one of these is HTTP 400 (404 for the unknown method).

A request is answered with JSON, or with SSE when it can produce request-scoped
notifications (a progress token or a log level) or is a ``subscriptions/listen`` stream.
Closing the response (or disconnecting before a JSON reply) cancels the request: that is how
a client cancels in this era. A ``notifications/cancelled`` POSTed anyway reaches only the
in-flight requests of the same authenticated principal with that id (request ids are the
client's choice, so they name a request only together with their owner); without auth
nothing says who sent a POST, and such a notification cancels nothing. A cancelled request
gets nothing more: its JSON reply is an empty ``204``, its SSE stream ends without a message.
A client (its principal, or without auth its address: the owner of
:meth:`~.http_server.HttpApp.owner`) runs at most ``max_in_flight`` requests at once; one
more is answered 429 with ``Retry-After: 1`` and a -32029 naming the limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sys
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from typing import Any

from ..engine.eager import returned_at_once, returned_value, start_eagerly
from ..engine.jsonrpc import (
    DEFAULT_MAX_IN_FLIGHT,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    RpcError,
    encode,
    encode_error,
    encode_id,
    encoded_answer,
    is_request_id,
    quoted,
    too_many_in_flight,
)
from ..protocol.meta import (
    CANCELLED,
    CLIENT_CAPABILITIES_KEY,
    DISCOVER,
    HEADER_ANNOTATION,
    HEADER_MISMATCH,
    LISTEN,
    LOG_LEVEL_KEY,
    METHOD_HEADER,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    NAME_HEADER,
    NAME_PARAM,
    PARAM_HEADER_PREFIX,
    PROTOCOL_VERSION_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    VERSION_HEADER,
    HeaderValueError,
    decode_header_value,
    header_form,
    modern_meta,
)
from ..stateless.scope import RequestScope, _scope
from ..stateless.server import StatelessServer
from ..protocol.middleware import stateless_context
from ..protocol.skills import SKILL_METHODS, served_skills
from ..stateless.tasks import TASK_ID, TASK_METHODS
from .http_shared import owner_key
from .asgi import SSE_HEADERS, Receive, Send, disconnected, error_code, respond, respond_error

logger = logging.getLogger("typedmcp")


#: Errors answered with HTTP 400 in this era (the rest of JSON-RPC errors: 200).
BAD_REQUEST_CODES = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION,
     INVALID_REQUEST}
)


#: Messages an SSE reply holds for a client that reads slower than its handler writes;
#: beyond this the handler's next notification waits.
MAX_QUEUED_EVENTS = 256
#: What a request refused for too many in flight is told (seconds).
RETRY_AFTER = [(b"retry-after", b"1")]


def _mismatch(message: str) -> RpcError:
    return RpcError(HEADER_MISMATCH, f"Header mismatch: {message}")


class ModernEndpoint:
    """Serves 2026-07-28 POSTs with one shared :class:`StatelessServer`."""

    #: The most requests one client (owner) runs at once (the app's ``max_in_flight``).
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT

    def __init__(self, server: StatelessServer, *, keepalive_seconds: float = 15.0) -> None:
        self.server = server
        server.transport_name = "streamable-http"  # (what its middleware context says)
        server.network_transport = "tcp"  # for its telemetry: it serves over HTTP here
        self.keepalive_seconds = keepalive_seconds
        self._inflight: set[asyncio.Task[Any]] = set()
        self._running: dict[Any, int] = {}  # owner -> its requests in flight (none: absent)
        # Called with (principal, request id) for a cancel that reached no request here
        # (shared state: the request may run on another worker).
        self.cancel_elsewhere: Callable[[Any, Any], Awaitable[None]] | None = None

    @property
    def versions(self) -> list[str]:
        return self.server.supported_versions

    async def post(
        self, headers: Mapping[str, str], message: Any, principal: Any, receive: Receive, send: Send,
        owner: Any = None,
    ) -> None:
        """Answer one POST whose body is already parsed; ``owner``: whose requests it counts
        with under ``max_in_flight``."""
        if not isinstance(message, dict):
            what = "batches are not allowed" if isinstance(message, list) else "not an object"
            await respond_error(send, 400, RpcError(INVALID_REQUEST, f"Invalid Request: {what}"))
            return
        request_id = message.get("id")
        method = message.get("method")
        if "method" not in message:
            # clients send no responses in this era
            await respond_error(
                send, 400, RpcError(INVALID_REQUEST, "Invalid Request: clients send no responses in 2026-07-28")
            )
            return
        if "id" not in message:
            params = message.get("params")
            if method == CANCELLED and principal is not None and isinstance(params, dict):
                await self._cancel_notified(principal, params)
            await respond(send, 202, b"", None)
            return
        if not is_request_id(request_id) or message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            await respond(send, 400, encode_error(
                request_id if is_request_id(request_id) else None,
                RpcError(INVALID_REQUEST, "Invalid Request: a JSON-RPC 2.0 request needs jsonrpc, "
                         "a string or integer id and a method")), "application/json")
            return
        params = message.get("params")
        try:
            if params is not None and not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "Invalid params: params must be an object")
            await self._check(headers, method, params)
        except RpcError as error:
            status = 404 if error.code == METHOD_NOT_FOUND else 400
            await respond(send, status, encode_error(request_id, error), "application/json")
            return
        assert isinstance(params, dict)
        meta = params["_meta"]
        streaming = method == LISTEN or LOG_LEVEL_KEY in meta or "progressToken" in meta
        running = self._running
        owner = owner_key(owner)  # a principal may be unhashable (a verifier's dict of claims)
        busy = running.get(owner, 0)
        if busy >= self.max_in_flight:
            refusal = too_many_in_flight(busy, self.max_in_flight, "this client")
            await respond(send, 429, encode_error(request_id, refusal), "application/json", RETRY_AFTER)
            return
        running[owner] = busy + 1
        try:
            if streaming:
                await self._stream(request_id, method, params, principal, receive, send)
            else:
                await self._json(request_id, method, params, principal, receive, send)
        finally:
            left = running[owner] - 1
            if left:
                running[owner] = left
            else:
                del running[owner]

    # -- checks -----------------------------------------------------------------------------

    async def _check(self, headers: Mapping[str, str], method: str, params: Any) -> None:
        server = self.server
        version_header = _field(headers, VERSION_HEADER)
        method_header = _field(headers, METHOD_HEADER)
        task_method = method in TASK_METHODS and server.task_registry is not None
        extension_method = task_method or (method in SKILL_METHODS and served_skills(server.handlers) is not None)
        name_key = TASK_ID if task_method else NAME_PARAM.get(method)
        name_header = _field(headers, NAME_HEADER)
        if version_header is None or method_header is None or (name_key is not None and name_header is None):
            missing = [
                name
                for name, value, needed in (
                    ("MCP-Protocol-Version", version_header, True),
                    ("Mcp-Method", method_header, True),
                    ("Mcp-Name", name_header, name_key is not None),
                )
                if needed and value is None
            ]
            raise _mismatch(f"missing required header {', '.join(missing)}")
        meta = params.get("_meta") if type(params) is dict else None
        if not (  # (a well-formed _meta passes this one test; anything else gets check_meta's)
            type(meta) is dict
            and type(meta.get(PROTOCOL_VERSION_KEY)) is str
            and type(meta.get(CLIENT_CAPABILITIES_KEY)) is dict
            and LOG_LEVEL_KEY not in meta
        ):
            meta = server.check_meta(params)
        body_version = meta[PROTOCOL_VERSION_KEY]
        if version_header != body_version:
            raise _mismatch(
                f"MCP-Protocol-Version {quoted(version_header)} differs from "
                f"_meta[{PROTOCOL_VERSION_KEY!r}] {quoted(body_version)}"
            )
        if method_header != method:
            raise _mismatch(f"Mcp-Method {quoted(method_header)} differs from the body's method {quoted(method)}")
        if name_key is not None:
            assert name_header is not None
            try:
                name = _decoded(name_header)
            except HeaderValueError as exc:
                raise _mismatch(f"Mcp-Name {exc}") from None
            if name != params.get(name_key):
                raise _mismatch(f"Mcp-Name {quoted(name)} differs from params.{name_key}")
        server.check_version(meta)
        if not extension_method:
            server.request_spec(method)
        if method == "tools/call":
            await self._check_param_headers(headers, params)

    async def _check_param_headers(self, headers: Mapping[str, str], params: dict[str, Any]) -> None:
        """``Mcp-Param-{Name}`` for tool arguments annotated ``x-mcp-header``: present when
        the body has a value, equal to it, and made of valid characters."""
        name = params.get("name")
        server = self.server
        if not isinstance(name, str):
            return
        if name not in server.tool_schemas.tools and not server._listed:
            token = _scope.set(RequestScope("tools/list", 0, params["_meta"], _no_emit))
            try:
                await server._load_tool_schemas()
            finally:
                _scope.reset(token)
        tool = server.tool_schemas.tools.get(name)
        schema = tool.get("inputSchema") if isinstance(tool, dict) else None
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict):
            return
        given = params.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        for prop, definition in properties.items():
            header_name = definition.get(HEADER_ANNOTATION) if isinstance(definition, dict) else None
            if not isinstance(header_name, str):
                continue
            raw = _field(headers, PARAM_HEADER_PREFIX + header_name.lower())
            value = arguments.get(prop)
            if value is None:
                continue  # not expected when the value is null or absent
            if raw is None:
                raise _mismatch(f"missing header Mcp-Param-{header_name} for argument {quoted(prop)}")
            try:
                decoded = _decoded(raw)
            except HeaderValueError as exc:
                raise _mismatch(f"Mcp-Param-{header_name} {exc}") from None
            if not _same(decoded, value):
                raise _mismatch(f"Mcp-Param-{header_name} {quoted(decoded)} differs from argument {quoted(prop)}")

    # -- replies ----------------------------------------------------------------------------

    def _start(
        self, request_id: Any, method: str, params: dict[str, Any], principal: Any,
        emit: Callable[[str, Any], Awaitable[None]],
    ) -> asyncio.Task[bytes]:
        """The request's task, its first step run at once (:func:`start_eagerly`): a handler
        that needs no I/O has answered when this returns (see :func:`returned_at_once`)."""
        answer = self.server.serve_request(
            method, params, request_id, emit, principal=principal, checked=True
        )

        def register(task: asyncio.Task[Any]) -> None:
            if principal is not None:  # only an authenticated client can cancel by id (see _cancel)
                task.mcp_owner = (principal, request_id)  # type: ignore[attr-defined]
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)

        return start_eagerly(encoded_answer(request_id, method, answer), register)

    async def _cancel_notified(self, principal: Any, params: dict[str, Any]) -> None:
        """A ``notifications/cancelled`` ``principal`` POSTed: through the server's middleware
        chain (when it has one), then the cancel of that principal's own request. A failing
        middleware is logged: a notification has no answer to carry it."""

        async def cancel(current: Any) -> None:
            request_id = current.get("requestId") if isinstance(current, dict) else None
            if not self._cancel(principal, request_id) and self.cancel_elsewhere is not None:
                await self.cancel_elsewhere(principal, request_id)

        chain = self.server.middleware
        if chain is None:
            return await cancel(params)
        meta = params.get("_meta")
        version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
        ctx = stateless_context(self.server, CANCELLED, params, None, version, principal)
        try:
            await chain.run(ctx, lambda current: cancel(current.params))
        except Exception:
            logger.exception("a server middleware failed on notifications/cancelled; it was dropped")

    def _cancel(
        self, principal: Any, request_id: Any, *, match: Callable[[Any], bool] | None = None
    ) -> bool:
        """A stdio-style cancel POSTed over HTTP (closing the stream is this era's way): it
        reaches the in-flight requests with that id of the same principal, no one else's
        (``match`` tells the principal instead, for a cancel another worker passed on).
        Whether it reached one."""
        if not is_request_id(request_id):
            return False
        found = False
        for task in list(self._inflight):
            owner, owned_id = task.mcp_owner  # type: ignore[attr-defined]
            if owned_id == request_id and (match(owner) if match is not None else owner == principal):
                task.mcp_cancelled = True  # type: ignore[attr-defined]
                task.cancel()
                found = True
        return found

    async def _json(
        self, request_id: Any, method: str, params: dict[str, Any], principal: Any,
        receive: Receive, send: Send,
    ) -> None:
        if principal is None and INLINE_HANDLERS:
            await self._json_inline(request_id, method, params, receive, send)
            return
        task = self._start(request_id, method, params, principal, _no_emit)
        if returned_at_once(task):  # answered already: no hang-up left to watch for
            reply: bytes = returned_value(task)
            await respond(send, _status_of(reply, request_id), reply, "application/json")
            return
        hangup = asyncio.ensure_future(disconnected(receive))
        try:
            await asyncio.wait({task, hangup}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # this reply itself is cancelled (the server stops, say)
            task.cancel()
            raise
        finally:
            hangup.cancel()
        if not task.done():  # the client left: the request is cancelled (H-20)
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
            return
        answered = _reply_of(task, request_id)
        if answered is None:
            await _respond_no_content(send)
            return
        await respond(send, _status_of(answered, request_id), answered, "application/json")

    async def _json_inline(
        self, request_id: Any, method: str, params: dict[str, Any], receive: Receive, send: Send
    ) -> None:
        """A JSON reply whose handler runs in this ASGI call's own task, with no task of its
        own (what creating, scheduling and switching to one costs is a tenth of a typical
        call): without auth no cancel names the request, so only a hang-up can end it, and
        the watch for one starts only if the handler suspends (:class:`HangupWatch`)."""
        answer = encoded_answer(request_id, method, self.server.serve_request(
            method, params, request_id, _no_emit, principal=None, checked=True))
        watch = HangupWatch(receive)
        try:
            reply: bytes = await Inline(answer, watch.start)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if watch.hung_up:  # the client left: the request is cancelled (H-20), nothing is sent
                watch.forget_cancel()
                if current is not None and _cancelling(current):
                    raise  # (and this reply itself was cancelled too)
                return
            if current is not None and _cancelling(current):
                raise  # this reply itself is cancelled (the server stops, say)
            logger.error("the handler of request %r raised CancelledError, but no one cancelled it", request_id)
            reply = encode_error(request_id, RpcError(INTERNAL_ERROR, "Internal error"))
        finally:
            watch.stop()
        if watch.hung_up:  # (the handler caught the cancel and answered: the client is gone)
            watch.forget_cancel()
            return
        await respond(send, _status_of(reply, request_id), reply, "application/json")

    async def _stream(
        self, request_id: Any, method: str, params: dict[str, Any], principal: Any,
        receive: Receive, send: Send,
    ) -> None:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        room = asyncio.Event()  # set while the queue is under MAX_QUEUED_EVENTS
        room.set()

        async def emit(notification: str, notification_params: Any) -> None:
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": notification}
            if notification_params is not None:
                message["params"] = notification_params
            queue.put_nowait(encode(message))
            if queue.qsize() >= MAX_QUEUED_EVENTS:  # the client reads slower than we write:
                room.clear()  # the handler waits, rather than the queue growing without bound
                await room.wait()

        task = self._start(request_id, method, params, principal, emit)
        task.add_done_callback(lambda done: queue.put_nowait(None))
        hangup = asyncio.ensure_future(disconnected(receive))
        getting: asyncio.Future[bytes | None] | None = None
        started = False
        try:
            while True:
                getting = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait(
                    {getting, hangup}, timeout=self.keepalive_seconds,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                if hangup in done:
                    break
                if not started and (getting in done and task.done() and queue.empty()):
                    # finished before sending anything else: a plain JSON reply will do...
                    # ...unless it is an error whose status is not 200
                    reply = _reply_of(task, request_id)
                    if reply is None:
                        await _respond_no_content(send)
                    else:
                        await respond(send, _status_of(reply, request_id), reply, "application/json")
                    return
                if not started:
                    await send({"type": "http.response.start", "status": 200, "headers": SSE_HEADERS})
                    started = True
                if getting not in done:
                    getting.cancel()
                    await _send_chunk(send, b": keep-alive\n\n")
                    continue
                data = getting.result()
                if not room.is_set() and queue.qsize() <= MAX_QUEUED_EVENTS // 2:
                    room.set()
                if data is None:
                    reply = _reply_of(task, request_id)
                    if reply is not None:  # else cancelled: the stream ends with nothing more
                        await _send_chunk(send, b"event: message\ndata: " + reply + b"\n\n")
                    break
                await _send_chunk(send, b"event: message\ndata: " + data + b"\n\n")
        finally:
            hangup.cancel()
            if getting is not None:  # a reader left waiting on the queue would never end
                getting.cancel()
            if not task.done():  # the client closed the stream: the request is cancelled
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if started:
            with contextlib.suppress(Exception):
                await send({"type": "http.response.body", "body": b"", "more_body": False})


#: Whether a JSON reply's handler may run in the ASGI call's own task: it needs
#: ``Task.cancelling()`` and ``Task.uncancel()`` (Python 3.11).
INLINE_HANDLERS = sys.version_info >= (3, 11)

if sys.version_info >= (3, 11):

    def _cancelling(task: asyncio.Task[Any]) -> int:
        return task.cancelling()

    def _uncancel(task: asyncio.Task[Any]) -> None:
        task.uncancel()

else:  # (never called: INLINE_HANDLERS is False)

    def _cancelling(task: asyncio.Task[Any]) -> int:
        return 0

    def _uncancel(task: asyncio.Task[Any]) -> None:
        return None


class HangupWatch:
    """Watches for the client's hang-up while an inline handler (:class:`Inline`) waits:
    started when the handler first suspends; a hang-up cancels the task it runs in."""

    __slots__ = ("hung_up", "receive", "task", "watcher")

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.task: asyncio.Task[Any] | None = None
        self.watcher: asyncio.Future[None] | None = None
        self.hung_up = False

    def start(self) -> None:
        """Watch from now on (called in the task the handler runs in)."""
        self.task = asyncio.current_task()
        self.watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        await disconnected(self.receive)
        self.hung_up = True
        if self.task is not None:
            self.task.cancel()

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()

    def forget_cancel(self) -> None:
        """The hang-up's cancel has been handled: the task goes on uncancelled."""
        if self.task is not None:
            _uncancel(self.task)


class Inline:
    """Awaits a coroutine in the awaiting task itself, as ``await coro`` would, and calls
    ``on_suspend`` once, when the coroutine first waits (never for one that answers at
    once)."""

    __slots__ = ("coro", "on_suspend")

    def __init__(self, coro: Coroutine[Any, Any, Any], on_suspend: Callable[[], None]) -> None:
        self.coro = coro
        self.on_suspend = on_suspend

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        try:
            waiting = coro.send(None)
        except StopIteration as done:
            return done.value
        self.on_suspend()
        return (yield from _resumed(coro, waiting))


def _resumed(coro: Coroutine[Any, Any, Any], waiting: Any) -> Generator[Any, Any, Any]:
    """The rest of a coroutine that suspended on ``waiting``: what its task sends or throws
    goes on to it."""
    while True:
        try:
            sent = yield waiting
        except BaseException as thrown:  # (cancellation, or the task closing it)
            try:
                waiting = coro.throw(thrown)
            except StopIteration as done:
                return done.value
        else:
            try:
                waiting = coro.send(sent)
            except StopIteration as done:
                return done.value


def claims(
    headers: Mapping[str, str],
    message: Any,
    legacy_versions: list[str],
    modern_versions: list[str],
) -> bool:
    """Whether a POST belongs to the stateless era (checklist H-52).

    A stateless-era version header wins, and a session header beside it is ignored (H-37).
    A session header otherwise means the handshake era (whose session then judges a bad
    version header). Without either, a version header naming no handshake-era revision, or
    a ``_meta`` naming a protocol version, means the stateless era.
    """
    version = headers.get(VERSION_HEADER)
    if version in modern_versions:
        return True
    if headers.get("mcp-session-id") is not None:
        return False
    if version is not None:
        return version not in legacy_versions
    return isinstance(message, dict) and modern_meta(message.get("params")) is not None


def asks_stateless_era(headers: Mapping[str, str], message: Any) -> bool:
    """Whether a POST without a session is a 2026-07-28 request (``server/discover``, or a
    version in ``_meta``), which a handshake-only server refuses saying why."""
    return (
        "mcp-session-id" not in headers
        and isinstance(message, dict)
        and is_request_id(message.get("id"))
        and (message.get("method") == DISCOVER or modern_meta(message.get("params")) is not None)
    )


#: :func:`decode_header_value`, remembered per value (a client names the same tools again and
#: again); a value it refuses is refused each time (an exception is not remembered).
_decoded = functools.lru_cache(maxsize=256)(decode_header_value)


def _field(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value without the optional whitespace around it, which is not part of
    the value (RFC 9110, 5.5); None when the header is absent."""
    value = headers.get(name)
    return None if value is None else value.strip(" \t")


def _same(header_value: str, body_value: Any) -> bool:
    """Header and body agree; numbers compare numerically (``42`` equals ``42.0``)."""
    if isinstance(body_value, bool | str):
        return header_value == header_form(body_value)
    if isinstance(body_value, int | float):
        try:
            return float(header_value) == float(body_value)
        except ValueError:
            return False
    return False


def _status_of(reply: bytes, request_id: Any) -> int:
    """The HTTP status of a JSON reply: 200 for a result (known by the prefix the encoder
    writes, without parsing the reply), else by its error code."""
    if is_request_id(request_id) and reply.startswith(
        b'{"jsonrpc":"2.0","id":' + encode_id(request_id) + b',"result":'
    ):
        return 200
    code = error_code(reply)
    if code is None:
        return 200
    if code == METHOD_NOT_FOUND:
        return 404
    return 400 if code in BAD_REQUEST_CODES else 200


def _reply_of(task: asyncio.Task[bytes], request_id: Any) -> bytes | None:
    """The encoded reply of a finished request task; None if the client cancelled it (then
    nothing more may be sent for it). A handler that raised CancelledError itself, with no
    one cancelling it, is a failing handler: -32603, as for any other exception."""
    if not task.cancelled():
        return task.result()
    if getattr(task, "mcp_cancelled", False):
        return None
    logger.error("the handler of request %r raised CancelledError, but no one cancelled it", request_id)
    return encode_error(request_id, RpcError(INTERNAL_ERROR, "Internal error"))


async def _respond_no_content(send: Send) -> None:
    """The end of a request cancelled before its reply: 204, no body (RFC 9110 forbids a
    Content-Length on a 204)."""
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _no_emit(method: str, params: Any) -> None:
    """JSON replies carry no notifications (none can arise without a token or level)."""


async def _send_chunk(send: Send, chunk: bytes) -> None:
    await send({"type": "http.response.body", "body": chunk, "more_body": True})
