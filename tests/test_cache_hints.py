"""2026-07-28 list and read results build without their caching hints (issue 17, item 4.2).

Before, ``ttlMs`` and ``cacheScope`` were required fields of ``ListToolsResult``,
``ReadResourceResult``, ... so every handler wrote ``ttl_ms=0, cache_scope="private"`` by
hand. Now the models default them (``rewrite.default_cache_hints``), the default is never
*set*, and the server puts its :class:`CachePolicy` on the wire (``0``/``"private"``
unless ``cache=`` says otherwise, per server or per method), while a result that sets its
own hints keeps them. Results of handshake-era revisions carry neither.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_generated import v2025_11_25
from mcp_generated.v2026_07_28 import models
from mcp_generated.v2026_07_28.server import ServerHandlers
from typedmcp import CachePolicy
from typedmcp.connecting import connect_memory
from typedmcp.protocol.meta import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY
from typedmcp.protocol.results import to_wire
from typedmcp.stateless.router import build_router

META = {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}
SCHEMA = models.ToolInputSchema(type="object")


class Listing(ServerHandlers):
    """Lists tools without caching hints, reads a resource with its own."""

    async def list_tools(self, params: Any, ctx: Any) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[models.Tool(name="weather", input_schema=SCHEMA)])

    async def read_resource(self, params: Any, ctx: Any) -> models.ReadResourceResult:
        text = models.TextResourceContents(uri=params.uri, text="forecast")
        return models.ReadResourceResult(contents=[text], ttl_ms=60_000, cache_scope="public")

    async def list_prompts(self, params: Any, ctx: Any) -> models.ListPromptsResult:
        return models.ListPromptsResult(prompts=[])


def wire(method: str, params: dict[str, Any] | None = None, **options: Any) -> Any:
    """What the server sends for one 2026-07-28 request."""
    router = build_router(Listing(), **options)
    return asyncio.run(router.on_request(method, {**(params or {}), "_meta": META}, 1))


def test_a_list_result_builds_without_its_caching_hints_and_sets_none() -> None:
    listed = models.ListToolsResult(tools=[])
    assert (listed.ttl_ms, listed.cache_scope) == (0, "private")
    assert to_wire(listed) == {"tools": []}  # a default is never set, so never dumped


def test_the_wire_carries_the_default_hints() -> None:
    sent = wire("tools/list")
    assert (sent["ttlMs"], sent["cacheScope"]) == (0, "private")
    assert [tool["name"] for tool in sent["tools"]] == ["weather"]


def test_a_result_that_sets_its_hints_keeps_them() -> None:
    sent = wire("resources/read", {"uri": "file:///forecast"})
    assert (sent["ttlMs"], sent["cacheScope"]) == (60_000, "public")
    # the server's policy does not override what the result set itself
    policy = CachePolicy(ttl_ms=5, scope="private")
    again = wire("resources/read", {"uri": "file:///forecast"}, cache=policy)
    assert (again["ttlMs"], again["cacheScope"]) == (60_000, "public")


def test_the_servers_cache_policy_fills_what_results_leave_out() -> None:
    policy = CachePolicy(ttl_ms=30_000, scope="public", per_method={"prompts/list": (0, "private")})
    tools = wire("tools/list", cache=policy)
    assert (tools["ttlMs"], tools["cacheScope"]) == (30_000, "public")
    prompts = wire("prompts/list", cache=policy)
    assert (prompts["ttlMs"], prompts["cacheScope"]) == (0, "private")


def test_handshake_era_results_carry_no_caching_hints() -> None:
    async def body() -> Any:
        router = build_router(Listing())
        await router.on_request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
            1,
        )
        return to_wire(await router.on_request("tools/list", None, 2))

    sent = asyncio.run(body())
    assert "ttlMs" not in sent and "cacheScope" not in sent
    assert [tool["name"] for tool in sent["tools"]] == ["weather"]


@pytest.mark.parametrize("protocol", [None, v2025_11_25], ids=["stateless", "handshake"])
def test_a_client_reads_the_hints_in_either_era(protocol: Any) -> None:
    async def body() -> None:
        options = {"protocol": protocol} if protocol is not None else {}
        async with connect_memory(Listing(), server_options={"cache": CachePolicy(ttl_ms=9)}, **options) as client:
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == ["weather"]
            if protocol is None:
                assert (listed.ttl_ms, listed.cache_scope) == (9, "private")

    asyncio.run(body())
