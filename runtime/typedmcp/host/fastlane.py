"""The pass-through's lane: routed calls relayed without a task, a future or a model each.

:class:`PassLane` is the gateway connection's :class:`~typedmcp.engine.lane.RequestLane`.
A request the pass-through accepts (:meth:`.fastpath.PassThrough._plan`) is sent to its
server at once, in the read path that parsed it (:meth:`Engine.request_soon
<typedmcp.engine.lane.LaneMethods.request_soon>`), and registered here by the caller's id;
when the server's answer line arrives, its read path calls :meth:`_Call.__call__`, which
completes the result as :class:`~.fastpath.PassThrough` does and writes it to the caller
(:meth:`Engine.send_soon <typedmcp.engine.lane.LaneMethods.send_soon>`); when that result
may be relayed as the server's line came, the answer is spliced from it (:mod:`.splice`).
A server's time limit is a deadline per call, watched by one timer of the lane's (set for
the soonest deadline). What stays the task path's (a task, then):
input rounds (a result that asks for input), and what the engine's lane never sees (batches).

Cancellation by the caller drops the call unanswered and tells the server; a time limit
answers as the usual path does (and tells the server); progress is relayed as there
(:class:`~.fastpath._Relay`); at the end of input calls still running get the engine's grace.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from pydantic_core import to_json

from ..engine.jsonrpc import ConnectionClosed, RequestId, RpcError, encode_error, encode_result, handler_failed
from .fastpath import PASSED, PassThrough, _relayed, _Route
from .splice import AnswerSplice

_CONNECTION_ERRORS = (ConnectionClosed, ConnectionError, OSError)
#: how many server connections' constant ``_meta`` are kept written (more: the table starts again)
_METAS_KEPT = 256
#: how early the alarm may ring, seconds (uvloop's timers count whole milliseconds)
_CLOCK_SLACK = 0.001


class _Call:
    """One call in the lane: the caller's id, its route, the server connection's engine
    and its id there, the time limit's handle, the gateway's progress token, and the task
    that serves its input rounds, if it asked for input."""

    __slots__ = ("caller_id", "deadline", "lane", "outgoing", "rounds", "route", "upstream", "upstream_id")

    def __init__(self, lane: PassLane, caller_id: RequestId, route: _Route, upstream: Any) -> None:
        self.lane = lane
        self.caller_id = caller_id
        self.route = route
        self.upstream = upstream
        self.upstream_id: RequestId = 0
        self.outgoing: str | None = None
        #: when the server's time limit runs out (the loop's clock); None: no limit (now)
        self.deadline: float | None = None
        self.rounds: asyncio.Task[None] | None = None

    def __call__(self, result: Any, error: BaseException | None) -> None:
        """The server answered (or its connection ended): answer the caller."""
        self.lane._answered(self, result, error)

    def line(self, message: dict[str, Any], data: bytes) -> None:
        """The server's success response, parsed and as its line came: the caller's
        answer spliced from the line when that gives what the parse path gives
        (:mod:`.splice`), else as :meth:`__call__` answers it."""
        lane = self.lane
        if lane.calls.get(self.caller_id) is not self:
            return  # cancelled or timed out meanwhile
        route = self.route
        spliced = lane.splice.answer(
            route.method, self.caller_id, self.upstream_id, route.runtime.session, route.tool, message, data)
        if spliced is None:
            lane._answered(self, message["result"], None)
            return
        lane.spliced += 1
        lane._end(self)
        engine = lane.passage.engine
        if engine is not None:
            engine.send_soon(spliced)


class PassLane:
    """The engine's lane for the calls :class:`~.fastpath.PassThrough` relays (see the module doc)."""

    def __init__(self, passage: PassThrough) -> None:
        self.passage = passage
        #: builds answers from the server's lines (:mod:`.splice`)
        self.splice = AnswerSplice(passage.modern)
        #: answers spliced from the server's line (tests and benchmarks read it)
        self.spliced = 0
        #: the calls in the lane, by the caller's id
        self.calls: dict[RequestId, _Call] = {}
        self._telling: set[asyncio.Task[None]] = set()  # notifications/cancelled to servers
        self._idle: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: one timer for the lane's time limits: at the soonest deadline of its calls
        #: (a limit is per server, so later calls rarely move it; a timer per call cost
        #: more than the rest of the call's relay)
        self._alarm: asyncio.TimerHandle | None = None
        self._alarm_at = 0.0
        #: id -> (a server connection's constant _meta, written)
        self._metas: dict[int, tuple[dict[str, Any], bytes]] = {}

    def __contains__(self, request_id: object) -> bool:
        return request_id in self.calls

    def __len__(self) -> int:
        return len(self.calls)

    def take(self, request_id: RequestId, method: str, params: dict[str, Any] | None) -> bool:
        """Relay this request when the pass-through would; else leave it to the engine's task path."""
        if method not in PASSED:
            return False
        passage = self.passage
        route = passage._plan(method, params)
        if route is None:
            return False
        upstream = route.runtime.session.engine
        if upstream is None:
            return False  # the task path words the error
        passage.passed += 1
        call = _Call(self, request_id, route, upstream)
        written = to_json(route.wire)  # (name and arguments: _address puts the _meta last)
        call.outgoing = passage._address(route)
        self.calls[request_id] = call
        try:
            call.upstream_id = upstream.request_soon(
                method, route.wire, call, on_line=call.line, params_json=self._params_json(call, written))
        except _CONNECTION_ERRORS as error:
            self._answered(call, None, error)
            return True
        except ValueError as error:  # arguments the encoder refuses (a number too large: inf)
            failure = error
            self._end(call)
            self._reply(call, lambda: _raise(failure))  # -32603, logged, as the task path answers
            return True
        limit = route.runtime.config.timeout
        if limit:
            loop = self._loop or self._bind()
            call.deadline = deadline = loop.time() + limit
            if self._alarm is None or deadline < self._alarm_at:
                self._arm(deadline)
        return True

    def _params_json(self, call: _Call, written: bytes) -> bytes | None:
        """The request's params as ``encode`` writes them, from the name and arguments as
        written (``written``) and the server connection's constant ``_meta`` (written once
        per connection); None: the engine writes them (a progress token in the ``_meta``,
        or what its NaN check must see: NaN or Infinity in the arguments)."""
        if call.outgoing is not None or b"NaN" in written or b"Infinity" in written:
            return None
        meta = call.route.wire["_meta"]
        known = self._metas.get(id(meta))
        if known is None or known[0] is not meta:
            if len(self._metas) >= _METAS_KEPT:
                self._metas.clear()
            known = self._metas[id(meta)] = (meta, to_json(meta))
        return written[:-1] + b',"_meta":' + known[1] + b"}"

    def cancel(self, request_id: RequestId) -> bool:
        """The caller cancelled: no answer; the server is told (as the usual path tells it)."""
        call = self.calls.get(request_id)
        if call is None:
            return False
        self._end(call)
        if call.rounds is not None:
            call.rounds.cancel()  # the session tells the server, as on the usual path
        else:
            call.upstream.forget_request(call.upstream_id)
            self._tell(call, "cancelled")
        return True

    async def settle(self, grace: float) -> None:
        """The caller's input ended: up to ``grace`` seconds for the calls still running,
        then the rest are cancelled (their servers told)."""
        if self.calls and grace > 0:
            self._idle = asyncio.get_running_loop().create_future()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._idle), grace)
        for request_id in list(self.calls):
            self.cancel(request_id)
        if self._alarm is not None:
            self._alarm.cancel()
            self._alarm = None
        if self._telling:
            await asyncio.gather(*self._telling, return_exceptions=True)

    # -- the lane's steps ----------------------------------------------------------------

    def _bind(self) -> asyncio.AbstractEventLoop:
        self._loop = loop = asyncio.get_running_loop()
        return loop

    def _arm(self, at: float) -> None:
        """Ring the lane's alarm at ``at`` (the loop's clock), instead of when it rang."""
        if self._alarm is not None:
            self._alarm.cancel()
        assert self._loop is not None
        self._alarm = self._loop.call_at(at, self._ring)
        self._alarm_at = at

    def _ring(self) -> None:
        """The alarm: the calls whose time is up get the usual path's answer; the alarm is
        set again for the soonest deadline left."""
        self._alarm = None
        assert self._loop is not None
        due = self._loop.time() + _CLOCK_SLACK
        soonest: float | None = None
        for call in list(self.calls.values()):
            deadline = call.deadline
            if deadline is None:
                continue
            if deadline <= due:
                self._expired(call)
            elif soonest is None or deadline < soonest:
                soonest = deadline
        if soonest is not None:
            self._arm(soonest)

    def _end(self, call: _Call) -> None:
        """The call leaves the lane: its time limit and progress relay go."""
        if self.calls.get(call.caller_id) is call:
            del self.calls[call.caller_id]
            engine = self.passage.engine
            if engine is not None and engine._room is not None:
                engine.request_ended()  # (the read loop waits for room under max_in_flight)
        if call.outgoing is not None:
            call.route.runtime.session.progress_callbacks.pop(call.outgoing, None)
        if not self.calls and self._idle is not None and not self._idle.done():
            self._idle.set_result(None)

    def _answered(self, call: _Call, result: Any, error: BaseException | None) -> None:
        if self.calls.get(call.caller_id) is not call:
            return  # cancelled or timed out meanwhile
        if error is None and type(result) is dict and result.get("resultType") == "input_required":
            # input rounds: the task path's (rare; the call stays cancellable meanwhile)
            call.deadline = None
            call.rounds = asyncio.get_running_loop().create_task(self._rounds(call, result))
            return
        self._end(call)
        route = call.route
        self._reply(call, lambda: self._outcome(route, result, error))

    def _outcome(self, route: _Route, result: Any, error: BaseException | None) -> Any:
        """What the caller gets for the server's answer (``result``) or failure (``error``)."""
        passage = self.passage
        if error is not None:
            if isinstance(error, (asyncio.TimeoutError, *_CONNECTION_ERRORS)):
                return passage._failed(route, error)
            if isinstance(error, RpcError):
                raise _relayed(error)
            raise error
        return passage._complete(route, route.runtime.session.on_result(route.method, result))

    async def _rounds(self, call: _Call, first: Any) -> None:
        """Serve a call whose server asked for input (the task path's rounds), then answer."""
        try:
            answer = await self.passage._exchange(call.route, first)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # answered as the task path answers it
            failure = error
            self._end(call)
            self._reply(call, lambda: _raise(failure))
            return
        if self.calls.get(call.caller_id) is call:
            self._end(call)
            self._reply(call, lambda: answer)

    def _expired(self, call: _Call) -> None:
        """The server's time limit ran out: the usual path's answer; the server is told."""
        call.deadline = None
        if self.calls.get(call.caller_id) is not call:
            return
        self._end(call)
        call.upstream.forget_request(call.upstream_id)
        self._tell(call, "timed out")
        route = call.route
        timeout = asyncio.TimeoutError(f"{route.method} timed out after {route.runtime.config.timeout} s")
        self._reply(call, lambda: self._outcome(route, None, timeout))

    def _tell(self, call: _Call, reason: str) -> None:
        """Send the server a notifications/cancelled for the call (as the usual path's session does)."""
        task = asyncio.get_running_loop().create_task(
            call.route.runtime.session.cancel_sent(call.upstream_id, reason))
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    def _reply(self, call: _Call, outcome: Callable[[], Any]) -> None:
        """Write the caller's response: ``outcome()``'s result, or the error it raised
        (-32603 for anything but an RpcError, logged, as the engine's task path answers)."""
        caller_id, method = call.caller_id, call.route.method
        try:
            data = encode_result(caller_id, outcome())
        except RpcError as error:
            data = encode_error(caller_id, error)
        except Exception as error:
            data = encode_error(caller_id, handler_failed(method, caller_id, error))
        engine = self.passage.engine
        if engine is not None:
            engine.send_soon(data)


def _raise(error: BaseException) -> Any:
    raise error


__all__ = ["PassLane"]
