"""One McpApp declaration, every revision: what a revision cannot express is dropped for it
by the runtime's sieve (``outputSchema``, ``structuredContent`` and ``title`` before
2025-06-18, tool ``annotations`` in 2024-11-05, ``icons`` before 2025-11-25)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from typedmcp.app import McpApp
from typedmcp.connecting import connect_memory
from mcp_generated import v2024_11_05, v2025_03_26, v2025_06_18, v2025_11_25


class Forecast(BaseModel):
    city: str
    celsius: float


app = McpApp("weather", version="1.0.0")


@app.tool(
    title="Forecast",
    annotations={"readOnlyHint": True},
    icons=[{"src": "https://example.com/sun.png", "mimeType": "image/png"}],
)
def forecast(city: str) -> Forecast:
    """Tomorrow's weather."""
    return Forecast(city=city, celsius=21.5)


INPUT = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
OUTPUT = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}
TEXT = [{"type": "text", "text": '{"city": "Oslo", "celsius": 21.5}'}]


@pytest.mark.parametrize(
    ("package", "tool", "result"),
    [
        (
            v2025_11_25,
            {
                "name": "forecast", "title": "Forecast", "description": "Tomorrow's weather.",
                "annotations": {"readOnlyHint": True},
                "icons": [{"src": "https://example.com/sun.png", "mimeType": "image/png"}],
                "inputSchema": INPUT, "outputSchema": OUTPUT,
            },
            {"content": TEXT, "structuredContent": {"city": "Oslo", "celsius": 21.5}},
        ),
        (
            v2025_06_18,
            {
                "name": "forecast", "title": "Forecast", "description": "Tomorrow's weather.",
                "annotations": {"readOnlyHint": True}, "inputSchema": INPUT, "outputSchema": OUTPUT,
            },
            {"content": TEXT, "structuredContent": {"city": "Oslo", "celsius": 21.5}},
        ),
        (
            v2025_03_26,
            {
                "name": "forecast", "description": "Tomorrow's weather.",
                "annotations": {"readOnlyHint": True}, "inputSchema": INPUT,
            },
            {"content": TEXT},
        ),
        (
            v2024_11_05,
            {"name": "forecast", "description": "Tomorrow's weather.", "inputSchema": INPUT},
            {"content": TEXT},
        ),
    ],
    ids=lambda value: getattr(value, "PROTOCOL_VERSION", None) or "",
)
def test_each_revision_gets_what_it_can_express(package: Any, tool: dict[str, Any], result: dict[str, Any]) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with connect_memory(app, protocol=package) as client:
            listed = (await client.list_tools()).model_dump(by_alias=True, exclude_unset=True)
            called = await client.call_tool(name="forecast", arguments={"city": "Oslo"})
            return listed["tools"], called.model_dump(by_alias=True, exclude_unset=True)

    listed, called = asyncio.run(scenario())
    assert listed == [tool]
    assert called == result
