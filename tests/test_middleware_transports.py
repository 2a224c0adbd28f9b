"""Server middleware over the real transports (issue 20, requirement 3): stdio, Streamable
HTTP in both eras, HTTP+SSE, each with the context the transport gives (transport name,
session id, principal, headers); the official SDK client against a server with middleware;
and the host's interceptors adding a per-call header that the real HTTP server sees, and
rewriting arguments."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conftest import free_port, stop_process, wait_listening
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcp_generated import v2024_11_05, v2025_11_25, v2026_07_28
from typedmcp import RpcError
from typedmcp.connecting import connect_http, connect_sse, connect_stdio
from typedmcp.host import Host
from typedmcp.host.interceptors import CallContext, CallNext

SERVER = Path(__file__).resolve().parent / "servers" / "middleware_server.py"
TOKEN = "alice-token"


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_listening(process, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process)


async def seen_by_server(client: Any) -> list[dict[str, Any]]:
    result = await client.call_tool(name="seen", arguments={})
    return json.loads(result.content[0].text)  # type: ignore[no-any-return]


async def exercise(client: Any) -> list[dict[str, Any]]:
    """Echo three times (plain, rewritten, refused); what the server's middleware saw."""
    await seen_by_server(client)  # (forget the handshake)
    plain = await client.call_tool(name="echo", arguments={"text": "hi"})
    rewritten = await client.call_tool(name="echo", arguments={"text": "shout"})
    with pytest.raises(RpcError) as refused:
        await client.call_tool(name="echo", arguments={"text": "secret"})
    assert (plain.content[0].text, rewritten.content[0].text) == ("hi", "SHOUT")
    assert (refused.value.code, refused.value.message) == (-32001, "Forbidden: echo may not say that")
    calls = [entry for entry in await seen_by_server(client) if entry["method"] == "tools/call"]
    assert [entry["arguments"] for entry in calls] == [{"text": "hi"}, {"text": "shout"}, {"text": "secret"}]
    return calls


@pytest.mark.parametrize(
    ("protocol", "era", "has_session"),
    [(v2026_07_28, "stateless", False), (v2025_11_25, "handshake", True)],
)
def test_streamable_http_both_eras(base_url: str, protocol: Any, era: str, has_session: bool) -> None:
    async def main() -> list[dict[str, Any]]:
        async with connect_http(
            base_url + "/mcp", protocol=protocol, bearer_token=TOKEN, headers={"X-Audit": "tenant-7"}
        ) as client:
            return await exercise(client)

    calls = asyncio.run(main())
    for entry in calls:
        assert (entry["era"], entry["version"], entry["transport"]) == (era, protocol.PROTOCOL_VERSION, "streamable-http")
        assert (entry["has_session"], entry["subject"], entry["audit"]) == (has_session, "alice", "tenant-7")


def test_http_sse_2024_11_05(base_url: str) -> None:
    async def main() -> list[dict[str, Any]]:
        async with connect_sse(
            base_url + "/sse", protocol=v2024_11_05, bearer_token=TOKEN, headers={"X-Audit": "sse"}
        ) as client:
            return await exercise(client)

    for entry in asyncio.run(main()):
        assert (entry["era"], entry["version"], entry["transport"]) == ("handshake", "2024-11-05", "sse")
        assert (entry["has_session"], entry["subject"], entry["audit"]) == (True, "alice", "sse")


@pytest.mark.parametrize(("protocol", "era"), [(v2026_07_28, "stateless"), (v2025_11_25, "handshake")])
def test_stdio_both_eras(protocol: Any, era: str) -> None:
    async def main() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        async with connect_stdio([sys.executable, str(SERVER)], protocol=protocol) as client:
            first = await seen_by_server(client)
            return first, await exercise(client)

    handshake, calls = asyncio.run(main())
    for entry in calls:
        assert (entry["era"], entry["version"], entry["transport"]) == (era, protocol.PROTOCOL_VERSION, "stdio")
        assert (entry["has_session"], entry["subject"], entry["audit"]) == (False, None, None)
    if era == "handshake":  # the handshake and its notification passed the chain too
        assert [(e["method"], e["kind"]) for e in handshake][:2] == [
            ("initialize", "request"), ("notifications/initialized", "notification")
        ]


def test_the_official_sdk_client_against_a_server_with_middleware(base_url: str) -> None:
    async def main() -> tuple[str, MCPError, list[dict[str, Any]]]:
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}", "X-Audit": "sdk"}, timeout=30) as http,
            streamable_http_client(base_url + "/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            await session.call_tool("seen", {})
            shout = await session.call_tool("echo", {"text": "shout"})
            with pytest.raises(MCPError) as refused:
                await session.call_tool("echo", {"text": "secret"})
            seen = await session.call_tool("seen", {})
            text = seen.content[0].text  # type: ignore[union-attr]
            return shout.content[0].text, refused.value, json.loads(text)  # type: ignore[union-attr]

    shout, refused, seen = asyncio.run(main())
    assert shout == "SHOUT"
    assert (refused.error.code, refused.error.message) == (-32001, "Forbidden: echo may not say that")
    calls = [entry for entry in seen if entry["method"] == "tools/call"]
    assert len(calls) == 2
    assert {(e["subject"], e["audit"], e["transport"]) for e in calls} == {("alice", "sdk", "streamable-http")}


@pytest.mark.parametrize(
    ("kind", "path", "protocol"),
    # (not HTTP+SSE: the client sends the headers on its POST, but a server of that transport,
    # ours included, serves each message in the GET stream's context, with the GET's headers)
    [("http", "/mcp", "2026-07-28"), ("http", "/mcp", "2025-11-25")],
)
def test_host_interceptors_add_a_header_the_server_sees_and_rewrite_arguments(
    base_url: str, kind: str, path: str, protocol: str
) -> None:
    audit: list[tuple[str, str, str, dict[str, Any] | None]] = []

    async def add_header(call: CallContext, call_next: CallNext) -> Any:
        call.headers["X-Audit"] = f"call-{len(audit) + 1}"
        return await call_next(call)

    async def log_and_rewrite(call: CallContext, call_next: CallNext) -> Any:
        audit.append((call.server, call.method, call.target, call.arguments))
        if call.arguments == {"text": "quiet"}:
            call.params["arguments"] = {"text": "rewritten by the host"}
        return await call_next(call)

    config = {
        "mcpServers": {
            "mw": {
                "type": kind, "url": base_url + path, "headers": {"Authorization": f"Bearer {TOKEN}"},
                **({"protocol": protocol} if protocol != "auto" else {}),
            }
        }
    }

    async def main() -> tuple[Any, list[dict[str, Any]]]:
        async with Host(config, interceptors=[add_header, log_and_rewrite]) as host:
            await host.call_tool("mw__seen", {})
            result = await host.call_tool("mw__echo", {"text": "quiet"})
            seen = await host.call_tool("mw__seen", {})
            return result, json.loads(seen.content[0].text)

    result, seen = asyncio.run(main())
    assert result.content[0].text == "rewritten by the host"
    assert audit[1] == ("mw", "tools/call", "mw__echo", {"text": "quiet"})
    (echo,) = [entry for entry in seen if entry["method"] == "tools/call"]
    assert echo["audit"] == "call-2" and echo["arguments"] == {"text": "rewritten by the host"}


def test_host_interceptors_short_circuit_refuse_and_see_stdio_calls() -> None:
    order: list[str] = []

    async def outer(call: CallContext, call_next: CallNext) -> Any:
        order.append(f"outer {call.method} {call.target} over {call.transport}")
        if call.arguments == {"text": "refuse"}:
            raise PermissionError("the host's policy refuses this call")
        return await call_next(call)

    async def cache(call: CallContext, call_next: CallNext) -> Any:
        if call.arguments == {"text": "cached"}:
            return {"from": "the host's cache"}  # the server is never asked
        call.state["sent"] = True
        return await call_next(call)

    config = {"mw": {"command": sys.executable, "args": [str(SERVER)]}}

    async def main() -> tuple[Any, list[dict[str, Any]]]:
        async with Host(config, interceptors=[outer, cache]) as host:
            await host.call_tool("mw__seen", {})
            cached = await host.call_tool("mw__echo", {"text": "cached"})
            with pytest.raises(PermissionError, match="refuses this call"):
                await host.call_tool("mw__echo", {"text": "refuse"})
            seen = await host.call_tool("mw__seen", {})
            return cached, json.loads(seen.content[0].text)

    cached, seen = asyncio.run(main())
    assert cached == {"from": "the host's cache"}
    assert [entry for entry in seen if entry["method"] == "tools/call"] == []  # neither reached the server
    assert order[1:3] == ["outer tools/call mw__echo over stdio"] * 2
    with pytest.raises(TypeError, match="an interceptor must be callable"):
        Host(config, interceptors=["audit"])  # type: ignore[list-item]
