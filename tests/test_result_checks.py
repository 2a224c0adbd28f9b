"""Results are what their revision defines, on both sides.

* A server handler that returns plain data which is not a valid result of its revision has
  a bug: the peer gets -32603 and the log says what is wrong, never the bad data.
* A client never takes a broken result for an alternative one: an open alternative with no
  required field (``InputRequiredResult``) matches only a result that says it is one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from pydantic import ValidationError

from typedmcp.connecting import connect_direct, connect_memory
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.results import could_be, validate_any_result
from typedmcp.protocol.stubs import ToolError
from mcp_generated import v2024_11_05, v2025_11_25, v2026_07_28
from mcp_generated.v2026_07_28 import models as modern
from mcp_generated.v2026_07_28.server import ServerHandlers as ModernHandlers

CONNECTORS = {"direct": connect_direct, "memory": connect_memory}
ECHO_SCHEMA = {"type": "object"}


class PlainData(ModernHandlers):
    """Handlers typed with 2026-07-28 that return plain data, broken or not."""

    async def list_tools(self, params: Any, ctx: Any) -> Any:
        # no ttlMs/cacheScope: a stateless-era server adds its caching hints itself
        return {"tools": [{"name": "broken", "inputSchema": ECHO_SCHEMA}]}

    async def call_tool(self, params: Any, ctx: Any) -> Any:
        if params.name == "broken":
            return {"content": "not a list"}
        return {"content": [{"type": "text", "text": "fine"}]}


@pytest.mark.parametrize("protocol", [v2026_07_28, v2025_11_25], ids=["stateless", "handshake"])
@pytest.mark.parametrize("connector", sorted(CONNECTORS))
def test_a_broken_plain_result_reaches_the_peer_as_an_internal_error(
    connector: str, protocol: Any, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        async with CONNECTORS[connector](PlainData(), protocol=protocol) as client:
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == ["broken"]
            fine = await client.call_tool(name="fine", arguments={})
            assert fine.content[0].text == "fine"
            with pytest.raises(RpcError) as failed:
                await client.call_tool(name="broken", arguments={})
            assert (failed.value.code, failed.value.message) == (-32603, "Internal error")

    with caplog.at_level(logging.ERROR, logger="typedmcp"):
        asyncio.run(body())
    assert any(
        "tools/call handler returned a result that is not a valid CallToolResult" in record.message
        and "content" in record.message
        for record in caplog.records
    )


def test_a_broken_result_is_not_taken_for_an_input_required_result() -> None:
    spec = v2026_07_28.dispatch.REQUESTS["tools/call"]
    broken = {"content": "not a list", "resultType": "complete"}
    assert not could_be(modern.InputRequiredResult, broken)
    with pytest.raises(ValidationError, match="CallToolResult"):
        validate_any_result(spec, broken)
    asking = {"resultType": "input_required", "inputRequests": {}, "requestState": "s"}
    assert isinstance(validate_any_result(spec, asking), modern.InputRequiredResult)


def test_a_created_task_is_still_read_as_one() -> None:
    spec = v2025_11_25.dispatch.REQUESTS["tools/call"]
    task = {
        "taskId": "t1",
        "status": "working",
        "createdAt": "2026-11-30T00:00:00Z",
        "lastUpdatedAt": "2026-11-30T00:00:00Z",
        "ttl": 1000,
    }
    created = validate_any_result(spec, {"task": task})
    assert type(created).__name__ == "CreateTaskResult" and created.task.task_id == "t1"
    assert not could_be(v2025_11_25.models.CreateTaskResult, {"content": []})  # no task


# -- ToolError: a failure the model should read -------------------------------------------------


class Failing(ModernHandlers):
    async def list_tools(self, params: Any, ctx: Any) -> Any:
        return modern.ListToolsResult(tools=[], ttl_ms=0, cache_scope="private")

    async def call_tool(self, params: Any, ctx: Any) -> Any:
        if params.name == "crash":
            raise KeyError("a secret detail")
        raise ToolError(f"no weather for {params.arguments['city']}: the station is offline")

    async def list_prompts(self, params: Any, ctx: Any) -> Any:
        raise ToolError("only tools/call answers a ToolError with a result")


@pytest.mark.parametrize("protocol", [v2026_07_28, v2025_11_25, v2024_11_05], ids=lambda p: p.PROTOCOL_VERSION)
@pytest.mark.parametrize("connector", sorted(CONNECTORS))
def test_a_tool_error_is_a_result_the_model_reads_and_a_crash_tells_nothing(
    connector: str, protocol: Any
) -> None:
    async def body() -> None:
        async with CONNECTORS[connector](Failing(), protocol=protocol) as client:
            result = await client.call_tool(name="weather", arguments={"city": "Oslo"})
            assert result.is_error is True
            assert result.content[0].text == "no weather for Oslo: the station is offline"
            with pytest.raises(RpcError) as crashed:
                await client.call_tool(name="crash", arguments={})
            assert (crashed.value.code, crashed.value.message) == (-32603, "Internal error")
            with pytest.raises(RpcError) as elsewhere:
                await client.list_prompts()
            assert elsewhere.value.code == -32603

    asyncio.run(body())
