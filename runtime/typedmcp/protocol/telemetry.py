"""OpenTelemetry spans and metrics per the semantic conventions for MCP (optional).

With the ``otel`` extra installed (``opentelemetry-api``), every request a session serves
gets a SERVER span and every request it sends a CLIENT span, named ``{mcp.method.name}
{target}`` (``tools/call add_note``) and attributed as the conventions say
(``mcp.method.name``, ``gen_ai.tool.name``, ``jsonrpc.request.id``, ``mcp.session.id``,
``mcp.protocol.version``, ``network.transport``, ``error.type``,
``rpc.response.status_code``); the durations go to the ``mcp.server.operation.duration``
and ``mcp.client.operation.duration`` histograms (seconds).

W3C trace context (SEP-414) travels in ``params._meta``: a sent request carries the
``traceparent``/``tracestate``/``baggage`` of its CLIENT span (written by the configured
propagators, so custom ones work), and a served request's SERVER span takes the context
found there as its parent (linking the ambient one, an HTTP server span for instance).
Both directions: a server's sampling request is traced the same way as a client's call.

The GLOBAL tracer and meter providers are used, so ``opentelemetry-instrument`` and any
exporter work unchanged. Without ``opentelemetry``, or with ``OTEL_SDK_DISABLED=true``,
nothing is imported: :func:`active` is None after one check, cached.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..engine.jsonrpc import RequestId, RpcError

#: The instrumentation scope's name (the tracer's and the meter's).
SCOPE = "typedmcp"
#: The ``_meta`` keys of SEP-414 (unprefixed, as the conventions say): the default
#: propagators' fields.
TRACE_KEYS = ("traceparent", "tracestate", "baggage")
#: The conventions' advisory bucket boundaries for the operation durations (seconds).
DURATION_BUCKETS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300)
#: The environment variable (OpenTelemetry's own) that turns tracing off.
DISABLED_VARIABLE = "OTEL_SDK_DISABLED"

_TARGETS = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_RESOURCE_METHODS = frozenset({"resources/read", "resources/subscribe", "resources/unsubscribe"})
_UNSET: Any = object()
_telemetry: Any = _UNSET

Call = Callable[[str, Any, RequestId], Awaitable[Any]]


def active() -> Telemetry | None:
    """The process's telemetry, or None when OpenTelemetry is absent or disabled (checked
    once: the first call imports it, the others return what was found)."""
    global _telemetry
    if _telemetry is _UNSET:
        _telemetry = _load()
    return _telemetry  # type: ignore[no-any-return]


def configure(enabled: bool | None = None) -> Telemetry | None:
    """Decide again (``None``: from the environment, as at start), or force tracing on
    (``True``, when OpenTelemetry is importable) or off (``False``); the benchmark and the
    tests use it. Returns what :func:`active` will return."""
    global _telemetry
    _telemetry = None if enabled is False else _load(force=enabled is True)
    return _telemetry  # type: ignore[no-any-return]


#: MCP's (syslog) log levels as Python's.
PYTHON_LEVELS = {
    "debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
    "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
    "alert": logging.CRITICAL, "emergency": logging.CRITICAL,
}
#: The Python logger that MCP log messages go to (``mcp.log.<logger>`` when one is named).
LOG_LOGGER = "mcp.log"


def log_record(level: str, data: Any, logger_name: str | None = None) -> None:
    """An MCP log message (``ctx.log``/``ctx.info``) as a Python log record, when tracing
    is configured: on the ``mcp.log`` logger (``mcp.log.<logger>``), at the Python level of
    ``level``, emitted in the current span, so OpenTelemetry's logging bridge
    (``opentelemetry-instrument`` with a logs exporter) exports it as a log correlated
    with the request's trace. The peer still gets ``notifications/message`` as before."""
    traced = active()
    if traced is None or not traced._configured():
        return
    name = f"{LOG_LOGGER}.{logger_name}" if logger_name else LOG_LOGGER
    message = data if isinstance(data, str) else json.dumps(data, default=str)
    logging.getLogger(name).log(
        PYTHON_LEVELS.get(level, logging.INFO), "%s", message, extra={"mcp_log_level": level}
    )


def _load(force: bool = False) -> Telemetry | None:
    if not force and os.environ.get(DISABLED_VARIABLE, "").strip().lower() == "true":
        return None
    try:
        return Telemetry()
    except ImportError:
        return None


def _runtime_version() -> str:
    """The runtime's version, from its package (always imported before this module; read
    from ``sys.modules``, not imported: the package is the layer above this one)."""
    package = sys.modules.get(__name__.split(".", 1)[0])
    return str(getattr(package, "__version__", ""))


def _transport_of(session: Any) -> Any:
    engine = getattr(session, "engine", None)
    return getattr(engine, "transport", None)


def _wire_params(params: Any) -> Mapping[str, Any]:
    return params if isinstance(params, Mapping) else {}


def _result_is_error(result: Any) -> bool:
    """A CallToolResult with ``isError: true`` (a dict or a model)."""
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


def _error_type(error: BaseException) -> str:
    if isinstance(error, RpcError):
        return str(error.code)
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, asyncio.CancelledError):
        return "cancelled"
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


class _StringGetter:
    """Reads only string ``_meta`` values (another type under a trace key is ignored)."""

    def get(self, carrier: Mapping[str, Any], key: str) -> list[str] | None:
        value = carrier.get(key)
        return [value] if isinstance(value, str) else None

    def keys(self, carrier: Mapping[str, Any]) -> list[str]:
        return [key for key, value in carrier.items() if isinstance(value, str)]


class Telemetry:
    """The tracer, the meter's two histograms and the propagators, found once."""

    def __init__(self) -> None:
        from opentelemetry import context, metrics, propagate, trace

        version = _runtime_version()
        self._trace = trace
        self._metrics = metrics
        self._context = context
        self._seen_provider = False
        self._textmap: Any = None
        self._field_names: frozenset[str] = frozenset(TRACE_KEYS)
        # the providers of an unconfigured API (the proxy's meter provider class is private:
        # without it, any meter provider counts as configured, which is only slower)
        proxy_meters = getattr(getattr(metrics, "_internal", None), "_ProxyMeterProvider", None)
        self._idle_tracers: tuple[type, ...] = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
        self._idle_meters: tuple[type, ...] = (metrics.NoOpMeterProvider,) + (
            (proxy_meters,) if isinstance(proxy_meters, type) else ()
        )
        self._propagate = propagate
        self._getter: Any = _StringGetter()  # duck-typed: the API's Getter is a Protocol-like ABC
        self.tracer = trace.get_tracer(SCOPE, version)
        meter = metrics.get_meter(SCOPE, version)
        self.server_duration = meter.create_histogram(
            "mcp.server.operation.duration", unit="s",
            description="MCP request duration as observed on the receiver, from the time it "
            "was received until the result is sent.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        self.client_duration = meter.create_histogram(
            "mcp.client.operation.duration", unit="s",
            description="The duration of the MCP request as observed on the sender, from the "
            "time it was sent until the response is received.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )

    # -- attributes ------------------------------------------------------------------------

    def _describe(
        self, session: Any, method: str, params: Any, request_id: RequestId | None
    ) -> tuple[str, dict[str, Any], dict[str, Any]]:
        """(the span name, the span's attributes, the metric's attributes) of one request."""
        wire = _wire_params(params)
        metric: dict[str, Any] = {"mcp.method.name": method}
        name = method
        target_key = _TARGETS.get(method)
        if target_key is not None:
            target = wire.get("name")
            if isinstance(target, str):
                metric[target_key] = target
                name = f"{method} {target}"
            if method == "tools/call":
                metric["gen_ai.operation.name"] = "execute_tool"
        package = getattr(session, "package", None)
        version = getattr(package, "version", None)
        if version is None and method == "initialize":
            version = wire.get("protocolVersion")
        if isinstance(version, str):
            metric["mcp.protocol.version"] = version
        transport = _transport_of(session)
        network = getattr(transport, "network_transport", None) or getattr(
            session, "network_transport", None
        )
        if network is not None:
            metric["network.transport"] = network
            if network == "tcp":
                metric["network.protocol.name"] = "http"
        span = dict(metric)
        if request_id is not None:
            span["jsonrpc.request.id"] = str(request_id)
        session_id = getattr(transport, "session_id", None)
        if isinstance(session_id, str) and session_id:
            span["mcp.session.id"] = session_id
        if method in _RESOURCE_METHODS:
            uri = wire.get("uri")
            if isinstance(uri, str):
                span["mcp.resource.uri"] = uri
        return name, span, metric

    def _failed(self, span: Any, metric: dict[str, Any], error: BaseException) -> None:
        kind = _error_type(error)
        metric["error.type"] = kind
        span.set_attribute("error.type", kind)
        if isinstance(error, RpcError):
            metric["rpc.response.status_code"] = kind
            span.set_attribute("rpc.response.status_code", kind)
            message = error.message
        else:
            span.record_exception(error)
            message = str(error) or kind
        span.set_status(self._trace.StatusCode.ERROR, message)

    def _answered(self, span: Any, metric: dict[str, Any], result: Any) -> None:
        if _result_is_error(result):
            metric["error.type"] = "tool_error"
            span.set_attribute("error.type", "tool_error")
            span.set_status(self._trace.StatusCode.ERROR, "tool_error")

    # -- the two sides ---------------------------------------------------------------------

    def _configured(self) -> bool:
        """Whether a tracer or meter provider was set (the SDK's, say): until then every
        span and histogram would be the API's no-op, and only the trace context is passed
        on. Once set, a global provider stays set, so True is kept."""
        if self._seen_provider:
            return True
        if self._unset_globals():  # (the API's getters read the environment each time)
            return False
        if isinstance(self._trace.get_tracer_provider(), self._idle_tracers) and isinstance(
            self._metrics.get_meter_provider(), self._idle_meters
        ):
            return False
        self._seen_provider = True
        return True

    def _unset_globals(self) -> bool:
        """Whether neither global provider was ever set: the API keeps them in module
        globals (private names; when they are missing, False: the public check decides)."""
        internal = getattr(self._metrics, "_internal", None)
        tracers = getattr(self._trace, "_TRACER_PROVIDER", ...)
        meters = getattr(internal, "_METER_PROVIDER", ...)
        return tracers is None and meters is None

    def _fields(self) -> frozenset[str]:
        """The ``_meta`` keys the configured propagators read (``traceparent``,
        ``tracestate``, ``baggage`` by default; a custom propagator's own), looked up again
        only when the global propagator is replaced."""
        textmap = self._propagate.get_global_textmap()
        if textmap is not self._textmap:
            self._textmap, self._field_names = textmap, frozenset(textmap.fields)
        return self._field_names

    def _remote_parent(self, meta: Any) -> tuple[Any, Any]:
        """(the context to serve in, the span to link) from ``_meta``: None when it carries
        no trace context. Extracted into the current context, so a missing or malformed
        traceparent leaves the ambient span the parent (not a new root); a valid one
        replaces it, and the ambient span becomes a link."""
        if not isinstance(meta, Mapping) or self._fields().isdisjoint(meta):
            return None, None
        trace = self._trace
        ambient = self._context.get_current()
        parent = self._propagate.extract(meta, context=ambient, getter=self._getter)
        before = trace.get_current_span(ambient).get_span_context()
        after = trace.get_current_span(parent).get_span_context()
        if before.is_valid and after.span_id != before.span_id:
            return parent, trace.Link(before)
        return parent, None

    def _with_context(self, wire: Any) -> Any:
        """``wire`` with the current trace context in its ``_meta`` (a copy), or as it was
        when there is none to send."""
        carrier: dict[str, str] = {}
        self._propagate.inject(carrier)
        if not carrier:
            return wire
        params = dict(wire) if isinstance(wire, Mapping) else {}
        meta = params.get("_meta")
        params["_meta"] = {**meta, **carrier} if isinstance(meta, Mapping) else carrier
        return params

    async def serve(
        self, session: Any, method: str, params: Any, request_id: RequestId, call: Call
    ) -> Any:
        """Serve one received request inside its SERVER span, parented on the trace context
        of its ``params._meta`` (when there is one), and record its duration."""
        parent, link = self._remote_parent(_wire_params(params).get("_meta"))
        if not self._configured():  # no spans to make: the context still passes through
            if parent is None:
                return await call(method, params, request_id)
            token = self._context.attach(parent)
            try:
                return await call(method, params, request_id)
            finally:
                self._context.detach(token)
        name, attributes, metric = self._describe(session, method, params, request_id)
        started = time.perf_counter()
        with self.tracer.start_as_current_span(
            name, context=parent, kind=self._trace.SpanKind.SERVER, attributes=attributes,
            links=None if link is None else [link], record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = await call(method, params, request_id)
            except BaseException as error:
                self._failed(span, metric, error)
                raise
            else:
                self._answered(span, metric, result)
                return result
            finally:
                self.server_duration.record(time.perf_counter() - started, metric)

    async def call(
        self, session: Any, method: str, wire: Any, request_id: RequestId,
        send: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """Send one request inside its CLIENT span, with the span's trace context written
        into ``params._meta`` (a copy: the caller's params are left as they were)."""
        if not self._configured():  # no span: the current context (if any) is sent on
            if not self._context.get_current():  # (nothing in it: no span, no baggage)
                return await send(wire)
            return await send(self._with_context(wire))
        name, attributes, metric = self._describe(session, method, wire, request_id)
        started = time.perf_counter()
        with self.tracer.start_as_current_span(
            name, kind=self._trace.SpanKind.CLIENT, attributes=attributes,
            record_exception=False, set_status_on_exception=False,
        ) as span:
            try:
                raw = await send(self._with_context(wire))
            except BaseException as error:
                self._failed(span, metric, error)
                raise
            else:
                self._answered(span, metric, raw)
                return raw
            finally:
                self.client_duration.record(time.perf_counter() - started, metric)
