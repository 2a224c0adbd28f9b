"""The client side of a connection: era negotiation, capabilities, both eras' requests.

The handshake era (2024-11-05 ... 2025-11-25) starts with ``initialize``; the stateless era
(2026-07-28) has none: each request carries its ``_meta`` (version, capabilities, client
info), ``server/discover`` finds the server's revisions, server->client requests come back
in ``input_required`` results (answered by the ``ClientHandlers`` hooks), and notifications
outside a request arrive on ``subscriptions/listen`` streams. ``protocol="auto"`` (the
default) offers every revision generated beside the handlers' package (probe, then
``initialize``); a package or a list of them pins it. ``session.protocol_version``, ``.era``
and ``.negotiation`` tell what was chosen; the launchers are in ``typedmcp.connecting``.
"""
from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import typing
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from ..engine.jsonrpc import (
    METHOD_NOT_FOUND,
    CapabilityError,
    ConnectionClosed,
    RequestId,
    RpcError,
    clip,
    quoted,
)
from .capabilities import has_capability
from .deadlines import RequestOptions
from .errors import AuthRequired, HttpError
from .meta import (
    CLIENT_CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    COMPLETE,
    DISCOVER,
    INPUT_REQUEST_METHODS,
    INPUT_REQUESTS,
    INPUT_REQUIRED,
    INPUT_REQUIRED_METHODS,
    INPUT_RESPONSES,
    LISTEN,
    LOG_LEVEL_KEY,
    MODERN_ERRORS,
    PROTOCOL_VERSION_KEY,
    REQUEST_STATE,
    RESULT_TYPE,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from .negotiation import AUTO, ERA_MEMORY, HANDSHAKE, STATELESS, ProtocolChoice, choose_packages
from . import probing
from .packages import ProtocolPackage, VersionError, own_package, runtime_version
from .probing import NegotiationTimeout, probe_on_pipe
from .results import ProtocolViolation, holds_models, invalid_result, plain, to_wire, validate_any_result
from .session import CommonBuiltins, Session
from .stubs import Outbound
from .subscriptions import Subscription
from .hooks import refuse_task_hooks
from .tasks import TaskBuiltins, TaskStore
from .task_client import TaskResults
from .tools import ToolSchemas, as_functions

logger = logging.getLogger("typedmcp")

INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
SET_LEVEL = "logging/setLevel"
LIST_TOOLS = "tools/list"
CALL_TOOL = "tools/call"


class ToolOutputError(ValueError):
    """A tool's structured output does not match the outputSchema the server listed."""


class _NotModern(Exception):
    """The ``server/discover`` probe found no stateless-era server (fall back)."""


class ClientSession(TaskResults, Session):
    """The client side of one connection, in whichever era was negotiated."""

    side = "client"
    peer_side = "server"
    #: The transport the session runs over: "streamable-http" (connect_http), "sse" (the
    #: deprecated HTTP+SSE: connect_sse, or connect_http's fallback); None for the others.
    transport_kind: str | None = None
    #: One ordered pipe to the server (stdio): a second negotiation sent behind an unanswered
    #: probe would reach the server after it, so the probe is waited for (connect_process).
    pipe: bool = False

    def __init__(
        self,
        packages: ProtocolChoice = AUTO,
        handlers: object | None = None,
        *,
        client_info: dict[str, Any] | None = None,
        list_changed: Sequence[str] = (),
        request_timeout: float | None = None,
        validate_tool_output: bool = True,
        log_level: str | None = None,
        probe_timeout: float | None = None,
        connect_timeout: float | None = 60.0,
        max_input_rounds: int = 10,
        listen_for_changes: bool = True,
        remember_era: bool = True,
        tasks: bool = False,
        extensions: Mapping[str, Mapping[str, Any]] | None = None,
        client: type[Outbound] | None = None,
    ) -> None:
        wrapped, self.negotiation = choose_packages(packages, handlers, client)
        if not wrapped:
            raise ValueError(
                "connect needs at least one generated protocol package: pass protocol=\"auto\", "
                "a generated package (mcp_generated.v2025_11_25) or a non-empty list of them"
            )
        self.packages = wrapped
        own = own_package(handlers, client) or wrapped[0].module
        client_module = importlib.import_module(f"{own.__name__}.client")
        handlers = handlers if handlers is not None else client_module.ClientHandlers()
        super().__init__(handlers, None, None, extensions=extensions)
        self.own_package = ProtocolPackage.of(own)
        if request_timeout is not None:
            self.request_timeout = request_timeout
        self.builtins = CommonBuiltins(self)
        self._handler_base = client_module.ClientHandlers
        self.client_info = client_info or {"name": "typedmcp", "version": runtime_version()}
        self.list_changed = tuple(list_changed)
        self.server_info: dict[str, Any] = {}
        self.instructions: str | None = None
        self.client = (client or client_module.Client)(self)
        self.on_engine: Any = None  # called with the engine once it exists (in-process pipes)
        self.validate_tool_output = validate_tool_output
        self.tool_schemas = ToolSchemas()
        self.era: str | None = None
        self.discovery: Any = None  # the typed server/discover result (stateless era)
        self.request_log_level = log_level
        # probe_timeout: how long an unanswered server/discover probe makes the client fall
        # back to initialize (HTTP); on a pipe (stdio) only a notice, the probe waits on up
        # to connect_timeout (None: no limit): a second negotiation is never sent behind it
        self.probe_timeout = probing.PROBE_TIMEOUT if probe_timeout is None else probe_timeout
        self.connect_timeout = connect_timeout
        self.max_input_rounds = max_input_rounds
        self.listen_for_changes = listen_for_changes
        self.remember_era = remember_era
        #: Where the server is (URL or command line), the key of :data:`ERA_MEMORY`.
        self.origin: str | None = None
        self._meta: dict[str, Any] = {}
        self._meta_check: dict[str, Any] = {}
        self._meta_model: Any = None
        self._stand_ins: dict[str, Any] = {}
        self._sends: dict[str, tuple[Any, Any]] = {}
        self._subscriptions: dict[RequestId, Subscription] = {}
        self._listeners: set[asyncio.Task[Any]] = set()
        self._auto_listened: set[str] = set()  # methods the background listen covers
        # tasks=True: sampling/elicitation the server task-augments run in a task store (2025-11-25)
        self.handles_tasks = tasks
        if tasks:
            self.task_store = TaskStore(self.task_status)
            self.task_builtins = TaskBuiltins(self.task_store)
            refuse_task_hooks(handlers, self._handler_base, TaskBuiltins)

    # -- negotiation -----------------------------------------------------------------------

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision (None before negotiation)."""
        return self.package.version if self.package else None

    def negotiated(self) -> None:
        """Hook run once the revision is known (and while probing a stateless one)."""

    async def open(self) -> Any:
        """Negotiate: probe with ``server/discover`` when a stateless revision is offered,
        else (or when the server is not stateless) run the ``initialize`` handshake.
        Returns the discover or initialize result."""
        stateless = [p for p in self.packages if p.era == STATELESS]
        handshake = [p for p in self.packages if p.era == HANDSHAKE]
        origin = self.origin if self.remember_era else None
        if stateless and handshake and ERA_MEMORY.recall(origin) == HANDSHAKE:
            try:
                return await self.initialize()  # it refused the probe before: skip it
            except AuthRequired:
                raise
            except (RpcError, HttpError, VersionError) as error:
                logger.info("%s: initialize failed (%s); probing again", origin, clip(str(error)))
                ERA_MEMORY.learn(origin, None)
        if stateless:
            try:
                result = await self._discover(stateless, handshake)
            except _NotModern as reason:
                self._leave_stateless()
                if not handshake:
                    raise VersionError(
                        f"the server does not speak {', '.join(p.version for p in stateless)} "
                        f"({reason}) and no handshake-era revision was offered"
                    ) from None
                logger.debug("server/discover probe failed (%s); falling back to initialize", reason)
                result = await self.initialize()
                ERA_MEMORY.learn(origin, HANDSHAKE)
                return result
            ERA_MEMORY.learn(origin, None)
            return result
        return await self.initialize()

    def _enter_stateless(self, package: ProtocolPackage) -> None:
        self.era, self.package = STATELESS, package
        self.derive_capabilities(package, ())
        self._build_meta()
        self.negotiated()

    def _leave_stateless(self) -> None:
        self.era, self.package, self._meta = None, None, {}
        self.negotiated()

    def _build_meta(self) -> None:
        """The constant part of every stateless-era request's ``_meta``, built once."""
        assert self.package is not None
        meta: dict[str, Any] = {
            PROTOCOL_VERSION_KEY: self.package.version,
            CLIENT_CAPABILITIES_KEY: self.own_capabilities,
            CLIENT_INFO_KEY: self.client_info,
        }
        if self.request_log_level is not None:
            meta[LOG_LEVEL_KEY] = self.request_log_level
        self._meta = meta
        # Each request's params are checked with a minimal _meta (plus what the caller put
        # there): the constant part is ours, checked once here, not on every request.
        self._meta_check = {PROTOCOL_VERSION_KEY: self.package.version, CLIENT_CAPABILITIES_KEY: {}}
        meta_model = getattr(self.package.models, "RequestMetaObject", None)
        self._meta_model = (
            None if meta_model is None else meta_model.model_validate(meta, by_name=False)
        )
        self._stand_ins.clear()

    def _meta_stand_in(self, spec: Any) -> Any:
        """What stands for our constant ``_meta`` when a request's params are checked: the
        model :meth:`_build_meta` validated, where the params type takes it as it is (no
        second validation), else the minimal ``_meta`` dict."""
        found = self._stand_ins.get(spec.method)
        if found is None:
            found = self._stand_ins[spec.method] = self._meta_check
            fields = getattr(spec.params_type, "model_fields", None) or {}
            info = fields.get("meta")
            if info is not None and self._meta_model is not None:
                members = typing.get_args(info.annotation) or (info.annotation,)
                if any(isinstance(m, type) and isinstance(self._meta_model, m) for m in members):
                    found = self._stand_ins[spec.method] = self._meta_model
        return found

    async def _discover(self, stateless: list[ProtocolPackage], handshake: list[ProtocolPackage]) -> Any:
        """Probe with ``server/discover``; retry once at a version a -32022 names."""
        ours = {p.version: p for p in stateless}
        package = stateless[0]
        for attempt in (1, 2):
            self._enter_stateless(package)
            spec = package.dispatch.REQUESTS[DISCOVER]
            try:
                raw = await (probe_on_pipe(self, spec) if self.pipe else self._request(spec, {}, self.probe_timeout))
            except RpcError as error:
                supported = _supported(error)
                common = [v for v in ours if v in supported]
                if error.code == UNSUPPORTED_PROTOCOL_VERSION and common and attempt == 1:
                    package = ours[common[0]]
                    continue
                if supported and not common and not any(p.version in supported for p in handshake):
                    raise VersionError(
                        f"the server speaks {', '.join(supported)}; this client speaks "
                        f"{', '.join(p.version for p in self.packages)} "
                        f"(the server said: {clip(error.message, 400)})"
                    ) from None
                if error.code in MODERN_ERRORS and not supported:
                    raise  # a stateless-era server refused the probe itself
                raise _NotModern(f"error {error.code}: {error.message}") from None
            except NegotiationTimeout:
                raise  # (on a pipe: no fallback behind the unanswered probe)
            except asyncio.TimeoutError:
                raise _NotModern("no answer") from None
            except AuthRequired:
                raise
            except HttpError as error:  # a status without a JSON-RPC error body
                raise _NotModern(str(error)) from None
            try:
                result = spec.validate_result(raw)
            except ValidationError:
                raise _NotModern("not a discover result") from None
            common = [v for v in ours if v in result.supported_versions]
            if not common:
                raise _NotModern(f"supports {', '.join(result.supported_versions)}")
            if common[0] != package.version:
                self._enter_stateless(ours[common[0]])
            self._adopt(result, raw)
            return result
        raise AssertionError("unreachable")

    def _adopt(self, result: Any, raw: Any) -> None:
        """Take the server's discover result: capabilities, identity, instructions."""
        self.discovery = result
        self.peer_capabilities = to_wire(result.capabilities) or {}
        meta = raw.get("_meta") if isinstance(raw, dict) else None
        info = meta.get(SERVER_INFO_KEY) if isinstance(meta, dict) else None
        self.server_info = info or (raw.get("serverInfo") if isinstance(raw, dict) else None) or {}
        self.instructions = result.instructions
        self.peer = self.client
        if self.listen_for_changes:
            self._listen_for_changes()

    async def initialize(self) -> Any:
        """Run the handshake with the newest handshake revision offered; accept any of ours."""
        assert self.engine is not None
        offered = [p for p in self.packages if p.era == HANDSHAKE]
        self.derive_capabilities(offered[0], self.list_changed)
        params = {
            "protocolVersion": offered[0].version,
            "capabilities": self.own_capabilities,
            "clientInfo": self.client_info,
        }
        raw = await self.engine.request(INITIALIZE, params)
        answered = raw.get("protocolVersion") if isinstance(raw, dict) else None
        package = next((p for p in offered if p.version == answered), None)
        if package is None:
            raise VersionError(
                f"the server answered protocol revision {answered!r}; this client speaks "
                f"{', '.join(p.version for p in offered)}"
            )
        result = package.dispatch.REQUESTS[INITIALIZE].validate_result(raw)
        self.era, self.package = HANDSHAKE, package
        self.derive_capabilities(package, self.list_changed)
        self.peer_capabilities = to_wire(result.capabilities) or {}
        self.server_info = to_wire(result.server_info) or {}
        self.instructions = getattr(result, "instructions", None)
        self.peer = self.client
        self.negotiated()
        await self.engine.notify(INITIALIZED)
        return result

    async def close(self) -> None:
        """Cancel the background listen streams (stateless era) and the tasks still
        running for the server (``tasks=True``)."""
        if self.task_store is not None:
            self.task_store.close()
        for task in list(self._listeners):
            task.cancel()
        if self._listeners:
            await asyncio.gather(*self._listeners, return_exceptions=True)

    # -- requests --------------------------------------------------------------------------

    async def send_request(
        self, spec: Any, params: Any, timeout: float | None = None,
        options: RequestOptions | None = None,
    ) -> Any:
        """Send a request; remember listed tools, check structured tool output."""
        if self.era == STATELESS:
            result = await self._send_stateless(spec, params, timeout, options)
        else:
            result = await super().send_request(spec, params, timeout, options)
        method = spec.method
        if method == CALL_TOOL:
            if self.validate_tool_output and self.tool_schemas.tools:
                self._check_tool_output(params, result)
        elif method == LIST_TOOLS:
            self.tool_schemas.update(result.tools)
        return result

    async def _send_stateless(
        self, spec: Any, params: Any, timeout: float | None, options: RequestOptions | None = None
    ) -> Any:
        """One stateless-era call: answer ``input_required`` rounds with the client's hooks
        and retry (new id, ``inputResponses``, ``requestState`` echoed), until complete."""
        negotiated, own = self._allowed(spec.method)
        wire = plain(params) if params and holds_models(params) else dict(params or ())
        raw = await self._request(negotiated, wire, timeout, options=options)
        if isinstance(raw, dict):
            kind = raw.get(RESULT_TYPE, COMPLETE)
            if kind == INPUT_REQUIRED:
                raw = await self._input_rounds(spec.method, negotiated, wire, raw, timeout, options)
                kind = raw.get(RESULT_TYPE, COMPLETE) if isinstance(raw, dict) else COMPLETE
            if kind != COMPLETE:  # "task" (the tasks extension: task_client.py), else refused
                raw = await self.other_result(spec.method, kind, raw, timeout)
        raw = self.on_result(spec.method, raw)
        try:
            return own.validate_result(raw)
        except ValidationError:  # not the main result type: an alternative, or the error
            try:
                return validate_any_result(own, raw)
            except ValidationError as error:
                raise invalid_result(own, error) from None

    async def _input_rounds(
        self, method: str, negotiated: Any, wire: dict[str, Any], raw: Any, timeout: float | None,
        options: RequestOptions | None = None,
    ) -> Any:
        """Answer input_required results and retry until the server answers otherwise."""
        rounds = 0
        while isinstance(raw, dict) and raw.get(RESULT_TYPE) == INPUT_REQUIRED:
            if method not in INPUT_REQUIRED_METHODS:
                raise ProtocolViolation(f"{method} may not answer input_required")
            rounds += 1
            if rounds > self.max_input_rounds:
                raise ProtocolViolation(
                    f"{method} still wanted input after {self.max_input_rounds} rounds"
                )
            retry = dict(wire)  # the caller's params, plus this round's answers only
            retry[INPUT_RESPONSES] = await self._fulfil(raw.get(INPUT_REQUESTS) or {})
            if REQUEST_STATE in raw:
                retry[REQUEST_STATE] = raw[REQUEST_STATE]
            else:
                retry.pop(REQUEST_STATE, None)
            raw = await self._request(negotiated, retry, timeout, options=options)
        return raw

    def _allowed(self, method: str) -> tuple[Any, Any]:
        """The negotiated spec of a request this session may send (gates checked) and the
        same method's spec in the caller's own revision, looked up once per method for the
        negotiated revision and capabilities."""
        found = self._sends.get(method)
        if found is not None:
            (package, own, peer), specs = found
            if (
                package is self.package
                and own is self.own_capabilities
                and peer is self.peer_capabilities
            ):
                return specs  # type: ignore[no-any-return]
        negotiated = self._negotiated(method, "request")
        self._check_gates(method, negotiated.gates, negotiated.direction, "request")
        specs = (negotiated, self.own_spec(negotiated, "request"))
        self._sends[method] = ((self.package, self.own_capabilities, self.peer_capabilities), specs)
        return specs

    def on_result(self, method: str, raw: Any) -> Any:
        """Hook: a complete stateless-era result before validation (HTTP drops tools)."""
        return raw

    async def _request(
        self,
        spec: Any,
        wire: dict[str, Any],
        timeout: float | None,
        request_id: RequestId | None = None,
        options: RequestOptions | None = None,
    ) -> Any:
        """Send one stateless-era request (``_meta`` added) and return its raw result.

        ``timeout`` 0 means none. On expiry or cancellation the request is cancelled:
        see :meth:`cancel_sent`.
        """
        # refuse bad params here (with the constant part of _meta checked once, in
        # _build_meta); send them as given, with the whole _meta
        meta = wire.get("_meta")
        if meta:
            spec.validate_params({**wire, "_meta": {**self._meta_check, **meta}})
            wire = {**wire, "_meta": {**self._meta, **meta}}
        else:
            wire = {**wire, "_meta": self._meta_stand_in(spec)}
            spec.validate_params(wire)
            wire["_meta"] = self._meta
        engine = self.engine
        if engine is None:
            raise CapabilityError(
                f"cannot send {spec.method}: the session is not connected "
                "(use the client inside connect_stdio/connect_http/connect)"
            )
        if request_id is None:
            request_id = engine.new_request_id()
        limit = self.request_timeout if timeout is None else timeout
        return await self.exchange(engine, spec.method, wire, request_id, limit, options)

    async def _fulfil(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        """Answer each input request with the client's hook for its method (the same
        ``ClientHandlers`` method that answers it in the handshake era)."""
        answers: dict[str, Any] = {}
        for key, entry in requests.items():
            method = entry.get("method") if isinstance(entry, dict) else None
            if method not in INPUT_REQUEST_METHODS:
                raise ProtocolViolation(f"input request {quoted(key)} asks for {quoted(method)}")
            result = await Session.on_request(self, method, entry.get("params"), key)
            answers[key] = to_wire(result)
        return answers

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        """Server->client requests exist only in the handshake era; a task-augmented one
        runs as a task when this client declared it can (``tasks=True``)."""
        if self.era == STATELESS:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {clip(method)}")
        if self.task_store is not None and isinstance(params, dict) and "task" in params:
            created = self.start_task(
                method, params, lambda: Session.on_request(self, method, params, request_id)
            )
            if created is not None:
                return created
        return await super().on_request(method, params, request_id)

    async def set_log_level(self, level: str | None) -> None:
        """Ask for log messages at ``level`` and above: stateless era, on every later
        request's ``_meta`` (None: none); handshake era, with ``logging/setLevel``."""
        if self.era == STATELESS:
            self.request_log_level = level
            self._build_meta()
            return
        if self.package is None or level is None:
            raise CapabilityError(
                "set_log_level needs a negotiated session and a level: call it on a connected "
                "client, with a level such as \"info\" (None is only for the stateless era)"
            )
        await self.send_request(self.package.dispatch.REQUESTS[SET_LEVEL], {"level": level})

    # -- subscriptions/listen --------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def listen(
        self,
        *,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_subscriptions: Sequence[str] = (),
        timeout: float | None = None,
    ) -> AsyncIterator[Subscription]:
        """Open a ``subscriptions/listen`` stream for the chosen notifications; yields the
        :class:`Subscription` once the server acknowledged it. Leaving the block cancels
        the stream. The client's ``on_*`` hooks see the notifications too."""
        chosen = {
            "toolsListChanged": tools_list_changed,
            "promptsListChanged": prompts_list_changed,
            "resourcesListChanged": resources_list_changed,
            "resourceSubscriptions": list(resource_subscriptions),
        }
        task, subscription = self._open_listen({k: v for k, v in chosen.items() if v})
        try:
            ready = asyncio.ensure_future(subscription.ready.wait())
            limit = self.request_timeout if timeout is None else timeout
            await asyncio.wait({ready, task}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
            if not ready.done():
                ready.cancel()
                if task.done():
                    task.result()  # the server refused: raise its error
                    raise ProtocolViolation("the listen stream ended before its acknowledgement")
                raise asyncio.TimeoutError("no notifications/subscriptions/acknowledged")
            yield subscription
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    def _open_listen(
        self, notifications: dict[str, Any], background: bool = False
    ) -> tuple[asyncio.Task[Any], Subscription]:
        if self.era != STATELESS or self.package is None or self.engine is None:
            raise CapabilityError(
                "subscriptions/listen needs a stateless-era session (2026-07-28); in the "
                "handshake era implement the client's on_* notification hooks instead"
            )
        spec = self.package.dispatch.REQUESTS[LISTEN]
        subscription = Subscription(self.engine.new_request_id(), background)
        self._subscriptions[subscription.id] = subscription

        async def run() -> Any:
            lost: BaseException | None = None
            try:
                return await self._request(
                    spec, {"notifications": notifications}, 0, subscription.id
                )
            except (ConnectionClosed, OSError) as error:
                lost = error
                raise
            finally:
                self._subscriptions.pop(subscription.id, None)
                subscription.end(lost)

        return asyncio.ensure_future(run()), subscription

    def _listen_for_changes(self) -> None:
        """Keep ``on_*_list_changed`` hooks working: listen for the list changes whose
        hooks the client implemented and the server announces (derived from the table)."""
        assert self.package is not None
        wanted: dict[str, Any] = {}
        for spec in self.package.dispatch.NOTIFICATIONS.values():
            for gate in spec.gates:
                if gate.path[-1:] != ("listChanged",) or not has_capability(
                    self.peer_capabilities, gate.path
                ):
                    continue
                if self._user_handler("on_" + spec.handler_name) is not None:
                    wanted[f"{gate.path[0]}ListChanged"] = True
                    self._auto_listened.add(spec.method)
        if wanted:
            task, _ = self._open_listen(wanted, background=True)
            self._listeners.add(task)
            task.add_done_callback(self._listen_ended)

    def _listen_ended(self, task: asyncio.Task[Any]) -> None:
        self._listeners.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.info("the background subscriptions/listen ended: %s", quoted(task.exception()))

    async def on_notification(self, method: str, params: Any) -> None:
        """Route listen-stream notifications (tagged with their subscription id) to their
        :class:`Subscription`; they reach the client's ``on_*`` hooks too, unless the
        background listen already brings that kind to the hooks."""
        if self._subscriptions and isinstance(params, dict):
            meta = params.get("_meta")
            key = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
            subscription = self._subscriptions.get(key) if key is not None else None
            if subscription is not None and self.package is not None:
                spec = self.package.dispatch.NOTIFICATIONS.get(method)
                if spec is not None:
                    with contextlib.suppress(ValidationError):
                        subscription.deliver(method, self.own_spec(spec, "notification").validate_params(params))
                if not subscription.background and method in self._auto_listened:
                    return
        await super().on_notification(method, params)

    # -- tools -----------------------------------------------------------------------------

    def _check_tool_output(self, params: Any, result: Any) -> None:
        name = params.get("name") if params else None
        if not isinstance(name, str):
            return
        tool = self.tool_schemas.tools.get(name)
        if tool is None or tool.get("outputSchema") is None:
            return  # not listed, or no outputSchema: nothing to check
        validator = self.tool_schemas.validator(name, "outputSchema")
        if validator is None or getattr(result, "is_error", False):
            return
        structured = getattr(result, "structured_content", None)
        found = (  # (check: the plain-Python test first, jsonschema only to word the errors)
            self.tool_schemas.check(name, "outputSchema", structured) if structured is not None
            else ["(root): no structuredContent"])
        if found:
            raise ToolOutputError(f"tool {name} returned output that breaks its outputSchema: "
                                  + "; ".join(found))

    def tools_as_functions(self) -> list[dict[str, Any]]:
        """The tools listed so far as function-calling definitions (see ``tools.as_functions``)."""
        return as_functions(self.tool_schemas.tools.values())


def _supported(error: RpcError) -> list[str]:
    """The ``data.supported`` versions of an error (empty when absent or malformed)."""
    data = error.data if isinstance(error.data, dict) else {}
    supported = data.get("supported")
    return [v for v in supported if isinstance(v, str)] if isinstance(supported, list) else []
