"""Our generated client against a server built on the official SDK (mcp 2.3.0), over stdio.

The peer is ``tests/peers/sdk_server.py`` (the SDK's low-level ``Server``), started by our
runtime's ``connect_stdio``. The SDK validates everything we send against the negotiated
revision, and everything it sends back is compared exactly here, dumped from our typed
results (``exclude_unset`` dumps are what arrived on the wire). Server -> client requests
(sampling, elicitation, roots) are answered by a ``ClientHandlers`` subclass.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

import mcp_generated.v2025_03_26
import mcp_generated.v2025_06_18
import mcp_generated.v2025_11_25
from typedmcp.connecting import connect_stdio
from typedmcp.engine.jsonrpc import CapabilityError, RpcError
from typedmcp.protocol.stubs import RequestContext
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import Client, ClientHandlers

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parent.parent
PEER = [sys.executable, str(REPO / "tests" / "peers" / "sdk_server.py")]
LATEST = mcp_generated.v2025_11_25
SERVER_INFO = {"name": "sdk-peer", "version": "2.3.0-test"}
INSTRUCTIONS = "Official-SDK peer for mcp-codegen's interop tests."
SERVER_CAPABILITIES = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": False},
    "resources": {"listChanged": False, "subscribe": True},
    "tools": {"listChanged": True},
}
CLIENT_INFO = {"name": "mcp-codegen-interop", "version": "9.9.9"}
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
SAMPLED = "sampled by mcp-codegen"
ROOTS = [{"uri": "file:///work/project", "name": "project"}, {"uri": "file:///tmp/scratch"}]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def wire(value: Any) -> Any:
    """Wire form of a typed result: wire names, only the fields that arrived."""
    return value.model_dump(mode="json", by_alias=True, exclude_unset=True)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def texts(result: Any) -> list[str]:
    """The text blocks of a tool result (of whichever revision's package was negotiated)."""
    return [block.text for block in result.content if block.type == "text"]


class Recorder(ClientHandlers):
    """Answers sampling, elicitation and roots; records every notification."""

    def __init__(self) -> None:
        self.sampled: list[dict[str, Any]] = []
        self.typed: list[Any] = []  # the params objects the handlers were given
        self.elicited: list[dict[str, Any]] = []
        self.roots_requests = 0
        self.logs: list[dict[str, Any]] = []
        self.progress: list[dict[str, Any]] = []
        self.tools_changed = 0
        self.updated: list[str] = []

    async def create_message(
        self, params: models.CreateMessageRequestParams, ctx: RequestContext[Client]
    ) -> models.CreateMessageResult:
        self.sampled.append(wire(params))
        self.typed.append(params)
        return models.CreateMessageResult(
            role="assistant",
            content=models.TextContent(type="text", text=SAMPLED),
            model="codegen-model",
            stop_reason="endTurn",
        )

    async def elicit(
        self, params: models.ElicitRequestParams, ctx: RequestContext[Client]
    ) -> models.ElicitResult:
        self.elicited.append(wire(params))
        return models.ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    async def list_roots(
        self, params: models.RequestParams | None, ctx: RequestContext[Client]
    ) -> models.ListRootsResult:
        self.roots_requests += 1
        return models.ListRootsResult.model_validate({"roots": ROOTS})

    async def on_logging_message(
        self, params: models.LoggingMessageNotificationParams, ctx: RequestContext[Client]
    ) -> None:
        self.logs.append(wire(params))

    async def on_progress(
        self, params: models.ProgressNotificationParams, ctx: RequestContext[Client]
    ) -> None:
        self.progress.append(wire(params))

    async def on_tool_list_changed(
        self, params: models.NotificationParams | None, ctx: RequestContext[Client]
    ) -> None:
        self.tools_changed += 1

    async def on_resource_updated(
        self, params: models.ResourceUpdatedNotificationParams, ctx: RequestContext[Client]
    ) -> None:
        self.updated.append(params.uri)


@asynccontextmanager
async def connect(
    handlers: ClientHandlers | None = None,
    protocol: ModuleType | Sequence[ModuleType] = LATEST,
    peer_version: str | None = None,
    **options: Any,
) -> AsyncIterator[Client]:
    """Start the SDK peer and connect our typed client to it."""
    env = dict(os.environ)
    if peer_version is not None:
        env["PEER_PROTOCOL_VERSION"] = peer_version
    async with connect_stdio(
        PEER, protocol=protocol, handlers=handlers, env=env, client_info=CLIENT_INFO, **options
    ) as client:
        yield client


async def eventually(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    """Wait until ``condition()`` holds (notification handlers run in their own tasks)."""
    with anyio.fail_after(timeout):
        while not condition():
            await asyncio.sleep(0.01)


@pytest.fixture(scope="module")
async def shared() -> AsyncIterator[Client]:
    """One connection for the read-only tests (starting the SDK peer takes about a second)."""
    async with connect(Recorder(), list_changed=["roots"]) as client:
        yield client


# -- handshake --------------------------------------------------------------------------------


async def test_handshake_negotiates_2025_11_25_with_exact_info_and_capabilities() -> None:
    async with connect(Recorder(), list_changed=["roots"]) as client:
        session = client.session
        assert session.protocol_version == "2025-11-25"
        assert session.server_info == SERVER_INFO
        assert session.instructions == INSTRUCTIONS
        assert session.peer_capabilities == SERVER_CAPABILITIES
        assert session.own_capabilities == {
            "elicitation": {},
            "roots": {"listChanged": True},
            "sampling": {},
        }
        declared = await client.call_tool(name="client_info")
    # What the SDK server recorded from our initialize request.
    assert [json.loads(t) for t in texts(declared)[:2]] == [
        CLIENT_INFO,
        {"elicitation": {}, "roots": {"listChanged": True}, "sampling": {}},
    ]
    assert texts(declared)[2] == "2025-11-25"


async def test_a_client_without_handlers_declares_no_capabilities() -> None:
    async with connect() as client:
        assert client.session.own_capabilities == {}
        declared = await client.call_tool(name="client_info")
        assert [json.loads(t) for t in texts(declared)[:2]] == [CLIENT_INFO, {}]
        assert wire(await client.ping()) == {}


@pytest.mark.parametrize(
    "package", [mcp_generated.v2025_03_26, mcp_generated.v2025_06_18], ids=lambda p: p.PROTOCOL_VERSION
)
async def test_an_older_package_negotiates_its_revision(package: ModuleType) -> None:
    async with connect(protocol=package) as client:
        assert client.session.protocol_version == package.PROTOCOL_VERSION
        assert client.session.server_info == SERVER_INFO
        result = await client.call_tool(name="text")
        assert wire(result) == {"content": [text("Hello from the SDK server")]}
        declared = await client.call_tool(name="client_info")
        assert texts(declared)[2] == package.PROTOCOL_VERSION


async def test_client_accepts_an_older_revision_answered_by_the_server() -> None:
    packages = [mcp_generated.v2025_11_25, mcp_generated.v2025_06_18, mcp_generated.v2025_03_26]
    async with connect(Recorder(), protocol=packages, peer_version="2025-06-18") as client:
        assert client.session.protocol_version == "2025-06-18"
        result = await client.call_tool(name="text")
        assert wire(result) == {"content": [text("Hello from the SDK server")]}
        declared = await client.call_tool(name="client_info")
        assert texts(declared)[2] == "2025-06-18"


async def test_typed_model_arguments_work_after_a_downgrade() -> None:
    """The typed Client comes from the newest package; its model arguments must still be sent."""
    packages = [mcp_generated.v2025_11_25, mcp_generated.v2025_06_18]
    async with connect(Recorder(), protocol=packages, peer_version="2025-06-18") as client:
        assert client.session.protocol_version == "2025-06-18"
        completed = await client.complete(
            ref=models.PromptReference(type="ref/prompt", name="greet"),
            argument=models.CompleteRequestParamsArgument(name="who", value="al"),
        )
        assert wire(completed) == {"completion": {"values": ["alice", "albert"], "total": 2, "hasMore": False}}


async def test_typed_values_after_a_downgrade_are_the_client_packages_models() -> None:
    """``Client`` and ``ClientHandlers`` are annotated with 2025-11-25 models; after the server
    answers 2025-06-18, results and handler params must still be instances of those types."""
    recorder = Recorder()
    packages = [mcp_generated.v2025_11_25, mcp_generated.v2025_06_18]
    async with connect(recorder, protocol=packages, peer_version="2025-06-18") as client:
        result = await client.call_tool(name="sample", arguments={"prompt": "hi"})
    assert texts(result) == [f"codegen-model/assistant/endTurn: {SAMPLED}"]
    assert isinstance(result, models.CallToolResult)
    assert isinstance(result.content[0], models.TextContent)
    assert isinstance(recorder.typed[0], models.CreateMessageRequestParams)


async def test_a_revision_the_client_does_not_speak_fails_the_handshake() -> None:
    with pytest.raises(Exception, match="2025-06-18"):
        async with connect(protocol=mcp_generated.v2025_11_25, peer_version="2025-06-18"):
            pass


# -- tools ------------------------------------------------------------------------------------


async def test_tools_list(shared: Client) -> None:
    listed = await shared.list_tools()
    tools = {tool.name: wire(tool) for tool in listed.tools}
    assert list(tools)[:7] == ["text", "image", "audio", "embedded", "link", "structured", "fail"]
    assert tools["text"] == {
        "name": "text",
        "description": "One text block",
        "inputSchema": {"type": "object", "properties": {}},
    }
    assert tools["structured"] == {
        "name": "structured",
        "title": "Structured weather",
        "description": "Structured content with an output schema",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "outputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"],
        },
    }


TOOL_RESULTS: list[tuple[str, dict[str, Any] | None, dict[str, Any]]] = [
    ("text", None, {"content": [text("Hello from the SDK server")]}),
    ("image", None, {"content": [{"type": "image", "data": IMAGE, "mimeType": "image/png"}]}),
    ("audio", None, {"content": [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]}),
    (
        "embedded",
        None,
        {
            "content": [
                {"type": "resource", "resource": {"uri": "sdk://text", "mimeType": "text/plain", "text": "embedded text"}},
                {"type": "resource", "resource": {"uri": "sdk://blob", "mimeType": "image/png", "blob": IMAGE}},
            ]
        },
    ),
    (
        "link",
        None,
        {"content": [{"type": "resource_link", "uri": "sdk://text", "name": "text", "mimeType": "text/plain"}]},
    ),
    (
        "structured",
        {"city": "Oslo"},
        {
            "content": [text('{"city": "Oslo", "celsius": 21.5}')],
            "structuredContent": {"city": "Oslo", "celsius": 21.5},
        },
    ),
    ("fail", None, {"content": [text("the SDK tool failed")], "isError": True}),
]


async def test_every_tool_content_type_arrives_typed_and_exact(shared: Client) -> None:
    for name, arguments, expected in TOOL_RESULTS:
        result = await shared.call_tool(name=name, arguments=arguments)
        assert isinstance(result, models.CallToolResult)
        assert wire(result) == expected, name
    image = await shared.call_tool(name="image")
    assert isinstance(image.content[0], models.ImageContent)
    link = await shared.call_tool(name="link")
    assert isinstance(link.content[0], models.ResourceLink)
    embedded = await shared.call_tool(name="embedded")
    assert isinstance(embedded.content[1], models.EmbeddedResource)
    assert isinstance(embedded.content[1].resource, models.BlobResourceContents)


async def test_unknown_tool_raises_the_sdk_error(shared: Client) -> None:
    with pytest.raises(RpcError) as raised:
        await shared.call_tool(name="nope")
    assert (raised.value.code, raised.value.message) == (-32602, "Unknown tool: nope")


# -- resources, prompts, completion -------------------------------------------------------------


async def test_resources_list_read_and_templates(shared: Client) -> None:
    listed = await shared.list_resources()
    assert wire(listed) == {
        "resources": [
            {"uri": "sdk://text", "name": "text", "mimeType": "text/plain"},
            {"uri": "sdk://blob", "name": "blob", "description": "A PNG", "mimeType": "image/png"},
        ]
    }
    templates = await shared.list_resource_templates()
    assert wire(templates) == {
        "resourceTemplates": [{"uriTemplate": "sdk://items/{id}", "name": "item", "mimeType": "application/json"}]
    }
    assert wire(await shared.read_resource(uri="sdk://text")) == {
        "contents": [{"uri": "sdk://text", "mimeType": "text/plain", "text": "SDK text resource"}]
    }
    blob = await shared.read_resource(uri="sdk://blob")
    assert wire(blob) == {"contents": [{"uri": "sdk://blob", "mimeType": "image/png", "blob": IMAGE}]}
    assert isinstance(blob.contents[0], models.BlobResourceContents)
    assert wire(await shared.read_resource(uri="sdk://items/42")) == {
        "contents": [{"uri": "sdk://items/42", "mimeType": "application/json", "text": '{"id": "42"}'}]
    }
    with pytest.raises(RpcError) as raised:
        await shared.read_resource(uri="sdk://missing")
    assert (raised.value.code, raised.value.message) == (-32002, "Resource not found: sdk://missing")


async def test_prompts_list_and_get(shared: Client) -> None:
    assert wire(await shared.list_prompts()) == {
        "prompts": [
            {"name": "greet", "description": "Greets someone", "arguments": [{"name": "who", "required": True}]},
            {"name": "picture", "description": "An image prompt"},
        ]
    }
    assert wire(await shared.get_prompt(name="greet", arguments={"who": "Ada"})) == {
        "description": "A greeting",
        "messages": [
            {"role": "user", "content": text("Say hello to Ada")},
            {"role": "assistant", "content": text("Hello!")},
        ],
    }
    picture = await shared.get_prompt(name="picture")
    assert wire(picture) == {
        "messages": [{"role": "user", "content": {"type": "image", "data": IMAGE, "mimeType": "image/png"}}]
    }
    assert isinstance(picture.messages[0].content, models.ImageContent)


async def test_completion(shared: Client) -> None:
    completed = await shared.complete(
        ref=models.PromptReference(type="ref/prompt", name="greet"),
        argument=models.CompleteRequestParamsArgument(name="who", value="al"),
    )
    assert wire(completed) == {"completion": {"values": ["alice", "albert"], "total": 2, "hasMore": False}}


# -- subscriptions, logging, progress -----------------------------------------------------------


async def test_subscribe_then_resource_updates_reach_on_resource_updated() -> None:
    recorder = Recorder()
    async with connect(recorder) as client:
        assert wire(await client.subscribe(uri="sdk://text")) == {}
        assert texts(await client.call_tool(name="touch")) == ["touched 1"]
        await eventually(lambda: recorder.updated == ["sdk://text"])
        assert wire(await client.unsubscribe(uri="sdk://text")) == {}
        assert texts(await client.call_tool(name="touch")) == ["touched 0"]
        await client.ping()
        assert recorder.updated == ["sdk://text"]


async def test_set_level_then_log_messages_reach_on_logging_message() -> None:
    recorder = Recorder()
    async with connect(recorder) as client:
        assert wire(await client.set_level(level="warning")) == {}
        assert texts(await client.call_tool(name="log")) == ["logged"]
        await eventually(lambda: len(recorder.logs) >= 2)
        assert recorder.logs == [
            {"level": "warning", "logger": "sdk-peer", "data": {"message": "second"}},
            {"level": "error", "logger": "sdk-peer", "data": {"message": "third"}},
        ]


async def test_progress_for_our_token_reaches_on_progress() -> None:
    recorder = Recorder()
    async with connect(recorder) as client:
        result = await client.call_tool(name="progress", meta=models.ParamsMeta(progress_token="p-1"))
        assert texts(result) == ["progressed"]
        await eventually(lambda: len(recorder.progress) >= 3)
    assert recorder.progress == [
        {"progressToken": "p-1", "progress": 1, "total": 3, "message": "step 1"},
        {"progressToken": "p-1", "progress": 2, "total": 3, "message": "step 2"},
        {"progressToken": "p-1", "progress": 3, "total": 3, "message": "step 3"},
    ]


# -- server -> client requests ------------------------------------------------------------------


async def test_sampling_elicitation_and_roots_are_answered_by_our_handlers() -> None:
    recorder = Recorder()
    async with connect(recorder, list_changed=["roots"]) as client:
        sampled = await client.call_tool(name="sample", arguments={"prompt": "Say hi"})
        elicited = await client.call_tool(name="elicit", arguments={"message": "Who are you?"})
        roots = await client.call_tool(name="roots")
    assert recorder.sampled == [
        {
            "messages": [{"role": "user", "content": text("Say hi")}],
            "systemPrompt": "Be brief.",
            "maxTokens": 64,
        }
    ]
    assert wire(sampled) == {"content": [text(f"codegen-model/assistant/endTurn: {SAMPLED}")]}
    assert recorder.elicited == [
        {
            "mode": "form",
            "message": "Who are you?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                "required": ["name", "age"],
            },
        }
    ]
    assert wire(elicited) == {"content": [text('accept {"age": 36, "name": "Ada"}')]}
    assert recorder.roots_requests == 1
    assert wire(roots) == {"content": [text("file:///work/project project"), text("file:///tmp/scratch None")]}


async def test_without_handlers_server_requests_get_method_not_found() -> None:
    """The SDK sends them regardless of our capabilities and passes our -32601 back up."""
    async with connect() as client:
        for name, arguments, method in [
            ("sample", {"prompt": "x"}, "sampling/createMessage"),
            ("elicit", {"message": "x"}, "elicitation/create"),
            ("roots", None, "roots/list"),
        ]:
            with pytest.raises(RpcError) as raised:
                await client.call_tool(name=name, arguments=arguments)
            assert (raised.value.code, raised.value.message) == (-32601, f"Method not found: {method}")


# -- cancellation and list_changed --------------------------------------------------------------


async def cancelled_on_the_server(client: Client) -> list[Any]:
    """Ids of the ``slow`` calls the SDK server saw cancelled (it applies a cancel in a task)."""
    with anyio.fail_after(3):
        while True:
            result = await client.call_tool(name="cancelled")
            ids: list[Any] = json.loads(texts(result)[0])
            if ids:
                return ids
            await asyncio.sleep(0.02)


async def test_our_timeout_sends_notifications_cancelled_to_the_sdk_server() -> None:
    async with connect(request_timeout=1.0) as client:
        with pytest.raises(asyncio.TimeoutError):
            await client.call_tool(name="slow", arguments={"durationMs": 10_000})
        # Request 1 was initialize, so the slow call was request 2.
        assert await cancelled_on_the_server(client) == [2]
        assert texts(await client.call_tool(name="text")) == ["Hello from the SDK server"]


async def test_cancelling_our_waiting_call_sends_notifications_cancelled() -> None:
    async with connect() as client:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.call_tool(name="slow", arguments={"durationMs": 10_000}), 0.5)
        assert await cancelled_on_the_server(client) == [2]


async def test_tool_list_changed_reaches_on_tool_list_changed() -> None:
    recorder = Recorder()
    async with connect(recorder) as client:
        assert texts(await client.call_tool(name="change_tools")) == ["sent"]
        await eventually(lambda: recorder.tools_changed == 1)
        await client.ping()
        assert recorder.tools_changed == 1


async def test_a_request_the_server_did_not_declare_is_refused_locally() -> None:
    async with connect(protocol=mcp_generated.v2025_11_25) as client:
        # The peer serves no tasks: tasks/list is gated on the server's tasks capability.
        with pytest.raises(CapabilityError):
            await client.list_tasks()
