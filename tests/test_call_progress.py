"""Per-call progress is a typed keyword of the generated send methods:
``await client.call_tool(name=..., arguments=..., on_progress=callback)`` (issue 30, req. 7).

Before, a caller had to know ``client.with_options(on_progress=...)``, whose callback got the
raw notification params. Now ``on_progress`` gets ``(progress, total, message)``, in both
eras and over every transport, and keeps what ``with_options`` set."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from mcp_generated.v2024_11_05 import client as client_2024
from mcp_generated.v2025_11_25 import client as mcp
from typedmcp import Context, McpApp
from typedmcp.protocol.stubs import ProgressCallback
from typedmcp.testing import McpClientFactory, Transport

pytestmark = pytest.mark.anyio

app = McpApp("exporter")


@app.tool()
async def export(rows: int, ctx: Context) -> str:
    """Export some rows, saying how far it got."""
    for done in range(1, rows + 1):
        await ctx.report_progress(done, rows, f"row {done}")
    return "exported"


@app.tool()
async def stall(ctx: Context) -> str:
    """Report once, then take far too long."""
    await ctx.report_progress(1, None)
    await asyncio.sleep(30)
    return "late"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def test_on_progress_gets_each_notification_of_the_call(
    mcp_client: McpClientFactory, mcp_transport: Transport, mcp_revision: str
) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def record(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_client(app, transport=mcp_transport, revision=mcp_revision, client=mcp.Client) as client:
        result = await client.call_tool(name="export", arguments={"rows": 3}, on_progress=record)
        quiet = await client.call_tool(name="export", arguments={"rows": 2})
    assert result.structured_content == quiet.structured_content == {"result": "exported"}
    assert seen == [(1, 3, "row 1"), (2, 3, "row 2"), (3, 3, "row 3")]


async def test_on_progress_keeps_the_options_of_with_options(mcp_client: McpClientFactory) -> None:
    plain: list[Any] = []
    sync: list[float] = []
    async with mcp_client(app, client=mcp.Client) as client:
        timed = client.with_options(timeout=0.3, on_progress=plain.append)
        with pytest.raises(TimeoutError):
            await timed.call_tool(name="stall", on_progress=lambda p, t, m: sync.append(p))
        patient = client.with_options(timeout=30, on_progress=plain.append)
        await patient.call_tool(name="export", arguments={"rows": 2}, on_progress=lambda p, t, m: sync.append(p))
    assert sync == [1, 1, 2]
    assert [(note.progress, note.total) for note in plain] == [(1, None), (1, 2), (2, 2)]


def test_every_client_request_takes_on_progress_and_nothing_else_does() -> None:
    for client in (mcp.Client, client_2024.Client):
        senders = {
            name: inspect.signature(method)
            for name, method in vars(client).items()
            if inspect.iscoroutinefunction(method)
        }
        with_progress = {name for name, signature in senders.items() if "on_progress" in signature.parameters}
        with_meta = {name for name, signature in senders.items() if "meta" in signature.parameters}
        requests = {name for name in with_meta if not name.startswith("send_")}
        assert with_progress == requests, client
        assert "call_tool" in with_progress
        assert senders["call_tool"].parameters["on_progress"].annotation == "ProgressCallback | None"
    assert ProgressCallback is not None
