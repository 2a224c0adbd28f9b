"""Host interceptors: the server middleware's shape on the host's outgoing calls.

An interceptor is ``async def icp(call, call_next) -> result``: it sees a
:class:`CallContext` (the server, the method, the params about to be sent), may rewrite
``call.params`` (a tool's arguments), add HTTP headers for this call only
(``call.headers``, sent with the call's POST to a Streamable HTTP server; ignored over
stdio; an HTTP+SSE server gets them too, but serves the message with its GET's headers), audit, time, answer itself without calling ``call_next``, or refuse by raising.
Configured with ``Host(..., interceptors=[...])``; the first is the outermost.

They run after the host's own checks (the tool exists, its arguments fit its inputSchema):
arguments an interceptor rewrites go to the server as they are, and the server checks them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..transports.http_headers import CALL_HEADERS

#: What an interceptor calls to run the rest of the chain (and, at its end, the request).
CallNext = Callable[["CallContext"], Awaitable[Any]]


class Interceptor(Protocol):
    """``async def __call__(call, call_next)``: one link of the host's chain."""

    def __call__(self, call: CallContext, call_next: CallNext, /) -> Awaitable[Any]: ...


@dataclass(slots=True)
class CallContext:
    """One call the host is about to send. ``server`` is the configured server's name,
    ``transport`` its config's (``stdio``, ``http``, ``sse``), ``target`` what the call
    names as the host exports it (a tool's exported name, a URI); ``params`` the request's
    params, the server's own tool name in ``params["name"]``."""

    server: str
    transport: str
    method: str
    target: str
    params: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def arguments(self) -> dict[str, Any] | None:
        """The call's arguments (``tools/call``, ``prompts/get``), None without."""
        found = self.params.get("arguments")
        return found if isinstance(found, dict) else None


def interceptor_list(interceptors: Iterable[Interceptor]) -> tuple[Interceptor, ...]:
    """The interceptors as given, each checked to be callable (TypeError naming it)."""
    checked = tuple(interceptors)
    for interceptor in checked:
        if not callable(interceptor):
            raise TypeError(
                "an interceptor must be callable as `async def icp(call, call_next)`, got "
                f"{type(interceptor).__name__} {interceptor!r}"
            )
    return checked


async def intercepted(
    interceptors: tuple[Interceptor, ...], call: CallContext,
    send: Callable[[dict[str, Any]], Awaitable[Any]],
) -> Any:
    """Run ``call`` through ``interceptors``, then ``send(params)`` with the headers the
    chain added in effect for that send."""

    async def endpoint(final: CallContext) -> Any:
        if not final.headers:
            return await send(final.params)
        token = CALL_HEADERS.set(dict(final.headers))
        try:
            return await send(final.params)
        finally:
            CALL_HEADERS.reset(token)

    async def step(index: int, current: CallContext) -> Any:
        if index == len(interceptors):
            return await endpoint(current)
        return await interceptors[index](current, lambda following: step(index + 1, following))

    return await step(0, call)
