"""The deprecated HTTP+SSE transport of 2024-11-05: our server (``http_app(legacy_sse=True)``,
``runtime.http_sse``), our client (``connect_sse``, ``runtime.sse_client``) and the fallback
of ``connect_http`` to it (rule HC-10), against each other and against the official SDK
(mcp 2.3.0): its ``sse_client`` against our app, and our client against its
``SseServerTransport`` (``tests/peers/sdk_sse_server.py``, a subprocess).

Our server runs under uvicorn in a thread (``ServerThread`` of ``test_http_server``); the
raw tests talk HTTP/1.1 over a socket and read the SSE stream event by event.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from conftest import read_port, stop_process
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.sse import sse_client
from test_http_client import Handlers, eventually, texts, token
from test_http_server import (
    PRM,
    SERVER_INFO,
    RawResponse,
    ServerThread,
    Tools,
    call,
    init_params,
    make_app,
    rpc,
    wait_for_flag,
)

import mcp_generated.v2024_11_05
import mcp_generated.v2025_11_25
import mcp_generated.v2026_07_28
from typedmcp.auth.bearer import BearerAuth
from typedmcp.connecting import SseFallbackDisabled, connect_http, connect_sse, falls_back_to_sse
from typedmcp.protocol.client import ClientSession as OurSession
from typedmcp.protocol.errors import HttpError
from typedmcp.protocol.packages import VersionError
from typedmcp.serving import http_app
from typedmcp.transports.asgi import respond
from typedmcp.transports.http_server import HttpApp
from typedmcp.transports.http_sse_server import SsePaths
from typedmcp.transports.sse_client import SseHandshakeError

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

REPO = Path(__file__).resolve().parent.parent
SDK_SSE_PEER = REPO / "tests" / "peers" / "sdk_sse_server.py"
TOOL_NAMES = ["echo", "progress", "sample", "slow", "hold", "stubborn"]
MODERN_ERROR = json.dumps(
    {
        "jsonrpc": "2.0",
        "error": {
            "code": -32022,
            "message": "Unsupported protocol version",
            "data": {"supported": ["2026-07-28"], "requested": "2025-11-25"},
        },
    }
).encode()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- servers -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sdk_peer() -> Iterator[str]:
    """The SDK's HTTP+SSE server; its stream URL."""
    process = subprocess.Popen(
        [sys.executable, str(SDK_SSE_PEER)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield f"http://127.0.0.1:{read_port(process)}/sse"
    finally:
        stop_process(process, strict=True)
        assert process.stdout is not None
        process.stdout.close()


def legacy_app(tools: Tools | None = None, **options: Any) -> HttpApp:
    return make_app(tools, legacy_sse=True, **options)


def endpoint_of(app: Any) -> Any:
    """The SSE endpoint of ``app`` (through a test wrapper's ``app`` attribute)."""
    while not isinstance(app, HttpApp):
        app = app.app
    return app.legacy_sse


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[ServerThread]:
    """``app`` under uvicorn; open SSE streams are ended before uvicorn stops."""
    with ServerThread(app) as server:
        try:
            yield server
        finally:

            async def end_streams() -> None:
                endpoint_of(app).close()

            await server.call(end_streams())


class Refusing:
    """Answers every POST to ``/mcp`` with ``status`` (and ``body``); a GET of ``/mcp`` is
    the HTTP+SSE stream of ``app``. Records ``(method, path)`` of every request."""

    def __init__(self, app: HttpApp, status: int, body: bytes = b"Refused") -> None:
        self.app = app
        self.status = status
        self.body = body
        self.seen: list[tuple[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append((scope["method"], scope["path"]))
            if scope["path"] == "/mcp" and scope["method"] == "POST":
                kind = "application/json" if self.body.startswith(b"{") else "text/plain"
                await respond(send, self.status, self.body, kind)
                return
            if scope["path"] == "/mcp":
                scope = {**scope, "path": "/sse"}
        await self.app(scope, receive, send)

    def methods(self) -> list[str]:
        return [method for method, _ in self.seen]


# -- raw HTTP ----------------------------------------------------------------------------------


async def request(
    port: int, method: str, target: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> RawResponse:
    """One HTTP/1.1 request on a new connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [f"{method} {target} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    lines.append(f"Content-Length: {len(body)}")
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parsed = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        parsed[name.strip().lower()] = value.strip()
    return RawResponse(int(status_line.split()[1]), parsed, reader, writer)


async def event(stream: RawResponse, timeout: float = 5.0) -> tuple[str, str]:
    """The next SSE event, strictly ``event: <type>`` then one ``data`` line."""
    assert await asyncio.wait_for(stream._fill(), timeout), "the stream ended"
    block, _, stream.buffer = stream.buffer.partition(b"\n\n")
    lines = block.decode().split("\n")
    assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), block
    return lines[0][len("event: ") :], lines[1][len("data: ") :]


async def message(stream: RawResponse) -> dict[str, Any]:
    kind, data = await event(stream)
    assert kind == "message"
    return json.loads(data)  # type: ignore[no-any-return]


async def post(port: int, target: str, body: Any, **headers: str) -> tuple[int, bytes]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = await request(port, "POST", target, {"Content-Type": "application/json", **headers}, data)
    content = await reply.body()
    reply.close()
    return reply.status, content


async def open_stream(port: int, **headers: str) -> tuple[RawResponse, str]:
    """GET the SSE stream; returns it and the POST URI of its endpoint event."""
    stream = await request(port, "GET", "/sse", {"Accept": "text/event-stream", **headers})
    assert (stream.status, stream.headers["content-type"]) == (200, "text/event-stream")
    kind, uri = await event(stream)
    assert kind == "endpoint"
    return stream, uri


async def initialized(port: int, version: str = "2024-11-05") -> tuple[RawResponse, str]:
    """An SSE stream whose session has run the handshake."""
    stream, uri = await open_stream(port)
    assert await post(port, uri, rpc(0, "initialize", init_params(version))) == (202, b"")
    assert (await message(stream))["result"]["protocolVersion"] == "2024-11-05"
    assert await post(port, uri, {"jsonrpc": "2.0", "method": "notifications/initialized"}) == (202, b"")
    return stream, uri


# == server rules (SSE-1 ... SSE-6) ==============================================================


async def test_the_first_event_names_the_post_uri_and_replies_come_as_message_events() -> None:
    app = legacy_app()
    async with serving(app) as server:
        stream, uri = await open_stream(server.port)
        assert uri.startswith("/messages/?session_id=")
        status, body = await post(server.port, uri, rpc(0, "initialize", init_params("2024-11-05")))
        assert (status, body) == (202, b"")
        reply = await message(stream)
        assert reply == {
            "jsonrpc": "2.0",
            "id": 0,
            "result": {
                "protocolVersion": "2024-11-05",
                "capabilities": {"tools": {"listChanged": True}, "logging": {}},
                "serverInfo": SERVER_INFO,
            },
        }
        await post(server.port, uri, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert await post(server.port, uri, call(1, "progress", {"steps": 2}, token="p")) == (202, b"")
        progress = [await message(stream), await message(stream)]
        assert [p["params"]["progress"] for p in progress] == [1, 2]
        assert (await message(stream))["result"]["content"][0]["text"] == "progressed"
        stream.close()


async def test_a_newer_version_asked_over_sse_is_answered_with_2024_11_05() -> None:
    async with serving(legacy_app()) as server:
        stream, _ = await initialized(server.port, version="2025-11-25")
        stream.close()


async def test_a_stale_key_is_404_and_a_missing_key_400() -> None:
    app = legacy_app()
    async with serving(app) as server:
        stream, uri = await initialized(server.port)
        stream.close()
        await eventually(lambda: not app.legacy_sse.connections)  # type: ignore[union-attr]
        status, body = await post(server.port, uri, rpc(1, "ping"))
        assert status == 404
        assert json.loads(body)["error"]["message"].startswith("Not Found: unknown or closed SSE connection")
        status, _ = await post(server.port, "/messages/?session_id=" + "0" * 32, rpc(1, "ping"))
        assert status == 404
        status, body = await post(server.port, "/messages/", rpc(1, "ping"))
        assert status == 400
        assert "missing session_id" in json.loads(body)["error"]["message"]


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        (b"{not json", -32700, "Parse error"),
        (b"[]", -32600, "batches are not allowed"),  # 2024-11-05 has no batches
        (b"42", -32600, "not a JSON-RPC message"),
    ],
)
async def test_a_body_that_is_not_one_message_is_400(body: bytes, code: int, words: str) -> None:
    async with serving(legacy_app()) as server:
        stream, uri = await initialized(server.port)
        status, content = await post(server.port, uri, body)
        stream.close()
    error = json.loads(content)["error"]
    assert status == 400 and error["code"] == code and words in error["message"]


async def test_a_foreign_origin_is_403_on_both_endpoints_and_creates_no_session() -> None:
    app = legacy_app()
    async with serving(app) as server:
        refused = await request(
            server.port, "GET", "/sse", {"Accept": "text/event-stream", "Origin": "http://evil.example"}
        )
        assert refused.status == 403
        assert "origin" in json.loads(await refused.body())["error"]["message"]
        refused.close()
        assert app.legacy_sse.connections == {}  # type: ignore[union-attr]
        stream, uri = await initialized(server.port)
        status, _ = await post(server.port, uri, rpc(1, "ping"), Origin="http://evil.example")
        assert status == 403
        status, _ = await post(server.port, uri, rpc(2, "ping"), Origin="http://localhost:3000")
        assert status == 202
        assert (await message(stream))["id"] == 2
        stream.close()


async def test_with_auth_on_both_endpoints_need_the_token_that_opened_the_stream() -> None:
    async def verify(token: str) -> str | None:
        return {"alice-token": "alice", "bob-token": "bob"}.get(token)

    app = legacy_app(auth=BearerAuth(verify, PRM))
    async with serving(app) as server:
        refused = await request(server.port, "GET", "/sse", {"Accept": "text/event-stream"})
        assert refused.status == 401 and "resource_metadata" in refused.headers["www-authenticate"]
        refused.close()
        stream, uri = await open_stream(server.port, Authorization="Bearer alice-token")
        assert (await post(server.port, uri, rpc(0, "ping")))[0] == 401
        assert (await post(server.port, uri, rpc(0, "ping"), Authorization="Bearer bob-token"))[0] == 404
        assert await post(server.port, uri, rpc(0, "ping"), Authorization="Bearer alice-token") == (202, b"")
        assert await message(stream) == {"jsonrpc": "2.0", "id": 0, "result": {}}
        stream.close()


async def test_wrong_methods_are_405() -> None:
    async with serving(legacy_app()) as server:
        assert (await post(server.port, "/sse", rpc(1, "ping")))[0] == 405
        reply = await request(server.port, "GET", "/messages/?session_id=x")
        assert (reply.status, reply.headers["allow"]) == (405, "POST")
        reply.close()


async def test_the_stream_ending_ends_the_session_and_cancels_its_handlers() -> None:
    tools = Tools()
    app = legacy_app(tools)
    async with serving(app) as server:
        stream, uri = await initialized(server.port)
        assert await post(server.port, uri, call(7, "slow", {"seconds": 30})) == (202, b"")
        await wait_for_flag(tools.started)
        stream.close()
        await eventually(lambda: tools.cancelled == [7])
        assert app.legacy_sse.connections == {}  # type: ignore[union-attr]


async def test_the_mcp_endpoint_still_works_beside_the_old_ones() -> None:
    async with (
        serving(legacy_app()) as server,
        connect_http(server.url, protocol=mcp_generated.v2025_11_25) as client,
    ):
        assert client.session.transport_kind == "streamable-http"
        assert texts(await client.call_tool(name="echo", arguments={"a": 1})) == ['{"a": 1}']


def test_paths_can_be_moved_but_not_onto_the_mcp_endpoint() -> None:
    app = make_app(legacy_sse=SsePaths(stream="/old/sse", messages="/old/messages"))
    assert app.legacy_sse is not None and app.legacy_sse.serves("/old/sse")
    with pytest.raises(ValueError, match="must differ"):
        make_app(legacy_sse=SsePaths(stream="/mcp"))


def test_legacy_sse_needs_the_2024_11_05_package() -> None:
    with pytest.raises(ValueError, match="2024-11-05"):
        http_app(Tools(), packages=[mcp_generated.v2025_11_25], legacy_sse=True)


# == the official SDK's SSE client against our app ==============================================


async def test_sdk_sse_client_initializes_at_2024_11_05_calls_tools_and_gets_notifications() -> None:
    progress: list[tuple[float, float | None, str | None]] = []
    sampled: list[Any] = []

    async def on_progress(value: float, total: float | None, text: str | None) -> None:
        progress.append((value, total, text))

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="hi"), model="sdk-model"
        )

    app = legacy_app()
    async with serving(app) as server:
        base = f"http://127.0.0.1:{server.port}"
        async with (
            sse_client(base + "/sse") as (read, write),
            ClientSession(read, write, sampling_callback=sample) as session,
        ):
            result = await session.initialize()
            assert result.protocol_version == "2024-11-05"
            assert result.server_info.name == SERVER_INFO["name"]
            listed = await session.list_tools()
            assert [tool.name for tool in listed.tools] == TOOL_NAMES
            echoed = await session.call_tool("echo", {"city": "Oslo"})
            assert echoed.content[0].text == '{"city": "Oslo"}'  # type: ignore[union-attr]
            streamed = await session.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
            assert streamed.content[0].text == "progressed"  # type: ignore[union-attr]
            asked = await session.call_tool("sample", {"prompt": "over SSE"})
            assert asked.content[0].text == "sdk-model: hi"  # type: ignore[union-attr]
        assert [p[0] for p in progress] == [1, 2, 3]
        assert len(sampled) == 1
        # the Streamable HTTP endpoint of the same app still answers
        async with connect_http(base + "/mcp", protocol=mcp_generated.v2025_11_25) as client:
            assert client.session.protocol_version == "2025-11-25"
            assert texts(await client.call_tool(name="echo")) == ["{}"]


# == our client ==================================================================================


async def test_connect_sse_against_our_server_with_server_requests_and_progress() -> None:
    handlers = Handlers()
    async with serving(legacy_app()) as server:
        url = f"http://127.0.0.1:{server.port}/sse"
        async with connect_sse(url, handlers=handlers) as client:
            session = client.session
            assert (session.transport_kind, session.era, session.protocol_version) == (
                "sse",
                "handshake",
                "2024-11-05",
            )
            assert [t.name for t in (await client.list_tools()).tools] == TOOL_NAMES
            assert texts(await client.call_tool(name="progress", arguments={"steps": 2}, meta=token("s"))) == [
                "progressed"
            ]
            assert texts(await client.call_tool(name="sample", arguments={"prompt": "p"})) == [
                "client-model: sampled by the client"
            ]
        await eventually(lambda: handlers.steps("s") == [1, 2])


async def test_connect_sse_against_the_sdk_server(sdk_peer: str) -> None:
    async with connect_sse(sdk_peer) as client:
        assert (client.session.transport_kind, client.session.protocol_version) == ("sse", "2025-11-25")
        listed = await client.list_tools()
        assert [t.name for t in listed.tools][:3] == ["text", "image", "audio"]
        assert texts(await client.call_tool(name="text")) == ["Hello from the SDK server"]
        failed = await client.call_tool(name="fail")
        assert failed.is_error is True
    async with connect_sse(sdk_peer, protocol=mcp_generated.v2024_11_05) as client:
        assert client.session.protocol_version == "2024-11-05"
        assert texts(await client.call_tool(name="text")) == ["Hello from the SDK server"]


async def test_connect_http_falls_back_to_the_sdk_sse_server(sdk_peer: str) -> None:
    async with connect_http(sdk_peer) as client:
        session = client.session
        assert (session.transport_kind, session.era, session.protocol_version) == (
            "sse",
            "handshake",
            "2025-11-25",
        )
        assert session.negotiation == "auto"
        assert texts(await client.call_tool(name="progress")) == ["progressed"]


async def test_connect_http_falls_back_to_our_sse_endpoint() -> None:
    async with serving(legacy_app()) as server:
        url = f"http://127.0.0.1:{server.port}/sse"  # POST /sse is 405 (Allow: GET)
        async with connect_http(url) as client:
            assert (client.session.transport_kind, client.session.protocol_version) == ("sse", "2024-11-05")
            assert texts(await client.call_tool(name="echo")) == ["{}"]


# -- fallback rules (HC-10) ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 404, 405])
async def test_400_404_405_without_a_modern_body_try_http_sse(status: int) -> None:
    app = Refusing(legacy_app(), status)
    async with serving(app) as server, connect_http(server.url) as client:
        assert client.session.transport_kind == "sse"
        assert texts(await client.call_tool(name="echo")) == ["{}"]
    # discover, then initialize, then the SSE stream and its POSTs
    assert app.seen[:3] == [("POST", "/mcp"), ("POST", "/mcp"), ("GET", "/mcp")]
    assert ("POST", "/messages/") in app.seen


async def test_a_400_with_a_modern_error_body_does_not_fall_back() -> None:
    app = Refusing(legacy_app(), 400, MODERN_ERROR)
    async with serving(app) as server:
        with pytest.raises(HttpError) as raised:
            async with connect_http(server.url, protocol=[mcp_generated.v2025_11_25, mcp_generated.v2024_11_05]):
                pass
    assert raised.value.status == 400
    assert app.methods() == ["POST"]


@pytest.mark.parametrize("status", [401, 403, 406, 500])
async def test_other_statuses_do_not_fall_back(status: int) -> None:
    app = Refusing(legacy_app(), status)
    async with serving(app) as server:
        with pytest.raises(HttpError):
            async with connect_http(server.url, protocol=mcp_generated.v2025_11_25):
                pass
    assert app.methods() == ["POST"]


async def test_with_the_fallback_off_the_error_says_so() -> None:
    app = Refusing(legacy_app(), 405)
    async with serving(app) as server:
        with pytest.raises(SseFallbackDisabled, match="legacy_sse_fallback is off") as raised:
            async with connect_http(server.url, legacy_sse_fallback=False):
                pass
    assert raised.value.status == 405
    assert "GET" not in app.methods()


async def test_a_pin_to_2026_07_28_only_does_not_fall_back() -> None:
    app = Refusing(legacy_app(), 405)
    async with serving(app) as server:
        with pytest.raises(VersionError, match="no handshake-era revision"):
            async with connect_http(server.url, protocol=mcp_generated.v2026_07_28):
                pass
    assert app.methods() == ["POST"]


async def test_a_failed_fallback_raises_the_sse_error_with_the_post_error_as_context() -> None:
    app = Refusing(legacy_app(), 404)
    async with serving(app) as server:
        url = f"http://127.0.0.1:{server.port}/nowhere"  # 404 for POST and for GET
        with pytest.raises(HttpError) as raised:
            async with connect_http(url, protocol=mcp_generated.v2025_11_25):
                pass
    assert raised.value.status == 404
    assert isinstance(raised.value.__context__, HttpError)
    assert ("GET", "/nowhere") in app.seen


def test_a_post_failing_after_negotiation_does_not_fall_back() -> None:
    session = OurSession([mcp_generated.v2024_11_05])
    refused = HttpError(400, b"Bad Request")
    assert falls_back_to_sse(refused, session, True, "http://127.0.0.1:1/mcp")
    session.era = "handshake"  # what initialize sets once it succeeded
    assert not falls_back_to_sse(refused, session, True, "http://127.0.0.1:1/mcp")


# -- the endpoint event --------------------------------------------------------------------------


class Announcing:
    """An HTTP+SSE stream whose first event is ``first`` (and nothing else)."""

    def __init__(self, first: bytes) -> None:
        self.first = first

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": self.first, "more_body": False})


@pytest.mark.parametrize(
    ("first", "words"),
    [
        (b"event: endpoint\ndata: http://evil.example/messages/\n\n", "another origin"),
        (b"event: endpoint\ndata: //127.0.0.2/messages/\n\n", "another origin"),
        (b'event: message\ndata: {"jsonrpc": "2.0", "method": "x"}\n\n', "not the endpoint event"),
        (b": only a comment\n\n", "ended before its endpoint event"),
    ],
)
async def test_an_unusable_endpoint_event_is_a_clear_error(first: bytes, words: str) -> None:
    with ServerThread(Announcing(first)) as server, pytest.raises(SseHandshakeError, match=words):
        async with connect_sse(f"http://127.0.0.1:{server.port}/sse"):
            pass


async def test_a_relative_endpoint_resolves_against_the_stream_url() -> None:
    app = legacy_app()
    async with serving(app) as server:
        url = f"http://127.0.0.1:{server.port}/sse"
        async with connect_sse(url) as client:
            transport = client.session.engine.transport
            assert transport.endpoint.startswith(f"http://127.0.0.1:{server.port}/messages/?session_id=")
