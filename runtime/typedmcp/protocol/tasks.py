"""Task-augmented requests (2025-11-25): long work runs in the background behind a task id.

A request whose params carry ``task`` (and whose method the receiver declared it runs as a
task) starts its handler as a background task and is answered at once with the task; the
requestor polls ``tasks/get``, fetches the outcome with ``tasks/result``, may
``tasks/cancel``, and receives ``notifications/tasks/status`` on each change. Either side
may be the receiver: a server with ``tasks=True`` runs ``tools/call`` as tasks, a client
with ``tasks=True`` runs ``sampling/createMessage`` and ``elicitation/create``; both use one
:class:`TaskStore` and :class:`TaskBuiltins` per session.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from ..engine.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, RpcError, handler_failed, quoted
from .results import to_wire
from .stubs import RequestContext

TERMINAL = frozenset({"completed", "failed", "cancelled"})
DEFAULT_TTL_MS = 10 * 60 * 1000
#: The most tasks one session keeps (finished ones are dropped first, oldest first).
MAX_TASKS = 1000
POLL_INTERVAL_MS = 500
RELATED_TASK_KEY = "io.modelcontextprotocol/related-task"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task: its state, and the outcome once terminal."""

    task_id: str
    method: str
    ttl_ms: int
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    created: float = field(default_factory=time.monotonic)
    status: str = "working"
    status_message: str | None = None
    result: Any = None
    error: RpcError | None = None
    runner: asyncio.Task[None] | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def wire(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttl": self.ttl_ms,
            "pollInterval": POLL_INTERVAL_MS,
        }
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        return task


class TaskStore:
    """The tasks of one session, kept until their ttl runs out; at most ``max_tasks`` at
    once (a finished task makes room for a new one before its ttl ends)."""

    def __init__(
        self, notify: Callable[[dict[str, Any]], Awaitable[None]], max_tasks: int = MAX_TASKS
    ) -> None:
        self.records: dict[str, TaskRecord] = {}
        self.notify = notify
        self.max_tasks = max_tasks

    def start(
        self, method: str, ttl_ms: int | None, work: Callable[[], Awaitable[Any]]
    ) -> TaskRecord:
        """Run ``work`` in the background as a new task."""
        self._expire()
        if len(self.records) >= self.max_tasks:
            self._make_room()
        record = TaskRecord(secrets.token_urlsafe(16), method, ttl_ms or DEFAULT_TTL_MS)
        self.records[record.task_id] = record
        record.runner = asyncio.ensure_future(self._run(record, work))
        return record

    async def _run(self, record: TaskRecord, work: Callable[[], Awaitable[Any]]) -> None:
        try:
            record.result = await work()
            await self._finish(record, "completed")
        except asyncio.CancelledError:
            await self._finish(record, "cancelled", "cancelled by request")
        except RpcError as error:
            record.error = error
            await self._finish(record, "failed", error.message)
        except Exception as error:  # logged as an engine logs a failing handler
            record.error = handler_failed(f"{record.method} (task {record.task_id})", None, error)
            await self._finish(record, "failed", record.error.message)

    async def _finish(self, record: TaskRecord, status: str, message: str | None = None) -> None:
        if record.status in TERMINAL:
            return
        record.status, record.status_message, record.updated_at = status, message, _now()
        record.done.set()
        with contextlib.suppress(Exception):
            await self.notify(record.wire())

    def get(self, task_id: str) -> TaskRecord:
        self._expire()
        record = self.records.get(task_id)
        if record is None:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown task {quoted(task_id)}")
        return record

    async def cancel(self, task_id: str) -> TaskRecord:
        record = self.get(task_id)
        if record.status in TERMINAL:
            raise RpcError(
                INVALID_PARAMS, f"Invalid params: task {task_id!r} is already {record.status}"
            )
        if record.runner is not None:
            record.runner.cancel()
        await self._finish(record, "cancelled", "cancelled by request")
        return record

    async def outcome(self, task_id: str) -> Any:
        """Wait until the task is terminal; its result, or the error it ended with."""
        record = self.get(task_id)
        await record.done.wait()
        if record.error is not None:
            raise record.error
        if record.status == "cancelled":
            raise RpcError(INVALID_PARAMS, f"Invalid params: task {task_id!r} was cancelled")
        return record.result

    def _make_room(self) -> None:
        """Drop the oldest finished tasks until one more fits; refuse if all are working."""
        finished = [r for r in self.records.values() if r.status in TERMINAL]
        finished.sort(key=lambda record: record.created)
        for record in finished[: len(self.records) - self.max_tasks + 1]:
            del self.records[record.task_id]
        if len(self.records) >= self.max_tasks:
            raise RpcError(
                INVALID_REQUEST,
                f"Invalid Request: too many tasks are working ({self.max_tasks}); wait for "
                "some to finish, or cancel them with tasks/cancel",
            )

    def _expire(self) -> None:
        now = time.monotonic()
        for task_id, record in list(self.records.items()):
            if record.status in TERMINAL and now - record.created > record.ttl_ms / 1000:
                del self.records[task_id]

    def close(self) -> None:
        for record in self.records.values():
            if record.runner is not None and not record.runner.done():
                record.runner.cancel()

    # -- what the tasks/* built-ins call (the TaskKeeper protocol) ---------------------------

    async def saved(self, task_id: str) -> None:
        """Nothing to wait for: a task in memory is there as soon as it is started."""

    async def get_wire(self, task_id: str) -> dict[str, Any]:
        return self.get(task_id).wire()

    async def list_wire(self) -> list[dict[str, Any]]:
        self._expire()
        return [record.wire() for record in self.records.values()]

    async def cancel_wire(self, task_id: str) -> dict[str, Any]:
        return (await self.cancel(task_id)).wire()


class StartedTask(Protocol):
    """A task a :class:`TaskKeeper` started: its wire form for the ``CreateTaskResult``."""

    def wire(self) -> dict[str, Any]: ...


class TaskKeeper(Protocol):
    """Where a session's tasks live: :class:`TaskStore` in memory (the default), or a store
    shared by several workers (``typedmcp.state``)."""

    def start(
        self, method: str, ttl_ms: int | None, work: Callable[[], Awaitable[Any]]
    ) -> StartedTask: ...

    async def saved(self, task_id: str) -> None:
        """Return once a task just started can be found by every worker (the server
        answers with the ``CreateTaskResult`` then); raise if it could not be recorded."""
        ...

    async def get_wire(self, task_id: str) -> dict[str, Any]: ...

    async def outcome(self, task_id: str) -> Any: ...

    async def list_wire(self) -> list[dict[str, Any]]: ...

    async def cancel_wire(self, task_id: str) -> dict[str, Any]: ...

    def close(self) -> None: ...


class TaskBuiltins:
    """``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel`` over a session's
    task store: the runtime answers them on the side that runs tasks (``tasks=True``)."""

    def __init__(self, store: TaskKeeper) -> None:
        self.store = store

    async def get_task(self, params: Any, ctx: RequestContext[Any]) -> dict[str, Any]:
        """A task's status comes from the runtime's task store."""
        return await self.store.get_wire(params.task_id)

    async def get_task_payload(self, params: Any, ctx: RequestContext[Any]) -> Any:
        """A task's result is what the handler that ran as the task returned."""
        result = to_wire(await self.store.outcome(params.task_id))
        meta = dict(result.get("_meta") or {})
        meta[RELATED_TASK_KEY] = {"taskId": params.task_id}
        return {**result, "_meta": meta}

    async def list_tasks(self, params: Any, ctx: RequestContext[Any]) -> dict[str, Any]:
        """The runtime lists the tasks of its store."""
        return {"tasks": await self.store.list_wire()}

    async def cancel_task(self, params: Any, ctx: RequestContext[Any]) -> dict[str, Any]:
        """The runtime cancels the task's handler (it sees asyncio.CancelledError)."""
        return await self.store.cancel_wire(params.task_id)
