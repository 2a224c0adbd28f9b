"""Benchmark what OpenTelemetry costs per call (``typedmcp.protocol.telemetry``).

Run from the repository root::

    .venv/bin/python benchmarks/bench_telemetry.py [--calls 2000] [--rounds 7] [--quick]

One in-process connection (``connect_direct``: no transport, so the telemetry is a large part
of what is timed) to an ``McpApp`` with one async tool, in each of three settings:

* ``off``: tracing disabled (``OTEL_SDK_DISABLED=true``), the same code path as
  OpenTelemetry absent: the cached None, nothing imported;
* ``no-op``: opentelemetry-api installed, no provider configured (what a user of the ``otel``
  extra pays before choosing an exporter): no spans, the trace context passed on;
* ``sdk``: the SDK's tracer and meter providers as the global ones, a CLIENT and a SERVER
  span per call, every span kept (SimpleSpanProcessor into the in-memory exporter, emptied
  after each round), both duration histograms aggregated by an in-memory metric reader.

A global provider is set once per process, so each setting runs in its own child process
(started once, warmed up); each round asks every child for ``--calls`` calls, in a rotating
order, and the child times them with ``time.process_time`` (its CPU time: on a loaded
machine the wall clock also counts other processes). Reported: the median CPU microseconds
per call of each setting and the median of the rounds' paired ratios to ``off``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from typedmcp.app import McpApp
from typedmcp.connecting import connect_direct
from typedmcp.protocol import telemetry

SETTINGS = ("off", "no-op", "sdk")


def echo_app() -> McpApp:
    """The server: one async tool with a small argument and a text result."""
    app = McpApp("bench-telemetry", version="1.0.0")

    @app.tool()
    async def echo(text: str) -> str:
        """The text, back."""
        return text

    return app


def install_sdk() -> InMemorySpanExporter:
    """The SDK as the global tracer and meter providers, keeping everything in memory."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    return exporter


async def child(setting: str) -> None:
    """Serve the parent's rounds: read a number of calls, make them, print CPU µs per call."""
    exporter = install_sdk() if setting == "sdk" else None
    expected = setting != "off"
    if (telemetry.active() is not None) != expected:
        raise SystemExit(f"{setting}: telemetry.active() is {telemetry.active()!r}")
    arguments = {"text": "hello"}
    async with connect_direct(echo_app(), protocol="auto") as client:
        for _ in range(200):  # warm-up, untimed
            await client.call_tool(name="echo", arguments=arguments)
        print("ready", flush=True)
        while line := (await asyncio.to_thread(sys.stdin.readline)).strip():
            calls = int(line)
            started = time.process_time()
            for _ in range(calls):
                await client.call_tool(name="echo", arguments=arguments)
            elapsed = time.process_time() - started
            if exporter is not None:
                kept = len(exporter.get_finished_spans())
                if kept < 2 * calls:
                    raise SystemExit(f"sdk: {kept} spans for {calls} calls")
                exporter.clear()
            print(f"{elapsed / calls * 1e6:.3f}", flush=True)


def start_child(setting: str) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if key != telemetry.DISABLED_VARIABLE}
    if setting == "off":
        env[telemetry.DISABLED_VARIABLE] = "true"
    process = subprocess.Popen(
        [sys.executable, __file__, "--child", setting], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, env=env,
    )
    assert process.stdout is not None
    if process.stdout.readline().strip() != "ready":
        raise SystemExit(f"the {setting} child did not start (exit {process.wait()})")
    return process


def ask(process: subprocess.Popen[str], calls: int) -> float:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(f"{calls}\n")
    process.stdin.flush()
    answer = process.stdout.readline().strip()
    if not answer:
        raise SystemExit(f"a child ended early (exit {process.wait()})")
    return float(answer)


def measure(calls: int, rounds: int) -> dict[str, Any]:
    children = {setting: start_child(setting) for setting in SETTINGS}
    per_call: dict[str, list[float]] = {name: [] for name in SETTINGS}
    ratios: dict[str, list[float]] = {name: [] for name in SETTINGS}
    try:
        for index in range(rounds):
            order = SETTINGS[index % 3:] + SETTINGS[: index % 3]
            this_round = {setting: ask(children[setting], calls) for setting in order}
            for setting in SETTINGS:
                per_call[setting].append(this_round[setting])
                ratios[setting].append(this_round[setting] / this_round["off"])
    finally:
        for process in children.values():
            assert process.stdin is not None
            process.stdin.close()
            process.wait(30)
    return {
        "calls": calls,
        "rounds": rounds,
        "us_per_call": {name: statistics.median(values) for name, values in per_call.items()},
        "ratio_to_off": {name: statistics.median(values) for name, values in ratios.items()},
    }


def report(found: dict[str, Any], write: Callable[[str], None] = print) -> None:
    write(
        f"in-process tools/call (connect_direct), {found['calls']} calls x {found['rounds']} rounds, "
        "CPU time per call (time.process_time of each setting's process), medians"
    )
    write(f"{'setting':<8} {'us/call':>9} {'ratio to off':>13} {'added us/call':>14}")
    off = found["us_per_call"]["off"]
    for name in SETTINGS:
        us = found["us_per_call"][name]
        write(f"{name:<8} {us:>9.1f} {found['ratio_to_off'][name]:>13.2f} {us - off:>14.1f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per setting per round")
    parser.add_argument("--rounds", type=int, default=7, help="rounds (the order of the settings rotates)")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200 calls x 3 rounds")
    parser.add_argument("--child", choices=SETTINGS, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        asyncio.run(child(options.child))
        return
    calls, rounds = (200, 3) if options.quick else (options.calls, options.rounds)
    report(measure(calls, rounds))


if __name__ == "__main__":
    main()
