"""Fixture server of ``tests/test_interop_sdk_modern.py``: one handler object, both eras.

    python tests/servers/modern_server.py --stdio
    python tests/servers/modern_server.py --port 8123      # http://127.0.0.1:8123/mcp

The handlers are typed with the generated **2025-11-25** package, not 2026-07-28, on purpose:

* it is the revision a server written today already targets, so the test shows such a server
  gains the stateless era (discover, per-request ``_meta``, multi round-trip requests, listen
  streams) by running on the runtime, without touching a handler;
* its result models carry no caching fields, so ``ttlMs``/``cacheScope`` on 2026-07-28 list and
  read results come from the runtime's ``CachePolicy`` (2026-07-28 models make them required,
  which would put them in every handler and leak them to handshake-era sessions);
* ``ctx.peer.create_message`` / ``elicit`` are the ordinary server-to-client requests of a
  2025-11-25 session and the input requests of a 2026-07-28 ``InputRequiredResult``, so the
  same handler code is exercised both ways.

Tool ``slow`` records its label in ``CANCELLED`` when its handler sees ``CancelledError``;
tool ``cancelled`` reports the labels started and cancelled so far (the tests' window into
the server process).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from typing import Any

from typedmcp.engine.jsonrpc import INVALID_PARAMS, RpcError
from typedmcp.protocol.feed import ChangeFeed
from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import run_stdio
from typedmcp.stateless.server import CachePolicy
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

Ctx = RequestContext[ClientPeer]

SERVER_INFO = {"name": "modern-fixture", "version": "1.2.3"}
INSTRUCTIONS = "Fixture server of the 2026-07-28 interop tests."
#: tools/list etc. are public for a minute; reads are private for a second.
CACHE = CachePolicy(
    ttl_ms=60_000,
    scope="public",
    per_method={"resources/read": (1_000, "private")},
)

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
README_URI, LOGO_URI, ITEM_TEMPLATE = "test://readme", "test://logo", "test://items/{id}"
README_TEXT = "Read me first."
TOPICS = ("mcp", "metadata", "mrtr", "sampling")
ITEM_IDS = ("1", "12", "42")

STARTED: list[str] = []
CANCELLED: list[str] = []


def text(value: str) -> models.TextContent:
    return models.TextContent(type="text", text=value)


def schema(
    properties: dict[str, Any] | None = None, required: Sequence[str] = ()
) -> models.ToolInputSchema:
    body: dict[str, Any] = {"type": "object", "properties": properties or {}}
    if required:
        body["required"] = list(required)
    return models.ToolInputSchema.model_validate(body)


STRING = {"type": "string"}
FORECAST_OUTPUT = {
    "type": "object",
    "properties": {"city": STRING, "celsius": {"type": "number"}, "sky": STRING},
    "required": ["city", "celsius", "sky"],
}
TOOLS = [
    models.Tool(name="content", description="Every content block type", input_schema=schema()),
    models.Tool(
        name="forecast",
        description="Structured weather",
        input_schema=schema({"city": STRING}, ["city"]),
        output_schema=models.ToolOutputSchema.model_validate(FORECAST_OUTPUT),
    ),
    models.Tool(
        name="lookup",
        description="Echoes a region mirrored in the Mcp-Param-Region header",
        input_schema=schema({"region": {"type": "string", "x-mcp-header": "Region"}}, ["region"]),
    ),
    models.Tool(
        name="sample",
        description="Asks the client's LLM",
        input_schema=schema({"prompt": STRING}, ["prompt"]),
    ),
    models.Tool(
        name="ask_twice",
        description="Two elicitations, the second uses the first",
        input_schema=schema(),
    ),
    models.Tool(
        name="progress", description="Reports progress 1, 2, 3 of 3", input_schema=schema()
    ),
    models.Tool(name="chatty", description="Logs at four levels", input_schema=schema()),
    models.Tool(
        name="slow",
        description="Sleeps; records its label when cancelled",
        input_schema=schema({"label": STRING, "seconds": {"type": "number"}}, ["label"]),
    ),
    models.Tool(
        name="cancelled",
        description="Labels of slow calls started and cancelled",
        input_schema=schema(),
    ),
    models.Tool(
        name="touch",
        description="Announces a change: tools, prompts, resources or a resource URI",
        input_schema=schema({"what": STRING}, ["what"]),
    ),
]
RESOURCES = [
    models.Resource(uri=README_URI, name="readme", mime_type="text/plain"),
    models.Resource(uri=LOGO_URI, name="logo", mime_type="image/png"),
]
TEMPLATES = [
    models.ResourceTemplate(uri_template=ITEM_TEMPLATE, name="item", mime_type="application/json")
]
PROMPTS = [
    models.Prompt(name="greet", description="A greeting"),
    models.Prompt(
        name="summarize",
        description="Summarize a topic",
        arguments=[models.PromptArgument(name="topic", required=True)],
    ),
    models.Prompt(name="interview", description="Asks the client's LLM for a question first"),
]


class ModernFixture(ServerHandlers):
    """Tools, resources, prompts and completions; see the module docstring."""

    # -- tools -------------------------------------------------------------------------------

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=TOOLS)

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: Ctx
    ) -> models.CallToolResult:
        args: dict[str, Any] = params.arguments or {}
        name = params.name
        if name == "content":
            return models.CallToolResult(
                content=[
                    text("hello"),
                    models.ImageContent(type="image", data=IMAGE, mime_type="image/png"),
                    models.AudioContent(type="audio", data=AUDIO, mime_type="audio/wav"),
                    models.ResourceLink(
                        type="resource_link", uri=README_URI, name="readme", mime_type="text/plain"
                    ),
                    models.EmbeddedResource(
                        type="resource",
                        resource=models.TextResourceContents(
                            uri=README_URI, mime_type="text/plain", text=README_TEXT
                        ),
                    ),
                ]
            )
        if name == "forecast":
            weather = {"city": args["city"], "celsius": 21.5, "sky": "clear"}
            return models.CallToolResult(
                content=[text(json.dumps(weather))], structured_content=weather
            )
        if name == "lookup":
            return models.CallToolResult(content=[text(f"region={args['region']}")])
        if name == "sample":
            return models.CallToolResult(
                content=[text(await self.sample(ctx, str(args["prompt"])))]
            )
        if name == "ask_twice":
            first = await self.elicit(ctx, "Your name?", "name")
            second = await self.elicit(ctx, f"Hello {first}, your favourite colour?", "colour")
            return models.CallToolResult(content=[text(f"{first} likes {second}")])
        if name == "progress":
            for step in (1, 2, 3):
                await ctx.report_progress(step, 3, f"step {step}")
                await asyncio.sleep(0.01)
            return models.CallToolResult(content=[text("progressed")])
        if name == "chatty":
            for level in ("debug", "info", "warning", "error"):
                await ctx.log(level, f"{level} message", "chatty")
            return models.CallToolResult(content=[text("logged")])
        if name == "slow":
            return models.CallToolResult(content=[text(await self.slow(str(args["label"]), args))])
        if name == "cancelled":
            return models.CallToolResult(
                content=[text(json.dumps({"started": STARTED, "cancelled": CANCELLED}))]
            )
        if name == "touch":
            await self.touch(ctx, str(args["what"]))
            return models.CallToolResult(content=[text(f"touched {args['what']}")])
        raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}")

    async def sample(self, ctx: Ctx, prompt: str) -> str:
        message = models.SamplingMessage(role="user", content=text(prompt))
        result = await ctx.peer.create_message(messages=[message], max_tokens=50)
        content = result.content
        answer = content.text if isinstance(content, models.TextContent) else "?"
        return f"{result.model} says {answer}"

    async def elicit(self, ctx: Ctx, message: str, field_name: str) -> str:
        form = models.ElicitRequestFormParamsRequestedSchema.model_validate(
            {"type": "object", "properties": {field_name: STRING}, "required": [field_name]}
        )
        result = await ctx.peer.elicit(
            models.ElicitRequestFormParams(message=message, requested_schema=form)
        )
        if result.action != "accept" or not result.content:
            return f"<{result.action}>"
        return str(result.content[field_name])

    async def slow(self, label: str, args: dict[str, Any]) -> str:
        STARTED.append(label)
        try:
            await asyncio.sleep(float(args.get("seconds", 30)))
        except asyncio.CancelledError:
            CANCELLED.append(label)
            raise
        return f"{label} finished"

    async def touch(self, ctx: Ctx, what: str) -> None:
        if what == "tools":
            await ctx.peer.send_tool_list_changed()
        elif what == "prompts":
            await ctx.peer.send_prompt_list_changed()
        elif what == "resources":
            await ctx.peer.send_resource_list_changed()
        else:
            await ctx.peer.send_resource_updated(uri=what)

    # -- resources ---------------------------------------------------------------------------

    async def list_resources(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListResourcesResult:
        return models.ListResourcesResult(resources=RESOURCES)

    async def list_resource_templates(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListResourceTemplatesResult:
        return models.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def read_resource(
        self, params: models.ReadResourceRequestParams, ctx: Ctx
    ) -> models.ReadResourceResult:
        uri = params.uri
        contents: models.TextResourceContents | models.BlobResourceContents
        if uri == README_URI:
            contents = models.TextResourceContents(
                uri=uri, mime_type="text/plain", text=README_TEXT
            )
        elif uri == LOGO_URI:
            contents = models.BlobResourceContents(uri=uri, mime_type="image/png", blob=IMAGE)
        elif uri.startswith("test://items/"):
            item = uri.removeprefix("test://items/")
            contents = models.TextResourceContents(
                uri=uri, mime_type="application/json", text=json.dumps({"id": item})
            )
        elif uri == "test://private":
            owner = await self.elicit(ctx, "Who is reading?", "owner")
            contents = models.TextResourceContents(
                uri=uri, mime_type="text/plain", text=f"for {owner}"
            )
        else:
            raise RpcError(INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})
        return models.ReadResourceResult(contents=[contents])

    # -- prompts and completion --------------------------------------------------------------

    async def list_prompts(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListPromptsResult:
        return models.ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(
        self, params: models.GetPromptRequestParams, ctx: Ctx
    ) -> models.GetPromptResult:
        args = params.arguments or {}
        if params.name == "greet":
            body = "Say hello."
        elif params.name == "summarize":
            body = f"Summarize {args['topic']}."
        elif params.name == "interview":
            body = f"Ask: {await self.sample(ctx, 'one interview question')}"
        else:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        return models.GetPromptResult(
            description=f"The {params.name} prompt",
            messages=[models.PromptMessage(role="user", content=text(body))],
        )

    async def complete(
        self, params: models.CompleteRequestParams, ctx: Ctx
    ) -> models.CompleteResult:
        ref, argument = params.ref, params.argument
        pool: Sequence[str] = ()
        if isinstance(ref, models.PromptReference) and (ref.name, argument.name) == (
            "summarize",
            "topic",
        ):
            pool = TOPICS
        elif isinstance(ref, models.ResourceTemplateReference) and ref.uri == ITEM_TEMPLATE:
            pool = ITEM_IDS
        values = [value for value in pool if value.startswith(argument.value)]
        return models.CompleteResult(
            completion=models.CompleteResultCompletion(
                values=values, total=len(values), has_more=False
            )
        )


def options() -> dict[str, Any]:
    return {
        "server_info": SERVER_INFO,
        "instructions": INSTRUCTIONS,
        "list_changed": ("tools", "prompts", "resources"),
        "changes": ChangeFeed(),
        "cache": CACHE,
        "resource_subscriptions": True,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    transport = parser.add_mutually_exclusive_group(required=True)
    transport.add_argument("--stdio", action="store_true")
    transport.add_argument("--port", type=int)
    args = parser.parse_args(argv)
    if args.stdio:
        run_stdio(ModernFixture(), **options())
        return
    import uvicorn

    from typedmcp.serving import http_app

    uvicorn.run(
        http_app(ModernFixture(), **options()),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
