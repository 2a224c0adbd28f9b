"""A one-tool MCP server over stdio: ``python examples/weather_server.py``."""

from typedmcp import INVALID_PARAMS, RequestContext, RpcError, run_stdio
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

CITY = models.ToolInputSchema(type="object", properties={"city": {"type": "string"}}, required=["city"])
WEATHER = models.Tool(name="weather", description="Today's weather in a city", input_schema=CITY)


class Weather(ServerHandlers):
    """Serves the ``weather`` tool; capabilities follow from the two methods overridden."""

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[WEATHER])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        """The runtime has checked the arguments against ``CITY`` before this runs."""
        if params.name != WEATHER.name:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        city = (params.arguments or {})["city"]
        return models.CallToolResult(content=[models.TextContent(type="text", text=f"Sunny in {city}")])


if __name__ == "__main__":
    run_stdio(Weather(), server_info={"name": "weather", "version": "1.0.0"})
