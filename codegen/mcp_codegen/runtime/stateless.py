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
"""

from __future__ import annotations

import asyncio
import base64
import contextvars
import hashlib
import heapq
import hmac
import json
import logging
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from .jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, RequestId, RpcError, quoted
from .modern import (
    modern_meta,
    ACKNOWLEDGED,
    CLIENT_CAPABILITIES_KEY,
    COMPLETE,
    DISCOVER,
    INPUT_REQUEST_METHODS,
    INPUT_REQUIRED,
    INPUT_REQUIRED_METHODS,
    LOG_LEVEL_KEY,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    NAME_PARAM,
    PROTOCOL_VERSION_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .server import CHANGE_NOTIFICATIONS, RESOURCE_UPDATED, ServerSession
from .session import (
    generated_beside,
    CapabilityError,
    ProtocolPackage,
    declare,
    describe,
    has_capability,
    unmet_capability,
    json_data,
    package_of,
    plain,
    severity,
    to_wire,
    validate_any_result,
)
from .stubs import RequestContext

logger = logging.getLogger("mcp_codegen.runtime")

#: Environment variable holding the key that seals ``requestState`` (shared by workers).
STATE_KEY_ENV = "MCP_REQUEST_STATE_KEY"
DEFAULT_STATE_TTL = 600.0
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

Emit = Callable[[str, Any], Awaitable[None]]
T = TypeVar("T")
#: Error codes retired in 2026-07-28 (MUST NOT be emitted) -> the code that replaces them.
RETIRED_CODES = {-32002: INVALID_PARAMS}  # resource not found is invalid params (SEP-2164)


class InputRequired(BaseException):
    """Unwinds a handler that asked the client for input it has not given yet.

    A BaseException, like cancellation, so ``except Exception`` in handler code does not
    swallow it.
    """


# -- requestState ---------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class StateSealer:
    """Seals ``requestState`` so a client can carry it but not change it.

    The key comes from ``key``, else the ``MCP_REQUEST_STATE_KEY`` environment variable,
    else a random per-process key. Several workers behind one endpoint must share a key
    (set the variable), or a retry that lands on another worker is rejected.
    """

    def __init__(self, key: bytes | str | None = None, ttl: float = DEFAULT_STATE_TTL) -> None:
        if key is None:
            key = os.environ.get(STATE_KEY_ENV) or secrets.token_bytes(32)
        self.key = key.encode("utf-8") if isinstance(key, str) else key
        self.ttl = ttl

    def seal(self, payload: Mapping[str, Any]) -> str:
        body = _b64(json.dumps({**payload, "x": int(time.time() + self.ttl)},
                               separators=(",", ":")).encode("utf-8"))
        return body + "." + _b64(hmac.new(self.key, body.encode("ascii"), hashlib.sha256).digest())

    def open(self, token: Any) -> dict[str, Any]:
        """The payload of a sealed state; RpcError(-32602) if it was altered or expired."""
        body, _, tag = token.partition(".") if isinstance(token, str) else ("", "", "")
        expected = _b64(hmac.new(self.key, body.encode("ascii", "replace"), hashlib.sha256).digest())
        if not body or not hmac.compare_digest(tag.encode("utf-8"), expected.encode("ascii")):
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: requestState failed its integrity check; "
                "retry the request without requestState and inputResponses",
            )
        payload = json.loads(_unb64(body))
        if not isinstance(payload, dict) or payload.get("x", 0) < time.time():
            raise RpcError(
                INVALID_PARAMS,
                "Invalid params: requestState has expired; "
                "retry the request without requestState and inputResponses",
            )
        return payload


def arguments_digest(arguments: Any) -> str:
    """A short digest of a request's ``arguments`` that a sealed state is bound to: key
    order and spacing do not matter, any changed value does."""
    try:
        canonical = json.dumps(
            {} if arguments is None else arguments,
            sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr,
        )
    except (TypeError, ValueError):  # keys of mixed types (connect_direct hands objects over)
        canonical = repr(arguments)
    return _b64(hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).digest()[:16])


@runtime_checkable
class UsedStates(Protocol):
    """Where a server remembers the single-use ``requestState`` values already used.

    :class:`MemoryUsedStates` is the default; workers behind one endpoint need one shared
    store instead (with Redis, ``claim`` is ``SET <state_id> 1 NX EXAT <expires_at>``).
    """

    async def claim(self, state_id: str, expires_at: float) -> bool:
        """True the first time ``state_id`` is claimed, False after that (or when the use
        cannot be recorded). The record may go at ``expires_at`` (Unix time), when the
        state itself expires."""
        ...


class MemoryUsedStates:
    """The used single-use states of this process, each kept until its state expires, at
    most ``max_entries`` of them: when full, new claims are refused (the client starts
    the request over) rather than an unexpired record forgotten."""

    def __init__(self, max_entries: int = 100_000, clock: Callable[[], float] = time.time) -> None:
        self.max_entries = max_entries
        self.clock = clock
        self._expiry: dict[str, float] = {}
        self._by_expiry: list[tuple[float, str]] = []  # a heap
        self._warned = False

    def __len__(self) -> int:
        return len(self._expiry)

    async def claim(self, state_id: str, expires_at: float) -> bool:
        now = self.clock()
        heap = self._by_expiry
        while heap and heap[0][0] < now:
            del self._expiry[heapq.heappop(heap)[1]]
        if state_id in self._expiry:
            return False
        if len(self._expiry) >= self.max_entries:
            if not self._warned:
                logger.warning(
                    "%d single-use requestStates are in use; refusing new ones until some "
                    "expire (raise max_entries or shorten state_ttl)", len(self._expiry),
                )
                self._warned = True
            return False
        self._warned = False
        self._expiry[state_id] = expires_at
        heapq.heappush(heap, (expires_at, state_id))
        return True


def principal_tag(principal: Any) -> str | None:
    """A short, stable fingerprint of an authenticated principal (None: anonymous)."""
    if principal is None:
        return None
    return hashlib.sha256(repr(principal).encode("utf-8")).hexdigest()[:16]


# -- change feed ----------------------------------------------------------------------------


class ChangeFeed:
    """Server-wide change notifications (list_changed, ``resources/updated``).

    Publish here; every ``subscriptions/listen`` stream that opted in receives it (2026-07-28),
    and so does every handshake-era session that declared the capability.
    """

    def __init__(self) -> None:
        self._listeners: dict[Callable[[str, dict[str, Any]], None], object] = {}

    def subscribe(
        self, listener: Callable[[str, dict[str, Any]], None], owner: object = None
    ) -> Callable[[], None]:
        """Call ``listener(method, params)`` for each change; returns the unsubscribe.
        ``owner`` does not hear the changes it publishes itself (see :meth:`publish`)."""
        self._listeners[listener] = owner

        def unsubscribe() -> None:
            self._listeners.pop(listener, None)

        return unsubscribe

    def publish(
        self, method: str, params: Mapping[str, Any] | None = None, *, origin: object = None
    ) -> None:
        """Tell every listener, except those owned by ``origin`` (a session that already
        sent the notification to its own client). Each listener runs in an empty context:
        nothing of the publishing request (its stream, its scope) follows the change into
        work done for another session."""
        for listener, owner in list(self._listeners.items()):
            if origin is None or owner is not origin:
                contextvars.Context().run(listener, method, dict(params or {}))

    def tools_changed(self) -> None:
        self.publish("notifications/tools/list_changed")

    def prompts_changed(self) -> None:
        self.publish("notifications/prompts/list_changed")

    def resources_changed(self) -> None:
        self.publish("notifications/resources/list_changed")

    def resource_updated(self, uri: str) -> None:
        self.publish(RESOURCE_UPDATED, {"uri": uri})


# -- per-request scope ----------------------------------------------------------------------


class RequestScope:
    """What one stateless request knows: its own _meta, its stream, its MRTR answers."""

    __slots__ = (
        "answers", "arguments", "asked", "calls", "emit", "meta", "method", "name",
        "principal", "request_id", "resumed", "single_use", "used",
    )

    def __init__(
        self,
        method: str,
        request_id: RequestId,
        meta: dict[str, Any],
        emit: Emit,
        principal: Any = None,
    ) -> None:
        self.method = method
        self.request_id = request_id
        self.meta = meta
        self.emit = emit
        self.principal = principal
        self.name: Any = None  # params.name / params.uri of the three input-required methods
        self.arguments: Any = None  # and their params.arguments (a state is bound to both)
        self.single_use = False  # the requestState this request gets can be used once
        self.answers: dict[str, Any] = {}
        self.asked: dict[str, dict[str, Any]] = {}
        self.used: set[str] = set()  # input keys used by this run of the handler
        self.calls = 0
        self.resumed = False  # a requestState came with the request and passed its check

    @property
    def client_capabilities(self) -> dict[str, Any]:
        capabilities = self.meta.get(CLIENT_CAPABILITIES_KEY)
        return capabilities if isinstance(capabilities, dict) else {}

    @property
    def log_level(self) -> str | None:
        level = self.meta.get(LOG_LEVEL_KEY)
        return level if isinstance(level, str) else None


_scope: contextvars.ContextVar[RequestScope] = contextvars.ContextVar("mcp_request_scope")


def current_scope() -> RequestScope:
    """The stateless request being served by the calling task."""
    try:
        return _scope.get()
    except LookupError:
        raise CapabilityError("no stateless request is being served here") from None


def single_use_state() -> None:
    """Make the ``requestState`` that the stateless request being served gets single-use:
    a retry carrying it is served once, a replay is refused (-32602). Call it in a handler
    before asking for input; ``single_use_state=True`` on the server does it for every
    request. No effect in handshake-era sessions, which keep no such state."""
    scope = _scope.get(None)
    if scope is not None:
        scope.single_use = True


def resumed_from_state() -> bool:
    """Whether the stateless request being served carried a ``requestState`` that passed
    its integrity check (False in handshake-era sessions, which keep no such state)."""
    scope = _scope.get(None)
    return scope is not None and scope.resumed


_input_key: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mcp_input_key", default=None
)


async def input_key(key: str, call: Awaitable[T]) -> T:
    """Await ``call`` (a ``ctx.peer.elicit`` / ``create_message`` / ``list_roots``) with
    ``key`` naming its entry in ``inputRequests`` / ``inputResponses`` (2026-07-28), instead
    of the default ``<kind>-<n>``. No effect in handshake-era sessions. Keys are unique
    within a request; ask several at once with ``asyncio.gather(input_key(...), ...)``.
    """
    token = _input_key.set(key)
    try:
        return await call
    finally:
        _input_key.reset(token)


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
        self, spec: Any, params: Mapping[str, Any] | None, timeout: float | None = None
    ) -> Any:
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
        self._require_capabilities(method, negotiated, wire)
        negotiated.validate_params(wire)
        scope.calls += 1
        key = _input_key.get() or f"{INPUT_KIND[method]}-{scope.calls}"
        if key in scope.used:
            raise CapabilityError(f"input key {quoted(key)} is used twice in one request")
        scope.used.add(key)
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

    def _require_capabilities(self, method: str, spec: Any, params: Mapping[str, Any]) -> None:
        """-32021 when this request's client capabilities do not allow the input request."""
        capabilities = self.scope.client_capabilities
        required: dict[str, Any] = {}
        for gate in spec.gates:
            if gate.side == "client" and not has_capability(capabilities, gate.path):
                declare(required, gate.path)
        missing = None if required else unmet_capability(spec, params, capabilities)
        if missing is not None:  # a form of the params the client did not declare (URL mode)
            declare(required, missing)
        if method == "sampling/createMessage" and params.get("tools") and not has_capability(
            capabilities, ("sampling", "tools")
        ):
            declare(required, ("sampling", "tools"))
        if required:
            names = ", ".join(sorted(required))
            raise RpcError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: {names} (needed for {method})",
                {"requiredCapabilities": required},
            )

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
        state_ttl: float = DEFAULT_STATE_TTL,
        cache: CachePolicy | None = None,
        server_info_in_results: bool = True,
        resource_subscriptions: bool = False,
        single_use_state: bool = False,
        used_states: UsedStates | None = None,
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
        self.sealer = StateSealer(state_key, state_ttl)
        self.single_use_state = single_use_state
        self.used_states: UsedStates = used_states if used_states is not None else MemoryUsedStates()
        self.cache = cache or CachePolicy()
        self.server_info_in_results = server_info_in_results
        self.builtins = StatelessBuiltins(self)
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
        self,
        method: str,
        params: Any,
        request_id: RequestId,
        emit: Emit,
        *,
        principal: Any = None,
        checked: bool = False,
        json_ready: bool = False,
    ) -> Any:
        """Serve one request; ``emit`` sends its request-scoped notifications.

        ``checked``: the caller (HTTP) already ran the _meta and version checks.
        ``json_ready``: the answer is handed over as is, with no encoding step after it
        (``connect_direct``), so it must already be plain JSON data.
        """
        meta = params["_meta"] if checked else self.checked_meta(params)
        self.route(method)  # -32601 before anything else happens
        scope = RequestScope(method, request_id, meta, emit, principal)
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
        server = self.server
        result: dict[str, Any] = {
            "supportedVersions": server.supported_versions,
            "capabilities": server.own_capabilities,
        }
        if server.instructions:
            result["instructions"] = server.instructions
        return result

    async def subscriptions_listen(self, params: Any, ctx: RequestContext[Any]) -> dict[str, Any]:
        """Acknowledge what of the filter this server honours, then forward matching changes
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
        return {"_meta": tag}


# -- one engine, both eras ------------------------------------------------------------------


class EraRouter:
    """The engine's dispatcher when one process serves both eras (stdio, in-process).

    A request whose ``_meta`` names a protocol version (or ``server/discover``) is served
    statelessly; anything else belongs to the handshake session of this connection, which
    ``initialize`` starts. Cancellation works the same in both eras.
    """

    def __init__(self, legacy: ServerSession | None, modern: StatelessServer | None) -> None:
        if legacy is None and modern is None:
            raise ValueError("EraRouter needs at least one era")
        self.legacy = legacy
        self.modern = modern

    def attach(self, engine: Any) -> None:
        for side in (self.legacy, self.modern):
            if side is not None:
                side.engine = engine

    def _stateless(self, method: str, params: Any) -> StatelessServer | None:
        """The stateless server if this request is of its era, else None (handshake)."""
        modern = self.modern
        if type(params) is dict and method != "initialize":  # the usual case, quickly
            meta = params.get("_meta")
            if type(meta) is dict and PROTOCOL_VERSION_KEY in meta and modern is not None:
                return modern
        if modern is not None and (
            self.legacy is None
            or method == DISCOVER
            or modern_meta(params) is not None
        ):
            if self.legacy is None and method == "initialize":
                raise RpcError(
                    METHOD_NOT_FOUND,
                    "Method not found: initialize; this server speaks only "
                    f"{', '.join(modern.supported_versions)} (use server/discover)",
                    {"supported": modern.supported_versions},
                )
            return modern
        return None

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        modern = self._stateless(method, params)
        if modern is not None:
            return await modern.on_request(method, params, request_id)
        assert self.legacy is not None
        return await self.legacy.on_request(method, params, request_id)

    async def answer(self, method: str, params: Any, request_id: RequestId) -> Any:
        """:meth:`on_request`'s answer as plain JSON data, for a caller that hands it over
        without encoding it (``connect_direct``)."""
        modern = self._stateless(method, params)
        if modern is not None:
            return await modern.serve_request(
                method, params, request_id, modern._notify, json_ready=True
            )
        assert self.legacy is not None
        return json_data(await self.legacy.on_request(method, params, request_id))

    def close(self) -> None:
        for side in (self.legacy, self.modern):
            if side is not None:
                side.close()

    def end_of_input(self) -> None:
        """The connection has no more input (the engine calls this at EOF): listen streams
        end now, with their final result; other handlers get the engine's grace."""
        if self.modern is not None:
            self.modern.end_listens()

    async def on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled":
            engine = (self.legacy or self.modern).engine  # type: ignore[union-attr]
            if engine is not None and isinstance(params, dict):
                engine.cancel_incoming(params.get("requestId"))
            return
        if self.legacy is not None:
            await self.legacy.on_notification(method, params)


MODERN_OPTIONS = (
    "state_key",
    "state_ttl",
    "single_use_state",
    "used_states",
    "cache",
    "server_info_in_results",
    "resource_subscriptions",
)


@dataclass(frozen=True)
class Eras:
    """What a server serves: the generated packages of each era, the change feed both
    eras share, and the options of the handshake sessions and of the stateless server."""

    handshake: list[ProtocolPackage]
    stateless: list[ProtocolPackage]
    changes: ChangeFeed
    session_options: dict[str, Any]
    modern_options: dict[str, Any]

    @classmethod
    def of(
        cls,
        handlers: object,
        *,
        packages: Sequence[ProtocolPackage | ModuleType] | None = None,
        changes: ChangeFeed | None = None,
        **options: Any,
    ) -> Eras:
        """``packages`` defaults to every revision generated beside the handlers' own
        package; pass a subset to serve fewer (only 2026-07-28, say)."""
        wrapped = (
            [ProtocolPackage.of(p) for p in packages]
            if packages
            else generated_beside(package_of(handlers))
        )
        modern_options = {name: options.pop(name) for name in MODERN_OPTIONS if name in options}
        return cls(
            handshake=[p for p in wrapped if p.era == "handshake"],
            stateless=[p for p in wrapped if p.era == "stateless"],
            changes=changes if changes is not None else ChangeFeed(),
            session_options=options,
            modern_options=modern_options,
        )

    def handshake_session(self, handlers: object) -> ServerSession | None:
        """A new handshake-era session (one per connection), if that era is served."""
        if not self.handshake:
            return None
        return ServerSession(
            handlers, packages=self.handshake, changes=self.changes, **self.session_options
        )

    def stateless_server(self, handlers: object) -> StatelessServer | None:
        """The stateless server (one per process), if that era is served."""
        if not self.stateless:
            return None
        return StatelessServer(
            handlers,
            packages=self.stateless,
            changes=self.changes,
            **self.modern_options,
            **self.session_options,
        )


def build_router(handlers: object, **options: Any) -> EraRouter:
    """One dispatcher for a connection, serving every era the packages cover (see
    :meth:`Eras.of` for ``packages`` and ``changes``)."""
    eras = Eras.of(handlers, **options)
    return EraRouter(eras.handshake_session(handlers), eras.stateless_server(handlers))


__all__ = [
    "CachePolicy",
    "ChangeFeed",
    "EraRouter",
    "Eras",
    "InputRequired",
    "MemoryUsedStates",
    "RequestScope",
    "StateSealer",
    "StatelessServer",
    "UsedStates",
    "build_router",
    "current_scope",
    "input_key",
    "resumed_from_state",
    "single_use_state",
    "stateless_packages",
]
