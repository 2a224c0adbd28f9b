"""What one client may make the server run (issue 29, req 3): a batch's length (``max_batch``)
and the requests one connection or session has in flight (``max_in_flight``), on every
transport: the engine alone (the read loop of stdio and HTTP+SSE), a real stdio server
process, Streamable HTTP, HTTP+SSE (2024-11-05), the 2026-07-28 endpoint (no batches at
all) and the gateway (``mcp-host serve``), which fans a batch out to its servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_gateway_passthrough import Lines, call as gateway_call, reaper, started, untraced
from test_http_server import (  # (its fixture: no request of its helpers is left running)
    Tools,
    _no_exchange_left_running,  # noqa: F401
    call,
    error_of,
    exchange,
    initialize,
    make_app,
    rpc,
    send,
)
from test_jsonrpc import Fake, Pipe, assert_error
from test_legacy_sse import initialized, legacy_app, message, post, serving
from test_stdio import server as stdio_server

from typedmcp.engine import jsonrpc
from typedmcp.engine.jsonrpc import (
    DEFAULT_MAX_BATCH,
    DEFAULT_MAX_IN_FLIGHT,
    INVALID_REQUEST,
    TOO_MANY_REQUESTS,
    Engine,
    RpcError,
)
from typedmcp.connecting import connect_memory
from typedmcp.host.cli import _serve, parser
from typedmcp.host.gateway import gateway_app, gateway_options, serve_passing
from typedmcp.protocol.options import UnknownOptionError
from typedmcp.serving import run_stdio

pytestmark = pytest.mark.anyio
__all__ = ["reaper", "untraced"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pings(count: int, first: int = 1) -> list[dict[str, Any]]:
    return [rpc(first + n, "ping") for n in range(count)]


# -- the engine -----------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def engine_running(**limits: Any) -> AsyncIterator[tuple[Pipe, Fake, Engine]]:
    pipe, fake = Pipe(), Fake()
    engine = Engine(pipe, fake, accept_batches=lambda: True, eof_grace=0, **limits)
    fake.engine = engine
    reader = asyncio.create_task(engine.run())
    try:
        yield pipe, fake, engine
    finally:
        for gate in list(fake.gates.values()):
            gate.set()
        pipe.inbox.put_nowait(None)
        await asyncio.wait_for(reader, 5)


def echoes(count: int) -> list[dict[str, Any]]:
    return [{"jsonrpc": "2.0", "id": n, "method": "echo", "params": {"n": n}} for n in range(count)]


async def test_a_batch_over_the_default_limit_is_refused_whole_naming_the_limit_and_the_option() -> None:
    async with engine_running() as (pipe, fake, _):
        pipe.put(echoes(DEFAULT_MAX_BATCH + 1))
        reply = await pipe.reply()
        assert isinstance(reply, dict)
        assert_error(reply, INVALID_REQUEST)
        assert reply["error"]["message"] == (
            "Invalid Request: a batch of 101 messages is over this server's limit of 100 "
            "(its max_batch option); send at most 100 per batch"
        )
        assert fake.requests == []  # nothing of it ran
        pipe.put(echoes(DEFAULT_MAX_BATCH))  # at the limit: served
        replies = await pipe.reply()
        assert sorted(r["id"] for r in replies) == list(range(DEFAULT_MAX_BATCH))


async def test_max_batch_is_an_option_of_the_engine() -> None:
    async with engine_running(max_batch=3) as (pipe, fake, engine):
        pipe.put(echoes(4))
        reply = await pipe.reply()
        assert_error(reply, INVALID_REQUEST)
        assert "a batch of 4 messages is over this server's limit of 3 (its max_batch option)" in reply["error"]["message"]
        pipe.put(echoes(3))
        assert len(await pipe.reply()) == 3
        assert len(fake.requests) == 3
        assert engine.in_flight() == 0  # the batch's reservation ended with it


@pytest.mark.parametrize("option", ["max_batch", "max_in_flight"])
@pytest.mark.parametrize("value", [0, -1, True, 2.5])
async def test_a_limit_that_is_not_a_whole_number_of_at_least_one_is_refused_by_name(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"^{option} must be a whole number of at least 1 \\(got {value!r}\\)$"):
        Engine(Pipe(), Fake(), **{option: value})
    with pytest.raises(ValueError, match=f"^{option} must be"):
        make_app(**{option: value})


async def test_at_max_in_flight_the_reader_waits_for_room_then_serves_what_it_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The request that ends wakes the reader (no look every ROOM_POLL needed)."""
    monkeypatch.setattr(jsonrpc, "ROOM_POLL", 30.0)
    async with engine_running(max_in_flight=2) as (pipe, fake, engine):
        pipe.request("a", "wait", {"gate": "a"})
        pipe.request("b", "wait", {"gate": "b"})
        pipe.request("c", "echo")
        await pipe.assert_silent(0.3)  # c waits: the reader holds it and reads nothing more
        assert [r[2] for r in fake.requests] == ["a", "b"] and engine.in_flight() == 2
        fake.gate("a").set()
        assert [(await pipe.reply())["id"] for _ in range(2)] == ["a", "c"]
        assert engine.in_flight() == 1


async def test_a_notification_is_read_at_the_limit() -> None:
    async with engine_running(max_in_flight=1) as (pipe, fake, _):
        pipe.request("a", "wait", {"gate": "a"})
        pipe.put({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "a"}})
        await asyncio.sleep(0.1)
        assert fake.notifications == [("notifications/cancelled", {"requestId": "a"})]


async def test_a_request_held_too_long_at_the_limit_is_refused_and_reading_goes_on() -> None:
    async with engine_running(max_in_flight=2) as (pipe, fake, engine):
        engine.room_wait = 0.3
        pipe.request("a", "wait", {"gate": "a"})
        pipe.request("b", "wait", {"gate": "b"})
        started = time.monotonic()
        pipe.request("c", "echo")
        pipe.put({"jsonrpc": "2.0", "method": "notifications/later"})
        reply = await pipe.reply()
        assert 0.25 < time.monotonic() - started < 0.9
        assert_error(reply, TOO_MANY_REQUESTS, "c")
        assert reply["error"]["message"] == (
            "Too many requests in flight: this connection has 2 requests running, the server's "
            "limit is 2 (its max_in_flight option); wait for answers before sending more"
        )
        assert reply["error"]["data"] == {"retryAfterSeconds": 1, "limit": "max_in_flight=2"}
        await asyncio.sleep(0.05)
        assert fake.notifications == [("notifications/later", None)]  # read after the refusal
        assert [r[2] for r in fake.requests] == ["a", "b"]


async def test_at_the_limit_nothing_waits_while_a_handler_waits_for_the_peer() -> None:
    """A handler that asked the peer something: its answer may be behind the request the
    reader would hold, so holding it could wait for ever: it is refused at once."""
    async with engine_running(max_in_flight=1) as (pipe, _, _):
        pipe.request("ask", "ask", {"q": 1})
        question = await pipe.reply()
        assert question["method"] == "peer/echo"
        started = time.monotonic()
        pipe.request("extra", "echo")
        assert_error(await pipe.reply(), TOO_MANY_REQUESTS, "extra")
        assert time.monotonic() - started < 1  # (not the 5 s of room_wait)
        pipe.put({"jsonrpc": "2.0", "id": question["id"], "result": {"fine": True}})
        assert await pipe.reply() == {"jsonrpc": "2.0", "id": "ask", "result": {"peer said": {"fine": True}}}


async def test_a_batch_waits_for_room_for_all_its_requests_and_a_long_one_runs_alone() -> None:
    async with engine_running(max_in_flight=3) as (pipe, fake, _):
        pipe.request("a", "wait", {"gate": "a"})
        pipe.put(echoes(3))  # 1 + 3 > 3: waits
        await pipe.assert_silent(0.3)
        fake.gate("a").set()
        assert (await pipe.reply())["id"] == "a"
        assert len(await pipe.reply()) == 3
    async with engine_running(max_in_flight=2) as (pipe, _, _):
        pipe.put(echoes(3))  # longer than the limit, nothing else in flight: it runs
        assert len(await pipe.reply()) == 3


@pytest.mark.parametrize("flood", [2_000, 8_000])
async def test_a_flood_stays_in_the_clients_pipe_not_in_the_server(flood: int) -> None:
    """What the server holds does not grow with the flood: at the limit the reader reads no
    more, so of 2,000 or 8,000 requests it runs the same 64 and holds one; the rest stay
    unread, where the client wrote them."""
    async with engine_running(max_in_flight=64) as (pipe, fake, engine):
        for n in range(flood):
            pipe.request(n, "wait", {"gate": "g"})
        await asyncio.sleep(0.3)
        assert engine.in_flight() == 64 and len(fake.requests) == 64
        assert pipe.inbox.qsize() == flood - 65


async def test_an_in_process_server_takes_the_limits_too() -> None:
    """``connect_memory(server_options=...)``: a request over the limit is refused (-32029)."""
    async with connect_memory(Tools(), server_options={"max_in_flight": 1}) as client:
        slow = asyncio.ensure_future(client.call_tool(name="slow", arguments={"seconds": 30}))
        await asyncio.sleep(0.05)
        with pytest.raises(RpcError) as refused:
            await client.call_tool(name="echo", arguments={})
        assert refused.value.code == TOO_MANY_REQUESTS and "(its max_in_flight option)" in refused.value.message
        slow.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await slow


class HoldingLane:
    """A lane that takes the ``hold`` requests and answers none of them."""

    def __init__(self) -> None:
        self.held: list[Any] = []

    def take(self, request_id: Any, method: str, params: Any) -> bool:
        if method == "hold":
            self.held.append(request_id)
            return True
        return False

    def cancel(self, request_id: Any) -> bool:
        return False

    def __contains__(self, request_id: object) -> bool:
        return request_id in self.held

    def __len__(self) -> int:
        return len(self.held)

    async def settle(self, grace: float) -> None:
        self.held.clear()


async def test_requests_the_lane_serves_count_under_the_limit() -> None:
    async with engine_running(max_in_flight=2) as (pipe, fake, engine):
        engine.lane = HoldingLane()
        pipe.request("a", "hold")
        pipe.request("b", "hold")
        pipe.request("c", "echo")
        await pipe.assert_silent(0.3)
        assert engine.in_flight() == 2 and fake.requests == []


async def test_a_batch_handed_over_without_background_is_served_before_the_call_returns() -> None:
    """What the HTTP client's read path hands over (``deliver_message``) is served in order."""
    pipe, fake = Pipe(), Fake()
    engine = Engine(pipe, fake, accept_batches=lambda: True)
    await engine.receive_message(echoes(2))
    assert len(json.loads(pipe.outbox.get_nowait())) == 2


async def test_a_batch_held_too_long_at_the_limit_is_refused_whole() -> None:
    async with engine_running(max_in_flight=2) as (pipe, fake, engine):
        engine.room_wait = 0.2
        pipe.request("a", "wait", {"gate": "a"})
        pipe.put(echoes(2))
        reply = await pipe.reply()
        assert_error(reply, TOO_MANY_REQUESTS)  # id-less: for the whole batch
        assert "limit is 2 (its max_in_flight option)" in reply["error"]["message"]
        assert [r[2] for r in fake.requests] == ["a"]


# -- stdio: a real server process -------------------------------------------------------------


async def handshake(probe: Any, version: str) -> None:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    assert (await probe.request("initialize", params))["result"]["protocolVersion"] == version
    await probe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


async def test_stdio_refuses_a_batch_over_max_batch_and_serves_one_at_it(tmp_path: Path) -> None:
    async with stdio_server(tmp_path, "--max-batch", "2") as probe:
        await handshake(probe, "2025-03-26")
        await probe.send(pings(3))
        refusal = await probe.message()
        assert refusal["error"]["code"] == INVALID_REQUEST and "id" not in refusal
        assert "a batch of 3 messages is over this server's limit of 2 (its max_batch option)" in refusal["error"]["message"]
        await probe.send(pings(2))
        assert sorted(answer["id"] for answer in await probe.message()) == [1, 2]
    async with stdio_server(tmp_path) as probe:  # the default
        await handshake(probe, "2025-03-26")
        await probe.send(pings(DEFAULT_MAX_BATCH + 1))
        assert "limit of 100" in (await probe.message())["error"]["message"]


async def test_stdio_stops_reading_requests_at_max_in_flight(tmp_path: Path) -> None:
    """The line a server's fast read path would take at once waits too."""
    async with stdio_server(tmp_path, "--max-in-flight", "2") as probe:
        await handshake(probe, "2025-06-18")
        for n, seconds in ((1, 0.8), (2, 3)):
            await probe.send(call(n, "sleep", {"seconds": seconds}))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await probe.send(rpc(3, "ping"))
        assert (await probe.message())["id"] == 1
        assert (await probe.message())["id"] == 3  # the ping: once the first sleep ended
        assert time.monotonic() - started > 0.5


# -- Streamable HTTP ----------------------------------------------------------------------------


async def test_http_refuses_a_batch_over_max_batch_with_413_naming_the_limit() -> None:
    app = make_app()
    session = await initialize(app, "2025-03-26")
    refused = await send(app, body=pings(DEFAULT_MAX_BATCH + 1), session=session)
    assert refused.status == 413
    assert error_of(refused) == {
        "code": INVALID_REQUEST,
        "message": "Invalid Request: a batch of 101 messages is over this server's limit of 100 "
        "(its max_batch option); send at most 100 per batch",
    }
    assert len((await send(app, body=pings(DEFAULT_MAX_BATCH), session=session)).json()) == 100
    small = make_app(max_batch=2)
    session = await initialize(small, "2025-03-26")
    refused = await send(small, body=pings(3), session=session)
    assert refused.status == 413 and "limit of 2 (its max_batch option)" in error_of(refused)["message"]
    assert len((await send(small, body=pings(2), session=session)).json()) == 2


async def test_http_answers_429_with_retry_after_over_max_in_flight_and_other_sessions_go_on() -> None:
    tools = Tools()
    app = make_app(tools, max_in_flight=2)
    busy, other = await initialize(app), await initialize(app)
    slow = [exchange(app, body=call(n, "slow", {"seconds": 30}), session=busy) for n in (1, 2)]
    await asyncio.sleep(0.05)
    refused = await send(app, body=rpc(3, "ping"), session=busy)
    assert refused.status == 429 and refused.header("retry-after") == "1"
    assert refused.json() == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {
            "code": TOO_MANY_REQUESTS,
            "message": "Too many requests in flight: this connection has 2 requests running, the "
            "server's limit is 2 (its max_in_flight option); wait for answers before sending more",
            "data": {"retryAfterSeconds": 1, "limit": "max_in_flight=2"},
        },
    }
    assert (await send(app, body=rpc(4, "ping"), session=other)).status == 200
    assert (await send(app, "DELETE", session=busy)).status == 200  # ends the slow calls
    for pending in slow:
        await pending.finished()


async def test_http_refuses_a_batch_that_would_go_over_max_in_flight() -> None:
    app = make_app(max_in_flight=3)
    session = await initialize(app, "2025-03-26")
    slow = exchange(app, body=call(1, "slow", {"seconds": 30}), session=session)
    await asyncio.sleep(0.05)
    refused = await send(app, body=pings(3, first=2), session=session)
    assert refused.status == 429 and refused.header("retry-after") == "1"
    assert error_of(refused)["code"] == TOO_MANY_REQUESTS
    assert len((await send(app, body=pings(2, first=2), session=session)).json()) == 2
    await send(app, "DELETE", session=session)
    await slow.finished()


async def ping_time(app: Any, session: str, request_id: int) -> float:
    started = time.monotonic()
    reply = await send(app, body=rpc(request_id, "ping"), session=session)
    assert reply.status == 200
    return time.monotonic() - started


async def test_one_huge_batch_does_not_stall_another_sessions_ping() -> None:
    """The issue's flood: one 4 MB POST of 40,000 tools/call (19.8 s of another session's
    ping before the limit)."""
    app = make_app()
    flooder, other = await initialize(app, "2025-03-26"), await initialize(app)
    body = json.dumps([call(n, "echo") for n in range(40_000)], separators=(",", ":")).encode()
    assert len(body) < app.max_body_bytes  # (refused for its length, not its size)
    flood = exchange(app, body=body, session=flooder)
    await asyncio.sleep(0)  # the flood's POST is read first
    assert await ping_time(app, other, 1) < 1.0  # (7.8 s here without the limit)
    await flood.finished()
    assert flood.status == 413 and "a batch of 40000 messages" in error_of(flood)["message"]


async def test_a_session_flooding_batches_at_the_limit_runs_at_most_max_in_flight() -> None:
    """Batches at max_batch, sent again and again at once: the session runs at most
    max_in_flight requests (the rest are refused with 429, which costs no handler and no
    memory that stays), and another session's ping still answers at once."""
    tools = Tools()
    app = make_app(tools)
    flooder, other = await initialize(app, "2025-03-26"), await initialize(app)
    floods = [
        exchange(app, body=[call(f"{k}.{n}", "slow", {"seconds": 30}) for n in range(DEFAULT_MAX_BATCH)], session=flooder)
        for k in range(30)
    ]
    await asyncio.sleep(0.2)
    assert await ping_time(app, other, 1) < 1.0
    refused = [flood for flood in floods if flood.status == 429]
    assert len(refused) == 28  # 2 batches of 100 fit under 256, a third would not
    assert tools.calls.count("slow") == 200 <= DEFAULT_MAX_IN_FLIGHT
    await send(app, "DELETE", session=flooder)
    for flood in floods:
        await flood.finished()


async def test_the_stateless_endpoint_refuses_any_batch() -> None:
    """2026-07-28 has no batches: an array is refused whatever its length."""
    app = make_app()
    headers = {"mcp-protocol-version": "2026-07-28"}
    for batch in (pings(1), pings(3)):
        refused = await send(app, body=batch, headers=headers)
        assert refused.status == 400
        assert error_of(refused) == {"code": INVALID_REQUEST, "message": "Invalid Request: batches are not allowed"}


def stateless_call(request_id: int, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body = rpc(request_id, "tools/call", {"name": name, "arguments": arguments, "_meta": meta})
    return body, {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name}


async def test_a_stateless_client_over_max_in_flight_gets_429_and_room_when_one_ends() -> None:
    """2026-07-28 has no session: the limit is per client (its address without auth)."""
    app = make_app(Tools(), max_in_flight=2)
    slow = [exchange(app, body=body, headers=headers)
            for body, headers in (stateless_call(n, "slow", {"seconds": 30}) for n in (1, 2))]
    await asyncio.sleep(0.05)
    body, headers = stateless_call(3, "echo", {"x": 1})
    refused = await send(app, body=body, headers=headers)
    assert refused.status == 429 and refused.header("retry-after") == "1"
    assert refused.json()["id"] == 3
    assert refused.json()["error"] == {
        "code": TOO_MANY_REQUESTS,
        "message": "Too many requests in flight: this client has 2 requests running, the server's "
        "limit is 2 (its max_in_flight option); wait for answers before sending more",
        "data": {"retryAfterSeconds": 1, "limit": "max_in_flight=2"},
    }
    session = await initialize(app)  # a handshake-era session counts on its own
    assert (await send(app, body=rpc(4, "ping"), session=session)).status == 200
    await slow[0].hang_up()  # cancels it: room for one
    answered = await send(app, body=body, headers=headers)
    assert answered.status == 200 and answered.json()["result"]["content"][0]["text"] == '{"x": 1}'
    await slow[1].hang_up()
    assert app.modern is not None and app.modern._running == {}  # nothing left counted


# -- HTTP+SSE (2024-11-05) ----------------------------------------------------------------------


async def test_sse_answers_429_over_max_in_flight_but_takes_notifications() -> None:
    """2024-11-05 has no batches (refused whatever their length: ``test_legacy_sse``); what
    a connection could pile up is requests, each POST answered 202 before it runs."""
    app = legacy_app(max_in_flight=2)
    async with serving(app) as server:
        stream, uri = await initialized(server.port)
        for n in (1, 2):
            assert await post(server.port, uri, call(n, "slow", {"seconds": 30})) == (202, b"")
        status, body = await post(server.port, uri, rpc(3, "ping"))
        assert status == 429
        error = json.loads(body)["error"]
        assert error["code"] == TOO_MANY_REQUESTS
        assert "this connection has 2 requests running, the server's limit is 2 (its max_in_flight option)" in error["message"]
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}
        assert await post(server.port, uri, cancel) == (202, b"")
        for _ in range(50):  # the cancelled call leaves room
            status, _ = await post(server.port, uri, rpc(4, "ping"))
            if status == 202:
                break
            await asyncio.sleep(0.05)
        assert status == 202
        assert (await message(stream)) == {"jsonrpc": "2.0", "id": 4, "result": {}}
        stream.close()


# -- the gateway ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def gateway_lines(host: Any, **limits: Any) -> AsyncIterator[Lines]:
    handlers, options, unsubscribe = gateway_options(host, **limits)
    lines = Lines()
    serving_task = asyncio.ensure_future(serve_passing(host, handlers, lines, **options))
    try:
        yield lines
    finally:
        lines.incoming.put_nowait(None)
        try:
            await asyncio.wait_for(serving_task, 30)
        finally:
            unsubscribe()


async def next_message(lines: Lines, timeout: float = 10.0) -> Any:
    return json.loads(await asyncio.wait_for(lines.sent.get(), timeout))


async def test_the_gateway_refuses_a_batch_over_max_batch_and_fans_out_one_at_it(reaper: Any) -> None:
    async with started() as host, gateway_lines(host, max_batch=2) as lines:
        params = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        lines.put(rpc(0, "initialize", params))
        assert (await next_message(lines))["result"]["protocolVersion"] == "2025-03-26"
        lines.put({"jsonrpc": "2.0", "method": "notifications/initialized"})
        batch = [call(n, "p__echo", {"text": str(n)}) for n in (1, 2, 3)]
        lines.incoming.put_nowait(json.dumps(batch).encode())
        refusal = await next_message(lines)
        assert refusal["error"]["code"] == INVALID_REQUEST
        assert "a batch of 3 messages is over this server's limit of 2 (its max_batch option)" in refusal["error"]["message"]
        lines.incoming.put_nowait(json.dumps(batch[:2]).encode())
        answers = sorted(await next_message(lines), key=lambda answer: answer["id"])
        assert [answer["result"]["content"][0]["text"] for answer in answers] == ["1", "2"]


async def test_the_gateways_relayed_calls_count_under_max_in_flight(reaper: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls the pass-through relays without a task (its lane) count too; as one ends, the
    reader takes the request it held (woken by the lane: no look every ROOM_POLL needed)."""
    monkeypatch.setattr(jsonrpc, "ROOM_POLL", 30.0)
    async with started() as host, gateway_lines(host, max_in_flight=2) as lines:
        for n, seconds in ((1, 0.8), (2, 3)):
            lines.put(gateway_call(n, "p__slow", {"label": str(n), "seconds": seconds}))
        await asyncio.sleep(0.2)
        started_at = time.monotonic()
        lines.put(gateway_call(3, "p__echo", {"text": "held"}))
        assert (await next_message(lines))["id"] == 1
        held = await next_message(lines, timeout=2)  # once the first call ended
        assert time.monotonic() - started_at > 0.4
        assert (held["id"], held["result"]["content"]) == (3, [{"type": "text", "text": "held"}])


async def test_the_gateway_over_http_and_mcp_host_serve_take_the_limits(tmp_path: Path) -> None:
    class NoHost:  # what gateway_options reads of a host, for an app that never starts
        package = __import__("mcp_generated.v2026_07_28", fromlist=["x"])
        expose = "tools"

        def on_change(self, callback: Any) -> Any:
            return lambda: None

        def status(self) -> dict[str, Any]:
            return {}

    app = gateway_app(NoHost(), max_batch=7, max_in_flight=9)  # type: ignore[arg-type]
    assert (app.max_batch, app.max_in_flight) == (7, 9)
    args = parser().parse_args(["serve", "--config", "c.json", "--stdio", "--max-batch", "5", "--max-in-flight", "50"])
    assert (args.max_batch, args.max_in_flight) == (5, 50)
    defaults = parser().parse_args(["serve", "--config", "c.json", "--stdio"])
    assert (defaults.max_batch, defaults.max_in_flight) == (DEFAULT_MAX_BATCH, DEFAULT_MAX_IN_FLIGHT)


async def test_mcp_host_serve_passes_the_limits_to_the_gateway() -> None:
    class Recorder:  # the part of a Host that ``mcp-host serve --stdio`` uses
        def __init__(self) -> None:
            self.options: dict[str, Any] = {}

        async def start(self) -> None:
            return None

        def failed(self) -> dict[str, str]:
            return {}

        def status(self) -> dict[str, Any]:
            return {}

        async def serve(self, **options: Any) -> None:
            self.options = options

    host = Recorder()
    args = parser().parse_args(["serve", "--config", "c.json", "--stdio", "--max-batch", "5", "--max-in-flight", "50"])
    assert await _serve(host, args) == 0  # type: ignore[arg-type]
    assert host.options == {"stdio": True, "max_batch": 5, "max_in_flight": 50}


async def test_mcp_host_serve_refuses_a_limit_below_one(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["serve", "--config", "c.json", "--stdio", "--max-in-flight", "0"])
    assert "argument --max-in-flight: '0' is not a whole number of at least 1" in capsys.readouterr().err


async def test_run_stdio_takes_the_limits_and_names_them_for_a_misspelt_one() -> None:
    with pytest.raises(UnknownOptionError, match="max_in_flight"):
        run_stdio(object(), max_in_flite=3)


