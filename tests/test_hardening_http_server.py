"""Hardening of the Streamable HTTP server (handshake era) against hostile and third-party
clients: session exhaustion (caps per client, eviction of idle sessions), change
notifications reaching each session on its own stream, and bounded event retention.

Driven at the ASGI seam with the harness of ``tests/test_http_server.py`` (a wrapper sets
the client address the app sees); the scenario tests at the end run a real uvicorn and
connect from several loopback addresses (127.0.0.x) and with several bearer tokens.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from test_http_server import (  # the autouse fixture: hang up leftovers, re-raise app errors
    Ctx,
    Exchange,
    Tools,
    _no_exchange_left_running,  # noqa: F401
    call,
    exchange,
    initialize,
    make_app,
    rpc,
    send,
    wait_for_flag,
)

from mcp_codegen.runtime import http as http_module
from mcp_codegen.runtime.http import HttpApp, close_sse_stream
from mcp_codegen.runtime.stateless import ChangeFeed
from mcp_generated.v2025_11_25 import models

pytestmark = pytest.mark.anyio

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
            else:
                await ctx.peer.send_tool_list_changed()
            self.started.set()
            await wait_for_flag(self.gate)
            await ctx.report_progress(2, 2)
            return self.result("announced")
        if params.name == "big":  # a result of ``size`` bytes of text, after optional progress
            if args.get("progress"):
                await ctx.report_progress(1, 1)
            if args.get("drop"):  # the server drops the connection before the response
                close_sse_stream()
                await asyncio.sleep(0.005)
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
    assert seen[0].get(http_module._current_stream) is None and len(seen[0]) == 0


# silence "imported but unused" for helpers kept for the scenario tests below
_ = (json, Awaitable, Callable)
