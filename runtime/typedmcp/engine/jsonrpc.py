"""The JSON-RPC 2.0 engine: ids, futures, errors, cancellation. It knows method strings only.

A transport hands it framed messages (bytes) and takes framed messages back; the typed seam
above it (``typedmcp.protocol.session``) gives it a :class:`Dispatcher` for incoming requests and
notifications. Requests are served concurrently (one asyncio task each), so a slow handler
never blocks others; responses to our own requests resolve futures.

Request tasks start eagerly (:func:`~.eager.start_eagerly`, what Python 3.12's ``eager_start``
does): the handler runs at
once, inside its own task (``asyncio.current_task()`` is that task, its context a copy of
the caller's), up to its first real suspension; a handler that completes without one has
sent its response before the message that asked for it is out of the read path.

What one peer can make it run is bounded: a batch holds at most ``max_batch`` messages (a
longer one is refused whole), and at most ``max_in_flight`` of the peer's requests run at
once: at the limit the read loop reads no more requests until one ends (backpressure), and
a request it cannot wait for is refused with -32029 (see :meth:`Engine._wait_for_room`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel
from pydantic_core import to_json

from .eager import start_eagerly
from .peer_json import NonFiniteNumber, decode
from .lane import LaneMethods, RequestLane, _Callback

logger = logging.getLogger("typedmcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: "Slow down": a request refused because its sender has too many in flight (and, with the
#: same code, one a rate limit refuses: ``protocol.middleware_builtin.RATE_LIMITED``).
TOO_MANY_REQUESTS = -32029

#: The most messages one JSON-RPC batch may hold (the ``max_batch`` option of every server
#: launcher). A 2025-03-26 client batches what it has to send at once, a handful; 100
#: covers that many times over, and bounds what one message (one 4 MiB POST, one stdio
#: line) can start: 40,000 ``tools/call`` in one batch were 19.8 s of another session's wait.
DEFAULT_MAX_BATCH = 100
#: The most requests of one connection (a stdio or HTTP+SSE connection, a handshake-era
#: HTTP session) that run at once (the ``max_in_flight`` option); a batch counts each of
#: its requests. Well above what a model drives in parallel, and it keeps one client
#: from holding the event loop (and memory) that every other client shares.
DEFAULT_MAX_IN_FLIGHT = 256
#: The options of every server launcher that set these two limits of its connections.
LIMIT_OPTIONS = frozenset({"max_batch", "max_in_flight"})
#: How often a read loop waiting for room under ``max_in_flight`` looks again whether a
#: handler now waits for the peer (seconds; see :meth:`Engine._wait_for_room`).
ROOM_POLL = 0.1
#: The longest a read loop waits for room under ``max_in_flight`` (seconds): then the
#: request it holds is refused (-32029) and reading goes on, so what the peer sent behind
#: it (a cancel of a request in flight) is read.
ROOM_WAIT = 5.0

RequestId = str | int

#: The most characters of one peer-supplied value (a method name, an id, a key, ...) that an
#: error message or a log line quotes (see :func:`clip`).
ECHO_LIMIT = 100
#: The most characters of any error message sent: the bound behind every quote, for a
#: message built elsewhere (a handler's own, a header value an HTTP check names).
MESSAGE_LIMIT = 2048


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """At most ``limit`` characters of peer-supplied ``text``, to quote in an error or a log
    line; a longer text is cut and says how much was left out (a 100 KB method name must not
    come back as a 100 KB error)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def quoted(value: Any, limit: int = ECHO_LIMIT) -> str:
    """``repr(value)`` for an error message or a log line, clipped (see :func:`clip`)."""
    try:
        return clip(repr(value), limit)
    except ValueError:  # an integer too long to print
        return f"<{type(value).__name__} too long to print>"


class RpcError(Exception):
    """A JSON-RPC error, raised by handlers or received from the peer."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        """The error object to send; its message cut to :data:`MESSAGE_LIMIT` characters."""
        message = self.message
        if len(message) > MESSAGE_LIMIT:
            message = clip(message, MESSAGE_LIMIT)
        error: dict[str, Any] = {"code": self.code, "message": message}
        if self.data is not None:
            error["data"] = self.data
        return error

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r})"


class CapabilityError(RuntimeError):
    """A message the negotiated capabilities do not allow; raised locally, nothing sent.

    Its message names the method and the capability; a handler that raises it (it used a
    capability the peer never declared) is logged in that one line, without a traceback.
    """


class ConnectionClosed(Exception):
    """The transport ended while a request of ours was waiting for its response."""


class Transport(Protocol):
    """Framing: one JSON-RPC message (or batch) per ``receive``/``send``."""

    async def receive(self) -> bytes | None:
        """The next framed message, or None at end of input."""
        ...

    async def send(self, data: bytes) -> None:
        """Write one framed message."""
        ...


class Dispatcher(Protocol):
    """The typed seam: serves what the peer sends."""

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        """Answer a request: return the result (a model or JSON-able value) or raise RpcError."""
        ...

    async def on_notification(self, method: str, params: Any) -> None:
        """Take a notification; never answered."""
        ...


def batch_too_long(length: int, max_batch: int) -> RpcError:
    """The -32600 a batch of ``length`` messages gets when it is over ``max_batch``."""
    return RpcError(
        INVALID_REQUEST,
        f"Invalid Request: a batch of {length} messages is over this server's limit of "
        f"{max_batch} (its max_batch option); send at most {max_batch} per batch",
    )


def too_many_in_flight(in_flight: int, max_in_flight: int, whose: str = "this connection") -> RpcError:
    """The -32029 a request (or a batch) gets when its connection (``whose``) already has
    ``in_flight`` requests running and ``max_in_flight`` allows no more."""
    return RpcError(
        TOO_MANY_REQUESTS,
        f"Too many requests in flight: {whose} has {in_flight} requests running, "
        f"the server's limit is {max_in_flight} (its max_in_flight option); wait for answers "
        "before sending more",
        {"retryAfterSeconds": 1, "limit": f"max_in_flight={max_in_flight}"},
    )


def checked_limit(name: str, value: int) -> int:
    """``value`` of option ``name`` (a count limit), or a ValueError that says what to give."""
    if type(value) is not int or value < 1:
        raise ValueError(f"{name} must be a whole number of at least 1 (got {value!r})")
    return value


class MessageTooLarge(Exception):
    """Raised by a transport's ``receive`` for a message over its size limit (already
    discarded); the engine answers with an id-less -32600 and reads on."""


@dataclass
class _Incoming:
    task: asyncio.Task[bytes | None]
    cancelled: bool = False
    method: str = ""


def is_request_id(value: Any) -> bool:
    """JSON-RPC ids MCP allows: strings and integers (never bool, float or null)."""
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def encode(message: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON (no raw newlines, so one message per stdio line).

    NaN and infinities are refused (they are not JSON): a ValueError, never a bad line.
    pydantic-core's serializer is used (about 7x faster than ``json.dumps``); when its
    output may hold a non-JSON constant, the strict standard-library path decides.
    """
    data = to_json(message)
    if b"NaN" in data or b"Infinity" in data:
        return json.dumps(
            message, ensure_ascii=False, allow_nan=False, separators=(",", ":")
        ).encode("utf-8")
    return data


def parse_error(data: bytes, exc: ValueError) -> RpcError:
    """The -32700 for ``data``, which ``from_json`` refused with ``exc``. Every parse of
    what a peer sent passes ``allow_inf_nan=False``: ``NaN`` and the infinities are not JSON
    (the parser's default takes them), and the message says so when they may be the cause."""
    hint = ""
    if b"NaN" in data or b"Infinity" in data:
        hint = " (NaN, Infinity and -Infinity are not JSON: send numbers, or null)"
    return RpcError(PARSE_ERROR, f"Parse error: {exc}{hint}")


def encode_result(request_id: RequestId, result: Any) -> bytes:
    """A success response; a pydantic result is serialised once, by its own serializer
    (straight to bytes: ``model_dump_json`` would decode them to text first)."""
    if isinstance(result, BaseModel):
        body = result.__pydantic_serializer__.to_json(result, by_alias=True, exclude_unset=True)
        return b'{"jsonrpc":"2.0","id":' + encode_id(request_id) + b',"result":' + body + b"}"
    return encode({"jsonrpc": "2.0", "id": request_id, "result": result})


def encode_id(request_id: RequestId) -> bytes:
    if type(request_id) is int:
        return str(request_id).encode()
    return to_json(request_id)


async def encoded_answer(request_id: RequestId, method: str, answer: Awaitable[Any]) -> bytes:
    """The response to request ``request_id`` as bytes, once ``answer`` (its handler's
    coroutine) ends: the result, the ``RpcError`` it raised, or -32603 for anything else
    (logged with its traceback; nothing of it is sent)."""
    try:
        return encode_result(request_id, await answer)
    except RpcError as error:
        return encode_error(request_id, error)
    except Exception as error:
        return encode_error(request_id, handler_failed(method, request_id, error))


def handler_failed(method: str, request_id: RequestId | None, error: Exception) -> RpcError:
    """Log a handler's exception and return the error to answer with (-32603, nothing of
    the exception in it). A bug is logged with its traceback; a :class:`CapabilityError`
    (the handler used a capability the peer never declared) in one line that names it.
    ``request_id`` None: a notification's handler."""
    which = f"handler for {clip(method)}"
    if request_id is not None:
        which += f" (id {quoted(request_id)})"
    if isinstance(error, CapabilityError):
        logger.warning("%s used what the peer did not negotiate: %s", which, error)
    else:
        logger.error("%s failed", which, exc_info=error)
    return RpcError(INTERNAL_ERROR, "Internal error")


def encode_error(request_id: RequestId | None, error: RpcError) -> bytes:
    """An error response; without ``id`` when the request's id could not be read."""
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        message["id"] = request_id
    message["error"] = error.to_wire()
    try:
        return encode(message)
    except (TypeError, ValueError):
        logger.exception("error data for %s is not JSON; sent without it", quoted(request_id))
        message["error"] = {"code": error.code, "message": error.message}
        return encode(message)


class Engine(LaneMethods):
    """One JSON-RPC connection over a :class:`Transport`, both directions at once."""

    #: Methods that must not appear inside a batch (2025-03-26: ``initialize``).
    unbatchable: frozenset[str] = frozenset({"initialize"})
    #: Requests the peer may not cancel (``initialize``); such a cancel is ignored.
    uncancellable: frozenset[str] = frozenset({"initialize"})
    #: Run a request's handler at once, in its task, up to its first suspension (see the
    #: module doc); False: the task's first step waits for the next event-loop pass.
    eager: bool = True
    #: Serves some requests without a task each (see :class:`RequestLane`); None: all go
    #: to the dispatcher, one task each.
    lane: RequestLane | None = None
    #: The longest the read loop waits for room under ``max_in_flight`` (:data:`ROOM_WAIT`).
    room_wait: float = ROOM_WAIT

    def __init__(
        self,
        transport: Transport,
        dispatcher: Dispatcher,
        *,
        accept_batches: Callable[[], bool] = lambda: False,
        eof_grace: float = 1.0,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.transport = transport
        self.dispatcher = dispatcher
        self.accept_batches = accept_batches
        self.eof_grace = eof_grace
        #: A longer batch is refused as a whole (-32600 naming the limit).
        self.max_batch = checked_limit("max_batch", max_batch)
        #: The peer's requests that may run at once (see :meth:`in_flight`): at the limit the
        #: read loop stops reading requests until one ends (see :meth:`_wait_for_room`); a
        #: request that comes in at the limit otherwise is refused (-32029).
        self.max_in_flight = checked_limit("max_in_flight", max_in_flight)
        self._room: asyncio.Event | None = None  # set when a request ends, while the reader waits
        self._reserved = 0  # requests of accepted batches whose handlers have not started yet
        self._next_id = 0
        self._pending: dict[RequestId, asyncio.Future[Any] | _Callback] = {}
        self._sending: set[asyncio.Task[None]] = set()  # send_soon's writes that had to wait
        self._incoming: dict[RequestId, _Incoming] = {}
        self._batches: set[asyncio.Task[None]] = set()
        self._closed = False

    # -- outgoing ------------------------------------------------------------------------

    def new_request_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def request(
        self, method: str, params: Any, *, request_id: RequestId | None = None
    ) -> Any:
        """Send a request and wait for its raw result; a peer error raises RpcError."""
        request_id, data = self._outgoing(method, params, request_id)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            await self.transport.send(data)
            return await future
        except BaseException:
            if future.done() and not future.cancelled():
                future.exception()  # a failed send may end after the end of input failed it
            raise
        finally:
            if self._pending.get(request_id) is future:
                del self._pending[request_id]

    def _outgoing(self, method: str, params: Any, request_id: RequestId | None) -> tuple[RequestId, bytes]:
        """A request's id and bytes (a new id unless given); ConnectionClosed once closed."""
        if self._closed:
            reason = getattr(self.transport, "closed_reason", None) or "the connection is closed"
            raise ConnectionClosed(f"cannot send {method}: {reason}")
        if request_id is None:
            request_id = self.new_request_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        return request_id, encode(message)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        if self._closed:
            return
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.transport.send(encode(message))

    # -- incoming ------------------------------------------------------------------------

    def in_flight(self) -> int:
        """How many of the peer's requests are being served now (batch elements included)."""
        lane = self.lane
        busy = len(self._incoming) + self._reserved
        return busy if lane is None else busy + len(lane)

    def _no_room_for(self, count: int) -> bool:
        """Whether ``count`` more requests would take the connection over ``max_in_flight``
        (a batch longer than the limit still runs when nothing else does)."""
        busy = self.in_flight()
        return busy > 0 and busy + count > self.max_in_flight

    async def _wait_for_room(self, count: int) -> None:
        """Backpressure: the read loop waits, reading nothing, until ``count`` more requests
        fit under ``max_in_flight``, for at most :attr:`room_wait` seconds. Not while a
        handler waits for an answer of the peer (a request of ours is pending): that answer
        may be behind what the peer sent, so waiting could never end; then this returns at
        once. It looks again every :data:`ROOM_POLL` seconds, for a handler that starts to
        wait so. Still no room when it returns: the caller refuses what it holds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.room_wait
        while not self._pending and self._no_room_for(count) and (left := deadline - loop.time()) > 0:
            room = self._room = asyncio.Event()
            try:
                await asyncio.wait_for(room.wait(), min(ROOM_POLL, left))
            except asyncio.TimeoutError:
                pass
            finally:
                self._room = None

    def cancel_incoming(self, request_id: Any) -> bool:
        """Cancel the handler of one of the peer's requests; no response will be sent,
        even if the handler ignores the cancellation and returns. Unknown or finished ids,
        and requests in ``uncancellable``, are left alone (returns False)."""
        incoming = self._incoming.get(request_id) if is_request_id(request_id) else None
        if incoming is None:
            lane = self.lane
            return lane is not None and is_request_id(request_id) and lane.cancel(request_id)
        if incoming.method in self.uncancellable:
            return False
        self._cancel(request_id, incoming)
        return True

    def _cancel(self, request_id: RequestId, incoming: _Incoming) -> None:
        incoming.cancelled = True
        incoming.task.cancel()
        # A task cancelled before it started never runs its own clean-up.
        incoming.task.add_done_callback(lambda done: self._forget(request_id, done))

    def _receive_now(self, data: bytes) -> bool:
        """The transport's fast path, called (no awaits) for a message that arrives while
        the read loop waits with nothing ahead of it: a response resolves its future and a
        well-formed request starts its handler task at once. Anything else returns False
        and goes through the read loop (which also answers errors), in order."""
        try:
            message = decode(data, cache_strings="keys")
        except ValueError:
            return False
        if type(message) is not dict:
            return False
        if "method" not in message:
            if "result" in message or "error" in message or is_request_id(message.get("id")):
                self._receive_response(message, data)
                return True
            return False
        request_id: Any = message.get("id")
        method = message["method"]
        params = message.get("params")
        if (
            (type(request_id) is not int and type(request_id) is not str and not is_request_id(request_id))
            or message.get("jsonrpc") != "2.0"
            or type(method) is not str
            or (params is not None and type(params) is not dict)
            or request_id in self._incoming
            or self.in_flight() >= self.max_in_flight
        ):
            return False  # notifications, and requests the read loop must answer with an error (or wait)
        lane = self.lane
        if lane is not None:
            if request_id in lane:
                return False  # the read loop answers the duplicate id
            if lane.take(request_id, method, params):
                return True
        self._start(request_id, method, params, send=True)
        return True

    async def run(self) -> None:
        """Read and dispatch until the transport ends; then fail what still waits.

        One bad message never stops the reader: it is answered (or dropped) and the next
        one is read. Batches are served in the background, so a slow element cannot hold
        up the reader (and so the responses our own handlers wait for).

        At end of input, handlers still running get ``eof_grace`` seconds to finish and
        send their responses (``printf '...' | server`` works); the rest are cancelled.
        Streams that would never finish on their own end first: the dispatcher's optional
        ``end_of_input()`` is called. If ``run`` itself is cancelled, handlers are
        cancelled at once.
        """
        at_eof = False
        # A transport with a fast path hands us messages in its I/O callback while this
        # loop waits (see ``_receive_now``), one event-loop pass sooner.
        set_consumer = getattr(self.transport, "set_consumer", None)
        if set_consumer is not None:
            set_consumer(self._receive_now)
        try:
            while True:
                try:
                    data = await self.transport.receive()
                except MessageTooLarge as exc:
                    await self._send_error(
                        None, RpcError(INVALID_REQUEST, f"Invalid Request: {exc}")
                    )
                    continue
                if data is None:
                    at_eof = True
                    break
                try:
                    await self._receive(data, background=True)
                except OSError:
                    raise  # the transport itself broke
                except Exception:
                    logger.exception("could not process an incoming message")
        finally:
            if set_consumer is not None:
                set_consumer(None)
            self._closed = True
            # a transport may say which peer, and how (``closed_reason``)
            reason = getattr(self.transport, "closed_reason", None) or "the peer closed the connection"
            for request_id, future in list(self._pending.items()):
                if type(future) is _Callback:
                    del self._pending[request_id]  # (request() drops its own future)
                if not future.done():
                    future.set_exception(ConnectionClosed(reason))
            if at_eof:
                end_of_input = getattr(self.dispatcher, "end_of_input", None)
                if end_of_input is not None:
                    end_of_input()
            running: list[asyncio.Future[Any]] = [incoming.task for incoming in self._incoming.values()]
            lane = self.lane
            settling = []  # what the lane serves gets the same grace (none unless at end of input)
            if lane is not None:
                settling.append(asyncio.ensure_future(lane.settle(self.eof_grace if at_eof else 0.0)))
                running += settling
            if at_eof and self.eof_grace > 0 and (running or self._batches):
                await asyncio.wait(running + list(self._batches), timeout=self.eof_grace)
            for batch in self._batches:
                batch.cancel()
            for request_id, incoming in list(self._incoming.items()):
                self._cancel(request_id, incoming)
            tasks = [incoming.task for incoming in self._incoming.values()] + list(self._batches)
            tasks += [*settling, *self._sending]
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    async def _receive(self, data: bytes, *, background: bool = False) -> None:
        """Process one framed message. A batch is served before this returns, unless
        ``background`` (the reader loop) asks for it to be served in a task of its own."""
        try:
            message = decode(data, cache_strings="keys")
        except ValueError as exc:
            logger.warning(
                "the peer sent %s (answered with a parse error): %r%s",
                "a number too large for a float" if isinstance(exc, NonFiniteNumber) else "something that is not JSON",
                data[:120],
                "..." if len(data) > 120 else "",
            )
            await self._send_error(getattr(exc, "request_id", None), parse_error(data, exc))
            return
        await self.receive_message(message, background=background)

    async def receive_message(self, message: Any, *, background: bool = False) -> None:
        """Process one message (or batch) already parsed from JSON (see :meth:`_receive`)."""
        if isinstance(message, list):
            if not self.accept_batches():
                await self._send_error(
                    None, RpcError(INVALID_REQUEST, "Invalid Request: batches are not allowed")
                )
            elif not message:
                await self._send_error(
                    None, RpcError(INVALID_REQUEST, "Invalid Request: empty batch")
                )
            elif len(message) > self.max_batch:
                await self._send_error(None, batch_too_long(len(message), self.max_batch))
            elif background:
                if self._no_room_for(len(message)):
                    await self._wait_for_room(len(message))
                if self._no_room_for(len(message)):
                    await self._send_error(None, too_many_in_flight(self.in_flight(), self.max_in_flight))
                    return
                task = self.start_batch(message)
                self._batches.add(task)
                task.add_done_callback(self._batches.discard)
            else:
                await self.start_batch(message)
            return
        if (
            background
            and self.in_flight() >= self.max_in_flight
            and type(message) is dict
            and "method" in message
            and "id" in message
        ):
            await self._wait_for_room(1)  # (a response or a cancel is read at once)
        reply = await self._route(message, in_batch=False)
        if reply is not None:
            await self.transport.send(reply)

    def start_batch(self, batch: list[Any]) -> asyncio.Task[None]:
        """Serve an accepted batch (length and room checked) in a task: its requests count
        under ``max_in_flight`` from now, before their handlers start."""
        self._reserved += len(batch)
        return asyncio.get_running_loop().create_task(self._receive_batch(batch))

    async def _receive_batch(self, batch: list[Any]) -> None:
        """Serve the elements concurrently; one array holds the replies (none: no output).
        Each element's reservation (:meth:`start_batch`) ends as it starts (a request's
        handler is in ``_incoming`` by then); what never started, as the batch ends."""
        unstarted = len(batch)

        async def element(message: Any) -> bytes | None:
            nonlocal unstarted
            unstarted -= 1
            self._reserved -= 1
            return await self._route(message, in_batch=True)

        try:
            replies = await asyncio.gather(*(element(m) for m in batch))
        finally:
            self._reserved -= unstarted
        parts = [reply for reply in replies if reply is not None]
        if parts:
            await self.transport.send(b"[" + b",".join(parts) + b"]")

    async def _route(self, message: Any, *, in_batch: bool) -> bytes | None:
        """Handle one message; returns an immediate reply to send, if any.

        A request outside a batch is started as a task (registered in ``_incoming`` before
        this returns) that sends its own response; inside a batch its reply is returned.
        """
        if not isinstance(message, dict):
            return encode_error(None, RpcError(INVALID_REQUEST, "Invalid Request: not an object"))
        has_id = "id" in message
        request_id = message.get("id")
        if "method" not in message and (
            "result" in message or "error" in message or is_request_id(request_id)
        ):
            self._receive_response(message)  # responses are never answered
            return None
        if has_id and not is_request_id(request_id):
            return encode_error(
                None, RpcError(INVALID_REQUEST, "Invalid Request: id must be a string or integer")
            )
        if message.get("jsonrpc") != "2.0":
            return encode_error(
                request_id, RpcError(INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"')
            )
        method = message.get("method")
        if not isinstance(method, str):
            return encode_error(
                request_id, RpcError(INVALID_REQUEST, "Invalid Request: method must be a string")
            )
        params = message.get("params")
        if params is not None and not isinstance(params, dict):
            error = RpcError(INVALID_PARAMS, "Invalid params: params must be an object")
            return encode_error(request_id, error) if has_id else None
        if not has_id:
            try:
                await self.dispatcher.on_notification(method, params)
            except Exception as error:
                handler_failed(method, None, error)
            return None
        assert request_id is not None
        lane = self.lane
        if request_id in self._incoming or (lane is not None and request_id in lane):
            return encode_error(
                request_id,
                RpcError(
                    INVALID_REQUEST, f"Invalid Request: id {quoted(request_id)} is already in use"
                ),
            )
        if in_batch and method in self.unbatchable:
            return encode_error(
                request_id,
                RpcError(INVALID_REQUEST, f"Invalid Request: {method} cannot be batched"),
            )
        if not in_batch and self.in_flight() >= self.max_in_flight:
            return encode_error(request_id, too_many_in_flight(self.in_flight(), self.max_in_flight))
        if not in_batch and lane is not None and lane.take(request_id, method, params):
            return None
        task = self._start(request_id, method, params, send=not in_batch)
        if not in_batch:
            return None
        await asyncio.wait({task})
        return None if task.cancelled() else task.result()

    def _start(
        self, request_id: RequestId, method: str, params: Any, *, send: bool
    ) -> asyncio.Task[bytes | None]:
        """Serve a request in a task of its own, registered in ``_incoming`` before its
        handler starts (eagerly, unless ``eager`` is off)."""
        coro = self._serve_task(request_id, method, params, send=send)

        def register(task: asyncio.Task[Any]) -> None:
            self._incoming[request_id] = _Incoming(task, method=method)

        if self.eager:
            return start_eagerly(coro, register)
        task = asyncio.get_running_loop().create_task(coro)
        register(task)
        return task

    def _forget(self, request_id: RequestId, task: asyncio.Future[Any] | None) -> None:
        """Drop a finished request's entry (its own, not a later request's with the id)."""
        incoming = self._incoming.get(request_id)
        if incoming is not None and incoming.task is task:
            del self._incoming[request_id]
            if self._room is not None:
                self.request_ended()

    def request_ended(self) -> None:
        """A request (a handler task's, or one the lane served) has ended: room under
        ``max_in_flight``, for the read loop if it waits for some."""
        room = self._room
        if room is not None:
            room.set()

    def _was_cancelled(self, request_id: RequestId) -> bool:
        incoming = self._incoming.get(request_id)  # ours until our done callback runs
        return incoming is None or incoming.cancelled

    async def _serve_task(
        self, request_id: RequestId, method: str, params: Any, *, send: bool
    ) -> bytes | None:
        """Serve one request; the reply is sent (or returned, in a batch) unless cancelled.

        The task drops its own ``_incoming`` entry as it ends (no done callback, so no
        extra event-loop pass per request); ``_cancel`` covers a task that never started.
        """
        try:
            reply = await encoded_answer(
                request_id, method, self.dispatcher.on_request(method, params, request_id)
            )
            if self._was_cancelled(request_id):
                logger.debug("no response for cancelled request %s", quoted(request_id))
                return None
            if not send:
                return reply
            try:
                await self.transport.send(reply)
            except Exception:
                logger.exception("could not send the response to %s", quoted(request_id))
            return None
        finally:
            self._forget(request_id, asyncio.current_task())

    def _receive_response(self, message: dict[str, Any], data: bytes | None = None) -> None:
        """Settle our request's future (or callback) with the response ``message``
        (parsed from the line ``data``, when the fast read path has it)."""
        request_id = message.get("id")
        future = (self._pending.get(request_id) if type(request_id) is int or is_request_id(request_id)  # type: ignore[arg-type]
                  else None)
        if future is None or (type(future) is not _Callback and future.done()):  # (a _Callback waits till it is answered)
            logger.debug("dropped a response for unknown id %s", quoted(request_id))
            return
        has_result, error = "result" in message, message.get("error")
        if message.get("jsonrpc") != "2.0" or has_result == ("error" in message):
            logger.warning("dropped a malformed response for id %s", quoted(request_id))
            return
        if has_result:
            if type(future) is _Callback:  # answered (request() drops its own future)
                del self._pending[request_id]  # type: ignore[arg-type]
                if data is not None:
                    future.set_line(message, data)
                    return
            future.set_result(message["result"])
            return
        code = error.get("code") if isinstance(error, dict) else None
        if not isinstance(error, dict) or not isinstance(code, int) or isinstance(code, bool):
            logger.warning(
                "dropped an error response with a malformed error for id %s", quoted(request_id)
            )
            return
        if type(future) is _Callback:
            del self._pending[request_id]  # type: ignore[arg-type]
        text = error.get("message")
        future.set_exception(
            RpcError(code, text if isinstance(text, str) else "", error.get("data"))
        )

    async def _send_error(self, request_id: RequestId | None, error: RpcError) -> None:
        await self.transport.send(encode_error(request_id, error))
