"""Fixture server of ``tests/test_gateway_passthrough.py`` (2026-07-28 and handshake eras):
tools whose answers test what the gateway's pass-through relays as it came and what it
completes, checks or turns into errors.

    python tests/servers/passthrough_server.py

Plain handlers returning wire dicts, so results can carry what models would not write:
keys in an unusual order, ``_meta`` of their own, a field no schema names.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import run_stdio
from mcp_generated.v2026_07_28 import models
from mcp_generated.v2026_07_28.server import ClientPeer, ServerHandlers

Ctx = RequestContext[ClientPeer]
OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}
TOOLS: list[dict[str, Any]] = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "odd", "inputSchema": OBJECT},
    {"name": "failing", "inputSchema": {"type": "object", "properties": {"code": {"type": "integer"}}}},
    {"name": "weather", "inputSchema": {"type": "object", "properties": {"broken": {"type": "boolean"}}},
     "outputSchema": WEATHER},
    {"name": "progress", "inputSchema": OBJECT},
    {"name": "slow", "inputSchema": {"type": "object", "properties": {"label": {"type": "string"}, "seconds": {"type": "number"}}}},
    {"name": "cancelled", "inputSchema": OBJECT},
    {"name": "ask", "inputSchema": OBJECT},
]
STARTED: list[str] = []
CANCELLED: list[str] = []


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


PROMPTS: list[dict[str, Any]] = [
    {"name": "greet", "description": "Greets", "arguments": [{"name": "who", "required": False}]},
    {"name": "failing"},
    {"name": "slow"},
]


class PassThroughFixture(ServerHandlers):
    async def list_prompts(self, params: Any, ctx: Ctx) -> dict[str, Any]:
        return {"prompts": PROMPTS}

    async def get_prompt(self, params: Any, ctx: Ctx) -> dict[str, Any]:
        if params.name == "failing":
            raise RpcError(-32602, "no such topic", {"prompt": "failing"})
        if params.name == "slow":
            await asyncio.sleep(5)
        who = (params.arguments or {}).get("who", "nobody")
        return {"messages": [{"content": {"text": f"Hello {who}", "type": "text"}, "role": "user"}],
                "description": "a greeting", "_meta": {"fixture/prompt": who}}

    async def list_tools(self, params: Any, ctx: Ctx) -> dict[str, Any]:
        return {"tools": TOOLS}

    async def call_tool(self, params: Any, ctx: Ctx) -> dict[str, Any]:
        args: dict[str, Any] = params.arguments or {}
        name = params.name
        if name == "echo":
            return {"content": [text(str(args["text"]))]}
        if name == "odd":  # keys in an odd order, a _meta of its own, a field no schema names
            return {"isError": False, "x-fixture": {"kept": [1, 2.5, None]},
                    "_meta": {"fixture/seen": True}, "content": [text("odd"), {"type": "text", "text": "é ☃"}]}
        if name == "failing":
            code = int(args.get("code", -32603))
            raise RpcError(code, f"failing with {code}", {"asked": code})
        if name == "weather":
            if args.get("broken"):
                return {"content": [text("hot")], "structuredContent": {"city": "Oslo", "celsius": "hot"}}
            return {"content": [text("21.5")], "structuredContent": {"city": "Oslo", "celsius": 21.5}}
        if name == "progress":  # the second report does not increase: it is not passed on
            for step, message in ((1, "one"), (1, "again"), (2, None), (3, "three")):
                await ctx.report_progress(step, 3, message)
                await asyncio.sleep(0.005)
            return {"content": [text("progressed")]}
        if name == "slow":
            label = str(args.get("label", "?"))
            STARTED.append(label)
            try:
                await asyncio.sleep(float(args.get("seconds", 30)))
            except asyncio.CancelledError:
                CANCELLED.append(label)
                raise
            return {"content": [text(f"{label} finished")]}
        if name == "cancelled":
            return {"content": [text(json.dumps({"started": STARTED, "cancelled": CANCELLED}))]}
        if name == "ask":  # a 2026-07-28 input round: the host's elicitation hook answers
            form = {"type": "object", "properties": {"name": {"type": "string"}}}
            answer = await ctx.peer.elicit(models.ElicitRequestFormParams.model_validate({"message": "Name?", "requestedSchema": form}))
            return {"content": [text(f"{answer.action}: {json.dumps(answer.content)}")]}
        raise RpcError(-32602, f"Unknown tool: {name}")


if __name__ == "__main__":
    run_stdio(PassThroughFixture(), server_info={"name": "passthrough-fixture", "version": "1.0.0"})
