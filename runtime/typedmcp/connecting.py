"""The client launchers (the face): connect a typed ``Client`` over stdio, Streamable HTTP,
HTTP+SSE or in process.

:func:`connect` runs the JSON-RPC engine over any transport and negotiates;
:func:`connect_stdio`, :func:`connect_http`, :func:`connect_sse`, :func:`connect_memory`
and :func:`connect_direct` build the transport first. ``connect_http`` falls back to
HTTP+SSE (rule HC-10) when :func:`falls_back_to_sse` says so."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from pydantic_core import from_json
from typing_extensions import TypedDict, Unpack

from .engine.jsonrpc import LIMIT_OPTIONS, ConnectionClosed, Engine
from .protocol.client import ClientSession
from .protocol.errors import AuthRequired, HttpError, wrong_path_hint
from .protocol.meta import MODERN_ERRORS
from .protocol.negotiation import AUTO, ERA_MEMORY, HANDSHAKE, ProtocolChoice, choose_packages
from .protocol.packages import VersionError
from .protocol.stubs import ClientHandlersBase, Outbound
from .transports.http_client import HttpAuth, HttpClientTransport
from .transports.http_session import HttpClientSession
from .transports.memory import DirectLink, DirectTransport
from .transports.http_wire import MAX_FETCH_BYTES, MAX_REPLY_BYTES, ClientCert, HttpOptions, HttpTimeouts, Verify
from .transports.sse_client import SSE, SseClientSession, SseClientTransport
from .transports.stdio import ServerProcessTransport, spawn

if TYPE_CHECKING:
    # what a client is typed with when neither client= nor handlers= says (the newest
    # revision: choose_packages picks it at run time, and a test checks they agree)
    from mcp_generated.v2026_07_28.client import Client as DefaultClient

logger = logging.getLogger("typedmcp")

C = TypeVar("C", bound=Outbound)
"""The generated ``Client`` a connection yields: the ``client=`` class, or the ``Client`` of
the package the ``handlers=`` come from.

Typing: each ``connect_*`` has four overloads that differ only in ``client``/``handlers``/
``protocol``; every other keyword is one ``TypedDict`` per launcher (``StdioConnectOptions``,
``HttpConnectOptions``, ...), so a new option is added to the implementation and to its
``TypedDict``, nowhere else (a test checks that they agree)."""


class SessionOptions(TypedDict, total=False):
    """The options of every client connection (``connect_stdio``, ``connect_http``, ...):
    the keywords of :class:`~.protocol.client.ClientSession` but ``client`` (a test keeps
    the two lists equal)."""

    client_info: dict[str, Any] | None
    list_changed: Sequence[str]
    request_timeout: float | None
    validate_tool_output: bool
    log_level: str | None
    probe_timeout: float | None
    connect_timeout: float | None
    max_input_rounds: int
    listen_for_changes: bool
    remember_era: bool
    tasks: bool
    extensions: Mapping[str, Mapping[str, Any]] | None


class StdioConnectOptions(SessionOptions, total=False):
    """``connect_stdio``'s keyword options besides ``client``, ``handlers``, ``protocol``."""

    env: dict[str, str] | None
    cwd: str | None


class HttpConnectOptions(SessionOptions, total=False):
    """``connect_http``'s keyword options besides ``client``, ``handlers``, ``protocol``."""

    headers: dict[str, str] | None
    bearer_token: str | None
    auth: HttpAuth | None
    legacy_sse_fallback: bool
    verify: Verify
    cert: ClientCert | None
    proxy: str | None
    trust_env: bool
    timeouts: HttpTimeouts | None
    http_session: Any
    max_reply_bytes: int
    max_fetch_bytes: int


class SseConnectOptions(SessionOptions, total=False):
    """``connect_sse``'s keyword options besides ``client``, ``handlers``, ``protocol``."""

    headers: dict[str, str] | None
    bearer_token: str | None
    auth: HttpAuth | None
    endpoint_timeout: float
    verify: Verify
    cert: ClientCert | None
    proxy: str | None
    trust_env: bool
    timeouts: HttpTimeouts | None
    http_session: Any
    max_reply_bytes: int
    max_fetch_bytes: int


class InProcessConnectOptions(SessionOptions, total=False):
    """``connect_memory``'s and ``connect_direct``'s keyword options besides ``client``,
    ``client_handlers``, ``protocol``."""

    server_options: dict[str, Any] | None


@contextlib.asynccontextmanager
async def connect(
    transport: Any, session: ClientSession
) -> AsyncIterator[Any]:
    """Run the engine over ``transport``, negotiate, yield the typed ``Client``."""
    engine = Engine(
        transport,
        session,
        accept_batches=lambda: session.package is not None and session.package.accepts_batches,
    )
    session.engine = engine
    if session.on_engine is not None:
        session.on_engine(engine)
    if hasattr(transport, "deliver"):  # HTTP: responses arrive on the POSTs
        transport.deliver = engine._receive
        transport.deliver_message = engine.receive_message
    reader = asyncio.create_task(engine.run())
    opening = asyncio.create_task(session.open())
    try:
        done, _ = await asyncio.wait({opening, reader}, return_when=asyncio.FIRST_COMPLETED)
        if opening not in done:
            opening.cancel()
            raise ConnectionError(
                "the server closed the connection during negotiation "
                "(check that the command/URL starts an MCP server, and its stderr or logs)"
            )
        opening.result()
        yield session.client
    finally:
        opening.cancel()  # given up during negotiation (cancelled, timed out): end it too
        with contextlib.suppress(Exception):
            await session.close()
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await opening


# -- stdio -----------------------------------------------------------------------------------


@overload
def connect_stdio(
    command: Sequence[str], *, client: type[C], handlers: ClientHandlersBase[C] | None = None,
    protocol: ProtocolChoice = ..., **options: Unpack[StdioConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_stdio(
    command: Sequence[str], *, handlers: ClientHandlersBase[C], protocol: ProtocolChoice = ...,
    **options: Unpack[StdioConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_stdio(
    command: Sequence[str], *, protocol: Literal["auto"] = ..., **options: Unpack[StdioConnectOptions]
) -> AbstractAsyncContextManager[DefaultClient]: ...
@overload
def connect_stdio(
    command: Sequence[str], *, protocol: ModuleType | Sequence[ModuleType] | str,
    **options: Unpack[StdioConnectOptions],
) -> AbstractAsyncContextManager[Outbound]: ...
@contextlib.asynccontextmanager
async def connect_stdio(
    command: Sequence[str],
    *,
    client: type[Outbound] | None = None,
    protocol: ProtocolChoice = AUTO,
    handlers: object | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    **options: Any,
) -> AsyncIterator[Any]:
    """Start ``command`` as a stdio server and yield a connected, typed ``Client``.

    ``client``: your generated package's ``Client`` class (``client=acme_mcp.client.Client``):
    the connection yields one, typed with that package's models, and ``"auto"`` offers the
    revisions generated beside it. ``handlers``: a subclass of that package's
    ``ClientHandlers`` answering the server (it implies ``client``). Neither: the newest
    ``mcp_generated`` revision's ``Client``. ``protocol``: ``"auto"``, one revision
    (``"2025-11-25"``, generated beside the client's package), or a generated package or
    several to negotiate among (without ``client``, typed as the base ``Outbound``). The
    server process is always cleaned up: stdin closed, then terminated, then killed.
    """
    session = ClientSession(protocol, handlers, client=client, **options)
    session.origin = "stdio:" + shlex.join(command)
    async with spawn(command, env=env, cwd=cwd) as transport, connect_process(transport, session) as connected:
        yield connected


@contextlib.asynccontextmanager
async def connect_process(transport: ServerProcessTransport, session: ClientSession) -> AsyncIterator[Any]:
    """:func:`connect` over a spawned server's transport (:func:`~.transports.stdio.spawn`).
    A server that goes away before the connection is set up, however the loss shows (a
    failed write, the end of its stdout first, a request left waiting), is a
    :class:`ConnectionClosed` naming the command, how the process ended (exit code or
    signal) and the last lines of its stderr."""
    session.pipe = True  # (no second negotiation behind an unanswered probe)
    async with contextlib.AsyncExitStack() as stack:
        try:
            connected = await stack.enter_async_context(connect(transport, session))
        except (ConnectionClosed, ConnectionError):
            story = await transport.settle(" before the connection was set up")
            raise ConnectionClosed(story) from None
        yield connected


# -- Streamable HTTP, and HTTP+SSE (deprecated; connect_http falls back to it) ---------------


@overload
def connect_http(
    url: str, *, client: type[C], handlers: ClientHandlersBase[C] | None = None,
    protocol: ProtocolChoice = ..., **options: Unpack[HttpConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_http(
    url: str, *, handlers: ClientHandlersBase[C], protocol: ProtocolChoice = ...,
    **options: Unpack[HttpConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_http(
    url: str, *, protocol: Literal["auto"] = ..., **options: Unpack[HttpConnectOptions]
) -> AbstractAsyncContextManager[DefaultClient]: ...
@overload
def connect_http(
    url: str, *, protocol: ModuleType | Sequence[ModuleType] | str,
    **options: Unpack[HttpConnectOptions],
) -> AbstractAsyncContextManager[Outbound]: ...
@contextlib.asynccontextmanager
async def connect_http(
    url: str,
    *,
    client: type[Outbound] | None = None,
    protocol: ProtocolChoice = AUTO,
    handlers: object | None = None,
    headers: dict[str, str] | None = None,
    bearer_token: str | None = None,
    auth: HttpAuth | None = None,
    legacy_sse_fallback: bool = True,
    verify: Verify = True,
    cert: ClientCert | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    timeouts: HttpTimeouts | None = None,
    http_session: Any = None,
    max_reply_bytes: int = MAX_REPLY_BYTES,
    max_fetch_bytes: int = MAX_FETCH_BYTES,
    **options: Any,
) -> AsyncIterator[Any]:
    """Connect to a Streamable HTTP server and yield a connected, typed ``Client``.

    Handshake era: the session is ended with DELETE on exit; a 404 for a known session
    re-initializes. Stateless era: POST only, no session. ``auth``: an
    :class:`~typedmcp.auth.oauth.OAuthProvider` (or any ``HttpAuth``) that puts
    credentials on every request and answers 401/403 challenges.

    How the server is reached, ``http://`` or ``https://`` (see
    :class:`~typedmcp.transports.http_wire.HttpOptions`): ``verify`` (True: the system
    trust store; a CA bundle path or an ``ssl.SSLContext``; False: no checks, for local
    testing), ``cert`` (a client certificate: mutual TLS), ``proxy`` (else ``HTTP_PROXY``,
    ``HTTPS_PROXY`` and ``NO_PROXY`` when ``trust_env``), ``timeouts``
    (:class:`~typedmcp.transports.http_wire.HttpTimeouts`: connect, reply, idle stream),
    ``http_session`` (an ``aiohttp.ClientSession`` of your own, used as it is configured
    and never closed here), ``max_reply_bytes`` (the largest JSON reply or SSE event read:
    64 MiB by default) and ``max_fetch_bytes`` (the largest OAuth document or token answer
    the connection's ``auth`` fetches: 1 MiB); a larger reply raises
    :class:`~typedmcp.transports.http_wire.ReplyTooLarge`, naming the cap, without being read.

    ``legacy_sse_fallback``: when the first POST gets 400, 404 or 405 without a stateless-era
    error body, and ``protocol`` offers a handshake-era revision, connect to ``url`` with the
    deprecated HTTP+SSE transport instead (``connect_sse``; ``client.session.transport_kind``
    is then ``"sse"``). False: raise ``SseFallbackDisabled`` there.

    ``client``, ``handlers``, ``protocol``: as for :func:`connect_stdio`.
    """
    limits = timeouts or HttpTimeouts()
    http_options = HttpOptions(verify, cert, proxy, trust_env, limits, http_session, max_reply_bytes, max_fetch_bytes)
    transport = HttpClientTransport(
        url, headers=headers, bearer_token=bearer_token, auth=auth, options=http_options
    )
    session = HttpClientSession(protocol, handlers, client=client, **options)
    session.transport = transport
    session.origin = url
    origin = url if session.remember_era else None

    def over_sse() -> contextlib.AbstractAsyncContextManager[Any]:
        return _connect_sse(url, client=client, protocol=protocol, handlers=handlers,
                            headers=headers, bearer_token=bearer_token, auth=auth,
                            verify=verify, cert=cert, proxy=proxy, trust_env=trust_env,
                            timeouts=limits, http_session=http_session, max_reply_bytes=max_reply_bytes,
                            max_fetch_bytes=max_fetch_bytes, **options)

    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(transport.close)
        connected = None
        if legacy_sse_fallback and ERA_MEMORY.recall(origin) == SSE:
            try:  # it served only HTTP+SSE before: go there first
                connected = await stack.enter_async_context(over_sse())
            except (HttpError, ConnectionError, OSError) as error:
                logger.info("%s: HTTP+SSE failed (%s); negotiating again", url, error)
                ERA_MEMORY.learn(origin, None)
        if connected is None:
            try:
                connected = await stack.enter_async_context(connect(transport, session))
            except HttpError as error:
                if not falls_back_to_sse(error, session, legacy_sse_fallback, url):
                    raise
                logger.info("%s: %s to the first POST; trying HTTP+SSE", url, error.status)
                connected = await stack.enter_async_context(over_sse())
                ERA_MEMORY.learn(origin, SSE)
        yield connected


#: The HTTP statuses of a first POST that suggest an HTTP+SSE server (HC-10).
FALLBACK_STATUSES = frozenset({400, 404, 405})


class SseFallbackDisabled(HttpError):
    """The first POST got 400/404/405 (perhaps an HTTP+SSE server), and the fallback is off."""

    def __init__(self, error: HttpError, url: str) -> None:
        super().__init__(error.status, error.body)
        hint = wrong_path_hint(url, error.status, error.body)
        self.args = (
            f"HTTP {error.status} from {url} to the first POST: "
            + (f"{hint}; or it" if hint else "it")
            + " may be a server of the deprecated HTTP+SSE transport (2024-11-05), and "
            "legacy_sse_fallback is off; pass legacy_sse_fallback=True or use connect_sse",
        )


def is_modern_error(body: bytes) -> bool:
    """Whether an HTTP error body is a JSON-RPC error of the stateless era (a modern server)."""
    try:
        message = from_json(body, allow_inf_nan=False)
    except ValueError:
        return False
    error = message.get("error") if isinstance(message, dict) else None
    return isinstance(error, dict) and error.get("code") in MODERN_ERRORS


def falls_back_to_sse(error: HttpError, session: ClientSession, enabled: bool, url: str) -> bool:
    """HC-10: whether ``connect_http`` should try HTTP+SSE after ``error`` on its first POST.

    Yes for 400, 404 or 405 without a recognised modern error body, while ``session`` has
    not negotiated yet and offers a handshake-era revision. If the fallback would apply but
    ``enabled`` is False, raises :class:`SseFallbackDisabled` (which says so) instead.
    """
    if isinstance(error, AuthRequired) or error.status not in FALLBACK_STATUSES:
        return False
    if session.era is not None:
        return False  # negotiated: a later POST failed, the transport is the right one
    if is_modern_error(error.body) or not any(p.era == HANDSHAKE for p in session.packages):
        return False
    if not enabled:
        raise SseFallbackDisabled(error, url) from error
    return True


@overload
def connect_sse(
    url: str, *, client: type[C], handlers: ClientHandlersBase[C] | None = None,
    protocol: ProtocolChoice = ..., **options: Unpack[SseConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_sse(
    url: str, *, handlers: ClientHandlersBase[C], protocol: ProtocolChoice = ...,
    **options: Unpack[SseConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_sse(
    url: str, *, protocol: Literal["auto"] = ..., **options: Unpack[SseConnectOptions]
) -> AbstractAsyncContextManager[DefaultClient]: ...
@overload
def connect_sse(
    url: str, *, protocol: ModuleType | Sequence[ModuleType] | str,
    **options: Unpack[SseConnectOptions],
) -> AbstractAsyncContextManager[Outbound]: ...
@contextlib.asynccontextmanager
async def connect_sse(
    url: str,
    *,
    client: type[Outbound] | None = None,
    protocol: ProtocolChoice = AUTO,
    handlers: object | None = None,
    headers: dict[str, str] | None = None,
    bearer_token: str | None = None,
    auth: HttpAuth | None = None,
    endpoint_timeout: float = 10.0,
    verify: Verify = True,
    cert: ClientCert | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    timeouts: HttpTimeouts | None = None,
    http_session: Any = None,
    max_reply_bytes: int = MAX_REPLY_BYTES,
    max_fetch_bytes: int = MAX_FETCH_BYTES,
    **options: Any,
) -> AsyncIterator[Any]:
    """Connect to a server of the deprecated HTTP+SSE transport; yield the typed ``Client``.

    ``url`` is the SSE endpoint (``http://host:port/sse``, or ``https://``). Only the
    handshake-era revisions of ``protocol`` are offered (``initialize``, newest first);
    other options are those of ``connect_http`` (``verify``, ``cert``, ``proxy``,
    ``trust_env``, ``timeouts``, ``http_session``, ``max_reply_bytes`` and ``max_fetch_bytes`` included). Leaving the block closes the
    stream, which ends the session. ``client``, ``handlers``, ``protocol``: as for
    :func:`connect_stdio`.
    """
    packages, negotiation = choose_packages(protocol, handlers, client)
    handshake = [p.module for p in packages if p.era == HANDSHAKE]
    if not handshake:
        raise VersionError(
            "HTTP+SSE speaks only handshake-era revisions (2024-11-05 ... 2025-11-25); the "
            f"protocol choice offers {', '.join(p.version for p in packages)}"
        )
    session = SseClientSession(handshake, handlers, client=client, **options)
    session.negotiation = negotiation
    http_options = HttpOptions(verify, cert, proxy, trust_env, timeouts or HttpTimeouts(), http_session,
                               max_reply_bytes, max_fetch_bytes)
    transport = SseClientTransport(
        url, headers=headers, bearer_token=bearer_token, auth=auth, options=http_options
    )
    try:
        await transport.open(endpoint_timeout)
        async with connect(transport, session) as connected:
            yield connected
    finally:
        await transport.close()


#: connect_sse for connect_http's fallback, which passes its arguments on as they came.
_connect_sse: Callable[..., AbstractAsyncContextManager[Any]] = connect_sse


# -- in process ------------------------------------------------------------------------------


@overload
def connect_memory(
    handlers: object, *, client: type[C], client_handlers: ClientHandlersBase[C] | None = None,
    protocol: ProtocolChoice = ..., **options: Unpack[InProcessConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_memory(
    handlers: object, *, client_handlers: ClientHandlersBase[C], protocol: ProtocolChoice = ...,
    **options: Unpack[InProcessConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_memory(
    handlers: object, *, protocol: Literal["auto"] = ..., **options: Unpack[InProcessConnectOptions]
) -> AbstractAsyncContextManager[DefaultClient]: ...
@overload
def connect_memory(
    handlers: object, *, protocol: ModuleType | Sequence[ModuleType] | str,
    **options: Unpack[InProcessConnectOptions],
) -> AbstractAsyncContextManager[Outbound]: ...
@contextlib.asynccontextmanager
async def connect_memory(
    handlers: object,
    *,
    client: type[Outbound] | None = None,
    protocol: ProtocolChoice = "auto",
    client_handlers: object | None = None,
    server_options: dict[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[Any]:
    """Serve ``handlers`` in this process and yield a connected typed ``Client``.

    The server side serves both eras, as over stdio; ``protocol`` picks the client's
    (``"auto"``: discover first, else initialize; or a package, or a list of packages).
    ``server_options``: what :func:`~typedmcp.serving.serve` takes (``max_batch`` and
    ``max_in_flight`` included).
    """
    from .stateless.router import build_router

    server_end, client_end = DirectTransport(), DirectTransport()
    options = dict(server_options or {})
    limits = {name: options.pop(name) for name in LIMIT_OPTIONS & options.keys()}
    router = build_router(handlers, **options)
    server_engine = Engine(
        server_end,
        router,
        accept_batches=router.accepts_batches,
        **limits,
    )
    router.attach(server_engine)
    serving = asyncio.create_task(server_engine.run())
    session = ClientSession(protocol, client_handlers, client=client, **client_options)
    client_end.peer = server_engine
    session.on_engine = lambda engine: setattr(server_end, "peer", engine)
    try:
        async with connect(client_end, session) as connected:
            yield connected
    finally:
        client_end.close()
        server_end.close()
        router.close()
        serving.cancel()
        with contextlib.suppress(BaseException):
            await serving


@overload
def connect_direct(
    handlers: object, *, client: type[C], client_handlers: ClientHandlersBase[C] | None = None,
    protocol: ProtocolChoice = ..., **options: Unpack[InProcessConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_direct(
    handlers: object, *, client_handlers: ClientHandlersBase[C], protocol: ProtocolChoice = ...,
    **options: Unpack[InProcessConnectOptions],
) -> AbstractAsyncContextManager[C]: ...
@overload
def connect_direct(
    handlers: object, *, protocol: Literal["auto"] = ..., **options: Unpack[InProcessConnectOptions]
) -> AbstractAsyncContextManager[DefaultClient]: ...
@overload
def connect_direct(
    handlers: object, *, protocol: ModuleType | Sequence[ModuleType] | str,
    **options: Unpack[InProcessConnectOptions],
) -> AbstractAsyncContextManager[Outbound]: ...
@contextlib.asynccontextmanager
async def connect_direct(
    handlers: object,
    *,
    client: type[Outbound] | None = None,
    protocol: ProtocolChoice = "auto",
    client_handlers: object | None = None,
    server_options: dict[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[Any]:
    """Serve ``handlers`` in this process and yield a typed ``Client`` that calls them
    without a transport: no framing, no JSON, no engine (see :class:`DirectLink`).

    Negotiation, capabilities, validation, sieving and the era's rules are those of any
    other connection; only the wire is gone. Answers are handed over as JSON data, but a
    request's free-form values (``call_tool`` arguments, ``_meta`` entries) reach the server
    as the caller's objects: pass JSON values there (a ``datetime`` that a wire would carry
    as a string arrives as a ``datetime``).
    """
    from .stateless.router import build_router

    router = build_router(handlers, **(server_options or {}))
    session = ClientSession(protocol, client_handlers, client=client, **client_options)
    router.attach(DirectLink(session))
    session.engine = DirectLink(router)  # type: ignore[assignment]
    try:
        await session.open()
        yield session.client
    finally:
        with contextlib.suppress(Exception):
            await session.close()
        router.close()
