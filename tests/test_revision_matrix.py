"""Every pairing of revisions works end to end, in process.

A client typed with one revision, a server typed with another, the server serving one
handshake revision or every revision: each combination negotiates, lists and calls tools,
lists and reads resources, lists and gets prompts, completes an argument, and gets progress,
through both in-process connectors. This is where a type one revision requires and another
never sends shows up (an older server's list results read by a client typed with 2026-07-28
once failed here).
"""

from __future__ import annotations

import asyncio
import importlib
from types import ModuleType
from typing import Any

import pytest

from typedmcp.connecting import connect_direct, connect_memory

TYPED_WITH = ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"]
SERVED = ["2024-11-05", "2025-06-18", "2025-11-25", "every"]


def package(revision: str) -> ModuleType:
    return importlib.import_module(f"mcp_generated.v{revision.replace('-', '_')}")


def cacheable(models: ModuleType, name: str, **fields: Any) -> Any:
    """A result model; with the 2026-07-28 types, the caching hints it requires."""
    model = getattr(models, name)
    if "ttl_ms" in model.model_fields:
        fields.update(ttl_ms=1000, cache_scope="public")
    return model(**fields)


def server_handlers(revision: str) -> Any:
    """Handlers typed with ``revision``: one tool, one resource, one prompt, completion."""
    pkg = package(revision)
    models = pkg.models

    class Handlers(pkg.server.ServerHandlers):  # type: ignore[name-defined,misc]
        async def list_tools(self, params: Any, ctx: Any) -> Any:
            schema = models.ToolInputSchema(
                type="object", properties={"text": {"type": "string"}}, required=["text"]
            )
            return cacheable(models, "ListToolsResult", tools=[models.Tool(name="echo", input_schema=schema)])

        async def call_tool(self, params: Any, ctx: Any) -> Any:
            await ctx.report_progress(1, 2)
            text = (params.arguments or {}).get("text", "")
            return models.CallToolResult(content=[models.TextContent(type="text", text=text)])

        async def list_resources(self, params: Any, ctx: Any) -> Any:
            return cacheable(
                models, "ListResourcesResult", resources=[models.Resource(uri="memo://a", name="a")]
            )

        async def read_resource(self, params: Any, ctx: Any) -> Any:
            contents = [models.TextResourceContents(uri=params.uri, text="memo")]
            return cacheable(models, "ReadResourceResult", contents=contents)

        async def list_prompts(self, params: Any, ctx: Any) -> Any:
            argument = models.PromptArgument(name="topic")
            return cacheable(
                models, "ListPromptsResult", prompts=[models.Prompt(name="p", arguments=[argument])]
            )

        async def get_prompt(self, params: Any, ctx: Any) -> Any:
            topic = (params.arguments or {}).get("topic", "")
            message = models.PromptMessage(
                role="user", content=models.TextContent(type="text", text=f"about {topic}")
            )
            return models.GetPromptResult(messages=[message])

        async def complete(self, params: Any, ctx: Any) -> Any:
            prefix = params.argument.value
            values = [v for v in ("alpha", "beta", "alps") if v.startswith(prefix)]
            completion = models.CompleteResultCompletion(values=values, total=len(values))
            return models.CompleteResult(completion=completion)

    return Handlers()


def client_handlers(revision: str) -> Any:
    return package(revision).client.ClientHandlers()


async def exercise(client: Any) -> dict[str, Any]:
    session = client.session
    progress: list[float] = []
    session.progress_callbacks["tok"] = lambda note: progress.append(note.progress)
    tools = await client.list_tools()
    called = await client.call_tool(
        name="echo", arguments={"text": "hi"}, meta={"progressToken": "tok"}
    )
    resources = await client.list_resources()
    read = await client.read_resource(uri="memo://a")
    prompts = await client.list_prompts()
    prompt = await client.get_prompt(name="p", arguments={"topic": "tea"})
    completed = await client.complete(
        ref={"type": "ref/prompt", "name": "p"}, argument={"name": "topic", "value": "al"}
    )
    return {
        "version": session.protocol_version,
        "tools": [t.name for t in tools.tools],
        "called": called.content[0].text,
        "progress": progress,
        "resources": [r.uri for r in resources.resources],
        "read": read.contents[0].text,
        "prompts": [p.name for p in prompts.prompts],
        "prompt": prompt.messages[0].content.text,
        "completed": completed.completion.values,
    }


@pytest.mark.parametrize("connector", [connect_direct, connect_memory], ids=["direct", "memory"])
@pytest.mark.parametrize("served", SERVED)
@pytest.mark.parametrize("server_typed", TYPED_WITH)
@pytest.mark.parametrize("client_typed", TYPED_WITH)
def test_every_pairing_of_revisions_works_end_to_end(
    connector: Any, served: str, server_typed: str, client_typed: str
) -> None:
    options: dict[str, Any] = {"server_info": {"name": "matrix", "version": "1"}}
    if served != "every":
        options["packages"] = [package(served)]

    async def body() -> dict[str, Any]:
        async with connector(
            server_handlers(server_typed),
            client_handlers=client_handlers(client_typed),
            server_options=options,
        ) as client:
            return await exercise(client)

    seen = asyncio.run(body())
    expected_version = "2026-07-28" if served == "every" else served
    assert seen == {
        "version": expected_version,
        "tools": ["echo"],
        "called": "hi",
        "progress": [1],
        "resources": ["memo://a"],
        "read": "memo",
        "prompts": ["p"],
        "prompt": "about tea",
        "completed": ["alpha", "alps"],
    }
