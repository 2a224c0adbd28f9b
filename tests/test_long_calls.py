"""Long calls: a per-call timeout that each progress notification resets, within a maximum
total, on the client (``client.with_options(...)``) and on the host (``Host.call_tool`` and
the server's ``resetTimeoutOnProgress`` / ``maxTotalTimeout``), in both eras.

The server (under uvicorn on 127.0.0.1) has a tool ``ticker`` that reports progress every
0.2 s for 1.5 s. With ``timeout=0.5`` the call outlives its timeout three times over: it
succeeds only when progress resets the deadline; with a maximum total of 1.0 s it times out at
about 1.0 s. Whenever a call times out, the server's handler is cancelled (handshake era:
``notifications/cancelled``; stateless HTTP: the reply stream is closed), which the handler
records.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from test_http_server import ServerThread

import mcp_generated.v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers
from typedmcp.connecting import connect_http
from typedmcp.host import Host
from typedmcp.host.config import ConfigError, parse_server
from typedmcp.host.errors import ServerTimeout
from typedmcp.protocol.deadlines import RequestOptions
from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import http_app

pytestmark = pytest.mark.anyio

INTERVAL, DURATION, TIMEOUT, MAX_TOTAL = 0.2, 1.5, 0.5, 1.0
TICKS = {"interval": INTERVAL, "duration": DURATION}
ERAS = ("stateless", "handshake")


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


class Ticker(ServerHandlers):
    """``ticker``: progress every ``interval`` s for ``duration`` s, then "done"."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.cancels = 0

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        tool = models.Tool(name="ticker", input_schema=models.ToolInputSchema(type="object"))
        return models.ListToolsResult(tools=[tool])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        args = params.arguments or {}
        interval, duration = float(args["interval"]), float(args["duration"])
        started = time.monotonic()
        step = 0
        try:
            while time.monotonic() - started < duration:
                step += 1
                await ctx.report_progress(step, None, f"tick {step}")
                await asyncio.sleep(interval)
        except asyncio.CancelledError:
            self.cancels += 1
            self.cancelled.set()
            raise
        return models.CallToolResult(content=[models.TextContent(type="text", text=f"done after {step} ticks")])


@asynccontextmanager
async def ticker_server() -> AsyncIterator[tuple[ServerThread, Ticker]]:
    ticker = Ticker()
    with ServerThread(http_app(ticker, server_info={"name": "ticker", "version": "1"})) as server:
        yield server, ticker


def protocol_of(era: str) -> Any:
    return mcp_generated.v2025_11_25 if era == "handshake" else "auto"


async def cancel_reached(ticker: Ticker) -> bool:
    """Whether the server's handler saw the cancellation (within a few seconds)."""
    return await asyncio.to_thread(ticker.cancelled.wait, 5)


# -- the client ------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
async def test_progress_resets_the_timeout_of_a_long_call(era: str) -> None:
    seen: list[float] = []
    async with ticker_server() as (server, ticker), connect_http(server.url, protocol=protocol_of(era)) as client:
        assert client.session.era == era
        patient = client.with_options(
            timeout=TIMEOUT, reset_timeout_on_progress=True, on_progress=lambda p: seen.append(p.progress)
        )
        started = time.monotonic()
        result = await asyncio.wait_for(patient.call_tool(name="ticker", arguments=TICKS), 30)
        elapsed = time.monotonic() - started
    assert result.content[0].text.startswith("done after")  # type: ignore[union-attr]
    assert elapsed >= DURATION
    assert seen == [float(n) for n in range(1, len(seen) + 1)] and len(seen) >= 7
    assert ticker.cancels == 0


@pytest.mark.parametrize("era", ERAS)
async def test_without_the_reset_the_same_call_times_out_and_is_cancelled(era: str) -> None:
    async with ticker_server() as (server, ticker), connect_http(server.url, protocol=protocol_of(era)) as client:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"tools/call timed out after 0\.5 s$"):
            await asyncio.wait_for(client.with_options(timeout=TIMEOUT).call_tool(name="ticker", arguments=TICKS), 30)
        elapsed = time.monotonic() - started
        assert TIMEOUT <= elapsed < TIMEOUT + 0.6
        assert await cancel_reached(ticker)
        # the session is still good for the next call
        assert (await client.list_tools()).tools[0].name == "ticker"


@pytest.mark.parametrize("era", ERAS)
async def test_the_maximum_total_ends_a_call_that_keeps_reporting_progress(era: str) -> None:
    async with ticker_server() as (server, ticker), connect_http(server.url, protocol=protocol_of(era)) as client:
        capped = client.with_options(timeout=TIMEOUT, reset_timeout_on_progress=True, max_total_timeout=MAX_TOTAL)
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"tools/call timed out after max_total_timeout=1\.0 s$"):
            await asyncio.wait_for(capped.call_tool(name="ticker", arguments=TICKS), 30)
        elapsed = time.monotonic() - started
        assert MAX_TOTAL <= elapsed < MAX_TOTAL + 0.6
        assert await cancel_reached(ticker)


async def test_a_call_without_progress_still_times_out_after_the_timeout() -> None:
    """The reset needs progress: a tool that reports none gets ``timeout`` seconds."""
    silent = {"interval": DURATION, "duration": DURATION}  # one tick at the start, then quiet
    async with ticker_server() as (server, ticker), connect_http(server.url, protocol=mcp_generated.v2025_11_25) as client:
        patient = client.with_options(timeout=TIMEOUT, reset_timeout_on_progress=True)
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"timed out after 0\.5 s without progress$"):
            await asyncio.wait_for(patient.call_tool(name="ticker", arguments=silent), 30)
        assert time.monotonic() - started < 2 * TIMEOUT + 0.4
        assert await cancel_reached(ticker)


async def test_the_options_proxy_is_the_same_client_on_the_same_session() -> None:
    async with ticker_server() as (server, _), connect_http(server.url) as client:
        patient = client.with_options(timeout=TIMEOUT)
        assert type(patient) is type(client)
        assert patient.session is client.session


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_total_timeout": 1.0}, "max_total_timeout caps how far progress pushes the deadline out: set reset_timeout_on_progress=True too"),
        ({"timeout": 0, "reset_timeout_on_progress": True}, "reset_timeout_on_progress needs a timeout to reset"),
        ({"timeout": -1}, "timeout must be a number of seconds, 0 or more (got -1)"),
        ({"reset_timeout_on_progress": True, "max_total_timeout": "300"}, "max_total_timeout must be a number of seconds, 0 or more (got '300')"),
    ],
)
def test_bad_options_say_what_to_change(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        RequestOptions(**options)
    assert str(refused.value).startswith(message)


# -- the host --------------------------------------------------------------------------------


def entry(server: ServerThread, era: str, **extra: Any) -> dict[str, Any]:
    return {"url": server.url, "protocol": "2025-11-25" if era == "handshake" else "2026-07-28", **extra}


@pytest.mark.parametrize("era", ERAS)
async def test_the_host_resets_the_timeout_per_call(era: str) -> None:
    async with ticker_server() as (server, ticker), Host({"t": entry(server, era, timeout=TIMEOUT)}) as host:
        ticks: list[Any] = []
        result = await asyncio.wait_for(
            host.call_tool("t__ticker", TICKS, reset_timeout_on_progress=True, progress=ticks.append), 30
        )
        assert result.content[0].text.startswith("done after")
        assert len(ticks) >= 7  # the caller's progress callback got them too
        with pytest.raises(ServerTimeout):
            await asyncio.wait_for(host.call_tool("t__ticker", TICKS), 30)
        assert await cancel_reached(ticker)


@pytest.mark.parametrize("era", ERAS)
async def test_the_hosts_server_config_resets_the_timeout_within_its_maximum(era: str) -> None:
    async with ticker_server() as (server, ticker):
        config = entry(server, era, timeout=TIMEOUT, resetTimeoutOnProgress=True, maxTotalTimeout=MAX_TOTAL)
        async with Host({"t": config}) as host:
            # past the plain timeout (0.5 s), so only the progress resets let it finish, and
            # well inside the maximum (1 s): 0.4 s of room for a loaded machine
            short = {"interval": INTERVAL, "duration": 0.6}
            assert (await asyncio.wait_for(host.call_tool("t__ticker", short), 30)).content
            started = time.monotonic()
            with pytest.raises(ServerTimeout) as capped:
                await asyncio.wait_for(host.call_tool("t__ticker", TICKS), 30)
            assert MAX_TOTAL <= time.monotonic() - started < MAX_TOTAL + 0.6
            assert str(capped.value) == (
                "server 't' did not answer tools/call t__ticker within its maxTotalTimeout of 1 s "
                "(the request was cancelled; raise its 'maxTotalTimeout' in the configuration if it is just slow)"
            )
            assert await cancel_reached(ticker)
            # per call, the caller's cap wins over the server's
            ticker.cancelled.clear()
            long = await asyncio.wait_for(host.call_tool("t__ticker", TICKS, max_total_timeout=10), 30)
            assert long.content[0].text.startswith("done after")


def test_the_host_config_checks_the_long_call_keys() -> None:
    url = "http://127.0.0.1:1/mcp"
    parsed = parse_server("t", {"url": url, "resetTimeoutOnProgress": True, "maxTotalTimeout": 300})
    assert (parsed.reset_timeout_on_progress, parsed.max_total_timeout) == (True, 300.0)
    with pytest.raises(ConfigError, match="server 't', field 'maxTotalTimeout': caps how far progress pushes"):
        parse_server("t", {"url": url, "maxTotalTimeout": 300})
    with pytest.raises(ConfigError, match="server 't', field 'resetTimeoutOnProgress': must be true or false"):
        parse_server("t", {"url": url, "resetTimeoutOnProgress": "yes"})
