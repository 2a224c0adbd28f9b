"""Interop over Streamable HTTP with the official SDK (mcp 2.3.0), both ways.

(a) The SDK's client (``streamable_http_client`` + ``ClientSession``) against our conformance
    server (``examples/conformance_server.py --port P``, a subprocess), pinned with
    ``--protocol`` so 2025-03-26 and 2025-06-18 are negotiated as well as 2025-11-25.
(b) Our client (``connect_http``) against the SDK's low-level ``Server`` served by its own
    Starlette app under uvicorn (``tests/peers/sdk_http_server.py``, a subprocess).

The expected values are those of the stdio interop tests (``test_interop_sdk_client.py`` and
``test_interop_sdk_server.py``): the same servers must give the same answers over HTTP.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import free_port, read_port, stop_process, wait_listening
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from test_http_server import ACCEPT, raw
from test_interop_sdk_client import (
    CAPABILITIES,
    IMAGE_BLOCK,
    INSTRUCTIONS,
    SAMPLED_TEXT,
    SERVER_INFO,
    TOOL_NAMES,
    TOOL_RESULTS,
    USER_FORM,
    Inbox,
    eventually,
    text,
    wire,
)
from test_interop_sdk_server import CLIENT_INFO, SAMPLED, SERVER_CAPABILITIES, Recorder, texts
from test_interop_sdk_server import INSTRUCTIONS as SDK_INSTRUCTIONS
from test_interop_sdk_server import SERVER_INFO as SDK_SERVER_INFO
from test_interop_sdk_server import TOOL_RESULTS as SDK_TOOL_RESULTS

import mcp_generated.v2025_03_26
import mcp_generated.v2025_06_18
import mcp_generated.v2025_11_25
from typedmcp.connecting import connect_http
from typedmcp.engine.jsonrpc import RpcError
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import Client

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

REPO = Path(__file__).resolve().parent.parent
CONFORMANCE_SERVER = REPO / "examples" / "conformance_server.py"
SDK_PEER = REPO / "tests" / "peers" / "sdk_http_server.py"
REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25")
LATEST = mcp_generated.v2025_11_25


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- subprocess servers --------------------------------------------------------------------------


def stop(process: subprocess.Popen[bytes]) -> None:
    stop_process(process, strict=True)


@pytest.fixture(scope="module")
def ours() -> Iterator[dict[str, str]]:
    """Our conformance server, once per pinned revision ("latest": every revision offered)."""
    processes, urls = [], {}
    for revision in ("latest", *REVISIONS[:2]):
        port = free_port()
        args = [sys.executable, str(CONFORMANCE_SERVER), "--port", str(port)]
        if revision != "latest":
            args += ["--protocol", revision]
        process = subprocess.Popen(args, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        processes.append((process, port))
        urls[revision] = f"http://127.0.0.1:{port}/mcp"
    urls["2025-11-25"] = urls["latest"]
    try:
        for process, port in processes:
            wait_listening(process, port)
        yield urls
    finally:
        for process, _ in processes:
            stop(process)


@pytest.fixture(scope="module")
def sdk() -> Iterator[dict[str, str]]:
    """The SDK peer: as is, answering 2025-06-18 whatever is offered, and in JSON mode."""
    variants = {
        "plain": {},
        "2025-06-18": {"PEER_PROTOCOL_VERSION": "2025-06-18"},
        "json": {"PEER_JSON_RESPONSE": "1"},
    }
    processes = {}
    for name, extra in variants.items():
        processes[name] = subprocess.Popen(
            [sys.executable, str(SDK_PEER)],
            cwd=REPO,
            env={**os.environ, **extra},
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
    try:
        yield {name: f"http://127.0.0.1:{read_port(process)}/mcp" for name, process in processes.items()}
    finally:
        for process in processes.values():
            stop(process)


# == (a) the official client against our server ====================================================


@asynccontextmanager
async def sdk_client(url: str, **callbacks: Any) -> AsyncIterator[ClientSession]:
    """The SDK's Streamable HTTP client and session, initialized."""
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write, **callbacks) as session,
    ):
        await session.initialize()
        yield session


@pytest.mark.parametrize("revision", REVISIONS)
async def test_sdk_client_handshake_at_each_revision(ours: dict[str, str], revision: str) -> None:
    async with sdk_client(ours[revision]) as session:
        assert session.protocol_version == revision
        assert session.initialize_result is not None
        assert wire(session.initialize_result) == {
            "protocolVersion": revision,
            "capabilities": CAPABILITIES,
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }
        assert wire(await session.send_ping()) == {}


@pytest.mark.parametrize("revision", REVISIONS)
async def test_sdk_client_gets_every_tool_content_type_exactly(ours: dict[str, str], revision: str) -> None:
    async with sdk_client(ours[revision]) as session:
        listed = await session.list_tools()
        assert [tool.name for tool in listed.tools] == TOOL_NAMES
        for name, arguments, expected in TOOL_RESULTS:
            result = await session.call_tool(name, arguments)
            assert wire(result) == expected, (revision, name)
        with pytest.raises(MCPError) as raised:
            await session.call_tool("no_such_tool")
        assert (raised.value.error.code, raised.value.error.message) == (-32602, "Unknown tool: no_such_tool")


async def test_sdk_client_resources_and_subscription(ours: dict[str, str]) -> None:
    inbox = Inbox()
    async with sdk_client(ours["latest"], message_handler=inbox.message) as session:
        listed = await session.list_resources()
        assert [r.uri for r in listed.resources] == [
            "test://static-text",
            "test://static-binary",
            "test://watched-resource",
            "skill://pdf-processing/SKILL.md",  # the skill's files (SEP-2640)
            "skill://pdf-processing/references/FORMS.md",
        ]
        templates = await session.list_resource_templates()
        assert [wire(t) for t in templates.resource_templates] == [
            {
                "uriTemplate": "test://template/{id}/data",
                "name": "template",
                "description": "A resource template with an id parameter",
                "mimeType": "application/json",
            }
        ]
        assert wire(await session.read_resource("test://static-binary")) == {
            "contents": [{"uri": "test://static-binary", "mimeType": "image/png", "blob": IMAGE_BLOCK["data"]}]
        }
        assert wire(await session.read_resource("test://template/7/data")) == {
            "contents": [
                {
                    "uri": "test://template/7/data",
                    "mimeType": "application/json",
                    "text": '{"id": "7", "templateTest": true, "data": "Data for ID: 7"}',
                }
            ]
        }
        with pytest.raises(MCPError) as raised:
            await session.read_resource("test://missing")
        assert (raised.value.error.code, raised.value.error.data) == (-32002, {"uri": "test://missing"})
        assert wire(await session.subscribe_resource("test://watched-resource")) == {}
        await session.call_tool("test_update_watched_resource", {"content": "over http"})
        await eventually(lambda: "notifications/resources/updated" in inbox.methods())
        assert wire(await session.read_resource("test://watched-resource"))["contents"][0]["text"] == "over http"
        assert wire(await session.unsubscribe_resource("test://watched-resource")) == {}
        await session.call_tool("test_update_watched_resource", {"content": "unheard"})
        await session.send_ping()
        assert inbox.methods().count("notifications/resources/updated") == 1


async def test_sdk_client_prompts(ours: dict[str, str]) -> None:
    async with sdk_client(ours["latest"]) as session:
        listed = await session.list_prompts()
        assert [p.name for p in listed.prompts] == [
            "test_simple_prompt",
            "test_prompt_with_arguments",
            "test_prompt_with_embedded_resource",
            "test_prompt_with_image",
            "test_input_required_result_prompt",
        ]
        with_args = await session.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
        assert wire(with_args) == {
            "messages": [{"role": "user", "content": text("Prompt with arguments: arg1='hello', arg2='world'")}]
        }
        image = await session.get_prompt("test_prompt_with_image")
        assert wire(image) == {
            "messages": [
                {"role": "user", "content": IMAGE_BLOCK},
                {"role": "user", "content": text("Please analyze the image above.")},
            ]
        }
        with pytest.raises(MCPError) as raised:
            await session.get_prompt("test_prompt_with_arguments", {"arg1": "only one"})
        assert raised.value.error.message == "Missing required arguments: arg2"


@pytest.mark.parametrize("revision", REVISIONS)
async def test_sdk_client_completion(ours: dict[str, str], revision: str) -> None:
    prompt = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
    async with sdk_client(ours[revision]) as session:
        everything = await session.complete(prompt, {"name": "arg1", "value": ""})
        narrowed = await session.complete(prompt, {"name": "arg1", "value": "g"})
    assert wire(everything) == {"completion": {"values": ["alpha", "beta", "gamma"], "total": 3, "hasMore": False}}
    assert wire(narrowed) == {"completion": {"values": ["gamma"], "total": 1, "hasMore": False}}


async def test_sdk_client_logging_and_progress(ours: dict[str, str]) -> None:
    inbox = Inbox()
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with sdk_client(ours["latest"], logging_callback=inbox.log) as session:
        assert wire(await session.set_logging_level("info")) == {}
        logged = await session.call_tool("test_tool_with_logging")
        assert wire(logged) == {"content": [text("Tool with logging executed successfully")]}
        await eventually(lambda: len(inbox.logs) >= 3)
        assert inbox.logs == [
            {"level": "info", "data": "Tool execution started"},
            {"level": "info", "data": "Tool processing data"},
            {"level": "info", "data": "Tool execution completed"},
        ]
        assert wire(await session.set_logging_level("warning")) == {}
        await session.call_tool("test_tool_with_logging")
        assert len(inbox.logs) == 3
        result = await session.call_tool("test_tool_with_progress", progress_callback=on_progress)
        await eventually(lambda: len(updates) >= 3)
    assert updates == [
        (0, 100, "Completed step 0 of 100"),
        (50, 100, "Completed step 50 of 100"),
        (100, 100, "Completed step 100 of 100"),
    ]
    assert re.fullmatch(r"Progress reported for token \S+", wire(result.content[0])["text"])


async def test_log_level_filters_by_severity_not_by_name(ours: dict[str, str]) -> None:
    """At level "error", info messages must not be sent (RFC 5424 order: debug < info <
    notice < warning < error < critical < alert < emergency). The schema lists the levels
    alphabetically, and "info" sorts after "error"."""
    inbox = Inbox()
    async with sdk_client(ours["latest"], logging_callback=inbox.log) as session:
        assert wire(await session.set_logging_level("error")) == {}
        await session.call_tool("test_tool_with_logging")
        await session.send_ping()
    assert inbox.logs == []


@pytest.mark.parametrize("revision", REVISIONS)
async def test_sdk_client_answers_sampling(ours: dict[str, str], revision: str) -> None:
    seen: list[dict[str, Any]] = []

    async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        seen.append(wire(params))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=SAMPLED_TEXT), model="test-model"
        )

    async with sdk_client(ours[revision], sampling_callback=sample) as session:
        result = await session.call_tool("test_sampling", {"prompt": "over HTTP"})
    assert wire(result) == {"content": [text(f"LLM response: {SAMPLED_TEXT}")]}
    assert seen == [{"messages": [{"role": "user", "content": text("over HTTP")}], "maxTokens": 100}]


@pytest.mark.parametrize("revision", REVISIONS)
async def test_sdk_client_answers_elicitation(ours: dict[str, str], revision: str) -> None:
    seen: list[dict[str, Any]] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(wire(params))
        return types.ElicitResult(action="accept", content={"username": "ada", "email": "ada@example.com"})

    async with sdk_client(ours[revision], elicitation_callback=elicit) as session:
        result = await session.call_tool("test_elicitation", {"message": "Who?"})
    if revision == "2025-03-26":  # no elicitation in that revision: refused on our side
        assert seen == [] and result.is_error is True
        assert "elicitation/create" in wire(result)["content"][0]["text"]
        return
    assert seen == [{"message": "Who?", "requestedSchema": USER_FORM}]
    expected = 'User response: action=accept, content={"username": "ada", "email": "ada@example.com"}'
    assert wire(result) == {"content": [text(expected)]}


async def test_sdk_client_lists_roots(ours: dict[str, str]) -> None:
    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root.model_validate({"uri": "file:///srv", "name": "srv"})])

    async with sdk_client(ours["latest"], list_roots_callback=roots) as session:
        result = await session.call_tool("test_list_roots")
    assert wire(result) == {"content": [text(json.dumps({"uri": "file:///srv", "name": "srv"}))]}


async def test_sdk_client_timeout_cancels_our_handler(ours: dict[str, str]) -> None:
    inbox = Inbox()
    async with sdk_client(ours["latest"], logging_callback=inbox.log) as session:
        await session.set_logging_level("debug")
        with pytest.raises(MCPError):
            await session.call_tool("test_tool_slow", {"durationMs": 5000}, read_timeout_seconds=0.3)
        # The SDK sent notifications/cancelled; our handler saw CancelledError and said so.
        await eventually(lambda: len(inbox.logs) >= 1)
        assert inbox.logs[0]["level"] == "notice"
        assert re.fullmatch(r"test_tool_slow cancelled \(request \S+\)", inbox.logs[0]["data"])
        fast = await session.call_tool("test_tool_fast")
        assert wire(fast) == {"content": [text("Fast tool completed")]}


async def test_sdk_client_receives_tool_list_changed(ours: dict[str, str]) -> None:
    inbox = Inbox()
    async with sdk_client(ours["latest"], message_handler=inbox.message) as session:
        result = await session.call_tool("test_send_tool_list_changed")
        assert wire(result) == {"content": [text("Sent notifications/tools/list_changed")]}
        await eventually(lambda: "notifications/tools/list_changed" in inbox.methods())
        assert inbox.methods() == ["notifications/tools/list_changed"]


# == (b) our client against the official server =====================================================


@asynccontextmanager
async def our_client(
    url: str,
    handlers: Recorder | None = None,
    protocol: ModuleType | list[ModuleType] = LATEST,
    **options: Any,
) -> AsyncIterator[Client]:
    async with connect_http(url, protocol=protocol, handlers=handlers, client_info=CLIENT_INFO, **options) as client:
        yield client


async def test_our_client_handshake_with_the_sdk_server(sdk: dict[str, str]) -> None:
    async with our_client(sdk["plain"], Recorder(), list_changed=["roots"]) as client:
        session = client.session
        assert session.protocol_version == "2025-11-25"
        assert session.server_info == SDK_SERVER_INFO
        assert session.instructions == SDK_INSTRUCTIONS
        assert session.peer_capabilities == SERVER_CAPABILITIES
        declared = await client.call_tool(name="client_info")
        assert wire(await client.ping()) == {}
    assert [json.loads(t) for t in texts(declared)[:2]] == [
        CLIENT_INFO,
        {"elicitation": {}, "roots": {"listChanged": True}, "sampling": {}},
    ]
    assert texts(declared)[2] == "2025-11-25"


@pytest.mark.parametrize("package", [mcp_generated.v2025_03_26, mcp_generated.v2025_06_18], ids=lambda p: p.PROTOCOL_VERSION)
async def test_our_older_packages_negotiate_their_revision(sdk: dict[str, str], package: ModuleType) -> None:
    async with our_client(sdk["plain"], protocol=package) as client:
        assert client.session.protocol_version == package.PROTOCOL_VERSION
        assert texts(await client.call_tool(name="client_info"))[2] == package.PROTOCOL_VERSION
        assert wire(await client.call_tool(name="text")) == {"content": [text("Hello from the SDK server")]}


async def test_our_client_accepts_the_revision_the_sdk_server_answers(sdk: dict[str, str]) -> None:
    packages = [mcp_generated.v2025_11_25, mcp_generated.v2025_06_18]
    async with our_client(sdk["2025-06-18"], Recorder(), protocol=packages) as client:
        assert client.session.protocol_version == "2025-06-18"
        assert texts(await client.call_tool(name="client_info"))[2] == "2025-06-18"
        result = await client.call_tool(name="sample", arguments={"prompt": "hi"})
    assert isinstance(result, models.CallToolResult)
    assert texts(result) == [f"codegen-model/assistant/endTurn: {SAMPLED}"]


async def test_our_client_gets_every_content_type_typed_and_exact(sdk: dict[str, str]) -> None:
    async with our_client(sdk["plain"]) as client:
        listed = await client.list_tools()
        assert [tool.name for tool in listed.tools][:7] == ["text", "image", "audio", "embedded", "link", "structured", "fail"]
        for name, arguments, expected in SDK_TOOL_RESULTS:
            result = await client.call_tool(name=name, arguments=arguments)
            assert isinstance(result, models.CallToolResult)
            assert wire(result) == expected, name
        with pytest.raises(RpcError) as raised:
            await client.call_tool(name="nope")
    assert (raised.value.code, raised.value.message) == (-32602, "Unknown tool: nope")


async def test_our_client_in_json_mode(sdk: dict[str, str]) -> None:
    """The SDK server answering every request with plain JSON (no SSE at all)."""
    async with our_client(sdk["json"]) as client:
        for name, arguments, expected in SDK_TOOL_RESULTS[:3]:
            assert wire(await client.call_tool(name=name, arguments=arguments)) == expected
        assert wire(await client.read_resource(uri="sdk://text")) == {
            "contents": [{"uri": "sdk://text", "mimeType": "text/plain", "text": "SDK text resource"}]
        }


async def test_our_client_resources_prompts_and_completion(sdk: dict[str, str]) -> None:
    async with our_client(sdk["plain"]) as client:
        assert wire(await client.list_resource_templates()) == {
            "resourceTemplates": [{"uriTemplate": "sdk://items/{id}", "name": "item", "mimeType": "application/json"}]
        }
        blob = await client.read_resource(uri="sdk://blob")
        assert isinstance(blob.contents[0], models.BlobResourceContents)
        assert wire(await client.read_resource(uri="sdk://items/9")) == {
            "contents": [{"uri": "sdk://items/9", "mimeType": "application/json", "text": '{"id": "9"}'}]
        }
        with pytest.raises(RpcError) as raised:
            await client.read_resource(uri="sdk://missing")
        assert raised.value.code == -32002
        assert wire(await client.get_prompt(name="greet", arguments={"who": "Ada"})) == {
            "description": "A greeting",
            "messages": [
                {"role": "user", "content": text("Say hello to Ada")},
                {"role": "assistant", "content": text("Hello!")},
            ],
        }
        completed = await client.complete(
            ref=models.PromptReference(type="ref/prompt", name="greet"),
            argument=models.CompleteRequestParamsArgument(name="who", value="b"),
        )
        assert wire(completed) == {"completion": {"values": ["bob"], "total": 1, "hasMore": False}}


async def test_our_client_subscriptions_logging_and_progress(sdk: dict[str, str]) -> None:
    recorder = Recorder()
    async with our_client(sdk["plain"], recorder) as client:
        assert wire(await client.subscribe(uri="sdk://text")) == {}
        assert texts(await client.call_tool(name="touch")) == ["touched 1"]
        await eventually(lambda: recorder.updated == ["sdk://text"])
        assert wire(await client.unsubscribe(uri="sdk://text")) == {}
        assert wire(await client.set_level(level="warning")) == {}
        assert texts(await client.call_tool(name="log")) == ["logged"]
        await eventually(lambda: len(recorder.logs) >= 2)
        result = await client.call_tool(name="progress", meta=models.ParamsMeta(progress_token="h-1"))
        assert texts(result) == ["progressed"]
        await eventually(lambda: len(recorder.progress) >= 3)
    assert recorder.logs == [
        {"level": "warning", "logger": "sdk-peer", "data": {"message": "second"}},
        {"level": "error", "logger": "sdk-peer", "data": {"message": "third"}},
    ]
    assert recorder.progress == [
        {"progressToken": "h-1", "progress": step, "total": 3, "message": f"step {step}"} for step in (1, 2, 3)
    ]


async def test_sdk_server_requests_are_answered_by_our_handlers(sdk: dict[str, str]) -> None:
    """Sampling and elicitation come on the tools/call stream; roots/list (sent without a
    related request) comes on our GET stream, and our answers are POSTed back."""
    recorder = Recorder()
    async with our_client(sdk["plain"], recorder, list_changed=["roots"]) as client:
        sampled = await client.call_tool(name="sample", arguments={"prompt": "Say hi"})
        elicited = await client.call_tool(name="elicit", arguments={"message": "Who are you?"})
        roots = await client.call_tool(name="roots")
    assert recorder.sampled == [
        {"messages": [{"role": "user", "content": text("Say hi")}], "systemPrompt": "Be brief.", "maxTokens": 64}
    ]
    assert texts(sampled) == [f"codegen-model/assistant/endTurn: {SAMPLED}"]
    assert recorder.elicited[0]["message"] == "Who are you?"
    assert texts(elicited) == ['accept {"age": 36, "name": "Ada"}']
    assert recorder.roots_requests == 1
    assert texts(roots) == ["file:///work/project project", "file:///tmp/scratch None"]


async def test_our_timeout_cancels_the_sdk_handler(sdk: dict[str, str]) -> None:
    async with our_client(sdk["plain"], request_timeout=0.5) as client:
        with pytest.raises(TimeoutError):
            await client.call_tool(name="slow", arguments={"durationMs": 10_000})
        with anyio.fail_after(5):
            while not json.loads(texts(await client.call_tool(name="cancelled"))[0]):
                await anyio.sleep(0.02)
        # Request 1 was initialize, so the slow call was request 2.
        assert json.loads(texts(await client.call_tool(name="cancelled"))[0]) == [2]
        assert texts(await client.call_tool(name="text")) == ["Hello from the SDK server"]


async def test_tool_list_changed_from_the_sdk_server_reaches_our_handler(sdk: dict[str, str]) -> None:
    recorder = Recorder()
    async with our_client(sdk["plain"], recorder) as client:
        assert texts(await client.call_tool(name="change_tools")) == ["sent"]
        await eventually(lambda: recorder.tools_changed == 1)
        await client.ping()
        assert recorder.tools_changed == 1


async def test_our_client_ends_the_sdk_session_and_survives_losing_it(sdk: dict[str, str]) -> None:
    """DELETE on exit ends the session on the SDK server; a session the server lost (ended
    here by a DELETE from elsewhere) is initialized again on the next call."""
    port = int(sdk["plain"].split(":")[2].split("/")[0])
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": "2025-11-25"}
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    async with our_client(sdk["plain"]) as client:
        transport = client.session.transport
        first = transport.session_id
        ended = await raw(port, "DELETE", {**headers, "Mcp-Session-Id": first})
        assert ended.status == 200
        ended.close()
        assert texts(await client.call_tool(name="text")) == ["Hello from the SDK server"]
        second = transport.session_id
        assert second not in (None, first)
    after = await raw(port, "POST", {**headers, "Mcp-Session-Id": second}, ping)
    assert after.status == 404
    after.close()
