"""An McpApp on several workers sharing Redis: a tool added at run time in one worker
announces ``tools/list_changed`` to a session another worker serves (the app's change feed
is the one ``http_app`` shares). Real parts: a ``redis-server`` and two uvicorn workers."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_support import Redis, start_workers, stop

from typedmcp.connecting import connect_http
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25.client import ClientHandlers


@pytest.fixture(scope="module")
def worker_urls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    redis = Redis(tmp_path_factory.mktemp("redis"))
    redis.start()
    processes: list[Any] = []
    try:
        processes, ports = start_workers(2, "app_shared:app", {"MCP_REDIS_URL": redis.url})
        yield [f"http://127.0.0.1:{port}/mcp" for port in ports]
    finally:
        for process in processes:
            stop(process)
        redis.stop()


class Listener(ClientHandlers):
    def __init__(self) -> None:
        self.changed = asyncio.Event()

    async def on_tool_list_changed(self, params: Any, ctx: Any) -> None:
        self.changed.set()


def test_a_tool_added_in_one_worker_is_announced_by_the_other(worker_urls: list[str], tmp_path: Path) -> None:
    first, second = worker_urls

    async def scenario() -> tuple[str, str, bool]:
        listener = Listener()
        async with (
            connect_http(second, protocol=v2025_11_25, handlers=listener) as watching,
            connect_http(first, protocol=v2025_11_25) as acting,
        ):
            assert watching.session.peer_capabilities["tools"] == {"listChanged": True}
            grown = await acting.call_tool(name="grow", arguments={"name": "fresh"})
            await asyncio.wait_for(listener.changed.wait(), 10)
            called = await acting.call_tool(name="fresh", arguments={})
            return grown.content[0].text, called.content[0].text, listener.changed.is_set()

    grown, called, announced = asyncio.run(scenario())
    assert (grown, called, announced) == ("grew fresh", "fresh", True)
