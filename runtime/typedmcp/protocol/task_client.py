"""The client side of the tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``).

A client that declares the extension (``connect_*(..., extensions={TASKS_EXTENSION: {}})``)
tells each request's server it may answer a ``tools/call`` with a task. Then:

* ``await client.call_tool(...)`` still returns the typed ``CallToolResult``: when the
  server answers with a task (``resultType: "task"``) the client polls ``tasks/get``
  (every ``pollIntervalMs``), answers the task's ``inputRequests`` with its
  ``ClientHandlers`` hooks (``elicitation/create``, ``sampling/createMessage``,
  ``roots/list``) through ``tasks/update``, and returns the inlined result, or raises the
  task's JSON-RPC error (:class:`~typedmcp.engine.jsonrpc.RpcError`) or
  :class:`TaskCancelled`. A caller that gives up (cancelled) cancels the task.
* :class:`ToolTasks` gives a handle instead: ``task = await ToolTasks(client).call_tool(
  name=..., arguments=...)``; ``await task.status()``, ``await task.result()``,
  ``await task.cancel()``; ``ToolTasks(client).resume(task_id)`` takes up a task id kept
  from an earlier run (the SEP asks clients to persist them).

Only ``tools/call`` may be answered with a task (the SEP's list); a task answer to any other
request, or to a client that did not declare the extension, is a protocol violation.
``tasks/*`` requests carry the task id in ``Mcp-Name`` over HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from mcp_generated.extensions.tasks import dispatch as generated_tasks

from ..engine.jsonrpc import RpcError, quoted
from .extensions import TASKS_EXTENSION, supports_extension
from .meta import COMPLETE, RESULT_TYPE
from .results import ProtocolViolation, invalid_result, validate_any_result
from .session import Session
from .spec import RequestSpec

logger = logging.getLogger("typedmcp")

#: The ``resultType`` of a ``CreateTaskResult``.
TASK_RESULT_TYPE = "task"
#: The requests a server may answer with a task (SEP-2663: ``tools/call`` only, for now).
TASK_AUGMENTABLE = frozenset({"tools/call"})
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
#: The status notification a server may send on a listen stream naming the task.
TASK_NOTIFICATION = "notifications/tasks"
#: How long ``task_updates`` waits for the stream's acknowledgement (polling covers the rest).
LISTEN_ACK_SECONDS = 5.0
#: The poll interval when the server suggests none, and the longest one honoured (seconds).
DEFAULT_POLL_SECONDS = 0.5
MAX_POLL_SECONDS = 30.0
#: The shortest pause between two ``tasks/get``: a server's ``pollIntervalMs`` of 0 or below
#: would otherwise have the client ask again at once, round trip after round trip.
MIN_POLL_SECONDS = 0.01


class TaskCancelled(Exception):
    """The task ended ``cancelled`` (by ``tasks/cancel``, from this client or another)."""

    def __init__(self, task_id: str, message: str | None = None) -> None:
        super().__init__(f"task {task_id!r} was cancelled" + (f": {message}" if message else ""))
        self.task_id = task_id


@dataclass(frozen=True)
class TaskState:
    """One ``tasks/get`` answer (or the ``CreateTaskResult``): the task as the server has it."""

    task_id: str
    status: str
    created_at: str | None = None
    last_updated_at: str | None = None
    status_message: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    input_requests: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

    @property
    def terminal(self) -> bool:
        """Whether the task ended (``completed``, ``failed`` or ``cancelled``)."""
        return self.status in TERMINAL_STATUSES

    @classmethod
    def from_wire(cls, raw: Any, asked: str) -> TaskState:
        """Read a ``Task`` object; :class:`ProtocolViolation` names what is missing."""
        if not isinstance(raw, Mapping):
            raise ProtocolViolation(f"{asked} answered {type(raw).__name__}, not a task object")
        task_id, status = raw.get("taskId"), raw.get("status")
        if not isinstance(task_id, str) or not isinstance(status, str):
            raise ProtocolViolation(f"{asked} answered a task without a string taskId and status")
        requests, result, error = raw.get("inputRequests"), raw.get("result"), raw.get("error")
        if status == "completed" and not isinstance(result, Mapping):
            raise ProtocolViolation(f"{asked}: completed task {quoted(task_id)} has no result object")
        if status == "failed" and not isinstance(error, Mapping):
            raise ProtocolViolation(f"{asked}: failed task {quoted(task_id)} has no error object")
        return cls(
            task_id, status, _text(raw.get("createdAt")), _text(raw.get("lastUpdatedAt")),
            _text(raw.get("statusMessage")), _number(raw.get("ttlMs")), _number(raw.get("pollIntervalMs")),
            dict(requests) if isinstance(requests, Mapping) else {},
            dict(result) if isinstance(result, Mapping) else None,
            dict(error) if isinstance(error, Mapping) else None,
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


#: The extension's requests as generated from its pinned schema (their params validated by
#: its models before they are sent).
GET, UPDATE, CANCEL = (generated_tasks.REQUESTS[m] for m in ("tasks/get", "tasks/update", "tasks/cancel"))


class ToolTask:
    """A handle on one ``tools/call`` the server runs as a task (or answered at once:
    then ``task_id`` is None and :meth:`result` returns that answer)."""

    def __init__(self, session: Any, state: TaskState | None, answer: Any = None) -> None:
        #: The client's session (a ``ClientSession``; typed Any here: client.py imports this module).
        self.session: Any = session
        #: The last state seen (None: the server answered the call without a task).
        self.last: TaskState | None = state
        self._answer = answer
        self._answered: set[str] = set()  # input request keys already answered (dedup across polls)
        #: How many states came by status notification (``result(listen=True)``).
        self.pushes = 0
        #: When this client first saw the task (its ttl counts from about then).
        self.seen_at = time.monotonic()

    @property
    def task_id(self) -> str | None:
        """The server's task id (None when the call was not run as a task)."""
        return self.last.task_id if self.last is not None else None

    async def _send(self, method: RequestSpec[Any], params: dict[str, Any], timeout: float | None) -> Any:
        session = self.session
        if session.era != "stateless" or session.package is None:
            raise ProtocolViolation(f"{method.method} needs a stateless-era (2026-07-28) session")
        return await session._request(method, params, timeout)

    async def status(self, timeout: float | None = None) -> TaskState:
        """Ask the server for the task's state (``tasks/get``)."""
        if self.last is None:
            return TaskState("", "completed", result=self._answer)
        raw = await self._send(GET, {"taskId": self.last.task_id}, timeout)
        self.last = TaskState.from_wire(raw, "tasks/get")
        return self.last

    async def cancel(self, timeout: float | None = None) -> None:
        """Ask the server to cancel the task (``tasks/cancel``; cooperative: the task may
        still end otherwise). Nothing to do for a call answered at once."""
        if self.last is not None:
            await self._send(CANCEL, {"taskId": self.last.task_id}, timeout)

    async def answer_input(self, state: TaskState, timeout: float | None = None) -> bool:
        """Answer the input requests of ``state`` not answered yet with the client's hooks,
        in one ``tasks/update``; whether there were any."""
        fresh = {key: entry for key, entry in state.input_requests.items() if key not in self._answered}
        if not fresh:
            return False
        answers = await self.session._fulfil(fresh)
        self._answered.update(fresh)
        await self._send(UPDATE, {"taskId": state.task_id, "inputResponses": answers}, timeout)
        return True

    async def raw_result(
        self, timeout: float | None = None, request_timeout: float | None = None, *, listen: bool = False
    ) -> Any:
        """Poll until the task ends; the inlined result as sent (a dict). Raises the task's
        JSON-RPC error, :class:`TaskCancelled`, or ``TimeoutError`` after ``timeout`` s.
        ``listen``: also open a ``subscriptions/listen`` stream for the task's status
        notifications, taken as they come (polling goes on, at ``pollIntervalMs``)."""
        if self.last is None:
            return self._answer
        if not listen:
            return await self._poll(timeout, request_timeout, None)
        async with self.session.task_updates(self.last.task_id) as pushed:
            return await self._poll(timeout, request_timeout, pushed)

    async def _poll(
        self, timeout: float | None, request_timeout: float | None, pushed: asyncio.Queue[TaskState] | None
    ) -> Any:
        assert self.last is not None
        state = self.last
        give_up = None if timeout is None else time.monotonic() + timeout
        seen = False  # the CreateTaskResult is the seed state: ask for the current one first
        while True:
            if seen and await self.answer_input(state, request_timeout):
                seen = False
            if state.terminal:
                break
            if seen:
                asked = state.poll_interval_ms / 1000 if state.poll_interval_ms is not None else DEFAULT_POLL_SECONDS
                pause = min(MAX_POLL_SECONDS, max(MIN_POLL_SECONDS, asked))
                if give_up is not None and time.monotonic() + pause > give_up:
                    raise asyncio.TimeoutError(f"task {state.task_id!r} is still {state.status} after {timeout} s")
                if state.ttl_ms is not None and time.monotonic() - self.seen_at > state.ttl_ms / 1000 + pause:
                    raise asyncio.TimeoutError(  # (SEP-2663: the ttl is a backstop; the server may drop it)
                        f"task {state.task_id!r} is still {state.status} after its ttl ({state.ttl_ms} ms): "
                        "the server may have dropped it; cancel it or read it again with resume()"
                    )
                if pushed is None:
                    await asyncio.sleep(pause)
                else:
                    with contextlib.suppress(asyncio.TimeoutError):
                        state = self.last = await asyncio.wait_for(pushed.get(), pause)
                        self.pushes += 1
                        continue  # a notification carries what tasks/get would answer
            else:
                await asyncio.sleep(0)  # (an in-process server may answer without yielding)
            state, seen = await self.status(request_timeout), True
        if state.status == "failed":
            assert state.error is not None
            error = state.error
            code = error.get("code")
            raise RpcError(code if isinstance(code, int) else -32603, str(error.get("message", "")), error.get("data"))
        if state.status == "cancelled":
            raise TaskCancelled(state.task_id, state.status_message)
        assert state.result is not None
        return {RESULT_TYPE: COMPLETE, **state.result}

    async def result(self, timeout: float | None = None, *, listen: bool = False) -> Any:
        """Wait for the task's end (see :meth:`raw_result`); the typed ``CallToolResult``."""
        raw = await self.raw_result(timeout, listen=listen)
        if self.last is None:
            return raw  # already typed: the call's own answer
        own = self.session._allowed("tools/call")[1]
        try:
            return validate_any_result(own, self.session.on_result("tools/call", raw))
        except ValidationError as error:
            raise invalid_result(own, error) from None


class TaskResults:
    """What :class:`~typedmcp.protocol.client.ClientSession` does with a result whose
    ``resultType`` is not ``complete``: a task (the extension) is waited for, the rest refused."""

    async def other_result(self, method: str, kind: Any, raw: Any, timeout: float | None) -> Any:
        """The final raw result of a request answered with ``resultType`` ``kind``."""
        session: Any = self  # (a ClientSession)
        if kind != TASK_RESULT_TYPE or method not in TASK_AUGMENTABLE:
            raise ProtocolViolation(f"{method} answered with unknown resultType {kind!r}")
        if not supports_extension(session.own_capabilities, TASKS_EXTENSION):
            raise ProtocolViolation(
                f"{method} answered with a task, but this client did not declare the tasks "
                f"extension ({TASKS_EXTENSION!r}): the server broke SEP-2663"
            )
        task = ToolTask(session, TaskState.from_wire(raw, method))
        try:
            return await task.raw_result(request_timeout=timeout)
        except (asyncio.CancelledError, asyncio.TimeoutError):  # given up: no one holds the task (best effort)
            with contextlib.suppress(Exception):
                await asyncio.shield(task.cancel(timeout))
            raise


    @contextlib.asynccontextmanager
    async def task_updates(self, task_id: str) -> AsyncIterator[asyncio.Queue[TaskState]]:
        """A queue of the task's states as the server pushes them (``notifications/tasks``
        on a ``subscriptions/listen`` stream with ``taskIds``), while the block runs."""
        session: Any = self
        pushed: asyncio.Queue[TaskState] = asyncio.Queue()
        waiters = _waiters(session)
        waiters.setdefault(task_id, set()).add(pushed)
        stream, subscription = session._open_listen({"taskIds": [task_id]}, background=True)
        try:
            ready = asyncio.ensure_future(subscription.ready.wait())
            await asyncio.wait({ready, stream}, timeout=LISTEN_ACK_SECONDS, return_when=asyncio.FIRST_COMPLETED)
            ready.cancel()
            if stream.done() and not stream.cancelled() and stream.exception() is not None:
                raise stream.exception()  # refused (-32021, ...)
            yield pushed
        finally:
            stream.cancel()
            with contextlib.suppress(BaseException):
                await stream
            waiting = waiters.get(task_id)
            if waiting is not None:
                waiting.discard(pushed)
                if not waiting:
                    del waiters[task_id]

    async def on_notification(self, method: str, params: Any) -> None:
        """Status notifications go to the queues of :meth:`task_updates`; the rest on."""
        if method == TASK_NOTIFICATION and isinstance(params, Mapping):
            waiting = _waiters(self).get(params.get("taskId"))  # type: ignore[arg-type]
            if waiting:
                try:
                    state = TaskState.from_wire({k: v for k, v in params.items() if k != "_meta"}, method)
                except ProtocolViolation as error:
                    logger.info("ignored %s: %s", method, error)
                    return
                for queue in waiting:
                    queue.put_nowait(state)
            return
        await Session.on_notification(self, method, params)  # type: ignore[arg-type]


def _waiters(session: Any) -> dict[str, set[asyncio.Queue[TaskState]]]:
    """The session's :meth:`TaskResults.task_updates` queues by task id."""
    found: dict[str, set[asyncio.Queue[TaskState]]] | None = session.__dict__.get("_task_waiters")
    if found is None:
        found = session.__dict__["_task_waiters"] = {}
    return found


class ToolTasks:
    """Call tools as tasks and keep the handles: ``tasks = ToolTasks(client)``;
    ``task = await tasks.call_tool(name="export", arguments={...})``;
    ``await task.result()``. ``client``: a connected typed client (``connect_*``) that
    declared the tasks extension."""

    def __init__(self, client: Any) -> None:
        session = getattr(client, "session", client)
        if not supports_extension(getattr(session, "own_capabilities", None), TASKS_EXTENSION):
            raise ProtocolViolation(
                "ToolTasks needs a client that declares the tasks extension: connect with "
                f"extensions={{{TASKS_EXTENSION!r}: {{}}}} (a 2026-07-28 session)"
            )
        self.session: Any = session

    async def call_tool(
        self, *, name: str, arguments: Mapping[str, Any] | None = None, timeout: float | None = None
    ) -> ToolTask:
        """Send ``tools/call``; a handle on the task the server made of it, or on its
        immediate answer (the server decides; ``task.task_id`` is None then). Input the
        server asks for before it makes the task (multi round-trip) is answered first."""
        session = self.session
        if session.era != "stateless" or session.package is None:
            raise ProtocolViolation("tasks need a stateless-era (2026-07-28) session")
        negotiated, own = session._allowed("tools/call")
        wire: dict[str, Any] = {"name": name}
        if arguments is not None:
            wire["arguments"] = dict(arguments)
        raw = await session._request(negotiated, wire, timeout)
        if isinstance(raw, dict) and raw.get(RESULT_TYPE) == "input_required":
            raw = await session._input_rounds("tools/call", negotiated, wire, raw, timeout)
        if isinstance(raw, dict) and raw.get(RESULT_TYPE) == TASK_RESULT_TYPE:
            return ToolTask(session, TaskState.from_wire(raw, "tools/call"))
        try:
            answer = validate_any_result(own, session.on_result("tools/call", raw))
        except ValidationError as error:
            raise invalid_result(own, error) from None
        return ToolTask(session, None, answer)

    def resume(self, task_id: str) -> ToolTask:
        """A handle on a task started earlier (its id kept by the caller); its state is
        read on the first :meth:`ToolTask.status` or :meth:`ToolTask.result`."""
        if not isinstance(task_id, str) or not task_id:
            raise ValueError(f"resume needs the task id string a CreateTaskResult gave; got {task_id!r}")
        return ToolTask(self.session, TaskState(task_id, "working"))
