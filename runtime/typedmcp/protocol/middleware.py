"""Server middleware: one ordered chain around every request and notification a server
receives, in both eras and on every transport.

A middleware is ``async def mw(ctx, call_next) -> result`` (or an object with that
``__call__``): it sees a :class:`MiddlewareContext`, may change ``ctx.params`` before
``await call_next(ctx)``, time it, look at or replace the result, or answer itself without
calling ``call_next`` (a short-circuit). Raising :class:`~typedmcp.engine.jsonrpc.RpcError`
refuses the request with that JSON-RPC error; raising
:class:`~typedmcp.protocol.stubs.ToolError` in a ``tools/call`` answers it with an
``isError`` result. The first middleware given is the outermost.

The sessions call :meth:`MiddlewareChain.run` only when a chain is configured: without
middleware a request costs one attribute test more (see ``benchmarks/bench_middleware.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..engine.jsonrpc import RequestId
from .origin import request_origin

#: ``tools/call``: the method whose ``params.name`` is :attr:`MiddlewareContext.tool_name`.
CALL_TOOL = "tools/call"

#: What a middleware calls to run the rest of the chain (and, at its end, the handler).
CallNext = Callable[["MiddlewareContext"], Awaitable[Any]]


class Middleware(Protocol):
    """``async def __call__(ctx, call_next)``: one link of the chain."""

    def __call__(self, ctx: MiddlewareContext, call_next: CallNext, /) -> Awaitable[Any]: ...


@dataclass(slots=True)
class MiddlewareContext:
    """One incoming request or notification, as the middleware chain sees it.

    ``params`` is the raw JSON object (a dict, or None); a middleware may replace it or
    change it in place before ``call_next``, and the handler is served what it holds then.
    ``principal`` is what the bearer token check returned (None over stdio or without
    ``auth``); ``session_id`` the Streamable HTTP session (or the HTTP+SSE stream), None
    over stdio and in the stateless 2026-07-28 era; ``transport`` is ``"stdio"``,
    ``"streamable-http"``, ``"sse"`` or ``"memory"`` (in-process). ``state`` is for the
    middlewares to share values (the timing middleware puts ``duration`` there).
    """

    method: str
    params: Any
    request_id: RequestId | None
    kind: Literal["request", "notification"]
    era: str
    protocol_version: str | None
    transport: str
    session_id: str | None
    principal: Any
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def tool_name(self) -> str | None:
        """The tool a ``tools/call`` names (None for any other method)."""
        if self.method != CALL_TOOL or not isinstance(self.params, dict):
            return None
        name = self.params.get("name")
        return name if isinstance(name, str) else None

    @property
    def arguments(self) -> dict[str, Any] | None:
        """The arguments of a ``tools/call`` or ``prompts/get`` (None when there are none)."""
        found = self.params.get("arguments") if isinstance(self.params, dict) else None
        return found if isinstance(found, dict) else None

    @property
    def headers(self) -> dict[str, str]:
        """The HTTP request's headers (lower-case names, no ``Authorization``); empty over
        stdio and in process."""
        origin = request_origin()
        return origin.headers if origin is not None else {}

    @property
    def subject(self) -> str | None:
        """The principal's ``subject`` (None without one, or for a principal without it)."""
        subject = getattr(self.principal, "subject", None)
        return subject if isinstance(subject, str) else None


class MiddlewareChain:
    """The ordered middlewares of a server (first = outermost); shared by its sessions,
    so one added later (:meth:`add`) applies to the requests that come after."""

    __slots__ = ("middlewares",)

    def __init__(self, middlewares: Iterable[Middleware] = ()) -> None:
        self.middlewares: list[Middleware] = []
        for middleware in middlewares:
            self.add(middleware)

    def add(self, middleware: Middleware) -> None:
        """Append ``middleware`` (innermost so far); TypeError if it is not callable."""
        if not callable(middleware):
            raise TypeError(
                f"a middleware must be callable as `async def mw(ctx, call_next)`, got "
                f"{type(middleware).__name__} {middleware!r}"
            )
        self.middlewares.append(middleware)

    def __len__(self) -> int:
        return len(self.middlewares)

    async def run(self, ctx: MiddlewareContext, endpoint: CallNext) -> Any:
        """Run ``ctx`` through every middleware, then ``endpoint`` (the handler)."""
        return await self._step(tuple(self.middlewares), 0, ctx, endpoint)

    async def _step(
        self, links: tuple[Middleware, ...], index: int, ctx: MiddlewareContext, endpoint: CallNext
    ) -> Any:
        if index == len(links):
            return await endpoint(ctx)
        return await links[index](ctx, lambda next_ctx: self._step(links, index + 1, next_ctx, endpoint))


def middleware_chain(middleware: Iterable[Middleware] | MiddlewareChain | None) -> MiddlewareChain | None:
    """The chain a server option names: a chain as is, a list made into one; None for none
    (an empty list included), so the sessions skip it entirely."""
    if middleware is None:
        return None
    if isinstance(middleware, MiddlewareChain):
        return middleware
    if callable(middleware) and not isinstance(middleware, list | tuple):
        raise TypeError(
            "middleware= takes a list of middlewares (middleware=[access_log()]), not one"
        )
    chain = MiddlewareChain(middleware)
    return chain if chain.middlewares else None


def connection_of(session: Any) -> tuple[str, str | None]:
    """(transport name, session id) of a server session: from the session's own
    ``transport_name`` (the stateless HTTP endpoint sets it), else from its engine's
    transport (``transport_name`` and ``session_id`` class facts); ``"memory"`` without."""
    transport = getattr(session.engine, "transport", None)
    name = getattr(session, "transport_name", None) or getattr(transport, "transport_name", None)
    session_id = getattr(transport, "session_id", None)
    return name or "memory", session_id if isinstance(session_id, str) else None


def principal_now(given: Any = None) -> Any:
    """The principal of the request being served: ``given`` if the caller knows it, else
    the one :func:`~typedmcp.protocol.origin.request_origin` carries (None over stdio)."""
    if given is not None:
        return given
    origin = request_origin()
    return origin.principal if origin is not None else None


def session_context(
    session: Any, method: str, params: Any, request_id: RequestId | None
) -> MiddlewareContext:
    """The context of a request (or, with ``request_id`` None, a notification) that a
    handshake-era session received."""
    transport, session_id = connection_of(session)
    package = session.package
    return MiddlewareContext(
        method=method,
        params=params,
        request_id=request_id,
        kind="notification" if request_id is None else "request",
        era="handshake",
        protocol_version=package.version if package is not None else None,
        transport=transport,
        session_id=session_id,
        principal=principal_now(),
    )


def stateless_context(
    session: Any, method: str, params: Any, request_id: RequestId | None, version: Any,
    principal: Any = None,
) -> MiddlewareContext:
    """The context of a 2026-07-28 request (``version``: what its ``_meta`` names)."""
    transport, _ = connection_of(session)
    return MiddlewareContext(
        method=method,
        params=params,
        request_id=request_id,
        kind="notification" if request_id is None else "request",
        era="stateless",
        protocol_version=version if isinstance(version, str) else None,
        transport=transport,
        session_id=None,
        principal=principal_now(principal),
    )
