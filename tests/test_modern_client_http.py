"""The stateless-era (2026-07-28) HTTP client on the wire, against a scripted fake server.

``FakeServer`` is a tiny HTTP/1.1 server on 127.0.0.1 that records every request (method,
headers, JSON body) and answers each POST through a script, so the tests can check exactly
what the client sends: the request-metadata headers, no session id, POST only, how a
header mismatch, an unsupported version or a legacy server is handled, multi round-trip
retries and cancellation by closing the reply stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

import typedmcp
from typedmcp.connecting import connect_http, connect_stdio
from typedmcp.protocol.results import ProtocolViolation
from typedmcp.protocol.packages import VersionError
from typedmcp.transports.http_headers import (
    InvalidHeaderAnnotation,
    param_headers,
    request_headers,
)
from mcp_generated import v2026_07_28
from mcp_generated.v2026_07_28.client import ClientHandlers

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
CAPABILITIES: dict[str, Any] = {"tools": {}}
HEADERED: dict[str, Any] = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        "query": {"type": "string"},
    },
}
TOOLS = [
    {"name": "météo", "inputSchema": HEADERED},
    {"name": "plain", "inputSchema": {"type": "object"}},
    {"name": "bad", "inputSchema": {"type": "object", "properties": {"x": {"type": "array", "x-mcp-header": "X"}}}},
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- the fake server ---------------------------------------------------------------------------


@dataclass
class Seen:
    """One HTTP request the client made."""

    method: str
    headers: dict[str, str]
    body: Any


Reply = tuple[int, Any, str]  # status, payload (dict -> JSON, bytes as is), content type
Script = Callable[[Seen], "Reply | None"]


def ok(body: Any, result: dict[str, Any]) -> Reply:
    return 200, {"jsonrpc": "2.0", "id": body["id"], "result": result}, "application/json"


def error(body: Any, code: int, message: str, data: Any = None, status: int = 400) -> Reply:
    payload: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        payload["data"] = data
    return status, {"jsonrpc": "2.0", "id": body.get("id"), "error": payload}, "application/json"


def modern(seen: Seen) -> Reply | None:
    """A well-behaved 2026-07-28 server: discover, tools/list, tools/call echo."""
    body = seen.body
    method = body.get("method")
    if method == "server/discover":
        return ok(body, {"supportedVersions": [MODERN], "capabilities": CAPABILITIES, "ttlMs": 0,
                         "cacheScope": "private", "resultType": "complete",
                         "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}})
    if method == "tools/list":
        return ok(body, {"tools": TOOLS, "ttlMs": 5, "cacheScope": "public", "resultType": "complete"})
    if method == "tools/call":
        return ok(body, {"content": [{"type": "text", "text": body["params"]["name"]}], "resultType": "complete"})
    return None


@dataclass
class FakeServer:
    script: Script
    seen: list[Seen] = field(default_factory=list)
    hung_up: list[str] = field(default_factory=list)  # methods whose reply stream the client closed
    url: str = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                raw = await reader.readexactly(length) if length else b""
                seen = Seen(request_line.split()[0], headers, json.loads(raw) if raw else None)
                self.seen.append(seen)
                reply = self.script(seen) if seen.method == "POST" else (405, b"", "text/plain")
                if reply is None:
                    reply = (202, b"", "application/json") if "id" not in seen.body else ok(seen.body, {})
                status, payload, content_type = reply
                if payload == "hang":  # never answer; note when the client hangs up
                    await reader.read()
                    self.hung_up.append(seen.body["method"])
                    return
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                writer.write(
                    f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\n"
                    f"Mcp-Session-Id: not-for-this-era\r\nContent-Length: {len(data)}\r\n\r\n".encode()
                    + data
                )
                await writer.drain()

    def posts(self, method: str | None = None) -> list[Seen]:
        return [s for s in self.seen if s.method == "POST" and (method is None or s.body["method"] == method)]


@contextlib.asynccontextmanager
async def fake(script: Script) -> AsyncIterator[FakeServer]:
    server = FakeServer(script)
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    server.url = f"http://127.0.0.1:{listener.sockets[0].getsockname()[1]}/mcp"
    try:
        yield server
    finally:
        listener.close()


# -- header rules (pure functions) -------------------------------------------------------------


def test_tools_call_mirrors_method_name_and_annotated_arguments_as_headers() -> None:
    annotated = param_headers(HEADERED)
    arguments = {"region": "us-west1", "priority": 42, "verbose": False, "query": "SELECT 1"}
    headers = request_headers("tools/call", {"name": "météo", "arguments": arguments}, MODERN, annotated)
    assert headers == {
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "=?base64?bcOpdMOpbw==?=",
        "Mcp-Param-Region": "us-west1",
        "Mcp-Param-Priority": "42",
        "Mcp-Param-Verbose": "false",
    }


def test_unsafe_parameter_values_use_the_base64_sentinel_and_nulls_are_omitted() -> None:
    schema = {"type": "object", "properties": {"outer": {"type": "object", "properties": {
        "zone": {"type": "string", "x-mcp-header": "Zone"}}}, "region": HEADERED["properties"]["region"]}}
    annotated = param_headers(schema)
    assert annotated == {("outer", "zone"): "Zone", ("region",): "Region"}
    arguments = {"outer": {"zone": " a"}, "region": None}
    headers = request_headers("tools/call", {"name": "t", "arguments": arguments}, MODERN, annotated)
    assert headers == {
        "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "t", "Mcp-Param-Zone": "=?base64?IGE=?=",
    }


def test_resources_read_and_prompts_get_name_their_uri_and_prompt() -> None:
    uri = "file:///path/to/file%20name.txt"
    assert request_headers("resources/read", {"uri": uri}, MODERN, None) == {
        "MCP-Protocol-Version": MODERN, "Mcp-Method": "resources/read", "Mcp-Name": uri,
    }
    assert request_headers("prompts/get", {"name": "greet"}, MODERN, None)["Mcp-Name"] == "greet"
    assert request_headers("tools/list", {}, MODERN, None) == {
        "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list",
    }


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        ({"properties": {"v": {"type": "string", "x-mcp-header": ""}}}, "not a header token"),
        ({"properties": {"v": {"type": "string", "x-mcp-header": "My Region"}}}, "not a header token"),
        ({"properties": {"v": {"type": "string", "x-mcp-header": "Region:Primary"}}}, "not a header token"),
        ({"properties": {"v": {"type": "string", "x-mcp-header": "Région"}}}, "not a header token"),
        ({"properties": {"v": {"type": "string", "x-mcp-header": "Region\t1"}}}, "not a header token"),
        ({"properties": {"v": {"type": "object", "x-mcp-header": "V"}}}, "on a 'object' property"),
        ({"properties": {"v": {"type": "array", "x-mcp-header": "V"}}}, "on a 'array' property"),
        ({"properties": {"v": {"type": "null", "x-mcp-header": "V"}}}, "on a 'null' property"),
        ({"properties": {"v": {"type": "number", "x-mcp-header": "V"}}}, "on a 'number' property"),
        ({"properties": {"a": {"type": "string", "x-mcp-header": "MyField"},
                         "b": {"type": "string", "x-mcp-header": "myfield"}}}, "used twice"),
        ({"anyOf": [{"properties": {"v": {"type": "string", "x-mcp-header": "V"}}}]}, "outside properties"),
        ({"type": "object", "x-mcp-header": "Root"}, "outside properties"),
    ],
)
def test_invalid_header_annotations_are_refused(schema: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidHeaderAnnotation, match=problem):
        param_headers(schema)


# -- the transport on the wire -----------------------------------------------------------------


async def test_every_post_carries_the_metadata_headers_and_never_a_session() -> None:
    async with fake(modern) as server:
        async with connect_http(server.url, handlers=ClientHandlers()) as client:
            assert (client.session.era, client.session.protocol_version) == ("stateless", MODERN)
            assert client.session.server_info == {"name": "fake", "version": "1"}
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == ["météo", "plain"]
            await client.call_tool(
                name="météo", arguments={"region": "eu", "priority": 3, "verbose": True, "query": "q"}
            )
        assert [s.method for s in server.seen] == ["POST", "POST", "POST"]  # no GET, no DELETE
        for seen in server.seen:
            assert seen.headers["mcp-protocol-version"] == seen.body["params"]["_meta"][
                "io.modelcontextprotocol/protocolVersion"
            ] == MODERN
            assert seen.headers["mcp-method"] == seen.body["method"]
            assert "mcp-session-id" not in seen.headers
            assert seen.headers["accept"] == "application/json, text/event-stream"
        call = server.posts("tools/call")[0]
        assert {k: v for k, v in call.headers.items() if k.startswith("mcp-")} == {
            "mcp-protocol-version": MODERN,
            "mcp-method": "tools/call",
            "mcp-name": "=?base64?bcOpdMOpbw==?=",
            "mcp-param-region": "eu",
            "mcp-param-priority": "3",
            "mcp-param-verbose": "true",
        }
        assert call.body["params"]["_meta"] == {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "typedmcp", "version": typedmcp.__version__},
        }


async def test_a_tool_with_an_invalid_header_annotation_is_dropped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with fake(modern) as server, connect_http(server.url, handlers=ClientHandlers()) as client:
        with caplog.at_level(logging.WARNING, logger="typedmcp"):
            listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["météo", "plain"]
        assert [r.getMessage() for r in caplog.records] == [
            "tool 'bad' is not used: invalid x-mcp-header (x: x-mcp-header on a 'array' property)"
        ]


async def test_a_header_mismatch_refreshes_the_tools_and_retries_once() -> None:
    calls: list[int] = []

    def script(seen: Seen) -> Reply | None:
        if seen.body["method"] == "tools/call":
            calls.append(seen.body["id"])
            if len(calls) == 1:
                return error(seen.body, -32020, "Mcp-Param-Region is missing")
        return modern(seen)

    async with fake(script) as server, connect_http(server.url, handlers=ClientHandlers()) as client:
        result = await client.call_tool(name="météo", arguments={"region": "eu"})
        assert [block.text for block in result.content] == ["météo"]
        assert [s.body["method"] for s in server.posts()] == [
            "server/discover", "tools/call", "tools/list", "tools/call",
        ]
        assert calls[0] != calls[1]
        retry = server.posts("tools/call")[1]
        assert retry.headers["mcp-param-region"] == "eu"  # learnt from the refreshed list


async def test_a_legacy_server_that_answers_discover_with_a_plain_400_gets_initialize() -> None:
    def script(seen: Seen) -> Reply | None:
        body = seen.body
        if body["method"] == "server/discover":
            return 400, b"Bad Request: Missing session ID", "text/plain"
        if body["method"] == "initialize":
            return ok(body, {"protocolVersion": "2025-11-25", "capabilities": {},
                             "serverInfo": {"name": "legacy", "version": "1"}})
        return None

    async with fake(script) as server, connect_http(server.url, handlers=ClientHandlers()) as client:
        session = client.session
        assert (session.era, session.protocol_version, session.negotiation) == ("handshake", "2025-11-25", "auto")
        assert session.server_info == {"name": "legacy", "version": "1"}
        initialize = server.posts("initialize")[0]
        assert initialize.body["params"]["protocolVersion"] == "2025-11-25"
        assert "mcp-method" not in initialize.headers


async def test_an_unsupported_version_error_naming_ours_is_retried_at_that_version() -> None:
    refused: list[int] = []

    def script(seen: Seen) -> Reply | None:
        if seen.body["method"] == "server/discover" and not refused:
            refused.append(seen.body["id"])
            return 400, {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": [MODERN], "requested": MODERN}}}, "application/json"
        return modern(seen)

    async with fake(script) as server, connect_http(server.url, handlers=ClientHandlers()) as client:
        assert client.session.era == "stateless"
        assert len(server.posts("server/discover")) == 2


async def test_a_server_with_no_common_version_raises_version_error() -> None:
    def script(seen: Seen) -> Reply | None:
        return error(seen.body, -32022, "Unsupported protocol version",
                     {"supported": ["2099-01-01"], "requested": MODERN})

    async with fake(script) as server:
        with pytest.raises(VersionError, match="the server speaks 2099-01-01; this client speaks 2026-07-28, 2025-11-25"):
            async with connect_http(server.url, handlers=ClientHandlers()):
                pass


async def test_results_without_result_type_are_complete_and_unknown_ones_are_refused() -> None:
    def script(seen: Seen) -> Reply | None:
        body = seen.body
        if body["method"] == "tools/call":
            name = body["params"]["name"]
            result: dict[str, Any] = {"content": [{"type": "text", "text": name}]}
            if name == "odd":
                result["resultType"] = "task"
            return ok(body, result)
        return modern(seen)

    async with fake(script) as server, connect_http(server.url, handlers=ClientHandlers()) as client:
        result = await client.call_tool(name="plain")
        assert [block.text for block in result.content] == ["plain"]
        with pytest.raises(ProtocolViolation, match="answered with a task, but this client did not declare the tasks extension"):
            await client.call_tool(name="odd")  # (a client that declares it waits for the task: test_task_client.py)


async def test_input_required_is_refused_where_the_method_may_not_ask() -> None:
    def script(seen: Seen) -> Reply | None:
        if seen.body["method"] == "tools/list":
            return ok(seen.body, {"resultType": "input_required", "requestState": "s"})
        return modern(seen)

    async with fake(script) as server, connect_http(server.url, handlers=ClientHandlers()) as client:
        with pytest.raises(ProtocolViolation, match="tools/list may not answer input_required"):
            await client.list_tools()


class Confirm(ClientHandlers):
    async def elicit(self, params: Any, ctx: Any) -> Any:
        return {"action": "accept", "content": {"ok": True}}


ASK = {"confirm": {"method": "elicitation/create", "params": {
    "message": "Sure?", "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}


async def test_retries_echo_the_state_exactly_with_a_new_id_and_never_leak_it() -> None:
    def script(seen: Seen) -> Reply | None:
        body = seen.body
        params = body.get("params", {})
        if body["method"] == "tools/call" and params["name"] != "plain" and "inputResponses" not in params:
            answer: dict[str, Any] = {"resultType": "input_required", "inputRequests": ASK}
            if params["name"] == "stateful":
                answer["requestState"] = '{"n":1, "sig":"é"}'
            return ok(body, answer)
        return modern(seen)

    async with fake(script) as server, connect_http(server.url, handlers=Confirm()) as client:
        await client.call_tool(name="stateful")
        await client.call_tool(name="stateless")
        await client.call_tool(name="plain")
        first, retry, second, second_retry, plain = (s.body for s in server.posts("tools/call"))
        assert retry["id"] != first["id"]
        assert retry["params"]["requestState"] == '{"n":1, "sig":"é"}'
        assert retry["params"]["inputResponses"] == {"confirm": {"action": "accept", "content": {"ok": True}}}
        assert "requestState" not in second["params"]
        assert "requestState" not in second_retry["params"]
        assert second_retry["params"]["inputResponses"] == retry["params"]["inputResponses"]
        assert set(plain["params"]) == {"name", "_meta"}


async def test_endless_input_rounds_are_given_up() -> None:
    def script(seen: Seen) -> Reply | None:
        if seen.body["method"] == "tools/call":
            return ok(seen.body, {"resultType": "input_required", "inputRequests": ASK})
        return modern(seen)

    async with fake(script) as server, connect_http(
        server.url, handlers=Confirm(), max_input_rounds=3
    ) as client:
        with pytest.raises(ProtocolViolation, match="still wanted input after 3 rounds"):
            await client.call_tool(name="plain")
        assert len(server.posts("tools/call")) == 4


async def test_a_timed_out_call_closes_its_stream_and_sends_no_cancel_notification() -> None:
    def script(seen: Seen) -> Reply | None:
        if seen.body["method"] == "tools/call" and seen.body["params"]["name"] == "slow":
            return 200, "hang", "application/json"
        return modern(seen)

    async with fake(script) as server, connect_http(server.url, handlers=ClientHandlers()) as client:
        spec = client.session.package.dispatch.REQUESTS["tools/call"]
        with pytest.raises(asyncio.TimeoutError):
            await client.session.send_request(spec, {"name": "slow"}, timeout=0.2)
        for _ in range(100):
            if server.hung_up:
                break
            await asyncio.sleep(0.01)
        assert server.hung_up == ["tools/call"]
        await client.call_tool(name="plain")  # the session goes on
        assert [s.body["method"] for s in server.posts()] == ["server/discover", "tools/call", "tools/call"]


async def test_an_sse_reply_delivers_progress_then_the_result() -> None:
    def script(seen: Seen) -> Reply | None:
        body = seen.body
        if body["method"] == "tools/call":
            token = body["params"]["_meta"]["progressToken"]
            progress = {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": 1, "total": 2}}
            result = {"jsonrpc": "2.0", "id": body["id"], "result": {"content": [], "resultType": "complete"}}
            stream = f"data: {json.dumps(progress)}\n\ndata: {json.dumps(result)}\n\n"
            return 200, stream.encode(), "text/event-stream"
        return modern(seen)

    async with fake(script) as server, connect_http(server.url, handlers=ClientHandlers()) as client:
        seen: list[float] = []
        client.session.progress_callbacks["p"] = lambda p: seen.append(p.progress)
        result = await client.call_tool(name="plain", meta={"progressToken": "p"})
        assert result.content == []
        assert seen == [1]


async def test_pinned_to_2026_07_28_a_legacy_server_raises_version_error() -> None:
    def script(seen: Seen) -> Reply | None:
        return 400, b"Bad Request: Missing session ID", "text/plain"

    async with fake(script) as server:
        with pytest.raises(VersionError, match=r"the server does not speak 2026-07-28 .*no handshake-era"):
            async with connect_http(server.url, protocol=v2026_07_28):
                pass


LEGACY_STDIO = r"""
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        reply = {"result": {"protocolVersion": "2025-06-18", "capabilities": {},
                            "serverInfo": {"name": "legacy-stdio", "version": "1"}}}
    else:
        reply = {"error": {"code": -32601, "message": "Method not found: " + message["method"]}}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}), flush=True)
"""


async def test_over_stdio_a_server_without_discover_is_initialized_instead() -> None:
    async with connect_stdio([sys.executable, "-c", LEGACY_STDIO], handlers=ClientHandlers()) as client:
        session = client.session
        assert (session.era, session.protocol_version) == ("handshake", "2025-06-18")
        assert session.server_info == {"name": "legacy-stdio", "version": "1"}
