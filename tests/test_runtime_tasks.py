"""Task-augmented requests (2025-11-25): background work behind a task id."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from typedmcp.connecting import connect_memory
from typedmcp.engine.jsonrpc import CapabilityError, RpcError
from typedmcp.protocol.tasks import TaskStore
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models

RELEASE = asyncio.Event


class Slow(v2025_11_25.server.ServerHandlers):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.cancelled = False

    async def list_tools(self, params: Any, ctx: Any) -> Any:
        return {"tools": [{"name": "slow", "inputSchema": {"type": "object"}}]}

    async def call_tool(self, params: Any, ctx: Any) -> Any:
        if params.name == "fail":
            raise RpcError(-32602, "no such thing")
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return models.CallToolResult(content=[models.TextContent(type="text", text="done")])


class StatusRecorder(v2025_11_25.client.ClientHandlers):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        self.statuses: list[str] = []

    async def on_task_status(self, params: Any, ctx: Any) -> None:
        self.statuses.append(params.status)


def run(body: Any, *, tasks: bool = True) -> Any:
    async def main() -> Any:
        server = Slow()
        recorder = StatusRecorder()
        async with connect_memory(
            server,
            protocol=v2025_11_25,
            client_handlers=recorder,
            server_options={"tasks": tasks},
        ) as client:
            return await body(client, server, recorder)

    return asyncio.run(main())


def test_tasks_capability_is_declared_only_when_enabled() -> None:
    async def body(client: Any, server: Any, recorder: Any) -> Any:
        return client.session.peer_capabilities

    assert run(body)["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    assert "tasks" not in run(body, tasks=False)


def test_a_task_augmented_call_answers_at_once_and_its_result_comes_later() -> None:
    async def body(client: Any, server: Any, recorder: Any) -> Any:
        created = await client.call_tool(name="slow", task=models.TaskMetadata(ttl=60000))
        assert isinstance(created, models.CreateTaskResult)
        task_id = created.task.task_id
        assert created.task.status == "working"
        assert (await client.get_task(task_id=task_id)).status == "working"
        listed = await client.list_tasks()
        assert [t.task_id for t in listed.tasks] == [task_id]
        server.release.set()
        payload = await client.get_task_payload(task_id=task_id)
        assert payload.model_extra["content"] == [{"type": "text", "text": "done"}]
        assert payload.meta["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
        assert (await client.get_task(task_id=task_id)).status == "completed"
        await asyncio.sleep(0.05)
        return recorder.statuses

    assert run(body) == ["completed"]


def test_cancelling_a_task_cancels_its_handler() -> None:
    async def body(client: Any, server: Any, recorder: Any) -> Any:
        created = await client.call_tool(name="slow", task=models.TaskMetadata())
        await asyncio.sleep(0.01)  # the background handler starts (requests are served eagerly)
        cancelled = await client.cancel_task(task_id=created.task.task_id)
        await asyncio.sleep(0.05)
        assert cancelled.status == "cancelled"
        assert server.cancelled
        with pytest.raises(RpcError) as raised:
            await client.cancel_task(task_id=created.task.task_id)
        assert raised.value.code == -32602
        return True

    assert run(body)


def test_a_failing_task_reports_its_error_from_tasks_result() -> None:
    async def body(client: Any, server: Any, recorder: Any) -> Any:
        created = await client.call_tool(name="fail", task=models.TaskMetadata())
        with pytest.raises(RpcError) as raised:
            await client.get_task_payload(task_id=created.task.task_id)
        return raised.value.code, raised.value.message

    assert run(body) == (-32602, "no such thing")


def test_unknown_task_ids_are_invalid_params() -> None:
    async def body(client: Any, server: Any, recorder: Any) -> Any:
        with pytest.raises(RpcError) as raised:
            await client.get_task(task_id="nope")
        return raised.value.code

    assert run(body) == -32602


def test_without_tasks_a_task_field_is_ignored_and_the_call_runs_normally() -> None:
    async def body(client: Any, server: Any, recorder: Any) -> Any:
        server.release.set()
        # our client never task-augments what the server did not declare ...
        with pytest.raises(CapabilityError, match=r"tasks\.requests\.tools\.call"):
            await client.call_tool(name="slow", task=models.TaskMetadata())
        # ... and a server that did not declare it serves such a request normally
        return await client.session.engine.request("tools/call", {"name": "slow", "task": {}})

    result = run(body, tasks=False)
    assert result["content"] == [{"type": "text", "text": "done"}]


def test_at_the_cap_a_new_task_drops_only_the_oldest_finished_task() -> None:
    """A full store makes room for one new task by dropping its oldest finished task, and
    only that one: the results of the others stay readable until their ttl runs out."""

    async def main() -> None:
        async def noted(task: Any) -> None:
            return None

        async def done() -> str:
            return "done"

        store = TaskStore(noted, max_tasks=3)
        finished = []
        for _ in range(3):
            record = store.start("m", 60_000, done)
            await record.done.wait()
            finished.append(record)
        newest = store.start("m", 60_000, done)
        assert set(store.records) == {finished[1].task_id, finished[2].task_id, newest.task_id}
        assert (await store.outcome(finished[1].task_id)) == "done"
        store.close()

    asyncio.run(main())
