"""In-process connections serve both eras, like stdio: auto picks 2026-07-28, a pin does not."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_codegen.runtime.memory import connect_memory
from mcp_generated import v2025_06_18, v2025_11_25, v2026_07_28
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import ClientHandlers
from mcp_generated.v2025_11_25.server import ServerHandlers

EMPTY = models.ToolInputSchema(type="object")


class Asker(ServerHandlers):
    async def list_tools(self, params: Any, ctx: Any) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[models.Tool(name="ask", title="Ask", input_schema=EMPTY)])

    async def call_tool(self, params: Any, ctx: Any) -> models.CallToolResult:
        answer = await ctx.peer.elicit(
            models.ElicitRequestFormParams(
                message="Name?",
                requested_schema=models.ElicitRequestFormParamsRequestedSchema(
                    type="object", properties={"name": {"type": "string"}}
                ),
            )
        )
        return models.CallToolResult(
            content=[models.TextContent(type="text", text=f"hello {answer.content['name']}")]
        )


class User(ClientHandlers):
    async def elicit(self, params: Any, ctx: Any) -> models.ElicitResult:
        return models.ElicitResult(action="accept", content={"name": "Ada"})


async def _session(protocol: Any) -> tuple[str, str, str, list[str]]:
    async with connect_memory(Asker(), protocol=protocol, client_handlers=User()) as client:
        tools = await client.list_tools()
        result = await client.call_tool(name="ask", arguments={})
        return (
            client.session.era,
            client.session.protocol_version,
            result.content[0].text,
            sorted(tools.model_dump(by_alias=True, exclude_unset=True)["tools"][0]),
        )


@pytest.mark.parametrize(
    ("protocol", "era", "version", "fields"),
    [
        ("auto", "stateless", "2026-07-28", ["inputSchema", "name", "title"]),
        (v2026_07_28, "stateless", "2026-07-28", ["inputSchema", "name", "title"]),
        (v2025_11_25, "handshake", "2025-11-25", ["inputSchema", "name", "title"]),
        (v2025_06_18, "handshake", "2025-06-18", ["inputSchema", "name", "title"]),
    ],
)
def test_one_in_process_server_serves_each_era_the_same_elicitation(
    protocol: Any, era: str, version: str, fields: list[str]
) -> None:
    assert asyncio.run(_session(protocol)) == (era, version, "hello Ada", fields)
