"""Tasks (2025-11-25) in Redis: ``tasks/get``, ``tasks/result``, ``tasks/list`` and
``tasks/cancel`` answered by any worker.

The worker that receives a task-augmented request runs it (its handler is an asyncio task
there, as in memory); the record lives in Redis, written before the ``CreateTaskResult``
goes out, so a ``tasks/get`` on another worker finds it at once. Under ``<prefix>``:

* ``task:<owner>:<task id>``: a hash with the task as the wire shows it (``wire``), its
  ``status``, the ``outcome`` once terminal (the result, or the error), and the ``worker``
  running it; it expires ``ttl`` after creation (a working task lives on while its worker
  keeps it, and at least a minute);
* ``tasks:<owner>``: the owner's task ids by creation time (``tasks/list``, the cap).

The owner is the session (whose id is unguessable and bound to the credential that opened
it): another session's task id names nothing. Task ids are 128 random bits.

Finishing is a compare-and-set (only a working task becomes terminal), so a cancel from
another worker and the runner's own end cannot both win. The end is announced on the bus:
a ``tasks/result`` waiting on any worker wakes at once (and re-reads the record every
couple of seconds anyway, should an announcement be lost). A cancel is sent to the worker
that runs the task, which cancels its handler. A task whose worker stopped (no heartbeat)
is reported failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic_core import from_json

from ..engine.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, RpcError, handler_failed, quoted
from ..protocol.results import to_wire
from ..protocol.tasks import DEFAULT_TTL_MS, MAX_TASKS, POLL_INTERVAL_MS, TERMINAL, _now

from .connection import RedisState, StateUnavailable

logger = logging.getLogger("typedmcp")

#: A working task's record outlives its ttl by at least this (its worker refreshes it).
WORKING_GRACE_MS = 60_000
REFRESH_SECONDS = 20.0
POLL_SECONDS = 2.0
INDEX_TTL_MS = 24 * 3600 * 1000

# KEYS: index, task key. ARGV: task id, created ms, wire, worker, max tasks, expire ms,
# task key prefix, index expire ms. 1: created; 0: the owner has max tasks working; 2: it exists already.
_CREATE = """
local index, key = KEYS[1], KEYS[2]
if redis.call('EXISTS', key) == 1 then return 2 end
local limit = tonumber(ARGV[5])
if redis.call('ZCARD', index) >= limit then
  for _, id in ipairs(redis.call('ZRANGE', index, 0, -1)) do
    local other = ARGV[7] .. id
    local status = redis.call('HGET', other, 'status')
    if not status then
      redis.call('ZREM', index, id)
    elseif status == 'completed' or status == 'failed' or status == 'cancelled' then
      redis.call('DEL', other)
      redis.call('ZREM', index, id)
    end
    if redis.call('ZCARD', index) < limit then break end
  end
  if redis.call('ZCARD', index) >= limit then return 0 end
end
redis.call('HSET', key, 'wire', ARGV[3], 'status', 'working', 'worker', ARGV[4])
redis.call('PEXPIRE', key, tonumber(ARGV[6]))
redis.call('ZADD', index, tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', index, ARGV[8])
return 1
"""

# KEYS: task key. ARGV: status, wire, outcome, expire at (ms). 1: done; 0: already terminal.
_FINISH = """
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status ~= 'working' then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'wire', ARGV[2], 'outcome', ARGV[3])
redis.call('PEXPIREAT', KEYS[1], tonumber(ARGV[4]))
return 1
"""


class RedisTaskRecord:
    """A task this worker started: the wire form (for the ``CreateTaskResult``), its
    handler, and ``saved`` (awaited before answering, so other workers find it)."""

    __slots__ = ("created", "method", "runner", "saved", "task_id", "ttl_ms", "wire_form")

    def __init__(self, task_id: str, method: str, ttl_ms: int) -> None:
        now = _now()
        self.task_id = task_id
        self.method = method
        self.ttl_ms = ttl_ms
        self.created = time.time()
        self.wire_form: dict[str, Any] = {
            "taskId": task_id, "status": "working", "createdAt": now, "lastUpdatedAt": now,
            "ttl": ttl_ms, "pollInterval": POLL_INTERVAL_MS,
        }
        self.runner: asyncio.Task[None] | None = None
        self.saved: asyncio.Future[None] | None = None

    def wire(self) -> dict[str, Any]:
        return dict(self.wire_form)


class RedisTaskStore:
    """The tasks of one owner (a session), in Redis (see the module doc). The same
    methods as the in-memory :class:`~typedmcp.tasks.TaskStore` that the
    ``tasks/*`` built-ins use."""

    def __init__(
        self,
        state: RedisState,
        owner: str,
        notify: Callable[[dict[str, Any]], Awaitable[None]],
        max_tasks: int = MAX_TASKS,
    ) -> None:
        self.state = state
        self.owner = owner
        self.notify = notify
        self.max_tasks = max_tasks
        self.running: dict[str, RedisTaskRecord] = {}  # started here, not finished
        self._index = state.key("tasks", owner)
        self._prefix = state.key("task", owner) + ":"
        self._scripts: dict[str, Any] = {}
        _hub(state).stores[owner] = self  # the bus messages every task store of this worker shares

    def _script(self, name: str, source: str) -> Any:
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self.state.client.register_script(source)
        return script

    # -- running ----------------------------------------------------------------------------

    def start(
        self, method: str, ttl_ms: int | None, work: Callable[[], Awaitable[Any]]
    ) -> RedisTaskRecord:
        record = RedisTaskRecord(secrets.token_urlsafe(16), method, ttl_ms or DEFAULT_TTL_MS)
        record.saved = asyncio.ensure_future(self._create(record))
        record.runner = asyncio.ensure_future(self._run(record, work))
        self.running[record.task_id] = record
        _hub(self.state).runners[(self.owner, record.task_id)] = record
        return record

    async def saved(self, task_id: str) -> None:
        record = self.running.get(task_id)
        if record is not None and record.saved is not None:
            await asyncio.shield(record.saved)

    async def _create(self, record: RedisTaskRecord) -> None:
        script = self._script("create", _CREATE)
        keys = [self._index, self._prefix + record.task_id]
        args = [
            record.task_id, int(record.created * 1000), json.dumps(record.wire_form),
            self.state.worker, self.max_tasks, record.ttl_ms + WORKING_GRACE_MS, self._prefix,
            INDEX_TTL_MS,
        ]
        created = await self.state.call(lambda client: script(keys=keys, args=args, client=client))
        if not created:
            raise RpcError(
                INVALID_REQUEST,
                f"Invalid Request: too many tasks are working ({self.max_tasks}); wait for "
                "some to finish, or cancel them with tasks/cancel",
            )

    async def _run(self, record: RedisTaskRecord, work: Callable[[], Awaitable[Any]]) -> None:
        assert record.saved is not None
        keeper: asyncio.Task[None] | None = None
        try:
            try:
                await asyncio.shield(record.saved)
            except BaseException:
                return  # not created (refused, or Redis failed): the request said so
            keeper = asyncio.ensure_future(self._keep(record))
            try:
                result = to_wire(await work())
                ending: tuple[str, str | None, dict[str, Any] | None] = ("completed", None, {"result": result})
            except asyncio.CancelledError:
                ending = ("cancelled", "cancelled by request", None)
            except RpcError as error:
                ending = ("failed", error.message, {"error": error.to_wire()})
            except Exception as error:
                failed = handler_failed(f"{record.method} (task {record.task_id})", None, error)
                ending = ("failed", failed.message, {"error": failed.to_wire()})
            try:
                await self._finish(record, *ending)
            except Exception:
                logger.exception("could not record the end of task %s...", record.task_id[:8])
        finally:
            if keeper is not None:
                keeper.cancel()
            self.running.pop(record.task_id, None)
            _hub(self.state).runners.pop((self.owner, record.task_id), None)

    async def _keep(self, record: RedisTaskRecord) -> None:
        """Keep a working task's record alive past its ttl while it runs here."""
        key = self._prefix + record.task_id
        while True:
            await asyncio.sleep(REFRESH_SECONDS)
            with contextlib.suppress(StateUnavailable):
                await self.state.call(lambda client: client.pexpire(key, WORKING_GRACE_MS, gt=True))

    async def _finish(
        self, record: RedisTaskRecord | None, status: str, message: str | None,
        outcome: dict[str, Any] | None, *, task_id: str | None = None, wire: dict[str, Any] | None = None,
    ) -> dict[str, Any] | None:
        """Make a working task terminal (compare-and-set); its wire form, or None if it
        already was. Tells the waiting workers and the client."""
        if record is not None:
            task_id, wire = record.task_id, record.wire()
        assert task_id is not None and wire is not None
        wire = {**wire, "status": status, "lastUpdatedAt": _now()}
        if message is not None:
            wire["statusMessage"] = message
        created = wire.get("createdAt")
        given = wire.get("ttl")
        ttl = given if isinstance(given, int) else DEFAULT_TTL_MS
        created_ms = record.created * 1000 if record is not None else time.time() * 1000
        if record is None and isinstance(created, str):
            created_ms = _parse_ms(created)
        expire_at = int(max(created_ms + ttl, time.time() * 1000 + 1000))
        script = self._script("finish", _FINISH)
        keys = [self._prefix + task_id]
        args = [status, json.dumps(wire), json.dumps(outcome or {}), expire_at]
        try:
            done = await self.state.call(lambda client: script(keys=keys, args=args, client=client))
        except StateUnavailable:
            logger.warning("task %s... ended (%s) while Redis was unreachable; its record says "
                           "working until it expires", task_id[:8], status)
            return None
        if not done:
            return None
        with contextlib.suppress(StateUnavailable):
            await self.state.tell_all({"t": "task-done", "o": self.owner, "id": task_id})
        _hub(self.state).ring(self.owner, task_id)
        with contextlib.suppress(Exception):
            await self.notify(wire)
        return wire

    # -- reading ----------------------------------------------------------------------------

    async def _read(self, task_id: str, *fields: str) -> list[Any]:
        key = self._prefix + task_id if _plausible(task_id) else None
        if key is None:
            raise _unknown(task_id)
        values = await self.state.call(lambda client: client.hmget(key, ["status", "wire", "worker", *fields]))
        if values[0] is None:
            raise _unknown(task_id)
        status, wire, worker = values[0].decode(), from_json(values[1], allow_inf_nan=False), values[2].decode()
        if status == "working" and not await self.state.alive(worker):
            stopped = "the server process running this task stopped"
            await self._finish(
                None, "failed", stopped, {"error": {"code": -32603, "message": f"Internal error: {stopped}"}},
                task_id=task_id, wire=wire,
            )
            return await self._read(task_id, *fields)  # terminal now
        return [status, wire, worker, *values[3:]]

    async def get_wire(self, task_id: str) -> dict[str, Any]:
        return (await self._read(task_id))[1]  # type: ignore[no-any-return]

    async def outcome(self, task_id: str) -> Any:
        """Wait until the task is terminal (here or on any worker); its result, or the
        error it ended with."""
        hub = _hub(self.state)
        while True:
            rung = hub.waiter(self.owner, task_id)
            try:
                status, _, _, outcome = await self._read(task_id, "outcome")
                if status in TERMINAL:
                    break
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(rung.wait(), POLL_SECONDS)
            finally:
                hub.done_waiting(self.owner, task_id, rung)
        if status == "cancelled":
            raise RpcError(INVALID_PARAMS, f"Invalid params: task {task_id!r} was cancelled")
        ended = from_json(outcome, allow_inf_nan=False) if outcome else {}
        error = ended.get("error")
        if isinstance(error, dict):
            raise RpcError(int(error.get("code", -32603)), str(error.get("message", "")), error.get("data"))
        return ended.get("result")

    async def list_wire(self) -> list[dict[str, Any]]:
        async def read(client: Any) -> list[Any]:
            ids = await client.zrange(self._index, 0, -1)
            if not ids:
                return []
            async with client.pipeline(transaction=False) as pipe:
                for task_id in ids:
                    pipe.hget(self._prefix + task_id.decode(), "wire")
                return list(zip(ids, await pipe.execute(), strict=True))

        found = await self.state.call(read)
        return [from_json(wire, allow_inf_nan=False) for _, wire in found if wire is not None]

    async def cancel_wire(self, task_id: str) -> dict[str, Any]:
        status, wire, worker = await self._read(task_id)
        if status in TERMINAL:
            raise RpcError(INVALID_PARAMS, f"Invalid params: task {task_id!r} is already {status}")
        finished = await self._finish(None, "cancelled", "cancelled by request", None, task_id=task_id, wire=wire)
        if finished is None:  # it ended meanwhile
            status = (await self._read(task_id))[0]
            raise RpcError(INVALID_PARAMS, f"Invalid params: task {task_id!r} is already {status}")
        if worker == self.state.worker:
            _hub(self.state).cancel_local(self.owner, task_id)
        else:
            with contextlib.suppress(StateUnavailable):
                await self.state.send_to(worker, {"t": "task-cancel", "o": self.owner, "id": task_id})
        return finished

    def close(self) -> None:
        """The session ended (or this worker dropped its copy): cancel what runs here."""
        stores = _hub(self.state).stores
        if stores.get(self.owner) is self:
            del stores[self.owner]
        for record in list(self.running.values()):
            if record.runner is not None and not record.runner.done():
                record.runner.cancel()


class _Hub:
    """What every task store of one worker shares: the handlers it runs (for cancels sent
    by other workers) and the ``tasks/result`` calls waiting here."""

    def __init__(self, state: RedisState) -> None:
        self.runners: dict[tuple[str, str], RedisTaskRecord] = {}
        self.stores: dict[str, RedisTaskStore] = {}  # owner -> a store of it (for re-creating)
        state.on_reconnect(lambda: state._spawn(self.recreate()))
        self.waiting: dict[tuple[str, str], set[asyncio.Event]] = {}
        state.on("task-done", lambda message: self.ring(message.get("o"), message.get("id")))
        state.on("task-cancel", lambda message: self.cancel_local(message.get("o"), message.get("id")))

    async def recreate(self) -> None:
        """Redis is back, and may have lost its data: record again the tasks running here
        (a task that finished during the outage is lost with its result)."""
        for (owner, _), record in list(self.runners.items()):
            store = self.stores.get(owner)
            if store is not None:
                with contextlib.suppress(RpcError):
                    await store._create(record)

    def waiter(self, owner: str, task_id: str) -> asyncio.Event:
        rung = asyncio.Event()
        self.waiting.setdefault((owner, task_id), set()).add(rung)
        return rung

    def done_waiting(self, owner: str, task_id: str, rung: asyncio.Event) -> None:
        waiting = self.waiting.get((owner, task_id))
        if waiting is not None:
            waiting.discard(rung)
            if not waiting:
                del self.waiting[(owner, task_id)]

    def ring(self, owner: Any, task_id: Any) -> None:
        for rung in self.waiting.get((owner, task_id), ()):
            rung.set()

    def cancel_local(self, owner: Any, task_id: Any) -> None:
        record = self.runners.get((owner, task_id))
        if record is not None and record.runner is not None:
            record.runner.cancel()


def _hub(state: RedisState) -> _Hub:
    hub = state.extensions.get("tasks")
    if not isinstance(hub, _Hub):
        hub = state.extensions["tasks"] = _Hub(state)
    return hub


def _plausible(task_id: Any) -> bool:
    return isinstance(task_id, str) and 0 < len(task_id) <= 64 and task_id.isascii()


def _unknown(task_id: Any) -> RpcError:
    return RpcError(INVALID_PARAMS, f"Invalid params: unknown task {quoted(task_id)}")


def _parse_ms(stamp: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000
    except ValueError:
        return time.time() * 1000
