"""The server launchers (the face): serve a handler object over stdio
(:func:`run_stdio`, :func:`serve_stdio`), any transport (:func:`serve`), or Streamable
HTTP as an ASGI app (:func:`http_app`), both eras from one object.

The HTTP modules are imported by :func:`http_app` only, so a stdio server starts without
them.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import TYPE_CHECKING, Any

from .engine import loops
from .engine.jsonrpc import DEFAULT_MAX_BATCH, DEFAULT_MAX_IN_FLIGHT, LIMIT_OPTIONS, Engine
from .protocol.access import access_policy_of
from .protocol.options import check_options, keyword_parameters
from .protocol.packages import package_of
from .protocol.server import ServerSession
from .transports.stdio import DEFAULT_MAX_MESSAGE_BYTES, server_transport

if TYPE_CHECKING:
    from .transports.http_server import HttpApp

logger = logging.getLogger("typedmcp")
#: Setting it switches :func:`http_app` to state shared by workers, in Redis.
REDIS_URL_ENV = "MCP_REDIS_URL"
#: The options of :func:`http_app` about shared state (see ``typedmcp.state``).
SHARED_OPTIONS = frozenset({"state", "redis_url", "redis_prefix", "session_affinity"})
#: What :func:`http_app` sets on :class:`HttpApp` itself (not options of its caller).
HTTP_APP_INTERNALS = frozenset({"make_session", "modern", "legacy_versions", "shared"})
#: The request limits of a connection, options of every launcher (``http_app``: HttpApp's own).
ENGINE_OPTIONS = LIMIT_OPTIONS


@functools.cache
def server_options() -> frozenset[str]:
    """The options of a server (any transport): the handshake session's, the stateless
    server's (``MODERN_OPTIONS``) and the eras' (``packages``, ``changes``, ``both_eras``)."""
    from .stateless.router import BOTH_ERAS_OPTION, MODERN_OPTIONS

    return frozenset(
        {
            *keyword_parameters(ServerSession.__init__, leave_out={"handlers"}),
            *MODERN_OPTIONS,
            BOTH_ERAS_OPTION,
        }
    )


@functools.cache
def http_options() -> frozenset[str]:
    """The options of :func:`http_app`: a server's, the shared state's and HttpApp's."""
    from .transports.http_server import HttpApp

    own = keyword_parameters(HttpApp.__init__, leave_out=HTTP_APP_INTERNALS)
    return frozenset({*server_options(), *SHARED_OPTIONS, *own})


async def serve(
    handlers: object,
    transport: Any,
    *,
    max_batch: int = DEFAULT_MAX_BATCH,
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    **options: Any,
) -> None:
    """Serve one connection until the transport ends: handshake-era sessions (started by
    ``initialize``) and stateless 2026-07-28 requests, as the generated packages allow.

    ``max_batch``: the most messages of a 2025-03-26 batch (a longer one is refused as a
    whole, -32600). ``max_in_flight``: the most of the peer's requests running at once;
    at the limit the connection reads no more requests until one ends (backpressure: a
    response or a cancel is still read), and a request it cannot wait for (a handler
    waits for the peer's answer meanwhile) is refused with -32029.

    A vendored package speaks only its own revision: ``both_eras=True`` adds the runtime's
    bundled packages for the other era (a vendored 2025-06-18 package then serves
    2026-07-28 too); ``packages=[...]`` lists exactly what to serve."""
    from .stateless.router import build_router

    check_options("serve", options, server_options())
    router = build_router(handlers, **options)
    engine = Engine(
        transport,
        router,
        accept_batches=router.accepts_batches,
        max_batch=max_batch,
        max_in_flight=max_in_flight,
    )
    router.attach(engine)
    try:
        await engine.run()
    finally:
        router.close()


async def serve_stdio(
    handlers: object, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, **options: Any
) -> None:
    """Serve over this process's stdin/stdout until stdin ends."""
    check_options("serve_stdio", options, {*server_options(), *ENGINE_OPTIONS})
    transport = await server_transport(max_message_bytes)
    await serve(handlers, transport, **options)


def run_stdio(handlers: object, **options: Any) -> None:
    """Blocking entry point: ``run_stdio(Weather())`` in a server script. Options: the
    server's, ``max_message_bytes`` (one line's limit) and the request limits
    ``max_batch`` and ``max_in_flight`` (see :func:`serve`).

    It runs on uvloop when uvloop is installed (``typedmcp[http]`` brings it);
    ``TYPEDMCP_LOOP=asyncio`` keeps asyncio's own loop (see :mod:`typedmcp.engine.loops`).

    An unknown option (``server_inf=``) raises :class:`~typedmcp.protocol.options.UnknownOptionError`
    here, naming the closest valid one."""
    check_options("run_stdio", options, {*server_options(), *ENGINE_OPTIONS, "max_message_bytes"})
    logging.basicConfig(level=logging.WARNING)
    loops.run(serve_stdio(handlers, **options))


def http_app(handlers: object, *, path: str = "/mcp", **options: Any) -> HttpApp:
    """An ASGI app serving ``handlers`` over Streamable HTTP (one server session per client).

    Server options (``server_info``, ``instructions``, ``list_changed``, ``packages``,
    ``both_eras``) go to each session; HTTP options are those of :class:`HttpApp`. ``legacy_sse=True`` also
    serves 2024-11-05 clients over the deprecated HTTP+SSE transport (GET ``/sse``, POST
    ``/messages/``; pass :class:`~typedmcp.transports.http_sse_server.SsePaths` for other paths).

    Several workers share their state in Redis when ``MCP_REDIS_URL`` is set (or
    ``redis_url=...``, or ``state=RedisState(...)``; ``redis_prefix`` namespaces the keys):
    changes, tasks, resumable streams, single-use states, the key ring of ``requestState``,
    and handshake-era sessions, which any worker then serves (``session_affinity=True``
    keeps each session in the worker that created it: faster, but the load balancer must
    route by ``Mcp-Session-Id``). See ``typedmcp.state``.

    Without an ``auth=`` argument, bearer tokens are checked when ``MCP_AUTH_ISSUER`` is set (with
    ``MCP_AUTH_AUDIENCE`` and ``MCP_AUTH_JWKS_URL``, or ``MCP_AUTH_INTROSPECTION_URL`` and
    client credentials): ``BearerAuth.from_env()``, see ``typedmcp.auth.env``.

    Mounted in a larger ASGI app (``api.mount("/tools", app)``, Starlette or FastAPI), it
    serves ``/tools/mcp``; the outer app runs its lifespan (``FastAPI(lifespan=app.lifespan)``)
    and, with ``auth``, routes its metadata document
    (``api.add_route(*app.protected_resource_route("/tools"))``).

    An unknown option raises :class:`~typedmcp.protocol.options.UnknownOptionError` at
    this call, naming the closest valid one.
    """
    from .stateless.router import (
        Eras,
        refuse_stateless,
        with_handler_defaults,
    )
    from .transports.http_server import HttpApp
    from .transports.http_stateless import ModernEndpoint

    check_options("http_app", options, http_options())
    if "auth" not in options:  # MCP_AUTH_ISSUER and friends (typedmcp.auth.env)
        from .auth.bearer import auth_from_environment

        options["auth"] = auth_from_environment()
    warn_unenforced_scopes(handlers, options.get("auth"))
    options = with_handler_defaults(handlers, options)
    state = sessions = None
    if SHARED_OPTIONS & options.keys() or os.environ.get(REDIS_URL_ENV):
        from .state import shared_options

        options, state, sessions = shared_options(options)

    server_keys = server_options()  # (the sessions' options, derived: extensions= too)
    eras = Eras.of(handlers, **{k: v for k, v in options.items() if k in server_keys})
    app_options = {k: v for k, v in options.items() if k not in server_keys}
    modern = eras.stateless_server(handlers)

    def make_session() -> ServerSession:
        session = eras.handshake_session(handlers)
        assert session is not None
        return session

    endpoint = ModernEndpoint(modern) if modern is not None else None
    if endpoint is not None and state is not None:
        from .state import share_cancels

        share_cancels(state, endpoint)
    refusal = None
    if modern is None:  # a 2026-07-28 request is told why not, and how to serve it
        supported = [p.version for p in eras.handshake]
        refusal = functools.partial(refuse_stateless, package_of(handlers).__name__, supported)
    return HttpApp(
        make_session if eras.handshake else None,
        refuse_stateless=refusal,
        path=path,
        modern=endpoint,
        legacy_versions=[p.version for p in eras.handshake],
        shared=sessions,
        state=state,
        **app_options,
    )


def warn_unenforced_scopes(handlers: object, auth: object) -> None:
    """Warn when the handlers declare scopes (an access policy) but the HTTP app has no
    ``auth``: without a verified token there is no principal, so nothing is enforced."""
    policy = access_policy_of(handlers)
    if policy and auth is None:
        guarded = sorted(
            [f"tool {name!r}" for name in policy.tools]
            + [f"resource {uri!r}" for uri in policy.resources]
            + [f"prompt {name!r}" for name in policy.prompts]
        )
        logger.warning(
            "%s declare scopes (%s) but http_app has no auth=: they are not enforced and "
            "every caller may use everything; pass auth=BearerAuth(verify, resource_metadata)",
            type(handlers).__name__, ", ".join(guarded),
        )
