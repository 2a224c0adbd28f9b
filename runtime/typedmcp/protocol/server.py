"""The server side of a handshake-era connection: lifecycle, capabilities, built-ins.

:class:`ServerSession` serves a generated ``ServerHandlers`` subclass; the launchers that
run it over a transport are in ``typedmcp.serving``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from ..engine.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    RequestId,
    RpcError,
    clip,
)
from .access import LIST_ITEMS, access_policy_of
from .capabilities import has_capability
from .feed import CHANGE_NOTIFICATIONS, RESOURCE_UPDATED
from .meta import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY
from .origin import request_origin
from .packages import ProtocolPackage, generated_beside, package_of
from .results import describe, plain, to_wire
from .session import CommonBuiltins, Session
from .stubs import RequestContext, ToolError
from .hooks import refuse_task_hooks
from .middleware import Middleware, MiddlewareChain, MiddlewareContext, middleware_chain, session_context
from .tasks import TaskBuiltins, TaskStore
from .tools import OutputChecked, ToolSchemas

logger = logging.getLogger("typedmcp")

INITIALIZE = "initialize"
PING = "ping"
LIST_TOOLS = "tools/list"
CALL_TOOL = "tools/call"
SUBSCRIBE = "resources/subscribe"
UNSUBSCRIBE = "resources/unsubscribe"
# From this revision on, invalid tool arguments are a tool error result, not -32602.
ARGUMENT_ERRORS_AS_RESULTS_SINCE = "2025-11-25"
#: Resource URIs one session may be subscribed to at once (each is kept for its lifetime).
MAX_SUBSCRIPTIONS_PER_SESSION = 1000


def handshake_packages(handlers: object) -> list[ProtocolPackage]:
    """Every handshake-era revision generated beside the handlers' own package, newest first.

    A folder of generated packages (``mcp_generated``) lists them in ``REVISIONS``; a lone
    vendored package serves its own revision only.
    """
    return [p for p in generated_beside(package_of(handlers)) if p.era == "handshake"]


class ServerBuiltins(CommonBuiltins):
    """What the runtime answers itself on the server side."""

    session: ServerSession

    async def initialize(self, params: Any, ctx: RequestContext[Any] | None = None) -> dict[str, Any]:
        """The runtime runs the handshake (version, capabilities from your handlers): set the
        server's name and version with ``server_info={"name": ..., "version": ...}`` and
        its ``instructions=`` (options of ``run_stdio``, ``http_app``); ``on_initialized``
        is called when the client is ready."""
        return await self.session._initialize(params)

    async def set_level(self, params: Any, ctx: RequestContext[Any]) -> dict[str, Any]:
        """The runtime keeps the client's log level: ``ctx.log(level, data)`` sends only
        what passes it."""
        levels = self.session.package.log_levels() if self.session.package else ()
        if params.level not in levels:
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown log level {params.level!r}")
        self.session.log_level = params.level
        return {}

    async def on_initialized(self, params: Any, ctx: RequestContext[Any]) -> None:
        self.session.initialized = True


def tool_error(message: str) -> dict[str, Any]:
    """A ``tools/call`` result reporting a failure for the model to read (``isError``)."""
    return {"content": [{"type": "text", "text": message}], "isError": True}


class ServerSession(Session):
    """The server side of one connection (one stdio process, or one HTTP session)."""

    side = "server"
    peer_side = "client"
    #: The transport's name for the middleware context, when the session knows it better
    #: than its engine's transport does (the stateless HTTP endpoint sets it).
    transport_name: str | None = None

    def __init__(
        self,
        handlers: object,
        *,
        packages: Sequence[ProtocolPackage | ModuleType] | None = None,
        server_info: dict[str, Any] | None = None,
        instructions: str | None = None,
        list_changed: Iterable[str] = (),
        validate_tools: bool = True,
        tasks: bool = False,
        changes: Any = None,
        middleware: Sequence[Middleware] | MiddlewareChain | None = None,
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        own = package_of(handlers)
        self.packages = (
            [ProtocolPackage.of(p) for p in packages] if packages else handshake_packages(handlers)
        )
        super().__init__(handlers, None, None, extensions=extensions)
        self.own_package = ProtocolPackage.of(own)
        self.builtins = self._server_builtins = ServerBuiltins(self)
        self._handler_base = importlib.import_module(f"{own.__name__}.server").ServerHandlers
        self._peer_class = importlib.import_module(f"{own.__name__}.server").ClientPeer
        self.server_info = server_info or {"name": type(handlers).__name__, "version": "0.0.0"}
        self.instructions = instructions
        self.list_changed = tuple(list_changed)
        self.client_info: dict[str, Any] = {}
        self.initialized = False
        self.validate_tools = validate_tools
        self.tool_schemas = ToolSchemas()
        self._listed = False
        self.handles_tasks = tasks
        self.task_store = TaskStore(self.task_status) if tasks else None
        self.task_builtins = TaskBuiltins(self.task_store) if self.task_store else None
        if tasks:
            refuse_task_hooks(handlers, self._handler_base, TaskBuiltins)
        self.subscribed_uris: set[str] = set()
        self.changes = changes
        self.access_policy = access_policy_of(handlers)  # scopes per tool (protocol.access)
        #: Around every request and notification received (None: none configured).
        self.middleware = middleware_chain(middleware)
        self._unsubscribe = (
            changes.subscribe(self._on_change, owner=self) if changes is not None else None
        )

    async def send_notification(self, spec: Any, params: Any) -> None:
        """Send to this session's client (``resources/updated`` only if it subscribed to the
        resource); a change notification also goes to the change feed, so the other sessions
        and the 2026-07-28 listen streams hear of it too."""
        method = spec.method
        if method != RESOURCE_UPDATED or (plain(params) or {}).get("uri") in self.subscribed_uris:
            await super().send_notification(spec, params)
        if self.changes is not None and method in CHANGE_NOTIFICATIONS:
            self.changes.publish(method, plain(params) if params else None, origin=self)

    def close(self) -> None:
        """Stop receiving server-wide changes and cancel the tasks still running (the
        connection or session ended)."""
        if self.task_store is not None:
            self.task_store.close()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_change(self, method: str, params: dict[str, Any]) -> None:
        """A server-wide change (see ``ChangeFeed``): forward it if this session declared
        the capability (and, for ``resources/updated``, subscribed to the resource)."""
        package, engine = self.package, self.engine
        if package is None or engine is None or method not in package.dispatch.NOTIFICATIONS:
            return
        if method == RESOURCE_UPDATED and params.get("uri") not in self.subscribed_uris:
            return
        spec = package.dispatch.NOTIFICATIONS[method]
        if all(has_capability(self.own_capabilities, gate.path) for gate in spec.gates):
            self.spawn(engine.notify(method, params or None))

    @property
    def supported_versions(self) -> list[str]:
        return [p.version for p in self.packages]

    async def handle_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        chain = self.middleware
        if chain is None:
            return await self._dispatch(method, params, request_id)
        return await self.through_chain(
            chain, session_context(self, method, params, request_id),
            lambda ctx: self._dispatch(ctx.method, ctx.params, request_id),
        )

    async def on_notification(self, method: str, params: Any) -> None:
        chain = self.middleware
        if chain is None:
            return await super().on_notification(method, params)
        notify = super().on_notification
        await chain.run(
            session_context(self, method, params, None), lambda ctx: notify(ctx.method, ctx.params)
        )

    async def through_chain(self, chain: MiddlewareChain, ctx: MiddlewareContext, endpoint: Any) -> Any:
        """Run a request through ``chain``; a ToolError a middleware raises in a
        ``tools/call`` is the call's ``isError`` result."""
        try:
            return await chain.run(ctx, endpoint)
        except ToolError as error:
            if ctx.method != CALL_TOOL:
                raise
            return tool_error(str(error))

    async def _dispatch(self, method: str, params: Any, request_id: RequestId) -> Any:
        if self.package is None:
            if method == INITIALIZE:
                return await self._server_builtins.initialize(params)
            if method == PING:
                return {}
            raise RpcError(
                INVALID_REQUEST,
                f"Invalid Request: {clip(method)} before initialize; send initialize first "
                f"(or, in 2026-07-28, name the version in params._meta[{PROTOCOL_VERSION_KEY!r}])",
            )
        if method == INITIALIZE:
            raise RpcError(INVALID_REQUEST, "Invalid Request: the session is already initialized")
        if self.task_store is not None and isinstance(params, dict) and "task" in params:
            created = self.start_task(method, params, lambda: self._serve(method, params, request_id))
            if created is not None:
                await self.task_store.saved(created["task"]["taskId"])
                return created
        return await self._serve(method, params, request_id)

    async def _serve(self, method: str, params: Any, request_id: RequestId) -> Any:
        if self._synthesize_meta:
            params = self._with_modern_meta(params)
        policy, origin = self.access_policy, request_origin()
        if policy and origin is not None and origin.principal is not None:
            return await self._serve_guarded(method, params, request_id, origin.principal)
        return await self._serve_open(method, params, request_id)

    async def _serve_guarded(self, method: str, params: Any, request_id: RequestId, principal: Any) -> Any:
        """Serve a request of an authenticated caller under the access policy: a refused
        one is an error (the HTTP transports answer 403 before it gets here); a list
        leaves out what the caller may not use."""
        assert self.access_policy is not None
        refusal = self.access_policy.refusal(method, params, principal)
        if refusal is not None:
            raise RpcError(INVALID_REQUEST, refusal.message, refusal.data)
        result = await self._serve_open(method, params, request_id)
        if method in LIST_ITEMS:
            wire = to_wire(result)
            if isinstance(wire, dict):
                return self.access_policy.visible(method, wire, principal)
        return result

    async def _serve_open(self, method: str, params: Any, request_id: RequestId) -> Any:
        if method == CALL_TOOL:
            try:
                if self.validate_tools:
                    return await self._call_tool(params, request_id)
                return await super().handle_request(method, params, request_id)
            except ToolError as error:  # a failure the model should read
                return tool_error(str(error))
        if method == SUBSCRIBE:
            self._check_room_to_subscribe(params)
        result = await super().handle_request(method, params, request_id)
        if method == LIST_TOOLS:
            self.tool_schemas.update(to_wire(result).get("tools", []))
        elif method in (SUBSCRIBE, UNSUBSCRIBE) and isinstance(params, dict):
            uri = params.get("uri")
            if isinstance(uri, str):
                if method == SUBSCRIBE:
                    self.subscribed_uris.add(uri)
                else:
                    self.subscribed_uris.discard(uri)
        return result

    def _check_room_to_subscribe(self, params: Any) -> None:
        uri = params.get("uri") if isinstance(params, dict) else None
        subscribed = self.subscribed_uris  # (a uri that is no string fails validation next)
        if isinstance(uri, str) and uri not in subscribed and len(subscribed) >= MAX_SUBSCRIPTIONS_PER_SESSION:
            raise RpcError(
                INVALID_PARAMS,
                f"Invalid params: this session is subscribed to {len(subscribed)} resources, "
                "the most it may be; unsubscribe from one first",
            )

    @property
    def _synthesize_meta(self) -> bool:
        """Handlers typed with a stateless-era revision serving a handshake session expect
        the per-request ``_meta`` of their era: the runtime fills it from the session."""
        own, package = self.own_package, self.package
        return own is not None and package is not None and own.era != package.era == "handshake"

    def _with_modern_meta(self, params: Any) -> Any:
        assert self.package is not None
        params = dict(params) if isinstance(params, dict) else {}
        meta = dict(params.get("_meta") or {})
        meta.setdefault(PROTOCOL_VERSION_KEY, self.package.version)
        meta.setdefault(CLIENT_CAPABILITIES_KEY, self.peer_capabilities)
        if self.client_info:
            meta.setdefault(CLIENT_INFO_KEY, self.client_info)
        if self.log_level is not None:
            meta.setdefault(LOG_LEVEL_KEY, self.log_level)
        params["_meta"] = meta
        return params

    def _list_params(self, cursor: str | None) -> Any:
        params: dict[str, Any] | None = {"cursor": cursor} if cursor else None
        return self._with_modern_meta(params) if self._synthesize_meta else params

    async def _call_tool(self, params: Any, request_id: RequestId) -> Any:
        """Check arguments against the tool's inputSchema, and structured output against its
        outputSchema (the tool list comes from the server's own list_tools handler). A tool
        that is not listed goes to the handler unchecked: it decides what "unknown" means."""
        name = params.get("name") if isinstance(params, dict) else None
        if not isinstance(name, str):
            return await super().handle_request(CALL_TOOL, params, request_id)
        tool = self.tool_schemas.tools.get(name)
        if tool is None and not self._listed:
            await self._load_tool_schemas()
            tool = self.tool_schemas.tools.get(name)
        if tool is not None:
            found = self.tool_schemas.check(name, "inputSchema", params.get("arguments") or {})
            if found:
                message = f"Invalid arguments for tool {name}: " + "; ".join(found)
                assert self.package is not None
                if self.package.version >= ARGUMENT_ERRORS_AS_RESULTS_SINCE:
                    return tool_error(message)
                raise RpcError(INVALID_PARAMS, message)
        result = await super().handle_request(CALL_TOOL, params, request_id)
        if tool is not None and tool.get("outputSchema") is not None:
            self._check_structured_output(name, result)
        return result

    async def _load_tool_schemas(self) -> None:
        self._listed = True  # once; a tools/list served later refreshes the schemas
        handler = self.handler("list_tools")
        if handler is None or self.package is None:
            return
        spec = self.own_spec(self.package.dispatch.REQUESTS[LIST_TOOLS], "request")
        cursor = None
        for _page in range(100):
            params = spec.validate_params(self._list_params(cursor))
            returned = await handler(params, self.context(None, None))
            self.check_result(spec, handler, returned)
            listed = to_wire(returned)
            self.tool_schemas.update(listed.get("tools", []))
            cursor = listed.get("nextCursor")
            if not cursor:
                return

    def _check_structured_output(self, name: str, result: Any) -> None:
        if isinstance(result, OutputChecked):
            return  # validated and dumped by the types its outputSchema came from
        if self.tool_schemas.tools.get(name, {}).get("outputSchema") is None:
            return
        assert self.package is not None
        if "structured_content" not in self.package.models.CallToolResult.__pydantic_fields__:
            return  # the negotiated revision has no structured output (before 2025-06-18)
        structured = getattr(result, "structured_content", None)  # (a model's, before its dump)
        if (
            type(structured) is dict
            and not getattr(result, "is_error", None)
            and not self.tool_schemas.check(name, "outputSchema", structured)
        ):
            return  # valid as the handler gave it (its wire form is then valid too)
        wire = to_wire(result)
        if not isinstance(wire, dict) or wire.get("isError"):
            return
        if "structuredContent" not in wire:
            logger.error("tool %s declares an outputSchema but returned no structuredContent", name)
            raise RpcError(INTERNAL_ERROR, "Internal error")
        found = self.tool_schemas.check(name, "outputSchema", wire["structuredContent"])
        if found:
            logger.error("tool %s: structuredContent breaks its outputSchema: %s", name, found)
            raise RpcError(INTERNAL_ERROR, "Internal error")

    async def _initialize(self, params: Any) -> dict[str, Any]:
        newest = self.packages[0]
        requested = params.get("protocolVersion") if isinstance(params, dict) else None
        if not isinstance(requested, str):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: initialize needs a string protocolVersion",
                {"supported": self.supported_versions},
            )
        package = next((p for p in self.packages if p.version == requested), newest)
        try:
            typed = package.dispatch.REQUESTS[INITIALIZE].validate_params(params)
        except ValidationError as error:
            raise RpcError(INVALID_PARAMS, f"Invalid params for initialize: {describe(error)}") from None
        self.package = package
        self.peer_capabilities = to_wire(typed.capabilities) or {}
        self.client_info = to_wire(typed.client_info) or {}
        self.derive_capabilities(package, self.list_changed)
        self.peer = self._peer_class(self)
        result: dict[str, Any] = {
            "protocolVersion": package.version,
            "capabilities": self.own_capabilities,
            "serverInfo": self.server_info,
        }
        if self.instructions and "instructions" in package.models.InitializeResult.model_fields:
            result["instructions"] = self.instructions
        return result
