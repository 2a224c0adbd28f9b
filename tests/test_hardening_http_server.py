"""Hardening of the Streamable HTTP server (handshake era) against hostile and third-party
clients: session exhaustion (caps per client, eviction of idle sessions), change
notifications reaching each session on its own stream, and bounded event retention.

Driven at the ASGI seam with the harness of ``tests/test_http_server.py`` (a wrapper sets
the client address the app sees); the scenario tests at the end run a real uvicorn and
connect from several loopback addresses (127.0.0.x) and with several bearer tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from test_http_client import Handlers, eventually, texts, token
from test_interop_sdk_client import Inbox
from test_http_server import (  # the autouse fixture: hang up leftovers, re-raise app errors
    ACCEPT,
    PRM,
    ServerThread,
    Ctx,
    Exchange,
    Tools,
    _no_exchange_left_running,  # noqa: F401
    call,
    error_of,
    exchange,
    init_params,
    initialize,
    make_app,
    rpc,
    send,
    wait_for_flag,
)

import mcp_generated.v2025_11_25
from typedmcp.protocol import server as server_module
from typedmcp.transports import http_sse_server as http_sse
from typedmcp.transports import http_streams
from typedmcp.auth.bearer import BearerAuth
from typedmcp.connecting import connect_http
from typedmcp.protocol.feed import ChangeFeed
from typedmcp.transports.events import MemoryEventStore
from typedmcp.transports.http_server import HttpApp
from typedmcp.transports.http_streams import close_sse_stream
from mcp_generated.v2025_11_25 import models

pytestmark = pytest.mark.anyio

LATEST = mcp_generated.v2025_11_25
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
WATCHED = "test://watched"
BIG = 64 * 1024


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class FromAddress:
    """The app as a client at another address sees it (the ASGI scope's ``client``)."""

    def __init__(self, app: HttpApp, host: str) -> None:
        self.app = app
        self.host = host

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app({**scope, "client": (self.host, 40000)}, receive, send)


class Hardened(Tools):
    """The test tools, plus tools that publish changes mid-request, big results, and
    resource subscriptions."""

    def __init__(self) -> None:
        super().__init__()
        self.feed = ChangeFeed()

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        args = params.arguments or {}
        if params.name == "announce":  # progress, a change, then wait at the gate
            await ctx.report_progress(1, 2)
            how = args.get("how")
            if how == "feed":
                self.feed.tools_changed()
            elif how == "resource":
                self.feed.resource_updated(WATCHED)
            elif how == "peer_resource":
                await ctx.peer.send_resource_updated(uri=WATCHED)
            else:
                await ctx.peer.send_tool_list_changed()
            self.started.set()
            await wait_for_flag(self.gate, 60)
            await ctx.report_progress(2, 2)
            return self.result("announced")
        if params.name == "big":  # a result of ``size`` bytes of text, after optional progress
            if args.get("progress"):
                await ctx.report_progress(1, 1)
            if args.get("drop"):  # the server drops the connection before the response
                close_sse_stream()
                await asyncio.sleep(float(args.get("pause", 0.005)))
            return self.result("x" * int(args.get("size", BIG)))
        if params.name == "later":  # answers at once; a background task sends a change later
            async def afterwards() -> None:
                await wait_for_flag(self.gate)
                await ctx.peer.send_tool_list_changed()

            self.background = asyncio.ensure_future(afterwards())
            return self.result("soon")
        return await super().call_tool(params, ctx)

    async def subscribe(self, params: models.SubscribeRequestParams, ctx: Ctx) -> models.EmptyResult:
        return models.Result()

    async def unsubscribe(self, params: models.UnsubscribeRequestParams, ctx: Ctx) -> models.EmptyResult:
        return models.Result()


def hardened_app(tools: Hardened | None = None, **options: Any) -> tuple[HttpApp, Hardened]:
    tools = tools or Hardened()
    return make_app(tools, changes=tools.feed, **options), tools


async def ping(app: Any, session: str, **options: Any) -> int:
    reply = await send(app, body=rpc(99, "ping"), session=session, **options)
    assert reply.status is not None
    return reply.status


async def open_get(app: Any, session: str, **options: Any) -> Exchange:
    stream = exchange(app, "GET", session=session, **options)
    await stream.until(lambda e: e.status is not None)
    assert stream.status == 200, stream.body
    return stream


def methods(reply: Exchange) -> list[str | None]:
    return [message.get("method") for message in reply.messages()]


# == 3. session exhaustion =======================================================================


async def test_a_client_initializing_in_a_loop_does_not_lock_out_a_new_client() -> None:
    """Regression: 1,000 initializes without DELETE filled the session table, and every
    new client got 503 for the idle timeout (30 minutes by default)."""
    app = make_app()  # the default limits
    hostile = FromAddress(app, "10.0.0.66")
    for index in range(1000):
        reply = await send(hostile, body=rpc(index, "initialize", init_params()))
        assert reply.status == 200, (index, reply.body)
    newcomer = await send(FromAddress(app, "10.0.0.7"), body=rpc(1, "initialize", init_params()))
    assert newcomer.status == 200, newcomer.body
    assert newcomer.header("mcp-session-id") in app.sessions
    assert len(app.sessions) <= app.max_sessions_per_client + 1


async def test_a_client_over_its_cap_loses_its_least_recently_used_idle_session() -> None:
    app = make_app(max_sessions_per_client=3)
    first, second, third = [await initialize(app) for _ in range(3)]
    assert await ping(app, first) == 200  # the second is now the least recently used
    fourth = await initialize(app)
    assert set(app.sessions) == {first, third, fourth}
    assert await ping(app, second) == 404  # its client re-initializes, as 404 tells it to
    assert await ping(app, first) == 200


async def test_a_client_whose_sessions_are_all_in_use_gets_429_and_others_are_unaffected() -> None:
    app = make_app(max_sessions_per_client=2)
    sessions = [await initialize(app) for _ in range(2)]
    streams = [await open_get(app, session) for session in sessions]  # both in use
    refused = await send(app, body=rpc(1, "initialize", init_params()))
    assert refused.status == 429 and refused.header("mcp-session-id") is None
    assert "DELETE" in error_of(refused)["message"]
    assert set(app.sessions) == set(sessions)
    other = await send(FromAddress(app, "10.0.0.8"), body=rpc(1, "initialize", init_params()))
    assert other.status == 200
    await streams[0].hang_up()  # one stream ends: its session is idle and may go
    assert (await send(app, body=rpc(2, "initialize", init_params()))).status == 200
    assert sessions[0] not in app.sessions and sessions[1] in app.sessions


async def test_concurrent_initializes_do_not_get_past_the_caps() -> None:
    """Regression: the caps were checked before the handshake and the session added after
    it, so initializes sent at once all saw room and all got in."""
    app = make_app(max_sessions=12, max_sessions_per_client=5)
    hostile = FromAddress(app, "10.0.4.66")
    replies = await asyncio.gather(
        *(send(hostile, body=rpc(n, "initialize", init_params())) for n in range(50))
    )
    assert {reply.status for reply in replies} == {200}
    assert len(app.sessions) == 5
    others = [FromAddress(app, f"10.0.4.{n}") for n in range(3)]
    replies = await asyncio.gather(
        *(send(others[n % 3], body=rpc(n, "initialize", init_params())) for n in range(30))
    )
    assert {reply.status for reply in replies} == {200}
    assert len(app.sessions) == 12


async def test_ipv6_clients_are_counted_by_their_64_bit_prefix() -> None:
    """An IPv6 client usually has a whole /64 to pick addresses from: one address per
    session must not give it a cap per session."""
    app = make_app(max_sessions_per_client=2)
    sessions = [await initialize(FromAddress(app, f"2001:db8:1:2::{n:x}")) for n in range(1, 6)]
    assert set(app.sessions) == set(sessions[-2:])
    elsewhere = await initialize(FromAddress(app, "2001:db8:1:3::1"))
    assert set(app.sessions) == {*sessions[-2:], elsewhere}


async def test_with_authentication_the_cap_is_per_principal_not_per_address() -> None:
    async def verify(token: str) -> str | None:
        return {"alice-token": "alice", "mallory-token": "mallory"}.get(token)

    app = make_app(auth=BearerAuth(verify, PRM), max_sessions_per_client=2)
    alice = {"authorization": "Bearer alice-token"}
    mallory = {"authorization": "Bearer mallory-token"}
    hers = [await initialize(app, headers=alice) for _ in range(2)]
    for _ in range(20):  # the same address, another principal
        await initialize(app, headers=mallory)
    assert all(session in app.sessions for session in hers)
    assert sum(1 for s in app.sessions.values() if s.principal == "mallory") == 2
    assert await ping(app, hers[0], headers=alice) == 200


async def test_a_full_server_evicts_the_least_recently_used_idle_session_of_anyone() -> None:
    """Regression: the global cap answered 503 while idle sessions filled it."""
    app = make_app(max_sessions=3, max_sessions_per_client=3)
    owners = [FromAddress(app, f"10.0.1.{n}") for n in range(3)]
    sessions = [await initialize(owner) for owner in owners]
    assert await ping(owners[0], sessions[0]) == 200  # the second is now the LRU idle one
    newcomer = await send(FromAddress(app, "10.0.1.9"), body=rpc(1, "initialize", init_params()))
    assert newcomer.status == 200
    assert set(app.sessions) == {sessions[0], sessions[2], newcomer.header("mcp-session-id")}


async def test_a_full_server_whose_sessions_are_all_in_use_answers_503() -> None:
    app = make_app(max_sessions=2)
    owners = [FromAddress(app, f"10.0.2.{n}") for n in range(2)]
    sessions = [await initialize(owner) for owner in owners]
    for owner, session in zip(owners, sessions, strict=True):
        await open_get(owner, session)
    full = await send(FromAddress(app, "10.0.2.9"), body=rpc(1, "initialize", init_params()))
    assert full.status == 503 and full.header("mcp-session-id") is None
    assert set(app.sessions) == set(sessions)


async def test_one_client_cannot_hold_every_legacy_sse_connection() -> None:
    """Regression: a client opening HTTP+SSE streams in a loop took every connection the
    server allows, and every other client got 503."""
    app = make_app(legacy_sse=True, max_sessions=4, max_sessions_per_client=2)
    hostile = FromAddress(app, "10.0.3.66")
    for _ in range(2):
        stream = exchange(hostile, "GET", path="/sse")
        await stream.until(lambda e: e.status is not None)
        assert stream.status == 200
    refused = await send(hostile, "GET", path="/sse")
    assert refused.status == 429 and "close one" in error_of(refused)["message"]
    other = exchange(FromAddress(app, "10.0.3.7"), "GET", path="/sse")
    await other.until(lambda e: e.status is not None)
    assert other.status == 200


async def test_session_limits_are_checked_when_the_app_is_built() -> None:
    with pytest.raises(ValueError, match="max_sessions_per_client"):
        make_app(max_sessions_per_client=0)
    with pytest.raises(ValueError, match="max_sessions"):
        make_app(max_sessions=0)


# == 4. notifications reach each session on its own stream ========================================


@pytest.mark.parametrize("count", [2, 10])
@pytest.mark.parametrize("how", ["feed", "peer"])
async def test_a_change_during_one_sessions_request_reaches_every_session_once_on_its_get_stream(
    count: int, how: str
) -> None:
    """Regression: the fan-out ran in the publishing request's context, so every session's
    copy went out on that request's POST stream, and no GET stream got one."""
    app, tools = hardened_app()
    sessions = [await initialize(app) for _ in range(count)]
    streams = [await open_get(app, session) for session in sessions]
    held = exchange(app, body=call(1, "announce", {"how": how}, token="a"), session=sessions[0])
    await wait_for_flag(tools.started)
    # A publisher's own session hears the feed on its GET stream; a change the handler sends
    # through its own peer belongs to its request and stays on that request's stream.
    on_get = streams if how == "feed" else streams[1:]
    for stream in on_get:
        await stream.until(lambda e: len(e.events()) >= 1)
    await asyncio.sleep(0.05)  # anything extra would have arrived by now
    tools.gate.set()
    await held.finished()
    if how == "feed":
        assert methods(held) == ["notifications/progress"] * 2 + [None]
    else:
        assert methods(held) == [
            "notifications/progress",
            "notifications/tools/list_changed",
            "notifications/progress",
            None,
        ]
    for stream in on_get:
        assert stream.messages() == [LIST_CHANGED]
    if how == "peer":
        assert streams[0].messages() == []


async def test_resource_updates_reach_only_the_subscribed_sessions_on_their_get_streams() -> None:
    app, tools = hardened_app()
    sessions = [await initialize(app) for _ in range(4)]
    for session in sessions[:3]:
        reply = await send(app, body=rpc(1, "resources/subscribe", {"uri": WATCHED}), session=session)
        assert reply.json()["result"] == {}
    streams = [await open_get(app, session) for session in sessions]
    held = exchange(app, body=call(2, "announce", {"how": "resource"}, token="r"), session=sessions[1])
    await wait_for_flag(tools.started)
    for stream in streams[:3]:
        await stream.until(lambda e: len(e.events()) >= 1)
    await asyncio.sleep(0.05)
    tools.gate.set()
    await held.finished()
    updated = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": WATCHED}}
    assert [stream.messages() for stream in streams] == [[updated]] * 3 + [[]]
    assert methods(held) == ["notifications/progress"] * 2 + [None]


async def test_a_resource_update_sent_by_an_unsubscribed_sessions_handler_reaches_only_subscribers() -> None:
    """Regression: ``ctx.peer.send_resource_updated`` went to the handler's own client even
    though it never subscribed (the schema: only after a resources/subscribe)."""
    app, tools = hardened_app()
    sessions = [await initialize(app) for _ in range(3)]
    for session in sessions[:2]:
        reply = await send(app, body=rpc(1, "resources/subscribe", {"uri": WATCHED}), session=session)
        assert reply.json()["result"] == {}
    streams = [await open_get(app, session) for session in sessions]
    held = exchange(app, body=call(2, "announce", {"how": "peer_resource"}, token="r"), session=sessions[2])
    await wait_for_flag(tools.started)
    for stream in streams[:2]:
        await stream.until(lambda e: len(e.events()) >= 1)
    await asyncio.sleep(0.05)
    tools.gate.set()
    await held.finished()
    updated = {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": WATCHED}}
    assert [stream.messages() for stream in streams] == [[updated]] * 2 + [[]]
    assert methods(held) == ["notifications/progress"] * 2 + [None]


async def test_a_message_sent_after_its_request_ended_goes_to_the_get_stream() -> None:
    """Regression: a task a handler started inherited the request's stream; once that
    stream had ended, what the task sent was lost."""
    app, tools = hardened_app()
    mine, other = await initialize(app), await initialize(app)
    streams = [await open_get(app, session) for session in (mine, other)]
    reply = await send(app, body=call(1, "later"), session=mine)
    assert reply.json()["result"]["content"][0]["text"] == "soon"
    tools.gate.set()
    for stream in streams:
        await stream.until(lambda e: len(e.events()) >= 1)
    await asyncio.sleep(0.05)
    assert [stream.messages() for stream in streams] == [[LIST_CHANGED], [LIST_CHANGED]]


async def test_task_status_after_the_create_task_result_arrives_on_the_get_stream() -> None:
    """Regression: a task-augmented request's background work sent its status on the
    request's ended POST stream, so no client ever saw it."""
    tools = Tools()
    app = make_app(tools, tasks=True)
    session = await initialize(app)
    stream = await open_get(app, session)
    created = await send(
        app, body=rpc(1, "tools/call", {"name": "hold", "arguments": {}, "task": {"ttl": 60000}}),
        session=session,
    )
    task_id = created.json()["result"]["task"]["taskId"]
    tools.gate.set()
    await stream.until(lambda e: any(m.get("method") == "notifications/tasks/status" for m in e.messages()))
    status = [m for m in stream.messages() if m.get("method") == "notifications/tasks/status"]
    assert [(m["params"]["taskId"], m["params"]["status"]) for m in status] == [(task_id, "completed")]


async def test_change_listeners_run_in_an_empty_context() -> None:
    """Regression: a listener ran in the publishing request's context (its POST stream, its
    stateless request scope), so whatever it started for another session inherited them."""
    app, tools = hardened_app()
    seen: list[contextvars.Context] = []
    unsubscribe = tools.feed.subscribe(lambda method, params: seen.append(contextvars.copy_context()))
    session = await initialize(app)
    held = exchange(app, body=call(1, "announce", {"how": "feed"}, token="c"), session=session)
    await wait_for_flag(tools.started)
    tools.gate.set()
    await held.finished()
    unsubscribe()
    assert len(seen) == 1
    assert seen[0].get(http_streams._current_stream) is None and len(seen[0]) == 0


# == 7. bounded event retention ====================================================================


async def retained(app: HttpApp, session: str) -> tuple[int, int]:
    """(events, bytes) the app's event store still holds for ``session``'s streams, asked
    through the store's public ``replay`` for every stream id the session used."""
    transport = app.sessions[session].transport
    stream_ids = [transport.standalone.id] + [
        f"{transport.tag}p{n}" for n in range(1, transport._counter + 1)
    ]
    events = size = 0
    for stream_id in stream_ids:
        for _, data in await app.event_store.replay(session, stream_id, -1) or []:
            events += 1
            size += len(data)
    return events, size


async def test_plain_json_replies_are_not_kept_for_replay() -> None:
    """Regression: every reply was appended to the session's event store: 1,200 calls with
    64 KiB results kept about 77 MiB per session."""
    app, _ = hardened_app()
    session = await initialize(app)
    for index in range(1200):
        reply = await send(app, body=call(index, "big"), session=session)
        assert reply.header("content-type") == "application/json"
    assert await retained(app, session) == (0, 0)


async def test_sse_replies_delivered_in_full_are_dropped_and_dropped_ones_stay_under_the_bound() -> None:
    store = MemoryEventStore(max_bytes_per_session=1024 * 1024)
    app, _ = hardened_app(event_store=store, replay_grace=0)
    session = await initialize(app)
    for index in range(200):  # delivered in full on a live connection: acknowledged
        reply = await send(app, body=call(index, "big", {"progress": True}, token=index), session=session)
        assert methods(reply) == ["notifications/progress", None]
    assert await retained(app, session) == (0, 0)
    dropped = 0
    for index in range(200, 400):  # the server drops each connection before the response
        reply = await send(
            app, body=call(index, "big", {"progress": True, "drop": True}, token=index), session=session
        )
        # (On a busy machine the handler may answer before the drop takes effect.)
        assert methods(reply) in (["notifications/progress"], ["notifications/progress", None])
        dropped += methods(reply) == ["notifications/progress"]
    assert dropped > 100
    events, size = await retained(app, session)
    assert 0 < size <= 1024 * 1024 and events > 0
    assert (events, size) == store.retained(session)


async def test_a_dropped_stream_still_resumes_in_full_and_is_dropped_once_delivered() -> None:
    app, _ = hardened_app(replay_grace=0)
    session = await initialize(app)
    arguments = {"progress": True, "drop": True, "pause": 0.2}
    reply = await send(app, body=call(1, "big", arguments, token="d"), session=session)
    assert methods(reply) == ["notifications/progress"]
    last = reply.events()[-1]["id"]
    resumed = await send(app, "GET", session=session, headers={"last-event-id": last})
    assert [m["id"] for m in resumed.messages()] == [1]
    assert resumed.messages()[0]["result"]["content"][0]["text"] == "x" * BIG
    assert await retained(app, session) == (0, 0)  # delivered: nothing left to replay
    again = await send(app, "GET", session=session, headers={"last-event-id": last})
    assert again.status == 404


async def test_a_stream_written_in_full_stays_replayable_for_the_grace_then_goes() -> None:
    """The server's last write reaching the kernel is not the client reading it (a proxy or
    the network may cut the connection after that): a stream written in full can still be
    resumed for ``replay_grace`` seconds; after that the store forgets it."""
    app, _ = hardened_app(replay_grace=0.5)
    session = await initialize(app)
    reply = await send(app, body=call(1, "big", {"progress": True}, token="g"), session=session)
    assert methods(reply) == ["notifications/progress", None]
    first = reply.events()[0]["id"]  # as if the connection broke right after the progress
    resumed = await send(app, "GET", session=session, headers={"last-event-id": first})
    assert [m["id"] for m in resumed.messages()] == [1]
    assert (await retained(app, session))[0] > 0
    await asyncio.sleep(0.6)
    await send(app, body=call(2, "big", {"progress": True}, token="h"), session=session)
    again = await send(app, "GET", session=session, headers={"last-event-id": first})
    assert again.status == 404


async def test_a_stream_whose_client_hung_up_is_kept_for_resumption() -> None:
    app, tools = hardened_app()
    session = await initialize(app)
    held = exchange(app, body=call(1, "hold", token="h"), session=session)
    await held.until(lambda e: len(e.events()) == 1)
    await held.hang_up()  # the client's connection is gone mid-call
    tools.gate.set()
    await asyncio.sleep(0.05)
    resumed = await send(app, "GET", session=session, headers={"last-event-id": held.events()[0]["id"]})
    assert methods(resumed) == ["notifications/progress", None]
    assert resumed.messages()[-1]["result"]["content"][0]["text"] == "held"


async def test_the_get_streams_replay_window_is_bounded_in_bytes_without_a_reader() -> None:
    app, _ = hardened_app(event_store=MemoryEventStore(max_bytes_per_session=512 * 1024))
    session = await initialize(app)
    engine = app.sessions[session].engine
    for _ in range(300):  # about 19 MiB of notifications, and no GET stream to read them
        await engine.notify("notifications/message", {"level": "info", "data": "y" * BIG})
    window = app.sessions[session].transport.standalone.events
    assert sum(len(data) for data in window) <= 2 * 1024 * 1024
    assert (await retained(app, session))[1] <= 512 * 1024


async def test_the_memory_store_bounds_each_session_in_events_and_bytes() -> None:
    store = MemoryEventStore(max_events_per_session=4, max_bytes_per_session=100)

    for index in range(1, 4):
        store.append("s", "a", index, b"a" * 10)
    for index in range(1, 4):
        store.append("s", "b", index, b"b" * 10)
    # Six events, four allowed: the oldest stream's oldest events went first.
    assert await store.replay("s", "a", 0) == [(3, b"a" * 10)]
    assert [i for i, _ in await store.replay("s", "b", 0) or []] == [1, 2, 3]
    store.append("s", "c", 1, b"c" * 90)  # over 100 bytes: "a" goes, then "b"'s oldest
    assert await store.replay("s", "a", 0) is None
    assert [i for i, _ in await store.replay("s", "b", 0) or []] == [3]
    store.append("t", "a", 1, b"t")  # another session has bounds of its own
    store.forget("s", "b")
    assert await store.replay("s", "b", 0) is None
    assert await store.replay("s", "c", 0) == [(1, b"c" * 90)]
    store.forget("s")
    assert await store.replay("s", "c", 0) is None
    assert await store.replay("t", "a", 0) == [(1, b"t")]
    store.append("s", "big", 1, b"z" * 500)  # one event over the bound is not kept
    assert await store.replay("s", "big", 0) is None


# == 16. scenarios: real uvicorn, many clients, hostile ones ======================================

SCENARIO_TIMEOUT = 120  # seconds; each scenario takes a few on a quiet machine


async def post_from(
    port: int, address: str, message: dict[str, Any], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One POST to ``/mcp`` over a new connection from ``address`` (a 127.0.0.x)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))
    try:
        body = json.dumps(message).encode()
        lines = [
            "POST /mcp HTTP/1.1",
            f"Host: 127.0.0.1:{port}",
            "Content-Type: application/json",
            f"Accept: {ACCEPT}",
            f"Content-Length: {len(body)}",
            "Connection: close",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        found = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            if value:
                found[name.strip().lower()] = value.strip()
        return int(status_line.split()[1]), found, await reader.read()
    finally:
        writer.close()


async def initialize_from(port: int, address: str, headers: dict[str, str] | None = None) -> str:
    """A raw client's handshake; the session id."""
    status, found, body = await post_from(port, address, rpc(0, "initialize", init_params()), headers)
    assert status == 200, body
    session = found["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    status, _, _ = await post_from(port, address, initialized, {"Mcp-Session-Id": session, **(headers or {})})
    assert status == 202
    return session


async def hostile_loop(
    port: int, address: str, count: int, headers: dict[str, str] | None = None
) -> list[int]:
    """Initialize ``count`` sessions one after another and never end one; the statuses."""
    statuses = []
    for index in range(count):
        status, _, _ = await post_from(port, address, rpc(index, "initialize", init_params()), headers)
        statuses.append(status)
    return statuses


@asynccontextmanager
async def sdk_session_from(url: str, address: str) -> AsyncIterator[ClientSession]:
    """The official SDK's Streamable HTTP client, connecting from ``address``."""
    transport = httpx2.AsyncHTTPTransport(local_address=address)
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(transport=transport, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_scenario_clients_at_several_addresses_are_unaffected_by_one_initializing_in_a_loop() -> None:
    """Three addresses: SDK clients calling tools, and raw sessions left idle meanwhile;
    two more addresses initialize 300 sessions each without ending one. Nobody but the
    looping clients loses a session, and a newcomer still gets in."""
    tools = Hardened()
    app = make_app(tools, changes=tools.feed, max_sessions=40, max_sessions_per_client=8)
    addresses = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    with ServerThread(app) as server:
        idle = {address: await initialize_from(server.port, address) for address in addresses}

        async def calls(address: str, client: int) -> int:
            async with sdk_session_from(server.url, address) as session:
                for index in range(15):
                    result = await session.call_tool("echo", {"client": client, "call": index})
                    assert not result.is_error
                    assert json.loads(result.content[0].text) == {"client": client, "call": index}
                return index + 1

        async def everything() -> list[Any]:
            return await asyncio.gather(
                *(calls(address, n) for n, address in enumerate(addresses * 2)),
                hostile_loop(server.port, "127.0.0.66", 300),
                hostile_loop(server.port, "127.0.0.67", 300),
            )

        *done, first_loop, second_loop = await asyncio.wait_for(everything(), SCENARIO_TIMEOUT)
        assert done == [15] * 6
        assert set(first_loop) == set(second_loop) == {200}  # they only recycle their own
        owners = [session.owner for session in list(app.sessions.values())]
        assert owners.count("127.0.0.66") <= 8 and owners.count("127.0.0.67") <= 8
        for address, session in idle.items():  # idle all along, and still there
            status, _, body = await post_from(server.port, address, rpc(1, "ping"), {"Mcp-Session-Id": session})
            assert status == 200, body
        await initialize_from(server.port, "127.0.0.5")


async def test_scenario_principals_are_unaffected_by_one_initializing_in_a_loop() -> None:
    """With bearer tokens the cap is per principal: alice and bob (our client) work on
    while mallory, from the same address, initializes in a loop."""

    async def verify(token: str) -> str | None:
        return token.removesuffix("-token") if token in TOKENS else None

    TOKENS = {"alice-token", "bob-token", "mallory-token", "carol-token"}
    app = make_app(auth=BearerAuth(verify, PRM), max_sessions=30, max_sessions_per_client=5)
    with ServerThread(app) as server:

        async def calls(name: str) -> int:
            headers = {"Authorization": f"Bearer {name}-token"}
            async with connect_http(server.url, protocol=LATEST, headers=headers) as client:
                for index in range(15):
                    result = await client.call_tool(name="echo", arguments={"who": name, "n": index})
                    assert texts(result) == [json.dumps({"n": index, "who": name})]
                return index + 1

        mallory = {"Authorization": "Bearer mallory-token"}

        async def everything() -> list[Any]:
            return await asyncio.gather(
                calls("alice"), calls("bob"), calls("alice"),
                hostile_loop(server.port, "127.0.0.1", 300, mallory),
            )

        *done, statuses = await asyncio.wait_for(everything(), SCENARIO_TIMEOUT)
        assert done == [15, 15, 15] and set(statuses) == {200}
        assert sum(1 for s in list(app.sessions.values()) if s.principal == "mallory") <= 5
        await initialize_from(server.port, "127.0.0.1", {"Authorization": "Bearer carol-token"})


async def test_scenario_ten_sessions_receive_a_change_while_one_sessions_request_is_in_flight() -> None:
    """Five of our clients and five SDK clients; ours[0] calls a tool that publishes a
    change and then waits. Each client hears the change once, on its own GET stream, and
    the waiting call's stream carries only its progress and its result."""
    tools = Hardened()
    app = make_app(tools, changes=tools.feed)
    with ServerThread(app) as server:
        async with contextlib.AsyncExitStack() as stack:
            ours = [Handlers() for _ in range(5)]
            clients = [
                await stack.enter_async_context(connect_http(server.url, protocol=LATEST, handlers=h))
                for h in ours
            ]
            inboxes = [Inbox() for _ in range(5)]
            for inbox in inboxes:
                await stack.enter_async_context(sdk_client_with(server.url, inbox))
            await eventually(lambda: len(app.sessions) == 10)
            await eventually(lambda: all(s.get_connected for s in list(app.sessions.values())))

            call_in_flight = asyncio.ensure_future(
                clients[0].call_tool(name="announce", arguments={"how": "feed"}, meta=token("a"))
            )
            try:
                await asyncio.wait_for(wait_for_flag(tools.started, SCENARIO_TIMEOUT), SCENARIO_TIMEOUT)

                def everyone_heard() -> bool:
                    heard = [h.tools_changed for h in ours] + [
                        i.methods().count("notifications/tools/list_changed") for i in inboxes
                    ]
                    return all(count >= 1 for count in heard)

                await eventually(everyone_heard, timeout=30)
                await asyncio.sleep(0.2)  # a second copy would have arrived by now
                assert [h.tools_changed for h in ours] == [1] * 5
                assert [i.methods() for i in inboxes] == [["notifications/tools/list_changed"]] * 5
                assert not call_in_flight.done()
            finally:
                tools.gate.set()
            result = await asyncio.wait_for(call_in_flight, SCENARIO_TIMEOUT)
            assert texts(result) == ["announced"]
            await eventually(lambda: ours[0].steps("a") == [1, 2])
            assert ours[0].tools_changed == 1


@asynccontextmanager
async def sdk_client_with(url: str, inbox: Inbox) -> AsyncIterator[ClientSession]:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, message_handler=inbox.message) as session,
    ):
        await session.initialize()
        yield session


# == the same class elsewhere: the deprecated HTTP+SSE transport ===================================


async def asgi_post(app: HttpApp, path: str, query: bytes, message: dict[str, Any]) -> int:
    """One POST through the ASGI app; its status."""
    body = json.dumps(message).encode()
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query,
        "headers": [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def record(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, receive, record), 5)
    return int(sent[0]["status"])


async def test_a_legacy_sse_client_that_stops_reading_is_cut_off_and_leaves_nothing_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: with a client that stopped reading its HTTP+SSE stream, every change the
    server published left one more task waiting for room in that stream's queue, forever
    (even after the client went away)."""
    monkeypatch.setattr(http_sse, "MAX_QUEUED_MESSAGES", 3)
    monkeypatch.setattr(http_sse, "STALLED_CLIENT_SECONDS", 0.2, raising=False)
    tools = Hardened()
    app = make_app(tools, changes=tools.feed, legacy_sse=True)
    endpoint: list[bytes] = []
    never = asyncio.Event()

    async def stalled_send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and not endpoint:
            endpoint.append(message["body"])  # the endpoint event; then the client stalls
        elif message["type"] == "http.response.body":
            await never.wait()

    async def silent_receive() -> dict[str, Any]:
        await never.wait()
        return {"type": "http.disconnect"}

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": "/sse", "raw_path": b"/sse", "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"accept", b"text/event-stream")],
        "client": ("127.0.0.1", 50001), "server": ("127.0.0.1", 8000),
    }
    stream = asyncio.ensure_future(app(scope, silent_receive, stalled_send))
    try:
        await eventually(lambda: bool(endpoint))
        assert app.legacy_sse is not None
        connection = next(iter(app.legacy_sse.connections.values()))
        query = endpoint[0].split(b"?", 1)[1].split(b"\n")[0]
        initialize_2024 = rpc(0, "initialize", init_params("2024-11-05"))
        assert await asgi_post(app, "/messages/", query, initialize_2024) == 202
        await eventually(lambda: connection.server.package is not None)
        for _ in range(10):  # one change after another, none of them read
            tools.feed.tools_changed()
        await asyncio.wait_for(asyncio.shield(stream), 5)  # the server cut the client off
        assert app.legacy_sse.connections == {}
        await eventually(lambda: not connection.server._background)  # nothing left waiting
    finally:
        stream.cancel()
        await asyncio.gather(stream, return_exceptions=True)


class FailingStore(MemoryEventStore):
    """A store whose clean-up fails (an I/O store losing its connection, say)."""

    async def forget(self, session_id: str, stream_id: str | None = None) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        raise ConnectionError("store unreachable")


async def test_a_failing_event_store_clean_up_is_logged_not_left_unretrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Regression: the clean-up of an ended session ran as a task whose exception nobody
    retrieved (asyncio's "never retrieved" warning, at garbage collection if ever)."""
    app = make_app(event_store=FailingStore())
    session = await initialize(app)
    with caplog.at_level("ERROR", logger="typedmcp"):
        assert (await send(app, "DELETE", session=session)).status == 200
        await eventually(lambda: any("event store" in r.getMessage() for r in caplog.records))
    assert not http_streams._BACKGROUND


async def test_resource_subscriptions_per_session_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: every resources/subscribe with a new URI grew the session's set of
    subscribed URIs, without a bound."""
    monkeypatch.setattr(server_module, "MAX_SUBSCRIPTIONS_PER_SESSION", 3, raising=False)
    app, _ = hardened_app()
    session = await initialize(app)

    async def subscribe(uri: str, method: str = "resources/subscribe") -> dict[str, Any]:
        reply = await send(app, body=rpc(1, method, {"uri": uri}), session=session)
        return reply.json()  # type: ignore[no-any-return]

    for n in range(3):
        assert (await subscribe(f"test://r{n}"))["result"] == {}
    assert (await subscribe("test://r1"))["result"] == {}  # already subscribed: fine
    refused = (await subscribe("test://r3"))["error"]
    assert refused["code"] == -32602 and "unsubscribe" in refused["message"]
    assert (await subscribe("test://r0", "resources/unsubscribe"))["result"] == {}
    assert (await subscribe("test://r3"))["result"] == {}
    assert app.sessions[session].server.subscribed_uris == {"test://r1", "test://r2", "test://r3"}
