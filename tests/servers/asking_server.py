"""A 2025-11-25 stdio server whose tools ask the client in each way there is: URL-mode
and form-mode elicitation, task-augmented sampling and elicitation (polled with
``tasks/get`` and fetched with ``tasks/result``), and what a careless server sends
(bypassing its own capability gates). Each tool answers with JSON text of what happened.
``tests/test_client_capabilities.py`` runs it in process too.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from typedmcp.engine.jsonrpc import CapabilityError, RpcError
from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import run_stdio
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

LINK = "https://example.test/authorize?state=abc"
Ctx = RequestContext[ClientPeer]

def url_params(task: models.TaskMetadata | None = None) -> models.ElicitRequestURLParams:
    return models.ElicitRequestURLParams(
        mode="url", message="Sign in", url=LINK, elicitation_id="e-1", task=task
    )


def form_params() -> models.ElicitRequestFormParams:
    return models.ElicitRequestFormParams(
        message="Name?",
        requested_schema=models.ElicitRequestFormParamsRequestedSchema(
            type="object", properties={"name": {"type": "string"}}
        ),
    )


def text(value: Any) -> models.CallToolResult:
    return models.CallToolResult(content=[models.TextContent(type="text", text=json.dumps(value))])


async def poll(ctx: Ctx, task_id: str) -> list[str]:
    """tasks/get on the client until the task is terminal; the statuses seen."""
    statuses = []
    for _ in range(200):
        status = (await ctx.peer.get_task(task_id=task_id)).status
        statuses.append(status)
        if status in ("completed", "failed", "cancelled"):
            return statuses
        await asyncio.sleep(0.01)
    raise AssertionError(f"task {task_id} never ended: {statuses[-3:]}")


class Asking(ServerHandlers):
    """Tools that ask the client in each way; each answers with JSON text of what happened."""

    def __init__(self) -> None:
        self.statuses: list[str] = []
        self.peer_capabilities: dict[str, Any] = {}

    async def list_tools(self, params: Any, ctx: Ctx) -> models.ListToolsResult:
        names = ("url", "form", "url_task", "sample_task", "cancel_task", "raw_url", "raw_task")
        schema = models.ToolInputSchema(type="object")
        return models.ListToolsResult(tools=[models.Tool(name=n, input_schema=schema) for n in names])

    async def on_task_status(self, params: Any, ctx: Ctx) -> None:
        self.statuses.append(params.status)

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        self.peer_capabilities = ctx.peer.session.peer_capabilities
        try:
            return text(await self.ask(params.name, ctx))
        except CapabilityError as error:
            return text({"refused": str(error)})
        except RpcError as error:
            return text({"error": error.code, "message": error.message})

    async def ask(self, name: str, ctx: Ctx) -> Any:
        peer = ctx.peer
        if name == "url":
            answer = await peer.elicit(url_params())
            await peer.send_elicitation_complete(elicitation_id="e-1")
            return answer.action
        if name == "form":
            return (await peer.elicit(form_params())).content
        if name == "url_task":
            created = await peer.elicit(url_params(models.TaskMetadata(ttl=60_000)))
            assert isinstance(created, models.CreateTaskResult)
            statuses = await poll(ctx, created.task.task_id)
            payload = await peer.get_task_payload(task_id=created.task.task_id)
            answer = models.ElicitResult.model_validate(payload.model_dump(by_alias=True))
            return {"statuses": statuses[-1:], "action": answer.action, "meta": payload.meta}
        if name == "sample_task":
            message = models.SamplingMessage(role="user", content=models.TextContent(type="text", text="hi"))
            created = await peer.create_message(
                messages=[message], max_tokens=5, task=models.TaskMetadata(ttl=60_000)
            )
            assert isinstance(created, models.CreateTaskResult)
            listed = await peer.list_tasks()
            statuses = await poll(ctx, created.task.task_id)
            payload = await peer.get_task_payload(task_id=created.task.task_id)
            sampled = models.CreateMessageResult.model_validate(payload.model_dump(by_alias=True))
            return {
                "listed": [t.task_id for t in listed.tasks] == [created.task.task_id],
                "final": statuses[-1],
                "text": sampled.content.text,  # type: ignore[union-attr]
            }
        if name == "cancel_task":
            message = models.SamplingMessage(role="user", content=models.TextContent(type="text", text="hi"))
            created = await peer.create_message(messages=[message], max_tokens=5, task=models.TaskMetadata())
            await asyncio.sleep(0.02)
            cancelled = await peer.cancel_task(task_id=created.task.task_id)
            try:
                await peer.get_task_payload(task_id=created.task.task_id)
            except RpcError as error:
                return {"status": cancelled.status, "payload_error": error.code}
            return {"status": cancelled.status}
        engine = ctx.peer.session.engine
        if name == "raw_url":  # bypasses this side's gate: what a careless server sends
            wire = url_params().model_dump(by_alias=True, exclude_none=True)
            return await engine.request("elicitation/create", wire)
        if name == "raw_task":
            wire = form_params().model_dump(by_alias=True, exclude_none=True)
            return await engine.request("elicitation/create", {**wire, "task": {"ttl": 1000}})
        raise AssertionError(name)



if __name__ == "__main__":
    run_stdio(Asking())
