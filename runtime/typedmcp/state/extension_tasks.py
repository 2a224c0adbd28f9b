"""Tasks of the tasks extension (SEP-2663, 2026-07-28) in Redis: ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` answered by any worker.

The worker that receives the ``tools/call`` runs the task (its handler is an asyncio task
there, as in memory, and so are the input requests it waits on); every change of the task
(status, pending ``inputRequests``, the inlined result or error) is written through to
Redis, in order, the first write before the ``CreateTaskResult`` goes out (so a
``tasks/get`` on another worker finds it at once). Under ``<prefix>``:

* ``xtask:<owner>:<task id>``: a hash with the ``tasks/get`` answer (``task``), its
  ``status`` and the ``worker`` running it; a working task's record lives ``ttlMs`` plus a
  minute and is refreshed while its worker runs it, a terminal one until ``ttlMs`` after
  its creation.

The owner is the principal (anonymous requests share one owner, as in memory); task ids are
128 random bits. A ``tasks/get`` on any worker reads the record; ``tasks/update`` and
``tasks/cancel`` on a worker that does not run the task are sent to the one that does (the
SEP lets both be eventually consistent); a cancel also marks the record ``cancelled`` at once.
Only a working task becomes terminal (a compare-and-set), so a cancel and the task's own
end cannot both win. A task whose worker stopped (no heartbeat) is reported failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic_core import from_json

from ..engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError, quoted
from ..protocol.tasks import MAX_TASKS, TERMINAL, _now
from ..stateless.tasks import ExtensionTask, TaskRegistry
from .connection import RedisState, StateUnavailable

logger = logging.getLogger("typedmcp")

#: A working task's record outlives its ttl by at least this (its worker refreshes it).
WORKING_GRACE_MS = 60_000
REFRESH_SECONDS = 20.0

# KEYS: task key. ARGV: status, task (JSON), worker, expire ms. 1: written; 0: it is terminal.
_WRITE = """
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'task', ARGV[2], 'worker', ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
return 1
"""


class RedisTaskRegistry(TaskRegistry):
    """The extension's tasks of a server, shared by its workers through Redis (see the
    module doc). ``http_app`` uses it when the workers share state (``redis_url=``,
    ``MCP_REDIS_URL``); else pass ``task_registry=RedisTaskRegistry(state)``."""

    def __init__(self, state: RedisState, max_tasks: int = MAX_TASKS) -> None:
        super().__init__(max_tasks)
        self.state = state
        self._locks: dict[str, asyncio.Lock] = {}  # one write at a time per task, in order
        self._queued: set[str] = set()
        self._saves: dict[str, asyncio.Future[None]] = {}
        self._keepers: dict[str, asyncio.Task[None]] = {}
        self._script: Any = None
        state.on("xtask-update", self._remote_update)
        state.on("xtask-cancel", self._remote_cancel)
        state.on("xtask-changed", self._remote_change)
        state.on_reconnect(self._record_again)

    def _key(self, owner: str | None, task_id: str) -> str:
        return self.state.key("xtask", owner or "-", task_id)

    # -- the worker that runs the task: write each change through --------------------------

    def start(
        self, owner: str | None, ttl_ms: int | None, work: Callable[[], Awaitable[Any]]
    ) -> ExtensionTask:
        task = super().start(owner, ttl_ms, work)
        task.watcher = self._changed
        self._saves[task.task_id] = asyncio.ensure_future(self._flush(task, raising=True))  # its state now

        self._keepers[task.task_id] = asyncio.ensure_future(self._keep(task))
        return task

    async def saved(self, task: ExtensionTask) -> None:
        """Wait for the first write; a task that could not be recorded is cancelled and the
        ``tools/call`` fails (-32603) rather than hand out a task id no worker knows."""
        save = self._saves.pop(task.task_id, None)
        if save is None:
            return
        try:
            await asyncio.shield(save)
        except Exception as error:
            if task.runner is not None:
                task.runner.cancel()
            self.tasks.pop(task.task_id, None)
            if isinstance(error, RpcError):
                raise  # (StateUnavailable: Redis cannot be reached; retry)
            raise RpcError(
                INTERNAL_ERROR, f"Internal error: the task could not be recorded in Redis ({error})"
            ) from None

    def _record_again(self) -> None:
        """Redis is back and may have lost its data: write the tasks running here again
        (one that ended during the outage is written as it ended)."""
        for task in list(self.tasks.values()):
            self.state._spawn(self._flush(task))

    def _changed(self, task: ExtensionTask) -> None:
        """Tell this worker's listen streams; queue a write of the task's current state (one
        queued write covers many changes), which tells the other workers' streams."""
        self.notify(task)
        self.state._spawn(self._flush(task))

    async def _flush(self, task: ExtensionTask, raising: bool = False) -> None:
        if task.task_id in self._queued and not raising:
            return  # a write not started yet will take this change too (the first is never skipped)
        self._queued.add(task.task_id)
        lock = self._locks.setdefault(task.task_id, asyncio.Lock())
        async with lock:
            self._queued.discard(task.task_id)
            try:
                wire = task.detailed()
                if await self._write(task, task.status, wire, (time.monotonic() - task.created) * 1000):
                    await self.state.tell_all({"t": "xtask-changed", "o": task.owner, "id": task.task_id, "w": wire})
            except StateUnavailable:
                if raising:
                    raise
                logger.warning("task %s... changed (%s) while Redis was unreachable; its record "
                               "lags until the next change", task.task_id[:8], task.status)
            finally:
                if task.status in TERMINAL and task.task_id not in self._queued:
                    self._locks.pop(task.task_id, None)
                    keeper = self._keepers.pop(task.task_id, None)
                    if keeper is not None:
                        keeper.cancel()

    async def _write(self, task: ExtensionTask, status: str, wire: dict[str, Any], age_ms: float = 0.0) -> bool:
        """Write ``wire``, the task's ``tasks/get`` answer (``age_ms`` after its creation),
        unless its record is terminal already; whether it was written."""
        if self._script is None:
            self._script = self.state.client.register_script(_WRITE)
        script = self._script
        ttl = int(wire.get("ttlMs") or 0)
        expire = ttl + WORKING_GRACE_MS if status not in TERMINAL else max(int(ttl - age_ms), 1000)
        keys = [self._key(task.owner, task.task_id)]
        args = [status, json.dumps(wire), self.state.worker, expire]
        return bool(await self.state.call(lambda client: script(keys=keys, args=args, client=client)))

    async def _keep(self, task: ExtensionTask) -> None:
        """Keep a working task's record alive past its ttl while it runs here."""
        key = self._key(task.owner, task.task_id)
        while True:
            await asyncio.sleep(REFRESH_SECONDS)
            with contextlib.suppress(StateUnavailable):
                await self.state.call(lambda client: client.pexpire(key, task.ttl_ms + WORKING_GRACE_MS))

    # -- any worker: the methods -----------------------------------------------------------

    async def _read(self, owner: str | None, task_id: Any) -> tuple[str, dict[str, Any], str]:
        """The record's status, ``tasks/get`` answer and worker; -32602 for none."""
        if not (isinstance(task_id, str) and 0 < len(task_id) <= 64 and task_id.isascii()):
            raise _unknown(task_id)
        key = self._key(owner, task_id)
        values = await self.state.call(lambda client: client.hmget(key, ["status", "task", "worker"]))
        if values[0] is None:
            raise _unknown(task_id)
        status, wire, worker = values[0].decode(), from_json(values[1], allow_inf_nan=False), values[2].decode()
        if status not in TERMINAL and not await self.state.alive(worker):
            stopped = "the server process running this task stopped"
            failed = _ended(wire, "failed", stopped)
            failed["error"] = {"code": INTERNAL_ERROR, "message": f"Internal error: {stopped}"}
            await self._ended_here(ExtensionTask(task_id, owner, 0), "failed", failed)
            return await self._read(owner, task_id)  # terminal now
        return status, wire, worker

    async def detailed(self, owner: str | None, task_id: Any) -> dict[str, Any]:
        self._expire()
        return (await self._read(owner, task_id))[1]

    async def deliver(self, owner: str | None, task_id: Any, responses: Any) -> None:
        local = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if local is not None and local.owner == owner:
            self.update(owner, task_id, responses)
            return
        if not isinstance(responses, Mapping):
            raise RpcError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
        status, _, worker = await self._read(owner, task_id)
        if status not in TERMINAL:
            await self.state.send_to(worker, {"t": "xtask-update", "o": owner, "id": task_id, "r": dict(responses)})

    async def cancel_task(self, owner: str | None, task_id: Any) -> None:
        local = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if local is not None and local.owner == owner:
            self.cancel(owner, task_id)
            return
        status, wire, worker = await self._read(owner, task_id)
        if status in TERMINAL:
            return
        await self._ended_here(ExtensionTask(task_id, owner, 0), "cancelled", _ended(wire, "cancelled", None))
        with contextlib.suppress(StateUnavailable):
            await self.state.send_to(worker, {"t": "xtask-cancel", "o": owner, "id": task_id})

    async def _ended_here(self, task: ExtensionTask, status: str, wire: dict[str, Any]) -> None:
        """End another worker's task in its record (if still working); tell every stream."""
        if await self._write(task, status, wire):
            self.notify(task, wire)
            with contextlib.suppress(StateUnavailable):
                await self.state.tell_all({"t": "xtask-changed", "o": task.owner, "id": task.task_id, "w": wire})

    # -- messages from the other workers ----------------------------------------------------

    def _mine(self, message: Mapping[str, Any]) -> ExtensionTask | None:
        task_id = message.get("id")
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        return task if task is not None and task.owner == message.get("o") else None

    def _remote_update(self, message: dict[str, Any]) -> None:
        task = self._mine(message)
        if task is not None:
            with contextlib.suppress(RpcError):
                self.update(task.owner, task.task_id, message.get("r"))

    def _remote_change(self, message: dict[str, Any]) -> None:
        """A task of another worker changed: tell the listen streams here that watch it."""
        task_id, owner, wire = message.get("id"), message.get("o"), message.get("w")
        if isinstance(task_id, str) and (owner is None or isinstance(owner, str)) and isinstance(wire, dict):
            self.notify(ExtensionTask(task_id, owner, 0), wire)

    def _remote_cancel(self, message: dict[str, Any]) -> None:
        task = self._mine(message)
        if task is not None:
            self.cancel(task.owner, task.task_id)

    def close(self) -> None:
        super().close()
        for keeper in self._keepers.values():
            keeper.cancel()
        self._keepers.clear()


def _ended(wire: Mapping[str, Any], status: str, message: str | None) -> dict[str, Any]:
    """Another worker's task record, made terminal (its pending input requests dropped)."""
    ended = {k: v for k, v in wire.items() if k not in ("inputRequests", "result", "error")}
    ended.update(status=status, lastUpdatedAt=_now())
    if message is not None:
        ended["statusMessage"] = message
    return ended


def _unknown(task_id: Any) -> RpcError:
    return RpcError(INVALID_PARAMS, f"Invalid params: unknown task {quoted(str(task_id))}")
