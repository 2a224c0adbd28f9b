"""The gateway: the host's merged registry served as one MCP server.

A client of the gateway sees one server whose tools (prompts, resources, templates) are
those of every connected server, under their exported names. Calls go to the owning
server through :meth:`Host.call_tool` (so they are validated, time-limited and isolated
the same way); progress comes back to the caller; a caller's cancellation reaches the
owning server; sampling and elicitation requests a server makes during a forwarded call
go to the gateway's own client, both eras: a handshake-era session is sent the request; a
2026-07-28 client gets it in an ``InputRequiredResult`` while the call waits, parked,
for the client's retry with the answer (see :mod:`.parking`: bounded in time and number,
bound to the principal that started it). A request of a kind the client did not declare
is answered by the host's own hooks. The gateway's
capabilities follow the registry (tools always; resources, prompts and completions when a
configured server offers them) and its ``list_changed`` notifications follow the
registry's changes. It runs on the runtime's own servers: ``serve_stdio`` and
``http_app``, both eras.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any, Protocol

from ..engine.jsonrpc import DEFAULT_MAX_BATCH, DEFAULT_MAX_IN_FLIGHT, INVALID_PARAMS, CapabilityError, RpcError
from ..protocol.access import AccessPolicy
from ..protocol.capabilities import has_capability
from ..protocol.feed import ChangeFeed
from ..protocol.results import to_wire
from ..protocol.stubs import ToolError
from ..stateless.scope import current_scope
from ..stateless.server import StatelessServer
from .changes import Change
from .discovery import search_namespace
from .errors import HostError, InvalidArguments, UnknownTool
from .handlers import Forward
from .parking import FORWARDED, ParkingLimits, ParkingLot, Start, wants_input
from .registry import PromptEntry, Registry, ResourceEntry, TemplateEntry, ToolEntry
from .supervisor import ServerRuntime
from .ui_routing import export_resources, export_tool, relabel_contents, resolve_ui_uri

logger = logging.getLogger("typedmcp.host")

SERVER_INFO = {"name": "mcp-host-gateway", "version": "0.1.0"}
#: registry change kind -> what the gateway's clients are told
ANNOUNCE = {
    "tools": "tools_changed",
    "state": "tools_changed",
    "resources": "resources_changed",
    "templates": "resources_changed",
    "prompts": "prompts_changed",
}


class GatewayHost(Protocol):
    """What the gateway uses of the :class:`~.core.Host` it serves (the host starts its
    gateway, so the gateway names only this)."""

    @property
    def package(self) -> ModuleType: ...

    @property
    def expose(self) -> str: ...

    def status(self) -> dict[str, dict[str, Any]]: ...

    def server(self, name: str) -> ServerRuntime: ...

    @property
    def registry(self) -> Registry: ...

    def tools(self, *, include_unavailable: bool = True) -> list[ToolEntry]: ...

    def prompts(self) -> list[PromptEntry]: ...

    def resources(self) -> list[ResourceEntry]: ...

    def resource_templates(self) -> list[TemplateEntry]: ...

    def on_change(self, callback: Callable[[Change], Any]) -> Callable[[], None]: ...

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *,
        timeout: float | None = None, progress: Callable[[Any], Any] | None = None,
        meta: Mapping[str, Any] | None = None, forward: Forward | None = None,
    ) -> Any: ...

    async def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None,
        forward: Forward | None = None,
    ) -> Any: ...

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *,
        timeout: float | None = None, forward: Forward | None = None,
    ) -> Any: ...

    async def complete(
        self, ref: Mapping[str, Any], argument: Mapping[str, Any], *,
        context: Mapping[str, Any] | None = None, timeout: float | None = None,
    ) -> Any: ...


def _offers(host: GatewayHost, capability: str) -> bool:
    """Whether a configured server has offered ``capability`` (on its last connection)."""
    return any(
        has_capability(host.server(name).capabilities, (capability,)) for name in host.status()
    )


def _forwarder(ctx: Any, requests: Any) -> Forward | None:
    """Pass a server's sampling/elicitation request to the gateway's client (the one whose
    call is running), when that client is a handshake-era session that declared it."""
    if isinstance(ctx.hooks, StatelessServer):
        return None

    async def forward(kind: str, server: str, params: Any) -> Any:
        method = FORWARDED.get(kind)
        if method is None:
            return NotImplemented
        try:
            return await ctx.peer.send_request(requests[method], to_wire(params))
        except CapabilityError:
            return NotImplemented  # the gateway's client does not do it: the host's hooks

    forward.owner = ctx.hooks  # type: ignore[attr-defined]  # the client's session: whose call it is
    return forward


class _Progress:
    """Carries progress of a forwarded call to the caller. The server's notifications are
    handled outside the gateway request's context (which a 2026-07-28 reply stream needs),
    so a task started inside it sends them."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task = asyncio.ensure_future(self._pump())

    def __call__(self, params: Any) -> None:
        self.queue.put_nowait(params)

    async def _pump(self) -> None:
        while True:
            note = await self.queue.get()
            if note is None:
                return
            await self.ctx.report_progress(note.progress, note.total, note.message)

    async def close(self) -> None:
        self.queue.put_nowait(None)
        try:
            await asyncio.wait_for(asyncio.shield(self.task), 1.0)
        except (asyncio.TimeoutError, Exception):
            self.task.cancel()
            with contextlib.suppress(BaseException):
                await self.task


def _parks(ctx: Any) -> bool:
    """Whether this call is a 2026-07-28 client's that may be asked for input."""
    return isinstance(ctx.hooks, StatelessServer) and wants_input(current_scope())


def gateway_handlers(
    host: GatewayHost, *, parking: ParkingLimits | None = None, every_method: bool = False,
    park: bool = True, access_policy: AccessPolicy | None = None,
) -> Any:
    """A handler object (a ``ServerHandlers`` subclass of the host's package) serving the
    host's registry; methods exist for what the registry can offer (``every_method``: all
    of them, for a caller that decides itself, :mod:`.proxy`). ``parking`` bounds the
    calls of 2026-07-28 clients waiting for their input (the object's ``parked``);
    ``park=False`` parks none: the host's hooks answer a server's requests for such a
    client (the proxy's handlers cannot return the input-required rounds). In search mode
    (``host.expose``) its tools are those of :mod:`.discovery`; an ``access_policy``
    (exported names -> scopes) guards the tools per authenticated caller."""
    package = host.package
    base = importlib.import_module(f"{package.__name__}.server").ServerHandlers
    requests = importlib.import_module(f"{package.__name__}.dispatch").REQUESTS
    lot = ParkingLot(requests, parking)

    async def parked(ctx: Any, params: Any, start: Start, progress: Any = None) -> Any:
        return await lot.serve(ctx, getattr(params, "request_state", None), start, progress)

    async def list_tools(self: Any, params: Any, ctx: Any) -> dict[str, Any]:
        shared = host.registry.shared_uris
        return {"tools": [export_tool(entry, shared) for entry in host.tools(include_unavailable=False)]}

    async def call_tool(self: Any, params: Any, ctx: Any) -> Any:
        progress = _Progress(ctx) if ctx.progress_token is not None else None
        try:
            if park and _parks(ctx):
                return await parked(ctx, params, lambda forward, note: host.call_tool(
                    params.name, params.arguments, progress=note, forward=forward), progress)
            return await host.call_tool(
                params.name, params.arguments, progress=progress, forward=_forwarder(ctx, requests)
            )
        except UnknownTool as error:
            raise RpcError(INVALID_PARAMS, str(error)) from None
        except (InvalidArguments, HostError) as error:
            raise ToolError(str(error)) from None  # for the model to read
        finally:
            if progress is not None:
                await progress.close()

    async def list_prompts(self: Any, params: Any, ctx: Any) -> dict[str, Any]:
        return {"prompts": [{**entry.definition, "name": entry.name} for entry in host.prompts()]}

    async def get_prompt(self: Any, params: Any, ctx: Any) -> Any:
        if park and _parks(ctx):
            return await _routed(parked(ctx, params, lambda forward, note: host.get_prompt(
                params.name, params.arguments, forward=forward)))
        return await _routed(host.get_prompt(params.name, params.arguments, forward=_forwarder(ctx, requests)))

    async def list_resources(self: Any, params: Any, ctx: Any) -> dict[str, Any]:
        return {"resources": export_resources(host.resources(), host.registry.shared_uris)}

    async def list_resource_templates(self: Any, params: Any, ctx: Any) -> dict[str, Any]:
        return {"resourceTemplates": [dict(entry.definition) for entry in host.resource_templates()]}

    async def read_resource(self: Any, params: Any, ctx: Any) -> Any:
        copy = resolve_ui_uri(params.uri, host.registry.shared_uris)  # a shared ui:// URI, per owner
        if copy is not None:
            original, owner = copy
            read = await _routed(host.read_resource(original, server=owner, forward=_forwarder(ctx, requests)))
            return relabel_contents(read, original, params.uri)
        if park and _parks(ctx):
            return await _routed(parked(ctx, params, lambda forward, note: host.read_resource(
                params.uri, forward=forward)))
        return await _routed(host.read_resource(params.uri, forward=_forwarder(ctx, requests)))

    async def complete(self: Any, params: Any, ctx: Any) -> Any:
        wire = to_wire(params)
        return await _routed(host.complete(wire["ref"], wire["argument"], context=wire.get("context")))

    namespace: dict[str, Any] = {"list_tools": list_tools, "call_tool": call_tool}
    if every_method or _offers(host, "prompts"):
        namespace.update(list_prompts=list_prompts, get_prompt=get_prompt)
    if every_method or _offers(host, "resources"):
        namespace.update(
            list_resources=list_resources,
            list_resource_templates=list_resource_templates,
            read_resource=read_resource,
        )
    if every_method or _offers(host, "completions"):
        namespace["complete"] = complete
    if host.expose == "search":
        namespace.update(search_namespace(host, call_tool))
    handlers = type("GatewayHandlers", (base,), namespace)()
    handlers.parked = lot
    if access_policy is not None:
        handlers.access_policy = access_policy
    return handlers


async def _routed(call: Any) -> Any:
    try:
        return await call
    except HostError as error:
        raise RpcError(INVALID_PARAMS, str(error)) from None


def gateway_options(host: GatewayHost, **options: Any) -> tuple[object, dict[str, Any], Callable[[], None]]:
    """(handlers, server options, unsubscribe): what ``serve_stdio``/``http_app`` take, with
    a change feed the host's registry changes are published on. ``parking``
    (:class:`~.parking.ParkingLimits`) bounds the calls waiting for 2026-07-28 clients."""
    feed = ChangeFeed()
    parking: ParkingLimits | None = options.pop("parking", None)
    access_policy: AccessPolicy | None = options.pop("access_policy", None)

    def announce(change: Change) -> None:
        method = ANNOUNCE.get(change.kind)
        if method is not None:
            getattr(feed, method)()

    unsubscribe = host.on_change(announce)
    options.setdefault("server_info", SERVER_INFO)
    options.setdefault("instructions", "One MCP server for the servers configured in an mcp-host.")
    return (
        gateway_handlers(host, parking=parking, access_policy=access_policy),
        # the host checks arguments against the same schemas: no second check here
        {"list_changed": ("tools", "resources", "prompts"), "changes": feed,
         "validate_tools": False, **options},
        unsubscribe,
    )


async def serve_stdio(host: GatewayHost, *, pass_through: bool = True, **options: Any) -> None:
    """Serve the gateway on this process's stdin/stdout until stdin ends. Routed
    ``tools/call`` requests pass through to their server without being re-validated into
    models (``pass_through``; see :mod:`.fastpath`: the same answers, less work)."""
    from ..serving import serve_stdio as run
    from ..transports.stdio import DEFAULT_MAX_MESSAGE_BYTES, server_transport

    handlers, server_options, unsubscribe = gateway_options(host, **options)
    try:
        if not pass_through or host.expose != "tools":  # (search mode: no direct calls)
            await run(handlers, **server_options)
            return
        limit = server_options.pop("max_message_bytes", DEFAULT_MAX_MESSAGE_BYTES)
        await serve_passing(host, handlers, await server_transport(limit), **server_options)
    finally:
        unsubscribe()
        await _close(handlers)


async def serve_passing(
    host: GatewayHost, handlers: object, transport: Any, *,
    max_batch: int = DEFAULT_MAX_BATCH, max_in_flight: int = DEFAULT_MAX_IN_FLIGHT, **options: Any,
) -> None:
    """:func:`typedmcp.serving.serve` with the gateway's pass-through (:class:`.fastpath.PassThrough`)
    in front of the connection's router; the same request limits (``max_batch``: a batch
    fanned out to the servers is refused beyond it; ``max_in_flight``: the calls relayed at
    once, the lane's included)."""
    from ..engine.jsonrpc import Engine
    from ..protocol.options import check_options
    from ..serving import server_options
    from ..stateless.router import build_router
    from .fastlane import PassLane
    from .fastpath import PassThrough

    check_options("serve", options, server_options())
    router = build_router(handlers, **options)
    passage = PassThrough(host, router, handlers)
    engine = Engine(
        transport,
        passage,
        accept_batches=router.accepts_batches,
        max_batch=max_batch,
        max_in_flight=max_in_flight,
    )
    passage.attach(engine)
    if passage.use_lane:
        engine.lane = PassLane(passage)
    handlers.pass_through = passage  # type: ignore[attr-defined]  # (what tests read)
    try:
        await engine.run()
    finally:
        passage.close()


async def _close(handlers: object) -> None:
    """End the calls still parked for 2026-07-28 clients (the gateway stops)."""
    lot = getattr(handlers, "parked", None)
    if isinstance(lot, ParkingLot):
        await lot.aclose()


def gateway_app(host: GatewayHost, *, path: str = "/mcp", **options: Any) -> Any:
    """The gateway as an ASGI app (Streamable HTTP at ``path``, both eras)."""
    from ..serving import http_app

    handlers, server_options, _unsubscribe = gateway_options(host, **options)
    return http_app(handlers, path=path, **server_options)


async def serve_http(
    host: GatewayHost, address: str = "127.0.0.1", port: int = 8000, *, path: str = "/mcp",
    ready: Callable[[int], None] | None = None, **options: Any,
) -> None:
    """Serve the gateway over Streamable HTTP (uvicorn) until cancelled; ``ready`` gets
    the port once listening (useful with ``port=0``)."""
    import signal
    import socket

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            """SIGINT/SIGTERM end serving and return (uvicorn's own handling re-raises
            the signal afterwards, which would kill the process before the host has
            stopped its servers)."""
            loop = asyncio.get_running_loop()
            handled = []
            for number in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(number, self._stop_serving)
                    handled.append(number)
            try:
                yield
            finally:
                for number in handled:
                    loop.remove_signal_handler(number)

        def _stop_serving(self) -> None:
            self.force_exit = self.should_exit
            self.should_exit = True

    from ..serving import http_app

    handlers, server_options, unsubscribe = gateway_options(host, **options)
    app = http_app(handlers, path=path, **server_options)
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, port))
    server = Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    startup = server.startup

    async def started(sockets: Any = None) -> None:
        await startup(sockets=sockets)
        if ready is not None:
            ready(sock.getsockname()[1])

    server.startup = started  # type: ignore[method-assign]
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()
        unsubscribe()
        await _close(handlers)


__all__ = ["ParkingLimits", "gateway_app", "gateway_handlers", "gateway_options", "serve_http", "serve_stdio"]
