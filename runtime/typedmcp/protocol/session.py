"""The typed seam: a generated dispatch table plus handler objects serve an :class:`Engine`.

Routing, validation and capability gates come from the dispatch table of the negotiated
revision; a handler is looked up by the table's ``handler_name`` on the user's object first,
then on the runtime's built-ins (lifecycle, ping, cancellation, progress, log level).
Capabilities are derived from which handlers exist, so a peer never declares what it cannot
do, and neither side sends what the other did not negotiate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from ..engine.eager import start_eagerly
from ..engine.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Engine,
    RequestId,
    RpcError,
    clip,
    handler_failed,
    is_request_id,
)
from ..engine.jsonrpc import CapabilityError as CapabilityError
from . import telemetry
from .capabilities import (
    declare,
    has_capability,
    may_answer_with_task,
    task_path,
    unmet_capability,
    variant_allowed,
    variant_of,
)
from .deadlines import Deadline, Deadlines, RequestOptions
from .extensions import Extensions, PeerExtensions, checked_extensions, declare_extensions
from .packages import ProtocolPackage, severity
from .results import (
    describe,
    expected_results,
    holds_models,
    invalid_result,
    lifted,
    plain,
    to_wire,
    validate_any_result,
    wrong_result,
)
from .sieve import SieveError, sieve
from .spec import Direction, Gate, NotificationSpec, RequestSpec
from .stubs import MethodNotFound, RequestContext

logger = logging.getLogger("typedmcp")

DEFAULT_REQUEST_TIMEOUT = 300.0
TASK_STATUS = "notifications/tasks/status"


class Session(PeerExtensions):
    """State and routing shared by the server and the client side of a connection."""

    side: str = ""
    peer_side: str = ""
    handles_tasks = False
    #: The store that runs task-augmented requests (``tasks=True``) and the built-ins that
    #: answer ``tasks/*`` from it (``tasks.TaskBuiltins``); None without tasks.
    task_store: Any = None
    task_builtins: Any = None
    #: Whether this side can run some request it receives as a task (set by
    #: :meth:`derive_capabilities`); the ``tasks/*`` built-ins exist only then.
    runs_tasks = False
    #: The ``network.transport`` of its telemetry when no engine's transport says
    #: (a stateless server behind HTTP); see :mod:`.telemetry`.
    network_transport: str | None = None

    def __init__(
        self,
        handlers: object,
        builtins: object,
        package: ProtocolPackage | None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        extensions: Extensions | None = None,
    ) -> None:
        self.handlers = handlers
        #: What this side declares in ``capabilities.extensions`` (where its revision has it).
        self.extensions = checked_extensions(extensions)
        self.builtins = builtins
        self.package = package
        self.request_timeout = request_timeout
        self.engine: Engine | None = None
        self.own_capabilities: dict[str, Any] = {}
        self.peer_capabilities: dict[str, Any] = {}
        self.progress_callbacks: dict[str | int, Callable[[Any], Any]] = {}
        self.peer: Any = None
        self.log_level: str | None = None
        self._handler_base: type | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.own_package: ProtocolPackage | None = None
        self._routes: dict[str, tuple[Any, tuple[Any, Any, Any, bool, bool]]] = {}
        self.deadlines = Deadlines()
        self._expected: dict[int, tuple[type, ...]] = {}
        telemetry.active()  # decided (and imported, if on) now, not in the first request

    def own_spec(self, negotiated: Any, kind: str) -> Any:
        """The spec of the same method in the package the user's code is typed with, so
        handlers and callers get their own revision's models whatever was negotiated."""
        own = self.own_package
        if own is None or own is self.package:
            return negotiated
        table = own.dispatch.REQUESTS if kind == "request" else own.dispatch.NOTIFICATIONS
        return table.get(negotiated.method, negotiated)

    # -- handler lookup ------------------------------------------------------------------

    def _receives(self, direction: Direction) -> bool:
        sender = Direction.SERVER_TO_CLIENT if self.side == "client" else Direction.CLIENT_TO_SERVER
        return direction in (sender, Direction.BOTH)

    def _user_handler(self, name: str) -> Callable[..., Any] | None:
        method = getattr(self.handlers, name, None)
        base = getattr(self._handler_base, name, None) if self._handler_base else None
        if method is None or getattr(type(self.handlers), name, None) is base:
            return None
        return method  # type: ignore[no-any-return]

    def handler(self, name: str) -> Callable[..., Any] | None:
        """The built-in for ``name`` if the runtime owns it, else the user's override.
        The runtime owns ``tasks/*`` when this side runs tasks (:attr:`runs_tasks`)."""
        if self.runs_tasks:
            builtin = getattr(self.task_builtins, name, None)
            if builtin is not None:
                return builtin  # type: ignore[no-any-return]
        builtin = getattr(self.builtins, name, None)
        return builtin if builtin is not None else self._user_handler(name)

    def _handles(self, spec: Any) -> bool:
        """Whether this side has a handler for a request: its own, or a variant's."""
        return self.handler(spec.handler_name) is not None or any(
            self.handler(variant.handler_name) for variant in spec.variants if not variant.default
        )

    def derive_capabilities(self, package: ProtocolPackage, list_changed: Iterable[str]) -> None:
        """Declare exactly what this side's handlers (and the built-ins) can serve."""
        capabilities: dict[str, Any] = {}
        model = getattr(package.models, f"{self.side.capitalize()}Capabilities", None)
        received = [s for s in package.dispatch.REQUESTS.values() if self._receives(s.direction)]
        self.runs_tasks = False  # (the tasks/* built-ins must not count as handlers here)
        augmentable = {
            spec.method for spec in received if may_answer_with_task(spec) and self._handles(spec)
        }
        self.runs_tasks = bool(self.handles_tasks and self.task_builtins and augmentable)
        for spec in received:
            if not self._handles(spec):
                continue
            for gate in spec.gates:
                if gate.side == self.side:
                    declare(capabilities, gate.path, model)
            self._declare_variants(capabilities, spec, model)
            if self.runs_tasks and spec.method in augmentable:
                declare(capabilities, task_path(spec.method), model)
        for spec in package.dispatch.NOTIFICATIONS.values():
            for gate in spec.gates:
                if gate.side == self.side and gate.path[0] in capabilities:
                    flag = gate.path[-1]
                    if flag == "listChanged" and gate.path[0] in set(list_changed):
                        declare(capabilities, gate.path, model)
        declare_extensions(capabilities, self.extensions, model)
        self.own_capabilities = capabilities

    def _declare_variants(self, capabilities: dict[str, Any], spec: Any, model: Any) -> None:
        """Declare the variants this side has handlers for (``elicitation.url`` for
        ``elicit_url``). The default one is implied by the bare capability, so it is named
        only beside another (``{"form": {}, "url": {}}``; ``elicit`` alone stays ``{}``)."""
        handled = [
            variant
            for variant in spec.variants
            if variant.gate.side == self.side and self.handler(variant.handler_name)
        ]
        if any(not variant.default for variant in handled):
            for variant in handled:
                declare(capabilities, variant.gate.path, model)

    # -- incoming ------------------------------------------------------------------------

    def context(self, request_id: RequestId | None, params: Any) -> RequestContext[Any]:
        meta = params.get("_meta") if isinstance(params, dict) else None
        return RequestContext(
            peer=self.peer,
            request_id=request_id,
            meta=meta if isinstance(meta, dict) else {},
            hooks=self,
        )

    def request_spec(self, method: str) -> RequestSpec[Any]:
        if self.package is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {clip(method)}")
        spec = self.package.dispatch.REQUESTS.get(method)
        if spec is None or not self._receives(spec.direction):
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {clip(method)}")
        return spec  # type: ignore[no-any-return]

    def route(self, method: str) -> tuple[Any, Any, Any, bool, bool]:
        """(the negotiated spec, the user's spec, the handler, whether its result goes out
        as is, whether the handler is the user's rather than the runtime's) of an incoming
        request, looked up once per method and negotiated revision; -32601 if there is none.
        The handler is None for a method only a variant's handler answers (``elicit_url``)."""
        found = self._routes.get(method)
        if found is not None and found[0] is self.package:
            return found[1]
        negotiated = self.request_spec(method)
        spec = self.own_spec(negotiated, "request")
        handler = self.handler(spec.handler_name)
        if handler is None and not self._handles(spec):
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {clip(method)}")
        users = getattr(self.builtins, spec.handler_name, None) is None
        route = (negotiated, spec, handler, spec is negotiated or self._widening, users)
        self._routes[method] = (self.package, route)
        return route

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        """The engine's entry: :meth:`handle_request` inside the request's SERVER span
        when tracing is on (:mod:`.telemetry`)."""
        traced = telemetry.active()
        if traced is None:
            return await self.handle_request(method, params, request_id)
        return await traced.serve(self, method, params, request_id, self.handle_request)

    async def handle_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        """Validate, route and answer one request from the peer."""
        negotiated, spec, handler, as_is, users = self.route(method)
        try:
            typed = spec.validate_params(params)
        except ValidationError as error:
            raise RpcError(
                INVALID_PARAMS, f"Invalid params for {method}: {describe(error)}"
            ) from None
        if negotiated.variants:
            handler = self._variant_handler(negotiated, spec, params, handler)
        context = self.context(request_id, params)
        meta = context.meta
        if meta:
            token = meta.get("progressToken")
            if token is not None and not is_request_id(token):
                raise RpcError(
                    INVALID_PARAMS,
                    f"Invalid params for {method}: _meta.progressToken must be a string or integer",
                )
        try:
            result = await handler(typed, context)
        except MethodNotFound:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}") from None
        finally:
            context.finish()  # no progress after the result
        if users:
            self.check_result(spec, handler, result)
        if as_is:  # the negotiated revision's own model, or an older one a newer peer reads
            return result
        return self.sieved(negotiated, result)

    def _variant_handler(self, negotiated: Any, spec: Any, params: Any, handler: Any) -> Any:
        """The handler of the variant these params are (``elicit_url`` for ``mode: "url"``);
        -32602 for a variant this side did not declare (it has no handler for it)."""
        variant = variant_of(negotiated, params)
        if variant is None or variant.gate.side != self.side:
            return handler
        if variant_allowed(self.own_capabilities, negotiated, variant):
            own = next((v for v in spec.variants if v.value == variant.value), variant)
            found = handler if own.default else self.handler(own.handler_name)
            if found is not None:
                return found
        taken = [
            repr(v.value)
            for v in negotiated.variants
            if variant_allowed(self.own_capabilities, negotiated, v)
        ]
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params for {negotiated.method}: {variant.field} {variant.value!r} needs "
            f"the capability {'.'.join(variant.gate.path)}, which this {self.side} did not "
            f"declare; it takes {variant.field} {' or '.join(taken) or 'none'}",
        )

    def check_result(self, spec: Any, handler: Any, result: Any) -> None:
        """A user handler's result must be what its revision defines: a model of the
        result type (or of an alternative), or plain data that validates as one. Anything
        else (``str``, ``None``, a list, a model of another type) is the handler's bug: it
        is logged, naming the method and the handler, and the peer gets -32603, never the
        bad data."""
        expected = self._expected.get(id(spec))  # (specs live as long as their package)
        if expected is None:
            expected = self._expected[id(spec)] = expected_results(spec)
        if isinstance(result, expected):  # (a model was checked when it was built)
            return
        if isinstance(result, dict | BaseModel):
            try:  # (caching hints a stateless-era server adds later may be missing here)
                validate_any_result(spec, lifted(spec.result_type, to_wire(result)))
            except ValidationError as error:
                raise wrong_result(spec, handler, result, describe(error)) from None
            return
        raise wrong_result(spec, handler, result, "a result must be a JSON object")

    @property
    def _widening(self) -> bool:
        """The user's revision is older than the negotiated one: every member it sends is
        one the newer revision defines, or an open extra there (tested for every result
        union in ``tests/test_runtime_sieve.py``), so there is nothing to sieve."""
        own, package = self.own_package, self.package
        return own is not None and package is not None and own.version < package.version

    @property
    def _lifting(self) -> bool:
        """The user's revision is newer than the negotiated one: results of the older
        revision may lack fields the newer one requires (see :func:`lifted`)."""
        own, package = self.own_package, self.package
        return own is not None and package is not None and own.version > package.version

    def sieved(self, negotiated: Any, result: Any) -> Any:
        """A result made with the user's revision, cut down to what the negotiated one
        defines (a 2024-11-05 client never sees ``structuredContent``, ``title``, ...)."""
        assert self.own_package is not None
        wire = to_wire(result)
        target = negotiated.result_type
        if not isinstance(wire, dict) or not isinstance(target, type):
            return wire
        if wire.get("resultType") not in (None, "complete") or "task" in wire:
            return wire  # an alternative result (input required, a created task): as is
        try:
            outcome = sieve(wire, target, self.own_package.models)
        except SieveError as error:
            logger.error("%s result cannot be expressed in %s: %s", negotiated.method,
                         self.package.version if self.package else "?", error)
            raise RpcError(INTERNAL_ERROR, "Internal error") from None
        for dropped in outcome.dropped:
            logger.warning("%s result: dropped %s (%s)", negotiated.method, dropped.path, dropped.reason)
        return outcome.value

    async def on_notification(self, method: str, params: Any) -> None:
        if self.package is None:
            return
        spec = self.package.dispatch.NOTIFICATIONS.get(method)
        if spec is None or not self._receives(spec.direction):
            logger.debug("ignored notification %s", clip(method))
            return
        spec = self.own_spec(spec, "notification")
        try:
            typed = spec.validate_params(params)
        except ValidationError as error:
            logger.debug("ignored invalid %s: %s", method, describe(error))
            return
        name = "on_" + spec.handler_name
        builtin = getattr(self.builtins, name, None)
        if builtin is not None:
            await builtin(typed, self.context(None, params))
        user = self._user_handler(name)
        if user is not None:
            self.spawn(user(typed, self.context(None, params)), method, eager=True)

    def spawn(self, awaitable: Any, method: str = "a notification", *, eager: bool = False) -> None:
        """Run a user notification handler (of ``method``) without blocking the reader.
        ``eager``: in a task started at once (:func:`~typedmcp.engine.eager.start_eagerly`), so the
        handler has run up to its first suspension before a later message (the response to
        a request) is handled, on every transport."""
        if eager:
            task = start_eagerly(awaitable, self._background.add)
        else:
            task = asyncio.ensure_future(awaitable)
            self._background.add(task)
        task.add_done_callback(lambda done: self._finished(done, method))

    def _finished(self, task: asyncio.Task[Any], method: str) -> None:
        self._background.discard(task)
        if not task.cancelled():
            error = task.exception()
            if isinstance(error, Exception):
                handler_failed(method, None, error)

    # -- outgoing (the Sender the generated proxies call) ---------------------------------

    def _check_gates(
        self, method: str, gates: tuple[Gate, ...], direction: Direction, kind: str
    ) -> None:
        """A request needs the receiver's capability; a notification the sender's (or, when
        the table gates it on the receiver, the receiver's). For a message that may go
        either way, only the side that applies to this send is checked."""
        if direction is Direction.BOTH:
            wanted = self.peer_side if kind == "request" else self.side
            gates = tuple(gate for gate in gates if gate.side == wanted)
        elif kind == "request":
            gates = tuple(gate for gate in gates if gate.side == self.peer_side)
        for gate in gates:
            own = gate.side == self.side
            capabilities = self.own_capabilities if own else self.peer_capabilities
            if not has_capability(capabilities, gate.path):
                whose = "this side" if own else f"the {self.peer_side}"
                raise CapabilityError(
                    f"cannot send {method}: {whose} did not declare the capability "
                    f"{'.'.join(gate.path)}"
                )

    def _check_params_gates(self, spec: Any, params: Any) -> None:
        """What these params need of the peer beyond the method's gates (a variant such as
        URL-mode elicitation, task augmentation) must be declared; else CapabilityError."""
        missing = unmet_capability(spec, params, self.peer_capabilities)
        if missing is not None:
            raise CapabilityError(
                f"cannot send {spec.method} with these params: the {self.peer_side} did not "
                f"declare the capability {'.'.join(missing)}"
            )

    def _negotiated(self, method: str, kind: str) -> Any:
        if self.package is None or self.engine is None:
            raise CapabilityError(f"cannot send {method}: the session is not initialized")
        table = self.package.dispatch.REQUESTS if kind == "request" else self.package.dispatch.NOTIFICATIONS
        spec = table.get(method)
        if spec is None:
            raise CapabilityError(
                f"cannot send {method}: protocol revision {self.package.version} has no such {kind}"
            )
        return spec

    async def send_request(
        self, spec: RequestSpec[Any], params: Mapping[str, Any] | None, timeout: float | None = None,
        options: RequestOptions | None = None,
    ) -> Any:
        negotiated: RequestSpec[Any] = self._negotiated(spec.method, "request")
        self._check_gates(spec.method, negotiated.gates, negotiated.direction, "request")
        wire = plain(params) if params and holds_models(params) else params
        if wire and (negotiated.variants or "task" in wire):
            self._check_params_gates(negotiated, wire)
        negotiated.validate_params(wire)  # refuse bad params here; send them as given
        assert self.engine is not None
        request_id = self.engine.new_request_id()
        limit = timeout if timeout is not None else self.request_timeout
        raw = await self.exchange(self.engine, spec.method, wire, request_id, limit, options)
        own = self.own_spec(negotiated, "request")
        if own is not negotiated and self._lifting:
            raw = lifted(own.result_type, raw)
        try:
            return validate_any_result(own, raw)
        except ValidationError as error:  # the peer's bug: a named error, not pydantic's
            raise invalid_result(own, error) from None

    async def exchange(
        self, engine: Any, method: str, wire: Any, request_id: RequestId, limit: float | None,
        options: RequestOptions | None = None,
    ) -> Any:
        """Send one request and await its raw answer, within ``limit`` seconds (0 or None:
        no limit). When the caller gives up, or the time runs out (:class:`TimeoutError`),
        the peer is told so (:meth:`cancel_sent`). ``options``: progress for the call, and a
        deadline that progress pushes out (:class:`~.deadlines.RequestOptions`). With
        tracing on, inside the request's CLIENT span, its context in ``_meta``."""
        traced = telemetry.active()
        if traced is None:
            return await self._exchange(engine, method, wire, request_id, limit, options)
        return await traced.call(
            self, method, wire, request_id,
            lambda sent: self._exchange(engine, method, sent, request_id, limit, options),
        )

    async def _exchange(
        self, engine: Any, method: str, wire: Any, request_id: RequestId, limit: float | None,
        options: RequestOptions | None,
    ) -> Any:
        if options is not None and options.wants_progress:
            return await self._exchange_with_progress(engine, method, wire, request_id, limit, options)
        if not limit:
            try:
                return await engine.request(method, wire, request_id=request_id)
            except asyncio.CancelledError:
                await asyncio.shield(self.cancel_sent(request_id, "cancelled"))
                raise
        key, deadline = self.deadlines.start(limit)
        try:
            return await engine.request(method, wire, request_id=request_id)
        except asyncio.CancelledError:
            timed_out = await self._given_up(request_id, deadline, f"{method} timed out after {limit} s")
            if timed_out is None:
                raise
            raise timed_out from None
        finally:
            self.deadlines.finish(key)

    async def _given_up(
        self, request_id: RequestId, deadline: Deadline, message: str
    ) -> asyncio.TimeoutError | None:
        """Tell the peer a request was given up; the :class:`TimeoutError` to raise (with
        ``message``) if its deadline expired, None if the caller was cancelled."""
        expired = deadline.expired
        await asyncio.shield(self.cancel_sent(request_id, "timed out" if expired else "cancelled"))
        if not expired:
            return None
        if hasattr(deadline.task, "uncancel"):
            deadline.task.uncancel()
        return asyncio.TimeoutError(message)

    async def _exchange_with_progress(
        self, engine: Any, method: str, wire: Any, request_id: RequestId, limit: float | None,
        options: RequestOptions,
    ) -> Any:
        """:meth:`exchange` asking for progress (the request's own token, else one made from
        its id): each notification goes to ``options.on_progress`` (and to a callback already
        registered for the token) and, with ``reset_timeout_on_progress``, pushes the deadline
        out."""
        meta = dict((wire or {}).get("_meta") or {})
        token = meta.setdefault("progressToken", f"progress-{request_id}")
        wire = {**(wire or {}), "_meta": meta}
        earlier = self.progress_callbacks.get(token)
        deadline: Deadline | None = None

        async def on_progress(params: Any) -> None:
            if deadline is not None:
                deadline.extend()
            for callback in (earlier, options.on_progress):
                if callback is not None:
                    outcome = callback(params)
                    if asyncio.iscoroutine(outcome):
                        await outcome

        self.progress_callbacks[token] = on_progress
        key = None
        if limit:
            step = limit if options.reset_timeout_on_progress else 0.0
            key, deadline = self.deadlines.start(limit, step=step, max_total=options.max_total_timeout)
        try:
            return await engine.request(method, wire, request_id=request_id)
        except asyncio.CancelledError:
            if deadline is None:
                await asyncio.shield(self.cancel_sent(request_id, "cancelled"))
                raise
            message = (
                f"{method} timed out after max_total_timeout={options.max_total_timeout} s"
                if deadline.capped
                else f"{method} timed out after {limit} s"
                + (" without progress" if options.reset_timeout_on_progress else "")
            )
            timed_out = await self._given_up(request_id, deadline, message)
            if timed_out is None:
                raise
            raise timed_out from None
        finally:
            if key is not None:
                self.deadlines.finish(key)
            if earlier is not None:
                self.progress_callbacks[token] = earlier
            else:
                self.progress_callbacks.pop(token, None)

    async def cancel_sent(self, request_id: RequestId, reason: str) -> None:
        """Tell the peer a request was given up (a ``notifications/cancelled``)."""
        if self.engine is not None:
            with contextlib.suppress(Exception):
                await self.engine.notify(
                    "notifications/cancelled", {"requestId": request_id, "reason": reason}
                )

    async def send_notification(
        self, spec: NotificationSpec, params: Mapping[str, Any] | None
    ) -> None:
        negotiated: NotificationSpec = self._negotiated(spec.method, "notification")
        self._check_gates(spec.method, negotiated.gates, negotiated.direction, "notification")
        wire = plain(params) if params and holds_models(params) else params
        negotiated.validate_params(wire)
        assert self.engine is not None
        await self.engine.notify(spec.method, wire)

    # -- tasks (2025-11-25) -------------------------------------------------------------

    def start_task(
        self, method: str, params: Any, work: Callable[[], Any]
    ) -> dict[str, Any] | None:
        """Run a task-augmented request (``params.task``) in the background when this side
        declared that it runs ``method`` as a task: its answer is the ``CreateTaskResult``.
        None: serve it normally (a receiver that did not declare it ignores ``task``)."""
        if (
            self.task_store is None
            or params.get("task") is None
            or not has_capability(self.own_capabilities, task_path(method))
        ):
            return None
        negotiated, spec, handler, _, _ = self.route(method)  # -32601 before a task is made
        if negotiated.variants:  # and -32602 for a variant this side did not declare
            self._variant_handler(negotiated, spec, params, handler)
        task = params["task"] if isinstance(params["task"], dict) else {}
        ttl = task.get("ttl") if isinstance(task.get("ttl"), int) else None
        record = self.task_store.start(method, ttl, work)
        return {"task": record.wire()}

    async def task_status(self, task: dict[str, Any]) -> None:
        """Tell the peer a task of ours changed (``notifications/tasks/status``)."""
        package = self.package
        if self.engine is not None and package and TASK_STATUS in package.dispatch.NOTIFICATIONS:
            await self.engine.notify(TASK_STATUS, task)

    # -- context hooks -------------------------------------------------------------------

    async def report_progress(
        self, context: RequestContext[Any], progress: float, total: float | None, message: str | None
    ) -> None:
        if self.engine is None:
            return
        params = context.progress_note(progress, total, message)
        if params is not None:
            await self.engine.notify("notifications/progress", params)

    async def log(
        self, context: RequestContext[Any], level: str, data: Any, logger_name: str | None
    ) -> None:
        if self.engine is None or self.package is None or self.log_level is None:
            return
        if level not in self.package.log_levels() or severity(level) < severity(self.log_level):
            return
        if not has_capability(self.own_capabilities, ("logging",)):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        await self.engine.notify("notifications/message", params)


class CommonBuiltins:
    """Handlers the runtime owns on both sides: ping, cancellation, progress of our requests."""

    def __init__(self, session: Session) -> None:
        self.session = session

    async def ping(self, params: Any, ctx: RequestContext[Any]) -> dict[str, Any]:
        """The runtime answers ping at once, on both sides; there is nothing to add."""
        return {}

    async def on_cancelled(self, params: Any, ctx: RequestContext[Any]) -> None:
        if self.session.engine is not None:
            self.session.engine.cancel_incoming(getattr(params, "request_id", None))

    async def on_progress(self, params: Any, ctx: RequestContext[Any]) -> None:
        callback = self.session.progress_callbacks.get(params.progress_token)
        if callback is not None:
            outcome = callback(params)
            if asyncio.iscoroutine(outcome):
                await outcome
