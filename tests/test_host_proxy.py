"""``proxy_app(target)``: an ``McpApp`` serving another server through the host's machinery,
in process: over stdio to ``examples/notes_server.py`` and to the official SDK's server
(mcp 2.3.0, ``tests/peers/sdk_server.py``), mounted in another app, its list changes
reaching the proxy's clients."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from host_support import HOST_SERVER, LIMIT, REPO, SDK_SERVER
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import client as mcp
from typedmcp import connect_memory
from typedmcp.app import McpApp
from typedmcp.host import ConfigError, ProxyApp, proxy_app
from typedmcp.host.proxy import server_entry

SDK_MODERN_SERVER = REPO / "tests" / "peers" / "sdk_modern_server.py"
NOTES = [sys.executable, str(REPO / "examples" / "notes_server.py")]


@pytest.mark.parametrize("protocol", ["2025-11-25", "auto"])
def test_a_proxy_serves_the_notes_servers_tools_resources_and_prompts_over_stdio(protocol: str) -> None:
    async def scenario() -> dict[str, Any]:
        async with proxy_app(NOTES, name="notes-proxy") as proxy, connect_memory(proxy, protocol=protocol) as client:
            return {
                "info": client.session.server_info["name"],
                "tools": sorted(tool.name for tool in (await client.list_tools()).tools),
                "added": (await client.call_tool(
                    name="add_note", arguments={"title": "milk", "body": "buy milk"})).structured_content,
                "index": (await client.read_resource(uri="notes://index")).contents[0].text,
                "templates": [t.uri_template for t in (await client.list_resource_templates()).resource_templates],
                "prompt": (await client.get_prompt(
                    name="summarize", arguments={"note_id": "1"})).messages[0].content.text,
                "bad": await client.call_tool(name="add_note", arguments={"title": 3}),
            }

    seen = asyncio.run(asyncio.wait_for(scenario(), LIMIT))
    assert seen["info"] == "notes-proxy"
    assert seen["tools"] == ["add_note", "export_notes", "search_notes"]
    assert seen["added"]["title"] == "milk"
    assert seen["index"] == "[1]"
    assert seen["templates"] == ["notes://{note_id}"]
    assert seen["prompt"] == "Summarize this note (short): milk"
    assert seen["bad"].is_error  # the host checked the arguments against the inputSchema


def test_a_proxy_serves_the_official_sdks_server() -> None:
    async def scenario() -> tuple[list[str], str, str, list[str]]:
        entry = {"command": sys.executable, "args": [str(SDK_SERVER)], "protocol": "2025-11-25"}
        async with proxy_app(entry) as proxy, connect_memory(
            proxy, protocol=v2025_11_25
        ) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            text = (await client.call_tool(name="text", arguments={})).content[0].text
            read = (await client.read_resource(uri="sdk://text")).contents[0].text
            prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
        return tools, text, read, prompts

    tools, text, read, prompts = asyncio.run(asyncio.wait_for(scenario(), LIMIT))
    assert {"text", "structured", "progress"} <= set(tools)
    assert text and read == "SDK text resource"
    assert "picture" in prompts


def test_a_proxy_mounted_in_an_app_serves_the_notes_tools_under_the_prefix() -> None:
    parent = McpApp("parent")

    @parent.tool()
    def hello() -> str:
        return "hello"

    proxy = proxy_app(NOTES)
    parent.mount(proxy, prefix="notes")

    async def scenario() -> tuple[list[str], Any, str]:
        try:
            async with connect_memory(parent, protocol=v2025_11_25) as client:
                names = [tool.name for tool in (await client.list_tools()).tools]
                added = await client.call_tool(name="notes_add_note", arguments={"title": "t", "body": "b"})
                index = (await client.read_resource(uri="notes://notes/index")).contents
                return names, added.structured_content, index[0].uri
        finally:
            await proxy.aclose()

    names, added, uri = asyncio.run(asyncio.wait_for(scenario(), LIMIT))
    assert names == ["hello", "notes_add_note", "notes_search_notes", "notes_export_notes"]
    assert added["title"] == "t"
    assert uri == "notes://notes/index"


class Recorder(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.changed = asyncio.Event()

    async def on_tool_list_changed(self, params: Any, ctx: Any) -> None:
        self.changed.set()


def test_a_list_change_of_the_proxied_server_reaches_the_proxys_clients() -> None:
    async def scenario() -> list[str]:
        recorder = Recorder()
        async with proxy_app([sys.executable, str(HOST_SERVER), "--tools", "echo"]) as proxy, connect_memory(
            proxy, protocol=v2025_11_25, client_handlers=recorder
        ) as client:
            await client.call_tool(name="add_tool", arguments={"name": "extra"})
            await asyncio.wait_for(recorder.changed.wait(), LIMIT)
            return [tool.name for tool in (await client.list_tools()).tools]

    assert "extra" in asyncio.run(asyncio.wait_for(scenario(), LIMIT))


def test_a_proxy_app_declares_its_own_tools_beside_the_servers() -> None:
    proxy = proxy_app(NOTES)

    @proxy.tool()
    def local() -> str:
        return "local"

    async def scenario() -> tuple[list[str], str]:
        async with proxy, connect_memory(proxy, protocol=v2025_11_25) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return names, (await client.call_tool(name="local", arguments={})).content[0].text

    names, text = asyncio.run(asyncio.wait_for(scenario(), LIMIT))
    assert names[0] == "local" and "add_note" in names
    assert text == "local"


def test_the_target_is_a_url_a_command_line_or_an_entry() -> None:
    assert server_entry("https://example.com/mcp") == {"url": "https://example.com/mcp"}
    assert server_entry("python 'my server.py'") == {"command": "python", "args": ["my server.py"]}
    assert server_entry(["uvx", "thing"]) == {"command": "uvx", "args": ["thing"]}
    assert server_entry({"url": "http://h/mcp", "headers": {"A": "b"}}) == {"url": "http://h/mcp", "headers": {"A": "b"}}
    with pytest.raises(ConfigError, match="a URL, a command line or an mcpServers entry"):
        server_entry([])
    with pytest.raises(ConfigError, match="url"):
        ProxyApp({"url": "ftp://nowhere"})


def test_a_proxy_serves_the_official_sdks_stateless_server() -> None:
    async def scenario() -> tuple[str | None, list[str], str]:
        async with proxy_app([sys.executable, str(SDK_MODERN_SERVER)]) as proxy, connect_memory(
            proxy, protocol=v2025_11_25
        ) as client:
            era = proxy.host.status()["proxied"]["era"]
            tools = [tool.name for tool in (await client.list_tools()).tools]
            return era, tools, (await client.call_tool(name="text", arguments={})).content[0].text

    era, tools, text = asyncio.run(asyncio.wait_for(scenario(), LIMIT))
    assert era == "stateless"  # the proxy's client of the server: 2026-07-28
    assert {"text", "progress"} <= set(tools) and text


def test_a_proxy_serves_a_server_at_a_url(notes_http_url: str) -> None:
    async def scenario() -> list[str]:
        async with proxy_app(notes_http_url) as proxy, connect_memory(proxy) as client:
            return sorted(tool.name for tool in (await client.list_tools()).tools)

    assert asyncio.run(asyncio.wait_for(scenario(), LIMIT)) == ["add_note", "export_notes", "search_notes"]


class Sampler(mcp.ClientHandlers):
    async def create_message(self, params: Any, ctx: Any) -> Any:
        asked = params.messages[0].content.text
        return v2025_11_25.models.CreateMessageResult(
            role="assistant", content=v2025_11_25.models.TextContent(type="text", text=f"echo {asked}"), model="m"
        )


def test_the_servers_sampling_request_reaches_the_proxys_client() -> None:
    """The gateway's machinery: a server's request made during a call goes to the caller's
    (handshake-era) client, and the answer comes back to the server."""

    async def scenario() -> str:
        async with proxy_app([sys.executable, str(HOST_SERVER)]) as proxy, connect_memory(
            proxy, protocol=v2025_11_25, client_handlers=Sampler()
        ) as client:
            result = await client.call_tool(name="sample", arguments={"prompt": "hi"})
            return str(result.content[0].text)

    assert asyncio.run(asyncio.wait_for(scenario(), LIMIT)) == "echo hi"


def test_for_a_stateless_client_the_hosts_hook_answers_the_servers_sampling_request() -> None:
    async def sampling(server: str, params: Any, ctx: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": f"hook {server}"}, "model": "m"}

    async def scenario() -> tuple[str | None, str]:
        async with proxy_app([sys.executable, str(HOST_SERVER)], host_options={"sampling": sampling}) as proxy, \
                connect_memory(proxy, client_handlers=Sampler()) as client:
            result = await client.call_tool(name="sample", arguments={"prompt": "hi"})
            return client.session.era, str(result.content[0].text)

    assert asyncio.run(asyncio.wait_for(scenario(), LIMIT)) == ("stateless", "hook proxied")


def test_a_proxy_of_a_tools_only_server_lists_no_prompts_or_resources() -> None:
    """The proxy answers every list (an empty one for what the server does not offer), as
    an ``McpApp`` offers them all; the server is a handshake-only one (2025-11-25)."""

    async def scenario() -> tuple[list[str], list[Any], list[Any], str | None]:
        async with proxy_app([sys.executable, str(REPO / "tests" / "servers" / "legacy_server.py")]) as proxy, \
                connect_memory(proxy, protocol=v2025_11_25) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            prompts = (await client.list_prompts()).prompts
            resources = (await client.list_resources()).resources
            return tools, prompts, resources, proxy.host.status()["proxied"]["era"]

    tools, prompts, resources, era = asyncio.run(asyncio.wait_for(scenario(), LIMIT))
    assert (tools, prompts, resources, era) == (["echo"], [], [], "handshake")
