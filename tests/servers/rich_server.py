"""A stdio server whose one tool uses fields of every revision up to 2025-11-25: title,
icons, outputSchema, annotations, structuredContent, audio and resource_link content."""

from __future__ import annotations

from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import run_stdio
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

OUTPUT = models.ToolOutputSchema(type="object", properties={"n": {"type": "integer"}})
RICH = models.Tool(
    name="rich",
    title="Rich tool",
    description="Uses every newer field",
    icons=[models.Icon(src="https://example.test/icon.png", mime_type="image/png")],
    input_schema=models.ToolInputSchema(type="object"),
    output_schema=OUTPUT,
    annotations=models.ToolAnnotations(read_only_hint=True),
)


class Rich(ServerHandlers):
    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[RICH])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        return models.CallToolResult(
            content=[
                models.TextContent(type="text", text="n is 1"),
                models.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
                models.ResourceLink(type="resource_link", uri="test://r", name="r"),
            ],
            structured_content={"n": 1},
        )


if __name__ == "__main__":
    run_stdio(Rich())
