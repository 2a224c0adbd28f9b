"""Hostile input to the engine and every transport (issue 13, items 11, 12 and 16).

* JSON that is not JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are parse errors (-32700)
  wherever the runtime parses what a peer sent: the stdio engine (its fast path included),
  in-process pipes, Streamable HTTP of both eras, HTTP+SSE, and on the client side HTTP
  replies, SSE events and OAuth documents.
* Echoes: an error quotes at most a bounded part of what the peer sent (method names, ids,
  task ids, tool arguments, ...); a handler that uses a capability the peer never declared
  is logged in one line naming it, without a traceback.
* Seeded random hostile messages (non-finite numbers, huge method names and ids, deep
  nesting, invalid UTF-8) to each transport: every one gets a bounded, correct error and
  the server keeps serving.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from test_http_server import (
    ACCEPT,
    ServerThread,
    init_params,
    make_app,
    raw,
    rpc,
)
from test_http_server import EXCHANGES
from test_http_server import initialize as http_initialize
from test_http_server import send as http_send
from test_jsonrpc import Pipe
from test_legacy_sse import initialized, message, post, serving
from test_stdio import PROBE

import mcp_generated.v2024_11_05
import mcp_generated.v2025_11_25
import mcp_generated.v2026_07_28
import typedmcp
from typedmcp.auth.fetch import http_fetch
from typedmcp.connecting import connect_direct, connect_http, connect_memory, connect_sse
from typedmcp.engine.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    Engine,
    RpcError,
)
from typedmcp.protocol.stubs import RequestContext
from typedmcp.transports.http_client import NotAnMcpReply
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

pytestmark = pytest.mark.anyio

RUNTIME = Path(typedmcp.__file__).resolve().parent
NON_FINITE = ("NaN", "Infinity", "-Infinity")
#: Numbers too large for a float, which pydantic-core reads as infinities (issue 29): refused
#: as the literals above are, wherever a peer's JSON is parsed.
OVERFLOWING = ("1e400", "-1e309", "1" + "0" * 400 + ".0", "1E+400", "1" + "0" * 250 + "e99")
NOT_FINITE = NON_FINITE + OVERFLOWING
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
#: What an error message may quote of one peer-supplied value (with room for the marker).
QUOTE_BOUND = 200
#: What a whole error reply may weigh when the peer sent 100 KB of name or id.
REPLY_BOUND = 4096
HUGE = "m" * 100_000
HEADER_MISMATCH = -32020


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def non_finite_request(literal: str, request_id: Any = 7) -> bytes:
    """A request that would be well-formed if ``literal`` were a number."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"})[:-1]
    return (head + ', "params": {"_meta": {"x": [1, ' + literal + "]}}}").encode()


def assert_parse_error(reply: Any, literal: str = "NaN", request_id: Any = None) -> None:
    """-32700 naming what is wrong: for NaN and the infinities, no id (the message is not
    JSON); for a number too large for a float, the number (its first 40 characters) and
    the id of the request it was in (``request_id``; None: the HTTP error of a POST)."""
    assert reply["jsonrpc"] == "2.0" and reply.get("id") == request_id, reply
    if request_id is None:
        assert "id" not in reply, reply
    assert reply["error"]["code"] == PARSE_ERROR, reply
    if literal in NON_FINITE:
        assert "NaN, Infinity and -Infinity are not JSON" in reply["error"]["message"], reply
    else:
        assert reply["error"]["message"].startswith(f"Parse error: the number {literal[:40]}"), reply
        assert "is too large for a float" in reply["error"]["message"], reply


# == JSON that is not JSON (item 11) ===========================================================


class PingOnly:
    """A dispatcher that answers ``ping`` and records what reached it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    async def on_request(self, method: str, params: Any, request_id: Any) -> Any:
        self.seen.append((method, params))
        if method == "ping":
            return {}
        raise RpcError(METHOD_NOT_FOUND, "Method not found")

    async def on_notification(self, method: str, params: Any) -> None:
        self.seen.append((method, params))


@contextlib.asynccontextmanager
async def running_engine(dispatcher: Any | None = None) -> AsyncIterator[tuple[Pipe, Any]]:
    pipe = Pipe()
    dispatcher = dispatcher or PingOnly()
    engine = Engine(pipe, dispatcher)
    task = asyncio.create_task(engine.run())
    try:
        yield pipe, dispatcher
    finally:
        pipe.inbox.put_nowait(None)
        await asyncio.wait_for(task, 5)


@pytest.mark.parametrize("literal", NOT_FINITE)
async def test_the_engine_answers_non_finite_numbers_with_a_parse_error(literal: str) -> None:
    async with running_engine() as (pipe, dispatcher):
        pipe.put(non_finite_request(literal))
        assert_parse_error(await pipe.reply(), literal, 7 if literal in OVERFLOWING else None)
        pipe.put(b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": {"v": 1.5}}')
        assert await pipe.reply() == {"jsonrpc": "2.0", "id": 8, "result": {}}
        assert [method for method, _ in dispatcher.seen] == ["ping"]


@pytest.mark.parametrize("literal", NOT_FINITE)
async def test_a_response_with_non_finite_numbers_does_not_resolve_our_request(literal: str) -> None:
    pipe = Pipe()
    engine = Engine(pipe, PingOnly())
    reader = asyncio.create_task(engine.run())
    asked = asyncio.create_task(engine.request("ping", None))
    await pipe.raw()  # the request went out
    pipe.put(b'{"jsonrpc": "2.0", "id": 1, "result": {"v": ' + literal.encode() + b"}}")
    assert_parse_error(await pipe.reply(), literal)
    assert not asked.done()
    pipe.put(b'{"jsonrpc": "2.0", "id": 1, "result": {"v": 1}}')
    assert await asyncio.wait_for(asked, 2) == {"v": 1}
    pipe.inbox.put_nowait(None)
    await asyncio.wait_for(reader, 5)


class Lines:
    """A stdio server process spoken to in raw lines (the engine's fast path included)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdin = process.stdin
        self.stdout = process.stdout

    async def write(self, data: bytes) -> None:
        self.stdin.write(data + b"\n")
        await self.stdin.drain()

    async def reply(self, timeout: float = 5.0) -> Any:
        line = await asyncio.wait_for(self.stdout.readline(), timeout)
        assert line.endswith(b"\n"), f"stdout ended: {line!r}"
        return json.loads(line)

    async def ask(self, message: Any, timeout: float = 5.0) -> Any:
        await self.write(json.dumps(message).encode())
        return await self.reply(timeout)

    async def initialize(self, version: str = "2025-06-18") -> None:
        reply = await self.ask(rpc(0, "initialize", init_params(version)))
        assert reply["result"]["protocolVersion"] == version, reply
        await self.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')


@contextlib.asynccontextmanager
async def stdio_server(command: list[str] = PROBE) -> AsyncIterator[Lines]:
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=64 * 1024 * 1024,
    )
    try:
        yield Lines(process)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }


@pytest.mark.parametrize("literal", NOT_FINITE)
async def test_stdio_answers_non_finite_numbers_with_a_parse_error_in_both_eras(literal: str) -> None:
    async with stdio_server() as server:
        # stateless era: the version is in the request's _meta
        head = json.dumps(rpc(1, "tools/list", {"_meta": modern_meta()}))[:-2]
        await server.write(head.encode() + b', "x": ' + literal.encode() + b"}}")
        assert_parse_error(await server.reply(), literal, 1 if literal in OVERFLOWING else None)
        # handshake era, after initialize (the fast path serves requests then)
        await server.initialize()
        await server.write(non_finite_request(literal, request_id=2))
        assert_parse_error(await server.reply(), literal, 2 if literal in OVERFLOWING else None)
        assert (await server.ask(rpc(3, "ping")))["result"] == {}


async def post_raw(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    async def exchange() -> tuple[int, Any]:
        reply = await raw(port, "POST", headers, body)
        content = await reply.body()
        reply.close()
        return reply.status, json.loads(content) if content else None

    return await asyncio.wait_for(exchange(), 10)


def post_headers(**extra: str) -> dict[str, str]:
    return {"Content-Type": "application/json", "Accept": ACCEPT, **extra}


@pytest.mark.parametrize("literal", NOT_FINITE)
async def test_streamable_http_answers_non_finite_numbers_with_400_and_a_parse_error(
    literal: str,
) -> None:
    with ServerThread(make_app()) as server:
        # stateless era
        modern = post_headers(**{"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"})
        head = json.dumps(rpc(1, "tools/list", {"_meta": modern_meta()}))[:-2]
        status, reply = await post_raw(
            server.port, head.encode() + b', "x": ' + literal.encode() + b"}}", modern
        )
        assert status == 400
        assert_parse_error(reply, literal)
        # handshake era, in a session
        opened = await asyncio.wait_for(
            raw(server.port, "POST", post_headers(), json.dumps(rpc(0, "initialize", init_params())).encode()),
            10,
        )
        await asyncio.wait_for(opened.body(), 10)
        opened.close()
        session_id = opened.headers["mcp-session-id"]
        headers = post_headers(**{"Mcp-Session-Id": session_id, "MCP-Protocol-Version": HANDSHAKE})
        status, reply = await post_raw(server.port, non_finite_request(literal), headers)
        assert status == 400
        assert_parse_error(reply, literal)
        status, reply = await post_raw(server.port, json.dumps(rpc(9, "ping")).encode(), headers)
        assert (status, reply["result"]) == (200, {})


@pytest.mark.parametrize("literal", NOT_FINITE)
async def test_http_sse_answers_non_finite_numbers_with_400_and_a_parse_error(literal: str) -> None:
    async with serving(make_app(legacy_sse=True)) as server:
        stream, uri = await asyncio.wait_for(initialized(server.port), 10)
        status, content = await asyncio.wait_for(post(server.port, uri, non_finite_request(literal)), 10)
        assert status == 400
        assert_parse_error(json.loads(content), literal)
        assert await asyncio.wait_for(post(server.port, uri, rpc(5, "ping")), 10) == (202, b"")
        assert await asyncio.wait_for(message(stream), 10) == {"jsonrpc": "2.0", "id": 5, "result": {}}
        stream.close()


# -- the client side -------------------------------------------------------------------------


MARK = "__not_a_number__"


class Marked(ServerHandlers):
    """One tool whose result's ``_meta`` holds :data:`MARK` (rewritten to NaN on the wire);
    with a progress token it reports progress first, so the reply is an SSE stream."""

    async def list_tools(self, params: Any, ctx: RequestContext[ClientPeer]) -> models.ListToolsResult:
        return models.ListToolsResult(
            tools=[models.Tool(name="marked", input_schema=models.ToolInputSchema(type="object"))]
        )

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        await ctx.report_progress(1, 2)
        return models.CallToolResult(
            content=[models.TextContent(type="text", text="marked")], meta={"value": MARK}
        )


class NanRewriter:
    """ASGI middleware: every JSON string ``"__not_a_number__"`` in a response body becomes
    the bare literal ``NaN`` (Content-Length dropped: the body is chunked)."""

    def __init__(self, app: Any, literal: str = "NaN") -> None:
        self.app = app
        self.needle = json.dumps(MARK).encode()
        self.literal = literal.encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def rewriting(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"]
                message = {**message, "headers": headers}
            elif message["type"] == "http.response.body":
                message = {**message, "body": message.get("body", b"").replace(self.needle, self.literal)}
            await send(message)

        await self.app(scope, receive, rewriting)


@pytest.mark.parametrize("literal", NOT_FINITE)
@pytest.mark.parametrize("reply", ["json", "sse"])
async def test_the_http_client_refuses_a_reply_with_non_finite_numbers(literal: str, reply: str) -> None:
    app = NanRewriter(make_app_for(Marked()), literal)
    with ServerThread(app) as server:
        async with connect_http(
            server.url, protocol=mcp_generated.v2025_11_25, request_timeout=3
        ) as client:
            meta = models.ParamsMeta(progress_token="p") if reply == "sse" else None
            # JSON: the body is not JSON (NotAnMcpReply); SSE: the event is not a message,
            # so the response never comes (the request's own time limit ends it)
            expected = NotAnMcpReply if reply == "json" else asyncio.TimeoutError
            with pytest.raises(expected):
                await client.call_tool(name="marked", meta=meta)
            client.session.request_timeout = 30  # the limit was for the lost response only
            assert (await client.list_tools()).tools[0].name == "marked"  # still usable


@pytest.mark.parametrize("literal", NOT_FINITE)
async def test_the_http_sse_client_refuses_a_message_with_non_finite_numbers(literal: str) -> None:
    app = NanRewriter(make_app_for(Marked(), legacy_sse=True), literal)
    async with serving(app) as server, connect_sse(
        f"http://127.0.0.1:{server.port}/sse",
        protocol=mcp_generated.v2024_11_05,
        request_timeout=3,
    ) as client:
        with pytest.raises(asyncio.TimeoutError):
            await client.call_tool(name="marked")
        client.session.request_timeout = 30  # the limit was for the lost response only
        assert (await client.list_tools()).tools[0].name == "marked"


def make_app_for(handlers: Any, **options: Any) -> Any:
    from typedmcp.serving import http_app

    return http_app(handlers, **options)


@pytest.mark.parametrize("literal", NOT_FINITE)
async def test_oauth_documents_with_non_finite_numbers_are_not_json(literal: str) -> None:
    body = b'{"resource": "http://127.0.0.1/mcp", "authorization_servers": [], "n": ' + literal.encode() + b"}"

    async def document(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (event := await receive())["type"] != "lifespan.shutdown":
                await send({"type": event["type"] + ".complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        from typedmcp.transports.asgi import respond

        await respond(send, 200, body, "application/json")

    with ServerThread(document) as server:
        reply = await http_fetch("GET", f"http://127.0.0.1:{server.port}/.well-known/x")
    assert reply.status == 200 and reply.body == body
    assert reply.json() is None


#: Runtime modules whose ``json.loads`` reads no peer's message.
NOT_FROM_A_PEER = {
    "stateless/sealing.py": "the sealed requestState, read after its HMAC is verified",
    "host/cli.py": "the command line's --arguments",
    "host/config.py": "the host's own configuration file",
    "auth/dpop.py": "the public JWK of the client's own DPoP key, as PyJWT writes it",
    "testing.py": "the server options a test's own process passes its stdio server child",
    "cli/install.py": "the user's own desktop-client configuration file it adds an entry to",
}


def test_every_json_parse_in_the_runtime_refuses_non_finite_numbers() -> None:
    """A guard for the next parse site: each ``from_json`` call of the runtime passes
    ``allow_inf_nan=False`` and nothing calls ``json.loads`` on what a peer sent."""
    unguarded = []
    for source in sorted(RUNTIME.rglob("*.py")):
        tree = ast.parse(source.read_text(), str(source))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name == "from_json":
                strict = any(
                    k.arg == "allow_inf_nan" and isinstance(k.value, ast.Constant) and k.value.value is False
                    for k in node.keywords
                )
                if not strict:
                    unguarded.append(f"{source.name}:{node.lineno}")
            elif name == "loads" and source.relative_to(RUNTIME).as_posix() not in NOT_FROM_A_PEER:
                unguarded.append(f"{source.name}:{node.lineno} (json.loads)")
    assert unguarded == []


# == echoes and tracebacks (item 12) ===========================================================


class Echoing(ServerHandlers):
    """Handlers whose errors could quote what the client sent: a tool with an integer
    argument, completions (a tagged union in the params), a handler raising a long error,
    and a tool that asks the client for sampling (a capability it may not have)."""

    async def list_tools(self, params: Any, ctx: RequestContext[ClientPeer]) -> models.ListToolsResult:
        schema = models.ToolInputSchema(type="object", properties={"n": {"type": "integer"}})
        return models.ListToolsResult(
            tools=[
                models.Tool(name="count", input_schema=schema),
                models.Tool(name="sample", input_schema=models.ToolInputSchema(type="object")),
                models.Tool(name="shout", input_schema=models.ToolInputSchema(type="object")),
            ]
        )

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        if params.name == "sample":
            message = models.SamplingMessage(role="user", content=models.TextContent(type="text", text="hi"))
            await ctx.peer.create_message(messages=[message], max_tokens=5)
        if params.name == "shout":
            raise RpcError(INVALID_PARAMS, "Invalid params: " + HUGE)
        return models.CallToolResult(content=[models.TextContent(type="text", text="ok")])

    async def complete(self, params: Any, ctx: RequestContext[ClientPeer]) -> models.CompleteResult:
        return models.CompleteResult(completion=models.CompleteResultCompletion(values=[]))


@contextlib.asynccontextmanager
async def served(handlers: Any, **options: Any) -> AsyncIterator[Pipe]:
    """``handlers`` served over an in-memory pipe by the real router (both eras)."""
    from typedmcp.serving import serve

    pipe = Pipe()
    task = asyncio.create_task(serve(handlers, pipe, **options))
    try:
        yield pipe
    finally:
        pipe.inbox.put_nowait(None)
        await asyncio.wait_for(task, 5)


async def handshake(pipe: Pipe, version: str = HANDSHAKE, capabilities: Any = None) -> None:
    pipe.request(0, "initialize", init_params(version, capabilities))
    assert (await pipe.reply())["result"]["protocolVersion"] == version
    pipe.put({"jsonrpc": "2.0", "method": "notifications/initialized"})


def bounded_error(reply: Any, code: int) -> str:
    """The error message of ``reply`` (code ``code``), checked to quote a bounded part only."""
    assert reply["error"]["code"] == code, reply
    text: str = reply["error"]["message"]
    assert len(text) < REPLY_BOUND, f"{len(text)} characters: {text[:200]}..."
    assert "m" * QUOTE_BOUND not in text, text[:300]
    return text


async def test_method_not_found_quotes_a_bounded_part_of_the_name_in_every_state() -> None:
    async with served(Echoing()) as pipe:
        pipe.request(1, HUGE)  # before initialize
        text = bounded_error(await pipe.reply(), INVALID_REQUEST)
        assert "mmmm" in text and "more characters" in text
        pipe.request(2, HUGE, {"_meta": modern_meta()})  # stateless era
        assert bounded_error(await pipe.reply(), METHOD_NOT_FOUND).startswith("Method not found: mmm")
        await handshake(pipe)
        pipe.request(3, HUGE)
        assert bounded_error(await pipe.reply(), METHOD_NOT_FOUND).startswith("Method not found: mmm")
        pipe.request(4, "ping")
        assert (await pipe.reply())["result"] == {}


async def test_method_not_found_over_stdio_is_small() -> None:
    async with stdio_server() as server:
        await server.initialize()
        await server.write(json.dumps(rpc(1, HUGE)).encode())
        line = await asyncio.wait_for(server.stdout.readline(), 5)
        assert len(line) < REPLY_BOUND
        bounded_error(json.loads(line), METHOD_NOT_FOUND)


async def test_a_client_quotes_a_bounded_part_of_an_unknown_method_the_server_sends() -> None:
    seen: list[RpcError] = []

    class Asking(Echoing):
        async def call_tool(self, params: Any, ctx: RequestContext[ClientPeer]) -> Any:
            try:
                await ctx.peer.session.engine.request(HUGE, {})
            except RpcError as error:
                seen.append(error)
            return models.CallToolResult(content=[])

    async with connect_memory(Asking(), protocol=mcp_generated.v2025_11_25) as client:
        await client.call_tool(name="count", arguments={"n": 1})
    [error] = seen
    assert error.code == METHOD_NOT_FOUND and len(error.message) < REPLY_BOUND


async def test_an_id_already_in_use_is_quoted_in_part() -> None:
    release = asyncio.Event()

    class Holding(PingOnly):
        async def on_request(self, method: str, params: Any, request_id: Any) -> Any:
            await release.wait()
            return {}

    huge_id = "i" * 100_000
    async with running_engine(Holding()) as (pipe, _):
        pipe.request(huge_id, "ping")
        await asyncio.sleep(0.05)
        pipe.request(huge_id, "ping")
        reply = await pipe.reply()
        assert reply["id"] == huge_id  # the id itself must come back whole
        text = reply["error"]["message"]
        assert reply["error"]["code"] == INVALID_REQUEST and "already in use" in text
        assert len(text) < 500, text[:300]
        release.set()
        assert (await pipe.reply())["result"] == {}


async def test_invalid_params_quote_bounded_parts_of_keys_and_tags() -> None:
    async with served(Echoing()) as pipe:
        await handshake(pipe)
        pipe.request(1, "completion/complete", {
            "ref": {"type": HUGE, "name": "p"},
            "argument": {"name": "a", "value": "v"},
            "context": {"arguments": {HUGE: 1}},
        })
        text = bounded_error(await pipe.reply(), INVALID_PARAMS)
        assert text.startswith("Invalid params for completion/complete: ")


@pytest.mark.parametrize(("version", "as_result"), [(HANDSHAKE, True), ("2025-06-18", False)])
async def test_invalid_tool_arguments_quote_a_bounded_part_of_the_value(version: str, as_result: bool) -> None:
    async with served(Echoing()) as pipe:
        await handshake(pipe, version)
        pipe.request(1, "tools/call", {"name": "count", "arguments": {"n": HUGE}})
        reply = await pipe.reply()
        if as_result:
            [content] = reply["result"]["content"]
            assert reply["result"]["isError"] is True
            text = content["text"]
            assert len(text) < REPLY_BOUND and "m" * QUOTE_BOUND not in text, text[:300]
        else:
            text = bounded_error(reply, INVALID_PARAMS)
        assert "is not of type 'integer'" in text


async def test_an_unknown_task_id_is_quoted_in_part() -> None:
    async with served(Echoing(), tasks=True) as pipe:
        await handshake(pipe)
        pipe.request(1, "tasks/get", {"taskId": HUGE})
        assert "unknown task" in bounded_error(await pipe.reply(), INVALID_PARAMS)
        pipe.request(2, "tasks/cancel", {"taskId": HUGE})
        bounded_error(await pipe.reply(), INVALID_PARAMS)


async def test_no_error_message_leaves_the_runtime_unbounded() -> None:
    """The last line of defence: a handler's own 100 KB message is cut on the wire."""
    async with served(Echoing()) as pipe:
        await handshake(pipe)
        pipe.request(1, "tools/call", {"name": "shout", "arguments": {}})
        text = (await pipe.reply())["error"]["message"]
        assert text.startswith("Invalid params: mmm") and len(text) < REPLY_BOUND


async def test_a_header_echoed_by_the_http_server_is_bounded() -> None:
    with ServerThread(make_app()) as server:
        headers = post_headers(**{"MCP-Protocol-Version": MODERN, "Mcp-Method": "x" * 8000})
        body = json.dumps(rpc(1, "tools/list", {"_meta": modern_meta()})).encode()
        status, reply = await post_raw(server.port, body, headers)
    assert status == 400
    assert len(reply["error"]["message"]) < REPLY_BOUND


LONG = "h" * 5000


@pytest.mark.parametrize(
    ("era", "headers", "meta"),
    [
        ("handshake", {"host": LONG}, None),
        ("handshake", {"origin": "http://" + LONG}, None),
        ("handshake", {"mcp-protocol-version": LONG}, None),
        ("stateless", {"mcp-protocol-version": MODERN, "mcp-method": LONG}, None),
        ("stateless", {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"},
         {"io.modelcontextprotocol/logLevel": LONG}),
        ("stateless", {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"},
         {"io.modelcontextprotocol/protocolVersion": LONG}),
    ],
    ids=["host", "origin", "version-header", "method-header", "log-level", "meta-version"],
)
async def test_each_value_the_http_server_echoes_is_quoted_in_part(
    era: str, headers: dict[str, str], meta: dict[str, Any] | None
) -> None:
    """Each peer value an HTTP error quotes is clipped where it is quoted (ECHO_LIMIT), not
    only by the 2 KB backstop of the whole message."""
    app = make_app()
    try:
        if era == "handshake":
            session = await http_initialize(app)
            reply = await http_send(app, body=rpc(1, "tools/list"), session=session, version=HANDSHAKE, headers=headers)
        else:
            params = {"_meta": {**modern_meta(), **(meta or {})}}
            reply = await http_send(app, body=rpc(1, "tools/list", params), headers=headers)
    finally:
        EXCHANGES.clear()  # all finished; that module's fixture would wait on them in its loop
    assert reply.status is not None and reply.status >= 400
    message = reply.json()["error"]["message"]
    assert "more characters" in message and len(message) < 2 * QUOTE_BOUND + 200, message


def capability_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "sampling" in r.getMessage()]


@pytest.mark.parametrize("link", ["memory", "direct"])
async def test_a_handler_using_an_undeclared_capability_logs_one_line_naming_it(
    link: str, caplog: pytest.LogCaptureFixture
) -> None:
    connect = connect_memory if link == "memory" else connect_direct
    with caplog.at_level(logging.DEBUG, logger="typedmcp"):
        async with connect(Echoing(), protocol=mcp_generated.v2025_11_25) as client:
            for _ in range(2):
                with pytest.raises(RpcError) as raised:
                    await client.call_tool(name="sample", arguments={})
                assert (raised.value.code, raised.value.message) == (INTERNAL_ERROR, "Internal error")
    records = capability_records(caplog)
    assert len(records) == 2, [r.getMessage() for r in caplog.records]
    for record in records:
        assert record.exc_info is None and record.levelno == logging.WARNING
        text = record.getMessage()
        assert "\n" not in text and "tools/call" in text
        assert "did not declare the capability sampling" in text


async def test_a_task_using_an_undeclared_capability_logs_one_line_and_a_failing_task_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Buggy(Echoing):
        async def call_tool(self, params: Any, ctx: RequestContext[ClientPeer]) -> Any:
            if params.name == "count":
                raise KeyError("a bug")
            return await super().call_tool(params, ctx)

    with caplog.at_level(logging.DEBUG, logger="typedmcp"):
        async with connect_memory(
            Buggy(), protocol=mcp_generated.v2025_11_25, server_options={"tasks": True}
        ) as client:
            for name in ("sample", "count"):
                created = await client.call_tool(name=name, task=models.TaskMetadata())
                with pytest.raises(RpcError) as raised:
                    await client.get_task_payload(task_id=created.task.task_id)
                assert raised.value.code == INTERNAL_ERROR
    [line] = capability_records(caplog)
    assert line.exc_info is None and "did not declare the capability sampling" in line.getMessage()
    bugs = [r for r in caplog.records if r.exc_info and "a bug" in str(r.exc_info[1])]
    assert len(bugs) == 1, "a task whose handler has a bug is logged with its traceback"


# == hostile input to every transport (item 16) ================================================
#
# Seeded random scenarios (hypothesis is not a dependency): each draws hostile messages of
# every kind, sends them one by one, and checks each reply: the right error code, the right
# id (none for a parse error), a size bounded by the id it must echo plus a constant; after
# each, a probe request must still be answered. A failing seed is printed by its test id.

PARSE_DEPTH_OK = 180  # pydantic-core refuses JSON nested deeper than about 200 levels
PARSE_DEPTH_BAD = 220
TEXT_POOL = "abcXYZ019 _-/.:\"\\'\t\u00e9\u4e2d\u0000\u2028\U0001f600"
INVALID_UTF8 = (b"\xff", b"\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80", b"\xe2\x82")


class Hostile:
    """One hostile message and the outcome it must have."""

    def __init__(self, kind: str, data: bytes, codes: frozenset[int], request_id: Any) -> None:
        self.kind = kind
        self.data = data
        self.codes = codes  # acceptable error codes; empty: a result is the right answer
        self.request_id = request_id  # the id the reply must carry (None: id-less)

    def __repr__(self) -> str:
        return f"Hostile({self.kind}, {len(self.data)} bytes: {self.data[:80]!r})"


class Scenario:
    """Draws hostile messages for one era (``handshake``: after initialize, probed with
    ``ping``; ``stateless``: ``_meta`` on every request, probed with ``tools/list``)."""

    def __init__(
        self, seed: int, era: str, *, max_text: int = 150_000, unknown_method: int = METHOD_NOT_FOUND
    ) -> None:
        self.rng = random.Random(seed)
        self.era = era
        self.max_text = max_text
        self.unknown_method = frozenset({METHOD_NOT_FOUND, unknown_method})
        self.probe_method = "ping" if era == "handshake" else "tools/list"
        self.next_id = 1000

    def new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def params(self, **meta: Any) -> dict[str, Any]:
        base = modern_meta() if self.era == "stateless" else {}
        return {"_meta": {**base, **meta}}

    def request(self, request_id: Any, method: str | None = None, **meta: Any) -> dict[str, Any]:
        return rpc(request_id, method or self.probe_method, self.params(**meta))

    def text(self, size: int) -> str:
        return "".join(self.rng.choice(TEXT_POOL) for _ in range(size))

    def draw(self) -> Hostile:
        kind = self.rng.choice(
            ["non_finite", "huge_method", "huge_id", "huge_both", "big_int_id", "deep",
             "invalid_utf8", "garbage", "truncated"]
        )
        return getattr(self, kind)()

    def encode(self, message: Any) -> bytes:
        return json.dumps(message, ensure_ascii=self.rng.random() < 0.5).encode()

    def non_finite(self) -> Hostile:
        values = [self.rng.uniform(-1e9, 1e9) for _ in range(self.rng.randint(1, 5))]
        spot = self.rng.randrange(len(values))
        head = self.encode(self.request(self.new_id(), v="__spot__"))
        numbers = ", ".join(
            self.rng.choice(NON_FINITE) if i == spot else repr(v) for i, v in enumerate(values)
        )
        return Hostile("non_finite", head.replace(b'"__spot__"', f"[{numbers}]".encode()),
                       frozenset({PARSE_ERROR}), None)

    def huge_method(self) -> Hostile:
        request_id = self.new_id()
        method = self.text(self.rng.randint(1_000, self.max_text))
        return Hostile("huge_method", self.encode(self.request(request_id, method)),
                       self.unknown_method, request_id)

    def huge_id(self) -> Hostile:
        request_id = self.text(self.rng.randint(1_000, self.max_text))
        return Hostile("huge_id", self.encode(self.request(request_id)), frozenset(), request_id)

    def huge_both(self) -> Hostile:
        request_id = self.text(self.rng.randint(1_000, self.max_text // 2))
        method = self.text(self.rng.randint(1_000, self.max_text // 2))
        return Hostile("huge_both", self.encode(self.request(request_id, method)),
                       self.unknown_method, request_id)

    def big_int_id(self) -> Hostile:
        digits = self.rng.choice([self.rng.randint(19, 4000), self.rng.randint(4400, 20_000)])
        text = str(self.rng.randint(1, 9)) + "".join(self.rng.choice("0123456789") for _ in range(digits - 1))
        data = self.encode(self.request("__id__")).replace(b'"__id__"', text.encode())
        if digits > 4300:  # beyond what the parser takes: not JSON it can read
            return Hostile("big_int_id", data, frozenset({PARSE_ERROR}), None)
        return Hostile("big_int_id", data, frozenset(), int(text))

    def deep(self) -> Hostile:
        depth = self.rng.choice([self.rng.randint(1, PARSE_DEPTH_OK - 5), self.rng.randint(PARSE_DEPTH_BAD, 20_000)])
        request_id = self.new_id()
        opener, closer = self.rng.choice([("[", "]"), ('{"a":', "}")])
        nested = opener * depth + "1" + closer * depth
        data = self.encode(self.request(request_id, deep="__deep__")).replace(b'"__deep__"', nested.encode())
        if depth + 4 > PARSE_DEPTH_BAD:
            return Hostile("deep", data, frozenset({PARSE_ERROR}), None)
        return Hostile("deep", data, frozenset(), request_id)

    def invalid_utf8(self) -> Hostile:
        data = self.encode(self.request(self.new_id(), note="__bad__"))
        junk = b"".join(self.rng.choice(INVALID_UTF8) for _ in range(self.rng.randint(1, 4)))
        return Hostile("invalid_utf8", data.replace(b"__bad__", b"ok" + junk), frozenset({PARSE_ERROR}), None)

    def garbage(self) -> Hostile:
        size = self.rng.randint(1, 5_000)
        body = bytes(self.rng.choice([b for b in range(256) if b not in b"\n\r"]) for _ in range(size))
        # never blank, never the start of a JSON value that could be valid
        return Hostile("garbage", b"\x01" + body, frozenset({PARSE_ERROR}), None)

    def truncated(self) -> Hostile:
        data = self.encode(self.request(self.new_id(), note=self.text(self.rng.randint(0, 200))))
        return Hostile("truncated", data[: self.rng.randint(1, len(data) - 1)], frozenset({PARSE_ERROR}), None)


def check_reply(hostile: Hostile, reply: Any, raw_size: int) -> None:
    """The reply to ``hostile`` is the right outcome, and small."""
    assert isinstance(reply, dict) and reply.get("jsonrpc") == "2.0", (hostile, reply)
    if hostile.request_id is None:
        assert "id" not in reply, (hostile, reply)
    else:
        assert reply.get("id") == hostile.request_id, (hostile, str(reply)[:300])
    if hostile.codes:
        assert "error" in reply and reply["error"]["code"] in hostile.codes, (hostile, str(reply)[:300])
        assert set(reply["error"]) <= {"code", "message", "data"}, reply["error"]
    else:
        assert "result" in reply, (hostile, str(reply)[:300])
    echoed = len(json.dumps(hostile.request_id, ensure_ascii=False).encode()) if hostile.request_id is not None else 0
    assert raw_size <= echoed + REPLY_BOUND, (hostile, raw_size, echoed)


async def run_scenario(
    scenario: Scenario, exchange: Callable[[bytes], Awaitable[tuple[Any, int]]], rounds: int
) -> list[str]:
    """Send ``rounds`` hostile messages through ``exchange`` (bytes in; the parsed reply and
    its size in bytes out), each followed by a probe that must be answered."""
    kinds = []
    for _ in range(rounds):
        hostile = scenario.draw()
        kinds.append(hostile.kind)
        reply, size = await asyncio.wait_for(exchange(hostile.data), 15)
        check_reply(hostile, reply, size)
        probe_id = scenario.new_id()
        reply, _ = await asyncio.wait_for(exchange(json.dumps(scenario.request(probe_id)).encode()), 15)
        assert reply.get("id") == probe_id and "result" in reply, (hostile, reply)
    return kinds


SEEDS = [1, 2, 3]


@pytest.mark.parametrize("era", ["handshake", "stateless"])
@pytest.mark.parametrize("seed", SEEDS)
async def test_hostile_input_to_the_engine(seed: int, era: str) -> None:
    async with served(Echoing()) as pipe:
        if era == "handshake":
            await handshake(pipe)

        async def exchange(data: bytes) -> tuple[Any, int]:
            pipe.put(data)
            raw_reply = await pipe.raw(timeout=10)
            return json.loads(raw_reply), len(raw_reply)

        kinds = await run_scenario(Scenario(seed, era), exchange, rounds=40)
    assert len(set(kinds)) >= 6, kinds  # the draw covers most kinds


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_hostile_input_over_stdio(era: str) -> None:
    async with stdio_server() as server:
        scenario = Scenario(4, era)
        if era == "handshake":
            await server.initialize()

        async def exchange(data: bytes) -> tuple[Any, int]:
            assert b"\n" not in data
            await server.write(data)
            line = await asyncio.wait_for(server.stdout.readline(), 10)
            assert line.endswith(b"\n"), f"the server stopped: {line[:200]!r}"
            return json.loads(line), len(line) - 1

        await run_scenario(scenario, exchange, rounds=30)
        assert server.process.returncode is None


async def read_reply(response: Any) -> tuple[Any, int]:
    """The one JSON-RPC message of an HTTP reply, JSON or an SSE stream."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        event = await response.event(timeout=10)
        response.close()
        assert event is not None
        data = event["data"]
        return data, len(json.dumps(data, ensure_ascii=False).encode())
    body = await response.body()
    response.close()
    return json.loads(body), len(body)


@pytest.mark.parametrize("era", ["handshake", "stateless"])
async def test_hostile_input_over_streamable_http(era: str) -> None:
    with ServerThread(make_app()) as server:
        # stateless: a method name too long for its Mcp-Method header is a header mismatch
        scenario = Scenario(5, era, unknown_method=HEADER_MISMATCH)
        headers = post_headers()
        if era == "handshake":
            opened = await asyncio.wait_for(
                raw(server.port, "POST", headers, json.dumps(rpc(0, "initialize", init_params())).encode()), 10
            )
            await asyncio.wait_for(opened.body(), 10)
            opened.close()
            headers = post_headers(**{
                "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": HANDSHAKE
            })

        async def exchange(data: bytes) -> tuple[Any, int]:
            sent = headers
            if era == "stateless":
                method = "tools/list"
                with contextlib.suppress(ValueError, RecursionError, AttributeError):
                    named = json.loads(data).get("method")
                    if isinstance(named, str) and named.isascii() and named.isprintable() and len(named) < 4000:
                        method = named
                sent = {**headers, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
            response = await raw(server.port, "POST", sent, data)
            assert response.status in (200, 400, 404), response.status
            return await read_reply(response)

        await run_scenario(scenario, exchange, rounds=25)


async def test_hostile_input_over_http_sse() -> None:
    async with serving(make_app(legacy_sse=True)) as server:
        stream, uri = await asyncio.wait_for(initialized(server.port), 10)
        scenario = Scenario(6, "handshake", max_text=60_000)

        async def exchange(data: bytes) -> tuple[Any, int]:
            status, content = await post(server.port, uri, data)
            if status == 400:
                return json.loads(content), len(content)
            assert (status, content) == (202, b"")
            reply = await asyncio.wait_for(message(stream), 10)
            return reply, len(json.dumps(reply, ensure_ascii=False).encode())

        await run_scenario(scenario, exchange, rounds=25)
        stream.close()


async def test_the_client_logs_a_bounded_part_of_what_a_server_lists(caplog: pytest.LogCaptureFixture) -> None:
    """A tool whose name and x-mcp-header are 100 KB each is dropped with a short warning."""
    from mcp_generated.v2026_07_28.server import ServerHandlers as ModernHandlers

    class Listing(ModernHandlers):
        async def list_tools(self, params: Any, ctx: Any) -> Any:
            schema = {"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "a b" + HUGE}}}
            return {"tools": [{"name": HUGE, "inputSchema": schema}]}

    with ServerThread(make_app_for(Listing())) as server, caplog.at_level(logging.INFO, logger="typedmcp"):
        async with connect_http(server.url, protocol=mcp_generated.v2026_07_28, request_timeout=10) as client:
            assert (await client.list_tools()).tools == []
    [warning] = [r for r in caplog.records if "is not used" in r.getMessage()]
    assert len(warning.getMessage()) < 1000, warning.getMessage()[:300]


async def test_an_initialize_with_a_huge_non_string_version_is_not_echoed() -> None:
    async with served(Echoing()) as pipe:
        params = {**init_params(), "protocolVersion": [HUGE, {"x": HUGE}]}
        pipe.request(1, "initialize", params)
        raw_reply = await pipe.raw()
        error = json.loads(raw_reply)["error"]
        assert error["code"] == INVALID_PARAMS and "protocolVersion" in error["message"]
        assert error["data"]["supported"][0] == HANDSHAKE
        assert len(raw_reply) < REPLY_BOUND
        await handshake(pipe)  # and the session can still start


async def test_a_notification_handler_using_an_undeclared_capability_logs_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done = asyncio.Event()

    class Hearing(Echoing):
        async def on_roots_list_changed(self, params: Any, ctx: RequestContext[ClientPeer]) -> None:
            try:
                message = models.SamplingMessage(role="user", content=models.TextContent(type="text", text="?"))
                await ctx.peer.create_message(messages=[message], max_tokens=5)
            finally:
                done.set()

    from mcp_generated.v2025_11_25.client import ClientHandlers

    class Rooted(ClientHandlers):
        async def list_roots(self, params: Any, ctx: Any) -> models.ListRootsResult:
            return models.ListRootsResult(roots=[])

    with caplog.at_level(logging.DEBUG, logger="typedmcp"):
        async with connect_memory(
            Hearing(), protocol=mcp_generated.v2025_11_25, client_handlers=Rooted(), list_changed=["roots"]
        ) as client:
            await client.send_roots_list_changed()
            await asyncio.wait_for(done.wait(), 5)
            await asyncio.sleep(0.01)
    [line] = capability_records(caplog)
    assert line.exc_info is None and "notifications/roots/list_changed" in line.getMessage()
