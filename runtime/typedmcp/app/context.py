"""The context a function asks for by annotating a parameter with :class:`Context`."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine
from functools import lru_cache
from typing import Any, Generic, Literal, TypeVar, get_args

from pydantic import TypeAdapter, ValidationError

from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer

from ..protocol.extensions import extension_settings, supports_extension
from ..protocol.meta import CLIENT_INFO_KEY
from ..protocol.origin import RequestOrigin, request_origin
from ..protocol.packages import SEVERITY
from ..protocol.stubs import RequestContext
from .signature import QuietTitles

T = TypeVar("T")

#: The log levels of MCP (RFC 5424's severities), least severe first.
LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
assert get_args(LogLevel) == SEVERITY


@dataclasses.dataclass(frozen=True)
class Elicited(Generic[T]):
    """The user's answer to :meth:`Context.elicit`: ``data`` is the validated form when
    ``action`` is ``"accept"``, else None."""

    action: Literal["accept", "decline", "cancel"]
    data: T | None


@lru_cache(maxsize=256)
def _form(schema: Any) -> tuple[TypeAdapter[Any], models.ElicitRequestFormParamsRequestedSchema]:
    """The adapter and MCP form schema of an elicitation type (checked once per type)."""
    adapter: TypeAdapter[Any] = TypeAdapter(schema)
    derived = adapter.json_schema(schema_generator=QuietTitles)
    derived.pop("additionalProperties", None)
    derived.pop("description", None)
    form_model = models.ElicitRequestFormParamsRequestedSchema
    try:
        form = form_model.model_validate(derived)
    except ValidationError:
        properties = derived.get("properties")
        wrong = [
            name
            for name, prop in (properties.items() if isinstance(properties, dict) else [])
            if not _valid(form_model, {"type": "object", "properties": {name: prop}})
        ]
        shown = f"fields {', '.join(wrong)}" if wrong else "not an object of fields"
        raise ValueError(
            f"{getattr(schema, '__qualname__', schema)} cannot be an elicitation form ({shown}): "
            "MCP forms are flat objects of strings, numbers, booleans and Literal choices, "
            "each required or with a default"
        ) from None
    return adapter, form


def _valid(model: Any, data: Any) -> bool:
    try:
        model.model_validate(data)
    except ValidationError:
        return False
    return True


class Context:
    """What a tool, resource or prompt function can do for the request it serves.

    Annotate one parameter with it (``ctx: Context``): the app fills it in and leaves it
    out of the schema. It wraps the runtime's :class:`~typedmcp.RequestContext`
    (:attr:`request_context`), so both layers see the same request.
    """

    __slots__ = ("_cancelled", "_loop", "_origin", "request_context")

    def __init__(self, request_context: RequestContext[ClientPeer]) -> None:
        self.request_context = request_context
        self._origin: RequestOrigin | None = request_origin()  # (the serving task's)
        self._cancelled = False  # set on the loop, read by a worker thread: a plain flag
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def from_thread(self, awaitable: Coroutine[Any, Any, T]) -> T:
        """Run one of the context's coroutines from a sync function (which runs in a worker
        thread) and wait for its result: ``ctx.from_thread(ctx.report_progress(1, 3))``."""
        loop = self._loop
        if loop is None or loop.is_closed():
            awaitable.close()
            raise RuntimeError("the request's event loop is gone; from_thread works while it is served")
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            awaitable.close()
            raise RuntimeError("from_thread is for sync functions (worker threads); an async one awaits instead")
        return asyncio.run_coroutine_threadsafe(awaitable, loop).result()

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
    def client_capabilities(self) -> dict[str, Any]:
        """What the client declared it can do (in ``initialize``, or in this request's
        ``_meta`` in 2026-07-28)."""
        session = getattr(self.request_context.peer, "session", None)
        return dict(getattr(session, "peer_capabilities", None) or {})

    def client_supports(self, extension: str) -> bool:
        """Whether the client declared the extension (``"io.modelcontextprotocol/tasks"``)
        in its capabilities (2026-07-28: this request's; older revisions have none)."""
        return supports_extension(self.client_capabilities, extension)

    def client_extension(self, extension: str) -> dict[str, Any] | None:
        """The settings the client declared for an extension; None if it did not."""
        return extension_settings(self.client_capabilities, extension)

    @property
    def client_info(self) -> dict[str, Any]:
        """The client's name and version, as it sent them."""
        found = self.request_context.meta.get(CLIENT_INFO_KEY)
        if isinstance(found, dict):
            return dict(found)
        session = getattr(self.request_context.peer, "session", None)
        return dict(getattr(session, "client_info", None) or {})

    @property
    def principal(self) -> object | None:
        """What the bearer token of this request authenticated: the value the server's
        ``BearerAuth.verify`` returned (``http_app(app, auth=...)``). None over stdio and
        without ``auth``. Narrow it with ``isinstance`` (or use :meth:`principal_as`)."""
        return self._origin.principal if self._origin is not None else None

    def principal_as(self, kind: type[T]) -> T | None:
        """:attr:`principal` if it is a ``kind`` (None without one); a principal of another
        type raises TypeError naming both (the server's ``verify`` returns something else)."""
        principal = self.principal
        if principal is None or isinstance(principal, kind):
            return principal
        raise TypeError(
            f"the request's principal is a {type(principal).__name__}, not a {kind.__name__}: "
            "it is what the server's BearerAuth.verify returned"
        )

    @property
    def headers(self) -> dict[str, str]:
        """The HTTP headers of the request (lower-case names; ``Authorization`` left out:
        the principal is what it proved). Empty over stdio. In the handshake era over
        HTTP+SSE they are those of the SSE connection's GET."""
        return self._origin.headers if self._origin is not None else {}

    async def elicit(self, message: str, schema: type[T]) -> Elicited[T]:
        """Ask the user to fill in a form typed by ``schema`` (a pydantic model, a dataclass
        or a TypedDict of strings, numbers, booleans and Literal choices); the accepted
        answer comes back validated as ``schema``. Raises ValueError for a type MCP forms
        cannot express."""
        key: Any = schema  # a type: hashable
        adapter, form = _form(key)
        answer = await self.peer.elicit(
            models.ElicitRequestFormParams(message=message, requested_schema=form)
        )
        if answer.action != "accept":
            return Elicited(answer.action, None)
        return Elicited("accept", adapter.validate_python(answer.content or {}))

    async def sample(
        self,
        prompt: str | list[models.SamplingMessage],
        *,
        max_tokens: int = 1000,
        system_prompt: str | None = None,
        temperature: float | None = None,
    ) -> models.CreateMessageResult:
        """Ask the client's LLM (``sampling/createMessage``); a str is one user message."""
        messages = (
            [models.SamplingMessage(role="user", content=models.TextContent(type="text", text=prompt))]
            if isinstance(prompt, str)
            else prompt
        )
        return await self.peer.create_message(
            max_tokens=max_tokens, messages=messages, system_prompt=system_prompt, temperature=temperature
        )

    async def list_roots(self) -> list[models.Root]:
        """The client's roots (``roots/list``)."""
        return (await self.peer.list_roots()).roots

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled this request. An ``async`` function sees
        ``CancelledError`` at its next ``await``; a sync one, run in a worker thread that
        Python cannot interrupt, should check this between steps and return early."""
        return self._cancelled

    def mark_cancelled(self) -> None:
        """Record the cancellation (the app calls it when the request is cancelled)."""
        self._cancelled = True

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
