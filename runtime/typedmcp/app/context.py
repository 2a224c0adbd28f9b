"""The context a function asks for by annotating a parameter with :class:`Context`."""

from __future__ import annotations

import threading
from typing import Any, Literal, get_args

from mcp_generated.v2025_11_25.server import ClientPeer

from ..protocol.packages import SEVERITY
from ..protocol.stubs import RequestContext

#: The log levels of MCP (RFC 5424's severities), least severe first.
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
assert get_args(LogLevel) == SEVERITY


class Context:
    """What a tool, resource or prompt function can do for the request it serves.

    Annotate one parameter with it (``ctx: Context``): the app fills it in and leaves it
    out of the schema. It wraps the runtime's :class:`~typedmcp.RequestContext`
    (:attr:`request_context`), so both layers see the same request.
    """

    __slots__ = ("_cancelled", "request_context")

    def __init__(self, request_context: RequestContext[ClientPeer]) -> None:
        self.request_context = request_context
        self._cancelled = threading.Event()

    @property
    def request_id(self) -> str | int | None:
        """The JSON-RPC id of the request being served."""
        return self.request_context.request_id

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``_meta`` (a copy)."""
        return dict(self.request_context.meta)

    @property
    def progress_token(self) -> str | int | None:
        """The client's progress token, or None when it asked for no progress."""
        return self.request_context.progress_token

    @property
    def peer(self) -> ClientPeer:
        """The client, typed: ``await ctx.peer.list_roots()``, ``create_message``, ``elicit``
        (in 2026-07-28 the runtime turns these into input requests)."""
        return self.request_context.peer

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled this request. An ``async`` function sees
        ``CancelledError`` at its next ``await``; a sync one, run in a worker thread that
        Python cannot interrupt, should check this between steps and return early."""
        return self._cancelled.is_set()

    def mark_cancelled(self) -> None:
        """Record the cancellation (the app calls it when the request is cancelled)."""
        self._cancelled.set()

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the client asked for progress (it sent a
        token); a value not above the last one is dropped, as the spec asks."""
        await self.request_context.report_progress(progress, total, message)

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if the client's log level lets ``level`` through.
        Raises ValueError for a level MCP does not define."""
        if level not in SEVERITY:
            raise ValueError(
                f"unknown log level {level!r}: use one of {', '.join(SEVERITY)}"
            )
        await self.request_context.log(level, data, logger)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        """``log("debug", data)``."""
        await self.log("debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        """``log("info", data)``."""
        await self.log("info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        """``log("warning", data)``."""
        await self.log("warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        """``log("error", data)``."""
        await self.log("error", data, logger)
