"""The server middleware chain around a 2026-07-28 request (see
:mod:`typedmcp.protocol.middleware`): the stateless server's :meth:`serve_request` runs
:func:`serve_through_chain` for every request (it serves directly without a chain)."""

from __future__ import annotations

from typing import Any

from ..engine.jsonrpc import RequestId
from ..protocol.meta import PROTOCOL_VERSION_KEY
from ..protocol.middleware import MiddlewareContext, stateless_context
from .scope import Emit


async def serve_through_chain(
    server: Any, method: str, params: Any, request_id: RequestId, emit: Emit,
    principal: Any, checked: bool, json_ready: bool,
) -> Any:
    """Serve one request through ``server.middleware``; the handler gets the params the
    chain leaves in ``ctx.params`` (checked again unless they are the ones the transport
    checked). A result a middleware makes itself (a short-circuit) is completed as a
    handler's would be (``resultType``, caching hints, ``serverInfo``). Without a chain,
    the request is served directly."""
    if server.middleware is None:
        return await server._serve_request(method, params, request_id, emit, principal, checked, json_ready)
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(PROTOCOL_VERSION_KEY) if isinstance(meta, dict) else None
    ctx = stateless_context(server, method, params, request_id, version, principal)
    served: list[Any] = []

    async def endpoint(current: MiddlewareContext) -> Any:
        again = not checked or current.params is not params
        result = await server._serve_request(
            current.method, current.params, request_id, emit, principal, not again, json_ready
        )
        served.append(result)
        return result

    result = await server.through_chain(server.middleware, ctx, endpoint)
    if served and result is served[-1]:
        return result
    return server.finish(method, result, json_ready=json_ready)
