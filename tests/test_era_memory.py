"""HC-10: a client remembers each server's era for the rest of the process (``ERA_MEMORY``).

A server that refused the ``server/discover`` probe is initialized at once next time (over
stdio and HTTP); a URL that served only the deprecated HTTP+SSE transport is reached over it
first; a verdict that stops holding is dropped and negotiation starts over;
``remember_era=False`` opts out.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from typedmcp.protocol import client as client_module
from typedmcp.connecting import connect_http, connect_stdio
from typedmcp.protocol.negotiation import ERA_MEMORY
from mcp_generated import v2025_11_25, v2026_07_28

from test_http_server import ServerThread, make_app

LEGACY_SERVER = [sys.executable, str(Path(__file__).parent / "servers" / "legacy_server.py")]


@pytest.fixture(autouse=True)
def fresh_memory() -> Iterator[None]:
    ERA_MEMORY.clear()
    yield
    ERA_MEMORY.clear()


def posted_methods(server: ServerThread) -> list[str]:
    """The JSON-RPC methods of the requests POSTed so far, in order."""
    methods = []
    for entry in server.log:
        if entry["method"] == "POST" and entry["body"]:
            message = json.loads(entry["body"])
            if isinstance(message, dict) and "method" in message:
                methods.append(message["method"])
    return methods


def refused_posts(server: ServerThread) -> int:
    """How many POSTs were answered 405 (a POST to the HTTP+SSE stream URL)."""
    return sum(1 for e in server.log if e["method"] == "POST" and e.get("status") == 405)


async def _connect_http(url: str, **options: Any) -> tuple[str | None, str | None, str | None]:
    async with connect_http(url, **options) as client:
        await client.list_tools()
        session = client.session
        return session.era, session.protocol_version, session.transport_kind


# -- HTTP --------------------------------------------------------------------------------------


def test_a_server_that_refused_the_probe_is_initialized_at_once_next_time() -> None:
    with ServerThread(make_app(packages=[v2025_11_25])) as server:
        first = asyncio.run(_connect_http(server.url))
        assert ERA_MEMORY.recall(server.url) == "handshake"
        second = asyncio.run(_connect_http(server.url))
        methods = posted_methods(server)
    assert first == second == ("handshake", "2025-11-25", "streamable-http")
    assert methods.count("server/discover") == 1  # the first connection only
    assert methods.count("initialize") == 2


def test_remember_era_false_probes_every_time() -> None:
    with ServerThread(make_app(packages=[v2025_11_25])) as server:
        for _ in range(2):
            asyncio.run(_connect_http(server.url, remember_era=False))
        methods = posted_methods(server)
        assert ERA_MEMORY.recall(server.url) is None
    assert methods.count("server/discover") == 2


def test_a_stale_verdict_is_dropped_and_negotiation_starts_over() -> None:
    with ServerThread(make_app(packages=[v2026_07_28])) as server:  # stateless only
        ERA_MEMORY.learn(server.url, "handshake")  # what an older build of it once said
        era, version, _ = asyncio.run(_connect_http(server.url))
        methods = posted_methods(server)
        assert ERA_MEMORY.recall(server.url) is None
    assert (era, version) == ("stateless", "2026-07-28")
    assert methods[:2] == ["initialize", "server/discover"]


def test_a_modern_server_leaves_no_verdict() -> None:
    with ServerThread(make_app()) as server:  # both eras: auto picks 2026-07-28
        assert asyncio.run(_connect_http(server.url))[0] == "stateless"
        assert ERA_MEMORY.recall(server.url) is None


def test_a_url_that_served_only_http_sse_is_reached_over_it_first() -> None:
    with ServerThread(make_app(legacy_sse=True)) as server:
        sse_url = server.url.replace("/mcp", "/sse")
        try:
            first = asyncio.run(_connect_http(sse_url))
            assert ERA_MEMORY.recall(sse_url) == "sse"
            posts_after_first = len(posted_methods(server))
            refused_after_first = refused_posts(server)
            second = asyncio.run(_connect_http(sse_url))
            methods = posted_methods(server)
            refused_after_second = refused_posts(server)
        finally:
            server.app.legacy_sse.close()
    assert first == second == ("handshake", "2024-11-05", "sse")
    # the first connection's POSTs to /sse (discover, then initialize) got 405; the second's none
    assert (refused_after_first, refused_after_second) == (2, 2)
    # the second connection posted only to the announced endpoint: initialize, its ack, list
    assert methods[posts_after_first:] == ["initialize", "notifications/initialized", "tools/list"]


def test_a_stale_sse_verdict_is_dropped() -> None:
    with ServerThread(make_app()) as server:  # no HTTP+SSE endpoints at all
        ERA_MEMORY.learn(server.url, "sse")
        assert asyncio.run(_connect_http(server.url))[:2] == ("stateless", "2026-07-28")
        assert ERA_MEMORY.recall(server.url) is None


# -- stdio -------------------------------------------------------------------------------------


def test_a_stdio_server_that_refused_the_probe_is_not_probed_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    probes: list[str] = []
    discover = client_module.ClientSession._discover

    async def counting(self: Any, *args: Any) -> Any:
        probes.append(self.origin)
        return await discover(self, *args)

    monkeypatch.setattr(client_module.ClientSession, "_discover", counting)

    async def connect_once() -> tuple[str | None, str | None]:
        async with connect_stdio(LEGACY_SERVER) as client:
            await client.list_tools()
            return client.session.era, client.session.origin

    first, second = asyncio.run(connect_once()), asyncio.run(connect_once())
    assert first == second and first[0] == "handshake"
    assert first[1] is not None and first[1].startswith("stdio:") and "legacy_server.py" in first[1]
    assert probes == [first[1]]
    assert ERA_MEMORY.recall(first[1]) == "handshake"
