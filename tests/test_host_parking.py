"""The gateway's parking lot on its own (``runtime/typedmcp/host/parking.py``), below the
stateless server and its sealed ``requestState``: the lot's own checks are all that stands
between a retry and a parked call here. Which principal may continue a call, how many calls
one principal may park (and that a finished or expired call frees its place), and expiry,
timed by the lot's own ``ttl``.

The owning server is a coroutine that asks for sampling through the forwarder the lot
gives it; the client's peer is a stand-in for the stateless peer (an answer from the
retry's ``inputResponses``, else the request goes into the round's ``inputRequests``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from typedmcp.engine.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, RpcError
from typedmcp.host.parking import FORWARDED, ParkingLimits, ParkingLot
from typedmcp.protocol.meta import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY
from typedmcp.stateless.scope import InputRequired, RequestScope, _input_key, _scope, current_scope

pytestmark = pytest.mark.anyio
#: bounds each wait (the waits here end within milliseconds when the code is right)
LIMIT = 5.0
SAMPLING: dict[str, Any] = {"sampling": {}}
ASK = {"messages": [{"role": "user", "content": {"type": "text", "text": "Q?"}}], "maxTokens": 5}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sampled(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}


class Peer:
    """The round's client as the stateless peer shows it to a handler."""

    async def send_request(self, spec: Any, params: Mapping[str, Any] | None) -> Any:
        scope = current_scope()
        key = _input_key.get()
        assert key is not None, "the lot names each input request"
        if key in scope.answers:
            return scope.answers[key]
        scope.asked[key] = {"method": spec, "params": dict(params or {})}
        raise InputRequired


class Ctx:
    """The handler context the lot uses: only its peer."""

    peer = Peer()


class Server:
    """The owning server's side of one forwarded call: asks for sampling once, returns
    what it heard; records whether its call was cancelled."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()

    async def start(self, forward: Callable[[str, str, Any], Awaitable[Any]], progress: Any) -> Any:
        try:
            heard = await forward("sampling", "owner", ASK)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return {"heard": heard["content"]["text"]}


def new_lot(limits: ParkingLimits | None = None) -> ParkingLot:
    return ParkingLot({method: method for method in FORWARDED.values()}, limits)


async def round_of(
    lot: ParkingLot, principal: Any, state: str | None, server: Server,
    answers: dict[str, Any] | None = None,
) -> Any:
    """One round of a client's tools/call at the lot, as ``principal`` (None: anonymous)."""

    async def emit(method: str, params: Any) -> None:
        raise AssertionError("nothing is emitted")

    meta = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: SAMPLING}
    scope = RequestScope("tools/call", 1, meta, emit, principal)
    scope.answers = dict(answers or {})
    token = _scope.set(scope)
    try:
        return await asyncio.wait_for(lot.serve(Ctx(), state, server.start, None), LIMIT)
    finally:
        _scope.reset(token)


async def parked(lot: ParkingLot, principal: Any, server: Server) -> str:
    """Start a call that parks: the requestState of its first round."""
    first = await round_of(lot, principal, None, server)
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["sampling-1"]
    return str(first["requestState"])


def refused_as_gone(caught: pytest.ExceptionInfo[RpcError]) -> None:
    assert caught.value.code == INVALID_PARAMS
    assert "no longer waiting at the gateway" in str(caught.value)


async def test_only_the_principal_that_parked_a_call_continues_it() -> None:
    lot = new_lot()
    alice, server = Server(), Server()
    state = await parked(lot, "alice", alice)
    answer = {"sampling-1": sampled("mallory's")}
    for thief in ("mallory", None):  # another principal, and an anonymous client
        with pytest.raises(RpcError) as caught:
            await round_of(lot, thief, state, alice, answer)
        refused_as_gone(caught)
    assert not alice.cancelled.is_set() and len(lot.calls) == 1  # still waiting for Alice
    done = await round_of(lot, "alice", state, alice, {"sampling-1": sampled("alice's")})
    assert done == {"heard": "alice's"}
    # an anonymous client's call is no principal's to continue
    anonymous = await parked(lot, None, server)
    with pytest.raises(RpcError) as caught:
        await round_of(lot, "alice", anonymous, server, answer)
    refused_as_gone(caught)
    assert await round_of(lot, None, anonymous, server, {"sampling-1": sampled("anon")}) == {"heard": "anon"}
    assert lot.calls == {} and lot.counts == {}


def refused_as_too_many(caught: pytest.ExceptionInfo[RpcError]) -> None:
    assert caught.value.code == INVALID_REQUEST
    assert "answer or abandon one first" in str(caught.value)


async def test_an_answered_call_frees_its_principals_place() -> None:
    """One call per principal: Alice's second is refused until her first is answered;
    Bob's count is his own."""
    lot = new_lot(ParkingLimits(per_principal=1, total=10))
    first = Server()
    state = await parked(lot, "alice", first)
    with pytest.raises(RpcError) as caught:
        await parked(lot, "alice", Server())
    refused_as_too_many(caught)
    await parked(lot, "bob", Server())
    assert await round_of(lot, "alice", state, first, {"sampling-1": sampled("a")}) == {"heard": "a"}
    await parked(lot, "alice", Server())  # her place was freed
    with pytest.raises(RpcError) as caught:
        await parked(lot, "alice", Server())
    refused_as_too_many(caught)
    await lot.aclose()
    assert lot.calls == {} and lot.counts == {}


async def test_an_expired_call_frees_its_principals_place() -> None:
    lot = new_lot(ParkingLimits(ttl=0.05, per_principal=1, total=10))
    first = Server()
    await parked(lot, "alice", first)
    with pytest.raises(RpcError) as caught:
        await parked(lot, "alice", Server())
    refused_as_too_many(caught)
    await asyncio.wait_for(first.cancelled.wait(), LIMIT)  # expired
    assert lot.calls == {} and lot.counts == {}
    await parked(lot, "alice", Server())  # her place was freed
    await lot.aclose()


async def test_a_call_left_waiting_expires_after_its_ttl() -> None:
    """No retry within ``ttl``: the call is cancelled on its server and leaves the lot, and a
    late retry is told it expired and how to start again."""
    lot = new_lot(ParkingLimits(ttl=0.05))
    server = Server()
    state = await parked(lot, "alice", server)
    assert not server.cancelled.is_set()
    try:
        await asyncio.wait_for(server.cancelled.wait(), LIMIT)
    except asyncio.TimeoutError:
        raise AssertionError(f"the parked call did not expire within {LIMIT} s (ttl 0.05 s)") from None
    assert lot.calls == {} and lot.counts == {}
    with pytest.raises(RpcError) as caught:
        await round_of(lot, "alice", state, server, {"sampling-1": sampled("late")})
    refused_as_gone(caught)
    assert "expired after 0.05 s without a retry" in str(caught.value)
    assert "again without requestState and inputResponses" in str(caught.value)


async def test_the_ttl_runs_from_the_end_of_each_round() -> None:
    """Each round that ends asking for input leaves the call ``ttl`` seconds to be retried;
    a retry stops that clock (it is served, however long its round takes)."""
    lot = new_lot(ParkingLimits(ttl=60))
    server = Server()
    await parked(lot, "alice", server)
    (call,) = lot.calls.values()
    loop = asyncio.get_running_loop()
    assert call.timer is not None and 59 < call.timer.when() - loop.time() <= 60
    await lot.aclose()
    assert call.timer is None and lot.calls == {}
    await asyncio.wait_for(server.cancelled.wait(), LIMIT)
