"""Forwarded calls that wait for their 2026-07-28 gateway client's input between rounds.

A stateless-era client is never sent a request: a server that needs sampling or
elicitation ends the round with an ``InputRequiredResult`` and the client retries the call
with the answers, the handler running again from the top. A forwarded call cannot run
again (the owning server is waiting, mid-call, for its answer), so the gateway *parks* it:

* round 1 starts the routed call as a task of its own (in a fresh context: nothing of the
  request that started it leaks into it) with a forwarder that records each sampling or
  elicitation request of the owning server in the :class:`ParkedCall`;
* a round puts those requests to the client through ``ctx.peer`` (so the era's capability
  checks, validation and sealing apply), under keys of its own, and ends with them and the
  parked call's id (plus its round number) as the handler's own ``requestState``, which the
  stateless server seals into the state it gives the client;
* the retry finds the parked call by that id (same principal, current round only), hands
  each answer to the waiting request, and waits for the next request or the result.

Parked calls are bounded: one expires ``ParkingLimits.ttl`` seconds after its round ended
without a retry (its requests are refused, the call cancelled on its server), and at most
``per_principal`` (per authenticated principal) and ``total`` are in flight. A request of
a kind the client did not declare goes to the host's hooks (the forwarder answers
``NotImplemented``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import secrets
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, RpcError
from ..protocol.capabilities import has_capability
from ..protocol.meta import INPUT_REQUIRED
from ..protocol.results import to_wire
from ..stateless.scope import InputRequired, RequestScope, current_scope, input_key
from ..stateless.sealing import principal_tag
from .handlers import Forward

logger = logging.getLogger("typedmcp.host")

#: server-to-client request kinds the gateway forwards -> their method
FORWARDED = {"sampling": "sampling/createMessage", "elicitation": "elicitation/create"}
#: what starts a parked call: ``start(forward, progress)`` returns the routed call
Start = Callable[[Forward, Callable[[Any], None]], Awaitable[Any]]


@dataclass(frozen=True)
class ParkingLimits:
    """How long and how many forwarded calls wait for their 2026-07-28 clients' input.

    ``ttl``: seconds a call waits for the retry after a round ended (then it is cancelled);
    ``per_principal``: calls in flight per authenticated principal (anonymous calls are
    bounded by ``total`` only: nothing tells anonymous clients apart); ``total``: in all.
    """

    ttl: float = 120.0
    per_principal: int = 32
    total: int = 512


def wants_input(scope: RequestScope) -> bool:
    """Whether this request's client declared a kind of input the gateway forwards."""
    capabilities = scope.client_capabilities
    return any(has_capability(capabilities, (kind,)) for kind in FORWARDED)


class _Ask:
    """One request of the owning server, waiting for the client's answer."""

    __slots__ = ("answer", "key", "method", "params")

    def __init__(self, key: str, method: str, params: dict[str, Any]) -> None:
        self.key = key
        self.method = method
        self.params = params
        self.answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()


class ParkedCall:
    """A forwarded call of one 2026-07-28 client, alive across its rounds."""

    def __init__(self, lot: ParkingLot, owner: str | None, capabilities: Mapping[str, Any], start: Start) -> None:
        self.lot = lot
        self.id = secrets.token_urlsafe(12)
        self.owner = owner
        self.capabilities = capabilities  # of the latest round's request
        self.round = 0
        self.asked = 0  # requests the owning server made so far (names their keys)
        self.new: list[_Ask] = []  # made by the server, not yet put to the client
        self.waiting: dict[str, _Ask] = {}  # put to the client, not answered yet
        self.wake = asyncio.Event()
        self.sink: Callable[[Any], None] | None = None  # the current round's progress
        self.busy = False  # a round is being served
        self.closed = False
        self.timer: asyncio.TimerHandle | None = None
        self.refusal: str | None = None  # why the call was given up

        async def forward(kind: str, server: str, params: Any) -> Any:
            return await self._forward(kind, params)

        # whose call it is (see Host._sole_origin): a request the server makes on its own
        # connection (stdio, say, names no call) goes to a call of the same principal; an
        # anonymous call shares it with no one (nothing says two are the same client's)
        forward.owner = self if owner is None else sys.intern(owner)  # type: ignore[attr-defined]
        # a fresh context: the task outlives the request that started it
        self.task: asyncio.Future[Any] = contextvars.Context().run(
            asyncio.ensure_future, start(forward, self._progress)
        )
        self.task.add_done_callback(self._finished)

    def _progress(self, note: Any) -> None:
        if self.sink is not None:  # between rounds there is no stream to carry it
            self.sink(note)

    def _finished(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled():
            task.exception()  # retrieved here; the round that waits for it reports it
        if self.refusal is not None:
            self._refuse()
        self.wake.set()

    async def _forward(self, kind: str, params: Any) -> Any:
        method = FORWARDED.get(kind)
        if method is None or self.refusal is not None or not has_capability(self.capabilities, (kind,)):
            return NotImplemented  # the host's hooks answer
        self.asked += 1
        ask = _Ask(f"{kind}-{self.asked}", method, to_wire(params))
        self.new.append(ask)
        self.wake.set()
        return await ask.answer

    async def serve_round(self, ctx: Any, progress: Callable[[Any], None] | None) -> Any:
        """Serve one round of the client's call: hand over the answers it brought, then
        return the result, or an input_required result asking for what the server asks."""
        scope = current_scope()
        self.capabilities = scope.client_capabilities
        self.sink = progress
        self.busy = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        try:
            for key, ask in list(self.waiting.items()):
                if ask.answer.done() or await self._put(ctx, scope, ask):
                    del self.waiting[key]  # answered (or the server stopped waiting)
            while True:
                while self.new:
                    ask = self.new[0]  # left in place if putting it fails
                    if not ask.answer.done() and not await self._put(ctx, scope, ask):
                        self.waiting[ask.key] = ask
                    self.new.pop(0)
                if scope.asked:
                    self.round += 1
                    return {
                        "resultType": INPUT_REQUIRED,
                        "inputRequests": dict(scope.asked),
                        "requestState": f"{self.id}.{self.round}",
                    }
                if self.task.done():
                    self.close(None)
                    return self.task.result()
                self.wake.clear()
                if not self.new:
                    await self.wake.wait()
        except asyncio.CancelledError:  # the client cancelled its call: so is the server's
            self.close("the gateway's client cancelled the call")
            raise
        finally:
            self.sink = None
            self.busy = False
            if not self.closed:
                self.timer = asyncio.get_running_loop().call_later(self.lot.limits.ttl, self.expire)

    async def _put(self, ctx: Any, scope: RequestScope, ask: _Ask) -> bool:
        """Put ``ask`` to the client: True once settled (answered, or left to the host's
        hooks), False when it is asked in this round's result."""
        try:
            answer = await input_key(
                ask.key, ctx.peer.send_request(self.lot.requests[ask.method], ask.params)
            )
        except InputRequired:
            return False
        except Exception as error:
            if ask.key in scope.answers:
                raise  # the client's answer is not valid: it is told so
            # not the client's kind (-32021), or not expressible in its revision
            logger.info("%s of a forwarded call goes to the host's hooks: %s", ask.method, error)
            answer = NotImplemented
        if not ask.answer.done():
            ask.answer.set_result(answer)
        return True

    def expire(self) -> None:
        """The client did not retry in time: the call is given up."""
        self.timer = None
        if not self.busy:
            self.close(f"the gateway's client did not answer within {self.lot.limits.ttl:g} s")

    def close(self, reason: str | None) -> None:
        """Leave the lot and refuse the server's open requests; with a ``reason`` (the call
        is given up, not over), cancel the call on its server first."""
        if self.closed:
            return
        self.closed = True
        self.lot.drop(self)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.refusal = reason or "the call they belong to has ended"
        if self.task.done():
            self._refuse()
        else:  # the server hears of the cancellation first; its requests are refused after
            self.task.cancel()

    def _refuse(self) -> None:
        """Answer the server's open requests of a call given up: a form is cancelled (the
        era's word for dismissed), anything else refused."""
        for ask in (*self.new, *self.waiting.values()):
            if not ask.answer.done():
                if ask.method == FORWARDED["elicitation"]:
                    ask.answer.set_result({"action": "cancel"})
                else:
                    ask.answer.set_exception(RpcError(INVALID_REQUEST, f"Request refused: {self.refusal}"))
        self.new.clear()
        self.waiting.clear()


class ParkingLot:
    """The gateway's parked calls, by id."""

    def __init__(self, requests: Mapping[str, Any], limits: ParkingLimits | None = None) -> None:
        self.requests = requests  # method -> request spec of the gateway's package
        self.limits = limits or ParkingLimits()
        self.calls: dict[str, ParkedCall] = {}
        self.counts: dict[str, int] = {}  # authenticated owner -> calls in flight

    async def serve(
        self, ctx: Any, own_state: str | None, start: Start, progress: Callable[[Any], None] | None
    ) -> Any:
        """One round of a call that may ask its client for input: the first starts the
        call (``own_state`` None), a retry continues the call its state names."""
        scope = current_scope()
        call = self._park(scope, start) if own_state is None else self._claim(scope, own_state)
        return await call.serve_round(ctx, progress)

    def _park(self, scope: RequestScope, start: Start) -> ParkedCall:
        limits = self.limits
        owner = principal_tag(scope.principal)
        if len(self.calls) >= limits.total:
            raise RpcError(
                INVALID_REQUEST,
                f"Invalid Request: the gateway has {len(self.calls)} calls that may wait for "
                "their clients' input in flight, the most it holds; try again later",
            )
        if owner is not None and self.counts.get(owner, 0) >= limits.per_principal:
            raise RpcError(
                INVALID_REQUEST,
                f"Invalid Request: you have {limits.per_principal} calls in flight at the "
                "gateway that may wait for your input, the most you may; answer or abandon one first",
            )
        call = ParkedCall(self, owner, scope.client_capabilities, start)
        self.calls[call.id] = call
        if owner is not None:
            self.counts[owner] = self.counts.get(owner, 0) + 1
        return call

    def _claim(self, scope: RequestScope, own_state: str) -> ParkedCall:
        call_id, _, number = own_state.partition(".")
        call = self.calls.get(call_id)
        again = (
            f"send {scope.method} again without requestState and inputResponses to start it anew"
        )
        if call is None or call.owner != principal_tag(scope.principal):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: the call this requestState continues is no longer waiting at "
                f"the gateway (it finished, or expired after {self.limits.ttl:g} s without a "
                f"retry); {again}",
            )
        if call.busy or number != str(call.round):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: requestState belongs to a round of this call that was already "
                f"answered; retry with the latest requestState, or {again}",
            )
        return call

    def drop(self, call: ParkedCall) -> None:
        if self.calls.pop(call.id, None) is not None and call.owner is not None:
            left = self.counts[call.owner] - 1
            if left:
                self.counts[call.owner] = left
            else:
                del self.counts[call.owner]

    async def aclose(self) -> None:
        """Give up every parked call (the gateway stops) and wait until they have ended."""
        calls = list(self.calls.values())
        for call in calls:
            call.close("the gateway stopped")
        if calls:  # their outcomes are retrieved by ParkedCall._finished
            await asyncio.wait([call.task for call in calls])


__all__ = ["FORWARDED", "ParkedCall", "ParkingLimits", "ParkingLot", "wants_input"]
