"""The cost of the authoring layer (``typedmcp.app.McpApp``) over a hand-written handler,
in process (issue 18, requirement 12, first part).

Run from the repository root::

    .venv/bin/python benchmarks/bench_app.py [--calls N] [--rounds N] [--clock cpu]

``--clock cpu`` times with ``time.process_time`` (this process's CPU time, every thread's)
instead of the wall clock: on a shared machine the wall clock also counts the time other
processes hold the cores. CPU time leaves out the sync tool's wait for its worker thread
to be scheduled, so its row reads better than on the wall clock.

The same ``echo`` tool (one string argument, one text block back) is served by
a hand-written ``ServerHandlers`` (``benchmarks/peers/ours_server.py``'s) and by an ``McpApp``
whose tool function returns the string unstructured (``structured_output=False``, so both
results are the same bytes): an ``async def`` one, and a plain ``def`` one, which the app
runs in a worker thread (``asyncio.to_thread``: the thread hop is most of its cost); plus,
for information, the async one with its default structured output (``{"result": ...}``
and a text block), against its own hand-written twin (``EchoStructured``: the same
result bytes, the same outputSchema listed, so the same protocol work on both sides: the
"vs its twin" column is the layer's overhead for structured output). Two measurements,
rounds alternating between the servers, medians printed:

* end to end without a transport (``connect_direct``: the client and server sessions of the
  runtime, tool-schema checks included), calls per second; "vs hand-written" compares the
  medians, "paired rounds" is the median of each round's own ratio to the hand-written
  server (the two batches of a round share the machine's load of the moment, so on a
  shared machine it is the steadier figure);
* the handler alone: ``await handlers.call_tool(params, ctx)`` in a loop, microseconds per
  call, which is the layer's own cost (validation with pydantic and the result shaping).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from typedmcp.app import McpApp
from typedmcp.connecting import connect_direct
from typedmcp.protocol.stubs import RequestContext
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

ECHO = models.Tool(
    name="echo",
    description="Echoes its text argument as one text block",
    input_schema=models.ToolInputSchema(type="object", properties={"text": {"type": "string"}}, required=["text"]),
)


class Echo(ServerHandlers):
    """The hand-written twin (as ``benchmarks/peers/ours_server.py``)."""

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[ECHO])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        text: Any = (params.arguments or {}).get("text", "")
        return models.CallToolResult(content=[models.TextContent(type="text", text=str(text))])


ECHO_STRUCTURED = models.Tool(
    name="echo",
    description="Echoes its text argument as structured output and one text block",
    input_schema=ECHO.input_schema,
    output_schema=models.ToolOutputSchema.model_validate(
        {"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    ),
)


class EchoStructured(ServerHandlers):
    """The hand-written twin of the app's structured ``echo``: the same result bytes
    (``structuredContent`` ``{"result": text}`` and the text block), its outputSchema listed."""

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[ECHO_STRUCTURED])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        text = str((params.arguments or {}).get("text", ""))
        return models.CallToolResult(
            content=[models.TextContent(type="text", text=text)], structured_content={"result": text}
        )


def typed_app(*, structured: bool, asynchronous: bool) -> McpApp:
    app = McpApp("bench-app", version="1.0.0")

    async def echo(text: str) -> str:
        """Echoes its text argument as one text block."""
        return text

    def echo_sync(text: str) -> str:
        """Echoes its text argument as one text block."""
        return text

    app.add_tool(echo if asynchronous else echo_sync, name="echo", structured_output=structured)
    return app


#: The clock the measurements read (``--clock cpu``: ``time.process_time``).
clock: Callable[[], float] = time.perf_counter


async def end_to_end(handlers: Any, calls: int) -> float:
    client: Any
    async with connect_direct(handlers, protocol=v2025_11_25) as client:
        await client.call_tool(name="echo", arguments={"text": "warm"})
        start = clock()
        for index in range(calls):
            await client.call_tool(name="echo", arguments={"text": f"hello {index}"})
        return calls / (clock() - start)


async def handler_only(handlers: Any, calls: int) -> float:
    params = models.CallToolRequestParams(name="echo", arguments={"text": "hello"})
    ctx: RequestContext[Any] = RequestContext(None, 1)
    await handlers.call_tool(params, ctx)
    start = clock()
    for _ in range(calls):
        await handlers.call_tool(params, ctx)
    return (clock() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    options = parser.parse_args()
    global clock
    clock = time.process_time if options.clock == "cpu" else time.perf_counter
    servers = {
        "hand-written": Echo(),
        "hand-written, struct": EchoStructured(),
        "McpApp async": typed_app(structured=False, asynchronous=True),
        "McpApp async, struct": typed_app(structured=True, asynchronous=True),
        "McpApp sync": typed_app(structured=False, asynchronous=False),
    }
    #: Each server's hand-written twin: the one whose results are the same bytes.
    twins = {name: "hand-written, struct" if name.endswith("struct") else "hand-written" for name in servers}
    rates: dict[str, list[float]] = {name: [] for name in servers}
    costs: dict[str, list[float]] = {name: [] for name in servers}
    for _ in range(options.rounds):
        for name, handlers in servers.items():
            rates[name].append(asyncio.run(end_to_end(handlers, options.calls)))
            costs[name].append(asyncio.run(handler_only(handlers, options.calls)))
    base_rate = statistics.median(rates["hand-written"])
    base_cost = statistics.median(costs["hand-written"])
    print(f"{'server':<21} {'calls/s (direct)':>17} {'vs hand-written':>16} {'paired rounds':>14}"
          f" {'vs its twin, paired':>20} {'handler us/call':>16}")
    for name in servers:
        rate, cost = statistics.median(rates[name]), statistics.median(costs[name])
        paired = statistics.median(r / h for r, h in zip(rates[name], rates["hand-written"], strict=True))
        twin = statistics.median(r / h for r, h in zip(rates[name], rates[twins[name]], strict=True))
        print(f"{name:<21} {rate:>17,.0f} {rate / base_rate - 1:>+15.1%} {paired - 1:>+13.1%}"
              f" {twin - 1:>+19.1%} {cost:>10.1f} (+{cost - base_cost:.1f})")


if __name__ == "__main__":
    main()
