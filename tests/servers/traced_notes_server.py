"""``examples/notes_server.py`` over stdio, traced: the OpenTelemetry SDK is the global
tracer provider and writes each finished span as one JSON line to ``$TRACE_FILE`` (at the
span's end, so before the response that ends it is sent). The telemetry tests read it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

REPO = Path(__file__).resolve().parent.parent.parent


def one_line(span: ReadableSpan) -> str:
    return span.to_json(indent=None) + "\n"


def main() -> None:
    out = open(os.environ["TRACE_FILE"], "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=one_line)))
    trace.set_tracer_provider(provider)
    sys.path.insert(0, str(REPO / "examples"))
    from notes_server import app

    from typedmcp import run_stdio

    run_stdio(app)


if __name__ == "__main__":
    main()
