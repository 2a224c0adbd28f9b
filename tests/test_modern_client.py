"""Our client in the stateless era (2026-07-28) against the official SDK's server (mcp 2.3.0).

The peer is ``tests/peers/sdk_modern_server.py`` (the SDK's low-level ``Server``, dual-era),
over stdio (``connect_stdio``) and over Streamable HTTP (``connect_http``; the SDK's own
Starlette app under uvicorn on 127.0.0.1). Every test runs on both transports. Input the
server asks for (sampling, elicitation, roots) is answered by ``ClientHandlers`` hooks, the
same hooks that answer server->client requests in the handshake era.
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

import pytest
from conftest import read_port, stop_process

import mcp_generated.v2025_11_25
from typedmcp.connecting import connect_http, connect_stdio
from typedmcp.engine.jsonrpc import CapabilityError
from typedmcp.protocol.meta import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    PROTOCOL_VERSION_KEY,
)
from typedmcp.protocol.stubs import RequestContext
from mcp_generated.v2025_11_25 import models as legacy_models
from mcp_generated.v2025_11_25.client import ClientHandlers as LegacyClientHandlers
from mcp_generated.v2026_07_28 import models
from mcp_generated.v2026_07_28.client import Client, ClientHandlers

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

REPO = Path(__file__).resolve().parent.parent
PEER = [sys.executable, str(REPO / "tests" / "peers" / "sdk_modern_server.py")]
SERVER_INFO = {"name": "sdk-modern-peer", "version": "2.3.0-test"}
INSTRUCTIONS = "Official-SDK 2026-07-28 peer for mcp-codegen's client tests."
SERVER_CAPABILITIES = {
    "completions": {},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
    "tools": {"listChanged": True},
}
CLIENT_INFO = {"name": "mcp-codegen-modern", "version": "9.9.9"}
SAMPLED = "sampled by mcp-codegen"
ROOTS = [{"uri": "file:///work/project", "name": "project"}, {"uri": "file:///tmp/scratch"}]
TOOL_NAMES = [
    "text", "meta", "sample", "elicit", "progress", "slow", "cancelled",
    "change_tools", "headers", "météo",
]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """The SDK peer served over Streamable HTTP, once for the module."""
    process = subprocess.Popen(
        [*PEER, "--http"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        yield f"http://127.0.0.1:{read_port(process)}/mcp"
    finally:
        stop_process(process)


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest, http_url: str) -> str:
    return "stdio" if request.param == "stdio" else http_url


@asynccontextmanager
async def connected(
    where: str, handlers: object | None = None, protocol: Any = "auto", **options: Any
) -> AsyncIterator[Client]:
    """Our client connected to the SDK peer over stdio (``where == "stdio"``) or HTTP."""
    handlers = handlers if handlers is not None else Hooks()
    options.setdefault("client_info", CLIENT_INFO)
    if where == "stdio":
        async with connect_stdio(PEER, protocol=protocol, handlers=handlers, **options) as client:
            yield client
    else:
        async with connect_http(where, protocol=protocol, handlers=handlers, **options) as client:
            yield client


def wire(value: Any) -> Any:
    return value.model_dump(mode="json", by_alias=True, exclude_unset=True)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if block.type == "text"]


class Hooks(ClientHandlers):
    """Answers sampling, elicitation and roots; records what it was asked and notified."""

    def __init__(self) -> None:
        self.sampled: list[dict[str, Any]] = []
        self.elicited: list[dict[str, Any]] = []
        self.roots_requests = 0
        self.progress: list[dict[str, Any]] = []
        self.tools_changed = 0

    async def create_message(
        self, params: models.CreateMessageRequestParams, ctx: RequestContext[Client]
    ) -> models.CreateMessageResult:
        self.sampled.append(wire(params))
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
        self, params: models.ListRootsRequestParams | None, ctx: RequestContext[Client]
    ) -> models.ListRootsResult:
        self.roots_requests += 1
        return models.ListRootsResult.model_validate({"roots": ROOTS})

    async def on_progress(
        self, params: models.ProgressNotificationParams, ctx: RequestContext[Client]
    ) -> None:
        self.progress.append(wire(params))

    async def on_tool_list_changed(
        self, params: models.NotificationParams | None, ctx: RequestContext[Client]
    ) -> None:
        self.tools_changed += 1


async def eventually(condition: Any, timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


# -- negotiation -------------------------------------------------------------------------------


async def test_auto_negotiation_picks_2026_07_28_and_the_caller_can_see_it(transport: str) -> None:
    async with connected(transport) as client:
        session = client.session
        assert (session.protocol_version, session.era, session.negotiation) == (
            "2026-07-28", "stateless", "auto"
        )
        assert session.server_info == SERVER_INFO
        assert session.instructions == INSTRUCTIONS
        assert session.peer_capabilities == SERVER_CAPABILITIES
        assert session.discovery.supported_versions == ["2026-07-28"]


async def test_a_pinned_2025_11_25_package_still_uses_initialize(transport: str) -> None:
    async with connected(transport, LegacyClientHandlers(), protocol=mcp_generated.v2025_11_25) as client:
        session = client.session
        assert (session.protocol_version, session.era, session.negotiation) == (
            "2025-11-25", "handshake", "pinned"
        )
        assert session.server_info == SERVER_INFO
        assert session.discovery is None
        assert texts(await client.call_tool(name="text")) == ["Hello from the SDK modern server"]


async def test_pinning_the_2026_07_28_package_speaks_only_the_stateless_era(transport: str) -> None:
    async with connected(transport, protocol=mcp_generated.v2026_07_28) as client:
        assert (client.session.era, client.session.negotiation) == ("stateless", "pinned")


async def test_server_discover_answers_with_versions_capabilities_and_caching(transport: str) -> None:
    async with connected(transport) as client:
        result = await client.discover()
        assert wire(result) == {
            "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
            "cacheScope": "private",
            "capabilities": SERVER_CAPABILITIES,
            "instructions": INSTRUCTIONS,
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "ttlMs": 0,
        }


# -- per-request _meta -------------------------------------------------------------------------


async def test_every_request_carries_version_capabilities_and_client_info(transport: str) -> None:
    async with connected(transport) as client:
        meta_text, version = texts(await client.call_tool(name="meta"))
        assert json.loads(meta_text) == {
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"elicitation": {}, "roots": {}, "sampling": {}},
            CLIENT_INFO_KEY: CLIENT_INFO,
        }
        assert version == "2026-07-28"


async def test_capabilities_declare_only_the_hooks_the_client_implemented(transport: str) -> None:
    async with connected(transport, ClientHandlers()) as client:
        meta_text, _ = texts(await client.call_tool(name="meta"))
        assert json.loads(meta_text)[CLIENT_CAPABILITIES_KEY] == {}


async def test_a_session_log_level_and_a_per_request_one_go_in_meta(transport: str) -> None:
    async with connected(transport, log_level="warning") as client:
        meta_text, _ = texts(await client.call_tool(name="meta"))
        assert json.loads(meta_text)[LOG_LEVEL_KEY] == "warning"
        await client.session.set_log_level("debug")
        meta_text, _ = texts(await client.call_tool(name="meta"))
        assert json.loads(meta_text)[LOG_LEVEL_KEY] == "debug"
        await client.session.set_log_level(None)
        meta_text, _ = texts(await client.call_tool(name="meta", meta={LOG_LEVEL_KEY: "error"}))
        assert json.loads(meta_text)[LOG_LEVEL_KEY] == "error"


async def test_handshake_only_requests_are_refused_locally() -> None:
    async with connected("stdio", LegacyClientHandlers()) as connected_client:
        client: Any = connected_client  # typed with 2025-11-25, which has ping and the rest
        assert client.session.era == "stateless"
        with pytest.raises(CapabilityError, match="2026-07-28 has no such request"):
            await client.ping()
        with pytest.raises(CapabilityError, match="2026-07-28 has no such request"):
            await client.set_level(level="debug")
        with pytest.raises(CapabilityError, match="2026-07-28 has no such request"):
            await client.subscribe(uri="sdk://text")


# -- tools, resources, prompts, completion -----------------------------------------------------


async def test_tools_are_listed_with_caching_fields_and_called(transport: str) -> None:
    async with connected(transport) as client:
        listed = await client.list_tools()
        names = [tool.name for tool in listed.tools]
        # over HTTP, the tool whose x-mcp-header annotation is invalid is not offered
        assert names == ([*TOOL_NAMES, "broken"] if transport == "stdio" else TOOL_NAMES)
        assert (listed.ttl_ms, listed.cache_scope, listed.result_type) == (60000, "public", "complete")
        called = await client.call_tool(name="text")
        assert wire(called) == {
            "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
            "content": [{"type": "text", "text": "Hello from the SDK modern server"}],
            "resultType": "complete",
        }


async def test_a_unicode_tool_name_and_header_parameters_reach_the_tool(transport: str) -> None:
    async with connected(transport) as client:
        await client.list_tools()
        assert texts(await client.call_tool(name="météo")) == ["sunny"]
        headers = await client.call_tool(name="headers", arguments={"region": "eu west", "priority": 7})
        assert texts(headers) == ["eu west 7"]


async def test_resources_are_listed_read_and_templated_with_caching_fields(transport: str) -> None:
    async with connected(transport) as client:
        listed = await client.list_resources()
        assert wire(listed)["resources"] == [{"uri": "sdk://text", "name": "text", "mimeType": "text/plain"}]
        assert (listed.ttl_ms, listed.cache_scope) == (5000, "private")
        read = await client.read_resource(uri="sdk://items/7")
        assert wire(read)["contents"] == [
            {"uri": "sdk://items/7", "mimeType": "application/json", "text": '{"id": "7"}'}
        ]
        assert (read.ttl_ms, read.cache_scope) == (1000, "private")
        templates = await client.list_resource_templates()
        assert wire(templates)["resourceTemplates"] == [
            {"uriTemplate": "sdk://items/{id}", "name": "item", "mimeType": "application/json"}
        ]
        assert (templates.ttl_ms, templates.cache_scope) == (0, "private")


async def test_prompts_are_listed_and_got_and_arguments_completed(transport: str) -> None:
    async with connected(transport) as client:
        listed = await client.list_prompts()
        assert wire(listed)["prompts"] == [
            {"name": "greet", "description": "Greets someone", "arguments": [{"name": "who", "required": True}]}
        ]
        assert (listed.ttl_ms, listed.cache_scope) == (30000, "public")
        got = await client.get_prompt(name="greet", arguments={"who": "Ada"})
        assert wire(got)["messages"] == [{"role": "user", "content": {"type": "text", "text": "Say hello to Ada"}}]
        completed = await client.complete(
            ref=models.PromptReference(type="ref/prompt", name="greet"),
            argument=models.CompleteRequestParamsArgument(name="who", value="al"),
        )
        assert wire(completed.completion) == {"values": ["alice", "albert"], "total": 2, "hasMore": False}


# -- multi round-trip requests -----------------------------------------------------------------


async def test_sampling_asked_for_in_a_tool_result_is_answered_by_the_create_message_hook(
    transport: str,
) -> None:
    hooks = Hooks()
    async with connected(transport, hooks) as client:
        result = await client.call_tool(name="sample", arguments={"prompt": "Say hi"})
        assert texts(result) == [f"codegen-model/assistant/endTurn: {SAMPLED}"]
        assert hooks.sampled == [
            {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                "maxTokens": 64,
                "systemPrompt": "Be brief.",
            }
        ]


async def test_elicitation_then_roots_over_two_rounds_echo_the_request_state(transport: str) -> None:
    hooks = Hooks()
    async with connected(transport, hooks) as client:
        result = await client.call_tool(name="elicit")
        # round 2 only answers if round 1's requestState came back exactly; the final text
        # holds what the elicit hook answered, carried in the state of round 2
        assert texts(result) == [
            '{"action": "accept", "content": {"age": 36, "name": "Ada"}}',
            "file:///work/project file:///tmp/scratch",
        ]
        assert hooks.elicited == [
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
        assert hooks.roots_requests == 1


async def test_a_handshake_era_handler_class_answers_the_stateless_era_too(transport: str) -> None:
    class LegacyHooks(LegacyClientHandlers):
        async def create_message(self, params: Any, ctx: Any) -> Any:
            return legacy_models.CreateMessageResult(
                role="assistant", content=legacy_models.TextContent(type="text", text="old hooks"), model="m"
            )

    async with connected(transport, LegacyHooks()) as client:
        assert client.session.era == "stateless"
        result = await client.call_tool(name="sample", arguments={"prompt": "hi"})
        assert texts(result) == ["m/assistant/None: old hooks"]


# -- subscriptions/listen ----------------------------------------------------------------------


async def test_listen_is_acknowledged_and_yields_the_tools_list_changed(transport: str) -> None:
    async with (
        connected(transport, ClientHandlers()) as client,
        client.session.listen(tools_list_changed=True) as subscription,
    ):
        assert wire(subscription.acknowledged) == {"toolsListChanged": True}
        assert texts(await client.call_tool(name="change_tools")) == ["published"]
        notification = await subscription.get(timeout=5)
        assert notification.method == "notifications/tools/list_changed"
        assert wire(notification.params) == {
            "_meta": {"io.modelcontextprotocol/subscriptionId": subscription.id}
        }


async def test_list_changed_hooks_keep_working_through_a_background_listen(transport: str) -> None:
    hooks = Hooks()
    async with connected(transport, hooks) as client:
        await asyncio.sleep(0.2)  # the background listen is acknowledged
        await client.call_tool(name="change_tools")
        await eventually(lambda: hooks.tools_changed == 1)
        async with client.session.listen(tools_list_changed=True) as subscription:
            await client.call_tool(name="change_tools")
            await subscription.get(timeout=5)
            await eventually(lambda: hooks.tools_changed == 2)
        await asyncio.sleep(0.1)
        assert hooks.tools_changed == 2  # the hook saw each change once


# -- progress and cancellation -----------------------------------------------------------------


async def test_progress_reaches_the_hook_and_a_registered_callback(transport: str) -> None:
    hooks = Hooks()
    async with connected(transport, hooks) as client:
        seen: list[tuple[float, float | None, str | None]] = []
        client.session.progress_callbacks["tick"] = lambda p: seen.append((p.progress, p.total, p.message))
        result = await client.call_tool(name="progress", meta={"progressToken": "tick"})
        assert texts(result) == ["progressed"]
        await eventually(lambda: len(seen) == 3)
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        assert [p["progress"] for p in hooks.progress] == [1, 2, 3]


async def test_a_timed_out_call_is_cancelled_on_the_server(transport: str) -> None:
    async with connected(transport) as client:
        session = client.session
        spec = session.package.dispatch.REQUESTS["tools/call"]
        params = {"name": "slow", "arguments": {"durationMs": 5000}}
        with pytest.raises(asyncio.TimeoutError, match=r"tools/call timed out after 0\.3 s"):
            await session.send_request(spec, params, timeout=0.3)

        async def cancelled() -> list[Any]:
            return list(json.loads(texts(await client.call_tool(name="cancelled"))[0]))

        for _ in range(100):
            if await cancelled():
                break
            await asyncio.sleep(0.05)
        assert len(await cancelled()) == 1
        # the call still works afterwards
        assert texts(await client.call_tool(name="text")) == ["Hello from the SDK modern server"]

