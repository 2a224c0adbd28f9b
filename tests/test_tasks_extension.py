"""The tasks extension (SEP-2663) on our 2026-07-28 server, driven with raw JSON-RPC over its
ASGI app in-process: ``examples/conformance_server.py`` declares the extension and hands its
task tools to ``run_as_task``. Exact result shapes, error codes and data are asserted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from test_stateless_server import (  # the fixture server's app and the raw-request helpers
    SERVER_META,
    anyio_backend,
    app,
    assert_error,
    call,
    handlers,
    post,
    request,
)

__all__ = ["anyio_backend", "app", "handlers"]  # pytest fixtures, used by name

pytestmark = pytest.mark.anyio

TASKS = "io.modelcontextprotocol/tasks"
WITH_TASKS = {"elicitation": {}, "extensions": {TASKS: {}}}
TASK_FIELDS = {"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"}
MISSING_TASKS = {"requiredCapabilities": {"extensions": {TASKS: {}}}}


def task_request(request_id: int, method: str, task_id: str, **params: Any) -> dict[str, Any]:
    return request(request_id, method, {"taskId": task_id, **params}, WITH_TASKS)


async def task_call(app: Any, method: str, task_id: str, **params: Any) -> dict[str, Any]:
    """A tasks/* request with its ``Mcp-Name`` header (the task id); the result."""
    reply = await post(app, task_request(9, method, task_id, **params), {"mcp-name": task_id})
    assert reply.status == 200, reply.received
    result: dict[str, Any] = reply.json()["result"]
    return result


async def started(app: Any, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a task tool as a client that declared the extension: the CreateTaskResult."""
    reply = await post(app, call(1, name, arguments, capabilities=WITH_TASKS))
    created: dict[str, Any] = reply.json()["result"]
    assert created["resultType"] == "task", created
    assert set(created) == TASK_FIELDS | {"resultType", "_meta"}
    return created


async def until_status(app: Any, task_id: str, wanted: str) -> dict[str, Any]:
    """Poll tasks/get (as a client does) until the task has status ``wanted``."""
    for _ in range(500):
        task = await task_call(app, "tasks/get", task_id)
        if task["status"] == wanted:
            return task
        await asyncio.sleep(0.01)
    raise AssertionError(f"task {task_id} never became {wanted}: {task}")


async def test_a_task_tool_answers_at_once_and_tasks_get_inlines_the_result(app: Any) -> None:
    created = await started(app, "slow_compute", {"seconds": 0.05, "label": "x"})
    assert created["status"] == "working" and created["ttlMs"] == 600000
    assert created["pollIntervalMs"] == 500 and created["_meta"] == SERVER_META
    task = await until_status(app, created["taskId"], "completed")
    assert task == {
        "resultType": "complete",
        **{key: created[key] for key in ("taskId", "createdAt", "ttlMs", "pollIntervalMs")},
        "status": "completed",
        "lastUpdatedAt": task["lastUpdatedAt"],
        "result": {"content": [{"type": "text", "text": "computed 'x' in 0.05 s"}]},
        "_meta": SERVER_META,
    }


async def test_without_the_extension_an_optional_task_tool_runs_in_the_request(app: Any) -> None:
    reply = await post(app, call(1, "slow_compute", {"seconds": 0, "label": "y"}))
    assert reply.json()["result"] == {
        "content": [{"type": "text", "text": "computed 'y' in 0 s"}],
        "resultType": "complete",
        "_meta": SERVER_META,
    }


async def test_without_the_extension_a_required_task_tool_and_tasks_methods_are_32021(app: Any) -> None:
    error = assert_error(await post(app, call(2, "failing_job")), 400, 2, -32021)
    assert error["data"] == MISSING_TASKS
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        message = request(3, method, {"taskId": "t", "inputResponses": {}})
        error = assert_error(await post(app, message, {"mcp-name": "t"}), 400, 3, -32021)
        assert error["data"] == MISSING_TASKS


async def test_a_task_asks_for_input_and_tasks_update_resumes_it(app: Any) -> None:
    created = await started(app, "confirm_delete", {"filename": "a.txt"})
    waiting = await until_status(app, created["taskId"], "input_required")
    assert list(waiting["inputRequests"]) == ["elicitation-1"]
    assert waiting["inputRequests"]["elicitation-1"]["method"] == "elicitation/create"
    assert waiting["inputRequests"]["elicitation-1"]["params"]["message"] == "Delete a.txt?"
    ack = await task_call(app, "tasks/update", created["taskId"], inputResponses={
        "elicitation-1": {"action": "accept", "content": {"confirm": True}},
        "stray-key": {"ignored": True},
    })
    assert ack == {"resultType": "complete", "_meta": SERVER_META}
    done = await until_status(app, created["taskId"], "completed")
    assert done["result"] == {"content": [{"type": "text", "text": "deleted a.txt"}]}
    assert "inputRequests" not in done


async def test_a_partial_update_leaves_the_other_request_pending(app: Any) -> None:
    created = await started(app, "multi_input")
    task_id = created["taskId"]
    for _ in range(500):
        waiting = await task_call(app, "tasks/get", task_id)
        if len(waiting.get("inputRequests", {})) == 2:
            break
        await asyncio.sleep(0.01)
    assert sorted(waiting["inputRequests"]) == ["first", "second"]
    await task_call(app, "tasks/update", task_id, inputResponses={
        "first": {"action": "accept", "content": {"name": "Ann"}}})
    still = await task_call(app, "tasks/get", task_id)
    assert still["status"] == "input_required" and list(still["inputRequests"]) == ["second"]
    await task_call(app, "tasks/update", task_id, inputResponses={
        "second": {"action": "accept", "content": {"name": "Bo"}}})
    done = await until_status(app, task_id, "completed")
    assert done["result"]["content"][0]["text"] == "first=Ann second=Bo"


async def test_cancel_acks_empty_and_the_task_ends_cancelled(app: Any) -> None:
    created = await started(app, "slow_compute", {"seconds": 60, "label": "long"})
    ack = await task_call(app, "tasks/cancel", created["taskId"])
    assert ack == {"resultType": "complete", "_meta": SERVER_META}
    assert (await task_call(app, "tasks/get", created["taskId"]))["status"] == "cancelled"
    assert await task_call(app, "tasks/cancel", created["taskId"]) == ack  # terminal: same ack


async def test_a_tool_error_completes_and_a_protocol_error_fails(app: Any) -> None:
    tool_error = await until_status(app, (await started(app, "failing_job"))["taskId"], "completed")
    assert tool_error["result"] == {
        "content": [{"type": "text", "text": "failing_job failed, as it always does"}],
        "isError": True,
    }
    failed = await until_status(app, (await started(app, "protocol_error_job"))["taskId"], "failed")
    assert failed["error"] == {"code": -32603, "message": "Internal error: protocol_error_job always fails"}
    assert "result" not in failed


async def test_input_gathered_by_round_trips_then_a_task(app: Any) -> None:
    """Round 1 asks (no task yet); the retry with the answer gets the CreateTaskResult."""
    first = (await post(app, call(1, "test_tool_with_task", capabilities=WITH_TASKS))).json()["result"]
    assert first["resultType"] == "input_required" and "taskId" not in first
    retry = call(2, "test_tool_with_task", capabilities=WITH_TASKS, requestState=first["requestState"],
                 inputResponses={"user_name": {"action": "accept", "content": {"name": "Alice"}}})
    created = (await post(app, retry)).json()["result"]
    assert created["resultType"] == "task" and "requestState" not in created
    done = await until_status(app, created["taskId"], "completed")
    assert done["result"]["content"][0]["text"] == "Hello, Alice! (from a task)"


async def test_unknown_task_ids_are_32602_and_removed_methods_32601(app: Any) -> None:
    for method in ("tasks/get", "tasks/cancel"):
        reply = await post(app, task_request(4, method, "no-such-task"), {"mcp-name": "no-such-task"})
        assert assert_error(reply, 200, 4, -32602)["message"] == "Invalid params: unknown task 'no-such-task'"
    for method in ("tasks/result", "tasks/list"):
        assert_error(await post(app, request(5, method, {"taskId": "t"}, WITH_TASKS)), 404, 5, -32601)


async def test_tasks_methods_need_an_mcp_name_header_equal_to_the_task_id(app: Any) -> None:
    created = await started(app, "slow_compute", {"seconds": 60, "label": "h"})
    message = task_request(6, "tasks/get", created["taskId"])
    assert_error(await post(app, message), 400, 6, -32020)  # no Mcp-Name
    assert_error(await post(app, message, {"mcp-name": "another-task"}), 400, 6, -32020)
    await task_call(app, "tasks/cancel", created["taskId"])


# -- McpApp: @app.tool(task=...) -------------------------------------------------------------


def tasks_app() -> Any:
    from typedmcp import TASKS_EXTENSION, McpApp, http_app

    notes = McpApp("tasks", "1.0.0", extensions={TASKS_EXTENSION: {}})

    @notes.tool(task="optional")
    async def export(count: int) -> str:
        """Exports notes."""
        return f"exported {count}"

    @notes.tool(task="required")
    def rebuild() -> str:
        """Rebuilds the index."""
        return "rebuilt"

    @notes.tool()
    def count() -> int:
        """Counts notes."""
        return 3

    return http_app(notes)


async def test_an_app_tool_marked_as_a_task_runs_as_one() -> None:
    app = tasks_app()
    created = await started(app, "export", {"count": 2})
    done = await until_status(app, created["taskId"], "completed")
    assert done["result"]["content"] == [{"type": "text", "text": "exported 2"}]
    sync = (await post(app, call(1, "count", capabilities=WITH_TASKS))).json()["result"]
    assert sync["resultType"] == "complete" and "taskId" not in sync  # not marked: never a task
    inline = (await post(app, call(1, "export", {"count": 1}))).json()["result"]
    assert inline["content"] == [{"type": "text", "text": "exported 1"}]  # no extension: inline
    error = assert_error(await post(app, call(2, "rebuild")), 400, 2, -32021)
    assert error["data"] == MISSING_TASKS


def test_an_unknown_task_mode_is_a_declaration_error() -> None:
    from typedmcp import DeclarationError, McpApp

    with pytest.raises(DeclarationError, match="task='always': a tool runs as a task with task='optional' or task='required'"):
        McpApp("x").tool(task="always")(lambda: None)  # type: ignore[call-overload]
