"""A lane for requests served without a task each (:attr:`.jsonrpc.Engine.lane`), and the
engine's callback-based sends it answers with (:class:`LaneMethods`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from pydantic_core import to_json

logger = logging.getLogger("typedmcp")

RequestId = str | int
#: method names as JSON (``_outgoing_json``'s)
_METHODS: dict[str, bytes] = {}


class RequestLane(Protocol):
    """A callback-based way to serve some of the peer's requests without a task each
    (:attr:`Engine.lane`): the engine offers it each well-formed request outside a batch
    before starting a handler task; a request it takes is its own to answer (through
    :meth:`Engine.send_soon`), to cancel, and to finish or drop at the end of input."""

    def take(self, request_id: RequestId, method: str, params: dict[str, Any] | None) -> bool:
        """Serve this request (True), or leave it to the usual path (False)."""
        ...

    def cancel(self, request_id: RequestId) -> bool:
        """The peer cancelled a request: drop it unanswered (False: not one of the lane's)."""
        ...

    def __contains__(self, request_id: object) -> bool:
        """Whether a request with this id is being served by the lane."""
        ...

    def __len__(self) -> int:
        """How many requests the lane serves now (they count under ``max_in_flight``; the
        lane calls :meth:`Engine.request_ended` as each ends)."""
        ...

    async def settle(self, grace: float) -> None:
        """The input ended: wait up to ``grace`` seconds for what the lane serves, then drop the rest."""
        ...


#: Takes a success response as parsed and its line as it came (:meth:`Engine.request_soon`).
LineAnswer = Callable[[dict[str, Any], bytes], None]


class _Callback:
    """A pending request of ours answered by a call (``on_answer(result, error)``) instead
    of a future (:meth:`Engine.request_soon`); the read path treats it as a future."""

    __slots__ = ("_done", "on_answer", "on_line")

    def __init__(
        self, on_answer: Callable[[Any, BaseException | None], None], on_line: LineAnswer | None = None
    ) -> None:
        self.on_answer = on_answer
        self.on_line = on_line
        self._done = False

    def done(self) -> bool:
        return self._done

    def set_result(self, result: Any) -> None:
        self._done = True
        self.on_answer(result, None)

    def set_exception(self, error: BaseException) -> None:
        self._done = True
        self.on_answer(None, error)

    def set_line(self, message: dict[str, Any], data: bytes) -> None:
        """A success response, parsed (``message``) and as it came (``data``, the line the
        engine's fast read path parsed it from): ``on_line`` takes both, when given."""
        self._done = True
        on_line = self.on_line
        if on_line is None:
            self.on_answer(message["result"], None)
        else:
            on_line(message, data)


class LaneMethods:
    """The engine's sends that never wait (a part of :class:`.jsonrpc.Engine`)."""

    transport: Any
    _closed: bool
    _pending: dict[RequestId, Any]
    _sending: set[asyncio.Task[None]]

    def _outgoing(self, method: str, params: Any, request_id: RequestId | None) -> tuple[RequestId, bytes]:
        raise NotImplementedError  # (the engine's)

    def new_request_id(self) -> int:
        raise NotImplementedError  # (the engine's)

    def _outgoing_json(self, method: str, params_json: bytes, request_id: RequestId | None) -> tuple[RequestId, bytes]:
        """:meth:`_outgoing` for params already written as JSON (as ``encode`` writes them)."""
        if self._closed:
            return self._outgoing(method, None, request_id)  # (raises ConnectionClosed)
        if request_id is None:
            request_id = self.new_request_id()
        written_id = b"%d" % request_id if type(request_id) is int else to_json(request_id)
        written_method = _METHODS.get(method)
        if written_method is None:
            if len(_METHODS) >= 64:
                _METHODS.clear()
            written_method = _METHODS[method] = to_json(method)
        return request_id, (b'{"jsonrpc":"2.0","id":' + written_id + b',"method":' + written_method
                            + b',"params":' + params_json + b"}")

    def request_soon(
        self, method: str, params: Any, on_answer: Callable[[Any, BaseException | None], None],
        *, request_id: RequestId | None = None, on_line: LineAnswer | None = None,
        params_json: bytes | None = None,
    ) -> RequestId:
        """Send a request without waiting: ``on_answer(result, None)`` or ``on_answer(None,
        error)`` is called (once, from the read path) when its response arrives or the
        connection ends; :meth:`forget_request` drops it first. Returns its id.

        With ``on_line``, a success response that the transport's fast read path hands
        over as a line goes to ``on_line(message, line)`` instead (the parsed message and
        the line's bytes, to relay as they came); ``on_answer`` still takes the rest.
        ``params_json``: ``params`` as ``encode`` writes them, when the caller has that at hand."""
        if params_json is None:
            request_id, data = self._outgoing(method, params, request_id)
        else:
            request_id, data = self._outgoing_json(method, params_json, request_id)
        self._pending[request_id] = _Callback(on_answer, on_line)
        self.send_soon(data)
        return request_id

    def forget_request(self, request_id: RequestId) -> None:
        """Drop one of :meth:`request_soon`'s requests: its answer, if one comes, is ignored."""
        pending = self._pending.get(request_id)
        if isinstance(pending, _Callback):
            del self._pending[request_id]

    def send_soon(self, data: bytes) -> None:
        """Write one framed message without waiting: at once when the transport takes it
        so (its ``send_now``), else by a task of its own (as :meth:`send` would: a response
        a handler finishes while the engine winds down is still written)."""
        send_now = getattr(self.transport, "send_now", None)
        if send_now is not None and not self._sending and send_now(data):
            return  # (behind a write still waiting, a message waits too: order holds)
        task = asyncio.get_running_loop().create_task(self._send_logged(data))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send_logged(self, data: bytes) -> None:
        try:
            await self.transport.send(data)
        except Exception:
            logger.exception("could not send a message")


__all__ = ["LaneMethods", "LineAnswer", "RequestLane"]
