"""A stdio MCP server built on the official Python SDK (mcp 2.3.0, low-level ``Server``).

The peer that ``tests/test_interop_sdk_server.py`` drives with our generated client. Results
are plain wire dicts, so the tests can compare exact values; the SDK validates each against
the negotiated revision before sending it. ``PEER_PROTOCOL_VERSION=2025-06-18`` makes the
server answer ``initialize`` with that revision whatever the client offered (the SDK itself
echoes any revision it knows), to exercise a client's downgrade path.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.runner import ServerRunner
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

warnings.simplefilter("ignore", MCPDeprecationWarning)

NAME, VERSION = "sdk-peer", "2.3.0-test"
INSTRUCTIONS = "Official-SDK peer for mcp-codegen's interop tests."
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
TEXT_URI, BLOB_URI, TEMPLATE = "sdk://text", "sdk://blob", "sdk://items/{id}"
OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def schema(**properties: str) -> dict[str, Any]:
    """An object schema whose properties (all required) have the given JSON types."""
    return {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }


TOOLS: list[dict[str, Any]] = [
    {"name": "text", "description": "One text block", "inputSchema": OBJECT},
    {"name": "image", "description": "One image block", "inputSchema": OBJECT},
    {"name": "audio", "description": "One audio block", "inputSchema": OBJECT},
    {"name": "embedded", "description": "Embedded text and blob resources", "inputSchema": OBJECT},
    {"name": "link", "description": "A resource link", "inputSchema": OBJECT},
    {
        "name": "structured",
        "title": "Structured weather",
        "description": "Structured content with an output schema",
        "inputSchema": schema(city="string"),
        "outputSchema": schema(city="string", celsius="number"),
    },
    {"name": "fail", "description": "Returns isError", "inputSchema": OBJECT},
    {"name": "log", "description": "Logs at info, warning and error", "inputSchema": OBJECT},
    {"name": "progress", "description": "Reports progress 1, 2, 3 of 3", "inputSchema": OBJECT},
    {"name": "sample", "description": "sampling/createMessage", "inputSchema": schema(prompt="string")},
    {"name": "elicit", "description": "elicitation/create (form)", "inputSchema": schema(message="string")},
    {"name": "roots", "description": "roots/list", "inputSchema": OBJECT},
    {"name": "client_info", "description": "What the client declared", "inputSchema": OBJECT},
    {"name": "slow", "description": "Sleeps durationMs", "inputSchema": schema(durationMs="number")},
    {"name": "cancelled", "description": "Ids of slow calls that were cancelled", "inputSchema": OBJECT},
    {"name": "change_tools", "description": "Sends tools/list_changed", "inputSchema": OBJECT},
    {"name": "touch", "description": "Sends resources/updated to subscribers", "inputSchema": OBJECT},
]

state: dict[str, Any] = {"level": None, "subscriptions": set(), "cancelled": []}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def result(*content: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"content": list(content), **extra}


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> dict[str, Any]:
    args = params.arguments or {}
    session = ctx.session
    name = params.name
    if name == "text":
        return result(text("Hello from the SDK server"))
    if name == "image":
        return result({"type": "image", "data": IMAGE, "mimeType": "image/png"})
    if name == "audio":
        return result({"type": "audio", "data": AUDIO, "mimeType": "audio/wav"})
    if name == "embedded":
        return result(
            {"type": "resource", "resource": {"uri": TEXT_URI, "mimeType": "text/plain", "text": "embedded text"}},
            {"type": "resource", "resource": {"uri": BLOB_URI, "mimeType": "image/png", "blob": IMAGE}},
        )
    if name == "link":
        link = {"type": "resource_link", "uri": TEXT_URI, "name": "text", "mimeType": "text/plain"}
        return result(link)
    if name == "structured":
        weather = {"city": args["city"], "celsius": 21.5}
        return result(text(json.dumps(weather)), structuredContent=weather)
    if name == "fail":
        return result(text("the SDK tool failed"), isError=True)
    if name == "log":
        for level, message in (("info", "first"), ("warning", "second"), ("error", "third")):
            if state["level"] is None or LEVELS.index(level) >= LEVELS.index(state["level"]):
                await session.send_log_message(level, {"message": message}, "sdk-peer", ctx.request_id)
        return result(text("logged"))
    if name == "progress":
        for step in (1, 2, 3):
            await session.report_progress(step, 3, f"step {step}")
        return result(text("progressed"))
    if name == "sample":
        prompt = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=args["prompt"]))
        answer = await session.create_message(
            [prompt], max_tokens=64, system_prompt="Be brief.", related_request_id=ctx.request_id
        )
        return result(text(f"{answer.model}/{answer.role}/{answer.stop_reason}: {answer.content.text}"))
    if name == "elicit":
        requested = schema(name="string", age="integer")
        answer = await session.elicit_form(args["message"], requested, ctx.request_id)
        return result(text(f"{answer.action} {json.dumps(answer.content, sort_keys=True)}"))
    if name == "roots":
        listed = await session.list_roots()
        return result(*(text(f"{root.uri} {root.name}") for root in listed.roots))
    if name == "client_info":
        declared = session.client_params
        return result(
            text(json.dumps(declared.client_info.model_dump(mode="json", exclude_none=True))),
            text(json.dumps(declared.capabilities.model_dump(mode="json", by_alias=True, exclude_none=True))),
            text(session.protocol_version),
        )
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
        await session.send_tool_list_changed()
        return result(text("sent"))
    if name == "touch":
        for uri in sorted(state["subscriptions"]):
            await session.send_resource_updated(uri)
        return result(text(f"touched {len(state['subscriptions'])}"))
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")


async def list_tools(ctx: Any, params: Any) -> dict[str, Any]:
    return {"tools": TOOLS}


async def list_resources(ctx: Any, params: Any) -> dict[str, Any]:
    return {
        "resources": [
            {"uri": TEXT_URI, "name": "text", "mimeType": "text/plain"},
            {"uri": BLOB_URI, "name": "blob", "description": "A PNG", "mimeType": "image/png"},
        ]
    }


async def list_templates(ctx: Any, params: Any) -> dict[str, Any]:
    return {"resourceTemplates": [{"uriTemplate": TEMPLATE, "name": "item", "mimeType": "application/json"}]}


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> dict[str, Any]:
    uri = str(params.uri)
    if uri == TEXT_URI:
        return {"contents": [{"uri": uri, "mimeType": "text/plain", "text": "SDK text resource"}]}
    if uri == BLOB_URI:
        return {"contents": [{"uri": uri, "mimeType": "image/png", "blob": IMAGE}]}
    if uri.startswith("sdk://items/"):
        item = uri.removeprefix("sdk://items/")
        return {"contents": [{"uri": uri, "mimeType": "application/json", "text": json.dumps({"id": item})}]}
    raise MCPError(code=-32002, message=f"Resource not found: {uri}")


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> dict[str, Any]:
    state["subscriptions"].add(str(params.uri))
    return {}


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> dict[str, Any]:
    state["subscriptions"].discard(str(params.uri))
    return {}


async def list_prompts(ctx: Any, params: Any) -> dict[str, Any]:
    return {
        "prompts": [
            {"name": "greet", "description": "Greets someone", "arguments": [{"name": "who", "required": True}]},
            {"name": "picture", "description": "An image prompt"},
        ]
    }


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> dict[str, Any]:
    args = params.arguments or {}
    if params.name == "greet":
        return {
            "description": "A greeting",
            "messages": [
                {"role": "user", "content": text(f"Say hello to {args.get('who', 'nobody')}")},
                {"role": "assistant", "content": text("Hello!")},
            ],
        }
    if params.name == "picture":
        return {"messages": [{"role": "user", "content": {"type": "image", "data": IMAGE, "mimeType": "image/png"}}]}
    raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")


async def complete(ctx: Any, params: types.CompleteRequestParams) -> dict[str, Any]:
    words = ["alice", "albert", "bob"] if params.argument.name == "who" else []
    values = [w for w in words if w.startswith(params.argument.value)]
    return {"completion": {"values": values, "total": len(values), "hasMore": False}}


async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> dict[str, Any]:
    state["level"] = params.level
    return {}


def force_protocol_version(version: str) -> None:
    """Answer ``initialize`` with ``version`` (the SDK would echo the client's offer)."""
    negotiate = ServerRunner._negotiate_initialize

    def forced(params: Any) -> tuple[types.InitializeRequestParams, str]:
        initialize, _ = negotiate(params)
        return initialize, version

    ServerRunner._negotiate_initialize = staticmethod(forced)  # type: ignore[method-assign]


def build() -> Server[Any]:
    return Server(
        NAME,
        version=VERSION,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
        on_set_logging_level=set_level,
    )


async def main() -> None:
    if forced := os.environ.get("PEER_PROTOCOL_VERSION"):
        force_protocol_version(forced)
    server = build()
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, options)


if __name__ == "__main__":
    anyio.run(main)
