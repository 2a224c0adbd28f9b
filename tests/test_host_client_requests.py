"""Server-to-client requests and notifications through the host: sampling, elicitation
and roots reach host-level hooks with the server's name (both eras); roots changes are
announced; log messages and progress arrive tagged with their server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from host_support import LIMIT, fixture, reaper, text_of

from typedmcp.engine.jsonrpc import RpcError
from typedmcp.host import Host

pytestmark = pytest.mark.anyio
__all__ = ["reaper"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


CONFIG = {"new": fixture(), "old": fixture("--handshake-only")}


async def test_sampling_and_elicitation_reach_the_hooks_with_the_servers_name(reaper: Any) -> None:
    asked: list[tuple[str, str]] = []

    async def sampling(server: str, params: Any, ctx: Any) -> dict[str, Any]:
        asked.append((server, "sampling"))
        prompt = params.messages[0].content.text
        return {"role": "assistant", "model": f"model-for-{server}",
                "content": {"type": "text", "text": f"{server} asked {prompt}"}}

    async def elicitation(server: str, params: Any, ctx: Any) -> dict[str, Any]:
        asked.append((server, "elicitation"))
        return {"action": "accept", "content": {"name": server.upper()}}

    async with Host(CONFIG, sampling=sampling, elicitation=elicitation) as host:
        assert host.status()["new"]["era"] == "stateless" and host.status()["old"]["era"] == "handshake"
        for server in ("new", "old"):
            sampled = await asyncio.wait_for(host.call_tool(f"{server}__sample", {"prompt": "hi"}), LIMIT)
            assert text_of(sampled) == f"{server} asked hi"
            elicited = await asyncio.wait_for(host.call_tool(f"{server}__elicit"), LIMIT)
            assert json.loads(text_of(elicited)) == {"action": "accept", "content": {"name": server.upper()}}
        assert asked == [("new", "sampling"), ("new", "elicitation"), ("old", "sampling"), ("old", "elicitation")]


async def test_without_hooks_nothing_is_declared_and_declared_elicitation_declines(reaper: Any) -> None:
    async with Host(CONFIG) as host:
        for server in ("new", "old"):
            # not declared: the stateless server answers -32021, the handshake-era server's
            # runtime refuses to send the request (its handler fails: -32603)
            with pytest.raises(RpcError, match=r"capability|Internal error"):
                await asyncio.wait_for(host.call_tool(f"{server}__elicit"), LIMIT)
    async with Host(CONFIG, client_requests=["elicitation"]) as host:
        for server in ("new", "old"):
            elicited = await asyncio.wait_for(host.call_tool(f"{server}__elicit"), LIMIT)
            assert json.loads(text_of(elicited))["action"] == "decline"


@pytest.mark.parametrize("server", ["new", "old"])
async def test_roots_are_served_to_every_server_and_changes_announced(reaper: Any, server: str) -> None:
    async with Host(CONFIG, roots=[{"uri": "file:///work", "name": "work"}]) as host:
        first = await asyncio.wait_for(host.call_tool(f"{server}__roots"), LIMIT)
        assert json.loads(text_of(first)) == ["file:///work"]
        await asyncio.wait_for(host.set_roots([{"uri": "file:///a"}, {"uri": "file:///b"}]), LIMIT)
        second = await asyncio.wait_for(host.call_tool(f"{server}__roots"), LIMIT)
        assert json.loads(text_of(second)) == ["file:///a", "file:///b"]
        stats = json.loads(text_of(await asyncio.wait_for(host.call_tool(f"{server}__stats"), LIMIT)))
        # handshake era: notifications/roots/list_changed; 2026-07-28 asks anew every time
        assert stats["roots_changed"] == (1 if server == "old" else 0)


async def test_logs_and_progress_arrive_tagged_with_their_server(reaper: Any) -> None:
    logs: list[tuple[str, str, Any]] = []
    progress: list[tuple[str, float]] = []
    both = asyncio.Event()

    def on_log(server: str, params: Any) -> None:
        logs.append((server, params.level, params.data))
        if len(logs) == 2:
            both.set()

    all_progress = asyncio.Event()

    async def on_progress(server: str, params: Any) -> None:
        progress.append((server, params.progress))
        if len(progress) == 6:
            all_progress.set()

    async with Host(CONFIG, on_log=on_log, on_progress=on_progress, log_level="info") as host:
        for server in ("new", "old"):
            await asyncio.wait_for(host.call_tool(f"{server}__log"), LIMIT)
            await asyncio.wait_for(host.call_tool(f"{server}__progress", progress=lambda p: None), LIMIT)
        await asyncio.wait_for(both.wait(), LIMIT)
        assert sorted(logs) == [("new", "warning", "careful"), ("old", "warning", "careful")]
        await asyncio.wait_for(all_progress.wait(), LIMIT)  # hooks run in their own tasks
        assert sorted(progress) == [("new", 1), ("new", 2), ("new", 3), ("old", 1), ("old", 2), ("old", 3)]
