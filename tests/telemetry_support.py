"""The OpenTelemetry SDK for the telemetry tests: the GLOBAL tracer and meter providers,
set once per process, with an in-memory span exporter and metric reader.

The global tracer provider can be set only once, and another test file on the same worker
must not see trace context appear in its wire traffic, so the global provider is a switch:
while :func:`tracing` is entered its tracers are the SDK's (recording into ``EXPORTER``),
otherwise the API's no-op ones (no valid span, so nothing is injected into ``_meta``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from typedmcp.protocol import telemetry

REPO = Path(__file__).resolve().parent.parent
#: ``examples/notes_server.py`` over stdio with each finished span written to ``$TRACE_FILE``.
TRACED_SERVER = REPO / "tests" / "servers" / "traced_notes_server.py"
EXPORTER = InMemorySpanExporter()
READER = InMemoryMetricReader()
_SDK = TracerProvider()
_SDK.add_span_processor(SimpleSpanProcessor(EXPORTER))
_NOOP = trace.NoOpTracerProvider()
_state = {"on": False}


class _SwitchTracer(trace.Tracer):
    """A tracer that is the SDK's while tracing is switched on, the no-op one otherwise."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args, self._kwargs = args, kwargs

    def _real(self) -> trace.Tracer:
        return (_SDK if _state["on"] else _NOOP).get_tracer(*self._args, **self._kwargs)

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._real().start_span(*args, **kwargs)

    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Any:
        return self._real().start_as_current_span(*args, **kwargs)


class _SwitchProvider(trace.TracerProvider):
    def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
        return _SwitchTracer(*args, **kwargs)


def _install() -> None:
    if not isinstance(trace.get_tracer_provider(), _SwitchProvider):
        trace.set_tracer_provider(_SwitchProvider())
        metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))


@contextlib.contextmanager
def tracing() -> Iterator[InMemorySpanExporter]:
    """The SDK records (into the exporter, emptied first) and the runtime traces, until exit."""
    _install()
    EXPORTER.clear()
    _state["on"] = True
    telemetry.configure(True)
    try:
        yield EXPORTER
    finally:
        _state["on"] = False
        telemetry.configure(None)


def spans_named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def one(spans: Sequence[Any], what: str) -> Any:
    assert len(spans) == 1, f"{what}: {len(spans)} spans, {[getattr(s, 'name', s) for s in spans]}"
    return spans[0]


def duration_points(metric_name: str) -> list[Any]:
    """The histogram points of ``metric_name`` the SDK has recorded so far (cumulative)."""
    data = READER.get_metrics_data()
    points: list[Any] = []
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == metric_name:
                    assert metric.unit == "s"
                    points.extend(metric.data.data_points)
    return points


def file_spans(path: Path) -> list[dict[str, Any]]:
    """The spans a traced server process wrote (one JSON object per line)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def hex_id(value: int, width: int) -> str:
    """A span or trace id as the SDK's JSON writes it."""
    return "0x" + format(value, f"0{width}x")


def traced_server_command() -> list[str]:
    return [sys.executable, str(TRACED_SERVER)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def environment_without_tracing_off() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != telemetry.DISABLED_VARIABLE}
