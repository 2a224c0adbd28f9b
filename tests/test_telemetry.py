"""OpenTelemetry in one process (``runtime/typedmcp/protocol/telemetry.py``): spans named and
attributed per the MCP semantic conventions, the CLIENT span the parent of the SERVER span
through ``params._meta`` (in-process and over Streamable HTTP, both eras), both ways
(sampling), errors (``error.type``, ``rpc.response.status_code``), the duration histograms,
and through the gateway. The SDK's in-memory exporter and metric reader see it all."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from opentelemetry import baggage, context, propagate, trace
from opentelemetry import context as context_api
from opentelemetry.propagators.textmap import TextMapPropagator, default_getter, default_setter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from telemetry_support import (
    REPO,
    TRACED_SERVER,
    duration_points,
    file_spans,
    hex_id,
    one,
    spans_named,
    tracing,
)

from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import ClientHandlers
from typedmcp import http_app
from typedmcp.app import Context, McpApp
from typedmcp.connecting import connect_direct, connect_http
from typedmcp.testing import served_http
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol import telemetry

sys.path.insert(0, str(REPO / "examples"))
from notes_server import app as notes_app

pytestmark = pytest.mark.anyio
ERAS = pytest.mark.parametrize(
    ("protocol", "version"), [("auto", "2026-07-28"), (v2025_11_25, "2025-11-25")], ids=["2026-07-28", "2025-11-25"]
)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with tracing() as exporter:
        yield exporter


def traced_app() -> McpApp:
    app = McpApp("traced")

    @app.tool()
    def broken(reason: str) -> str:
        """Always fails."""
        raise ValueError(reason)

    @app.tool()
    async def think(ctx: Context) -> str:
        """Asks the client's LLM."""
        sampled = await ctx.sample("hi", max_tokens=5)
        return str(sampled.content.text)  # type: ignore[union-attr]

    return app


class Sampler(ClientHandlers):
    async def create_message(self, params: Any, ctx: Any) -> models.CreateMessageResult:
        return models.CreateMessageResult(
            role="assistant", content=models.TextContent(type="text", text="sampled"), model="m"
        )


def check_pair(spans: InMemorySpanExporter, name: str, version: str) -> tuple[Any, Any]:
    """The one CLIENT and the one SERVER span of ``name``: the server's parent is the client."""
    found = spans_named(spans, name)
    client = one([s for s in found if s.kind is SpanKind.CLIENT], f"CLIENT {name}")
    server = one([s for s in found if s.kind is SpanKind.SERVER], f"SERVER {name}")
    assert server.parent is not None and server.parent.is_remote
    assert server.parent.span_id == client.context.span_id
    assert server.context.trace_id == client.context.trace_id
    for span in (client, server):
        assert span.attributes["mcp.method.name"] == name.split(" ")[0]
        assert span.attributes["mcp.protocol.version"] == version
    assert client.attributes["jsonrpc.request.id"] == server.attributes["jsonrpc.request.id"]
    return client, server


@ERAS
async def test_a_direct_call_is_a_client_span_parenting_the_server_span(
    spans: InMemorySpanExporter, protocol: Any, version: str
) -> None:
    async with connect_direct(notes_app, protocol=protocol) as client:
        await client.call_tool(name="add_note", arguments={"title": "traced", "body": "b"})
    client_span, server_span = check_pair(spans, "tools/call add_note", version)
    for span in (client_span, server_span):
        assert span.attributes["gen_ai.tool.name"] == "add_note"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert "error.type" not in span.attributes
        assert span.status.status_code is StatusCode.UNSET


@ERAS
async def test_over_http_the_spans_name_the_transport_and_the_session(
    spans: InMemorySpanExporter, protocol: Any, version: str
) -> None:
    async with served_http(http_app(notes_app)) as url, connect_http(url, protocol=protocol) as client:
        await client.call_tool(name="search_notes", arguments={"query": "x"})
        session_id = client.session.engine.transport.session_id
    client_span, server_span = check_pair(spans, "tools/call search_notes", version)
    for span in (client_span, server_span):
        assert span.attributes["network.transport"] == "tcp"
        assert span.attributes["network.protocol.name"] == "http"
    if version == "2025-11-25":
        assert session_id
        assert client_span.attributes["mcp.session.id"] == session_id
        assert server_span.attributes["mcp.session.id"] == session_id
    else:  # the stateless era has no session
        assert session_id is None
        assert "mcp.session.id" not in server_span.attributes


@ERAS
async def test_a_failing_tool_and_a_json_rpc_error_set_error_type(
    spans: InMemorySpanExporter, protocol: Any, version: str
) -> None:
    async with connect_direct(traced_app(), protocol=protocol) as client:
        result = await client.call_tool(name="broken", arguments={"reason": "on purpose"})
        assert result.is_error
        with pytest.raises(RpcError) as refused:
            await client.call_tool(name="missing", arguments={})
    for span in check_pair(spans, "tools/call broken", version):
        assert span.attributes["error.type"] == "tool_error"
        assert span.status.status_code is StatusCode.ERROR
        assert "rpc.response.status_code" not in span.attributes
    code = str(refused.value.code)
    for span in check_pair(spans, "tools/call missing", version):
        assert span.attributes["error.type"] == code
        assert span.attributes["rpc.response.status_code"] == code
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == refused.value.message


async def test_the_durations_are_recorded_in_seconds_per_method_and_tool(spans: InMemorySpanExporter) -> None:
    async with connect_direct(traced_app(), protocol=v2025_11_25) as client:
        await client.call_tool(name="broken", arguments={"reason": "metric"})
    for name in ("mcp.server.operation.duration", "mcp.client.operation.duration"):
        points = [
            point for point in duration_points(name)
            if point.attributes.get("gen_ai.tool.name") == "broken"
        ]
        assert points, f"no {name} point for tools/call broken"
        point = points[0]
        assert point.attributes["mcp.method.name"] == "tools/call"
        assert point.attributes["error.type"] == "tool_error"
        assert "jsonrpc.request.id" not in point.attributes  # high cardinality: spans only
        assert point.count >= 1 and point.sum > 0
        assert list(point.explicit_bounds) == list(telemetry.DURATION_BUCKETS)


async def test_a_server_to_client_request_is_traced_the_same_way_back(spans: InMemorySpanExporter) -> None:
    """The tool's sampling request: a CLIENT span in the tool's SERVER span on the server,
    the parent of a SERVER span on the client, all in the call's trace."""
    async with connect_direct(traced_app(), protocol=v2025_11_25, client_handlers=Sampler()) as client:
        result = await client.call_tool(name="think", arguments={})
        assert result.content[0].text == "sampled"
    _, tool_server = check_pair(spans, "tools/call think", "2025-11-25")
    asked, answered = check_pair(spans, "sampling/createMessage", "2025-11-25")
    assert asked.parent is not None and asked.parent.span_id == tool_server.context.span_id
    assert answered.context.trace_id == tool_server.context.trace_id


async def test_the_callers_span_and_baggage_travel_and_its_params_stay_as_given(spans: InMemorySpanExporter) -> None:
    tracer = trace.get_tracer("test")
    seen: dict[str, Any] = {}
    app = McpApp("meta")

    @app.tool()
    def echo(ctx: Context) -> str:
        """What the request carried."""
        seen.update(meta=dict(ctx.meta), baggage=baggage.get_baggage("tenant"))
        return "ok"

    meta = {"com.example/mine": "kept"}
    token = context.attach(baggage.set_baggage("tenant", "acme"))
    try:
        with tracer.start_as_current_span("outer") as outer:
            async with connect_direct(app, protocol=v2025_11_25) as client:
                await client.call_tool(name="echo", arguments={}, meta=meta)
    finally:
        context.detach(token)
    client_span, _ = check_pair(spans, "tools/call echo", "2025-11-25")
    assert client_span.parent is not None and client_span.parent.span_id == outer.get_span_context().span_id
    assert seen["meta"]["com.example/mine"] == "kept"
    assert seen["meta"]["traceparent"].split("-")[2] == format(client_span.context.span_id, "016x")
    assert seen["meta"]["baggage"] == "tenant=acme" and seen["baggage"] == "acme"
    assert meta == {"com.example/mine": "kept"}  # the caller's dict is not written to


def fake_session() -> Any:
    return SimpleNamespace(package=SimpleNamespace(version="2025-11-25"), engine=None, network_transport=None)


@pytest.mark.parametrize("traceparent", ["garbage", 7], ids=["malformed", "not-a-string"])
async def test_a_bad_traceparent_leaves_the_ambient_span_the_parent(
    spans: InMemorySpanExporter, traceparent: Any
) -> None:
    traced = telemetry.active()
    assert traced is not None

    async def answer(method: str, params: Any, request_id: Any) -> Any:
        return {}

    params = {"_meta": {"traceparent": traceparent}}
    with trace.get_tracer("test").start_as_current_span("http request") as ambient:
        await traced.serve(fake_session(), "ping", params, 1, answer)
    served = one(spans_named(spans, "ping"), "ping")
    assert served.parent is not None and served.parent.span_id == ambient.get_span_context().span_id
    assert served.links == ()


async def test_a_remote_parent_links_the_ambient_span(spans: InMemorySpanExporter) -> None:
    traced = telemetry.active()
    assert traced is not None
    remote = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    async def answer(method: str, params: Any, request_id: Any) -> Any:
        return {}

    with trace.get_tracer("test").start_as_current_span("http request") as ambient:
        await traced.serve(fake_session(), "ping", {"_meta": {"traceparent": remote}}, 1, answer)
    served = one(spans_named(spans, "ping"), "ping")
    assert served.parent is not None and format(served.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert format(served.context.trace_id, "032x") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert [link.context.span_id for link in served.links] == [ambient.get_span_context().span_id]


async def test_through_the_gateway_one_trace_from_the_caller_to_the_server(
    spans: InMemorySpanExporter, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Caller's CLIENT span -> the gateway's SERVER span -> the gateway's CLIENT span (here)
    -> the notes server's SERVER span (its own process, written to a file): one trace."""
    from typedmcp.host import Host

    trace_file = tmp_path / "spans.jsonl"
    monkeypatch.setenv("TRACE_FILE", str(trace_file))
    config = {"notes": {"command": sys.executable, "args": [str(TRACED_SERVER)], "cwd": str(REPO)}}
    async with Host(config) as host:
        listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        serving = asyncio.ensure_future(host.serve(http=("127.0.0.1", 0), ready=listening.set_result))
        try:
            await asyncio.wait({listening, serving}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
            url = f"http://127.0.0.1:{listening.result()}/mcp"
            async with connect_http(url, protocol=v2025_11_25) as client:
                await client.call_tool(name="notes__add_note", arguments={"title": "via", "body": "gw"})
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
    caller, gateway_in = check_pair(spans, "tools/call notes__add_note", "2025-11-25")
    gateway_out = one(
        [s for s in spans_named(spans, "tools/call add_note") if s.kind is SpanKind.CLIENT],
        "the gateway's outgoing call",
    )
    assert gateway_out.parent is not None and gateway_out.parent.span_id == gateway_in.context.span_id
    assert gateway_out.attributes["network.transport"] == "pipe"
    trace_id = caller.context.trace_id
    assert {s.context.trace_id for s in (caller, gateway_in, gateway_out)} == {trace_id}
    served = one(
        [s for s in file_spans(trace_file) if s["name"] == "tools/call add_note"], "the notes server's span"
    )
    assert served["kind"] == "SpanKind.SERVER"
    assert served["context"]["trace_id"] == hex_id(trace_id, 32)
    assert served["parent_id"] == hex_id(gateway_out.context.span_id, 16)
    assert served["attributes"]["network.transport"] == "pipe"


class SpanNoting(logging.Handler):
    """Keeps each record with the span that was current when it was emitted."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[logging.LogRecord, trace.SpanContext]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record, trace.get_current_span().get_span_context()))


@contextlib.contextmanager
def noting_mcp_logs() -> Iterator[SpanNoting]:
    handler = SpanNoting()
    logger = logging.getLogger(telemetry.LOG_LOGGER)
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.DEBUG
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def logging_app() -> McpApp:
    app = McpApp("logs")

    @app.tool()
    async def note(ctx: Context) -> str:
        """Logs twice."""
        await ctx.warning("disk almost full", logger="store")
        await ctx.debug({"free": 3})
        return "ok"

    return app


@ERAS
async def test_an_mcp_log_message_is_a_python_log_record_in_the_requests_span(
    spans: InMemorySpanExporter, protocol: Any, version: str
) -> None:
    """The deprecated Logging mapped onto OpenTelemetry: ``ctx.warning`` is a record of the
    ``mcp.log.<logger>`` logger at WARNING, emitted in the tool's SERVER span (what the
    OpenTelemetry logging bridge correlates a log with)."""
    with noting_mcp_logs() as noted:
        async with connect_direct(logging_app(), protocol=protocol) as client:
            await client.call_tool(name="note", arguments={})
    _, served = check_pair(spans, "tools/call note", version)
    assert [(r.name, r.levelno, r.getMessage()) for r, _ in noted.seen] == [
        ("mcp.log.store", logging.WARNING, "disk almost full"),
        ("mcp.log", logging.DEBUG, '{"free": 3}'),
    ]
    assert {span.span_id for _, span in noted.seen} == {served.context.span_id}


async def test_with_tracing_off_an_mcp_log_message_is_no_python_record() -> None:
    telemetry.configure(False)
    try:
        with noting_mcp_logs() as noted:
            async with connect_direct(logging_app(), protocol=v2025_11_25) as client:
                await client.call_tool(name="note", arguments={})
    finally:
        telemetry.configure(None)
    assert noted.seen == []


class Marker(TextMapPropagator):
    """A custom propagator: writes its own ``_meta`` key, and notes what it reads."""

    KEY = "com.example/marker"

    def __init__(self) -> None:
        self.read: list[str | None] = []

    def inject(self, carrier: Any, context: Any = None, setter: Any = default_setter) -> None:
        setter.set(carrier, self.KEY, "from-the-caller")

    def extract(self, carrier: Any, context: Any = None, getter: Any = default_getter) -> Any:
        found = getter.get(carrier, self.KEY)
        self.read.append(found[0] if found else None)
        return context if context is not None else context_api.Context()

    @property
    def fields(self) -> set[str]:
        return {self.KEY}


async def test_the_configured_propagators_write_and_read_the_context(spans: InMemorySpanExporter) -> None:
    """Only the custom propagator (no W3C one): its own key goes into ``_meta`` and is what
    the server reads; nothing of W3C's is written."""
    marker = Marker()
    seen: dict[str, Any] = {}
    app = McpApp("propagated")

    @app.tool()
    def echo(ctx: Context) -> str:
        """What the request carried."""
        seen.update(ctx.meta)
        return "ok"

    previous = propagate.get_global_textmap()
    propagate.set_global_textmap(marker)
    try:
        async with connect_direct(app, protocol=v2025_11_25) as client:
            await client.call_tool(name="echo", arguments={})
    finally:
        propagate.set_global_textmap(previous)
    assert seen.get(Marker.KEY) == "from-the-caller"
    assert "traceparent" not in seen
    assert marker.read == ["from-the-caller"]
