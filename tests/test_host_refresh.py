"""Refresh: list_changed (handshake era) and listen streams (2026-07-28) re-list the
server once per burst, swap its entries at once, and users see the changes; 2026-07-28
lists marked cacheable are reused while fresh."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from host_support import LIMIT, fixture, reaper, text_of, wait_for_change

from typedmcp.host import Change, Host, UnknownTool

pytestmark = pytest.mark.anyio
__all__ = ["reaper"]
ERAS = pytest.mark.parametrize("era_args", [(), ("--handshake-only",)], ids=["stateless", "handshake"])


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def stats(host: Host, server: str) -> dict[str, Any]:
    return json.loads(text_of(await asyncio.wait_for(host.call_tool(f"{server}__stats"), LIMIT)))  # type: ignore[no-any-return]


@ERAS
async def test_a_storm_of_list_changed_causes_one_relist(reaper: Any, era_args: tuple[str, ...]) -> None:
    async with Host({"f": fixture(*era_args), "other": fixture()}) as host:
        assert host.status()["f"]["era"] == ("handshake" if era_args else "stateless")
        before = (await stats(host, "f"))["tools/list"]
        other_before = (await stats(host, "other"))["tools/list"]
        stream = host.changes()
        seen: list[Change] = []
        unsubscribe = host.on_change(seen.append)
        await asyncio.wait_for(host.call_tool("f__storm", {"count": 50, "add": "fresh"}), LIMIT)
        change = await wait_for_change(stream, lambda c: c.kind == "tools")
        assert change == Change("f", "tools", added=("f__fresh",))
        assert host.available("f__fresh")
        relists = (await stats(host, "f"))["tools/list"] - before
        assert relists == 1, f"{relists} re-lists for a burst of 50 notifications"
        assert (await stats(host, "other"))["tools/list"] == other_before  # only that server
        assert Change("f", "tools", added=("f__fresh",)) in seen
        unsubscribe()
        await stream.aclose()


@ERAS
async def test_tools_come_and_go_and_a_removed_tool_is_a_clear_error(reaper: Any, era_args: tuple[str, ...]) -> None:
    async with Host({"f": fixture(*era_args)}) as host:
        async with host.changes() as stream:
            await asyncio.wait_for(host.call_tool("f__add_tool", {"name": "gadget"}), LIMIT)
            await wait_for_change(stream, lambda c: "f__gadget" in c.added)
            assert text_of(await asyncio.wait_for(host.call_tool("f__gadget"), LIMIT)) == "{}"
            await asyncio.wait_for(host.call_tool("f__remove_tool", {"name": "gadget"}), LIMIT)
            await wait_for_change(stream, lambda c: "f__gadget" in c.removed)
        with pytest.raises(UnknownTool, match="no tool named 'f__gadget'"):
            await host.call_tool("f__gadget")


async def test_cacheable_lists_are_reused_while_fresh(reaper: Any) -> None:
    config = {"cached": fixture("--ttl", "600000"), "uncached": fixture("--ttl", "0")}
    async with Host(config) as host:
        assert host.status()["cached"]["era"] == "stateless"
        cached, uncached = (await stats(host, "cached"))["tools/list"], (await stats(host, "uncached"))["tools/list"]
        await asyncio.wait_for(host.refresh(), LIMIT)
        assert (await stats(host, "cached"))["tools/list"] == cached  # fresh: not asked again
        assert (await stats(host, "uncached"))["tools/list"] == uncached + 1
        await asyncio.wait_for(host.refresh("cached", force=True), LIMIT)
        assert (await stats(host, "cached"))["tools/list"] == cached + 1
        async with host.changes() as stream:  # a change notification beats freshness
            await asyncio.wait_for(host.call_tool("cached__add_tool", {"name": "late"}), LIMIT)
            await wait_for_change(stream, lambda c: "cached__late" in c.added)
        assert (await stats(host, "cached"))["tools/list"] == cached + 2


async def test_a_slow_reader_of_changes_loses_only_the_oldest() -> None:
    from typedmcp.host.changes import QUEUE_LIMIT, ChangeHub, ChangeStream

    hub = ChangeHub()
    stream = ChangeStream(hub)
    for index in range(QUEUE_LIMIT + 5):
        hub.emit(Change("s", "state", state=str(index)))
    first = await asyncio.wait_for(stream.__anext__(), LIMIT)
    assert first.state == "5"
    await stream.aclose()
    idle = ChangeStream(hub)
    waiting = asyncio.ensure_future(idle.__anext__())
    await asyncio.sleep(0)  # let it start waiting
    await idle.aclose()
    assert not hub.streams
    with pytest.raises(StopAsyncIteration):  # a reader waiting at close sees the end
        await asyncio.wait_for(waiting, LIMIT)
