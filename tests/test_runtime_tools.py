"""Tool schemas at run time: arguments and structured output are checked; function export."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from typedmcp.connecting import connect_memory
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.client import ToolOutputError
from typedmcp.protocol.tools import as_functions
from mcp_generated import v2025_06_18, v2025_11_25

WEATHER = {
    "name": "weather",
    "description": "Current weather",
    "inputSchema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
        "required": ["city"],
    },
    "outputSchema": {
        "type": "object",
        "properties": {"celsius": {"type": "number"}},
        "required": ["celsius"],
    },
}


def weather_server(package: Any, structured: Any) -> Any:
    class Weather(package.server.ServerHandlers):  # type: ignore[misc,name-defined]
        async def list_tools(self, params: Any, ctx: Any) -> Any:
            return {"tools": [WEATHER]}

        async def call_tool(self, params: Any, ctx: Any) -> Any:
            result = {"content": [{"type": "text", "text": "ok"}], "structuredContent": structured}
            if structured is None:  # no structured output (null is not a value the schema allows)
                del result["structuredContent"]
            return result

    return Weather()


def run(package: Any, structured: Any, body: Callable[[Any], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with connect_memory(weather_server(package, structured), protocol=package) as client:
            return await body(client)

    return asyncio.run(main())


def test_valid_arguments_reach_the_tool() -> None:
    result = run(v2025_11_25, {"celsius": 21}, lambda c: c.call_tool(name="weather", arguments={"city": "Oslo"}))
    assert result.structured_content == {"celsius": 21}


def test_invalid_arguments_are_a_tool_error_result_from_2025_11_25() -> None:
    result = run(v2025_11_25, {"celsius": 21}, lambda c: c.call_tool(name="weather", arguments={"days": 0}))
    assert result.is_error is True
    text = result.content[0].text
    assert text.startswith("Invalid arguments for tool weather:")
    assert "'city' is a required property" in text
    assert "/days: 0 is less than the minimum of 1" in text


def test_invalid_arguments_are_invalid_params_before_2025_11_25() -> None:
    with pytest.raises(RpcError) as raised:
        run(v2025_06_18, {"celsius": 21}, lambda c: c.call_tool(name="weather", arguments={}))
    assert raised.value.code == -32602
    assert "Invalid arguments for tool weather" in raised.value.message


def test_a_tool_that_is_not_listed_reaches_the_handler_unchecked() -> None:
    result = run(v2025_11_25, None, lambda c: c.call_tool(name="hidden", arguments={"x": 1}))
    assert result.content[0].text == "ok"


def test_structured_output_breaking_the_output_schema_is_an_internal_error() -> None:
    with pytest.raises(RpcError) as raised:
        run(v2025_11_25, {"celsius": "warm"}, lambda c: c.call_tool(name="weather", arguments={"city": "Oslo"}))
    assert (raised.value.code, raised.value.message) == (-32603, "Internal error")


def model_weather_server(structured: Any, *, is_error: bool | None = None) -> Any:
    """The weather tool answering with a ``CallToolResult`` model, not a wire dict (the
    server checks a model's ``structured_content`` before dumping it)."""
    models = v2025_11_25.models

    class Weather(v2025_11_25.server.ServerHandlers):
        async def list_tools(self, params: Any, ctx: Any) -> Any:
            return {"tools": [WEATHER]}

        async def call_tool(self, params: Any, ctx: Any) -> Any:
            return models.CallToolResult(
                content=[models.TextContent(type="text", text="ok")],
                structured_content=structured,
                is_error=is_error,
            )

    return Weather()


def call_model_weather(server: Any) -> Any:
    async def main() -> Any:
        async with connect_memory(server, protocol=v2025_11_25) as client:
            return await client.call_tool(name="weather", arguments={"city": "Oslo"})

    return asyncio.run(main())


@pytest.mark.parametrize("structured", [{"celsius": "warm"}, {}])
def test_a_result_model_breaking_the_output_schema_is_an_internal_error(structured: Any) -> None:
    with pytest.raises(RpcError) as raised:
        call_model_weather(model_weather_server(structured))
    assert (raised.value.code, raised.value.message) == (-32603, "Internal error")


def test_a_result_model_within_the_output_schema_is_answered() -> None:
    assert call_model_weather(model_weather_server({"celsius": 21.5})).structured_content == {"celsius": 21.5}
    errored = call_model_weather(model_weather_server({"celsius": "n/a"}, is_error=True))
    assert errored.is_error is True  # an error result's structured content is not checked


def test_client_checks_structured_output_against_the_listed_schema() -> None:
    async def body(client: Any) -> Any:
        await client.list_tools()
        return await client.call_tool(name="weather", arguments={"city": "Oslo"})

    async def main() -> Any:
        server = weather_server(v2025_11_25, {"celsius": "warm"})
        async with connect_memory(
            server, protocol=v2025_11_25, server_options={"validate_tools": False}
        ) as client:
            return await body(client)

    with pytest.raises(ToolOutputError, match="breaks its outputSchema"):
        asyncio.run(main())


def test_tools_export_as_function_calling_definitions() -> None:
    async def body(client: Any) -> Any:
        listed = await client.list_tools()
        return as_functions(listed.tools), client.session.tools_as_functions()

    functions, remembered = run(v2025_11_25, {"celsius": 1}, body)
    assert functions == remembered == [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Current weather",
                "parameters": WEATHER["inputSchema"],
            },
        }
    ]
