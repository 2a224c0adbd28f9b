"""Base classes of the generated stubs: typed outbound proxies and handler bases."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from typing import TypeAlias

from pydantic import BaseModel
from typing_extensions import Self

from . import telemetry
from .deadlines import RequestOptions
from .spec import NotificationSpec, RequestSpec

ResultT = TypeVar("ResultT")
PeerT = TypeVar("PeerT")
ClientT = TypeVar("ClientT", bound="Outbound")

#: ``on_progress=`` of a generated send method: called with each progress notification of
#: the call, as ``(progress, total, message)`` (``total`` and ``message`` None when the peer
#: sends none); a coroutine function is awaited.
ProgressCallback: TypeAlias = Callable[[float, float | None, str | None], Awaitable[None] | None]


class MethodNotFound(Exception):
    """Raised by a handler the user did not implement; the runtime answers -32601."""

    code = -32601

    def __init__(self, method: str) -> None:
        super().__init__(f"Method not found: {method}")
        self.method = method


class ToolError(Exception):
    """Raise from a ``tools/call`` handler for a failure the model should read: the call is
    answered with ``isError: true`` and this message as its text, in every revision. From
    an ``McpApp`` resource or prompt, the request fails (-32603) with this message.

    Any other exception from a handler is a bug: it is logged with its traceback and the
    peer gets -32603 ("Internal error"), with nothing of the exception in it.
    """


class Sender(Protocol):
    """What a connection offers the generated proxies: send a request or a notification."""

    async def send_request(
        self, spec: RequestSpec[ResultT], params: Mapping[str, Any] | None
    ) -> ResultT: ...

    async def send_notification(
        self, spec: NotificationSpec, params: Mapping[str, Any] | None
    ) -> None: ...


def wire_params(
    required: Mapping[str, Any], optional: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Wire-named params from keyword arguments: optional ones left as None are omitted."""
    params = dict(required)
    for key, value in optional.items():
        if value is not None:
            params[key] = value
    return params or None


def model_params(params: BaseModel | None) -> dict[str, Any] | None:
    """Wire params from a params model (used where params are a union of models)."""
    if params is None:
        return None
    return params.model_dump(mode="json", by_alias=True, exclude_unset=True)


class Outbound:
    """Base of the generated typed proxies (``Client``, ``ClientPeer``)."""

    __slots__ = ("_sender",)

    def __init__(self, sender: Sender) -> None:
        self._sender = sender

    @property
    def session(self) -> Any:
        """The session behind this proxy (negotiated revision, peer capabilities, ...)."""
        sender = self._sender
        return sender.sender if isinstance(sender, _WithOptions) else sender

    def with_options(
        self,
        *,
        timeout: float | None = None,
        on_progress: Callable[[Any], Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Self:
        """This proxy with per-call options on every request sent through it (see
        :class:`~typedmcp.protocol.deadlines.RequestOptions`): ``await client.with_options(
        timeout=10, reset_timeout_on_progress=True, max_total_timeout=300).call_tool(...)``
        waits 10 s, 10 s more after each progress notification, 300 s in all."""
        options = RequestOptions(timeout, on_progress, reset_timeout_on_progress, max_total_timeout)
        return type(self)(_WithOptions(self.session, options))

    async def send_request(
        self, spec: RequestSpec[ResultT], params: Mapping[str, Any] | None
    ) -> ResultT:
        """Send any request by its spec; the typed methods all end here."""
        return await self._sender.send_request(spec, params)

    async def send_with_progress(
        self, spec: RequestSpec[ResultT], params: Mapping[str, Any] | None, on_progress: ProgressCallback
    ) -> ResultT:
        """Send a request asking for progress (``call_tool(..., on_progress=...)``): each of
        its progress notifications goes to ``on_progress(progress, total, message)``, besides
        what ``with_options`` set on this proxy (its time limits, its own ``on_progress``)."""
        sender = self._sender
        options = sender.options if isinstance(sender, _WithOptions) else RequestOptions()
        earlier = options.on_progress

        def report(note: Any) -> Any:
            outcome = on_progress(note.progress, note.total, getattr(note, "message", None))
            if earlier is None:
                return outcome
            return _both(outcome, earlier(note))

        options = dataclasses.replace(options, on_progress=report)
        return await _WithOptions(self.session, options).send_request(spec, params)

    async def send_notification(
        self, spec: NotificationSpec, params: Mapping[str, Any] | None
    ) -> None:
        """Send any notification by its spec."""
        await self._sender.send_notification(spec, params)


async def _both(first: Any, second: Any) -> None:
    """Await whichever of two callbacks' outcomes is awaitable."""
    for outcome in (first, second):
        if isinstance(outcome, Awaitable):
            await outcome


class _WithOptions:
    """A sender that sends each request with ``options`` (what ``with_options`` wraps)."""

    __slots__ = ("options", "sender")

    def __init__(self, sender: Any, options: RequestOptions) -> None:
        self.sender, self.options = sender, options

    async def send_request(self, spec: RequestSpec[ResultT], params: Mapping[str, Any] | None) -> ResultT:
        result: ResultT = await self.sender.send_request(
            spec, params, self.options.timeout, options=self.options
        )
        return result

    async def send_notification(self, spec: NotificationSpec, params: Mapping[str, Any] | None) -> None:
        await self.sender.send_notification(spec, params)


class ContextHooks(Protocol):
    """What a running session offers a handler's context (``report_progress``, ``log``)."""

    async def report_progress(
        self, context: RequestContext[Any], progress: float, total: float | None, message: str | None
    ) -> None: ...

    async def log(
        self, context: RequestContext[Any], level: str, data: Any, logger: str | None
    ) -> None: ...


class RequestContext(Generic[PeerT]):
    """What a handler gets besides its params: the peer to call back, the request id and meta.

    ``request_id`` is None for notifications. ``report_progress`` and ``log`` send
    ``notifications/progress`` and ``notifications/message`` for this request, when the
    peer asked for them (a progress token; a log level at or below ``level``).
    ``make_peer`` builds the peer on first use instead (most handlers never call back).
    """

    __slots__ = ("_done", "_make_peer", "_peer", "_progress_state", "hooks", "meta", "request_id")

    def __init__(
        self,
        peer: PeerT | None = None,
        request_id: str | int | None = None,
        meta: Mapping[str, Any] | None = None,
        hooks: ContextHooks | None = None,
        progress_state: dict[str, Any] | None = None,
        *,
        make_peer: Callable[[], PeerT] | None = None,
    ) -> None:
        self._peer = peer
        self._make_peer = make_peer
        self.request_id = request_id
        self.meta: Mapping[str, Any] = {} if meta is None else meta
        self.hooks = hooks
        self._progress_state = progress_state
        self._done = False

    @property
    def peer(self) -> PeerT:
        """The typed proxy of the other side (``ClientPeer`` in a server handler)."""
        if self._peer is None and self._make_peer is not None:
            self._peer, self._make_peer = self._make_peer(), None
        return self._peer  # type: ignore[return-value]

    @property
    def progress_state(self) -> dict[str, Any]:
        """The runtime's record of this request's progress (the last value reported)."""
        if self._progress_state is None:
            self._progress_state = {}
        return self._progress_state

    @property
    def finished(self) -> bool:
        """Whether the handler has returned (no progress may follow)."""
        return self._done

    def finish(self) -> None:
        """Mark the handler as returned; later progress reports are dropped."""
        self._done = True

    def __repr__(self) -> str:
        return (
            f"RequestContext(peer={self._peer!r}, request_id={self.request_id!r}, "
            f"meta={self.meta!r})"
        )

    def progress_note(
        self, progress: float, total: float | None, message: str | None
    ) -> dict[str, Any] | None:
        """The params of the ``notifications/progress`` to send for this report, or None
        when none may go out (no token, the handler has returned, or not increasing)."""
        token = self.progress_token
        if token is None or self._done:
            return None
        last = self.progress_state.get("last")
        if last is not None and progress <= last:
            return None
        self.progress_state["last"] = progress
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        return params

    @property
    def progress_token(self) -> str | int | None:
        token = self.meta.get("progressToken") if self.meta else None
        valid = isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool))
        return token if valid else None

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress; ignored without a progress token, or if not increasing."""
        if self.hooks is not None:
            await self.hooks.report_progress(self, progress, total, message)

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send a log message to the peer if its log level lets it through; with tracing
        configured it is also a Python log record, in the request's span (what the
        deprecated Logging maps onto: :func:`.telemetry.log_record`)."""
        telemetry.log_record(level, data, logger)
        if self.hooks is not None:
            await self.hooks.log(self, level, data, logger)


class Handlers:
    """Base of the generated handler classes: knows which handlers a subclass implements."""

    @classmethod
    def implemented(cls, base: type[Handlers], names: tuple[str, ...]) -> frozenset[str]:
        """The names among ``names`` whose method ``cls`` overrides relative to ``base``."""
        return frozenset(
            name for name in names if getattr(cls, name, None) is not getattr(base, name, None)
        )


class ServerHandlersBase(Handlers):
    """Base of a generated ``ServerHandlers``.

    A subclass may not override a hook the runtime answers itself (``initialize``, ``ping``,
    ``set_level``, ``server/discover``, ``subscriptions/listen``): it would never be called,
    so defining the class raises :class:`TypeError` naming what to use instead. Nor may it
    define a public method named like a handler it is not (``list_tool``): the class is
    refused naming the handler meant (the rule: ``typedmcp.protocol.hooks``).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if ServerHandlersBase not in cls.__bases__:  # a user's class, not the generated one
            from .hooks import refuse_misspelt_handlers, refuse_runtime_hooks

            refuse_runtime_hooks(cls, ServerHandlersBase, "server")
            refuse_misspelt_handlers(cls, ServerHandlersBase, "server")


class ClientHandlersBase(Handlers, Generic[ClientT]):
    """Base of a generated ``ClientHandlers``, linked to its package's ``Client`` type:
    ``connect_stdio(..., handlers=MyHandlers())`` yields that ``Client``.

    A subclass may not override a hook the runtime answers itself (``ping``), nor define a
    public method named like a handler it is not (``create_mesage``): defining the class
    raises :class:`TypeError`.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if ClientHandlersBase not in cls.__bases__:
            from .hooks import refuse_misspelt_handlers, refuse_runtime_hooks

            refuse_runtime_hooks(cls, ClientHandlersBase, "client")
            refuse_misspelt_handlers(cls, ClientHandlersBase, "client")
