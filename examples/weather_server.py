"""A one-tool MCP server over stdio: ``python examples/weather_server.py``."""

from typedmcp import run_stdio
from typedmcp.app import McpApp

app = McpApp("weather", version="1.0.0")


@app.tool()
def weather(city: str) -> str:
    """Today's weather in a city

    Args:
        city: The city's name, e.g. Oslo.
    """
    return f"Sunny in {city}"


if __name__ == "__main__":
    run_stdio(app)
