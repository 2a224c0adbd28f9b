"""McpApp's Context: injected by annotation, progress and log messages reach the client,
an unknown log level is refused naming the valid ones, cancellation reaches both async
and sync functions; plus run-time changes announced through the change feed."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from typedmcp.app import Context, McpApp
from typedmcp.connecting import connect_memory
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.testing import McpClientFactory
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import ClientHandlers


class Recorder(ClientHandlers):
    """Records the log messages and list changes the server sends."""

    def __init__(self) -> None:
        self.logs: list[tuple[str, Any, str | None]] = []
        self.tool_changes = 0
        self.changed = asyncio.Event()

    async def on_logging_message(self, params: models.LoggingMessageNotificationParams, ctx: Any) -> None:
        self.logs.append((params.level, params.data, params.logger))

    async def on_tool_list_changed(self, params: Any, ctx: Any) -> None:
        self.tool_changes += 1
        self.changed.set()


def test_progress_and_log_messages_reach_the_client() -> None:
    app = McpApp("t")

    @app.tool()
    async def export_notes(count: int, ctx: Context) -> str:
        for step in range(1, count + 1):
            await ctx.report_progress(step, count, f"note {step}")
        await ctx.log("debug", "too quiet to pass", "export")
        await ctx.info({"exported": count}, "export")
        return "done"

    async def scenario() -> tuple[list[tuple[float, float | None, str | None]], list[Any]]:
        recorder = Recorder()
        async with connect_memory(app, protocol=v2025_11_25, client_handlers=recorder) as client:
            progress: list[tuple[float, float | None, str | None]] = []
            client.session.progress_callbacks["p"] = lambda note: progress.append(
                (note.progress, note.total, note.message)
            )
            await client.set_level(level="info")
            await client.call_tool(name="export_notes", arguments={"count": 3}, meta={"progressToken": "p"})
            await asyncio.sleep(0)  # notifications are handled in their own tasks
            for _ in range(100):
                if recorder.logs:
                    break
                await asyncio.sleep(0.01)
        return progress, recorder.logs

    progress, logs = asyncio.run(scenario())
    assert progress == [(1, 3, "note 1"), (2, 3, "note 2"), (3, 3, "note 3")]
    assert logs == [("info", {"exported": 3}, "export")]


def test_an_unknown_log_level_is_refused_naming_the_valid_levels() -> None:
    app = McpApp("t")

    @app.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.log("infoo", "typo")  # type: ignore[arg-type]
        return "unreachable"

    async def scenario() -> Any:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            return await client.call_tool(name="chatty", arguments={})

    result = asyncio.run(scenario())
    assert result.is_error is True
    assert result.content[0].text == (
        "Tool chatty failed: ValueError: unknown log level 'infoo': use one of "
        "debug, info, notice, warning, error, critical, alert, emergency"
    )


def test_cancellation_reaches_an_async_function_and_marks_a_sync_one() -> None:
    app = McpApp("t")
    async_started, async_cancelled = asyncio.Event(), []
    sync_started, sync_release = threading.Event(), threading.Event()
    seen_by_sync: list[bool] = []

    @app.tool()
    async def slow(ctx: Context) -> str:
        async_started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            async_cancelled.append(ctx.cancelled)
            raise
        return "never"

    @app.tool()
    def grinding(ctx: Context) -> str:
        sync_started.set()
        sync_release.wait(5)
        seen_by_sync.append(ctx.cancelled)
        return "late"

    async def scenario() -> None:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            call = asyncio.ensure_future(client.call_tool(name="slow", arguments={}))
            await async_started.wait()
            call.cancel()  # the client sends notifications/cancelled
            with pytest.raises(asyncio.CancelledError):
                await call
            for _ in range(200):
                if async_cancelled:
                    break
                await asyncio.sleep(0.01)
            call = asyncio.ensure_future(client.call_tool(name="grinding", arguments={}))
            await asyncio.to_thread(sync_started.wait, 5)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            for _ in range(200):
                await asyncio.sleep(0.01)
                if app_cancelled_marked():
                    break
            sync_release.set()
            for _ in range(200):
                if seen_by_sync:
                    break
                await asyncio.sleep(0.01)

    contexts: list[Context] = []
    original = Context.mark_cancelled

    def spy(self: Context) -> None:
        contexts.append(self)
        original(self)

    def app_cancelled_marked() -> bool:
        return len(contexts) >= 2

    Context.mark_cancelled = spy  # type: ignore[method-assign]
    try:
        asyncio.run(scenario())
    finally:
        Context.mark_cancelled = original  # type: ignore[method-assign]
    assert async_cancelled == [False]  # CancelledError came first; the flag follows it
    assert seen_by_sync == [True]


def test_adding_and_removing_a_tool_at_run_time_announces_list_changed() -> None:
    app = McpApp("t")

    @app.tool()
    def first() -> None: ...

    async def scenario() -> tuple[list[str], list[str], int, dict[str, Any]]:
        recorder = Recorder()
        async with connect_memory(app, protocol=v2025_11_25, client_handlers=recorder) as client:
            capabilities = client.session.peer_capabilities
            before = [tool.name for tool in (await client.list_tools()).tools]

            def second() -> None: ...

            app.add_tool(second)
            await asyncio.wait_for(recorder.changed.wait(), 5)
            recorder.changed.clear()
            app.remove_tool("first")
            await asyncio.wait_for(recorder.changed.wait(), 5)
            after = [tool.name for tool in (await client.list_tools()).tools]
        return before, after, recorder.tool_changes, capabilities

    before, after, changes, capabilities = asyncio.run(scenario())
    assert (before, after, changes) == (["first"], ["second"], 2)
    assert capabilities["tools"] == {"listChanged": True}


class Person(BaseModel):
    name: str
    age: int = 0
    colour: Literal["red", "green"] = "red"


class Nested(BaseModel):
    person: Person


class Answering(ClientHandlers):
    """A client that answers elicitation, sampling and roots."""

    def __init__(self, action: Literal["accept", "decline", "cancel"] = "accept") -> None:
        self.action = action
        self.forms: list[dict[str, Any]] = []

    async def elicit(self, params: Any, ctx: Any) -> models.ElicitResult:
        self.forms.append(params.requested_schema.model_dump(by_alias=True, exclude_unset=True))
        content = {"name": "Ada", "age": 36} if self.action == "accept" else None
        return models.ElicitResult(action=self.action, content=content)

    async def create_message(self, params: Any, ctx: Any) -> models.CreateMessageResult:
        asked = params.messages[0].content.text
        return models.CreateMessageResult(
            role="assistant", content=models.TextContent(type="text", text=f"echo {asked}"), model="m"
        )

    async def list_roots(self, params: Any, ctx: Any) -> models.ListRootsResult:
        return models.ListRootsResult(roots=[models.Root(uri="file:///notes", name="notes")])


def peer_app() -> McpApp:
    app = McpApp("t")

    @app.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", Person)
        if answer.data is None:
            return answer.action
        return f"{answer.data.name} {answer.data.age} {answer.data.colour}"

    @app.tool()
    async def think(ctx: Context) -> str:
        sampled = await ctx.sample("hi", max_tokens=5)
        roots = await ctx.list_roots()
        return f"{sampled.content.text} {[root.uri for root in roots]}"  # type: ignore[union-attr]

    @app.tool()
    async def who(ctx: Context) -> dict[str, Any]:
        return {"capabilities": sorted(ctx.client_capabilities), "client": ctx.client_info.get("name")}

    @app.tool()
    async def nested(ctx: Context) -> str:
        await ctx.elicit("Nested?", Nested)
        return "unreachable"

    return app


def test_elicitation_sampling_roots_and_client_facts_in_both_eras(
    mcp_client: McpClientFactory, mcp_revision: str
) -> None:
    app = peer_app()

    async def scenario() -> tuple[list[str], list[dict[str, Any]], str]:
        answering = Answering()
        async with mcp_client(app, revision=mcp_revision, client_handlers=answering) as client:
            assert client.session.protocol_version == mcp_revision
            texts = []
            for name in ("ask", "think", "who"):
                result = await client.call_tool(name=name, arguments={})
                texts.append(result.content[0].text)
            declined = Answering("decline")
        async with mcp_client(app, revision=mcp_revision, client_handlers=declined) as client:
            refused = (await client.call_tool(name="ask", arguments={})).content[0].text
        return texts, answering.forms, refused

    texts, forms, refused = asyncio.run(scenario())
    assert texts[0] == "Ada 36 red"
    assert texts[1] == "echo hi ['file:///notes']"
    assert json.loads(texts[2]) == {"capabilities": ["elicitation", "roots", "sampling"], "client": "typedmcp"}
    assert forms[0] == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "default": 0},
            "colour": {"type": "string", "enum": ["red", "green"], "default": "red"},
        },
        "required": ["name"],
    }
    assert refused == "decline"


def test_a_form_type_mcp_cannot_express_is_refused_naming_it() -> None:
    async def scenario() -> str:
        async with connect_memory(peer_app(), protocol=v2025_11_25, client_handlers=Answering()) as client:
            return str((await client.call_tool(name="nested", arguments={})).content[0].text)

    message = asyncio.run(scenario())
    assert message == (
        "Tool nested failed: ValueError: Nested cannot be an elicitation form (fields person): MCP forms "
        "are flat objects of strings, numbers, booleans and Literal choices, each required or with a default"
    )


def test_a_sync_function_uses_the_context_through_from_thread() -> None:
    app = McpApp("t")

    @app.tool()
    def crunch(ctx: Context, steps: int = 2) -> str:
        for step in range(1, steps + 1):
            ctx.from_thread(ctx.report_progress(step, steps))
        return "crunched"

    @app.tool()
    async def misuse(ctx: Context) -> str:
        return ctx.from_thread(ctx.info("x"))  # type: ignore[func-returns-value]

    async def scenario() -> tuple[list[float], str]:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            progress: list[float] = []
            client.session.progress_callbacks["p"] = lambda note: progress.append(note.progress)
            await client.call_tool(name="crunch", arguments={}, meta={"progressToken": "p"})
            misused = (await client.call_tool(name="misuse", arguments={})).content[0].text
        return progress, misused

    progress, misused = asyncio.run(scenario())
    assert progress == [1, 2]
    assert misused == (
        "Tool misuse failed: RuntimeError: from_thread is for sync functions (worker threads); "
        "an async one awaits instead"
    )


def test_disabling_hides_and_enabling_restores_announcing_each_change() -> None:
    app = McpApp("t")

    @app.tool()
    def first() -> None: ...

    @app.prompt()
    def greet() -> str:
        return "hi"

    @app.resource("t://{name}")
    def thing(name: str) -> str:
        return name

    async def scenario() -> list[Any]:
        recorder = Recorder()
        async with connect_memory(app, protocol=v2025_11_25, client_handlers=recorder) as client:
            app.disable("tool", "first")
            await asyncio.wait_for(recorder.changed.wait(), 5)
            hidden = [t.name for t in (await client.list_tools()).tools]
            with pytest.raises(RpcError) as unknown:
                await client.call_tool(name="first", arguments={})
            app.disable("prompt", "greet")
            app.disable("resource", "t://{name}")
            prompts = (await client.list_prompts()).prompts
            templates = (await client.list_resource_templates()).resource_templates
            with pytest.raises(RpcError) as unread:
                await client.read_resource(uri="t://x")
            recorder.changed.clear()
            app.enable("tool", "first")
            app.enable("tool", "first")  # already enabled: no second announcement
            await asyncio.wait_for(recorder.changed.wait(), 5)
            shown = [t.name for t in (await client.list_tools()).tools]
            return [hidden, unknown.value.message, prompts, templates, unread.value.code, shown, recorder.tool_changes]

    hidden, unknown, prompts, templates, unread, shown, changes = asyncio.run(scenario())
    assert (hidden, unknown, prompts, templates, unread, shown) == (
        [], "Unknown tool: first", [], [], -32002, ["first"]
    )
    assert changes == 2
    with pytest.raises(KeyError, match=r"no tool 'nope' \(declared: first\)"):
        app.disable("tool", "nope")


def test_a_change_reaches_a_2026_listen_stream_and_cache_hints_apply() -> None:
    from typedmcp import CachePolicy

    app = McpApp("t", cache=CachePolicy(ttl_ms=5_000, scope="public"))

    @app.tool()
    def first() -> None: ...

    async def scenario() -> tuple[str, dict[str, Any]]:
        async with connect_memory(app) as client:
            listed = (await client.list_tools()).model_dump(by_alias=True, exclude_unset=True)
            async with client.session.listen(tools_list_changed=True) as subscription:

                def second() -> None: ...

                app.add_tool(second)
                notification = await subscription.get(timeout=5)
        return str(notification.method), listed

    method, listed = asyncio.run(scenario())
    assert method == "notifications/tools/list_changed"
    assert (listed["ttlMs"], listed["cacheScope"]) == (5_000, "public")


def test_a_sync_tool_adding_a_tool_from_its_worker_thread_announces_it() -> None:
    app = McpApp("t")

    @app.tool()
    def grow(name: str) -> str:
        app.add_tool(lambda: name, name=name)
        return "grown"

    async def scenario() -> tuple[str, list[str]]:
        recorder = Recorder()
        async with connect_memory(app, protocol=v2025_11_25, client_handlers=recorder) as client:
            grown = (await client.call_tool(name="grow", arguments={"name": "fresh"})).content[0].text
            await asyncio.wait_for(recorder.changed.wait(), 5)
            return grown, [tool.name for tool in (await client.list_tools()).tools]

    assert asyncio.run(scenario()) == ("grown", ["grow", "fresh"])
