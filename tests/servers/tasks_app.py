"""An ASGI app for the tasks-extension tests (``uvicorn tasks_app:app``); with
``MCP_REDIS_URL`` set its workers share their tasks in Redis.

``export`` runs as a task when the client lets it and names the worker process that ran it;
``delete`` runs only as a task and asks the user to confirm inside it; ``forever`` runs
until cancelled; ``cancelled`` lists the ``forever`` tasks this worker's handlers saw
cancelled (a test asks each worker directly); ``whoami`` names this worker.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from typedmcp import TASKS_EXTENSION, Context, McpApp, http_app
import typedmcp.stateless.tasks

typedmcp.stateless.tasks.POLL_INTERVAL_MS = 20  # type: ignore[attr-defined]  # (quick polls; 500 ms by default)

tasks = McpApp("tasks-test", "1.0.0", extensions={TASKS_EXTENSION: {}})
CANCELLED: list[str] = []


@dataclass
class Confirm:
    confirm: bool


@tasks.tool(task="optional")
async def export(count: int) -> str:
    """Exports notes; names the worker that did."""
    await asyncio.sleep(0.05)
    return f"exported {count} on {os.getpid()}"


@tasks.tool(task="required")
async def delete(filename: str, ctx: Context) -> str:
    """Deletes a file once the user confirms (asked inside the task)."""
    answer = await ctx.elicit(f"Delete {filename}?", Confirm)
    done = answer.data is not None and answer.data.confirm
    return f"{'deleted' if done else 'kept'} {filename} on {os.getpid()}"


@tasks.tool(task="optional")
async def forever(label: str) -> str:
    """Runs until cancelled."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        CANCELLED.append(label)
        raise
    return "never"


@tasks.tool()
def cancelled() -> list[str]:
    """The labels of the forever tasks cancelled on this worker."""
    return list(CANCELLED)


@tasks.tool()
def whoami() -> int:
    """This worker's process id."""
    return os.getpid()


app = http_app(tasks)
