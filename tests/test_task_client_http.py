"""The tasks extension (SEP-2663) over Streamable HTTP, our client against our server
(``tests/servers/tasks_app.py`` under uvicorn): one worker with its tasks in memory, and two
workers sharing them in Redis behind HAProxy balancing every request round-robin (no
affinity), so a task made on one worker is polled, answered (``tasks/update``) and
cancelled through the other. ``tasks/*`` requests carry ``Mcp-Name`` (the server refuses
them without it)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from shared_support import Redis, start_haproxy, start_workers, stop

from mcp_generated.v2026_07_28 import models
from mcp_generated.v2026_07_28.client import Client, ClientHandlers
from typedmcp import TASKS_EXTENSION, RpcError
from typedmcp.connecting import connect_http
from typedmcp.protocol.stubs import RequestContext
from typedmcp.protocol.task_client import TaskCancelled, ToolTasks

pytestmark = pytest.mark.anyio

WITH_TASKS: dict[str, dict[str, Any]] = {TASKS_EXTENSION: {}}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Deployment:
    url: str  # what clients connect to (the balancer, or the one worker)
    worker_urls: list[str]


@pytest.fixture(scope="module", params=["memory", "redis"])
def deployment(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    folder: Path = tmp_path_factory.mktemp("tasks")
    processes: list[Any] = []
    redis: Redis | None = None
    try:
        if request.param == "memory":
            processes, ports = start_workers(1, "tasks_app:app", {}, unset=("MCP_REDIS_URL",))
            urls = [f"http://127.0.0.1:{ports[0]}/mcp"]
            yield Deployment(urls[0], urls)
            return
        redis = Redis(folder)
        redis.start()
        env = {"MCP_REDIS_URL": redis.url, "MCP_REDIS_PREFIX": "tasks-test:"}
        processes, ports = start_workers(2, "tasks_app:app", env, unset=("MCP_REQUEST_STATE_KEY",))
        balancer, port = start_haproxy(folder, ports)
        processes.append(balancer)
        yield Deployment(f"http://127.0.0.1:{port}/mcp", [f"http://127.0.0.1:{p}/mcp" for p in ports])
    finally:
        for process in processes:
            stop(process)
        if redis is not None:
            redis.stop()


class Confirming(ClientHandlers):
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(self, params: models.ElicitRequestParams, ctx: RequestContext[Client]) -> models.ElicitResult:
        self.asked.append(params.message)
        return models.ElicitResult(action="accept", content={"confirm": True})


@asynccontextmanager
async def connected(url: str, handlers: ClientHandlers | None = None, **options: Any) -> AsyncIterator[Client]:
    async with connect_http(
        url, client=Client, handlers=handlers or Confirming(), protocol="2026-07-28", **options
    ) as client:
        yield client


def text(result: models.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, models.TextContent)
    return block.text


async def test_a_task_is_polled_to_its_typed_result(deployment: Deployment) -> None:
    async with connected(deployment.url, extensions=WITH_TASKS) as client:
        workers = {(await client.call_tool(name="whoami", arguments={})).structured_content["result"]  # type: ignore[index]
                   for _ in range(2)}
        assert len(workers) == len(deployment.worker_urls)  # the balancer alternates
        result = await asyncio.wait_for(client.call_tool(name="export", arguments={"count": 3}), 20)
    assert text(result).startswith("exported 3 on ")


async def test_input_inside_a_task_is_answered_through_tasks_update(deployment: Deployment) -> None:
    handlers = Confirming()
    async with connected(deployment.url, handlers, extensions=WITH_TASKS) as client:
        result = await asyncio.wait_for(client.call_tool(name="delete", arguments={"filename": "a.txt"}), 20)
    assert text(result).startswith("deleted a.txt on ")
    assert handlers.asked == ["Delete a.txt?"]


async def test_a_task_is_cancelled_from_any_worker(deployment: Deployment) -> None:
    async with connected(deployment.url, extensions=WITH_TASKS) as client:
        tasks = ToolTasks(client)
        task = await tasks.call_tool(name="forever", arguments={"label": "x1"})
        assert task.task_id is not None
        for _ in range(3):  # through each worker in turn
            assert (await task.status()).status == "working"
        await task.cancel()
        with pytest.raises(TaskCancelled):
            await asyncio.wait_for(task.result(), 20)
        again = tasks.resume(task.task_id)
        assert (await again.status()).status == "cancelled"
    seen: list[str] = []
    for _ in range(100):  # the handler itself was cancelled, on the worker that ran it
        seen = []
        for url in deployment.worker_urls:
            async with connected(url) as worker:
                seen += (await worker.call_tool(name="cancelled", arguments={})).structured_content["result"]  # type: ignore[index]
        if "x1" in seen:
            break
        await asyncio.sleep(0.05)
    assert seen.count("x1") == 1


async def test_unknown_task_ids_and_clients_without_the_extension(deployment: Deployment) -> None:
    async with connected(deployment.url, extensions=WITH_TASKS) as client:
        with pytest.raises(RpcError, match="unknown task 'no-such-task'") as raised:
            await ToolTasks(client).resume("no-such-task").status()
        assert raised.value.code == -32602
    async with connected(deployment.url) as plain:
        with pytest.raises(RpcError) as refused:
            await plain.call_tool(name="delete", arguments={"filename": "b"})
        assert refused.value.code == -32021
        inline = await plain.call_tool(name="export", arguments={"count": 1})  # no task: inline
        assert text(inline).startswith("exported 1 on ")


# -- two workers, each request sent to the one the test chooses (Redis only) ------------------


@pytest.mark.parametrize("deployment", ["redis"], indirect=True)
async def test_a_task_made_on_one_worker_is_answered_and_finished_through_the_other(deployment: Deployment) -> None:
    first_url, second_url = deployment.worker_urls
    handlers = Confirming()
    async with connected(first_url, extensions=WITH_TASKS) as first, connected(
        second_url, handlers, extensions=WITH_TASKS
    ) as second:
        made = await ToolTasks(first).call_tool(name="delete", arguments={"filename": "c.txt"})
        assert made.task_id is not None
        elsewhere = ToolTasks(second).resume(made.task_id)  # polled and answered on the second only
        result = await asyncio.wait_for(elsewhere.result(), 20)
        runner = (await first.call_tool(name="whoami", arguments={})).structured_content["result"]  # type: ignore[index]
    assert text(result) == f"deleted c.txt on {runner}"  # ran where it was made
    assert handlers.asked == ["Delete c.txt?"]


@pytest.mark.parametrize("deployment", ["redis"], indirect=True)
async def test_a_task_made_on_one_worker_is_cancelled_through_the_other(deployment: Deployment) -> None:
    first_url, second_url = deployment.worker_urls
    async with connected(first_url, extensions=WITH_TASKS) as first, connected(
        second_url, extensions=WITH_TASKS
    ) as second:
        made = await ToolTasks(first).call_tool(name="forever", arguments={"label": "x2"})
        assert made.task_id is not None
        elsewhere = ToolTasks(second).resume(made.task_id)
        assert (await elsewhere.status()).status == "working"
        await elsewhere.cancel()
        with pytest.raises(TaskCancelled):
            await asyncio.wait_for(elsewhere.result(), 20)
        for _ in range(100):
            ran = (await first.call_tool(name="cancelled", arguments={})).structured_content["result"]  # type: ignore[index]
            if "x2" in ran:
                break
            await asyncio.sleep(0.05)
        assert "x2" in ran  # the handler on the first worker was cancelled
        assert (await made.status()).status == "cancelled"


@pytest.mark.parametrize("deployment", ["redis"], indirect=True)
async def test_a_listen_stream_on_one_worker_hears_a_task_of_the_other(deployment: Deployment) -> None:
    first_url, second_url = deployment.worker_urls
    async with connected(first_url, extensions=WITH_TASKS) as first, connected(
        second_url, extensions=WITH_TASKS
    ) as second:
        made = await ToolTasks(first).call_tool(name="forever", arguments={"label": "x3"})
        assert made.task_id is not None
        async with second.session.task_updates(made.task_id) as pushed:
            await made.cancel()  # on the first worker, where it runs
            state = await asyncio.wait_for(pushed.get(), 10)
    assert (state.task_id, state.status) == (made.task_id, "cancelled")


async def test_a_task_whose_worker_stopped_is_reported_failed(tmp_path: Path) -> None:
    """Two workers of their own (this test stops one): the task's record names the worker
    that runs it; once that worker is gone (killed, its heartbeat expired: deleted here
    rather than waited for), a tasks/get on the other ends the task failed."""
    from redis.asyncio import Redis as RedisClient

    redis = Redis(tmp_path)
    redis.start()
    processes: list[Any] = []
    try:
        env = {"MCP_REDIS_URL": redis.url, "MCP_REDIS_PREFIX": "stop-test:"}
        processes, ports = start_workers(2, "tasks_app:app", env, unset=("MCP_REQUEST_STATE_KEY",))
        first_url, second_url = (f"http://127.0.0.1:{p}/mcp" for p in ports)
        async with connected(first_url, extensions=WITH_TASKS) as first:
            made = await ToolTasks(first).call_tool(name="forever", arguments={"label": "x4"})
        assert made.task_id is not None
        store = RedisClient.from_url(redis.url)
        try:
            worker = await store.hget(f"stop-test:xtask:-:{made.task_id}", "worker")
            assert worker is not None
            processes[0].kill()
            processes[0].wait(10)
            name = worker.decode() if isinstance(worker, bytes) else worker
            await store.delete(f"stop-test:worker:{name}")
        finally:
            await store.aclose()
        async with connected(second_url, extensions=WITH_TASKS) as second:
            with pytest.raises(RpcError) as raised:
                await asyncio.wait_for(ToolTasks(second).resume(made.task_id).result(), 20)
    finally:
        for process in processes:
            stop(process)
        redis.stop()
    assert raised.value.code == -32603
    assert raised.value.message == "Internal error: the server process running this task stopped"
