"""A handshake-era (2025-11-25 only) stdio server whose tools ask their client mid-call;
fixture of ``tests/test_host_gateway_modern.py``.

* ``sample`` (``prompt``): one sampling request; the result is the answer's text.
* ``interview`` (``topic``): a sampling request, then an elicitation whose message quotes
  the sampled answer; the result says both (``<decline>`` for a declined form).
* ``wait`` (``label``): a sampling request; a cancelled call, or a refused request, is
  recorded (``stats``).
* ``stats``: ``{"cancelled": [...], "refused": [...]}`` (the test's window into it).

Writes its pid to ``$HOST_SERVER_PIDFILE`` like ``host_server.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import run_stdio
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

Ctx = RequestContext[ClientPeer]
STATS: dict[str, list[str]] = {"cancelled": [], "refused": []}
TOOLS = {
    "sample": {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
    "interview": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]},
    "wait": {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
    "stats": {"type": "object", "properties": {}},
}


def text(value: str) -> models.TextContent:
    return models.TextContent(type="text", text=value)


def result(value: Any) -> models.CallToolResult:
    return models.CallToolResult(content=[text(value if isinstance(value, str) else json.dumps(value))])


async def sample(ctx: Ctx, prompt: str) -> str:
    message = models.SamplingMessage(role="user", content=text(prompt))
    answer = await ctx.peer.create_message(messages=[message], max_tokens=20)
    content = answer.content
    return content.text if isinstance(content, models.TextContent) else "?"


class Asking(ServerHandlers):
    async def list_tools(self, params: Any, ctx: Ctx) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[
            models.Tool(name=name, input_schema=models.ToolInputSchema.model_validate(schema))
            for name, schema in TOOLS.items()
        ])

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        args: dict[str, Any] = params.arguments or {}
        if params.name == "sample":
            return result(await sample(ctx, str(args["prompt"])))
        if params.name == "interview":
            said = await sample(ctx, f"a question about {args['topic']}")
            form = models.ElicitRequestFormParamsRequestedSchema.model_validate(
                {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
            )
            reply = await ctx.peer.elicit(models.ElicitRequestFormParams(message=said, requested_schema=form))
            heard = str((reply.content or {}).get("answer")) if reply.action == "accept" else f"<{reply.action}>"
            return result(f"asked {said!r}, heard {heard}")
        if params.name == "wait":
            label = str(args["label"])
            try:
                return result(await sample(ctx, label))
            except asyncio.CancelledError:
                STATS["cancelled"].append(label)
                raise
            except RpcError as error:
                STATS["refused"].append(f"{label}: {error.message}")
                raise
        if params.name == "stats":
            return result(STATS)
        raise RpcError(-32602, f"Unknown tool: {params.name}")


def main() -> None:
    pidfile = os.environ.get("HOST_SERVER_PIDFILE")
    if pidfile:
        with open(pidfile, "a") as out:
            out.write(f"{os.getpid()}\n")
    run_stdio(Asking(), packages=[v2025_11_25])


if __name__ == "__main__":
    main()
