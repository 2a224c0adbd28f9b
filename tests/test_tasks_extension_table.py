"""The tasks extension's server side takes its methods and models from the generated package
(``mcp_generated.extensions.tasks``, from ext-tasks' pinned schema), not from a hand-kept list."""

from __future__ import annotations

import asyncio
from types import MappingProxyType
from typing import Any

import pytest

from mcp_generated.extensions.tasks import dispatch as generated
from typedmcp.engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RpcError
from typedmcp.protocol.extensions import TASKS_EXTENSION
from typedmcp.protocol.meta import CLIENT_CAPABILITIES_KEY
from typedmcp.stateless import tasks

DECLARED = {"_meta": {CLIENT_CAPABILITIES_KEY: {"extensions": {TASKS_EXTENSION: {}}}}}


async def serve(registry: tasks.TaskRegistry, method: str, **params: Any) -> dict[str, Any]:
    return await registry.serve(method, {**DECLARED, **params}, None)


async def started_task(registry: tasks.TaskRegistry) -> str:
    async def work() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "done"}]}

    task = registry.start(None, None, work)
    await asyncio.sleep(0)
    return task.task_id


def test_the_routed_methods_are_the_generated_tables() -> None:
    assert tasks.TASK_REQUESTS is generated.REQUESTS
    assert tasks.TASK_METHODS == tuple(generated.REQUESTS) == ("tasks/cancel", "tasks/get", "tasks/update")
    assert tasks.TASKS_EXTENSION == generated.GET_TASK.gates[0].path[1]


def test_a_method_not_in_the_table_is_not_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """Routing reads the table: take ``tasks/cancel`` out of it and it is no longer a method."""
    registry = tasks.TaskRegistry()
    without_cancel = MappingProxyType({m: s for m, s in generated.REQUESTS.items() if m != "tasks/cancel"})
    monkeypatch.setattr(tasks, "TASK_REQUESTS", without_cancel)
    with pytest.raises(RpcError) as refused:
        asyncio.run(serve(registry, "tasks/cancel", taskId="x"))
    assert refused.value.code == METHOD_NOT_FOUND


@pytest.mark.parametrize(
    ("table", "named"),
    [
        ({**generated.REQUESTS, "tasks/list": generated.GET_TASK.__class__(**{
            **{f: getattr(generated.GET_TASK, f) for f in ("direction", "params_ref", "params_required",
                                                              "result_ref", "alternatives_ref", "gates")},
            "method": "tasks/list", "handler_name": "list_tasks"})}, "tasks/list"),
        ({m: s for m, s in generated.REQUESTS.items() if m != "tasks/update"}, "update_task"),
    ],
    ids=["a method added upstream", "a method dropped upstream"],
)
def test_a_changed_table_fails_at_import_naming_the_method(table: dict[str, Any], named: str) -> None:
    tasks.check_method_table(generated.REQUESTS)  # the generated table matches
    with pytest.raises(ImportError, match=named):
        tasks.check_method_table(table)


def test_params_are_validated_by_the_generated_model() -> None:
    registry = tasks.TaskRegistry()
    with pytest.raises(RpcError) as refused:
        asyncio.run(serve(registry, "tasks/get", taskId=42))
    assert refused.value.code == INVALID_PARAMS
    assert "tasks/get" in refused.value.message and "taskId" in refused.value.message
    with pytest.raises(RpcError) as missing:
        asyncio.run(serve(registry, "tasks/update", taskId="x"))
    assert missing.value.code == INVALID_PARAMS and "inputResponses" in missing.value.message


def test_answers_are_validated_by_the_generated_result_model(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> None:
        registry = tasks.TaskRegistry()
        task_id = await started_task(registry)
        assert (await serve(registry, "tasks/get", taskId=task_id))["status"] == "completed"
        monkeypatch.setattr(tasks.ExtensionTask, "fields", lambda self: {"taskId": self.task_id, "status": "done"})
        with pytest.raises(RpcError) as broken:
            await serve(registry, "tasks/get", taskId=task_id)
        assert broken.value.code == INTERNAL_ERROR

    asyncio.run(scenario())
