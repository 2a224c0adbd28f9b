"""A 2026-07-28 (stateless era) MCP server built on the official Python SDK (mcp 2.3.0).

The peer ``tests/test_modern_client.py`` drives with our generated client. It is the SDK's
low-level ``Server`` (dual-era: it also answers ``initialize``), with caching hints, a
``subscriptions/listen`` handler, and tools that ask for input the stateless way (an
``InputRequiredResult`` carrying sampling / elicitation / roots requests and a
``requestState``). Results are plain wire dicts so the tests can compare exact values.

``python sdk_modern_server.py`` serves stdio; ``--http`` serves Streamable HTTP under
uvicorn on 127.0.0.1 (a free port, announced as ``PORT <n>`` on stdout; path ``/mcp``).
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import anyio
import mcp_types as types
from _serve import serve_on_free_port
from mcp.server.caching import CacheHint
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

warnings.simplefilter("ignore", MCPDeprecationWarning)

NAME, VERSION = "sdk-modern-peer", "2.3.0-test"
INSTRUCTIONS = "Official-SDK 2026-07-28 peer for mcp-codegen's client tests."
TEXT_URI, TEMPLATE = "sdk://text", "sdk://items/{id}"
OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
UNICODE_TOOL = "météo"
STATE = "opaque-state:1"
MODERN = "2026-07-28"


def schema(**properties: str) -> dict[str, Any]:
    """An object schema whose properties (all required) have the given JSON types."""
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }


HEADERED = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "x-mcp-header": "Priority"},
        "note": {"type": "string"},
    },
    "required": ["region"],
}
BROKEN = {"type": "object", "properties": {"data": {"type": "object", "x-mcp-header": "Data"}}}

TOOLS: list[dict[str, Any]] = [
    {"name": "text", "description": "One text block", "inputSchema": OBJECT},
    {"name": "meta", "description": "The request _meta the server saw", "inputSchema": OBJECT},
    {"name": "sample", "description": "Asks for a sampling answer", "inputSchema": schema(prompt="string")},
    {"name": "elicit", "description": "Asks for a form, then for roots", "inputSchema": OBJECT},
    {"name": "progress", "description": "Reports progress 1, 2, 3 of 3", "inputSchema": OBJECT},
    {"name": "slow", "description": "Sleeps durationMs", "inputSchema": schema(durationMs="number")},
    {"name": "cancelled", "description": "Names of slow calls that were cancelled", "inputSchema": OBJECT},
    {"name": "change_tools", "description": "Publishes tools/list_changed", "inputSchema": OBJECT},
    {"name": "headers", "description": "Echoes region and priority", "inputSchema": HEADERED},
    {"name": UNICODE_TOOL, "description": "A tool with a non-ASCII name", "inputSchema": OBJECT},
    {"name": "broken", "description": "An invalid x-mcp-header annotation", "inputSchema": BROKEN},
]

bus = InMemorySubscriptionBus()
state: dict[str, Any] = {"cancelled": []}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def result(*content: dict[str, Any]) -> dict[str, Any]:
    return {"content": list(content)}


def ask(requests: dict[str, Any], request_state: str | None = None) -> types.InputRequiredResult:
    """An input-required answer (``input_requests`` entries are wire dicts)."""
    wire: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if request_state is not None:
        wire["requestState"] = request_state
    return types.InputRequiredResult.model_validate(wire)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> Any:
    args = params.arguments or {}
    answers = {key: value.model_dump(mode="json", by_alias=True, exclude_none=True)
               for key, value in (params.input_responses or {}).items()}
    name = params.name
    if name == "text":
        return result(text("Hello from the SDK modern server"))
    if name == "meta":
        meta = dict(ctx.meta or {})
        return result(text(json.dumps(meta, sort_keys=True)), text(ctx.protocol_version))
    if name == "sample":
        if "answer" not in answers:
            message = {"role": "user", "content": text(args["prompt"])}
            request = {"method": "sampling/createMessage",
                       "params": {"messages": [message], "maxTokens": 64, "systemPrompt": "Be brief."}}
            return ask({"answer": request})
        answer = answers["answer"]
        return result(text(f"{answer['model']}/{answer['role']}/{answer.get('stopReason')}: "
                           f"{answer['content']['text']}"))
    if name == "elicit":
        # Round 1: a form (with state); round 2: the roots (state echoed back); then done.
        if params.request_state is None:
            form = {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Who are you?", "requestedSchema": schema(name="string", age="integer")}}
            return ask({"form": form}, STATE)
        if params.request_state == STATE:
            if "form" not in answers:
                raise MCPError(code=types.INVALID_PARAMS, message="the form answer is missing")
            form_answer = json.dumps(answers["form"], sort_keys=True)
            return ask({"roots": {"method": "roots/list", "params": {}}}, f"{STATE}|{form_answer}")
        roots = [root["uri"] for root in answers["roots"]["roots"]]
        return result(text(params.request_state.split("|", 1)[1]), text(" ".join(roots)))
    if name == "progress":
        for step in (1, 2, 3):
            await ctx.session.report_progress(step, 3, f"step {step}")
        return result(text("progressed"))
    if name == "slow":
        try:
            await anyio.sleep(float(args["durationMs"]) / 1000)
        except anyio.get_cancelled_exc_class():
            state["cancelled"].append(ctx.request_id)
            raise
        return result(text("slow done"))
    if name == "cancelled":
        return result(text(json.dumps(state["cancelled"])))
    if name == "change_tools":
        await bus.publish(ToolsListChanged())
        return result(text("published"))
    if name == "headers":
        return result(text(f"{args.get('region')} {args.get('priority')}"))
    if name == UNICODE_TOOL:
        return result(text("sunny"))
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")


async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
    return {"tools": TOOLS}


async def list_resources(ctx: Any, params: Any) -> dict[str, Any]:
    return {"resources": [{"uri": TEXT_URI, "name": "text", "mimeType": "text/plain"}]}


async def list_templates(ctx: Any, params: Any) -> dict[str, Any]:
    return {"resourceTemplates": [{"uriTemplate": TEMPLATE, "name": "item", "mimeType": "application/json"}]}


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> dict[str, Any]:
    uri = str(params.uri)
    if uri == TEXT_URI:
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "SDK text resource"}]}
    if uri.startswith("sdk://items/"):
        item = uri.removeprefix("sdk://items/")
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": json.dumps({"id": item})}]}
    raise MCPError(code=types.INVALID_PARAMS, message=f"Resource not found: {uri}")


async def list_prompts(ctx: Any, params: Any) -> dict[str, Any]:
    return {"prompts": [{"name": "greet", "description": "Greets someone",
                         "arguments": [{"name": "who", "required": True}]}]}


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> dict[str, Any]:
    if params.name != "greet":
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
    who = (params.arguments or {}).get("who", "nobody")
    return {"description": "A greeting", "messages": [{"role": "user", "content": text(f"Say hello to {who}")}]}


async def complete(ctx: Any, params: types.CompleteRequestParams) -> dict[str, Any]:
    words = ["alice", "albert", "bob"] if params.argument.name == "who" else []
    values = [w for w in words if w.startswith(params.argument.value)]
    return {"completion": {"values": values, "total": len(values), "hasMore": False}}


def stamped(handler: Any) -> Any:
    """Add ``resultType: "complete"`` to a dict result of a 2026-07-28 request (the SDK
    requires it of handlers that answer with plain dicts)."""

    async def handle(ctx: Any, params: Any) -> Any:
        answer = await handler(ctx, params)
        if isinstance(answer, dict) and ctx.protocol_version == MODERN:
            answer = {"resultType": "complete", **answer}
        return answer

    return handle


def build() -> Server[Any]:
    return Server(
        NAME,
        version=VERSION,
        instructions=INSTRUCTIONS,
        cache_hints={
            "tools/list": CacheHint(ttl_ms=60000, scope="public"),
            "resources/list": CacheHint(ttl_ms=5000, scope="private"),
            "resources/read": CacheHint(ttl_ms=1000, scope="private"),
            "resources/templates/list": CacheHint(ttl_ms=0, scope="private"),
            "prompts/list": CacheHint(ttl_ms=30000, scope="public"),
        },
        on_list_tools=stamped(list_tools),
        on_call_tool=stamped(call_tool),
        on_list_resources=stamped(list_resources),
        on_list_resource_templates=stamped(list_templates),
        on_read_resource=stamped(read_resource),
        on_list_prompts=stamped(list_prompts),
        on_get_prompt=stamped(get_prompt),
        on_completion=stamped(complete),
        on_subscriptions_listen=ListenHandler(bus),
    )


async def serve_stdio() -> None:
    server = build()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def serve_http() -> None:
    app = build().streamable_http_app()
    serve_on_free_port(app)


if __name__ == "__main__":
    if "--http" in sys.argv:
        serve_http()
    else:
        anyio.run(serve_stdio)
