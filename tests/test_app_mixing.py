"""McpApp and the generated handlers mix in one server: a subclass adds a low-level
handler (``subscribe``) and a hand-written tool beside the typed functions."""

from __future__ import annotations

import asyncio
from typing import Any

from typedmcp.app import McpApp
from typedmcp.connecting import connect_memory
from typedmcp.protocol.stubs import RequestContext
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer

RAW = models.Tool(name="raw", input_schema=models.ToolInputSchema(type="object"))


class Mixed(McpApp):
    """Typed tools from the decorator, one hand-written tool, resource subscriptions."""

    def __init__(self) -> None:
        super().__init__("mixed", version="1.0")
        self.subscribed: list[str] = []

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        listed = await super().list_tools(params, ctx)
        return models.ListToolsResult(tools=[*listed.tools, RAW])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        if params.name == "raw":
            return models.CallToolResult(content=[models.TextContent(type="text", text="by hand")])
        return await super().call_tool(params, ctx)

    async def subscribe(
        self, params: models.SubscribeRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.EmptyResult:
        self.subscribed.append(params.uri)
        return models.Result()


def test_a_subclass_mixes_typed_functions_and_low_level_handlers() -> None:
    app = Mixed()

    @app.tool()
    def typed(n: int) -> int:
        return n * 2

    async def scenario() -> tuple[list[str], Any, Any, dict[str, Any]]:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            doubled = await client.call_tool(name="typed", arguments={"n": 4})
            raw = await client.call_tool(name="raw", arguments={})
            await client.subscribe(uri="t://a")
            return names, doubled, raw, client.session.peer_capabilities

    names, doubled, raw, capabilities = asyncio.run(scenario())
    assert names == ["typed", "raw"]
    assert doubled.structured_content == {"result": 8}
    assert raw.content[0].text == "by hand"
    assert app.subscribed == ["t://a"]
    assert capabilities["resources"] == {"listChanged": True, "subscribe": True}
