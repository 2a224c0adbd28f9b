"""The benchmark's minimal server on the official SDK (mcp 2.3.0): one ``echo`` tool.

Built on the SDK's low-level ``mcp.server.lowlevel.Server`` with ``on_list_tools`` and
``on_call_tool``, returning the SDK's own result models, as its documentation shows.
``python sdk_server.py stdio`` serves stdin/stdout (``stdio_server`` + ``Server.run``);
``python sdk_server.py http [--json-response]`` serves ``Server.streamable_http_app()`` (the
SDK's Starlette app: stateful sessions, SSE replies by default, JSON with
``--json-response``) under uvicorn on 127.0.0.1, printing ``PORT <n>`` once it listens.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)

NAME, VERSION = "bench-sdk", "1.0.0"
ECHO = types.Tool(
    name="echo",
    description="Echoes its text argument as one text block",
    input_schema={
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    text = (params.arguments or {}).get("text", "")
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(text))])


def build() -> Server[Any]:
    return Server(NAME, version=VERSION, on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    server = build()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "stdio":
        import anyio

        anyio.run(serve_stdio)
    elif mode == "http":
        from _uvicorn import MAX_SESSIONS, serve_on_free_port  # beside this script, shared by both peers

        # its default cap, set explicitly: the same as ours_shared_server's (see _uvicorn)
        app = build().streamable_http_app(
            json_response="--json-response" in argv, max_sessions=MAX_SESSIONS
        )
        serve_on_free_port(app)
    else:
        sys.exit(f"usage: {argv[0]} stdio|http [--json-response]")


if __name__ == "__main__":
    main(sys.argv)
