"""The host: one client per configured server, one registry, routing, supervision.

::

    async with Host.from_config("mcp.json") as host:
        tools = host.tools()
        result = await host.call_tool("weather__current", {"city": "Oslo"})

A call goes to the owning server with one dict lookup, one argument check against the
tool's inputSchema, and the typed client's request; nothing else is done per call.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from ..engine.jsonrpc import INVALID_REQUEST, CapabilityError, ConnectionClosed, RpcError
from ..protocol.apps import UiResource
from ..protocol.deadlines import RequestOptions
from ..protocol.skills_client import SkillsClient
from .apps import model_visible, ui_resource_for_tool
from .changes import Change, ChangeHub, ChangeStream
from .config import HostConfig, ServerConfig, load_config
from .codemode import CodeLimits, CodeMode
from .discovery import Discovery, SearchIndex, check_expose
from .errors import InvalidArguments, ServerTimeout, ServerUnavailable, UnknownTool
from .handlers import Forward, handler_class
from .interceptors import CallContext, Interceptor, intercepted, interceptor_list
from .naming import NamingRule, possible_owners
from .registry import (
    PromptEntry,
    Registry,
    ResourceEntry,
    TemplateEntry,
    ToolEntry,
    function_definitions,
)
from .supervisor import READY, STOPPED, ServerRuntime

logger = logging.getLogger("typedmcp.host")

DEFAULT_PACKAGE = "mcp_generated.v2026_07_28"
ROOTS_CHANGED = "notifications/roots/list_changed"

#: A hook for a server-to-client request: ``await hook(server_name, params, ctx)``.
RequestHook = Callable[[str, Any, Any], Awaitable[Any]]
#: A hook for a notification: ``hook(server_name, params)`` (may be a coroutine function).
NotificationHook = Callable[[str, Any], Any]
_FORWARD: contextvars.ContextVar[Forward | None] = contextvars.ContextVar("mcp_host_forward", default=None)
_CONNECTION_ERRORS = (ConnectionClosed, ConnectionError, OSError)


class Host:
    """Connects every configured server and serves them as one registry.

    Hooks (all optional) get the server's name first: ``sampling`` and ``elicitation``
    (``await hook(server, params, ctx)`` returns the result; declared to servers only when
    given, or listed in ``client_requests``), ``on_log``, ``on_progress`` and
    ``on_resource_updated`` (``hook(server, params)``). ``roots`` are served to every
    server; :meth:`set_roots` changes them and tells the servers. ``interceptors`` run
    around every call the host sends (see :mod:`typedmcp.host.interceptors`).
    """

    def __init__(
        self,
        config: HostConfig | Mapping[str, Any] | str | os.PathLike[str],
        *,
        package: ModuleType | str = DEFAULT_PACKAGE,
        sampling: RequestHook | None = None,
        elicitation: RequestHook | None = None,
        on_log: NotificationHook | None = None,
        on_progress: NotificationHook | None = None,
        on_resource_updated: NotificationHook | None = None,
        roots: Iterable[Mapping[str, Any]] = (),
        client_requests: Iterable[str] = (),
        log_level: str | None = None,
        initial_backoff: float = 0.25,
        refresh_delay: float = 0.02,
        interceptors: Iterable[Interceptor] = (),
        expose: str | None = None,
    ) -> None:
        self.config = load_config(config)
        #: what :meth:`serve` serves: ``tools`` (every tool) or ``search`` (three tools,
        #: :mod:`.discovery`); default: the configuration's ``host.expose``
        self.expose = self.config.expose if expose is None else check_expose(expose)
        self._search_index: tuple[Registry, SearchIndex] | None = None
        self.interceptors = interceptor_list(interceptors)
        self.package = importlib.import_module(package) if isinstance(package, str) else package
        self._request_hooks: dict[str, RequestHook] = {}
        if sampling is not None:
            self._request_hooks["sampling"] = sampling
        if elicitation is not None:
            self._request_hooks["elicitation"] = elicitation
        self._notification_hooks: dict[str, NotificationHook] = {}
        for kind, hook in (("log", on_log), ("progress", on_progress), ("resource_updated", on_resource_updated)):
            if hook is not None:
                self._notification_hooks[kind] = hook
        requests = frozenset({"roots", *self._request_hooks, *client_requests})
        self._handler_class = handler_class(self.package, requests, frozenset(self._notification_hooks))
        self._roots: list[dict[str, Any]] = [dict(root) for root in roots]
        self.log_level = log_level
        self.initial_backoff = initial_backoff
        self.refresh_delay = refresh_delay
        self._servers: dict[str, ServerRuntime] = {}
        self._registry = Registry()
        self._routes: dict[str, tuple[ToolEntry, ServerRuntime]] = {}
        self._states: dict[str, str] = {}
        self._hub = ChangeHub()
        self._tokens = itertools.count(1)
        self._started = False

    @classmethod
    def from_config(cls, source: str | os.PathLike[str] | Mapping[str, Any], **options: Any) -> Host:
        """A host for a configuration file (``mcpServers`` JSON) or mapping."""
        return cls(source, **options)

    # -- life cycle ----------------------------------------------------------------------------

    async def __aenter__(self) -> Host:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def start(self, servers: Iterable[str] | None = None) -> None:
        """Connect every enabled server (or only those named in ``servers``) at once, in
        parallel; return when each is up or has failed (each within its own
        ``startupTimeout``). A failed server is in :meth:`status` and keeps being retried;
        the others are usable. Servers not started yet are ``stopped`` in :meth:`status`
        until a later ``start`` names them (or names none: all)."""
        if not self._started:
            self._started = True
            for config in self.config.servers.values():
                self._servers[config.name] = self._runtime(config)
        names = list(self._servers) if servers is None else list(dict.fromkeys(servers))
        unknown = [name for name in names if name not in self._servers]
        if unknown:
            raise ServerUnavailable(unknown[0], "no such server in the configuration")
        await self._start_all([self._servers[name] for name in names])

    def possible_owners(self, tool: str) -> list[str] | None:
        """The enabled servers that could export a tool named ``tool``, known from the
        configuration alone (see :func:`.naming.possible_owners`): None when the naming
        rule cannot tell without listing (``prefixTools: "collisions"``)."""
        rule = NamingRule(self.config.separator, self.config.prefix_tools)
        return possible_owners(tool, self.prefixes(), rule)

    def prefixes(self) -> dict[str, str]:
        """Each enabled server's prefix (its name unless its entry sets ``prefix``)."""
        return {
            name: config.name if config.prefix is None else config.prefix
            for name, config in self.config.servers.items() if not config.disabled
        }

    def failed(self) -> dict[str, str]:
        """The started servers whose last attempt to connect failed (restarting, failed,
        or starting again after a failure): name -> why (for a stdio server that died,
        its command, exit code and last stderr lines)."""
        return {
            name: runtime.last_error or runtime.state
            for name, runtime in self._servers.items()
            if runtime.started.is_set() and runtime.state not in (READY, "disabled", STOPPED)
        }

    async def close(self) -> None:
        """Disconnect every server (their processes are stopped)."""
        runtimes = list(self._servers.values())
        await asyncio.gather(*(r.stop("the host closed") for r in runtimes), return_exceptions=True)
        for stream in list(self._hub.streams):
            await stream.aclose()

    def _runtime(self, config: ServerConfig) -> ServerRuntime:
        runtime = ServerRuntime(
            config,
            self,
            lambda: self._handler_class(self, config.name),
            self.package,
            initial_backoff=self.initial_backoff,
            max_backoff=self.config.max_backoff,
            log_level=self.log_level,
            refresh_delay=self.refresh_delay,
        )
        if config.disabled:
            runtime.state = "disabled"
        return runtime

    async def _start_all(self, runtimes: list[ServerRuntime]) -> None:
        enabled = [r for r in runtimes if not r.config.disabled]
        for runtime in enabled:
            runtime.start()
        if enabled:
            waits = [asyncio.ensure_future(r.started.wait()) for r in enabled]
            try:
                await asyncio.wait(waits)
            finally:
                for wait in waits:
                    wait.cancel()

    async def reload(self, config: HostConfig | Mapping[str, Any] | str | os.PathLike[str]) -> dict[str, list[str]]:
        """Apply a new configuration: start added servers, stop removed ones, restart
        those whose entry changed; the others keep their connections and calls."""
        new = load_config(config)
        old = self.config
        removed = [name for name in old.servers if name not in new.servers]
        changed = [name for name in new.servers if name in old.servers and new.servers[name] != old.servers[name]]
        added = [name for name in new.servers if name not in old.servers]
        stopping = [self._servers[n].stop("removed from the configuration") for n in removed if n in self._servers]
        stopping += [self._servers[n].stop("its configuration changed") for n in changed if n in self._servers]
        await asyncio.gather(*stopping, return_exceptions=True)
        self.config = new
        fresh = {name: self._runtime(new.servers[name]) for name in (*changed, *added)}
        self._servers = {name: fresh.get(name) or self._servers[name] for name in new.servers}
        for name in removed:
            self._states.pop(name, None)
        self._rebuild()
        await self._start_all(list(fresh.values()))
        return {"added": added, "removed": removed, "restarted": changed}

    # -- what the host holds -------------------------------------------------------------------

    @property
    def registry(self) -> Registry:
        """The current registry (an immutable snapshot)."""
        return self._registry

    def available(self, name: str) -> bool:
        """Whether tool ``name`` exists and its server is connected."""
        route = self._routes.get(name)
        return route is not None and route[1].session is not None

    def tools(self, *, include_unavailable: bool = True) -> list[ToolEntry]:
        """Every tool of every server, names unique (see the naming rule)."""
        return [
            entry for entry, runtime in self._routes.values()
            if include_unavailable or runtime.session is not None
        ]

    def prompts(self) -> list[PromptEntry]:
        return list(self._registry.prompts.values())

    def resources(self) -> list[ResourceEntry]:
        return list(self._registry.resources.values())

    def resource_templates(self) -> list[TemplateEntry]:
        return list(self._registry.templates)

    def function_definitions(self, style: str = "openai", *, include_unavailable: bool = False) -> list[dict[str, Any]]:
        """The tools as function-calling definitions: ``openai``, ``anthropic``, ``gemini``;
        an MCP Apps tool only its UI may call (``_meta.ui.visibility: ["app"]``) is left out."""
        return function_definitions(model_visible(self.tools(include_unavailable=include_unavailable)), style)

    def discovery(self) -> Discovery:
        """Search and describe the tools (what search mode serves), for an application
        running its own model loop: ``host.discovery().search("add a note")`` ->
        ``list[ToolMatch]``; ``describe(names)`` -> the full definitions."""
        return Discovery(self)

    def code_mode(self, limits: CodeLimits | None = None) -> CodeMode:
        """Run programs against the tools as a typed API (``await host.code_mode().run(code)``
        -> :class:`~.codemode.CodeResult`): type-checked against the tools' signatures,
        then run in a ``pydantic-monty`` sandbox within ``limits`` (the ``codemode`` extra)."""
        return CodeMode(self, limits)

    def status(self) -> dict[str, dict[str, Any]]:
        """Per server: state, era, revision, transport, last error, restarts."""
        return {name: runtime.status() for name, runtime in self._servers.items()}

    def server(self, name: str) -> ServerRuntime:
        """The runtime of one server (its ``client`` while connected)."""
        try:
            return self._servers[name]
        except KeyError:
            raise ServerUnavailable(name, "no such server in the configuration") from None

    def skills(self, name: str) -> SkillsClient:
        """The skills (SEP-2640) of server ``name``, through its current connection: a
        :class:`~typedmcp.SkillsClient` keyed by that server, which fetches nothing until
        asked (its requests go straight to the server, not through the interceptors)."""
        runtime = self.server(name)
        if runtime.client is None:
            raise ServerUnavailable(name, runtime.why_unavailable())
        return SkillsClient(runtime.client)

    def changes(self) -> ChangeStream:
        """An async iterator of :class:`Change` from now on."""
        return ChangeStream(self._hub)

    def on_change(self, callback: Callable[[Change], Any]) -> Callable[[], None]:
        """Call ``callback(change)`` for each change; returns the unsubscribe function."""
        return self._hub.subscribe(callback)

    # -- routing -------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[Any], Any] | None = None,
        meta: Mapping[str, Any] | None = None,
        forward: Forward | None = None,
        reset_timeout_on_progress: bool | None = None,
        max_total_timeout: float | None = None,
    ) -> Any:
        """Call tool ``name`` (its exported name) on its server; the typed result.

        Arguments are checked against the tool's inputSchema first. ``timeout`` (default:
        the server's ``timeout``) and cancellation reach only that server. ``progress``
        gets the server's progress notifications of this call. ``reset_timeout_on_progress``
        (default: the server's ``resetTimeoutOnProgress``): each progress notification gives
        the call ``timeout`` seconds more, up to ``max_total_timeout`` seconds in all
        (default: the server's ``maxTotalTimeout``; None: no cap)."""
        route = self._routes.get(name)
        if route is None:
            raise UnknownTool("tool", name, len(self._routes))
        entry, runtime = route
        session = runtime.session
        if session is None:
            raise ServerUnavailable(runtime.name, runtime.why_unavailable())
        args = {} if arguments is None else arguments
        problems = runtime.schemas.check(entry.tool, "inputSchema", args)
        if problems:
            raise InvalidArguments(name, runtime.name, problems)
        params: dict[str, Any] = {"name": entry.tool, "arguments": args}
        limit = runtime.config.timeout if timeout is None else timeout
        options = _call_options(runtime.config, limit, reset_timeout_on_progress, max_total_timeout)
        if options is not None:
            return await self._send(
                runtime, session, "tools/call", params, limit, progress, meta, forward, name, options
            )
        if progress is None and meta is None and forward is None and not self.interceptors:
            try:
                return await session.send_request(runtime.call_spec, params, limit)
            except (asyncio.TimeoutError, *_CONNECTION_ERRORS) as error:
                raise self._failure(runtime, error, f"tools/call {name}", limit) from error
        return await self._send(runtime, session, "tools/call", params, limit, progress, meta, forward, name)

    async def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None,
        forward: Forward | None = None,
    ) -> Any:
        """Read ``uri`` from the server that lists it (or whose template matches it);
        ``server`` picks one when several list the same URI."""
        owner = server or self._registry.owner_of_uri(uri)
        if owner is None:
            raise UnknownTool("resource", uri, len(self._registry.resources))
        runtime = self.server(owner)
        return await self._send(runtime, runtime.session, "resources/read", {"uri": uri},
                                timeout, None, None, forward, uri)

    async def ui_resource_for(self, name: str, *, timeout: float | None = None) -> UiResource | None:
        """The MCP Apps UI of tool ``name`` (``_meta.ui.resourceUri``), read from its server;
        None when the tool links none."""
        return await ui_resource_for_tool(self, name, timeout=timeout)

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *,
        timeout: float | None = None, forward: Forward | None = None,
    ) -> Any:
        """Get prompt ``name`` (its exported name) from its server."""
        entry = self._registry.prompts.get(name)
        if entry is None:
            raise UnknownTool("prompt", name, len(self._registry.prompts))
        params: dict[str, Any] = {"name": entry.prompt}
        if arguments:
            params["arguments"] = dict(arguments)
        runtime = self.server(entry.server)
        return await self._send(runtime, runtime.session, "prompts/get", params, timeout, None, None, forward, name)

    async def complete(
        self, ref: Mapping[str, Any], argument: Mapping[str, Any], *,
        context: Mapping[str, Any] | None = None, timeout: float | None = None,
    ) -> Any:
        """``completion/complete`` for a prompt (``{"type": "ref/prompt", "name": exported}``)
        or a resource template (``{"type": "ref/resource", "uri": template}``)."""
        ref = dict(ref)
        if ref.get("type") == "ref/prompt":
            entry = self._registry.prompts.get(str(ref.get("name")))
            if entry is None:
                raise UnknownTool("prompt", str(ref.get("name")), len(self._registry.prompts))
            owner, ref["name"] = entry.server, entry.prompt
        else:
            template = str(ref.get("uri"))
            found = next((t for t in self._registry.templates if t.uri_template == template), None)
            matched = found.server if found is not None else self._registry.owner_of_uri(template)
            if matched is None:
                raise UnknownTool("resource template", template, len(self._registry.templates))
            owner = matched
        params: dict[str, Any] = {"ref": ref, "argument": dict(argument)}
        if context:
            params["context"] = dict(context)
        runtime = self.server(owner)
        return await self._send(runtime, runtime.session, "completion/complete", params, timeout, None, None, None, str(ref))

    async def _send(
        self, runtime: ServerRuntime, session: Any, method: str, params: dict[str, Any],
        timeout: float | None, progress: Callable[[Any], Any] | None,
        meta: Mapping[str, Any] | None, forward: Forward | None, what: str,
        options: RequestOptions | None = None,
    ) -> Any:
        """One routed request with the extras: progress, caller ``_meta``, a forwarder
        for the server's requests made meanwhile."""
        if session is None:
            raise ServerUnavailable(runtime.name, runtime.why_unavailable())
        limit = runtime.config.timeout if timeout is None else timeout
        token: str | None = None
        if meta:
            params["_meta"] = dict(meta)
        if progress is not None:
            token = f"host-{next(self._tokens)}"
            params.setdefault("_meta", {})["progressToken"] = token
            session.progress_callbacks[token] = progress
        reset = None
        if forward is not None:
            reset = _FORWARD.set(forward)
            runtime.origins.append(forward)
        async def send(sent: dict[str, Any]) -> Any:
            # (only the request's own failures say the server is gone: an interceptor's
            # exception, an OSError included, goes to the caller as it is)
            try:
                return await session.send_request(runtime.specs[method], sent, limit, options)
            except (asyncio.TimeoutError, *_CONNECTION_ERRORS) as error:
                if options is not None and options.max_total_timeout is not None and "max_total_timeout" in str(error):
                    timed_out = ServerTimeout(runtime.name, f"{method} {what}", options.max_total_timeout, "maxTotalTimeout")
                    raise timed_out from error
                raise self._failure(runtime, error, f"{method} {what}", limit) from error

        try:
            if self.interceptors:
                call = CallContext(runtime.name, runtime.config.transport, method, what, params)
                return await intercepted(self.interceptors, call, send)
            return await send(params)
        finally:
            if token is not None:
                session.progress_callbacks.pop(token, None)
            if reset is not None:
                _FORWARD.reset(reset)
                runtime.origins.remove(forward)

    def _failure(self, runtime: ServerRuntime, error: BaseException, what: str, limit: float) -> Exception:
        if isinstance(error, asyncio.TimeoutError):
            return ServerTimeout(runtime.name, what, limit)
        runtime.connection_lost(error)
        return ServerUnavailable(runtime.name, f"{what} failed: {runtime.why_unavailable()}")

    # -- roots and server-to-client requests ---------------------------------------------------

    @property
    def roots(self) -> list[dict[str, Any]]:
        return [dict(root) for root in self._roots]

    async def set_roots(self, roots: Iterable[Mapping[str, Any]]) -> None:
        """Serve ``roots`` to every server from now on; tell the connected handshake-era
        servers (``notifications/roots/list_changed``). Stateless-era servers ask anew."""
        self._roots = [dict(root) for root in roots]
        sends = []
        for runtime in self._servers.values():
            session = runtime.session
            if session is None or session.era != "handshake" or session.package is None:
                continue
            spec = session.package.dispatch.NOTIFICATIONS.get(ROOTS_CHANGED)
            if spec is not None:
                sends.append(session.send_notification(spec, None))
        for outcome in await asyncio.gather(*sends, return_exceptions=True):
            if isinstance(outcome, Exception) and not isinstance(outcome, (CapabilityError, *_CONNECTION_ERRORS)):
                logger.warning("roots/list_changed not sent: %s", outcome)

    async def server_request(self, server: str, kind: str, params: Any, ctx: Any) -> Any:
        """A server asks its client (sampling, elicitation, roots): a call the gateway
        forwarded passes it to the gateway's own client; else the host's hook answers."""
        if kind == "roots":
            return {"roots": self.roots}
        forward = _FORWARD.get()
        if forward is None:
            forward = self._sole_origin(server, kind)
        if forward is not None:
            answer = await forward(kind, server, params)
            if answer is not NotImplemented:
                return answer
        hook = self._request_hooks.get(kind)
        if hook is not None:
            return await hook(server, params, ctx)
        if kind == "elicitation":
            return {"action": "decline"}
        raise RpcError(INVALID_REQUEST, f"the host does not answer {kind} requests")

    def _sole_origin(self, server: str, kind: str) -> Forward | None:
        """The forwarder of the gateway client whose calls to ``server`` are in flight, if
        they all come from one client. A request a server makes on its own connection
        names no call, so with calls of several clients in flight it belongs to none of
        them: it is never shown to a client that may not have caused it."""
        runtime = self._servers.get(server)
        if runtime is None or not runtime.origins:
            return None
        owners = {id(getattr(origin, "owner", origin)) for origin in runtime.origins}
        if len(owners) > 1:
            logger.info(
                "%s sent a %s request while %d gateway clients had calls to it in flight: "
                "it cannot be attributed to one, so the host answers it",
                server, kind, len(owners),
            )
            return None
        forward: Forward = runtime.origins[-1]
        return forward

    def notified(self, server: str, kind: str, params: Any) -> None:
        hook = self._notification_hooks.get(kind)
        if hook is not None:
            outcome = hook(server, params)
            if asyncio.iscoroutine(outcome):
                task = asyncio.ensure_future(outcome)
                _HOOK_TASKS.add(task)
                task.add_done_callback(_log_failure)

    def list_changed(self, server: str, kinds: tuple[str, ...]) -> None:
        runtime = self._servers.get(server)
        if runtime is not None and runtime.session is not None:
            runtime.list_changed(kinds)

    async def refresh(self, server: str | None = None, *, force: bool = False) -> None:
        """List again now (``force``: even lists a 2026-07-28 server marked fresh)."""
        runtimes = [self.server(server)] if server else list(self._servers.values())
        await asyncio.gather(*(r.refresh(force) for r in runtimes))

    # -- registry upkeep (called by the runtimes) ----------------------------------------------

    def lists_changed(self, runtime: ServerRuntime) -> None:
        if self._servers.get(runtime.name) is runtime:
            self._rebuild()

    def state_changed(self, runtime: ServerRuntime) -> None:
        if self._servers.get(runtime.name) is not runtime or self._states.get(runtime.name) == runtime.state:
            return
        self._states[runtime.name] = runtime.state
        self._hub.emit(Change(runtime.name, "state", state=runtime.state))

    def _rebuild(self) -> None:
        rule = NamingRule(self.config.separator, self.config.prefix_tools)
        registry = Registry.build([(r.config, r.lists) for r in self._servers.values()], rule)
        old, self._registry = self._registry, registry
        self._routes = {name: (entry, self._servers[entry.server]) for name, entry in registry.tools.items()}
        for name in self._servers.keys() | {e.server for e in old.tools.values()}:
            before, after = old.names_of(name), registry.names_of(name)
            for kind, names in after.items():
                added, removed = names - before[kind], before[kind] - names
                if added or removed:
                    self._hub.emit(Change(name, kind, tuple(sorted(added)), tuple(sorted(removed))))

    async def serve(self, *, stdio: bool = False, http: str | tuple[str, int] | None = None,
                    path: str = "/mcp", **options: Any) -> None:
        """Serve the registry as one MCP server (the gateway, see :mod:`.gateway`): on this
        process's stdin/stdout (``stdio=True``) or over Streamable HTTP
        (``http=("127.0.0.1", 8000)`` or ``"127.0.0.1:8000"``, at ``path``), until the
        input ends or the task is cancelled. Call it on a started host."""
        from . import gateway

        if stdio == (http is not None):
            raise ValueError("serve needs exactly one of stdio=True or http=(address, port)")
        if stdio:
            await gateway.serve_stdio(self, **options)
            return
        address, port = parse_address(http) if isinstance(http, str) else http  # type: ignore[misc]
        await gateway.serve_http(self, address, port, path=path, **options)

    def ready(self) -> list[str]:
        """Names of the connected servers."""
        return [name for name, runtime in self._servers.items() if runtime.state == READY]


_HOOK_TASKS: set[asyncio.Future[Any]] = set()


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:8000`` for IPv6) -> (host, port)."""
    address, _, port = text.rpartition(":")
    address = address.strip("[]")
    if not address or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8000)")
    return address, int(port)


def _log_failure(task: asyncio.Future[Any]) -> None:
    _HOOK_TASKS.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("a host hook failed", exc_info=task.exception())


__all__ = ["DEFAULT_PACKAGE", "Forward", "Host", "NotificationHook", "RequestHook"]


def _call_options(
    config: ServerConfig, limit: float, reset: bool | None, max_total: float | None
) -> RequestOptions | None:
    """The options of a call whose deadline progress pushes out (None: a fixed deadline)."""
    if reset is None:
        reset = config.reset_timeout_on_progress
    if not reset:
        if max_total is not None:
            raise ValueError(
                "max_total_timeout caps how far progress pushes the deadline out: pass "
                "reset_timeout_on_progress=True too (or set resetTimeoutOnProgress for the server)"
            )
        return None
    cap = max_total if max_total is not None else config.max_total_timeout
    return RequestOptions(limit, None, True, cap)
