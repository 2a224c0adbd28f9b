"""The official MCP client (mcp 2.3.0, ``mcp.Client``) in its default ``mode="auto"``, which probes
``server/discover`` and adopts 2026-07-28, against our server over stdio and Streamable HTTP.

The server is ``tests/servers/modern_server.py``: one handler object typed with the generated
2025-11-25 package, served by ``run_stdio`` (a subprocess per client) or ``http_app`` under
uvicorn (one subprocess for the module). Most tests run once per transport (``[stdio]`` /
``[http]``) on one client shared by the module per transport; tests that need another client
(a log level, a pinned handshake revision) open their own. Two tests are HTTP only: the
``Mcp-Param-*`` check behind the SDK's header mirroring, and one change reaching both eras
on one server. Values are compared exactly, as the SDK parsed them off the wire
(``exclude_unset`` dumps are what was sent).

The SDK client cannot be told to offer an older revision in ``initialize``: it always offers
``LATEST_HANDSHAKE_VERSION`` (2025-11-25). The 2024-11-05 test patches that module constant
of ``mcp.client.session`` for the duration of the test, which is the only way to pin it.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import mcp.client.session as sdk_session
import mcp_types as types
import pytest
from conftest import free_port, stop_process, wait_listening
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated, ToolsListChanged

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

REPO = Path(__file__).resolve().parent.parent
SERVER = REPO / "tests" / "servers" / "modern_server.py"
MODERN = "2026-07-28"

SERVER_INFO = {"name": "modern-fixture", "version": "1.2.3"}
INSTRUCTIONS = "Fixture server of the 2026-07-28 interop tests."
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
STAMP = {SERVER_INFO_KEY: SERVER_INFO}
CAPABILITIES = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
PUBLIC = {"ttlMs": 60_000, "cacheScope": "public"}
PRIVATE = {"ttlMs": 1_000, "cacheScope": "private"}
COMPLETE = {"resultType": "complete", "_meta": STAMP}

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
README = {"uri": "test://readme", "mimeType": "text/plain", "text": "Read me first."}
CONTENT_BLOCKS = [
    {"type": "text", "text": "hello"},
    {"type": "image", "data": IMAGE, "mimeType": "image/png"},
    {"type": "audio", "data": AUDIO, "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "test://readme", "name": "readme", "mimeType": "text/plain"},
    {"type": "resource", "resource": README},
]
TOOL_NAMES = [
    "content",
    "forecast",
    "lookup",
    "sample",
    "ask_twice",
    "progress",
    "chatty",
    "slow",
    "cancelled",
    "touch",
]
ANSWERS = {"name": "Ada", "colour": "green", "owner": "Grace"}
SAMPLED_MODEL = "fixture-llm"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def wire(model: Any) -> Any:
    """What the server sent: the SDK model dumped with wire names and only the fields parsed."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


async def eventually(condition: Any, timeout: float = 5.0) -> None:
    """Wait until ``condition()`` holds (notifications are handled in their own tasks)."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.01)


# -- the server, once per transport ---------------------------------------------------------


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The fixture server under uvicorn, one process for the module."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop_process(process)


@pytest.fixture(scope="module", params=["stdio", "http"])
def target(request: pytest.FixtureRequest) -> StdioServerParameters | str:
    """What ``mcp.Client`` connects to: a command it starts, or the module's HTTP server."""
    if request.param == "http":
        url: str = request.getfixturevalue("http_url")
        return url
    return StdioServerParameters(
        command=sys.executable, args=[str(SERVER), "--stdio"], cwd=str(REPO)
    )


@dataclass
class Peer:
    """The client side's callbacks: what the server asked for, what it logged."""

    sampled: list[dict[str, Any]] = field(default_factory=list)
    elicited: list[str] = field(default_factory=list)
    logs: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[Any] = field(default_factory=list)

    def clear(self) -> Peer:
        self.sampled.clear()
        self.elicited.clear()
        self.logs.clear()
        self.notifications.clear()
        return self

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(wire(params))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="42"), model=SAMPLED_MODEL
        )

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.elicited.append(params.message)
        (name,) = params.requested_schema["properties"]
        return types.ElicitResult(action="accept", content={name: ANSWERS[name]})

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(wire(params))

    def methods(self) -> list[str]:
        return [n.method for n in self.notifications if not isinstance(n, Exception)]

    async def message(self, message: Any) -> None:
        self.notifications.append(message)

    def client(self, target: StdioServerParameters | str, **options: Any) -> Client:
        return Client(
            target,
            sampling_callback=self.sampling,
            elicitation_callback=self.elicitation,
            logging_callback=self.logging,
            message_handler=self.message,
            **options,
        )


@dataclass
class Connection:
    client: Client
    peer: Peer
    transport: str


@pytest.fixture(scope="module")
async def shared(target: StdioServerParameters | str) -> AsyncIterator[Connection]:
    """One auto-mode client per transport for the whole module (no log level)."""
    peer = Peer()
    async with peer.client(target) as client:
        yield Connection(client, peer, "http" if isinstance(target, str) else "stdio")


@pytest.fixture
def conn(shared: Connection) -> Connection:
    shared.peer.clear()
    return shared


# -- negotiation and discovery --------------------------------------------------------------


async def test_auto_mode_adopts_2026_07_28_from_discover(conn: Connection) -> None:
    client = conn.client
    assert client.protocol_version == MODERN
    assert client.session.initialize_result is None
    assert client.session.discover_result is not None
    assert wire(client.session.discover_result) == {
        "supportedVersions": [MODERN],
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        **PUBLIC,
        **COMPLETE,
    }
    assert client.server_info is not None
    assert wire(client.server_info) == SERVER_INFO
    assert wire(client.server_capabilities) == CAPABILITIES
    assert client.instructions == INSTRUCTIONS


# -- tools ----------------------------------------------------------------------------------


async def test_tools_list_with_schemas_and_cache_hints(conn: Connection) -> None:
    listed = await conn.client.list_tools(cache_mode="refresh")
    tools = {tool.name: wire(tool) for tool in listed.tools}
    assert list(tools) == TOOL_NAMES
    assert {k: v for k, v in wire(listed).items() if k != "tools"} == {**PUBLIC, **COMPLETE}
    assert tools["content"] == {
        "name": "content",
        "description": "Every content block type",
        "inputSchema": {"type": "object", "properties": {}},
    }
    assert tools["forecast"] == {
        "name": "forecast",
        "description": "Structured weather",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "celsius": {"type": "number"},
                "sky": {"type": "string"},
            },
            "required": ["city", "celsius", "sky"],
        },
    }
    assert tools["lookup"]["inputSchema"] == {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    }


async def test_call_tool_returns_every_content_type(conn: Connection) -> None:
    result = await conn.client.call_tool("content")
    assert wire(result) == {"content": CONTENT_BLOCKS, **COMPLETE}


async def test_call_tool_structured_content(conn: Connection) -> None:
    result = await conn.client.call_tool("forecast", {"city": "Oslo"})
    weather = {"city": "Oslo", "celsius": 21.5, "sky": "clear"}
    assert wire(result) == {
        "content": [text(json.dumps(weather))],
        "structuredContent": weather,
        **COMPLETE,
    }


@pytest.mark.parametrize("region", ["eu-north", "Zürich"])
async def test_call_tool_with_header_mirrored_argument(conn: Connection, region: str) -> None:
    """Over HTTP the SDK mirrors ``region`` in ``Mcp-Param-Region`` (Base64 sentinel for
    non-ASCII) and our server checks it against the body."""
    result = await conn.client.call_tool("lookup", {"region": region})
    assert wire(result) == {"content": [text(f"region={region}")], **COMPLETE}


async def test_http_server_checks_the_mirrored_header(http_url: str) -> None:
    """What makes the SDK's ``lookup`` calls over HTTP meaningful: after a tools/list (as the
    SDK client sends one), our server refuses a ``Mcp-Param-Region`` that is missing or
    differs from the body (HTTP 400, -32020), so the calls above carried the right one."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    base = {"accept": "application/json, text/event-stream", "mcp-protocol-version": MODERN}

    def call(region_header: str | None) -> tuple[dict[str, Any], dict[str, str]]:
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "lookup", "arguments": {"region": "eu"}, "_meta": meta},
        }
        headers = {**base, "mcp-method": "tools/call", "mcp-name": "lookup"}
        if region_header is not None:
            headers["mcp-param-region"] = region_header
        return body, headers

    status, _ = await post_json(
        http_url,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
        {**base, "mcp-method": "tools/list"},
    )
    assert status == 200
    for header in ("us", None):
        body, headers = call(header)
        status, refused = await post_json(http_url, body, headers)
        assert status == 400
        assert refused["error"]["code"] == -32020
    body, headers = call("eu")
    status, accepted = await post_json(http_url, body, headers)
    assert status == 200
    assert accepted["result"]["content"] == [text("region=eu")]


async def post_json(url: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
    """One POST with a JSON body and a JSON reply (a blocking client, off the loop)."""

    def post() -> tuple[int, Any]:
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=5)
        try:
            connection.request("POST", parts.path, json.dumps(body),
                               {"content-type": "application/json", **headers})
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()

    return await asyncio.to_thread(post)


async def test_unknown_tool_is_an_error(conn: Connection) -> None:
    with pytest.raises(MCPError) as caught:
        await conn.client.call_tool("nope")
    assert caught.value.code == -32602
    assert caught.value.error.message == "Unknown tool: nope"


# -- resources, prompts, completion ---------------------------------------------------------


async def test_resources_list_read_and_templates(conn: Connection) -> None:
    client = conn.client
    listed = await client.list_resources(cache_mode="refresh")
    assert wire(listed) == {
        "resources": [
            {"uri": "test://readme", "name": "readme", "mimeType": "text/plain"},
            {"uri": "test://logo", "name": "logo", "mimeType": "image/png"},
        ],
        **PUBLIC,
        **COMPLETE,
    }
    templates = await client.list_resource_templates(cache_mode="refresh")
    assert wire(templates) == {
        "resourceTemplates": [
            {"uriTemplate": "test://items/{id}", "name": "item", "mimeType": "application/json"}
        ],
        **PUBLIC,
        **COMPLETE,
    }
    readme = await client.read_resource("test://readme", cache_mode="refresh")
    assert wire(readme) == {"contents": [README], **PRIVATE, **COMPLETE}
    logo = await client.read_resource("test://logo", cache_mode="refresh")
    assert wire(logo) == {
        "contents": [{"uri": "test://logo", "mimeType": "image/png", "blob": IMAGE}],
        **PRIVATE,
        **COMPLETE,
    }
    item = await client.read_resource("test://items/42", cache_mode="refresh")
    assert wire(item) == {
        "contents": [
            {"uri": "test://items/42", "mimeType": "application/json", "text": '{"id": "42"}'}
        ],
        **PRIVATE,
        **COMPLETE,
    }


async def test_prompts_list_and_get(conn: Connection) -> None:
    client = conn.client
    listed = await client.list_prompts(cache_mode="refresh")
    assert wire(listed) == {
        "prompts": [
            {"name": "greet", "description": "A greeting"},
            {
                "name": "summarize",
                "description": "Summarize a topic",
                "arguments": [{"name": "topic", "required": True}],
            },
            {"name": "interview", "description": "Asks the client's LLM for a question first"},
        ],
        **PUBLIC,
        **COMPLETE,
    }
    greet = await client.get_prompt("greet")
    assert wire(greet) == {
        "description": "The greet prompt",
        "messages": [{"role": "user", "content": text("Say hello.")}],
        **COMPLETE,
    }
    summary = await client.get_prompt("summarize", {"topic": "MRTR"})
    assert wire(summary) == {
        "description": "The summarize prompt",
        "messages": [{"role": "user", "content": text("Summarize MRTR.")}],
        **COMPLETE,
    }


async def test_completion_for_prompt_and_template_arguments(conn: Connection) -> None:
    client = conn.client
    prompt = await client.complete(
        types.PromptReference(type="ref/prompt", name="summarize"), {"name": "topic", "value": "m"}
    )
    assert wire(prompt) == {
        "completion": {"values": ["mcp", "metadata", "mrtr"], "total": 3, "hasMore": False},
        **COMPLETE,
    }
    template = await client.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="test://items/{id}"),
        {"name": "id", "value": "1"},
    )
    assert wire(template) == {
        "completion": {"values": ["1", "12"], "total": 2, "hasMore": False},
        **COMPLETE,
    }


# -- multi round-trip requests --------------------------------------------------------------


async def test_mrtr_sampling_answered_by_sampling_callback(conn: Connection) -> None:
    result = await conn.client.call_tool("sample", {"prompt": "What is six times seven?"})
    assert wire(result) == {"content": [text(f"{SAMPLED_MODEL} says 42")], **COMPLETE}
    assert conn.peer.sampled == [
        {
            "messages": [{"role": "user", "content": text("What is six times seven?")}],
            "maxTokens": 50,
        }
    ]


async def test_mrtr_two_elicitation_rounds(conn: Connection) -> None:
    """The handler asks twice; its second question uses the first answer, so the retry of
    round two replayed round one's answer."""
    result = await conn.client.call_tool("ask_twice")
    assert wire(result) == {"content": [text("Ada likes green")], **COMPLETE}
    assert conn.peer.elicited == ["Your name?", "Hello Ada, your favourite colour?"]


async def test_mrtr_rounds_on_the_wire(conn: Connection) -> None:
    """Driving the rounds by hand: each round is an InputRequiredResult with one new input
    request and a sealed requestState, without caching hints; the third call completes."""
    session = conn.client.session
    first = await session.call_tool("ask_twice", allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult)
    one = wire(first)
    assert set(one) == {"resultType", "inputRequests", "requestState", "_meta"}
    assert one["resultType"] == "input_required"
    assert one["_meta"] == STAMP
    assert one["inputRequests"] == {
        "elicitation-1": {
            "method": "elicitation/create",
            "params": {
                "message": "Your name?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
        }
    }
    name: types.InputResponses = {
        "elicitation-1": types.ElicitResult(action="accept", content={"name": "Lin"})
    }
    second = await session.call_tool(
        "ask_twice",
        input_responses=name,
        request_state=first.request_state,
        allow_input_required=True,
    )
    assert isinstance(second, types.InputRequiredResult)
    assert list(wire(second)["inputRequests"]) == ["elicitation-2"]
    assert (
        wire(second)["inputRequests"]["elicitation-2"]["params"]["message"]
        == "Hello Lin, your favourite colour?"
    )
    colour: types.InputResponses = {
        "elicitation-2": types.ElicitResult(action="accept", content={"colour": "blue"})
    }
    third = await session.call_tool(
        "ask_twice",
        input_responses=colour,
        request_state=second.request_state,
        allow_input_required=True,
    )
    assert isinstance(third, types.CallToolResult)
    assert wire(third) == {"content": [text("Lin likes blue")], **COMPLETE}
    assert conn.peer.elicited == []  # nothing went through the callback


async def test_mrtr_tampered_request_state_is_rejected(conn: Connection) -> None:
    session = conn.client.session
    first = await session.call_tool("ask_twice", allow_input_required=True)
    assert isinstance(first, types.InputRequiredResult) and first.request_state
    state = first.request_state
    tampered = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
    with pytest.raises(MCPError) as caught:
        await session.call_tool(
            "ask_twice",
            input_responses={
                "elicitation-1": types.ElicitResult(action="accept", content={"name": "Eve"})
            },
            request_state=tampered,
            allow_input_required=True,
        )
    assert caught.value.code == -32602


async def test_mrtr_on_resources_read_and_prompts_get(conn: Connection) -> None:
    client = conn.client
    private = await client.read_resource("test://private")
    assert wire(private) == {
        "contents": [{"uri": "test://private", "mimeType": "text/plain", "text": "for Grace"}],
        **PRIVATE,
        **COMPLETE,
    }
    interview = await client.get_prompt("interview")
    assert wire(interview) == {
        "description": "The interview prompt",
        "messages": [{"role": "user", "content": text(f"Ask: {SAMPLED_MODEL} says 42")}],
        **COMPLETE,
    }
    assert conn.peer.elicited == ["Who is reading?"]
    assert conn.peer.sampled == [
        {"messages": [{"role": "user", "content": text("one interview question")}], "maxTokens": 50}
    ]


# -- subscriptions/listen -------------------------------------------------------------------


async def test_listen_receives_tools_list_changed_only(conn: Connection) -> None:
    client = conn.client
    async with client.listen(tools_list_changed=True) as subscription:
        assert wire(subscription.honored) == {"toolsListChanged": True}
        # a prompts change first: not opted in, so the first event must be the tools change
        assert texts(await client.call_tool("touch", {"what": "prompts"})) == ["touched prompts"]
        assert texts(await client.call_tool("touch", {"what": "tools"})) == ["touched tools"]
        with anyio.fail_after(5):
            event = await subscription.__anext__()
        assert event == ToolsListChanged()


async def test_listen_receives_resource_updated(conn: Connection) -> None:
    client = conn.client
    async with client.listen(resource_subscriptions=["test://readme"]) as subscription:
        assert wire(subscription.honored) == {"resourceSubscriptions": ["test://readme"]}
        await client.call_tool("touch", {"what": "test://logo"})
        await client.call_tool("touch", {"what": "test://readme"})
        with anyio.fail_after(5):
            event = await subscription.__anext__()
        assert event == ResourceUpdated(uri="test://readme")


# -- progress, logging, cancellation --------------------------------------------------------


async def test_progress_callback_receives_increasing_values(conn: Connection) -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    result = await conn.client.call_tool("progress", progress_callback=progress)
    assert texts(result) == ["progressed"]
    await eventually(lambda: len(updates) == 3)
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


async def test_no_log_messages_without_a_log_level(conn: Connection) -> None:
    """A logging_callback alone is no opt-in: the shared client sets no log level."""
    assert texts(await conn.client.call_tool("chatty")) == ["logged"]
    await conn.client.call_tool("content")  # one more round trip for anything in flight
    await anyio.sleep(0.1)
    assert conn.peer.logs == []


async def test_per_request_log_level_in_meta(conn: Connection) -> None:
    result = await conn.client.call_tool(
        "chatty", meta=cast(types.RequestParamsMeta, {LOG_LEVEL_KEY: "warning"})
    )
    assert texts(result) == ["logged"]
    await eventually(lambda: len(conn.peer.logs) == 2)
    assert conn.peer.logs == [
        {"level": "warning", "logger": "chatty", "data": "warning message"},
        {"level": "error", "logger": "chatty", "data": "error message"},
    ]


async def test_client_log_level_opts_in(target: StdioServerParameters | str) -> None:
    peer = Peer()
    async with peer.client(target, log_level="info") as client:
        assert texts(await client.call_tool("chatty")) == ["logged"]
        await eventually(lambda: len(peer.logs) == 3)
        await anyio.sleep(0.05)
    assert peer.logs == [
        {"level": "info", "logger": "chatty", "data": "info message"},
        {"level": "warning", "logger": "chatty", "data": "warning message"},
        {"level": "error", "logger": "chatty", "data": "error message"},
    ]


async def cancelled_labels(client: Client) -> dict[str, list[str]]:
    result = await client.call_tool("cancelled")
    return json.loads(texts(result)[0])  # type: ignore[no-any-return]


async def wait_cancelled(client: Client, label: str) -> None:
    with anyio.fail_after(5):
        while True:
            labels = await cancelled_labels(client)
            if label in labels["cancelled"]:
                return
            await anyio.sleep(0.05)


async def test_read_timeout_cancels_the_handler(conn: Connection) -> None:
    label = f"timeout-{conn.transport}"
    with pytest.raises(MCPError) as caught:
        await conn.client.call_tool("slow", {"label": label}, read_timeout_seconds=0.5)
    assert caught.value.code == types.REQUEST_TIMEOUT
    await wait_cancelled(conn.client, label)
    assert label in (await cancelled_labels(conn.client))["started"]


async def test_abandoned_call_cancels_the_handler(conn: Connection) -> None:
    """Leaving the call (a cancelled scope): stdio sends notifications/cancelled, HTTP
    closes the request's stream; either way the handler sees CancelledError."""
    label = f"scope-{conn.transport}"
    with anyio.move_on_after(0.5) as scope:
        await conn.client.call_tool("slow", {"label": label})
    assert scope.cancelled_caught
    await wait_cancelled(conn.client, label)


async def test_streamed_call_abandoned_cancels_the_handler(conn: Connection) -> None:
    """The same with a progress token, so over HTTP the reply is an SSE stream."""
    label = f"stream-{conn.transport}"

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        pass

    with anyio.move_on_after(0.5) as scope:
        await conn.client.call_tool("slow", {"label": label}, progress_callback=progress)
    assert scope.cancelled_caught
    await wait_cancelled(conn.client, label)


async def test_a_finished_slow_call_is_not_cancelled(conn: Connection) -> None:
    label = f"quick-{conn.transport}"
    result = await conn.client.call_tool("slow", {"label": label, "seconds": 0.01})
    assert texts(result) == [f"{label} finished"]
    labels = await cancelled_labels(conn.client)
    assert label in labels["started"] and label not in labels["cancelled"]


# -- the same server, handshake era ---------------------------------------------------------


LEGACY_CAPABILITIES = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True},
    "tools": {"listChanged": True},
}


async def test_legacy_mode_negotiates_2025_11_25_on_the_same_server(
    target: StdioServerParameters | str,
) -> None:
    peer = Peer()
    async with peer.client(target, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.session.discover_result is None
        assert client.session.initialize_result is not None
        assert wire(client.session.initialize_result) == {
            "protocolVersion": "2025-11-25",
            "capabilities": LEGACY_CAPABILITIES,
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == TOOL_NAMES
        assert "ttlMs" not in wire(listed) and "resultType" not in wire(listed)
        assert wire(await client.call_tool("content")) == {"content": CONTENT_BLOCKS}
        # the same handler's ctx.peer.create_message is a real server-to-client request here
        sampled = await client.call_tool("sample", {"prompt": "legacy?"})
        assert wire(sampled) == {"content": [text(f"{SAMPLED_MODEL} says 42")]}
        assert peer.sampled == [
            {"messages": [{"role": "user", "content": text("legacy?")}], "maxTokens": 50}
        ]
        # ctx.peer.send_tool_list_changed() reaches a handshake session as a notification
        assert texts(await client.call_tool("touch", {"what": "tools"})) == ["touched tools"]
        await eventually(lambda: "notifications/tools/list_changed" in peer.methods())
        with pytest.raises(ListenNotSupportedError):
            async with client.listen(tools_list_changed=True):
                pass


async def test_one_change_reaches_both_eras(http_url: str) -> None:
    """One HTTP server, both eras at once: a change announced inside a 2026-07-28 request
    reaches a 2026-07-28 listen stream and a 2025-11-25 session (one ChangeFeed)."""
    peer = Peer()
    async with Client(http_url) as modern, peer.client(http_url, mode="legacy") as legacy:
        assert (modern.protocol_version, legacy.protocol_version) == (MODERN, "2025-11-25")
        async with modern.listen(tools_list_changed=True) as subscription:
            assert texts(await modern.call_tool("touch", {"what": "tools"})) == ["touched tools"]
            with anyio.fail_after(5):
                event = await subscription.__anext__()
            assert event == ToolsListChanged()
        await eventually(lambda: "notifications/tools/list_changed" in peer.methods())


async def test_2024_11_05_handshake_when_the_client_is_pinned(
    target: StdioServerParameters | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No public option pins the SDK client's offer; patching its constant does."""
    monkeypatch.setattr(sdk_session, "LATEST_HANDSHAKE_VERSION", "2024-11-05")
    peer = Peer()
    async with peer.client(target, mode="legacy") as client:
        assert client.protocol_version == "2024-11-05"
        assert client.session.initialize_result is not None
        assert wire(client.session.initialize_result) == {
            "protocolVersion": "2024-11-05",
            "capabilities": {
                "logging": {},
                "prompts": {"listChanged": True},
                "resources": {"listChanged": True},
                "tools": {"listChanged": True},
            },
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,  # in the 2024-11-05 schema already
        }
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == TOOL_NAMES
        assert "outputSchema" not in wire(listed.tools[1])
        result = await client.call_tool("lookup", {"region": "eu"})
        assert wire(result) == {"content": [text("region=eu")]}
        # audio and resource_link blocks do not exist in 2024-11-05
        content = await client.call_tool("content")
        assert wire(content) == {
            "content": [CONTENT_BLOCKS[0], CONTENT_BLOCKS[1], CONTENT_BLOCKS[4]]
        }


async def test_a_change_announced_in_a_handshake_session_reaches_listen_streams(
    http_url: str,
) -> None:
    """The other way round: ``ctx.peer.send_tool_list_changed()`` in a 2025-11-25 session goes
    to that session's client and, through the ChangeFeed, to 2026-07-28 listen streams."""
    peer = Peer()
    async with Client(http_url) as modern, peer.client(http_url, mode="legacy") as legacy:
        async with modern.listen(tools_list_changed=True) as subscription:
            assert texts(await legacy.call_tool("touch", {"what": "tools"})) == ["touched tools"]
            with anyio.fail_after(5):
                event = await subscription.__anext__()
            assert event == ToolsListChanged()
        await eventually(lambda: "notifications/tools/list_changed" in peer.methods())
        assert peer.methods().count("notifications/tools/list_changed") == 1  # not echoed twice
