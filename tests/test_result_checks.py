"""Results are what their revision defines, on both sides.

* A server handler that returns plain data which is not a valid result of its revision has
  a bug: the peer gets -32603 and the log says what is wrong, never the bad data. So has
  one that returns no JSON object at all (``str``, ``None``, a list) or a model of another
  result type: before, that was sent as the result (``"result":"oops"``). The log names the
  method, the handler, what it returned and what was expected (issue 17, item 4).
* A client given an invalid result (by a peer that is not this runtime) raises
  :class:`InvalidResult`, a ``ProtocolViolation`` naming the method, the expected type and
  a clipped summary of what is wrong, not pydantic's raw ``ValidationError``.
* A client never takes a broken result for an alternative one: an open alternative with no
  required field (``InputRequiredResult``) matches only a result that says it is one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from typedmcp import InvalidResult, ProtocolViolation
from typedmcp.connecting import connect_direct, connect_memory, connect_stdio
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.results import could_be, validate_any_result
from typedmcp.protocol.stubs import ToolError
from mcp_generated import v2024_11_05, v2025_11_25, v2026_07_28
from mcp_generated.v2026_07_28 import models as modern
from mcp_generated.v2026_07_28.server import ServerHandlers as ModernHandlers

CONNECTORS = {"direct": connect_direct, "memory": connect_memory}
ECHO_SCHEMA = {"type": "object"}
INVALID_RESULT = "Internal error: the tools/call handler returned an invalid result"


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
            assert (failed.value.code, failed.value.message) == (-32603, INVALID_RESULT)

    with caplog.at_level(logging.ERROR, logger="typedmcp"):
        asyncio.run(body())
    assert any(
        "the tools/call handler PlainData.call_tool returned a dict ({'content': 'not a list'})"
        ", not a valid CallToolResult: content:" in record.message
        for record in caplog.records
    )


class NoObject(ModernHandlers):
    """Handlers that return no result object at all, or a model of another result."""

    async def call_tool(self, params: Any, ctx: Any) -> Any:
        returned: dict[str, Any] = {
            "str": "oops",
            "none": None,
            "list": [{"type": "text", "text": "a list of blocks"}],
            "model": modern.ListToolsResult(tools=[], ttl_ms=0, cache_scope="private"),
        }
        return returned[params.name]

    async def list_prompts(self, params: Any, ctx: Any) -> Any:
        return "not even a list"


NO_OBJECT_LOGS = {
    "str": "returned a str ('oops'), not a valid CallToolResult: a result must be a JSON object",
    "none": "returned None, not a valid CallToolResult: a result must be a JSON object",
    "list": "returned a list ([{'type': 'text', 'text': 'a list of blocks'}]), not a valid CallToolResult",
    "model": "returned a ListToolsResult (",
}


@pytest.mark.parametrize("protocol", [v2026_07_28, v2025_11_25], ids=["stateless", "handshake"])
@pytest.mark.parametrize("connector", sorted(CONNECTORS))
@pytest.mark.parametrize("returned", sorted(NO_OBJECT_LOGS))
def test_a_handler_that_returns_no_result_object_is_an_internal_error_naming_it(
    connector: str, protocol: Any, returned: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        async with CONNECTORS[connector](NoObject(), protocol=protocol) as client:
            with pytest.raises(RpcError) as failed:
                await client.call_tool(name=returned, arguments={})
            assert (failed.value.code, failed.value.message) == (-32603, INVALID_RESULT)
            with pytest.raises(RpcError) as listed:
                await client.list_prompts()
            assert listed.value.message == "Internal error: the prompts/list handler returned an invalid result"

    with caplog.at_level(logging.ERROR, logger="typedmcp"):
        asyncio.run(body())
    logged = [r.message for r in caplog.records if r.name == "typedmcp"]
    assert any(
        f"the tools/call handler NoObject.call_tool {NO_OBJECT_LOGS[returned]}" in line
        and "(return a models.CallToolResult, or a dict of its wire fields)" in line
        for line in logged
    ), logged
    assert any("the prompts/list handler NoObject.list_prompts returned a str" in line for line in logged)


# -- the client: an invalid result from a peer that is not this runtime -------------------------

#: A stdio server speaking raw JSON-RPC: it answers server/discover (``modern``) or refuses
#: it and answers initialize, then answers tools/call with what argv[2] holds (JSON).
RAW_SERVER = """\
import json, sys

modern, answer = sys.argv[1] == "modern", json.loads(sys.argv[2])
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, reply = message["method"], {"jsonrpc": "2.0", "id": message["id"]}
    if method == "server/discover" and modern:
        reply["result"] = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                           "ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
    elif method == "server/discover" or method != "initialize" and method != "tools/call":
        reply["error"] = {"code": -32601, "message": "Method not found"}
    elif method == "initialize":
        reply["result"] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "raw", "version": "1"}}
    else:
        reply["result"] = answer
    print(json.dumps(reply), flush=True)
"""


@pytest.mark.parametrize("era", ["modern", "handshake"])
@pytest.mark.parametrize(
    ("answer", "problem"),
    [("oops", "(root): Input should be a valid dictionary"), ({"content": "not a list"}, "content: ")],
    ids=["str", "bad-content"],
)
def test_a_client_given_an_invalid_result_raises_a_named_error(
    tmp_path: Path, era: str, answer: Any, problem: str
) -> None:
    script = tmp_path / "raw_server.py"
    script.write_text(RAW_SERVER)
    protocol = v2026_07_28 if era == "modern" else v2025_11_25

    async def body() -> None:
        command = [sys.executable, str(script), era, json.dumps(answer)]
        async with connect_stdio(command, protocol=protocol) as client:
            assert client.session.era == ("stateless" if era == "modern" else "handshake")
            with pytest.raises(InvalidResult) as failed:
                await client.call_tool(name="weather", arguments={})
        error = failed.value
        assert isinstance(error, ProtocolViolation)
        assert (error.method, error.expected) == ("tools/call", "CallToolResult")
        assert str(error).startswith("the peer answered tools/call with an invalid CallToolResult: ")
        assert problem in error.problem and len(error.problem) < 1200

    asyncio.run(asyncio.wait_for(body(), 60))


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
