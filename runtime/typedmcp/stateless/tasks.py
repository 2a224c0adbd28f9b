"""The tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``) on the 2026-07-28 server.

A tool handler hands its work to :func:`run_as_task`: when the request's client capabilities
declare the extension, the work runs in the background and the client is answered at once
with a ``CreateTaskResult`` (``resultType: "task"``, the task's fields at the top level);
otherwise the work runs in the request (or, ``required=True``, the request is refused with
-32021). The client then polls ``tasks/get`` (the final result or error is inlined there),
answers the task's input requests with ``tasks/update`` and may ``tasks/cancel``. A
``ctx.peer.elicit`` / ``create_message`` / ``list_roots`` inside the task parks it
(``status: "input_required"``, ``inputRequests`` on ``tasks/get``) until ``tasks/update``
delivers the answer; input gathered by the multi round-trip loop before :func:`run_as_task`
composes with it (the last round gets the ``CreateTaskResult``).

The server serves this surface when it declares the extension:
``extensions={TASKS_EXTENSION: {}}``. Tasks live in the worker's memory (with shared state,
``typedmcp.state.RedisTaskRegistry`` keeps them in Redis for every worker), bound to the
principal that created them (anonymous requests share one owner; task ids are 128 random
bits); a terminal task is kept for its ``ttlMs``. Each change of a task goes to the
``subscriptions/listen`` streams that name it in ``notifications.taskIds``
(``notifications/tasks``, see :func:`watch_tasks`).

The extension's methods, params and results come from its published schema (ext-tasks,
pinned in ``schema/extensions/pins.json``) through mcp-codegen: :data:`TASK_METHODS` is the
generated method table's (``mcp_generated.extensions.tasks.dispatch``), each request's
params are validated by its generated model before it is served and each answer by its
result model before it is sent. The 2025-11-25 core tasks (``protocol/tasks.py``,
``tasks=True``) are a different wire and stay as they are.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from mcp_generated.extensions.tasks import dispatch as generated_tasks
from pydantic import ValidationError

from ..engine.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, RpcError, handler_failed, quoted
from ..protocol.extensions import TASKS_EXTENSION, supports_extension
from ..protocol.meta import CLIENT_CAPABILITIES_KEY, COMPLETE, MISSING_REQUIRED_CLIENT_CAPABILITY
from ..protocol.results import describe, to_wire
from ..protocol.spec import RequestSpec
from ..protocol.stubs import ToolError
from ..protocol.tasks import DEFAULT_TTL_MS, MAX_TASKS, POLL_INTERVAL_MS, TERMINAL, _now
from .scope import _scope
from .sealing import principal_tag

#: The extension's requests (SEP-2663), from its generated method table: method -> spec.
TASK_REQUESTS: Mapping[str, RequestSpec[Any]] = generated_tasks.REQUESTS
#: Their methods (``tasks/get``, ``tasks/update``, ``tasks/cancel``), as the router sees them.
TASK_METHODS = tuple(TASK_REQUESTS)
#: The status notification, sent on ``subscriptions/listen`` streams that name the task in
#: ``notifications.taskIds``; its params are what ``tasks/get`` answers at that moment.
TASK_NOTIFICATION = "notifications/tasks"
#: What a listener is handed: (``TASK_NOTIFICATION``, the notification's params).
Deliver = Callable[[tuple[str, dict[str, Any]]], None]
#: The request field the ``Mcp-Name`` header mirrors for them.
TASK_ID = "taskId"
TASK_RESULT_TYPE = "task"
INPUT_REQUIRED_STATUS = "input_required"
#: What a client that did not declare the extension lacks (the -32021 error's data).
REQUIRED_CAPABILITIES: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}

T = TypeVar("T")
#: How a tool runs as a task: when the client declares the extension ("optional"), or only
#: then, refusing other 2026-07-28 clients with -32021 ("required").
TaskSupport = Literal["optional", "required"]


class TaskStarted(BaseException):
    """Unwinds a ``tools/call`` handler whose work now runs as a task; carries the
    ``CreateTaskResult``. A BaseException, so ``except Exception`` in handler code lets it by."""

    def __init__(self, created: dict[str, Any]) -> None:
        super().__init__("task started")
        self.created = created


@dataclass
class ExtensionTask:
    """One task of the extension: status, pending input requests, the outcome."""

    task_id: str
    owner: str | None
    ttl_ms: int
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    created: float = field(default_factory=time.monotonic)
    status: str = "working"
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)
    answers: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    runner: asyncio.Task[None] | None = None
    #: Told of each change (a store shared by workers writes it through; notifications).
    watcher: Callable[[ExtensionTask], None] | None = None

    def fields(self) -> dict[str, Any]:
        """The ``Task`` fields (what a ``CreateTaskResult`` carries beside ``resultType``)."""
        return {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_INTERVAL_MS,
        }

    def detailed(self) -> dict[str, Any]:
        """The ``tasks/get`` answer: the fields, the pending input requests, the outcome."""
        answer: dict[str, Any] = {"resultType": COMPLETE, **self.fields()}
        if self.status == INPUT_REQUIRED_STATUS:
            answer["inputRequests"] = dict(self.pending)
        if self.status == "completed" and self.result is not None:
            answer["result"] = self.result
        if self.status == "failed" and self.error is not None:
            answer["error"] = self.error
        return answer

    def _set(self, status: str) -> None:
        if self.status not in TERMINAL:
            self.status, self.updated_at = status, _now()
            self._changed()

    def _changed(self) -> None:
        if self.watcher is not None:
            self.watcher(self)

    async def ask(self, key: str, request: dict[str, Any]) -> Any:
        """Park the task on an input request until ``tasks/update`` answers ``key``."""
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[key], self.answers[key] = request, answer
        self._set(INPUT_REQUIRED_STATUS)
        try:
            return await answer
        finally:
            self.pending.pop(key, None)
            self.answers.pop(key, None)
            if not self.pending:
                self._set("working")
            else:
                self._changed()  # the other requests still wait


class TaskRegistry:
    """The extension's tasks on one server (one worker's memory; ``typedmcp.state``'s
    ``RedisTaskRegistry`` shares them between workers)."""

    def __init__(self, max_tasks: int = MAX_TASKS) -> None:
        self.tasks: dict[str, ExtensionTask] = {}
        self.max_tasks = max_tasks
        #: (owner, task id) -> the listen streams of this worker that watch the task.
        self.listeners: dict[tuple[str | None, str], set[Deliver]] = {}

    def start(
        self, owner: str | None, ttl_ms: int | None, work: Callable[[], Awaitable[Any]]
    ) -> ExtensionTask:
        """Run ``work`` (returns the tool's result) in the background as a new task; it can
        be found by ``tasks/get`` as soon as this returns."""
        self._expire()
        if len(self.tasks) >= self.max_tasks:
            self._make_room()
        task = ExtensionTask(secrets.token_urlsafe(16), owner, ttl_ms or DEFAULT_TTL_MS)
        task.watcher = self.notify
        self.tasks[task.task_id] = task
        task.runner = asyncio.ensure_future(self._run(task, work))
        return task

    async def _run(self, task: ExtensionTask, work: Callable[[], Awaitable[Any]]) -> None:
        try:
            result = await work()
            task.result = to_wire(result) if result is not None else {"content": []}
            task._set("completed")
        except asyncio.CancelledError:
            task._set("cancelled")
        except ToolError as error:  # a failure the model reads: the task still completed
            task.result = {"content": [{"type": "text", "text": str(error)}], "isError": True}
            task._set("completed")
        except RpcError as error:
            task.error = _error_wire(error)
            task._set("failed")
        except Exception as error:  # a bug: logged, reported without its details
            task.error = _error_wire(handler_failed(f"tools/call (task {task.task_id})", None, error))
            task._set("failed")

    def get(self, owner: str | None, task_id: Any) -> ExtensionTask:
        """The owner's task; -32602 for any id that names none of its tasks."""
        self._expire()
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None or task.owner != owner:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown task {quoted(str(task_id))}")
        return task

    def update(self, owner: str | None, task_id: Any, responses: Any) -> None:
        """Deliver ``inputResponses`` to the task's pending input requests (other keys are
        ignored)."""
        task = self.get(owner, task_id)
        if not isinstance(responses, Mapping):
            raise RpcError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
        for key, response in responses.items():
            answer = task.answers.get(key)
            if answer is not None and not answer.done():
                answer.set_result(response)

    def cancel(self, owner: str | None, task_id: Any) -> None:
        """Cancel a working task (its handler sees CancelledError); a terminal task stays."""
        task = self.get(owner, task_id)
        if task.status in TERMINAL:
            return
        if task.runner is not None:
            task.runner.cancel()
        task._set("cancelled")

    def notify(self, task: ExtensionTask, detailed: dict[str, Any] | None = None) -> None:
        """Send the task's state (``detailed``: as ``tasks/get`` answers) to the listen
        streams of this worker that watch it."""
        listeners = self.listeners.get((task.owner, task.task_id))
        if listeners:
            wire = dict(detailed if detailed is not None else task.detailed())
            wire.pop("resultType", None)
            for deliver in list(listeners):
                deliver((TASK_NOTIFICATION, wire))

    def watch(self, owner: str | None, task_ids: list[str], deliver: Deliver) -> Callable[[], None]:
        """Hand ``deliver`` each change of the owner's tasks ``task_ids``; returns the
        function that stops it."""
        keys = [(owner, task_id) for task_id in task_ids]
        for key in keys:
            self.listeners.setdefault(key, set()).add(deliver)

        def unwatch() -> None:
            for key in keys:
                watching = self.listeners.get(key)
                if watching is not None:
                    watching.discard(deliver)
                    if not watching:
                        del self.listeners[key]

        return unwatch

    async def saved(self, task: ExtensionTask) -> None:
        """Return once a task just started is found by ``tasks/get`` (in memory: at once)."""

    async def detailed(self, owner: str | None, task_id: Any) -> dict[str, Any]:
        """The ``tasks/get`` answer for the owner's task."""
        return self.get(owner, task_id).detailed()

    async def deliver(self, owner: str | None, task_id: Any, responses: Any) -> None:
        """``tasks/update``: see :meth:`update`."""
        self.update(owner, task_id, responses)

    async def cancel_task(self, owner: str | None, task_id: Any) -> None:
        """``tasks/cancel``: see :meth:`cancel`."""
        self.cancel(owner, task_id)

    def close(self) -> None:
        for task in self.tasks.values():
            if task.runner is not None and not task.runner.done():
                task.runner.cancel()

    def _expire(self) -> None:
        now = time.monotonic()
        for task_id, task in list(self.tasks.items()):
            if task.status in TERMINAL and now - task.created > task.ttl_ms / 1000:
                del self.tasks[task_id]

    def _make_room(self) -> None:
        finished = sorted((t for t in self.tasks.values() if t.status in TERMINAL), key=lambda t: t.created)
        for task in finished[: len(self.tasks) - self.max_tasks + 1]:
            del self.tasks[task.task_id]
        if len(self.tasks) >= self.max_tasks:
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: too many tasks are running ({self.max_tasks}); wait for some "
                "to finish, or cancel them with tasks/cancel",
            )

    # -- the methods ------------------------------------------------------------------------

    async def serve(self, method: str, params: Mapping[str, Any], principal: Any) -> dict[str, Any]:
        """Answer ``tasks/get``, ``tasks/update`` or ``tasks/cancel`` for the request's
        principal (its client capabilities must declare the extension: -32021 otherwise)."""
        owner = principal_tag(principal)
        meta = params.get("_meta")
        capabilities = meta.get(CLIENT_CAPABILITIES_KEY) if isinstance(meta, Mapping) else None
        if not isinstance(capabilities, Mapping) or not supports_extension(capabilities, TASKS_EXTENSION):
            raise missing_extension(method)
        spec = TASK_REQUESTS.get(method)
        serve = SERVED_BY.get(spec.handler_name) if spec is not None else None
        if spec is None or serve is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {quoted(method)}")
        if spec.handler_name == "update_task":
            params = self._outstanding_only(owner, params)
        try:
            spec.validate_params(params)
        except ValidationError as error:
            raise RpcError(INVALID_PARAMS, f"Invalid params: {method}: {describe(error)}") from None
        answer = await serve(self, owner, params)
        try:
            spec.validate_result(answer)
        except ValidationError as error:  # a bug here, not the client's: logged, not detailed
            raise handler_failed(method, None, error) from None
        return answer

    def _outstanding_only(self, owner: str | None, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """``tasks/update`` params without the responses to no outstanding input request:
        those are ignored, so they are not validated either (the ones kept are validated
        again as answers to their requests when delivered)."""
        responses = params.get("inputResponses")
        task_id = params.get(TASK_ID)
        task = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if not isinstance(responses, Mapping) or task is None or task.owner != owner:
            return params
        return {**params, "inputResponses": {k: v for k, v in responses.items() if k in task.answers}}

    async def _get(self, owner: str | None, params: Mapping[str, Any]) -> dict[str, Any]:
        return await self.detailed(owner, params.get(TASK_ID))

    async def _update(self, owner: str | None, params: Mapping[str, Any]) -> dict[str, Any]:
        await self.deliver(owner, params.get(TASK_ID), params.get("inputResponses"))
        return {"resultType": COMPLETE}  # the new state is seen on the next tasks/get

    async def _cancel(self, owner: str | None, params: Mapping[str, Any]) -> dict[str, Any]:
        await self.cancel_task(owner, params.get(TASK_ID))
        return {"resultType": COMPLETE}


#: The generated table's handler names -> the registry's method that answers each.
SERVED_BY: dict[str, Callable[[TaskRegistry, str | None, Mapping[str, Any]], Awaitable[dict[str, Any]]]] = {
    "get_task": TaskRegistry._get,
    "update_task": TaskRegistry._update,
    "cancel_task": TaskRegistry._cancel,
}


def check_method_table(requests: Mapping[str, RequestSpec[Any]]) -> None:
    """Every request of the generated table has its answer here, and nothing else does: a
    regenerated table that adds, drops or renames a method fails at import, naming it."""
    table = {spec.handler_name: method for method, spec in requests.items()}
    unserved = sorted(table[name] for name in set(table) - set(SERVED_BY))
    stale = sorted(set(SERVED_BY) - set(table))
    if unserved or stale:
        raise ImportError(
            "typedmcp.stateless.tasks does not match the generated tasks method table "
            f"(mcp_generated.extensions.tasks.dispatch): unserved {unserved}, no longer in the "
            f"table {stale}; update SERVED_BY with the table"
        )


check_method_table(TASK_REQUESTS)


def watch_tasks(
    registry: TaskRegistry | None, scope: Any, wanted: Any, honoured: dict[str, Any], deliver: Deliver
) -> Callable[[], None]:
    """The ``taskIds`` of a ``subscriptions/listen`` filter: watch them (they are put in
    ``honoured``, the acknowledgement) and return the function that stops; -32021 for a
    client that did not declare the extension. Nothing when the server does not serve it."""
    if registry is None or not isinstance(wanted, list):
        return _nothing
    if not supports_extension(scope.client_capabilities, TASKS_EXTENSION):
        raise missing_extension("task status notifications (notifications.taskIds)")
    task_ids = [task_id for task_id in wanted if isinstance(task_id, str)]
    honoured["taskIds"] = task_ids
    return registry.watch(principal_tag(scope.principal), task_ids, deliver)


def _nothing() -> None:
    """Stops nothing."""


def missing_extension(needed_for: str) -> RpcError:
    """-32021 for a client that did not declare the tasks extension."""
    return RpcError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: extensions[{TASKS_EXTENSION!r}] (needed for "
        f"{needed_for}); declare it in the request's client capabilities",
        REQUIRED_CAPABILITIES,
    )


def _error_wire(error: RpcError) -> dict[str, Any]:
    wire: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.data is not None:
        wire["data"] = error.data
    return wire


async def _discard(method: str, params: Any) -> None:
    """Where a task's progress and log messages go: its request's stream has ended."""


async def run_as_task(
    work: Callable[[], Awaitable[T]], *, required: bool = False, ttl_ms: int | None = None
) -> T:
    """Run a ``tools/call`` handler's ``work`` as a task of the tasks extension (SEP-2663)
    when this 2026-07-28 request's client declared the extension and the server serves it
    (``extensions={TASKS_EXTENSION: {}}``): the request is answered with the
    ``CreateTaskResult`` at once, and ``work``'s result (or error) is what ``tasks/get``
    reports later. Otherwise ``work`` runs here and its result is returned; with
    ``required=True`` a 2026-07-28 client without the extension gets -32021 instead.
    ``work`` may ask the client for input (``ctx.peer.elicit``): the task waits for
    ``tasks/update``."""
    scope = _scope.get(None)
    registry = getattr(scope, "tasks", None)
    if scope is None or scope.method != "tools/call" or scope.task is not None:
        return await work()  # a handshake-era session, or already inside a task
    declared = supports_extension(scope.client_capabilities, TASKS_EXTENSION)
    if registry is None or not declared:
        if required:
            raise missing_extension(f"tool {quoted(str(scope.name))}, which runs only as a task")
        return await work()
    task = registry.start(principal_tag(scope.principal), ttl_ms, work)
    scope.task, scope.emit = task, _discard  # its input requests now park the task
    await registry.saved(task)  # (SEP-2663: answer once tasks/get finds it, on any worker)
    raise TaskStarted({"resultType": TASK_RESULT_TYPE, **task.fields()})
