"""What one stateless request knows while its handler runs (:class:`RequestScope`, in a
context variable), and the functions a handler calls about it: :func:`input_key`,
:func:`single_use_state`, :func:`resumed_from_state`."""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..engine.jsonrpc import CapabilityError, RequestId
from ..protocol.meta import CLIENT_CAPABILITIES_KEY, LOG_LEVEL_KEY

Emit = Callable[[str, Any], Awaitable[None]]


T = TypeVar("T")


class InputRequired(BaseException):
    """Unwinds a handler that asked the client for input it has not given yet.

    A BaseException, like cancellation, so ``except Exception`` in handler code does not
    swallow it.
    """


class RequestScope:
    """What one stateless request knows: its own _meta, its stream, its MRTR answers."""

    __slots__ = (
        "answers", "arguments", "asked", "calls", "emit", "meta", "method", "name",
        "principal", "request_id", "resumed", "single_use", "task", "tasks", "used",
    )

    def __init__(
        self,
        method: str,
        request_id: RequestId,
        meta: dict[str, Any],
        emit: Emit,
        principal: Any = None,
    ) -> None:
        self.method = method
        self.request_id = request_id
        self.meta = meta
        self.emit = emit
        self.principal = principal
        self.name: Any = None  # params.name / params.uri of the three input-required methods
        self.arguments: Any = None  # and their params.arguments (a state is bound to both)
        self.single_use = False  # the requestState this request gets can be used once
        self.answers: dict[str, Any] = {}
        self.asked: dict[str, dict[str, Any]] = {}
        self.used: set[str] = set()  # input keys used by this run of the handler
        self.calls = 0
        self.resumed = False  # a requestState came with the request and passed its check
        self.tasks: Any = None  # the tasks extension's registry, when the server serves it
        self.task: Any = None  # the extension task this handler's work now runs as

    @property
    def client_capabilities(self) -> dict[str, Any]:
        capabilities = self.meta.get(CLIENT_CAPABILITIES_KEY)
        return capabilities if isinstance(capabilities, dict) else {}

    @property
    def log_level(self) -> str | None:
        level = self.meta.get(LOG_LEVEL_KEY)
        return level if isinstance(level, str) else None


_scope: contextvars.ContextVar[RequestScope] = contextvars.ContextVar("mcp_request_scope")


def current_scope() -> RequestScope:
    """The stateless request being served by the calling task."""
    try:
        return _scope.get()
    except LookupError:
        raise CapabilityError("no stateless request is being served here") from None


def single_use_state() -> None:
    """Make the ``requestState`` that the stateless request being served gets single-use:
    a retry carrying it is served once, a replay is refused (-32602). Call it in a handler
    before asking for input; ``single_use_state=True`` on the server does it for every
    request. No effect in handshake-era sessions, which keep no such state."""
    scope = _scope.get(None)
    if scope is not None:
        scope.single_use = True


def resumed_from_state() -> bool:
    """Whether the stateless request being served carried a ``requestState`` that passed
    its integrity check (False in handshake-era sessions, which keep no such state)."""
    scope = _scope.get(None)
    return scope is not None and scope.resumed


_input_key: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mcp_input_key", default=None
)


async def input_key(key: str, call: Awaitable[T]) -> T:
    """Await ``call`` (a ``ctx.peer.elicit`` / ``create_message`` / ``list_roots``) with
    ``key`` naming its entry in ``inputRequests`` / ``inputResponses`` (2026-07-28), instead
    of the default ``<kind>-<n>``. No effect in handshake-era sessions. Keys are unique
    within a request; ask several at once with ``asyncio.gather(input_key(...), ...)``.
    """
    token = _input_key.set(key)
    try:
        return await call
    finally:
        _input_key.reset(token)
