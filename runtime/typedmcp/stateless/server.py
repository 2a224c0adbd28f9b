"""The stateless era (2026-07-28) on the server: every request describes itself.

No handshake and no session: each request's ``_meta`` carries the protocol version and the
client's capabilities, and nothing is remembered between requests. The same handler object
that serves handshake-era sessions serves these requests:

* ``ctx.peer.create_message(...)`` / ``elicit`` / ``list_roots`` inside ``tools/call``,
  ``resources/read`` or ``prompts/get`` become a multi round-trip request: the handler is
  unwound, the client gets an ``InputRequiredResult`` whose ``requestState`` is sealed
  (HMAC, bound to the method, the tool/prompt/resource, a digest of the arguments, the
  principal, an expiry; single-use on demand), and when the client retries with
  ``inputResponses`` the handler runs again and each such call returns its answer. Code
  before the first unanswered call therefore runs once per round.
* ``ctx.report_progress`` and ``ctx.log`` go on the request's own stream (log messages only
  when the request set a log level).
* list_changed and ``resources/updated`` notifications go to ``subscriptions/listen``
  streams through a :class:`ChangeFeed`, filtered by what each stream opted into.
* Results get ``resultType``, caching hints (``ttlMs``/``cacheScope``) and ``serverInfo``
  in ``_meta`` when the handler left them out.

The sealing of ``requestState`` is in ``sealing``, what one request knows while its handler
runs in ``scope``, and the dispatcher that puts both eras on one engine in ``router``.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from ..engine.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CapabilityError,
    RequestId,
    RpcError,
    quoted,
)
from ..protocol import telemetry
from ..protocol.capabilities import declare, has_capability, require_client_capabilities
from ..protocol.extensions import TASKS_EXTENSION
from ..protocol.feed import CHANGE_NOTIFICATIONS, RESOURCE_UPDATED, ChangeFeed
from ..protocol.meta import (
    ACKNOWLEDGED,
    CLIENT_CAPABILITIES_KEY,
    COMPLETE,
    INPUT_REQUEST_METHODS,
    INPUT_REQUIRED,
    INPUT_REQUIRED_METHODS,
    LOG_LEVEL_KEY,
    NAME_PARAM,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from ..protocol.packages import ProtocolPackage, generated_beside, package_of, severity
from ..protocol.results import describe, plain, to_wire, validate_any_result
from ..protocol.server import ServerSession
from ..protocol.stubs import RequestContext
from .chain import serve_through_chain
from .scope import Emit, InputRequired, RequestScope, _input_key, _scope, current_scope
from ..protocol.skills import SKILL_METHODS, served_skills
from .tasks import TASK_METHODS, TaskRegistry, TaskStarted, watch_tasks
from .sealing import (
    DEFAULT_STATE_TTL,
    MemoryUsedStates,
    StateSealer,
    UsedStates,
    arguments_digest,
    principal_tag,
)

logger = logging.getLogger("typedmcp")

#: Short names of input requests, used in ``inputRequests`` keys (``sampling-1``).
INPUT_KIND = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
#: listen filter field -> (notification method, server capability that must be declared)
LIST_CHANGED_FILTERS = {
    "toolsListChanged": ("notifications/tools/list_changed", ("tools", "listChanged")),
    "promptsListChanged": ("notifications/prompts/list_changed", ("prompts", "listChanged")),
    "resourcesListChanged": (
        "notifications/resources/list_changed",
        ("resources", "listChanged"),
    ),
}

#: Error codes retired in 2026-07-28 (MUST NOT be emitted) -> the code that replaces them.
RETIRED_CODES = {-32002: INVALID_PARAMS}  # resource not found is invalid params (SEP-2164)


# -- input requests -------------------------------------------------------------------------


class InputSender:
    """The sender behind ``ctx.peer`` in a stateless request: server-to-client requests
    become input requests of a multi round-trip result; notifications go to the request's
    stream (progress, log) or to the change feed (list_changed, resources/updated)."""

    __slots__ = ("protocol_version", "scope", "server")

    def __init__(self, server: StatelessServer, scope: RequestScope) -> None:
        self.server = server
        self.scope = scope
        self.protocol_version = server.package.version if server.package else None

    @property
    def peer_capabilities(self) -> dict[str, Any]:
        return self.scope.client_capabilities

    async def send_request(
        self, spec: Any, params: Mapping[str, Any] | None, timeout: float | None = None,
        options: Any = None,
    ) -> Any:
        # (``timeout`` and ``options`` do not apply: an input request is answered by the
        # client's retry of the request being served, within that request's own time)
        scope, server = self.scope, self.server
        method = spec.method
        if method not in INPUT_REQUEST_METHODS:
            raise CapabilityError(f"cannot send {method}: servers send no requests in 2026-07-28")
        if scope.method not in INPUT_REQUIRED_METHODS:
            raise CapabilityError(
                f"cannot ask for {method} while serving {scope.method}: only "
                f"{', '.join(sorted(INPUT_REQUIRED_METHODS))} may ask the client for input"
            )
        assert server.package is not None
        negotiated = server.package.dispatch.REQUESTS[method]
        wire = plain(dict(params)) if params else {}
        require_client_capabilities(self.scope.client_capabilities, method, negotiated, wire)
        negotiated.validate_params(wire)
        scope.calls += 1
        key = _input_key.get() or f"{INPUT_KIND[method]}-{scope.calls}"
        if key in scope.used:
            raise CapabilityError(f"input key {quoted(key)} is used twice in one request")
        scope.used.add(key)
        if key not in scope.answers and scope.task is not None:  # a task waits (tasks/update)
            scope.answers[key] = await scope.task.ask(key, {"method": method, "params": wire})
        if key in scope.answers:
            try:
                return validate_any_result(server.own_spec(negotiated, "request"), scope.answers[key])
            except ValidationError as error:
                raise RpcError(
                    INVALID_PARAMS,
                    f"Invalid params: inputResponses[{quoted(key)}] is not a valid answer to "
                    f"{method}: {describe(error)}",
                ) from None
        scope.asked[key] = {"method": method, "params": wire}
        raise InputRequired

    async def send_notification(self, spec: Any, params: Mapping[str, Any] | None) -> None:
        method = spec.method
        wire = plain(dict(params)) if params else {}
        if method in CHANGE_NOTIFICATIONS:
            self.server.changes.publish(method, wire)
        elif method == "notifications/progress":
            await self.scope.emit(method, wire)
        elif method == "notifications/message":
            level = wire.get("level")
            if isinstance(level, str) and self.server.log_allowed(self.scope, level):
                await self.scope.emit(method, wire)
        else:
            raise CapabilityError(f"cannot send {method} from a request handler in 2026-07-28")


# -- the server -----------------------------------------------------------------------------


def stateless_packages(handlers: object) -> list[ProtocolPackage]:
    """Stateless-era revisions generated beside the handlers' own package, newest first."""
    return [p for p in generated_beside(package_of(handlers)) if p.era == "stateless"]


@dataclass(frozen=True)
class CachePolicy:
    """Caching hints put on cacheable results that do not set their own."""

    ttl_ms: int = 0
    scope: str = "private"
    per_method: Mapping[str, tuple[int, str]] = field(default_factory=dict)

    def hints(self, method: str) -> tuple[int, str]:
        return self.per_method.get(method, (self.ttl_ms, self.scope))


class StatelessServer(ServerSession):
    """Serves stateless-era requests with a handler object; holds no per-client state."""

    def __init__(
        self,
        handlers: object,
        *,
        packages: Sequence[ProtocolPackage | ModuleType] | None = None,
        changes: ChangeFeed | None = None,
        state_key: bytes | str | None = None,
        state_keys: list[bytes] | None = None,
        state_ttl: float = DEFAULT_STATE_TTL,
        cache: CachePolicy | None = None,
        server_info_in_results: bool = True,
        resource_subscriptions: bool = False,
        single_use_state: bool = False,
        used_states: UsedStates | None = None,
        task_registry: TaskRegistry | None = None,
        **options: Any,
    ) -> None:
        modern = (
            [ProtocolPackage.of(p) for p in packages] if packages else stateless_packages(handlers)
        )
        if not modern:
            raise ValueError("no stateless-era (2026-07-28) package is generated beside the handlers")
        super().__init__(handlers, packages=modern, **options)
        self._versions = tuple(p.version for p in modern)
        self.package = modern[0]
        self.changes = changes or ChangeFeed()
        self.sealer = StateSealer(state_key, state_ttl, keys=state_keys)
        self.single_use_state = single_use_state
        self.used_states: UsedStates = used_states if used_states is not None else MemoryUsedStates()
        self.cache = cache or CachePolicy()
        self.server_info_in_results = server_info_in_results
        self.builtins = StatelessBuiltins(self)
        #: The tasks extension's tasks (SEP-2663), when the server declares it.
        #: ``task_registry=``: where they live (``RedisTaskRegistry``: shared by workers).
        self.task_registry = (task_registry or TaskRegistry()) if TASKS_EXTENSION in self.extensions else None
        self.derive_capabilities(self.package, self.list_changed)
        if has_capability(self.own_capabilities, ("resources",)) and (
            resource_subscriptions or self._user_handler("subscribe") is not None
        ):
            declare(self.own_capabilities, ("resources", "subscribe"), self._capabilities_model)
        self.initialized = True
        self._cacheable = frozenset(
            spec.method
            for spec in self.package.dispatch.REQUESTS.values()
            if {"ttl_ms", "cache_scope"} <= set(getattr(spec.result_type, "model_fields", {}))
        )
        self._closed = False
        self._listens: set[asyncio.Queue[tuple[str, dict[str, Any]] | None]] = set()

    @property
    def _capabilities_model(self) -> Any:
        assert self.package is not None
        return getattr(self.package.models, "ServerCapabilities", None)

    def derive_capabilities(self, package: ProtocolPackage, list_changed: Iterable[str]) -> None:
        super().derive_capabilities(package, list_changed)
        if "notifications/message" in package.dispatch.NOTIFICATIONS:
            # ctx.log works in every handler; a request opts in with its log level
            declare(self.own_capabilities, ("logging",), self._capabilities_model)

    @property
    def supported_versions(self) -> list[str]:
        return list(self._versions)

    def close(self) -> None:
        """End open ``subscriptions/listen`` streams gracefully (final result), and any
        opened later at once."""
        self._closed = True
        if self.task_registry is not None:
            self.task_registry.close()
        self.end_listens()
        super().close()

    def end_listens(self) -> None:
        """End the open ``subscriptions/listen`` streams gracefully (their final result):
        the server closes, or the connection they came on has no more input (stdio)."""
        for queue in self._listens:
            queue.put_nowait(None)

    # -- request pipeline ------------------------------------------------------------------

    def checked_meta(self, params: Any) -> dict[str, Any]:
        """The request's ``_meta`` once :meth:`check_meta` and :meth:`check_version` pass
        (a well-formed request passes one quick test; anything else gets the checks, in
        order, with their errors)."""
        meta = params.get("_meta") if type(params) is dict else None
        if (
            type(meta) is dict
            and meta.get(PROTOCOL_VERSION_KEY) in self._versions
            and type(meta.get(CLIENT_CAPABILITIES_KEY)) is dict
            and LOG_LEVEL_KEY not in meta
        ):
            return meta
        meta = self.check_meta(params)
        self.check_version(meta)
        return meta

    def check_meta(self, params: Any) -> dict[str, Any]:
        """The request's ``_meta``; -32602 if it lacks what every request must carry."""
        meta = params.get("_meta") if isinstance(params, dict) else None
        if not isinstance(meta, dict):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: _meta is missing; 2026-07-28 requests carry "
                f"{PROTOCOL_VERSION_KEY} and {CLIENT_CAPABILITIES_KEY} in params._meta",
            )
        for key, kind in ((PROTOCOL_VERSION_KEY, str), (CLIENT_CAPABILITIES_KEY, dict)):
            if not isinstance(meta.get(key), kind):
                what = "is missing" if key not in meta else f"must be {'a string' if kind is str else 'an object'}"
                raise RpcError(INVALID_PARAMS, f"Invalid params: _meta[{quoted(key)}] {what}")
        level = meta.get(LOG_LEVEL_KEY)
        if level is not None and level not in self.package.log_levels():  # type: ignore[union-attr]
            raise RpcError(INVALID_PARAMS, f"Invalid params: unknown log level {quoted(level)}")
        return meta

    def check_version(self, meta: Mapping[str, Any]) -> None:
        requested = meta[PROTOCOL_VERSION_KEY]
        if requested not in self._versions:
            raise RpcError(
                UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported protocol version {quoted(requested)}; this server supports "
                f"{', '.join(self.supported_versions)}",
                {"supported": self.supported_versions, "requested": requested},
            )

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        """Engine entry (stdio, in-process): notifications go out on the connection."""
        return await self.serve_request(method, params, request_id, self._notify)

    async def _notify(self, method: str, params: Any) -> None:
        if self.engine is not None:
            await self.engine.notify(method, params)

    async def serve_request(
        self, method: str, params: Any, request_id: RequestId, emit: Emit, *,
        principal: Any = None, checked: bool = False, json_ready: bool = False,
    ) -> Any:
        """Serve one request; ``emit`` sends its request-scoped notifications.

        ``checked``: the caller (HTTP) already ran the _meta and version checks.
        ``json_ready``: the answer is handed over as is, with no encoding step after it
        (``connect_direct``), so it must already be plain JSON data. Telemetry
        (``protocol/telemetry``), then the middleware chain (:func:`serve_through_chain`),
        run around it all."""
        traced = telemetry.active()
        if traced is None:
            return await serve_through_chain(self, method, params, request_id, emit, principal, checked, json_ready)
        return await traced.serve(self, method, params, request_id, lambda m, p, i: serve_through_chain(
            self, m, p, i, emit, principal, checked, json_ready))

    async def _serve_request(
        self, method: str, params: Any, request_id: RequestId, emit: Emit,
        principal: Any, checked: bool, json_ready: bool,
    ) -> Any:
        meta = params["_meta"] if checked else self.checked_meta(params)
        if method in TASK_METHODS and self.task_registry is not None:  # the tasks extension
            return self._with_server_info(await self.task_registry.serve(method, params, principal))
        if method in SKILL_METHODS and (skills := served_skills(self.handlers)) is not None:
            ttl_ms, cache_scope = self.cache.hints(method)
            answer = {"resultType": COMPLETE, **skills.serve(method, params), "ttlMs": ttl_ms, "cacheScope": cache_scope}
            return self._with_server_info(answer)
        self.route(method)  # -32601 before anything else happens
        scope = RequestScope(method, request_id, meta, emit, principal)
        scope.tasks = self.task_registry
        if method in INPUT_REQUIRED_METHODS:
            scope.name = params.get(NAME_PARAM[method])
            scope.arguments = params.get("arguments")
            scope.single_use = self.single_use_state
            if "inputResponses" in params or "requestState" in params:  # a retry
                params = await self._resume(scope, params)
        token = _scope.set(scope)
        try:
            try:
                result = await self._serve(method, params, request_id)
            except InputRequired:
                return self._input_required(scope, params)
            except TaskStarted as started:
                return self._with_server_info(started.created)
            except RpcError as error:
                if error.code in RETIRED_CODES:
                    raise RpcError(RETIRED_CODES[error.code], error.message, error.data) from None
                raise
            return self.finish(method, result, scope, json_ready=json_ready)
        finally:
            _scope.reset(token)

    async def _resume(self, scope: RequestScope, params: dict[str, Any]) -> dict[str, Any]:
        """Load the answers of earlier rounds from a retry's sealed requestState, and this
        round's from ``inputResponses`` (without a requestState: answers to a first round
        whose state the client dropped, or to keys the handler asks for by name).

        The state must have been issued for this very request (method, name, arguments,
        principal); a single-use state is claimed here, once."""
        responses = params.get("inputResponses")
        if responses is not None and not isinstance(responses, dict):
            raise RpcError(INVALID_PARAMS, "Invalid params: inputResponses must be an object")
        sealed = params.get("requestState")
        if sealed is None:
            scope.answers = dict(responses or {})  # the handler takes the keys it asks for
            return params
        state = self.sealer.open(sealed)
        if (
            state.get("m") != scope.method
            or state.get("n") != scope.name
            or state.get("p") != principal_tag(scope.principal)
            or state.get("d") != arguments_digest(scope.arguments)
        ):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: requestState belongs to another request; "
                "retry without requestState and inputResponses",
            )
        if "i" in state:  # single-use: this retry uses it up (and its successors are too)
            scope.single_use = True
            if not await self.used_states.claim(state["i"], float(state["x"])):
                raise RpcError(
                    INVALID_PARAMS,
                    "Invalid params: requestState was already used; "
                    "retry the request without requestState and inputResponses",
                )
        answers = dict(state.get("a") or {})
        if responses:
            expected = set(state.get("k") or ())
            answers.update((k, v) for k, v in responses.items() if k in expected)  # extras ignored
        scope.answers = answers
        scope.resumed = True
        if "u" in state:  # the handler's own requestState, verified by our seal
            return {**params, "requestState": state["u"]}
        return {k: v for k, v in params.items() if k != "requestState"}

    def _state(
        self, scope: RequestScope, answers: dict[str, Any], keys: Iterable[str]
    ) -> dict[str, Any]:
        """What a sealed requestState holds: the request it belongs to, the answers so far,
        the keys asked for, and (single-use) an id to claim it by."""
        state = {
            "m": scope.method,
            "n": scope.name,
            "d": arguments_digest(scope.arguments),
            "p": principal_tag(scope.principal),
            "a": answers,
            "k": sorted(keys),
        }
        if scope.single_use:
            state["i"] = secrets.token_urlsafe(12)
        return state

    def _input_required(self, scope: RequestScope, params: dict[str, Any]) -> dict[str, Any]:
        # the answers this run used (stray inputResponses are not carried forward)
        state = self._state(
            scope, {k: v for k, v in scope.answers.items() if k in scope.used}, scope.asked
        )
        result: dict[str, Any] = {
            "resultType": INPUT_REQUIRED,
            "inputRequests": scope.asked,
            "requestState": self.sealer.seal(state),
        }
        return self._with_server_info(result)

    def finish(
        self,
        method: str,
        result: Any,
        scope: RequestScope | None = None,
        *,
        json_ready: bool = False,
    ) -> Any:
        """Fill what a complete 2026-07-28 result must carry and the handler left out.

        A model is dumped to wire data; plain data a handler returned is copied (made
        JSON-ready with ``json_ready``), never changed in place.
        """
        if isinstance(result, BaseModel):  # to_wire(result), inlined: every result comes here
            wire = result.__pydantic_serializer__.to_python(
                result, mode="json", by_alias=True, exclude_unset=True
            )
        elif json_ready:
            wire = to_jsonable_python(result)
        elif isinstance(result, dict):
            wire = dict(result)
        else:
            return result
        if not isinstance(wire, dict):
            return wire
        result_type = wire.setdefault("resultType", COMPLETE)
        if result_type == INPUT_REQUIRED:
            return self._seal_handler_state(wire, scope)
        if method in self._cacheable:
            ttl_ms, cache_scope = self.cache.hints(method)
            wire.setdefault("ttlMs", ttl_ms)
            wire.setdefault("cacheScope", cache_scope)
        return self._with_server_info(wire)

    def _seal_handler_state(self, wire: dict[str, Any], scope: RequestScope | None) -> dict[str, Any]:
        """A handler that returned its own InputRequiredResult: its requestState travels
        inside our seal, so the client cannot alter it either."""
        if scope is None or scope.method not in INPUT_REQUIRED_METHODS:
            logger.error(
                "a handler returned an input_required result outside %s",
                ", ".join(sorted(INPUT_REQUIRED_METHODS)),
            )
            raise RpcError(INTERNAL_ERROR, "Internal error")
        state = self._state(scope, {}, (wire.get("inputRequests") or {}).keys())
        if "requestState" in wire:
            state["u"] = wire["requestState"]
        wire["requestState"] = self.sealer.seal(state)
        wire.pop("ttlMs", None)
        wire.pop("cacheScope", None)
        return self._with_server_info(wire)

    def _with_server_info(self, wire: dict[str, Any]) -> dict[str, Any]:
        if self.server_info_in_results:
            meta = wire.get("_meta")
            wire["_meta"] = {**(meta if isinstance(meta, dict) else {}), SERVER_INFO_KEY: self.server_info}
        return wire

    # -- context: peer, progress and log go through the request's scope -------------------

    def context(self, request_id: RequestId | None, params: Any) -> RequestContext[Any]:
        scope = _scope.get(None)
        meta = params.get("_meta") if isinstance(params, dict) else None
        return RequestContext(
            None,
            request_id,
            meta if isinstance(meta, dict) else {},
            self,
            make_peer=None if scope is None else lambda: self._peer_class(InputSender(self, scope)),
        )

    async def report_progress(
        self, context: RequestContext[Any], progress: float, total: float | None, message: str | None
    ) -> None:
        scope = _scope.get(None)
        if scope is None:
            return
        params = context.progress_note(progress, total, message)
        if params is not None:
            await scope.emit("notifications/progress", params)

    def log_allowed(self, scope: RequestScope, level: str) -> bool:
        threshold = scope.log_level
        return threshold is not None and severity(level) >= severity(threshold)

    async def log(
        self, context: RequestContext[Any], level: str, data: Any, logger_name: str | None
    ) -> None:
        scope = _scope.get(None)
        assert self.package is not None
        if scope is None or level not in self.package.log_levels() or not self.log_allowed(scope, level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        await scope.emit("notifications/message", params)

    def _list_params(self, cursor: str | None) -> dict[str, Any]:
        scope = _scope.get(None)
        params: dict[str, Any] = {"_meta": scope.meta if scope else {}}
        if cursor:
            params["cursor"] = cursor
        return params


class StatelessBuiltins:
    """What the runtime answers itself in the stateless era: discovery and listen streams."""

    def __init__(self, server: StatelessServer) -> None:
        self.server = server

    async def discover(self, params: Any, ctx: RequestContext[Any]) -> dict[str, Any]:
        """The runtime answers ``server/discover``: its capabilities come from your handlers,
        its ``serverInfo`` and ``instructions`` from the ``server_info=`` and
        ``instructions=`` options of ``run_stdio``/``http_app``."""
        server = self.server
        result: dict[str, Any] = {
            "supportedVersions": server.supported_versions,
            "capabilities": server.own_capabilities,
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return result

    async def subscriptions_listen(self, params: Any, ctx: RequestContext[Any]) -> dict[str, Any]:
        """The runtime serves listen streams: publish a change with
        ``ctx.peer.send_tool_list_changed()`` (or a ``ChangeFeed``'s ``tools_changed()``) and
        it reaches every stream that asked for it.

        Acknowledge what of the filter this server honours, then forward matching changes
        (tagged with the subscription id) until the client cancels or the server closes."""
        server = self.server
        scope = current_scope()
        wanted = to_wire(getattr(params, "notifications", None)) or {}
        honoured: dict[str, Any] = {}
        methods: set[str] = set()
        for name, (method, capability) in LIST_CHANGED_FILTERS.items():
            if wanted.get(name) is True and has_capability(server.own_capabilities, capability):
                honoured[name] = True
                methods.add(method)
        uris: set[str] = set()
        requested = wanted.get("resourceSubscriptions")
        if isinstance(requested, list) and has_capability(
            server.own_capabilities, ("resources", "subscribe")
        ):
            uris = {uri for uri in requested if isinstance(uri, str)}
            honoured["resourceSubscriptions"] = sorted(uris)
        tag = {SUBSCRIPTION_ID_KEY: scope.request_id}
        # changes, then None when the stream ends (see StatelessServer.end_listens); read by
        # this handler itself, so a cancelled stream leaves nothing waiting behind it
        queue: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()
        # (method, uri) of the changes in the queue: a change says only that something
        # changed, so one already waiting is not queued again (a client that does not read
        # holds at most one per kind, not one per change)
        waiting: set[tuple[str, Any]] = set()

        def listener(method: str, change: dict[str, Any]) -> None:
            uri = change.get("uri")
            if method in methods or (method == RESOURCE_UPDATED and isinstance(uri, str) and uri in uris):
                key = (method, uri if isinstance(uri, str) else None)
                if key not in waiting:
                    waiting.add(key)
                    queue.put_nowait((method, change))

        unwatch = watch_tasks(server.task_registry, scope, wanted.get("taskIds"), honoured, queue.put_nowait)
        unsubscribe = server.changes.subscribe(listener)
        server._listens.add(queue)
        if server._closed:
            queue.put_nowait(None)
        try:
            await scope.emit(ACKNOWLEDGED, {"notifications": honoured, "_meta": tag})
            while (item := await queue.get()) is not None:
                method, change = item
                uri = change.get("uri")
                waiting.discard((method, uri if isinstance(uri, str) else None))
                meta = change.get("_meta")
                await scope.emit(
                    method, {**change, "_meta": {**(meta if isinstance(meta, dict) else {}), **tag}}
                )
        finally:
            server._listens.discard(queue)
            unsubscribe()
            unwatch()
        return {"_meta": tag}
