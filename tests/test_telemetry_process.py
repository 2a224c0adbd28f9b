"""OpenTelemetry across processes: our client and the official SDK client (mcp 2.3.0) over
stdio to ``examples/notes_server.py`` traced in its own process (both eras; its spans are
read from the file it writes), nothing of opentelemetry imported when tracing is off or
absent, and ``opentelemetry-instrument`` with the console exporter against the example."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import stop_process, wait_listening
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from telemetry_support import (
    REPO,
    environment_without_tracing_off,
    file_spans,
    free_port,
    hex_id,
    one,
    spans_named,
    traced_server_command,
    tracing,
)

from mcp_generated import v2025_11_25
from typedmcp.connecting import connect_http, connect_stdio
from typedmcp.protocol import telemetry

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]
NOTES_SERVER = REPO / "examples" / "notes_server.py"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    with tracing() as exporter:
        yield exporter


def server_span(trace_file: Path, name: str) -> dict[str, Any]:
    return one([s for s in file_spans(trace_file) if s["name"] == name], f"the server's {name}")  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("protocol", "version"), [("auto", "2026-07-28"), (v2025_11_25, "2025-11-25")], ids=["2026-07-28", "2025-11-25"]
)
async def test_over_stdio_the_server_process_continues_the_clients_trace(
    spans: InMemorySpanExporter, tmp_path: Path, protocol: Any, version: str
) -> None:
    trace_file = tmp_path / "spans.jsonl"
    env = {**environment_without_tracing_off(), "TRACE_FILE": str(trace_file)}
    async with connect_stdio(traced_server_command(), protocol=protocol, env=env, cwd=str(REPO)) as client:
        await client.call_tool(name="add_note", arguments={"title": "piped", "body": "b"})
    caller = one(
        [s for s in spans_named(spans, "tools/call add_note") if s.kind is SpanKind.CLIENT], "the call"
    )
    assert caller.attributes["network.transport"] == "pipe"
    served = server_span(trace_file, "tools/call add_note")
    assert served["kind"] == "SpanKind.SERVER"
    assert served["context"]["trace_id"] == hex_id(caller.context.trace_id, 32)
    assert served["parent_id"] == hex_id(caller.context.span_id, 16)
    attributes = served["attributes"]
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "add_note"
    assert attributes["mcp.protocol.version"] == version
    assert attributes["network.transport"] == "pipe"
    assert attributes["jsonrpc.request.id"] == caller.attributes["jsonrpc.request.id"]


async def test_the_sdk_clients_traceparent_is_honoured(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    """The official SDK client writes ``_meta.traceparent`` (SEP-414); our server's span is
    the child of the SDK's CLIENT span, in the trace of the span around the call."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    trace_file = tmp_path / "spans.jsonl"
    target = StdioServerParameters(
        command=sys.executable, args=[str(traced_server_command()[1])], cwd=str(REPO),
        env={**environment_without_tracing_off(), "TRACE_FILE": str(trace_file)},
    )
    with trace.get_tracer("test").start_as_current_span("agent step") as outer:
        async with Client(target, mode="legacy") as client:  # type: ignore[arg-type]
            await client.call_tool("add_note", {"title": "from the sdk", "body": "b"})
    served = server_span(trace_file, "tools/call add_note")
    assert served["context"]["trace_id"] == hex_id(outer.get_span_context().trace_id, 32)
    sdk_spans = {
        hex_id(span.context.span_id, 16): span
        for span in spans.get_finished_spans()
        if span.instrumentation_scope is not None and span.instrumentation_scope.name == "mcp-python-sdk"
    }
    parent = sdk_spans.get(served["parent_id"])
    assert parent is not None, f"the server's parent {served['parent_id']} is no SDK span: {sdk_spans}"
    assert parent.kind is SpanKind.CLIENT


NO_IMPORT = textwrap.dedent(
    """
    import asyncio, sys
    if sys.argv[1] == "absent":
        for name in ("opentelemetry", "opentelemetry.trace", "opentelemetry.metrics"):
            sys.modules[name] = None  # import opentelemetry raises ImportError
    sys.path.insert(0, "examples")
    from notes_server import app
    from typedmcp.connecting import connect_direct
    from typedmcp.protocol import telemetry

    async def main():
        for protocol in ("auto", "legacy"):
            from mcp_generated import v2025_11_25
            async with connect_direct(app, protocol="auto" if protocol == "auto" else v2025_11_25) as client:
                await client.call_tool(name="add_note", arguments={"title": "t", "body": "b"})
    asyncio.run(main())
    loaded = sorted(name for name, module in sys.modules.items() if name.startswith("opentelemetry") and module)
    print(telemetry.active(), loaded)
    """
)


@pytest.mark.parametrize("how", ["disabled", "absent"])
def test_off_or_absent_nothing_of_opentelemetry_is_imported(how: str) -> None:
    env = {**environment_without_tracing_off(), "MCP_CODEGEN_SCHEMA_DIR": os.environ.get("MCP_CODEGEN_SCHEMA_DIR", "")}
    if how == "disabled":
        env[telemetry.DISABLED_VARIABLE] = "true"
    done = subprocess.run(
        [sys.executable, "-c", NO_IMPORT, how], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None []"


def test_the_same_program_traces_when_opentelemetry_is_there() -> None:
    """The control of the test above: without the switch, the same calls load the API."""
    env = {**environment_without_tracing_off(), "MCP_CODEGEN_SCHEMA_DIR": os.environ.get("MCP_CODEGEN_SCHEMA_DIR", "")}
    done = subprocess.run(
        [sys.executable, "-c", NO_IMPORT, "present"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "opentelemetry.trace" in done.stdout and "Telemetry object" in done.stdout


async def test_opentelemetry_instrument_with_the_console_exporter_prints_the_spans() -> None:
    """Zero-code: ``opentelemetry-instrument --traces_exporter console`` around the example
    (the distro configures the global providers); the spans appear on its output."""
    instrument = Path(sys.executable).parent / "opentelemetry-instrument"
    port = free_port()
    env = {
        **environment_without_tracing_off(),
        "OTEL_SERVICE_NAME": "notes",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "PYTHONUNBUFFERED": "1",
    }
    process = subprocess.Popen(
        [str(instrument), "--traces_exporter", "console", "--metrics_exporter", "none",
         "--logs_exporter", "none", sys.executable, str(NOTES_SERVER), "--port", str(port)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        wait_listening(process, port)
        async with connect_http(f"http://127.0.0.1:{port}/mcp", protocol=v2025_11_25) as client:
            await client.call_tool(name="add_note", arguments={"title": "instrumented", "body": "b"})
    finally:
        stop_process(process)  # SIGTERM: uvicorn stops, the SDK flushes its batch at exit
    out, err = process.communicate()
    printed = json.loads("[" + out.decode().replace("}\n{", "},\n{") + "]") if out.strip() else []
    names = {(span["name"], span["kind"]) for span in printed}
    assert ("tools/call add_note", "SpanKind.SERVER") in names, (names, err.decode()[-2000:])
    served = next(span for span in printed if span["name"] == "tools/call add_note")
    assert served["attributes"]["gen_ai.tool.name"] == "add_note"
    assert served["resource"]["attributes"]["service.name"] == "notes"


PASS_THROUGH = textwrap.dedent(
    """
    import asyncio
    from mcp_generated.v2025_11_25 import models
    from mcp_generated.v2025_11_25.client import ClientHandlers
    from typedmcp.app import Context, McpApp
    from typedmcp.connecting import connect_direct
    from typedmcp.protocol import telemetry

    app = McpApp("hop")
    seen = {}

    @app.tool()
    async def think(ctx: Context) -> str:
        await ctx.sample("hi", max_tokens=5)
        return "ok"

    class Sampler(ClientHandlers):
        async def create_message(self, params, ctx):
            seen["traceparent"] = ctx.meta.get("traceparent")
            return models.CreateMessageResult(
                role="assistant", content=models.TextContent(type="text", text="s"), model="m")

    async def main():
        from mcp_generated import v2025_11_25
        async with connect_direct(app, protocol=v2025_11_25, client_handlers=Sampler()) as client:
            await client.call_tool(name="think", arguments={}, meta={"traceparent": TRACEPARENT})
    TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    asyncio.run(main())
    print(type(telemetry.active()).__name__, seen["traceparent"] == TRACEPARENT)
    """
)


def test_with_no_provider_configured_the_trace_context_still_passes_through() -> None:
    """opentelemetry-api alone (no SDK, no provider): no spans are made, but a request's
    trace context is the context its handler's own requests carry on (one hop, one trace)."""
    env = {**environment_without_tracing_off(), "MCP_CODEGEN_SCHEMA_DIR": os.environ.get("MCP_CODEGEN_SCHEMA_DIR", "")}
    done = subprocess.run(
        [sys.executable, "-c", PASS_THROUGH], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Telemetry", "True"]
