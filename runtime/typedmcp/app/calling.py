"""Running a declared function: async ones on the event loop, sync ones in a worker thread."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from typing import Any

from .context import Context


def is_async(function: Callable[..., Any]) -> bool:
    """Whether calling ``function`` gives an awaitable to await (``async def``)."""
    target = function.func if isinstance(function, functools.partial) else function
    if inspect.iscoroutinefunction(target):
        return True
    call = None if inspect.isroutine(target) else type(target).__dict__.get("__call__")
    return call is not None and inspect.iscoroutinefunction(call)


async def run_function(
    function: Callable[..., Any],
    args: list[Any],
    kwargs: dict[str, Any],
    context: Context | None,
    *,
    asynchronous: bool,
) -> Any:
    """Call ``function``; a sync one runs in a worker thread (never on the event loop).

    Cancellation: an async function gets ``CancelledError`` at its next ``await``; a sync
    one cannot be interrupted, so ``context.cancelled`` becomes true for it to check, and
    the request ends at once while the thread finishes on its own.
    """
    try:
        if asynchronous:
            return await function(*args, **kwargs)
        return await asyncio.to_thread(function, *args, **kwargs)
    except asyncio.CancelledError:
        if context is not None:
            context.mark_cancelled()
        raise
