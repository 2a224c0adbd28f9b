"""The host against real server processes: start-up, one registry, routing, validation.

The servers are the runtime's examples and fixtures in both eras (weather, conformance,
modern, legacy) and the official SDK 2.3.0 server, all behind one host."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import pytest
from host_support import (
    CONFORMANCE_SERVER, LEGACY_SERVER, LIMIT, MODERN_SERVER, REPO, SDK_SERVER, WEATHER_SERVER,
    fixture, reaper, stdio, text_of,
)

from typedmcp.engine.jsonrpc import RpcError
from typedmcp.host import Host, InvalidArguments, ServerTimeout, ServerUnavailable, UnknownTool

pytestmark = pytest.mark.anyio
__all__ = ["reaper"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


SILENT = {"command": sys.executable, "args": ["-c", "import time; time.sleep(60)"], "startupTimeout": 4}


async def test_servers_of_both_eras_and_the_sdk_behind_one_host(reaper: Any) -> None:
    config = {
        "weather": stdio(WEATHER_SERVER),
        "modern": stdio(MODERN_SERVER, "--stdio"),
        "legacy": stdio(LEGACY_SERVER),
        "conformance": stdio(CONFORMANCE_SERVER, "--stdio"),
        "sdk": stdio(SDK_SERVER, protocol="2025-11-25"),  # the SDK's handshake-era peer
        "missing": {"command": "/nonexistent/server"},
        "silent1": SILENT, "silent2": SILENT, "silent3": SILENT, "silent4": SILENT,
    }
    began = time.monotonic()
    async with Host(config) as host:
        elapsed = time.monotonic() - began
        status = host.status()
        for name in ("weather", "modern", "legacy", "conformance", "sdk"):
            assert status[name]["state"] == "ready", (name, status[name])
        assert (status["modern"]["era"], status["modern"]["revision"]) == ("stateless", "2026-07-28")
        assert (status["legacy"]["era"], status["legacy"]["revision"]) == ("handshake", "2025-11-25")
        assert status["sdk"]["server_info"]["name"] == "sdk-peer"
        assert status["missing"]["state"] in ("restarting", "starting")
        assert "cannot start the server" in status["missing"]["last_error"]
        for name in ("silent1", "silent2", "silent3", "silent4"):
            assert "startupTimeout=4" in (status[name]["last_error"] or ""), status[name]
        # four servers that each time out after 4 s: concurrent start-up takes about 4 s,
        # one after the other at least 16 s (the margin is for a loaded machine)
        assert elapsed < 13, elapsed
        names = {entry.name for entry in host.tools()}
        assert {"weather__weather", "modern__forecast", "legacy__echo", "sdk__text",
                "conformance__test_simple_text"} <= names
        calls = await asyncio.wait_for(asyncio.gather(
            host.call_tool("weather__weather", {"city": "Oslo"}),
            host.call_tool("modern__forecast", {"city": "Oslo"}),
            host.call_tool("conformance__test_error_handling"),
            host.call_tool("sdk__text"),
            host.call_tool("conformance__test_simple_text"),
            host.call_tool("sdk__structured", {"city": "Bergen"}),
        ), LIMIT)
        assert text_of(calls[0]) == "Sunny in Oslo"
        assert calls[1].structured_content == {"city": "Oslo", "celsius": 21.5, "sky": "clear"}
        assert calls[2].is_error is True  # a tool error is a result, not an exception
        assert text_of(calls[3]) == "Hello from the SDK server"
        with pytest.raises(RpcError, match="Method not found"):  # legacy lists echo, serves no calls
            await asyncio.wait_for(host.call_tool("legacy__echo"), LIMIT)
        assert calls[5].structured_content == {"city": "Bergen", "celsius": 21.5}
        defs = host.function_definitions("openai")
        assert {d["function"]["name"] for d in defs} == names


async def test_collisions_between_servers_and_allow_deny(reaper: Any) -> None:
    config = {
        "mcpServers": {
            "one": fixture("--tools", "search,fetch"),
            "two": fixture("--tools", "search", "--handshake-only", allowTools=["search", "pid"]),
            "three": fixture("--tools", "search", denyTools=["crash", "hang"], prefix="t3"),
        },
        "host": {"prefixTools": "collisions"},
    }
    async with Host(config) as host:
        names = {entry.name for entry in host.tools()}
        assert {"one__search", "two__search", "t3__search", "fetch"} <= names
        # crash and hang: only "one" exports them, so they keep their own names
        assert {"crash", "hang", "one__pid", "two__pid", "t3__pid"} <= names
        assert not names & {"two__crash", "t3__crash", "two__hang", "t3__hang", "one__crash"}
        assert {e.name for e in host.tools() if e.server == "two"} == {"two__search", "two__pid"}
        pids = await asyncio.wait_for(asyncio.gather(
            host.call_tool("one__pid"), host.call_tool("two__pid"), host.call_tool("t3__pid")
        ), LIMIT)
        assert len({text_of(p) for p in pids}) == 3  # three processes, each reached
        echoed = await asyncio.wait_for(host.call_tool("two__search", {"q": 1}), LIMIT)
        assert json.loads(text_of(echoed)) == {"q": 1}
        assert host.registry.collisions["search"] == ["one", "two", "three"]


async def test_arguments_checked_before_sending_and_unknown_names(reaper: Any) -> None:
    async with Host({"f": fixture()}) as host:
        with pytest.raises(InvalidArguments) as caught:
            await host.call_tool("f__echo", {"text": 5})
        assert "f__echo" in str(caught.value) and "server 'f'" in str(caught.value)
        stats = json.loads(text_of(await asyncio.wait_for(host.call_tool("f__stats"), LIMIT)))
        assert stats["cancelled"] == []
        with pytest.raises(UnknownTool, match="no tool named 'f__nope'"):
            await host.call_tool("f__nope", {})
        with pytest.raises(UnknownTool, match="prompt"):
            await host.get_prompt("f__nope")
        with pytest.raises(UnknownTool, match="resource"):
            await host.read_resource("nowhere://x")


async def test_per_call_timeout_cancels_on_that_server_only(reaper: Any) -> None:
    async with Host({"a": fixture(), "b": fixture()}) as host:
        with pytest.raises(ServerTimeout, match="server 'a'"):
            await asyncio.wait_for(host.call_tool("a__slow", {"seconds": 30, "label": "t"}, timeout=0.5), LIMIT)
        slow = asyncio.ensure_future(host.call_tool("a__slow", {"seconds": 30, "label": "c"}))
        await asyncio.wait_for(host.call_tool("b__pid"), LIMIT)  # b answers meanwhile
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow

        async def cancelled() -> list[str]:
            while True:
                stats = json.loads(text_of(await host.call_tool("a__stats")))
                if len(stats["cancelled"]) == 2:
                    return list(stats["cancelled"])
                await asyncio.sleep(0.05)

        assert sorted(await asyncio.wait_for(cancelled(), LIMIT)) == ["c", "t"]
        b_stats = json.loads(text_of(await asyncio.wait_for(host.call_tool("b__stats"), LIMIT)))
        assert b_stats["cancelled"] == []


async def test_resources_prompts_completion_and_progress(reaper: Any) -> None:
    seen: list[tuple[float, Any]] = []
    async with Host({"modern": stdio(MODERN_SERVER, "--stdio"), "sdk": stdio(SDK_SERVER, protocol="2025-11-25")}) as host:
        uris = {r.uri: r.server for r in host.resources()}
        assert uris["test://readme"] == "modern" and uris["sdk://text"] == "sdk"
        readme = await asyncio.wait_for(host.read_resource("test://readme"), LIMIT)
        assert readme.contents[0].text == "Read me first."
        item = await asyncio.wait_for(host.read_resource("test://items/42"), LIMIT)  # by template
        assert json.loads(item.contents[0].text) == {"id": "42"}
        sdk_item = await asyncio.wait_for(host.read_resource("sdk://text"), LIMIT)
        assert sdk_item.contents[0].uri == "sdk://text"
        prompt = await asyncio.wait_for(host.get_prompt("modern__summarize", {"topic": "mcp"}), LIMIT)
        assert prompt.messages[0].content.text == "Summarize mcp."
        completion = await asyncio.wait_for(host.complete(
            {"type": "ref/prompt", "name": "modern__summarize"}, {"name": "topic", "value": "m"}
        ), LIMIT)
        assert completion.completion.values == ["mcp", "metadata", "mrtr"]
        by_template = await asyncio.wait_for(host.complete(
            {"type": "ref/resource", "uri": "test://items/{id}"}, {"name": "id", "value": "4"}
        ), LIMIT)
        assert by_template.completion.values == ["42"]
        result = await asyncio.wait_for(
            host.call_tool("modern__progress", progress=lambda p: seen.append((p.progress, p.message))), LIMIT
        )
        assert text_of(result) == "progressed"
        assert [p for p, _ in seen] == [1, 2, 3]
        sdk_seen: list[float] = []
        await asyncio.wait_for(host.call_tool("sdk__progress", progress=lambda p: sdk_seen.append(p.progress)), LIMIT)
        assert sdk_seen == [1, 2, 3]


async def test_a_server_error_is_the_servers_typed_error(reaper: Any) -> None:
    async with Host({"modern": stdio(MODERN_SERVER, "--stdio")}) as host:
        with pytest.raises(RpcError, match="Resource not found"):
            await asyncio.wait_for(host.read_resource("test://missing", server="modern"), LIMIT)
        with pytest.raises(ServerUnavailable, match="no such server"):
            host.server("nope")


async def test_remote_sdk_servers_over_streamable_http_and_http_sse(reaper: Any) -> None:
    import subprocess

    from conftest import read_port, stop_process

    peers = REPO / "tests" / "peers"
    processes = [
        subprocess.Popen([sys.executable, str(peers / script)], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        for script in ("sdk_http_server.py", "sdk_sse_server.py")
    ]
    try:
        http_port, sse_port = (read_port(process) for process in processes)
        config = {
            # the SDK's handshake-era peer (its stateless answers are not this test's subject)
            "http": {"type": "http", "url": f"http://127.0.0.1:{http_port}/mcp", "protocol": "2025-11-25"},
            "sse": {"type": "sse", "url": f"http://127.0.0.1:{sse_port}/sse"},
        }
        async with Host(config) as host:
            status = host.status()
            assert status["http"]["transport"] == "streamable-http" and status["http"]["state"] == "ready"
            assert status["sse"]["transport"] == "sse" and status["sse"]["era"] == "handshake"
            texts = await asyncio.wait_for(
                asyncio.gather(host.call_tool("http__text"), host.call_tool("sse__text")), LIMIT
            )
            assert [text_of(t) for t in texts] == ["Hello from the SDK server"] * 2
    finally:
        for process in processes:
            stop_process(process)
