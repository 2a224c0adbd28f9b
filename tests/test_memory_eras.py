"""In-process connections serve both eras, like stdio: auto picks 2026-07-28, a pin does not.
Both connectors: JSON-RPC bytes between two engines (``connect_memory``) and direct calls
without a transport (``connect_direct``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from typedmcp.connecting import connect_direct, connect_memory
from typedmcp.engine.jsonrpc import RpcError
from mcp_generated import v2025_06_18, v2025_11_25, v2026_07_28
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import ClientHandlers
from mcp_generated.v2025_11_25.server import ServerHandlers

EMPTY = models.ToolInputSchema(type="object")


class Asker(ServerHandlers):
    async def list_tools(self, params: Any, ctx: Any) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[models.Tool(name="ask", title="Ask", input_schema=EMPTY)])

    async def call_tool(self, params: Any, ctx: Any) -> models.CallToolResult:
        if params.name == "boom":
            raise RuntimeError("a bug in the handler")
        await ctx.report_progress(1, 2)
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


CONNECTORS = {"memory": connect_memory, "direct": connect_direct}


async def _session(connector: str, protocol: Any) -> tuple[str, str, str, list[str]]:
    connect = CONNECTORS[connector]
    async with connect(Asker(), protocol=protocol, client_handlers=User()) as client:
        tools = await client.list_tools()
        progress: list[float] = []
        client.session.progress_callbacks["p"] = lambda note: progress.append(note.progress)
        result = await client.call_tool(name="ask", arguments={}, meta={"progressToken": "p"})
        assert progress == [1] * (2 if client.session.era == "stateless" else 1)  # once per round
        with pytest.raises(RpcError) as failed:
            await client.call_tool(name="boom", arguments={})
        assert (failed.value.code, failed.value.message) == (-32603, "Internal error")
        return (
            client.session.era,
            client.session.protocol_version,
            result.content[0].text,
            sorted(tools.model_dump(by_alias=True, exclude_unset=True)["tools"][0]),
        )


@pytest.mark.parametrize("connector", sorted(CONNECTORS))
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
    connector: str, protocol: Any, era: str, version: str, fields: list[str]
) -> None:
    assert asyncio.run(_session(connector, protocol)) == (era, version, "hello Ada", fields)
