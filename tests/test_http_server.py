"""The Streamable HTTP server (``typedmcp.transports.http_server``), driven at the ASGI seam and
through a real uvicorn.

Most tests call the ASGI app by hand: an :class:`Exchange` builds the scope, feeds the body
(in chunks, if asked), records what the app sends (status, headers, body, SSE events) and
can hang up like a client closing its socket. Where real sockets matter (incremental SSE
delivery, dropped connections, resumption, chunked uploads), the same app runs under
uvicorn in a thread (:class:`ServerThread`) and a raw HTTP/1.1 client (:func:`raw`) talks to
it. ``tests/test_http_client.py`` reuses both helpers.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import pytest
import uvicorn

from typedmcp.transports import http_streams
from typedmcp.auth.bearer import BearerAuth
from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import http_app
from typedmcp.transports.http_server import HttpApp
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

pytestmark = pytest.mark.anyio

HOST = "127.0.0.1:8000"
ACCEPT = "application/json, text/event-stream"
SERVER_INFO = {"name": "http-test-server", "version": "1.0.0"}
SAMPLED = "sampled text"
Ctx = RequestContext[ClientPeer]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- the server under test ---------------------------------------------------------------------


async def wait_for_flag(flag: threading.Event, timeout: float = 5.0) -> None:
    """Wait for a thread-safe flag without blocking the loop (the server may run in a thread)."""
    deadline = time.monotonic() + timeout
    while not flag.is_set():
        if time.monotonic() > deadline:
            raise TimeoutError("flag never set")
        await asyncio.sleep(0.005)


class Tools(ServerHandlers):
    """Tools that exercise each way a handler can use its request's stream."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.finished: list[str] = []
        self.cancelled: list[Any] = []
        self.started = threading.Event()
        self.gate = threading.Event()

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListToolsResult:
        schema = models.ToolInputSchema(type="object")
        names = ("echo", "progress", "sample", "slow", "hold", "stubborn")
        return models.ListToolsResult(
            tools=[models.Tool(name=name, input_schema=schema) for name in names]
        )

    def result(self, value: str) -> models.CallToolResult:
        return models.CallToolResult(content=[models.TextContent(type="text", text=value)])

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        args = params.arguments or {}
        self.calls.append(params.name)
        if params.name == "echo":
            return self.result(json.dumps(args, sort_keys=True))
        if params.name == "progress":
            steps = int(args.get("steps", 3))
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}")
                await asyncio.sleep(float(args.get("pause", 0)))
            return self.result("progressed")
        if params.name == "sample":
            message = models.SamplingMessage(
                role="user", content=models.TextContent(type="text", text=str(args["prompt"]))
            )
            answer = await ctx.peer.create_message(messages=[message], max_tokens=10)
            assert isinstance(answer.content, models.TextContent)
            return self.result(f"{answer.model}: {answer.content.text}")
        if params.name == "slow":
            self.started.set()
            try:
                await asyncio.sleep(float(args.get("seconds", 10)))
            except asyncio.CancelledError:
                self.cancelled.append(ctx.request_id)
                raise
            return self.result("slept")
        if params.name == "hold":  # progress 1, wait for the gate, progress 2, answer
            await ctx.report_progress(1, 2, "before the gate")
            self.started.set()
            await wait_for_flag(self.gate)
            await ctx.report_progress(2, 2, "after the gate")
            self.finished.append("hold")
            return self.result("held")
        if params.name == "stubborn":  # progress 1, then ignores cancellation until the gate
            await ctx.report_progress(1, 2)
            self.started.set()
            while not self.gate.is_set():
                try:
                    await asyncio.sleep(0.005)
                except asyncio.CancelledError:
                    self.cancelled.append(ctx.request_id)
            self.finished.append("stubborn")
            return self.result("stubborn")
        raise ValueError(f"no tool {params.name}")


def make_app(tools: Tools | None = None, **options: Any) -> HttpApp:
    return http_app(tools or Tools(), server_info=SERVER_INFO, list_changed=["tools"], **options)


# -- driving the ASGI app by hand ----------------------------------------------------------------


def rpc(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(request_id: Any, name: str, arguments: dict[str, Any] | None = None, token: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments or {}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return rpc(request_id, "tools/call", params)


def init_params(version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "raw-test-client", "version": "0.0.1"},
    }


def parse_sse(body: bytes) -> list[dict[str, Any]]:
    """Strict SSE parse: each event is ``event: message``, an ``id`` and one ``data`` line.

    The 2025-11-25 priming event (first, an id, a ``retry`` and empty data) and a final
    ``retry``-only block (the server drops the connection) carry no message: skipped.
    """
    events = []
    for position, block in enumerate(body.split(b"\n\n")):
        if not block:
            continue
        fields: dict[str, list[str]] = {}
        for line in block.decode("utf-8").split("\n"):
            name, _, value = line.partition(": ")
            fields.setdefault(name, []).append(value)
        if fields.get("data") == [""] or set(fields) == {"retry"}:
            assert position == 0 or set(fields) == {"retry"}, block
            continue
        assert set(fields) == {"event", "id", "data"} and all(len(v) == 1 for v in fields.values()), block
        assert fields["event"] == ["message"]
        events.append({"id": fields["id"][0], "data": json.loads(fields["data"][0])})
    return events


@dataclass
class Exchange:
    """One HTTP request to the ASGI app, as the app sees it, and everything it answered."""

    app: Any
    method: str
    headers: dict[str, str]
    chunks: list[bytes]
    path: str = "/mcp"
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    complete: bool = False
    hung_up: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def start(self) -> Exchange:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": "http",
            "path": self.path,
            "raw_path": self.path.encode(),
            "query_string": b"",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        self.task = asyncio.ensure_future(self.app(scope, self._receive, self._send))
        EXCHANGES.append(self)
        return self

    async def _receive(self) -> dict[str, Any]:
        if self.chunks:
            chunk = self.chunks.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(self.chunks)}
        await self.hung_up.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        assert not self.complete, "the app sent after the response was complete"
        if message["type"] == "http.response.start":
            assert self.status is None
            self.status = message["status"]
            self.response_headers = [(k.decode().lower(), v.decode()) for k, v in message.get("headers", [])]
        else:
            assert self.status is not None
            self.body += message.get("body", b"")
            self.complete = not message.get("more_body", False)

    def header(self, name: str) -> str | None:
        values = [v for k, v in self.response_headers if k == name]
        assert len(values) <= 1, values
        return values[0] if values else None

    def json(self) -> Any:
        assert self.header("content-type") == "application/json"
        return json.loads(self.body)

    def events(self) -> list[dict[str, Any]]:
        """The complete SSE events so far (none before the response starts)."""
        if self.status is None:
            return []
        assert self.header("content-type") == "text/event-stream"
        complete = self.body[: self.body.rfind(b"\n\n") + 2] if b"\n\n" in self.body else b""
        return parse_sse(complete)

    def messages(self) -> list[dict[str, Any]]:
        return [event["data"] for event in self.events()]

    async def finished(self, timeout: float = 5.0) -> Exchange:
        assert self.task is not None
        await asyncio.wait_for(asyncio.shield(self.task), timeout)
        assert self.complete
        return self

    async def until(self, condition: Callable[[Exchange], bool], timeout: float = 5.0) -> Exchange:
        deadline = time.monotonic() + timeout
        while not condition(self):
            assert self.task is not None
            if self.task.done():
                self.task.result()
                assert condition(self), "the exchange ended first"
            if time.monotonic() > deadline:
                raise TimeoutError(f"condition not met; body so far: {self.body!r}")
            await asyncio.sleep(0.005)
        return self

    async def hang_up(self) -> None:
        self.hung_up.set()
        if self.task is not None:
            await asyncio.wait_for(asyncio.shield(self.task), 5)


EXCHANGES: list[Exchange] = []


@pytest.fixture(autouse=True)
async def _no_exchange_left_running() -> AsyncIterator[None]:
    """Hang up whatever a test left open (GET streams), and check the app then returns."""
    yield
    for exchange in EXCHANGES:
        exchange.hung_up.set()
    tasks = [e.task for e in EXCHANGES if e.task is not None]
    EXCHANGES.clear()
    if tasks:
        done, pending = await asyncio.wait(tasks, timeout=5)
        for task in pending:
            task.cancel()
        assert not pending, "the app kept serving after the client hung up"
        for task in done:
            task.result()


def exchange(
    app: Any,
    method: str = "POST",
    body: Any = None,
    *,
    session: str | None = None,
    version: str | None = None,
    headers: dict[str, str] | None = None,
    chunks: list[bytes] | None = None,
    path: str = "/mcp",
) -> Exchange:
    """Start a request with sensible default headers (``headers`` overrides; None drops)."""
    raw = body if isinstance(body, bytes) else b"" if body is None else json.dumps(body).encode()
    chunks = chunks if chunks is not None else [raw]
    base: dict[str, Any] = {"host": HOST}
    if method == "POST":
        base.update({"content-type": "application/json", "accept": ACCEPT})
        if chunks == [raw]:
            base["content-length"] = str(len(raw))
    elif method == "GET":
        base["accept"] = "text/event-stream"
    if session is not None:
        base["mcp-session-id"] = session
    if version is not None:
        base["mcp-protocol-version"] = version
    base.update(headers or {})
    final = {k: v for k, v in base.items() if v is not None}
    return Exchange(app, method, final, chunks, path).start()


async def send(app: Any, method: str = "POST", body: Any = None, **options: Any) -> Exchange:
    """A request that completes (JSON, 202, errors, or an SSE stream that ends)."""
    return await exchange(app, method, body, **options).finished()


async def initialize(
    app: Any, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None, **options: Any
) -> str:
    """Run the handshake; return the new session id."""
    reply = await send(app, body=rpc(0, "initialize", init_params(version, capabilities)), **options)
    assert reply.status == 200, reply.body
    assert reply.json()["result"]["protocolVersion"] == version
    session = reply.header("mcp-session-id")
    assert session is not None
    initialized = await send(
        app, body={"jsonrpc": "2.0", "method": "notifications/initialized"}, session=session, **options
    )
    assert initialized.status == 202
    return session


def error_of(reply: Exchange) -> dict[str, Any]:
    """The id-less JSON-RPC error of an HTTP error response."""
    message = reply.json()
    assert set(message) == {"jsonrpc", "error"}, message
    return message["error"]  # type: ignore[no-any-return]


# -- sessions ----------------------------------------------------------------------------------


async def test_initialize_mints_unique_visible_ascii_session_ids() -> None:
    app = make_app(max_sessions_per_client=300)
    ids = set()
    for index in range(300):
        reply = await send(app, body=rpc(index, "initialize", init_params()))
        session = reply.header("mcp-session-id")
        assert session is not None and re.fullmatch(r"[\x21-\x7e]{16,}", session), session
        ids.add(session)
    assert len(ids) == 300
    assert set(app.sessions) == ids


async def test_session_header_missing_unknown_or_deleted() -> None:
    app = make_app()
    session = await initialize(app)
    ping = rpc(1, "ping")
    missing = await send(app, body=ping)
    assert missing.status == 400 and error_of(missing)["code"] == -32600
    unknown = await send(app, body=ping, session="no-such-session")
    assert unknown.status == 404 and error_of(unknown)["code"] == -32600
    served = await send(app, body=ping, session=session)
    assert (served.status, served.json()) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}})
    deleted = await send(app, "DELETE", session=session)
    assert (deleted.status, deleted.body) == (200, b"")
    assert app.sessions == {}
    for method in ("POST", "GET", "DELETE"):
        after = await send(app, method, ping if method == "POST" else None, session=session)
        assert after.status == 404, method


async def test_initialize_ignores_a_session_header_and_mints_a_new_session() -> None:
    app = make_app()
    first = await initialize(app)
    reply = await send(app, body=rpc(1, "initialize", init_params()), session=first)
    assert reply.status == 200
    assert reply.header("mcp-session-id") not in (None, first)
    assert len(app.sessions) == 2


async def test_a_failed_initialize_mints_no_session() -> None:
    app = make_app()
    reply = await send(app, body=rpc(1, "initialize", {"capabilities": {}}))
    assert reply.status == 200 and reply.json()["error"]["code"] == -32602
    assert reply.header("mcp-session-id") is None
    assert app.sessions == {}


# -- GET streams -------------------------------------------------------------------------------


async def test_get_needs_accept_event_stream_and_a_second_get_is_a_conflict() -> None:
    app = make_app()
    session = await initialize(app)
    wrong = await send(app, "GET", session=session, headers={"accept": "application/json"})
    assert wrong.status == 406 and error_of(wrong)["code"] == -32600
    first = exchange(app, "GET", session=session)
    await first.until(lambda e: e.status is not None)
    assert first.status == 200 and first.header("content-type") == "text/event-stream"
    second = await send(app, "GET", session=session)
    assert second.status == 409
    await first.hang_up()


async def test_a_hung_up_get_stream_frees_the_session_for_a_new_one() -> None:
    """Regression: the app never noticed a GET client hang up, so every later GET got 409."""
    app = make_app()
    session = await initialize(app)
    first = exchange(app, "GET", session=session)
    await first.until(lambda e: e.status == 200)
    await first.hang_up()
    assert not app.sessions[session].get_connected
    second = exchange(app, "GET", session=session)
    await second.until(lambda e: e.status is not None)
    assert second.status == 200


async def test_list_changed_outside_a_request_arrives_on_the_get_stream_only() -> None:
    tools = Tools()
    app = make_app(tools)
    session = await initialize(app)
    stream = exchange(app, "GET", session=session)
    await stream.until(lambda e: e.status == 200)
    held = exchange(app, body=call(7, "hold", token="h"), session=session)
    await held.until(lambda e: len(e.events()) == 1)  # a POST stream is open meanwhile
    await app.sessions[session].server.peer.send_tool_list_changed()
    await stream.until(lambda e: len(e.events()) == 1)
    assert stream.messages() == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    tools.gate.set()
    await held.finished()
    assert [m.get("method") for m in held.messages()] == ["notifications/progress"] * 2 + [None]


async def test_get_with_a_last_event_id_of_another_session_is_not_found() -> None:
    tools = Tools()
    app = make_app(tools)
    mine, other = await initialize(app), await initialize(app)
    reply = exchange(app, body=call(1, "hold", token=1), session=other)
    await reply.until(lambda e: len(e.events()) == 1)
    await reply.hang_up()  # the connection is lost mid-call: the stream stays replayable
    last = reply.events()[0]["id"]
    assert (await send(app, "GET", session=mine, headers={"last-event-id": last})).status == 404
    assert (await send(app, "GET", session=mine, headers={"last-event-id": "garbage"})).status == 404
    tools.gate.set()
    replay = await send(app, "GET", session=other, headers={"last-event-id": last})
    assert [e["data"].get("method") for e in replay.events()] == ["notifications/progress", None]


# -- POST checks -------------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/jsonx", "multipart/form-data"])
async def test_post_needs_json_content_type(content_type: str | None) -> None:
    app = make_app()
    session = await initialize(app)
    reply = await send(app, body=rpc(1, "ping"), session=session, headers={"content-type": content_type})
    assert reply.status == 415 and error_of(reply)["code"] == -32600


async def test_post_content_type_parameters_are_fine() -> None:
    app = make_app()
    session = await initialize(app)
    headers = {"content-type": "Application/JSON; charset=utf-8"}
    reply = await send(app, body=rpc(1, "ping"), session=session, headers=headers)
    assert reply.status == 200


@pytest.mark.parametrize("accept", [None, "text/html", "application/json", "text/event-stream"])
async def test_post_needs_both_json_and_sse_in_accept(accept: str | None) -> None:
    app = make_app()
    session = await initialize(app)
    reply = await send(app, body=rpc(1, "ping"), session=session, headers={"accept": accept})
    assert reply.status == 406 and error_of(reply)["code"] == -32600


async def test_body_over_the_limit_is_413_by_content_length_and_while_streaming() -> None:
    tools = Tools()
    app = make_app(tools, max_body_bytes=1000)
    session = await initialize(app)
    big = json.dumps(call(1, "echo", {"pad": "x" * 2000})).encode()
    declared = await send(app, body=big, session=session)
    assert declared.status == 413 and error_of(declared)["code"] == -32600
    pieces = [big[i : i + 300] for i in range(0, len(big), 300)]
    streamed = await send(app, session=session, chunks=pieces)  # no Content-Length
    assert streamed.status == 413
    assert tools.calls == []
    small = json.dumps(call(2, "echo", {"pad": "x" * 100})).encode()
    fine = await send(app, session=session, chunks=[small[:50], small[50:]])
    assert fine.status == 200 and fine.json()["id"] == 2


@pytest.mark.parametrize("body", [b'{"jsonrpc":', b"", b"\xff\xfe", b"{'single': 'quotes'}"])
async def test_malformed_json_is_400_with_an_id_less_parse_error(body: bytes) -> None:
    app = make_app()
    session = await initialize(app)
    reply = await send(app, body=body, session=session)
    assert reply.status == 400
    assert error_of(reply)["code"] == -32700


@pytest.mark.parametrize("body", [b"42", b'"x"', b"true", b"null"])
async def test_json_that_is_not_an_object_is_400_invalid_request(body: bytes) -> None:
    app = make_app()
    session = await initialize(app)
    reply = await send(app, body=body, session=session)
    assert reply.status == 400
    assert error_of(reply)["code"] == -32600


async def test_a_request_of_the_wrong_shape_is_400_invalid_request() -> None:
    app = make_app()
    session = await initialize(app)
    old = await send(app, body={"jsonrpc": "1.0", "id": 5, "method": "ping"}, session=session)
    assert old.status == 400
    assert old.json()["id"] == 5 and old.json()["error"]["code"] == -32600
    null_id = await send(app, body={"jsonrpc": "2.0", "id": None, "method": "ping"}, session=session)
    assert null_id.status == 400 and error_of(null_id)["code"] == -32600
    unknown = await send(app, body=rpc(6, "no/such/method"), session=session)
    assert unknown.status == 200 and unknown.json()["error"]["code"] == -32601


async def test_notification_and_response_posts_are_202_with_an_empty_body() -> None:
    app = make_app()
    session = await initialize(app)
    bodies = [
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        {"jsonrpc": "2.0", "method": "notifications/no_such_thing", "params": {"x": 1}},
        {"jsonrpc": "2.0", "id": 99, "result": {}},  # a response nobody waits for
        {"jsonrpc": "2.0", "id": 98, "error": {"code": -1, "message": "late"}},
    ]
    for body in bodies:
        reply = await send(app, body=body, session=session)
        assert (reply.status, reply.body, reply.header("content-length")) == (202, b"", "0"), body


async def test_put_and_patch_are_405_with_allow() -> None:
    app = make_app()
    for method in ("PUT", "PATCH"):
        reply = await send(app, method)
        assert reply.status == 405
        assert reply.header("allow") == "GET, POST, DELETE"


# -- Origin and Host -----------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["http://evil.test", "null", "http://127.0.0.1.evil.test:8000"])
async def test_a_foreign_origin_is_403_and_nothing_runs(origin: str) -> None:
    tools = Tools()
    app = make_app(tools)
    session = await initialize(app)
    init = await send(app, body=rpc(1, "initialize", init_params()), headers={"origin": origin})
    assert init.status == 403 and error_of(init)["code"] == -32600
    assert init.header("mcp-session-id") is None
    tool = await send(app, body=call(2, "echo"), session=session, headers={"origin": origin})
    assert tool.status == 403
    assert tools.calls == []
    assert list(app.sessions) == [session]


async def test_a_missing_or_loopback_origin_is_allowed() -> None:
    tools = Tools()
    app = make_app(tools)
    session = await initialize(app)
    for origin in (None, "http://127.0.0.1:3000", "http://localhost", "http://[::1]:8000"):
        reply = await send(app, body=call(1, "echo"), session=session, headers={"origin": origin})
        assert reply.status == 200, origin
    assert tools.calls == ["echo"] * 4


@pytest.mark.parametrize("host", ["attacker.test", "attacker.test:8000", None, "127.0.0.1.attacker.test"])
async def test_a_foreign_host_is_403_by_default(host: str | None) -> None:
    app = make_app()
    reply = await send(app, body=rpc(1, "initialize", init_params()), headers={"host": host})
    assert reply.status == 403
    assert app.sessions == {}


async def test_configured_hosts_and_origins_replace_the_loopback_defaults() -> None:
    app = make_app(allowed_hosts=["mcp.example.com"], allowed_origins=["https://app.example.com"])
    here = {"host": "mcp.example.com"}
    session = await initialize(app, headers=here)
    ok = await send(app, body=rpc(1, "ping"), session=session, headers={**here, "origin": "https://app.example.com"})
    assert ok.status == 200
    assert (await send(app, body=rpc(2, "ping"), session=session, headers=here)).status == 200
    for headers in (
        {"host": HOST},  # loopback is no longer allowed
        {**here, "origin": "http://localhost:3000"},
        {**here, "origin": "https://app.example.com.evil.test"},
    ):
        assert (await send(app, body=rpc(3, "ping"), session=session, headers=headers)).status == 403


# -- MCP-Protocol-Version ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "status"),
    [
        (None, 200),
        ("2025-06-18", 200),
        ("2025-06-18x", 400),
        ("2099-01-01", 400),
        ("", 400),
        ("2025-03-26", 400),  # supported, but not what this session negotiated
        ("2025-11-25", 400),
    ],
)
async def test_protocol_version_header(header: str | None, status: int) -> None:
    app = make_app()
    session = await initialize(app, "2025-06-18")
    headers = {"mcp-protocol-version": header}
    reply = await send(app, body=rpc(1, "ping"), session=session, headers=headers)
    assert reply.status == status
    if status == 400:
        assert error_of(reply)["code"] == -32600
    stream = exchange(app, "GET", session=session, headers=headers)
    await stream.until(lambda e: e.status is not None)
    assert stream.status == status
    await stream.hang_up()


# -- JSON or SSE ---------------------------------------------------------------------------------


async def test_a_plain_request_is_answered_with_json() -> None:
    app = make_app()
    session = await initialize(app)
    reply = await send(app, body=call("a", "echo", {"b": 1}), session=session)
    assert reply.status == 200
    assert reply.json() == {
        "jsonrpc": "2.0",
        "id": "a",
        "result": {"content": [{"type": "text", "text": '{"b": 1}'}]},
    }


async def test_a_request_with_progress_is_streamed_progress_first_then_the_response() -> None:
    app = make_app()
    session = await initialize(app)
    reply = await send(app, body=call(3, "progress", token="tok"), session=session)
    assert reply.status == 200
    assert reply.header("content-type") == "text/event-stream"
    assert reply.header("cache-control") == "no-cache"
    events = reply.events()
    assert [e["data"] for e in events] == [
        *(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "tok", "progress": step, "total": 3, "message": f"step {step}"},
            }
            for step in (1, 2, 3)
        ),
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "progressed"}]}},
    ]
    assert len({e["id"] for e in events}) == 4
    # Without a token the same tool sends no progress, and the answer is plain JSON.
    plain = await send(app, body=call(4, "progress"), session=session)
    assert plain.header("content-type") == "application/json"


async def test_a_long_stream_delivers_every_event_beyond_the_replay_window(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: past MAX_EVENTS_PER_STREAM events were dropped, the response included."""
    monkeypatch.setattr(http_streams, "MAX_EVENTS_PER_STREAM", 3)
    app = make_app()
    session = await initialize(app)
    progress_call = call(1, "progress", {"steps": 8, "pause": 0.005}, token="t")
    reply = await send(app, body=progress_call, session=session)
    progress = [m["params"]["progress"] for m in reply.messages() if m.get("method")]
    assert progress == [1, 2, 3, 4, 5, 6, 7, 8]
    assert reply.messages()[-1]["result"]["content"][0]["text"] == "progressed"
    # The standalone stream, too, keeps delivering after the window is full.
    stream = exchange(app, "GET", session=session)
    await stream.until(lambda e: e.status == 200)
    for _ in range(5):
        await app.sessions[session].server.peer.send_tool_list_changed()
        await asyncio.sleep(0.005)  # a live reader keeps up
    await stream.until(lambda e: len(e.events()) == 5)


async def test_sampling_goes_out_on_the_post_stream_and_the_answer_completes_the_call() -> None:
    app = make_app()
    session = await initialize(app, capabilities={"sampling": {}})
    pending = exchange(app, body=call(10, "sample", {"prompt": "hi"}), session=session)
    await pending.until(lambda e: len(e.events()) == 1)
    assert pending.header("content-type") == "text/event-stream"
    request = pending.messages()[0]
    assert request["method"] == "sampling/createMessage"
    assert request["params"] == {
        "maxTokens": 10,
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
    }
    answer = {
        "jsonrpc": "2.0",
        "id": request["id"],
        "result": {"role": "assistant", "content": {"type": "text", "text": SAMPLED}, "model": "m"},
    }
    posted = await send(app, body=answer, session=session)
    assert (posted.status, posted.body) == (202, b"")
    await pending.finished()
    assert pending.messages()[1] == {
        "jsonrpc": "2.0",
        "id": 10,
        "result": {"content": [{"type": "text", "text": f"m: {SAMPLED}"}]},
    }


async def test_notifications_cancelled_stops_the_handler_and_no_response_is_sent() -> None:
    tools = Tools()
    app = make_app(tools)
    session = await initialize(app)
    pending = exchange(app, body=call(21, "slow"), session=session)
    await wait_for_flag(tools.started)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 21}}
    posted = await send(app, body=cancel, session=session)
    assert posted.status == 202
    await pending.finished()
    assert tools.cancelled == [21]
    # A request is never answered 202: an SSE stream that ends without a response.
    assert pending.status == 200
    assert pending.events() == []
    assert (await send(app, body=rpc(22, "ping"), session=session)).status == 200


async def test_deleting_a_session_cancels_its_running_handlers() -> None:
    tools = Tools()
    app = make_app(tools)
    session = await initialize(app)
    pending = exchange(app, body=call(5, "slow"), session=session)
    await wait_for_flag(tools.started)
    assert (await send(app, "DELETE", session=session)).status == 200
    await pending.finished()
    assert tools.cancelled == [5]
    assert pending.events() == []


# -- batches -------------------------------------------------------------------------------------


async def test_batches_are_rejected_after_2025_03_26() -> None:
    app = make_app()
    for version in ("2025-06-18", "2025-11-25"):
        session = await initialize(app, version)
        reply = await send(app, body=[rpc(1, "ping"), rpc(2, "ping")], session=session)
        assert reply.status == 400 and error_of(reply)["code"] == -32600, version


async def test_batches_at_2025_03_26_get_an_array_reply() -> None:
    tools = Tools()
    app = make_app(tools)
    session = await initialize(app, "2025-03-26")
    batch = [
        rpc(1, "ping"),
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
        call(2, "echo", {"x": 1}),
        rpc(3, "no/such/method"),
    ]
    reply = await send(app, body=batch, session=session)
    assert reply.status == 200
    replies = sorted(reply.json(), key=lambda m: m["id"])
    assert replies == [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": '{"x": 1}'}]}},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "Method not found: no/such/method"}},
    ]
    notifications = [{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}]
    only = await send(app, body=notifications, session=session)
    assert (only.status, only.body) == (202, b"")
    empty = await send(app, body=[], session=session)
    assert empty.status == 400 and error_of(empty)["code"] == -32600


async def test_a_batch_whose_handler_reports_progress_is_streamed() -> None:
    """Regression: progress of a batch element was glued to the array reply (invalid JSON)."""
    app = make_app()
    session = await initialize(app, "2025-03-26")
    batch = [call(1, "progress", {"steps": 2}, token="b"), rpc(2, "ping")]
    reply = await send(app, body=batch, session=session)
    assert reply.header("content-type") == "text/event-stream"
    messages = reply.messages()
    assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2]
    assert sorted(m["id"] for m in messages[-1]) == [1, 2]


async def test_a_batch_can_wait_for_the_client_to_answer_sampling() -> None:
    """Regression: the batch reply waited for all elements before sending anything, so a
    sampling request of an element never reached the client (deadlock)."""
    app = make_app()
    session = await initialize(app, "2025-03-26", capabilities={"sampling": {}})
    pending = exchange(app, body=[call(1, "sample", {"prompt": "p"})], session=session)
    await pending.until(lambda e: len(e.events()) == 1)
    request = pending.messages()[0]
    assert request["method"] == "sampling/createMessage"
    result = {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}
    await send(app, body={"jsonrpc": "2.0", "id": request["id"], "result": result}, session=session)
    await pending.finished()
    assert pending.messages()[1] == [
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "m: ok"}]}}
    ]


# -- session lifetime and limits -------------------------------------------------------------------


async def test_idle_sessions_expire() -> None:
    """(The session caps are tested in tests/test_hardening_http_server.py.)"""
    app = make_app(session_idle_timeout=0.3)
    first, second = await initialize(app), await initialize(app)
    assert (await send(app, body=rpc(1, "ping"), session=first)).status == 200
    await asyncio.sleep(0.4)
    assert (await send(app, body=rpc(2, "ping"), session=first)).status == 404
    third = await initialize(app)  # the idle second session made room too
    assert set(app.sessions) == {third}
    assert (await send(app, body=rpc(3, "ping"), session=second)).status == 404


async def test_a_session_in_use_does_not_expire() -> None:
    """Regression: a session was reaped while a long call or its GET stream was open."""
    tools = Tools()
    app = make_app(tools, session_idle_timeout=0.2)
    session = await initialize(app)
    pending = exchange(app, body=call(1, "slow", {"seconds": 0.6}), session=session)
    stream = exchange(app, "GET", session=session)
    await stream.until(lambda e: e.status == 200)
    await asyncio.sleep(0.4)
    await initialize(app)  # sweeps idle sessions
    assert session in app.sessions
    await pending.finished()
    assert pending.json()["result"]["content"][0]["text"] == "slept"
    assert (await send(app, body=rpc(2, "ping"), session=session)).status == 200
    await stream.hang_up()


# -- authorization -------------------------------------------------------------------------------

PRM = {
    "resource": "http://127.0.0.1:8000/mcp",
    "authorization_servers": ["https://auth.example.com"],
    "scopes_supported": ["mcp"],
}
CHALLENGE = 'Bearer resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"'


def auth_app(tools: Tools | None = None) -> HttpApp:
    async def verify(token: str) -> str | None:
        return {"alice-token": "alice", "bob-token": "bob"}.get(token)

    return make_app(tools, auth=BearerAuth(verify, PRM))


async def test_no_token_is_401_with_a_challenge_naming_the_metadata() -> None:
    tools = Tools()
    app = auth_app(tools)
    for headers in ({}, {"authorization": "Basic YTpi"}, {"authorization": "Bearer "}):
        reply = await send(app, body=rpc(1, "initialize", init_params()), headers=headers)
        assert reply.status == 401, headers
        assert reply.header("www-authenticate") == CHALLENGE
        assert error_of(reply)["code"] == -32600
    assert app.sessions == {} and tools.calls == []


async def test_a_wrong_token_is_401_invalid_token() -> None:
    app = auth_app()
    reply = await send(app, body=rpc(1, "initialize", init_params()), headers={"authorization": "Bearer nope"})
    assert reply.status == 401
    assert reply.header("www-authenticate") == CHALLENGE + ', error="invalid_token"'
    assert app.sessions == {}


async def test_a_good_token_passes_and_the_session_is_bound_to_it() -> None:
    tools = Tools()
    app = auth_app(tools)
    alice = {"authorization": "Bearer alice-token"}
    session = await initialize(app, headers=alice)
    assert (await send(app, body=call(1, "echo"), session=session, headers=alice)).status == 200
    assert (await send(app, body=call(2, "echo"), session=session)).status == 401
    # Regression: another user's valid token could drive alice's session.
    bob = {"authorization": "Bearer bob-token"}
    stolen = await send(app, body=call(3, "echo"), session=session, headers=bob)
    assert stolen.status == 404
    assert (await send(app, "GET", session=session, headers=bob)).status == 404
    assert (await send(app, "DELETE", session=session, headers=bob)).status == 404
    assert tools.calls == ["echo"]
    assert session in app.sessions


async def test_the_origin_check_comes_before_authentication() -> None:
    app = auth_app()
    reply = await send(app, body=rpc(1, "ping"), headers={"origin": "http://evil.test"})
    assert reply.status == 403 and reply.header("www-authenticate") is None


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"])
async def test_protected_resource_metadata_is_served_at_both_well_known_paths(path: str) -> None:
    app = auth_app()
    reply = await send(app, "GET", path=path, headers={"accept": "application/json"})
    assert reply.status == 200
    assert reply.json() == PRM
    without_auth = await send(make_app(), "GET", path=path)
    assert without_auth.status == 404


# -- through uvicorn ---------------------------------------------------------------------------------


class ServerThread:
    """An ASGI app under uvicorn on 127.0.0.1 (a free port), in a thread of its own.

    Records each request's method, headers and body, each response's status and content
    type, and whether the client hung up before the response was complete (``log``);
    ``call`` runs a coroutine on the server's loop.
    """

    def __init__(self, app: Any, **uvicorn_options: Any) -> None:
        self.app = app
        self.uvicorn_options = uvicorn_options  # e.g. ssl_certfile=, ssl_keyfile= (https)
        self.log: list[dict[str, Any]] = []
        self.loop: asyncio.AbstractEventLoop | None = None

    async def _asgi(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            self.loop = asyncio.get_running_loop()
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        entry: dict[str, Any] = {
            "method": scope["method"],
            "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
            "body": b"",
            "complete": False,
            "hung_up": False,
        }
        self.log.append(entry)

        async def recording_receive() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                entry["body"] += message.get("body", b"")
            elif not entry["complete"]:
                entry["hung_up"] = True
            return message

        async def recording_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
                entry["content-type"] = dict(message.get("headers", [])).get(b"content-type", b"").decode()
            elif not message.get("more_body", False):
                entry["complete"] = True
            await send(message)

        await self.app(scope, recording_receive, recording_send)

    def __enter__(self) -> ServerThread:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        scheme = "https" if "ssl_certfile" in self.uvicorn_options else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/mcp"
        config = uvicorn.Config(
            self._asgi,
            interface="asgi3",
            lifespan="on",
            log_level="critical",
            timeout_graceful_shutdown=2,
            **self.uvicorn_options,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        app = self.app
        while not isinstance(app, HttpApp) and hasattr(app, "app"):  # under a test middleware
            app = app.app
        if self.loop is not None and isinstance(app, HttpApp):

            async def end_all() -> None:  # open GET streams would hold up uvicorn's shutdown
                for session in list(app.sessions.values()):
                    app._end(session)

            asyncio.run_coroutine_threadsafe(end_all(), self.loop).result(5)
        self.server.should_exit = True
        self.thread.join(10)
        assert not self.thread.is_alive(), "uvicorn did not stop"

    async def call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coroutine`` on the server's loop and wait for it from the test's loop."""
        assert self.loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coroutine, self.loop))

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [e for e in self.log if method is None or e["method"] == method]

    def posted(self, rpc_method: str) -> list[dict[str, Any]]:
        """The POSTs whose body is one message of ``rpc_method``."""
        found = []
        for entry in self.requests("POST"):
            try:
                message = json.loads(entry["body"])
            except ValueError:
                continue
            if isinstance(message, dict) and message.get("method") == rpc_method:
                found.append(entry)
        return found


@dataclass
class RawResponse:
    """A response read off a raw socket: status, headers, then the body or SSE events."""

    status: int
    headers: dict[str, str]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    buffer: bytes = b""
    ended: bool = False

    async def _chunk(self) -> bytes:
        size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
        data = await self.reader.readexactly(size + 2)
        if size == 0:
            self.ended = True
        return data[:-2]

    async def body(self) -> bytes:
        if "content-length" in self.headers:
            return await self.reader.readexactly(int(self.headers["content-length"]))
        parts = [self.buffer]
        while not self.ended:
            parts.append(await self._chunk())
        return b"".join(parts)

    async def _fill(self) -> bool:
        while b"\n\n" not in self.buffer:
            if self.ended:
                return False
            self.buffer += await self._chunk()
        return True

    async def event(self, timeout: float = 5.0) -> dict[str, Any] | None:
        """The next SSE event carrying a message, or None when the stream ends."""
        while await asyncio.wait_for(self._fill(), timeout):
            block, _, self.buffer = self.buffer.partition(b"\n\n")
            parsed = parse_sse(block + b"\n\n")
            if parsed:  # else a priming event or a retry field
                return parsed[0]
        return None

    async def rest(self) -> list[dict[str, Any]]:
        events = []
        while (event := await self.event()) is not None:
            events.append(event)
        return events

    def close(self) -> None:
        self.writer.close()


async def raw(
    port: int,
    method: str,
    headers: dict[str, str],
    body: bytes = b"",
    chunks: list[bytes] | None = None,
) -> RawResponse:
    """One HTTP/1.1 request on a new connection; ``chunks`` sends a chunked body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if chunks is not None:
        lines.append("Transfer-Encoding: chunked")
        payload = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"
    else:
        lines.append(f"Content-Length: {len(body)}")
        payload = body
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + payload)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        if ":" in line:
            name, value = line.split(":", 1)
            parsed[name.strip().lower()] = value.strip()
    return RawResponse(int(status_line.split()[1]), parsed, reader, writer)


def post_headers(session: str | None = None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    if session:
        headers["Mcp-Session-Id"] = session
    return headers


async def raw_initialize(port: int) -> str:
    reply = await raw(port, "POST", post_headers(), json.dumps(rpc(0, "initialize", init_params())).encode())
    assert reply.status == 200
    await reply.body()
    reply.close()
    return reply.headers["mcp-session-id"]


async def test_uvicorn_streams_events_as_they_happen_and_resumes_a_dropped_stream() -> None:
    """Legacy rules: a hang-up is not a cancellation; GET + Last-Event-ID replays the rest."""
    tools = Tools()
    with ServerThread(make_app(tools)) as server:
        session = await raw_initialize(server.port)
        body = json.dumps(call(1, "hold", token="r")).encode()
        reply = await raw(server.port, "POST", post_headers(session), body)
        assert (reply.status, reply.headers["content-type"]) == (200, "text/event-stream")
        first = await reply.event()  # arrives while the handler is still waiting at the gate
        assert first is not None and first["data"]["params"]["progress"] == 1
        assert not tools.gate.is_set()
        reply.close()  # the connection drops mid-call
        await asyncio.sleep(0.1)
        tools.gate.set()
        await server.call(asyncio.sleep(0.1))
        resumed = await raw(
            server.port,
            "GET",
            {"Accept": "text/event-stream", "Mcp-Session-Id": session, "Last-Event-ID": first["id"]},
        )
        assert resumed.status == 200
        rest = await resumed.rest()  # ends once the response is out
        resumed.close()
    assert [e["data"] for e in rest] == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "r", "progress": 2, "total": 2, "message": "after the gate"},
        },
        {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "held"}]}},
    ]
    assert tools.finished == ["hold"] and tools.cancelled == []


async def test_uvicorn_get_stream_can_reconnect_after_a_drop() -> None:
    """Regression: uvicorn drops writes to a closed socket silently, so the app kept the
    dead GET stream and answered 409 to the client's reconnection, forever."""
    app = make_app()
    with ServerThread(app) as server:
        session = await raw_initialize(server.port)
        get = {"Accept": "text/event-stream", "Mcp-Session-Id": session}
        first = await raw(server.port, "GET", get)
        assert first.status == 200
        first.close()
        await asyncio.sleep(0.2)
        second = await raw(server.port, "GET", get)
        assert second.status == 200
        await server.call(app.sessions[session].server.peer.send_tool_list_changed())
        event = await second.event()
        assert event is not None and event["data"]["method"] == "notifications/tools/list_changed"
        second.close()


async def test_uvicorn_chunked_upload_over_the_limit_is_413() -> None:
    tools = Tools()
    with ServerThread(make_app(tools, max_body_bytes=2000)) as server:
        session = await raw_initialize(server.port)
        big = json.dumps(call(1, "echo", {"pad": "y" * 5000})).encode()
        reply = await raw(server.port, "POST", post_headers(session), chunks=[big[:1500], big[1500:]])
        assert reply.status == 413
        assert json.loads(await reply.body())["error"]["code"] == -32600
        reply.close()
        small = json.dumps(call(2, "echo")).encode()
        fine = await raw(server.port, "POST", post_headers(session), chunks=[small[:10], small[10:]])
        assert fine.status == 200 and json.loads(await fine.body())["id"] == 2
        fine.close()
    assert tools.calls == ["echo"]



async def _run_lifespan(app: HttpApp) -> None:
    """Start and stop ``app`` as an ASGI server does (lifespan start-up, then shutdown)."""
    events = iter([{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}])
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return next(events)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    await asyncio.wait_for(app({"type": "lifespan"}, receive, send), 10)
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_start_up_objects_are_frozen_out_of_the_cyclic_collector_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An app's lifespan start-up freezes what the process holds (full collections then skip
    it), once per process; ``freeze_gc=False`` leaves the collector alone."""
    import gc

    from typedmcp.transports import asgi

    monkeypatch.setattr(asgi, "_startup_frozen", False)
    gc.unfreeze()
    try:
        await _run_lifespan(http_app(Tools(), freeze_gc=False))
        assert gc.get_freeze_count() == 0
        await _run_lifespan(http_app(Tools()))
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # modules, classes, validators: what a server holds at start
        kept = [[] for _ in range(1000)]  # new objects, then a second app: not frozen
        await _run_lifespan(http_app(Tools()))
        assert gc.get_freeze_count() <= frozen and kept  # (frozen objects may be freed)
    finally:
        gc.unfreeze()
