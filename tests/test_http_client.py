"""Our Streamable HTTP client (``connect_http`` over ``runtime.http_client``) against our
server, served by a real uvicorn on 127.0.0.1.

The server side (``Tools``, ``ServerThread``) comes from ``tests/test_http_server.py``;
``ServerThread`` logs every HTTP request the client makes (method, headers, body, status,
content type, whether the client hung up), so the tests can check the client's wire
behaviour as well as what its typed API returns. ``DropStreams`` cuts SSE replies short, the
way a proxy or a 2025-11-25 polling server does, to exercise resumption.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import re
import time
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from test_http_server import SERVER_INFO, ServerThread, Tools, auth_app, make_app, wait_for_flag

import mcp_generated.v2025_06_18
import mcp_generated.v2025_11_25
from typedmcp.connecting import connect_http
from typedmcp.protocol.errors import AuthRequired
from typedmcp.protocol.stubs import RequestContext
from typedmcp.transports.http_client import ResponseLost, SessionExpired
from typedmcp.transports.http_session import SessionLostInHandshake
from typedmcp.transports.http_server import HttpApp
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import Client, ClientHandlers

pytestmark = pytest.mark.anyio

LATEST = mcp_generated.v2025_11_25
SAMPLED = "sampled by the client"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def wire(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_unset=True)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]


async def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


class Handlers(ClientHandlers):
    """Answers sampling; records progress and list_changed notifications."""

    def __init__(self) -> None:
        self.sampled: list[dict[str, Any]] = []
        self.progress: list[dict[str, Any]] = []
        self.tools_changed = 0

    async def create_message(
        self, params: models.CreateMessageRequestParams, ctx: RequestContext[Client]
    ) -> models.CreateMessageResult:
        self.sampled.append(wire(params))
        return models.CreateMessageResult(
            role="assistant",
            content=models.TextContent(type="text", text=SAMPLED),
            model="client-model",
        )

    async def on_progress(
        self, params: models.ProgressNotificationParams, ctx: RequestContext[Client]
    ) -> None:
        self.progress.append(wire(params))

    async def on_tool_list_changed(
        self, params: models.NotificationParams | None, ctx: RequestContext[Client]
    ) -> None:
        self.tools_changed += 1

    def steps(self, token: str) -> list[float]:
        return [p["progress"] for p in self.progress if p["progressToken"] == token]


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[ServerThread]:
    with ServerThread(app) as server:
        yield server


def server_session(app: HttpApp, client: Client) -> Any:
    """The server's session object behind a connected client."""
    return app.sessions[client.session.transport.session_id]


def token(value: str) -> models.ParamsMeta:
    return models.ParamsMeta(progress_token=value)


# -- typed calls, JSON and SSE -----------------------------------------------------------------


async def test_typed_calls_are_answered_over_json_and_sse() -> None:
    app = make_app()
    async with serving(app) as server, connect_http(server.url, protocol=LATEST) as client:
        assert client.session.protocol_version == "2025-11-25"
        assert client.session.server_info == SERVER_INFO
        assert client.session.peer_capabilities == {"tools": {"listChanged": True}, "logging": {}}
        listed = await client.list_tools()
        assert isinstance(listed, models.ListToolsResult)
        assert [tool.name for tool in listed.tools] == ["echo", "progress", "sample", "slow", "hold", "stubborn"]
        echoed = await client.call_tool(name="echo", arguments={"city": "Oslo"})
        assert isinstance(echoed, models.CallToolResult)
        assert wire(echoed) == {"content": [{"type": "text", "text": '{"city": "Oslo"}'}]}
        assert server.posted("tools/call")[-1]["content-type"] == "application/json"
        streamed = await client.call_tool(name="progress", arguments={"steps": 2}, meta=token("t"))
        assert texts(streamed) == ["progressed"]
        assert server.posted("tools/call")[-1]["content-type"] == "text/event-stream"
        assert wire(await client.ping()) == {}
        assert wire(await client.set_level(level="debug")) == {}


async def test_an_older_package_negotiates_its_revision_over_http() -> None:
    app = make_app()
    async with serving(app) as server:
        async with connect_http(server.url, protocol=mcp_generated.v2025_06_18) as client:
            assert client.session.protocol_version == "2025-06-18"
            assert texts(await client.call_tool(name="echo")) == ["{}"]
        headers = [e["headers"] for e in server.posted("tools/call")]
        assert [h.get("mcp-protocol-version") for h in headers] == ["2025-06-18"]


async def test_progress_reaches_the_handlers_and_a_registered_callback() -> None:
    handlers = Handlers()
    app = make_app()
    async with serving(app) as server, connect_http(server.url, protocol=LATEST, handlers=handlers) as client:
        seen: list[tuple[float, float | None, str | None]] = []
        client.session.progress_callbacks["cb"] = lambda p: seen.append((p.progress, p.total, p.message))
        result = await client.call_tool(name="progress", arguments={"steps": 3}, meta=token("cb"))
        assert texts(result) == ["progressed"]
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        await eventually(lambda: len(handlers.progress) == 3)
        assert handlers.progress == [
            {"progressToken": "cb", "progress": step, "total": 3, "message": f"step {step}"} for step in (1, 2, 3)
        ]


# -- server -> client --------------------------------------------------------------------------


async def test_sampling_is_answered_by_the_client_handlers() -> None:
    handlers = Handlers()
    app = make_app()
    async with serving(app) as server, connect_http(server.url, protocol=LATEST, handlers=handlers) as client:
        assert client.session.own_capabilities == {"sampling": {}}
        result = await client.call_tool(name="sample", arguments={"prompt": "Say hi"})
    assert texts(result) == [f"client-model: {SAMPLED}"]
    assert handlers.sampled == [{"messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}], "maxTokens": 10}]
    answers = [e for e in server.requests("POST") if b'"result"' in e["body"] and b"client-model" in e["body"]]
    assert len(answers) == 1 and answers[0]["status"] == 202


async def test_list_changed_outside_a_request_arrives_on_the_get_stream() -> None:
    handlers = Handlers()
    app = make_app()
    async with serving(app) as server, connect_http(server.url, protocol=LATEST, handlers=handlers) as client:
        await server.call(server_session(app, client).server.peer.send_tool_list_changed())
        await eventually(lambda: handlers.tools_changed == 1)
        [get] = server.requests("GET")
        assert get["headers"]["accept"] == "text/event-stream"
        assert get["headers"]["mcp-session-id"] == client.session.transport.session_id
        assert get["status"] == 200


# -- headers, session lifetime -----------------------------------------------------------------


async def test_every_request_carries_the_session_and_version_and_delete_ends_the_session() -> None:
    app = make_app()
    async with serving(app) as server:
        async with connect_http(server.url, protocol=LATEST, headers={"X-Trace": "t-1"}) as client:
            session_id = client.session.transport.session_id
            await client.call_tool(name="echo")
            await client.list_tools()
        assert app.sessions == {}
        log = server.log
    assert [e["method"] for e in log[:2]] == ["POST", "POST"]  # initialize, initialized
    initialize, *rest = log
    assert json.loads(initialize["body"])["method"] == "initialize"
    assert "mcp-session-id" not in initialize["headers"]
    assert rest[-1]["method"] == "DELETE" and rest[-1]["status"] == 200
    for entry in log:
        assert entry["headers"]["x-trace"] == "t-1"
        if entry["method"] == "POST":
            assert entry["headers"]["content-type"] == "application/json"
            assert {"application/json", "text/event-stream"} <= {
                part.strip() for part in entry["headers"]["accept"].split(",")
            }
    for entry in rest:
        assert entry["headers"]["mcp-session-id"] == session_id
    calls = server.posted("tools/call") + server.posted("tools/list")
    assert [e["headers"]["mcp-protocol-version"] for e in calls] == ["2025-11-25", "2025-11-25"]
    assert rest[-1]["headers"]["mcp-protocol-version"] == "2025-11-25"


async def test_a_forgotten_session_is_initialized_again_transparently() -> None:
    """The server drops the session; the next call gets 404, initializes once, and retries.
    Regression: the new session had no GET stream (server notifications were lost)."""
    handlers = Handlers()
    app = make_app()
    async with serving(app) as server, connect_http(server.url, protocol=LATEST, handlers=handlers) as client:
        transport = client.session.transport
        transport.retry_ms = 20
        first = transport.session_id

        async def forget() -> None:
            app._end(app.sessions[first])

        await server.call(forget())
        await asyncio.sleep(0.3)  # the old GET stream has ended, and its reconnection failed
        result = await client.call_tool(name="echo", arguments={"again": True})
        assert texts(result) == ['{"again": true}']
        second = transport.session_id
        assert second != first and list(app.sessions) == [second]
        assert len(server.posted("initialize")) == 2
        statuses = [(e["headers"]["mcp-session-id"], e["status"]) for e in server.posted("tools/call")]
        assert statuses == [(first, 404), (second, 200)]
        await server.call(app.sessions[second].server.peer.send_tool_list_changed())
        await eventually(lambda: handlers.tools_changed == 1)


class EvictBeforeInitialized:
    """Ends a session the moment its ``notifications/initialized`` arrives, so the server
    itself answers 404 (as after an idle eviction, a session limit or a restart between the
    two POSTs of the handshake): the first ``count`` times, or every time (``None``)."""

    def __init__(self, app: HttpApp, count: int | None) -> None:
        self.app = app
        self.count = count
        self.evicted: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or self.count == 0:
            await self.app(scope, receive, send)
            return
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        session = self.app.sessions.get(headers.get("mcp-session-id", ""))
        if session is not None and json.loads(body).get("method") == "notifications/initialized":
            self.app._end(session)
            self.evicted.append(session.id)
            if self.count is not None:
                self.count -= 1
        await self.app(scope, replay, send)


async def test_a_session_evicted_before_initialized_is_initialized_again_during_connect() -> None:
    """The server forgets the session between ``initialize`` and ``notifications/initialized``:
    ``connect_http`` runs the handshake again, and the client works on the new session.
    Regression: connect failed with SessionExpired (HTTP 404)."""
    handlers = Handlers()
    app = make_app()
    evicting = EvictBeforeInitialized(app, 1)
    async with serving(evicting) as server, connect_http(server.url, protocol=LATEST, handlers=handlers) as client:
        [first] = evicting.evicted
        second = client.session.transport.session_id
        assert second != first and list(app.sessions) == [second]
        assert len(server.posted("initialize")) == 2
        statuses = [(e["headers"]["mcp-session-id"], e["status"]) for e in server.posted("notifications/initialized")]
        assert statuses == [(first, 404), (second, 202)]
        assert "mcp-session-id" not in server.posted("initialize")[1]["headers"]  # a fresh initialize
        assert texts(await client.call_tool(name="echo", arguments={"n": 1})) == ['{"n": 1}']
        assert {e["headers"]["mcp-session-id"] for e in server.requests("GET")} == {second}
        await server.call(app.sessions[second].server.peer.send_tool_list_changed())
        await eventually(lambda: handlers.tools_changed == 1)  # the GET stream is the new session's


async def test_a_server_that_evicts_every_session_before_initialized_fails_connect_clearly() -> None:
    """Bounded: a server that forgets every session before ``notifications/initialized`` gets
    two handshakes, then ``connect_http`` fails naming what happened (no loop, no fallback to
    HTTP+SSE, no GET stream)."""
    app = make_app()
    evicting = EvictBeforeInitialized(app, None)
    async with serving(evicting) as server:
        with pytest.raises(SessionLostInHandshake) as raised:
            async with connect_http(server.url, protocol=LATEST):
                pass
        assert len(server.posted("initialize")) == 2 and len(evicting.evicted) == 2
        assert [e["status"] for e in server.posted("notifications/initialized")] == [404, 404]
        assert server.requests("GET") == server.requests("DELETE") == [] and app.sessions == {}
    assert isinstance(raised.value, SessionExpired) and raised.value.status == 404
    message = str(raised.value)
    assert server.url in message and "notifications/initialized" in message
    assert "2 handshakes" in message and "session affinity" in message


async def test_the_bearer_token_goes_on_every_request() -> None:
    app = auth_app()
    async with serving(app) as server:
        async with connect_http(server.url, protocol=LATEST, bearer_token="alice-token") as client:
            assert texts(await client.call_tool(name="echo")) == ["{}"]
        assert {e["method"] for e in server.log} == {"POST", "GET", "DELETE"}
        assert {e["headers"]["authorization"] for e in server.log} == {"Bearer alice-token"}
        with pytest.raises(AuthRequired) as raised:
            async with connect_http(server.url, protocol=LATEST, bearer_token="stolen"):
                pass
    assert raised.value.status == 401
    assert raised.value.challenge.endswith('error="invalid_token"')
    assert 'resource_metadata="http://127.0.0.1:' in raised.value.challenge


# -- dropped streams ----------------------------------------------------------------------------


class DropStreams:
    """Cuts the next ``count`` SSE replies to POSTs right after their first event (which
    gets ``retry: 50``), the way a server that polls (2025-11-25) or a proxy would."""

    def __init__(self, app: HttpApp, count: int) -> None:
        self.app = app
        self.count = count

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        sse = False

        class Cut(Exception):
            pass

        async def cutting_send(message: Any) -> None:
            nonlocal sse
            if message["type"] == "http.response.start":
                content_type = dict(message.get("headers", [])).get(b"content-type", b"")
                sse = content_type == b"text/event-stream" and self.count > 0
                if sse:
                    self.count -= 1
            elif sse and message.get("body"):
                await send({**message, "body": b"retry: 50\n" + message["body"]})
                raise Cut
            await send(message)

        with contextlib.suppress(Cut):  # the response is left incomplete: uvicorn drops the connection
            await self.app(scope, receive, cutting_send)


async def test_a_dropped_reply_stream_is_resumed_with_last_event_id() -> None:
    handlers = Handlers()
    tools = Tools()
    app = make_app(tools)
    async with serving(DropStreams(app, 1)) as server, connect_http(server.url, protocol=LATEST, handlers=handlers) as client:
        arguments = {"steps": 3, "pause": 0.1}
        result = await client.call_tool(name="progress", arguments=arguments, meta=token("r"))
        assert texts(result) == ["progressed"]
        resumed = [e for e in server.requests("GET") if "last-event-id" in e["headers"]]
        assert len(resumed) == 1
        assert re.fullmatch(r"[0-9a-f]{8}p\d+\.0", resumed[0]["headers"]["last-event-id"])  # the priming event
        assert resumed[0]["headers"]["mcp-session-id"] == client.session.transport.session_id
        await eventually(lambda: len(handlers.progress) == 3)
        assert handlers.steps("r") == [1, 2, 3]
        assert tools.calls == ["progress"]  # resumed, not re-sent


async def test_two_dropped_streams_each_resume_their_own() -> None:
    """Regression: resumption used the last event id seen on any stream, so one call
    replayed the other's stream (delivering its messages twice) and never got its answer."""
    handlers = Handlers()
    app = make_app()
    async with serving(DropStreams(app, 2)) as server, connect_http(
        server.url, protocol=LATEST, handlers=handlers, request_timeout=5
    ) as client:
        arguments = {"steps": 3, "pause": 0.15}
        first, second = await asyncio.gather(
            client.call_tool(name="progress", arguments=arguments, meta=token("a")),
            client.call_tool(name="progress", arguments=arguments, meta=token("b")),
        )
        assert texts(first) == texts(second) == ["progressed"]
        resumed = [e["headers"]["last-event-id"] for e in server.requests("GET") if "last-event-id" in e["headers"]]
        assert len(resumed) == 2 and len({event.split(".")[0] for event in resumed}) == 2
        await eventually(lambda: len(handlers.progress) >= 6)
        await asyncio.sleep(0.1)
        assert (handlers.steps("a"), handlers.steps("b")) == ([1, 2, 3], [1, 2, 3])


class CutAfterPriming:
    """Ends the SSE reply to the first ``tools/call`` right after its priming event (an id
    and the server's ``retry``): ``broke`` drops the connection mid-body, else the reply
    ends cleanly (as the conformance suite's ``sse-retry`` server does). Records, on the
    server's clock, when the stream was cut and when each GET with ``Last-Event-ID`` came."""

    def __init__(self, app: HttpApp, broke: bool, before_cut: Callable[[], None] = lambda: None) -> None:
        self.app = app
        self.broke = broke
        self.before_cut = before_cut
        self.cut_at: float | None = None
        self.resumed_at: list[tuple[float, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        if scope["type"] == "http" and scope["method"] == "GET" and "last-event-id" in headers:
            self.resumed_at.append((time.monotonic(), headers["last-event-id"]))
        if scope["type"] != "http" or scope["method"] != "POST" or self.cut_at is not None:
            await self.app(scope, receive, send)
            return
        sse = False

        class Cut(Exception):
            pass

        async def cutting_send(message: Any) -> None:
            nonlocal sse
            if message["type"] == "http.response.start":
                sse = dict(message.get("headers", [])).get(b"content-type", b"") == b"text/event-stream"
            elif sse and message.get("body"):
                assert b"retry: " in message["body"] and b"id: " in message["body"]
                self.before_cut()
                await send({**message, "more_body": self.broke})  # broke: the body never ends
                self.cut_at = time.monotonic()
                raise Cut
            await send(message)

        with contextlib.suppress(Cut):
            await self.app(scope, receive, cutting_send)


#: How long the test's probe of the server takes: the round trip to a server far away
#: (longer than ``retry``, so waiting for it first would show).
PROBE_TRIP = 1.0


@pytest.mark.parametrize("broke", [True, False], ids=["broke", "ended"])
async def test_a_cut_reply_stream_is_resumed_after_retry_not_retry_plus_a_probe(broke: bool) -> None:
    """The reply stream ends after an event with ``retry: 300`` and an id: the GET with that
    ``Last-Event-ID`` reaches the server 300 ms after the cut (its clock), not later. After
    a break the server is probed (a server that is gone fails the call at once) during the
    wait, not before it. Regression: the probe came first, so the GET came ``retry`` + the
    probe's round trip after the break (817 ms for a 500 ms retry in the conformance suite)."""
    app = make_app(retry_ms=300)
    cutting = CutAfterPriming(app, broke)
    async with serving(cutting) as server, connect_http(server.url, protocol=LATEST) as client:
        http = client.session.transport.http
        real_probe = http.probe
        probed_at: list[float] = []

        async def distant_probe() -> None:
            probed_at.append(time.monotonic())
            await asyncio.sleep(PROBE_TRIP)  # (the round trip: latency, not readiness)
            await real_probe()

        http.probe = distant_probe
        result = await client.call_tool(name="progress", arguments={"steps": 1, "pause": 0.2}, meta=token("p"))
        assert texts(result) == ["progressed"]
    assert cutting.cut_at is not None
    [(resumed_at, last_event_id)] = cutting.resumed_at
    assert re.fullmatch(r"[0-9a-f]{8}p\d+\.0", last_event_id)  # the priming event's id
    delay = resumed_at - cutting.cut_at
    assert 0.3 <= delay < 0.3 + 0.4, f"resumed {delay * 1000:.0f} ms after the cut (retry: 300 ms)"
    if broke:
        [probe] = probed_at
        assert cutting.cut_at <= probe < resumed_at  # probed, alongside the wait
    else:
        assert probed_at == []  # a stream that ended cleanly: the server is there


async def test_a_broken_reply_stream_fails_at_once_when_the_server_is_gone_however_long_retry_is() -> None:
    """Guard: the probe now runs alongside the wait for ``retry`` (30 s here), and still
    fails the call at once when nothing accepts connections any more."""
    app = make_app(retry_ms=30_000)

    def stop_listening() -> None:  # on the server's loop: new connections are refused
        for listener in server.server.servers:
            listener.close()

    cutting = CutAfterPriming(app, broke=True, before_cut=stop_listening)
    async with serving(cutting) as server, connect_http(server.url, protocol=LATEST) as client:
        started = time.monotonic()
        with pytest.raises(ResponseLost) as raised:
            await asyncio.wait_for(client.call_tool(name="progress", arguments={"steps": 1}, meta=token("g")), 5)
        assert time.monotonic() - started < 2.0
    message = str(raised.value)
    assert server.url in message and "connection refused" in message
    assert cutting.resumed_at == []


async def test_a_call_given_up_on_hangs_up_its_reply_stream() -> None:
    """Regression: a cancelled call left its connection open (neither closed nor reused)."""
    tools = Tools()
    app = make_app(tools)
    async with serving(app) as server, connect_http(server.url, protocol=LATEST) as client:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ResourceWarning)
                with pytest.raises(asyncio.TimeoutError):
                    await asyncio.wait_for(client.call_tool(name="stubborn", meta=token("s")), 0.5)
                gc.collect()
            # Closed on purpose, not found open by the garbage collector.
            assert [str(w.message) for w in caught if "unclosed" in str(w.message)] == []
            await wait_for_flag(tools.started)
            await eventually(lambda: server.posted("tools/call")[-1]["hung_up"])
            [cancel] = server.posted("notifications/cancelled")
            assert json.loads(cancel["body"])["params"]["requestId"] == 2
            await eventually(lambda: tools.cancelled == [2])
        finally:
            tools.gate.set()  # the handler ignores cancellation: let it end
        assert texts(await client.call_tool(name="echo")) == ["{}"]
