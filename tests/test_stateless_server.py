"""Our server in the stateless era (2026-07-28), driven with raw JSON-RPC.

The server under test is ``examples/conformance_server.py``: over stdio as a real process
(``--stdio``, raw lines in and out), and over HTTP as its ASGI app called in-process with raw
ASGI messages (an :class:`Exchange` feeds the body, records status, headers and body, and can
hang up like a client closing its socket). Every value that matters is asserted exactly:
result shapes, error codes and data, HTTP statuses, notification params.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from typedmcp.protocol.meta import encode_header_value
from typedmcp.serving import http_app

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "examples"))

import conformance_server as fixture  # noqa: E402

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
SERVER_INFO = {"name": "mcp-codegen-conformance-server", "version": "0.1.0"}
SERVER_META = {SERVER_INFO_KEY: SERVER_INFO}
ALL_INPUTS = {"elicitation": {}, "sampling": {}, "roots": {}}
CAPABILITIES = {
    "completions": {},
    "extensions": {"io.modelcontextprotocol/tasks": {}, "io.modelcontextprotocol/skills": {"directoryRead": True}},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True},
    "tools": {"listChanged": True},
}
NAME_REQUEST = {
    "method": "elicitation/create",
    "params": {
        "message": "What is your name?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
        },
    },
}
ALICE = {"action": "accept", "content": {"name": "Alice"}}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- messages -----------------------------------------------------------------------------------


def meta(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A 2026-07-28 request ``_meta``: the version and the client's capabilities."""
    return {PV: VERSION, CC: capabilities if capabilities is not None else {}, **extra}


def request(
    request_id: Any,
    method: str,
    params: dict[str, Any] | None = None,
    capabilities: dict[str, Any] | None = None,
    **extra_meta: Any,
) -> dict[str, Any]:
    params = dict(params or {})
    params["_meta"] = {**meta(capabilities, **extra_meta), **params.get("_meta", {})}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def call(request_id: Any, name: str, arguments: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    extra = {k: options.pop(k) for k in ("inputResponses", "requestState") if k in options}
    return request(request_id, "tools/call", {"name": name, "arguments": arguments or {}, **extra}, **options)


def text_result(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "resultType": "complete", "_meta": SERVER_META}


def flip_one_byte(state: str) -> str:
    """The sealed state with one character of its body changed (still valid Base64url)."""
    middle = len(state) // 4
    replacement = "A" if state[middle] != "A" else "B"
    return state[:middle] + replacement + state[middle + 1 :]


# -- stdio: the fixture server as a process --------------------------------------------------


class StdioServer:
    """``conformance_server.py --stdio`` spoken to in raw lines."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.stdin = process.stdin
        self.stdout = process.stdout

    async def send(self, message: Any) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        await self.stdin.drain()

    async def message(self, timeout: float = 5.0) -> Any:
        line = await asyncio.wait_for(self.stdout.readline(), timeout)
        assert line, "the server closed its stdout"
        return json.loads(line)

    async def exchange(self, message: dict[str, Any]) -> tuple[list[Any], Any]:
        """Send a request; return the notifications before its response, and the response."""
        await self.send(message)
        notifications = []
        while True:
            received = await self.message()
            if "id" in received and received["id"] == message["id"] and "method" not in received:
                return notifications, received
            notifications.append(received)

    async def reply(self, message: dict[str, Any]) -> Any:
        notifications, response = await self.exchange(message)
        assert notifications == []
        return response

    async def assert_silent(self, delay: float = 0.2) -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(self.stdout.readline(), delay)


@pytest.fixture
async def stdio() -> AsyncIterator[StdioServer]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "examples" / "conformance_server.py"), "--stdio",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=str(REPO),
    )
    try:
        yield StdioServer(process)
    finally:
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()


# -- HTTP: the fixture's ASGI app, called in-process ---------------------------------------


class Observed(fixture.ConformanceServer):
    """The fixture, plus a record of when ``test_tool_slow`` starts and is cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def call_tool(self, params: Any, ctx: Any) -> Any:
        if params.name != "test_tool_slow":
            return await super().call_tool(params, ctx)
        self.started.set()
        try:
            return await super().call_tool(params, ctx)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


@pytest.fixture
def handlers() -> Observed:
    return Observed()


@pytest.fixture
def app(handlers: Observed) -> Any:
    return http_app(handlers, **fixture.serving_options(handlers))


@dataclass
class Exchange:
    """One HTTP request to the app as the app sees it, and everything it answered."""

    app: Any
    method: str
    headers: dict[str, str]
    body: bytes
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    received: bytes = b""
    complete: bool = False
    hung_up: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    _sent_body: bool = False

    def start(self) -> Exchange:
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": self.method, "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
            "query_string": b"",
            "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()],
            "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
        }
        self.task = asyncio.ensure_future(self.app(scope, self._receive, self._send))
        return self

    async def _receive(self) -> dict[str, Any]:
        if not self._sent_body:
            self._sent_body = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.hung_up.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        assert not self.complete, "the app sent after the response was complete"
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.response_headers = {k.decode().lower(): v.decode() for k, v in message.get("headers", [])}
        else:
            self.received += message.get("body", b"")
            self.complete = not message.get("more_body", False)

    async def finished(self, timeout: float = 5.0) -> Exchange:
        assert self.task is not None
        await asyncio.wait_for(asyncio.shield(self.task), timeout)
        assert self.complete
        if self.headers.get("mcp-protocol-version") == VERSION:
            assert "mcp-session-id" not in self.response_headers, "2026-07-28 replies name no session"
        return self

    def json(self) -> Any:
        assert self.response_headers.get("content-type") == "application/json"
        return json.loads(self.received)

    def messages(self) -> list[Any]:
        """The SSE messages received so far (complete events only)."""
        assert self.response_headers.get("content-type") == "text/event-stream"
        found = []
        for block in self.received.split(b"\n\n")[:-1]:
            lines = block.decode().split("\n")
            if lines == [": keep-alive"]:
                continue
            assert lines[0] == "event: message" and lines[1].startswith("data: "), block
            found.append(json.loads(lines[1][len("data: "):]))
        return found

    async def until(self, condition: Callable[[Exchange], bool], timeout: float = 5.0) -> Exchange:
        async def wait() -> None:
            while self.status is None or not condition(self):
                assert self.task is not None and not self.task.done(), self.received
                await asyncio.sleep(0.005)

        await asyncio.wait_for(wait(), timeout)
        return self

    async def hang_up(self) -> None:
        self.hung_up.set()
        assert self.task is not None
        await asyncio.wait_for(asyncio.shield(self.task), 5)


def modern_headers(message: dict[str, Any]) -> dict[str, str]:
    """What a 2026-07-28 client sends: version, method and (three methods) name headers."""
    headers = {"mcp-protocol-version": VERSION, "mcp-method": message["method"]}
    key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(message["method"])
    if key is not None:
        headers["mcp-name"] = encode_header_value(message["params"][key])
    return headers


def start(app: Any, message: Any, headers: dict[str, str | None] | None = None, method: str = "POST") -> Exchange:
    """Start an HTTP request; ``headers`` override the defaults (None drops one)."""
    body = json.dumps(message).encode() if message is not None else b""
    base: dict[str, str | None] = {"host": "127.0.0.1:8000"}
    if method == "POST":
        base |= {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if isinstance(message, dict) and "method" in message and "params" in message:
            base |= modern_headers(message)
    base |= headers or {}
    final = {k: v for k, v in base.items() if v is not None}
    return Exchange(app, method, final, body).start()


async def post(app: Any, message: Any, headers: dict[str, str | None] | None = None, method: str = "POST") -> Exchange:
    return await start(app, message, headers, method).finished()


def assert_error(reply: Exchange, status: int, request_id: Any, code: int) -> dict[str, Any]:
    assert reply.status == status, reply.received
    body = reply.json()
    assert body["id"] == request_id and body["error"]["code"] == code, body
    error: dict[str, Any] = body["error"]
    return error


# -- server/discover -------------------------------------------------------------------------

DISCOVERED = {
    "supportedVersions": [VERSION],
    "capabilities": CAPABILITIES,
    "instructions": fixture.INSTRUCTIONS,
    "resultType": "complete",
    "ttlMs": 0,
    "cacheScope": "private",
    "_meta": SERVER_META,
}


async def test_discover_names_versions_capabilities_caching_hints_and_server_info_over_http(app: Any) -> None:
    reply = await post(app, request(1, "server/discover"))
    assert reply.status == 200
    assert reply.json() == {"jsonrpc": "2.0", "id": 1, "result": DISCOVERED}


async def test_discover_answers_the_same_over_stdio(stdio: StdioServer) -> None:
    assert await stdio.reply(request(1, "server/discover")) == {"jsonrpc": "2.0", "id": 1, "result": DISCOVERED}


# -- per-request _meta and version ---------------------------------------------------------

MISSING_META = [
    pytest.param({}, "Invalid params: _meta is missing; 2026-07-28 requests carry "
                 f"{PV} and {CC} in params._meta", id="no-meta"),
    pytest.param({"_meta": {CC: {}}}, f"Invalid params: _meta[{PV!r}] is missing", id="no-version"),
    pytest.param({"_meta": {PV: VERSION}}, f"Invalid params: _meta[{CC!r}] is missing", id="no-capabilities"),
]


@pytest.mark.parametrize(("params", "message"), MISSING_META)
async def test_each_missing_meta_field_is_invalid_params_with_http_400(
    app: Any, params: dict[str, Any], message: str
) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": params}
    headers: dict[str, str | None] = {"mcp-protocol-version": VERSION, "mcp-method": "server/discover"}
    error = assert_error(await post(app, body, headers), 400, 7, -32602)
    assert error["message"] == message


@pytest.mark.parametrize(("params", "message"), MISSING_META)
async def test_each_missing_meta_field_is_invalid_params_over_stdio(
    stdio: StdioServer, params: dict[str, Any], message: str
) -> None:
    reply = await stdio.reply({"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": params})
    assert reply == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": message}}


async def test_client_info_is_optional(app: Any) -> None:
    reply = await post(app, request(2, "tools/list"))
    assert reply.status == 200 and reply.json()["result"]["resultType"] == "complete"


async def test_an_unsupported_version_is_32022_naming_supported_and_requested(app: Any, stdio: StdioServer) -> None:
    message = request(3, "server/discover")
    message["params"]["_meta"][PV] = "1900-01-01"
    error = assert_error(await post(app, message, {"mcp-protocol-version": "1900-01-01"}), 400, 3, -32022)
    assert error["data"] == {"supported": [VERSION], "requested": "1900-01-01"}
    reply = await stdio.reply(message)
    assert reply["error"]["code"] == -32022
    assert reply["error"]["data"] == {"supported": [VERSION], "requested": "1900-01-01"}


# -- request-metadata headers ----------------------------------------------------------------


async def test_a_missing_mcp_method_header_is_32020(app: Any) -> None:
    error = assert_error(await post(app, request(4, "tools/list"), {"mcp-method": None}), 400, 4, -32020)
    assert error["message"] == "Header mismatch: missing required header Mcp-Method"


async def test_tools_call_without_mcp_name_is_32020(app: Any) -> None:
    error = assert_error(await post(app, call(5, "test_simple_text"), {"mcp-name": None}), 400, 5, -32020)
    assert error["message"] == "Header mismatch: missing required header Mcp-Name"


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"mcp-method": "Tools/Call"}, "Mcp-Method 'Tools/Call' differs from the body's method 'tools/call'"),
        ({"mcp-name": "test_error_handling"}, "Mcp-Name 'test_error_handling' differs from params.name"),
        ({"mcp-protocol-version": "2025-11-25"}, None),  # a handshake-era header: not this era's request
    ],
    ids=["method", "name", "version"],
)
async def test_a_header_that_differs_from_the_body_is_rejected(
    app: Any, headers: dict[str, str | None], message: str | None
) -> None:
    reply = await post(app, call(6, "test_simple_text"), headers)
    if message is None:  # routed to the handshake era, which wants a session
        assert reply.status == 400 and reply.json()["error"]["code"] == -32600
        return
    assert assert_error(reply, 400, 6, -32020)["message"] == f"Header mismatch: {message}"


async def test_a_version_header_that_differs_from_meta_is_32020(app: Any) -> None:
    message = request(8, "server/discover")
    message["params"]["_meta"][PV] = "2099-01-01"
    error = assert_error(await post(app, message), 400, 8, -32020)
    assert error["message"] == (
        f"Header mismatch: MCP-Protocol-Version '{VERSION}' differs from _meta['{PV}'] '2099-01-01'"
    )


async def test_whitespace_around_a_header_value_is_not_part_of_it(app: Any) -> None:
    reply = await post(app, call(9, "test_simple_text"), {"mcp-name": "  test_simple_text \t"})
    assert reply.status == 200
    assert reply.json()["result"] == text_result("This is a simple text response for testing.")


async def test_the_base64_sentinel_carries_a_unicode_name_and_value(app: Any) -> None:
    sentinel = "=?base64?" + base64.b64encode("wetter_münchen".encode()).decode() + "?="
    assert encode_header_value("wetter_münchen") == sentinel
    reply = await post(app, call(10, "wetter_münchen"), {"mcp-name": sentinel})
    assert reply.status == 200  # past every header check: the handler says what it thinks
    assert reply.json()["error"] == {"code": -32602, "message": "Unknown tool: wetter_münchen"}
    message = call(11, "test_header_params", {"region": "Zürich"})
    reply = await post(app, message, {"mcp-param-region": encode_header_value("Zürich")})
    assert reply.json()["result"] == text_result("region='Zürich' priority=None note=None")


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({"mcp-name": "=?base64?!!!?=", "mcp-param-region": "x"}, "Mcp-Name holds a broken Base64 sentinel"),
        ({"mcp-param-region": "=?base64?eA?="}, "Mcp-Param-Region holds a broken Base64 sentinel"),
        ({"mcp-param-region": "=?base64?SGVs!!!bG8=?="}, "Mcp-Param-Region holds a broken Base64 sentinel"),
        ({"mcp-param-region": "ß"}, "Mcp-Param-Region holds characters a plain header value may not hold"),
    ],
    ids=["name-not-base64", "param-bad-padding", "param-bad-alphabet", "param-raw-non-ascii"],
)
async def test_a_broken_sentinel_or_raw_unsafe_value_is_32020(
    app: Any, headers: dict[str, str | None], message: str
) -> None:
    reply = await post(app, call(12, "test_header_params", {"region": "x"}), headers)
    assert assert_error(reply, 400, 12, -32020)["message"] == f"Header mismatch: {message}"


async def test_mcp_param_headers_are_required_when_the_body_has_the_value_and_only_then(app: Any) -> None:
    missing = await post(app, call(13, "test_header_params", {"region": "eu", "priority": 3}),
                         {"mcp-param-region": "eu"})
    error = assert_error(missing, 400, 13, -32020)
    assert error["message"] == "Header mismatch: missing header Mcp-Param-Priority for argument 'priority'"
    differs = await post(app, call(14, "test_header_params", {"region": "eu"}), {"mcp-param-region": "us"})
    assert assert_error(differs, 400, 14, -32020)["message"] == (
        "Header mismatch: Mcp-Param-Region 'us' differs from argument 'region'"
    )
    absent = await post(app, call(15, "test_header_params", {"region": "eu", "priority": None}),
                        {"mcp-param-region": "eu"})
    assert absent.status == 200, absent.received


async def test_integers_compare_numerically_42_equals_42_0(app: Any) -> None:
    for request_id, body, header in ((16, 42, "42.0"), (17, 42.0, "42")):
        reply = await post(app, call(request_id, "test_header_params", {"region": "eu", "priority": body}),
                           {"mcp-param-region": "eu", "mcp-param-priority": header})
        assert reply.status == 200, reply.received
        assert reply.json()["result"] == text_result(f"region='eu' priority={body!r} note=None")


# -- methods and verbs ------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["unknown/method", "ping", "initialize", "logging/setLevel",
                                    "resources/subscribe"])
async def test_unknown_and_removed_methods_are_404_with_32601(app: Any, method: str) -> None:
    error = assert_error(await post(app, request(20, method)), 404, 20, -32601)
    assert error["message"] == f"Method not found: {method}"


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
async def test_get_and_delete_are_405(app: Any, verb: str) -> None:
    reply = await post(app, None, {"mcp-protocol-version": VERSION}, method=verb)
    assert (reply.status, reply.response_headers.get("allow")) == (405, "POST")


async def test_a_session_header_on_a_2026_request_is_ignored_not_echoed(app: Any) -> None:
    reply = await post(app, request(26, "tools/list"), {"mcp-session-id": "a-stale-session"})
    assert reply.status == 200 and reply.json()["result"]["resultType"] == "complete"
    assert "mcp-session-id" not in reply.response_headers


async def test_no_reply_of_the_era_names_a_session(app: Any) -> None:
    replies = [
        await post(app, request(21, "server/discover")),
        await post(app, request(22, "tools/list")),
        await post(app, call(23, "test_input_required_result_elicitation", capabilities=ALL_INPUTS)),
        await post(app, call(24, "test_tool_with_progress", progressToken="t")),
        await post(app, request(25, "ping")),
    ]
    assert [r.status for r in replies] == [200, 200, 200, 200, 404]
    assert all("mcp-session-id" not in r.response_headers for r in replies)


# -- multi round-trip requests (input required) --------------------------------------------


async def test_an_input_request_round_trip(app: Any) -> None:
    first = (await post(app, call(30, "test_input_required_result_elicitation", capabilities=ALL_INPUTS))).json()
    result = first["result"]
    assert set(result) == {"resultType", "inputRequests", "requestState", "_meta"}
    assert result["resultType"] == "input_required" and result["_meta"] == SERVER_META
    assert result["inputRequests"] == {"user_name": NAME_REQUEST}
    retry = call(31, "test_input_required_result_elicitation", capabilities=ALL_INPUTS,
                 inputResponses={"user_name": ALICE}, requestState=result["requestState"])
    assert (await post(app, retry)).json()["result"] == text_result("Hello, Alice!")


async def test_a_tampered_request_state_is_rejected(app: Any) -> None:
    first = (await post(app, call(32, "test_input_required_result_tampered_state", capabilities=ALL_INPUTS))).json()
    state = first["result"]["requestState"]
    for forged in (flip_one_byte(state), state + "-TAMPERED"):
        retry = call(33, "test_input_required_result_tampered_state", capabilities=ALL_INPUTS,
                     inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}},
                     requestState=forged)
        reply = await post(app, retry)
        assert reply.json()["error"] == {
            "code": -32602,
            "message": "Invalid params: requestState failed its integrity check; "
            "retry the request without requestState and inputResponses",
        }


async def test_a_request_state_minted_for_another_tool_is_rejected(app: Any) -> None:
    first = (await post(app, call(34, "test_input_required_result_tampered_state", capabilities=ALL_INPUTS))).json()
    retry = call(35, "test_input_required_result_request_state", capabilities=ALL_INPUTS,
                 inputResponses={"confirm": {"action": "accept", "content": {"ok": True}}},
                 requestState=first["result"]["requestState"])
    assert (await post(app, retry)).json()["error"] == {
        "code": -32602,
        "message": "Invalid params: requestState belongs to another request; "
        "retry without requestState and inputResponses",
    }


async def test_a_verified_request_state_reaches_the_handler(app: Any) -> None:
    tool = "test_input_required_result_request_state"
    first = (await post(app, call(36, tool, capabilities=ALL_INPUTS))).json()["result"]
    confirm = {"confirm": {"action": "accept", "content": {"ok": True}}}
    with_state = call(37, tool, capabilities=ALL_INPUTS, inputResponses=confirm, requestState=first["requestState"])
    assert (await post(app, with_state)).json()["result"] == text_result("Confirmed: ok=True; state-ok")
    without = call(38, tool, capabilities=ALL_INPUTS, inputResponses=confirm)
    assert (await post(app, without)).json()["result"] == text_result("Confirmed: ok=True; no requestState")


async def test_missing_input_responses_are_asked_for_again(app: Any) -> None:
    tool = "test_input_required_result_elicitation"
    first = (await post(app, call(39, tool, capabilities=ALL_INPUTS))).json()["result"]
    for responses in ({}, {"wrong_key": ALICE}):
        again = call(40, tool, capabilities=ALL_INPUTS, inputResponses=responses, requestState=first["requestState"])
        result = (await post(app, again)).json()["result"]
        assert result["resultType"] == "input_required"
        assert result["inputRequests"] == {"user_name": NAME_REQUEST}


async def test_extra_input_responses_are_ignored(app: Any) -> None:
    tool = "test_input_required_result_elicitation"
    first = (await post(app, call(41, tool, capabilities=ALL_INPUTS))).json()["result"]
    responses = {"user_name": ALICE, "unknown_extra_key": {"action": "accept", "content": {"x": 1}}}
    retry = call(42, tool, capabilities=ALL_INPUTS, inputResponses=responses, requestState=first["requestState"])
    assert (await post(app, retry)).json()["result"] == text_result("Hello, Alice!")


async def test_an_invalid_input_response_is_invalid_params(app: Any) -> None:
    tool = "test_input_required_result_elicitation"
    reply = await post(app, call(43, tool, capabilities=ALL_INPUTS, inputResponses={"user_name": 12345}))
    error = reply.json()["error"]
    assert error["code"] == -32602
    assert error["message"].startswith(
        "Invalid params: inputResponses['user_name'] is not a valid answer to elicitation/create"
    )


async def test_an_input_kind_the_client_did_not_declare_is_32021(app: Any, stdio: StdioServer) -> None:
    missing = call(44, "test_missing_capability", capabilities={})
    error = assert_error(await post(app, missing), 400, 44, -32021)
    assert error == {
        "code": -32021,
        "message": "Missing required client capability: sampling (needed for sampling/createMessage)",
        "data": {"requiredCapabilities": {"sampling": {}}},
    }
    assert (await stdio.reply(missing))["error"] == error


async def test_only_declared_input_kinds_are_asked_for(app: Any) -> None:
    reply = await post(app, call(45, "test_input_required_result_capabilities", capabilities={"sampling": {}}))
    requests = reply.json()["result"]["inputRequests"]
    assert list(requests) == ["greeting"] and requests["greeting"]["method"] == "sampling/createMessage"


async def test_several_inputs_in_one_round_then_complete(app: Any) -> None:
    tool = "test_input_required_result_multiple_inputs"
    first = (await post(app, call(46, tool, capabilities=ALL_INPUTS))).json()["result"]
    assert {key: value["method"] for key, value in first["inputRequests"].items()} == {
        "user_name": "elicitation/create",
        "greeting": "sampling/createMessage",
        "client_roots": "roots/list",
    }
    responses = {
        "user_name": ALICE,
        "greeting": {"role": "assistant", "content": {"type": "text", "text": "Hello there!"},
                     "model": "test-model", "stopReason": "endTurn"},
        "client_roots": {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]},
    }
    retry = call(47, tool, capabilities=ALL_INPUTS, inputResponses=responses, requestState=first["requestState"])
    assert (await post(app, retry)).json()["result"] == text_result("Hello there! Alice (roots: file:///test/root)")


async def test_multi_round_over_stdio_carries_earlier_answers_in_the_state(stdio: StdioServer) -> None:
    tool = "test_input_required_result_multi_round"
    first = (await stdio.reply(call(50, tool, capabilities=ALL_INPUTS)))["result"]
    assert list(first["inputRequests"]) == ["step1"]
    second = (await stdio.reply(call(51, tool, capabilities=ALL_INPUTS, inputResponses={"step1": ALICE},
                                     requestState=first["requestState"])))["result"]
    assert list(second["inputRequests"]) == ["step2"]
    assert second["requestState"] != first["requestState"]
    blue = {"action": "accept", "content": {"color": "blue"}}
    final = await stdio.reply(call(52, tool, capabilities=ALL_INPUTS, inputResponses={"step2": blue},
                                   requestState=second["requestState"]))
    assert final["result"] == text_result("Alice likes blue")


async def test_prompts_get_may_ask_for_input_too(app: Any) -> None:
    message = request(53, "prompts/get", {"name": "test_input_required_result_prompt"}, ALL_INPUTS)
    first = (await post(app, message)).json()["result"]
    assert list(first["inputRequests"]) == ["user_context"]
    message["params"] |= {"inputResponses": {"user_context": {"action": "accept", "content": {"context": "tea"}}},
                          "requestState": first["requestState"]}
    message["id"] = 54
    result = (await post(app, message)).json()["result"]
    assert result["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Answer with this context in mind: tea"}}
    ]
    assert result["resultType"] == "complete"


async def test_a_resource_not_found_is_invalid_params_not_the_retired_32002(app: Any) -> None:
    uri = "test://nonexistent"
    error = (await post(app, request(55, "resources/read", {"uri": uri}))).json()["error"]
    assert error == {"code": -32602, "message": f"Resource not found: {uri}", "data": {"uri": uri}}


# -- request-scoped notifications: log level, progress, cancellation ---------------------


LOG_LINES = [
    {"level": level, "logger": "conformance", "data": f"test_logging_tool: a {level} message"}
    for level in ("warning", "error")
]


async def test_no_log_messages_without_a_log_level(app: Any, stdio: StdioServer) -> None:
    reply = await post(app, call(60, "test_logging_tool"))
    assert reply.json()["result"] == text_result("Logged 4 messages")  # plain JSON: nothing else was sent
    notifications, response = await stdio.exchange(call(60, "test_logging_tool"))
    assert notifications == [] and response["result"] == text_result("Logged 4 messages")


async def test_a_log_level_lets_through_only_messages_at_or_above_it(app: Any, stdio: StdioServer) -> None:
    message = call(61, "test_logging_tool", **{LOG_LEVEL: "warning"})
    reply = await post(app, message)
    assert reply.messages() == [
        *({"jsonrpc": "2.0", "method": "notifications/message", "params": p} for p in LOG_LINES),
        {"jsonrpc": "2.0", "id": 61, "result": text_result("Logged 4 messages")},
    ]
    notifications, response = await stdio.exchange(message)
    assert [n["params"] for n in notifications] == LOG_LINES
    assert response["result"] == text_result("Logged 4 messages")


async def test_progress_goes_on_the_request_stream(app: Any) -> None:
    reply = await post(app, call(62, "test_tool_with_progress", progressToken="p-62"))
    assert reply.response_headers["content-type"] == "text/event-stream"
    assert reply.response_headers["x-accel-buffering"] == "no"
    progress = [
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": "p-62", "progress": step, "total": 100,
                    "message": f"Completed step {step} of 100"}}
        for step in (0, 50, 100)
    ]
    assert reply.messages() == [
        *progress, {"jsonrpc": "2.0", "id": 62, "result": text_result("Progress reported for token 'p-62'")},
    ]


async def test_closing_the_response_stream_cancels_the_handler(app: Any, handlers: Observed) -> None:
    exchange = start(app, call(63, "test_tool_slow", {"durationMs": 30000}, **{LOG_LEVEL: "debug"}))
    await asyncio.wait_for(handlers.started.wait(), 5)
    assert not handlers.cancelled.is_set()
    exchange.hung_up.set()
    await asyncio.wait_for(handlers.cancelled.wait(), 1.0)
    await exchange.hang_up()


# -- subscriptions/listen ---------------------------------------------------------------------


def listen(request_id: Any, **wanted: Any) -> dict[str, Any]:
    return request(request_id, "subscriptions/listen", {"notifications": wanted})


async def test_listen_acknowledges_the_honoured_subset_then_tags_each_change(app: Any) -> None:
    stream = start(app, listen(70, toolsListChanged=True, resourcesListChanged=True))
    ack = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
           "params": {"notifications": {"toolsListChanged": True}, "_meta": {SUBSCRIPTION: 70}}}
    await stream.until(lambda s: len(s.messages()) == 1)
    assert stream.messages() == [ack]
    assert (await post(app, call(71, "test_trigger_tool_change"))).json()["result"] == (
        text_result("test_dynamic_tool is listed now")
    )
    await stream.until(lambda s: len(s.messages()) == 2)
    assert stream.messages()[1] == {
        "jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {SUBSCRIPTION: 70}},
    }
    listed = (await post(app, request(72, "tools/list"))).json()["result"]["tools"]
    assert listed[-1]["name"] == "test_dynamic_tool"
    await stream.hang_up()


async def test_a_prompts_only_listen_gets_no_tool_changes(app: Any) -> None:
    stream = start(app, listen("prompts", promptsListChanged=True))
    await stream.until(lambda s: len(s.messages()) == 1)
    await post(app, call(73, "test_trigger_tool_change"))
    await post(app, call(74, "test_trigger_prompt_change"))
    await stream.until(lambda s: len(s.messages()) == 2)
    assert [m["method"] for m in stream.messages()] == [
        "notifications/subscriptions/acknowledged", "notifications/prompts/list_changed",
    ]
    assert stream.messages()[1]["params"] == {"_meta": {SUBSCRIPTION: "prompts"}}
    await stream.hang_up()


async def test_listen_over_stdio_is_tagged_and_filtered(stdio: StdioServer) -> None:
    await stdio.send(listen(75, promptsListChanged=True))
    assert await stdio.message() == {
        "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": {"notifications": {"promptsListChanged": True}, "_meta": {SUBSCRIPTION: 75}},
    }
    assert (await stdio.reply(call(76, "test_trigger_tool_change")))["result"]["resultType"] == "complete"
    await stdio.send(call(77, "test_trigger_prompt_change"))
    received = [await stdio.message(), await stdio.message()]  # the reply and the change, either order
    assert sorted(received, key=lambda m: "id" in m) == [
        {"jsonrpc": "2.0", "method": "notifications/prompts/list_changed", "params": {"_meta": {SUBSCRIPTION: 75}}},
        {"jsonrpc": "2.0", "id": 77, "result": text_result("test_dynamic_prompt is listed now")},
    ]
    await stdio.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 75}})
    await stdio.assert_silent()


# -- both eras on one process, one endpoint -----------------------------------------------


LEGACY_INIT = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "raw-test-client", "version": "0.0.1"}},
}


async def test_both_eras_interleave_on_one_stdio_process(stdio: StdioServer) -> None:
    initialized = await stdio.reply(LEGACY_INIT)
    assert initialized["result"]["protocolVersion"] == "2025-11-25"
    await stdio.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    modern = await stdio.reply(request(1, "tools/list"))
    assert {"resultType", "ttlMs", "cacheScope", "_meta"} <= set(modern["result"])
    legacy = await stdio.reply({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(legacy["result"])
    assert [t["name"] for t in legacy["result"]["tools"]] == [t["name"] for t in modern["result"]["tools"]]
    assert await stdio.reply({"jsonrpc": "2.0", "id": 3, "method": "ping"}) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert (await stdio.reply(request(4, "ping")))["error"]["code"] == -32601
    # a 2026 request that declares elicitation is asked via InputRequiredResult, whatever
    # the session (which declared nothing) negotiated
    asked = await stdio.reply(call(5, "test_input_required_result_elicitation", capabilities=ALL_INPUTS))
    assert asked["result"]["inputRequests"] == {"user_name": NAME_REQUEST}
    # a change made by a 2026 request reaches the handshake session, which declared listChanged
    notifications, response = await stdio.exchange(call(6, "test_trigger_tool_change"))
    if not notifications:
        notifications = [await stdio.message()]
    assert notifications == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]
    assert response["result"] == text_result("test_dynamic_tool is listed now")


async def test_both_eras_interleave_on_one_http_endpoint(app: Any) -> None:
    init = await post(app, LEGACY_INIT, {"mcp-protocol-version": None})
    session = init.response_headers["mcp-session-id"]
    assert init.json()["result"]["protocolVersion"] == "2025-11-25"
    legacy_headers: dict[str, str | None] = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    done = await post(app, {"jsonrpc": "2.0", "method": "notifications/initialized"}, legacy_headers)
    assert done.status == 202
    modern = await post(app, request(1, "tools/list"))
    assert {"resultType", "ttlMs", "cacheScope", "_meta"} <= set(modern.json()["result"])
    legacy = await post(app, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, legacy_headers)
    assert not {"resultType", "ttlMs", "cacheScope", "_meta"} & set(legacy.json()["result"])
    ping = await post(app, {"jsonrpc": "2.0", "id": 3, "method": "ping"}, legacy_headers)
    assert ping.json() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert_error(await post(app, request(4, "ping")), 404, 4, -32601)
    # the session is still there, and a 2026 request never joined it
    again = await post(app, {"jsonrpc": "2.0", "id": 5, "method": "ping"}, legacy_headers)
    assert again.json() == {"jsonrpc": "2.0", "id": 5, "result": {}}


async def test_the_same_handler_asks_the_client_live_in_a_handshake_session(stdio: StdioServer) -> None:
    init = {**LEGACY_INIT, "params": {**LEGACY_INIT["params"], "capabilities": ALL_INPUTS}}
    assert (await stdio.reply(init))["result"]["protocolVersion"] == "2025-11-25"
    await stdio.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    await stdio.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "test_input_required_result_multiple_inputs", "arguments": {}}})
    answers = {
        "elicitation/create": {"action": "accept", "content": {"name": "Bob"}},
        "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "Hi!"}, "model": "m"},
        "roots/list": {"roots": [{"uri": "file:///r", "name": "R"}]},
    }
    asked = []
    while True:
        message = await stdio.message()
        if "method" in message and "id" in message:  # a live server-to-client request
            asked.append(message["method"])
            await stdio.send({"jsonrpc": "2.0", "id": message["id"], "result": answers[message["method"]]})
            continue
        assert message["id"] == 1
        break
    assert asked == ["elicitation/create", "sampling/createMessage", "roots/list"]  # all at once
    assert message["result"] == {"content": [{"type": "text", "text": "Hi! Bob (roots: file:///r)"}]}
