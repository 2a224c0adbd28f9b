"""Start a task's first step at once, in the caller's turn of the event loop.

:func:`start_eagerly` saves a request the trip through the loop's ready queue that
``create_task`` costs (what Python 3.12's eager task factory does, for one task)."""

from __future__ import annotations

import asyncio
import collections.abc
import contextvars
import sys
from collections.abc import Callable, Coroutine, Generator
from typing import Any

_enter_task: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] | None = getattr(
    asyncio.tasks, "_enter_task", None
)


_leave_task: Callable[[asyncio.AbstractEventLoop, asyncio.Task[Any]], None] | None = getattr(
    asyncio.tasks, "_leave_task", None
)


class _EagerStart(collections.abc.Coroutine[Any, Any, Any]):
    """Wraps a coroutine whose first step ran before its task's first step (see
    :func:`start_eagerly`): the task then finishes it, or resumes it where it suspended."""

    __slots__ = ("_coro", "_exception", "_state", "_value")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self._coro = coro
        self._state = 0  # 0: not started, 1: suspended on _value, 2: returned _value, 3: raised, 4: running
        self._value: Any = None
        self._exception: BaseException | None = None

    def first_step(self) -> None:
        try:
            self._value = self._coro.send(None)
            self._state = 1
        except StopIteration as stop:
            self._value, self._state = stop.value, 2
        except BaseException as exc:  # delivered by the task, as a normal first step would
            self._exception, self._state = exc, 3

    def send(self, value: Any) -> Any:
        state = self._state
        if state == 4:
            return self._coro.send(value)
        self._state = 4
        if state == 1:
            return self._value  # hand the future it waits on to the task
        if state == 2:
            raise StopIteration(self._value)
        if state == 3:
            assert self._exception is not None
            raise self._exception
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        state, self._state = self._state, 4
        if state in (2, 3):  # already finished: the task ends as it was told to
            raise typ if val is None else val
        if val is None and tb is None:
            return self._coro.throw(typ)
        return self._coro.throw(typ, val, tb)  # pragma: no cover - old three-argument form

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, Any]:
        raise TypeError("driven by its task only")


def returned_at_once(task: asyncio.Future[Any]) -> bool:
    """Whether ``task``'s coroutine already returned in the first step :func:`start_eagerly`
    ran (its task is done once the loop steps it, with nothing left to wait for). Asked
    right after :func:`start_eagerly`, before the loop runs again; False otherwise (a task
    that suspended or raised, or one started without an eager step, as on Python 3.10)."""
    wrapper = task.get_coro() if isinstance(task, asyncio.Task) else None
    return isinstance(wrapper, _EagerStart) and wrapper._state == 2


def returned_value(task: asyncio.Task[Any]) -> Any:
    """What the coroutine of a task :func:`returned_at_once` returned."""
    wrapper = task.get_coro()
    assert isinstance(wrapper, _EagerStart) and wrapper._state == 2
    return wrapper._value


def start_eagerly(
    coro: Coroutine[Any, Any, Any], register: Callable[[asyncio.Task[Any]], None]
) -> asyncio.Task[Any]:
    """A task for ``coro`` whose first step runs now, as that task, in a copy of the
    caller's context (like a task's); ``register`` gets the task before that step."""
    loop = asyncio.get_running_loop()
    if sys.version_info < (3, 11) or _enter_task is None or _leave_task is None:
        plain = loop.create_task(coro)  # no task context to pass, or no task switching
        register(plain)
        return plain
    context = contextvars.copy_context()
    wrapper = _EagerStart(coro)
    if loop.get_task_factory() is None:  # what create_task would do, minus its layers
        task: asyncio.Task[Any] = asyncio.Task(wrapper, loop=loop, context=context)
    else:
        task = loop.create_task(wrapper, context=context)
    register(task)
    caller = asyncio.current_task(loop)
    if caller is not None:
        _leave_task(loop, caller)
    _enter_task(loop, task)
    try:
        context.run(wrapper.first_step)
    finally:
        _leave_task(loop, task)
        if caller is not None:
            _enter_task(loop, caller)
    return task
