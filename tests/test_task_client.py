"""Our client's side of the tasks extension (SEP-2663) against our 2026-07-28 server: a
``tools/call`` answered with a task is polled through ``tasks/get`` (``call_tool`` returns
the typed result), input the task asks for is answered with the client's hooks through
``tasks/update``, and ``ToolTasks`` gives a handle (status, result, cancel, resume). In
process (``connect_memory``) and over Streamable HTTP (the ASGI app in-process)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from mcp_generated.v2026_07_28 import models
from mcp_generated.v2026_07_28.client import Client, ClientHandlers
from typedmcp import TASKS_EXTENSION, Context, McpApp, RpcError, ToolError, connect_memory, run_as_task
from typedmcp.protocol.results import ProtocolViolation
from typedmcp.protocol.stubs import RequestContext
from typedmcp.protocol.task_client import TaskCancelled, ToolTasks

pytestmark = pytest.mark.anyio

WITH_TASKS: dict[str, dict[str, Any]] = {TASKS_EXTENSION: {}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server suggests 20 ms between polls (500 ms by default): the tests stay fast."""
    monkeypatch.setattr("typedmcp.stateless.tasks.POLL_INTERVAL_MS", 20)


@dataclass
class Confirm:
    confirm: bool


@dataclass
class Name:
    name: str


def tasks_app(seen: list[str] | None = None) -> McpApp:
    """Tools that run as tasks: a plain one, one that asks for input inside the task, a
    tool error, a protocol error, a long one, and one never run as a task."""
    app = McpApp("tasks", "1.0.0", extensions={TASKS_EXTENSION: {}})

    @app.tool(task="optional")
    async def export(count: int) -> str:
        """Exports notes."""
        await asyncio.sleep(0.03)
        return f"exported {count}"

    @app.tool(task="required")
    async def delete(filename: str, ctx: Context) -> str:
        """Deletes a file once the user confirms."""
        answer = await ctx.elicit(f"Delete {filename}?", Confirm)
        if seen is not None:
            seen.append(answer.action)
        return f"deleted {filename}" if answer.data and answer.data.confirm else f"kept {filename}"

    @app.tool(task="optional")
    async def broken() -> str:
        """Fails as a tool."""
        raise ToolError("the disk is full")

    @app.tool(task="optional")
    async def refused() -> str:
        """Fails with a JSON-RPC error."""
        raise RpcError(-32602, "Invalid params: no such notebook", {"notebook": "x"})

    @app.tool(task="optional")
    async def forever() -> str:
        """Never ends by itself."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if seen is not None:
                seen.append("handler cancelled")
            raise
        return "never"

    @app.tool()
    async def greet(ctx: Context) -> models.CallToolResult:
        """Asks a name by a multi round-trip, then runs as a task."""
        answer = await ctx.elicit("Your name?", Name)

        async def work() -> models.CallToolResult:
            await asyncio.sleep(0.02)
            text = f"Hello, {answer.data.name if answer.data else 'nobody'}! (from a task)"
            return models.CallToolResult(content=[models.TextContent(type="text", text=text)])

        return await run_as_task(work)

    @app.tool()
    def count() -> int:
        """Counts notes."""
        return 3

    return app


class Confirming(ClientHandlers):
    """Answers every elicitation with ``confirm: True`` and counts them."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, params: models.ElicitRequestParams, ctx: RequestContext[Client]) -> models.ElicitResult:
        self.asked.append(params.message)
        content: dict[str, Any] = {"name": "Ann"} if params.message == "Your name?" else {"confirm": True}
        return models.ElicitResult(action="accept", content=content)


@asynccontextmanager
async def connected(app: McpApp, handlers: ClientHandlers | None = None, **options: Any) -> AsyncIterator[Client]:
    async with connect_memory(
        app, client=Client, client_handlers=handlers or Confirming(), protocol="2026-07-28", **options
    ) as client:
        yield client


async def test_call_tool_waits_for_a_task_and_returns_the_typed_result() -> None:
    async with connected(tasks_app(), extensions=WITH_TASKS) as client:
        result = await client.call_tool(name="export", arguments={"count": 2})
    assert isinstance(result, models.CallToolResult)
    assert [c.text for c in result.content] == ["exported 2"]  # type: ignore[union-attr]


async def test_input_asked_inside_a_task_is_answered_through_tasks_update() -> None:
    handlers, seen = Confirming(), list[str]()
    async with connected(tasks_app(seen), handlers, extensions=WITH_TASKS) as client:
        result = await asyncio.wait_for(client.call_tool(name="delete", arguments={"filename": "a.txt"}), 10)
    assert result.content[0].text == "deleted a.txt"  # type: ignore[union-attr]
    assert handlers.asked == ["Delete a.txt?"] and seen == ["accept"]  # asked once (dedup)


async def test_input_asked_before_the_task_by_round_trips_composes_with_it() -> None:
    handlers = Confirming()
    async with connected(tasks_app(), handlers, extensions=WITH_TASKS) as client:
        result = await client.call_tool(name="greet", arguments={})
        task = await ToolTasks(client).call_tool(name="greet", arguments={})
        assert task.task_id is not None  # the round trip first, then the CreateTaskResult
        assert (await task.result()).content[0].text == "Hello, Ann! (from a task)"
    assert result.content[0].text == "Hello, Ann! (from a task)"  # type: ignore[union-attr]
    assert handlers.asked == ["Your name?", "Your name?"]


class FakeSession:
    """Records what a ToolTask sends; answers every input request with "answer-<key>"."""

    era, package = "stateless", object()

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []

    async def _fulfil(self, requests: dict[str, Any]) -> dict[str, Any]:
        return {key: f"answer-{key}" for key in requests}

    async def _request(self, spec: Any, params: dict[str, Any], timeout: float | None) -> Any:
        self.sent.append((spec.method, params))
        return {"resultType": "complete"}


async def test_input_requests_seen_again_on_later_polls_are_answered_once() -> None:
    from typedmcp.protocol.task_client import TaskState, ToolTask

    session = FakeSession()
    task = ToolTask(session, TaskState("t1", "working"))
    asking = TaskState("t1", "input_required", input_requests={"a": {"method": "elicitation/create"}})
    assert await task.answer_input(asking) is True
    assert await task.answer_input(asking) is False  # the same key, still listed: not again
    both = TaskState("t1", "input_required", input_requests={
        "a": {"method": "elicitation/create"}, "b": {"method": "roots/list"}})
    assert await task.answer_input(both) is True
    assert session.sent == [
        ("tasks/update", {"taskId": "t1", "inputResponses": {"a": "answer-a"}}),
        ("tasks/update", {"taskId": "t1", "inputResponses": {"b": "answer-b"}}),
    ]


async def test_a_tool_error_is_a_result_and_a_protocol_error_raises() -> None:
    async with connected(tasks_app(), extensions=WITH_TASKS) as client:
        broken = await client.call_tool(name="broken", arguments={})
        assert broken.is_error and broken.content[0].text == "the disk is full"  # type: ignore[union-attr]
        with pytest.raises(RpcError) as raised:
            await client.call_tool(name="refused", arguments={})
    assert (raised.value.code, raised.value.message, raised.value.data) == (
        -32602, "Invalid params: no such notebook", {"notebook": "x"})


async def test_a_handle_reports_status_and_cancels() -> None:
    async with connected(tasks_app(), extensions=WITH_TASKS) as client:
        tasks = ToolTasks(client)
        task = await tasks.call_tool(name="forever", arguments={})
        assert task.task_id is not None and task.last is not None
        assert task.last.status == "working" and task.last.poll_interval_ms == 20
        state = await task.status()
        assert state.status == "working" and state.ttl_ms == 600000 and not state.terminal
        with pytest.raises(asyncio.TimeoutError, match=r"is still working after 0\.1 s"):
            await task.result(timeout=0.1)
        await task.cancel()
        with pytest.raises(TaskCancelled, match=repr(task.task_id)):
            await task.result()
        again = tasks.resume(task.task_id)  # a task id kept elsewhere: the same task
        assert (await again.status()).status == "cancelled"


async def test_a_handle_on_a_finished_task_gives_the_typed_result() -> None:
    async with connected(tasks_app(), extensions=WITH_TASKS) as client:
        task = await ToolTasks(client).call_tool(name="export", arguments={"count": 5})
        result = await task.result()
        assert isinstance(result, models.CallToolResult)
        assert result.content[0].text == "exported 5"  # type: ignore[union-attr]
        assert (await task.status()).status == "completed"
        inline = await ToolTasks(client).call_tool(name="count", arguments={})
        assert inline.task_id is None  # the server answered at once (not a task tool)
        assert (await inline.result()).structured_content == {"result": 3}


async def test_a_caller_that_gives_up_cancels_the_task() -> None:
    seen: list[str] = []
    async with connected(tasks_app(seen), extensions=WITH_TASKS) as client:
        call = asyncio.ensure_future(client.call_tool(name="forever", arguments={}))
        await asyncio.sleep(0.1)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        assert seen == ["handler cancelled"]  # tasks/cancel reached the server's handler


async def test_without_the_extension_a_required_task_tool_is_32021_and_handles_refuse() -> None:
    async with connected(tasks_app()) as client:
        with pytest.raises(RpcError) as raised:
            await client.call_tool(name="delete", arguments={"filename": "a"})
        assert raised.value.code == -32021
        with pytest.raises(ProtocolViolation, match="declares the tasks extension"):
            ToolTasks(client)


async def test_a_task_answer_the_client_did_not_ask_for_is_a_protocol_violation() -> None:
    from typedmcp.protocol.task_client import TaskResults

    class Pretend(TaskResults):
        def __init__(self) -> None:
            self.own_capabilities: dict[str, Any] = {}

    with pytest.raises(ProtocolViolation, match="did not declare the tasks extension"):
        await Pretend().other_result("tools/call", "task", {"taskId": "t", "status": "working"}, None)
    with pytest.raises(ProtocolViolation, match="prompts/get answered with unknown resultType 'task'"):
        await Pretend().other_result("prompts/get", "task", {}, None)


async def test_status_notifications_bring_the_end_before_the_next_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server suggests 5 s between polls; the listen stream's notifications/tasks bring
    the task's end at once."""
    import time

    monkeypatch.setattr("typedmcp.stateless.tasks.POLL_INTERVAL_MS", 5000)
    async with connected(tasks_app(), extensions=WITH_TASKS) as client:
        task = await ToolTasks(client).call_tool(name="export", arguments={"count": 7})
        started = time.monotonic()
        result = await asyncio.wait_for(task.result(listen=True), 20)
        elapsed = time.monotonic() - started
    assert result.content[0].text == "exported 7"
    assert task.pushes == 1 and elapsed < 2.5, (task.pushes, elapsed)  # one poll, then the push


async def test_a_listen_for_task_ids_without_the_extension_is_32021() -> None:
    async with connected(tasks_app()) as client:
        with pytest.raises(RpcError) as raised:
            stream, _ = client.session._open_listen({"taskIds": ["t"]})
            await asyncio.wait_for(stream, 5)
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


async def test_a_task_still_working_after_its_ttl_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("typedmcp.stateless.tasks.DEFAULT_TTL_MS", 200)
    seen: list[str] = []
    async with connected(tasks_app(seen), extensions=WITH_TASKS) as client:
        with pytest.raises(asyncio.TimeoutError, match=r"is still working after its ttl \(200 ms\)"):
            await asyncio.wait_for(client.call_tool(name="forever", arguments={}), 5)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.01)
        assert seen == ["handler cancelled"]  # call_tool gave the task up: it cancelled it


async def test_a_server_asking_for_no_pause_between_polls_still_gets_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that suggests ``pollIntervalMs`` 0 is polled at most every 10 ms, not again
    at once round trip after round trip."""
    monkeypatch.setattr("typedmcp.stateless.tasks.POLL_INTERVAL_MS", 0)
    async with connected(tasks_app(), extensions=WITH_TASKS) as client:
        task = await ToolTasks(client).call_tool(name="forever", arguments={})
        assert task.last is not None and task.last.poll_interval_ms == 0
        sent: list[str] = []
        send = task._send

        async def counted(method: Any, params: dict[str, Any], timeout: float | None) -> Any:
            sent.append(method.method)
            return await send(method, params, timeout)

        monkeypatch.setattr(task, "_send", counted)
        with pytest.raises(asyncio.TimeoutError):
            await task.result(timeout=0.2)
        await task.cancel()
    assert 1 <= sent.count("tasks/get") <= 25, len(sent)
