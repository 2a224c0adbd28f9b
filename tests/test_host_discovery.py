"""Search mode (issue 32): the host's catalog behind ``search_tools``, ``describe_tools`` and
``call_tool``; ``host.discovery()`` for applications with their own model loop.

The catalog is real servers (``examples/notes_server.py``, ``examples/weather_server.py``
and the host fixture server, which can change its list); the official SDK client (mcp
2.3.0) talks to ``mcp-host serve --expose search`` in both eras."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import free_port, stop_process, wait_listening
from host_support import LIMIT, REPO, WEATHER_SERVER, fixture, reaper, serving_http, stdio, text_of, wait_for_change
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from test_host_gateway_modern import url
from test_hardening_stateless import PRM, answer, call

from typedmcp.auth.bearer import BearerAuth
from typedmcp.connecting import connect_stdio
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.host import ConfigError, Host, ToolMatch, UnknownTool, parse_config
from typedmcp.protocol.access import AccessPolicy, requires

__all__ = ["reaper"]
pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]
NOTES_SERVER = REPO / "examples" / "notes_server.py"
SEARCH_TOOLS = ["search_tools", "describe_tools", "call_tool"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def catalog(**host: Any) -> dict[str, Any]:
    """Three servers; the fixture's ``hang`` is denied, so it is in no search."""
    return {
        "host": host,
        "mcpServers": {
            "notes": stdio(NOTES_SERVER),
            "weather": stdio(WEATHER_SERVER),
            "fix": fixture(denyTools=["hang"]),
        },
    }


# -- host.discovery() -----------------------------------------------------------------------------


async def test_discovery_searches_and_describes_the_hosts_tools(reaper: Any) -> None:
    async with Host(catalog()) as host:
        found = host.discovery().search("add a note", limit=3)
        assert all(isinstance(match, ToolMatch) for match in found)
        assert found[0] == ToolMatch("notes__add_note", "notes", None, "Add a note.", found[0].score)
        assert len(found) == 3 and found[0].score >= found[1].score >= found[2].score
        assert [m.name for m in host.discovery().search("weather", limit=1)] == ["weather__weather"]
        described = host.discovery().describe(["notes__add_note", "weather__weather"])
        assert [d["name"] for d in described] == ["notes__add_note", "weather__weather"]
        assert described[0]["inputSchema"]["required"] == ["title", "body"]
        assert "outputSchema" in described[0] and described[0]["annotations"] == {"readOnlyHint": False}
        with pytest.raises(UnknownTool, match="'notes__nope'"):
            host.discovery().describe(["notes__add_note", "notes__nope"])
        with pytest.raises(ValueError, match="limit must be a whole number from 1 to 50, not 0"):
            host.discovery().search("note", limit=0)
        with pytest.raises(ValueError, match="query must be a few words"):
            host.discovery().search("  ?! ")
        with pytest.raises(ValueError, match="names must be a list of tool names"):
            host.discovery().describe("notes__add_note")  # type: ignore[arg-type]


async def test_a_denied_tool_is_never_found(reaper: Any) -> None:
    async with Host(catalog()) as host:
        assert "fix__hang" not in host.registry.tools
        assert host.discovery().search("hang") == []
        with pytest.raises(UnknownTool):
            host.discovery().describe(["fix__hang"])


async def test_search_follows_list_changed(reaper: Any) -> None:
    async with Host(catalog()) as host:
        assert host.discovery().search("zebra crossing") == []
        stream = host.changes()
        await host.call_tool("fix__add_tool", {"name": "zebra_crossing"})
        await wait_for_change(stream, lambda c: c.kind == "tools" and "fix__zebra_crossing" in c.added)
        assert [m.name for m in host.discovery().search("zebra crossing")] == ["fix__zebra_crossing"]
        await host.call_tool("fix__remove_tool", {"name": "zebra_crossing"})
        await wait_for_change(stream, lambda c: c.kind == "tools" and "fix__zebra_crossing" in c.removed)
        assert host.discovery().search("zebra crossing") == []


async def test_an_unavailable_servers_tools_are_not_found(reaper: Any) -> None:
    async with Host(catalog(), initial_backoff=60) as host:
        assert [m.name for m in host.discovery().search("echo")] == ["fix__echo"]
        stream = host.changes()
        with contextlib.suppress(Exception):
            await host.call_tool("fix__crash")
        await wait_for_change(stream, lambda c: c.server == "fix" and c.kind == "state" and c.state != "ready")
        assert host.discovery().search("echo") == []
        with pytest.raises(UnknownTool):
            host.discovery().describe(["fix__echo"])
        assert [m.name for m in host.discovery().search("note", limit=1)] == ["notes__add_note"]


# -- configuration --------------------------------------------------------------------------------


def test_expose_in_the_configuration_file() -> None:
    assert parse_config({"mcpServers": {}}).expose == "tools"
    assert parse_config({"host": {"expose": "search"}, "mcpServers": {}}).expose == "search"
    with pytest.raises(ConfigError, match=r"field 'host.expose': must be one of 'tools', 'search', not 'serch'"):
        parse_config({"host": {"expose": "serch"}, "mcpServers": {}})
    with pytest.raises(ConfigError, match="code mode is not available yet"):
        parse_config({"host": {"expose": "code"}, "mcpServers": {}})
    assert Host({}, expose="search").expose == "search"
    assert Host(catalog(expose="search")).expose == "search"
    assert Host(catalog(expose="search"), expose="tools").expose == "tools"
    with pytest.raises(ValueError, match="expose must be one of 'tools', 'search', not 'all'"):
        Host({}, expose="all")


# -- the gateway in search mode -------------------------------------------------------------------


def structured(result: Any) -> Any:
    assert not result.is_error, result
    return result.structured_content


@contextlib.asynccontextmanager
async def search_gateway(**options: Any) -> AsyncIterator[tuple[Host, int]]:
    """``test_host_gateway_modern.gateway`` on the catalog in search mode (``auth`` given
    here: that helper's ``auth`` is a flag for its own verifier)."""
    async with Host(catalog(expose="search"), client_requests=("sampling", "elicitation")) as host:
        assert host.expose == "search"
        async with serving_http(host, LIMIT, **options) as port:
            yield host, port


async def exercise(session: Any) -> None:
    """What a model does in search mode, through one SDK session."""
    listed = await session.list_tools()
    assert [tool.name for tool in listed.tools] == SEARCH_TOOLS
    found = structured(await session.call_tool("search_tools", {"query": "add a note", "limit": 2}))
    assert found["tools"][0] == {"name": "notes__add_note", "server": "notes", "description": "Add a note."}
    assert len(found["tools"]) == 2
    described = structured(await session.call_tool("describe_tools", {"names": ["notes__add_note"]}))
    assert described["tools"][0]["inputSchema"]["required"] == ["title", "body"]
    added = await session.call_tool(
        "call_tool", {"name": "notes__add_note", "arguments": {"title": "t", "body": "b"}}
    )
    assert structured(added) == {"id": 1, "title": "t", "tags": []}
    echoed = await session.call_tool("call_tool", {"name": "fix__echo", "arguments": {"text": "hi"}})
    assert json.loads(text_of(echoed)) == {"text": "hi"}
    notes: list[float] = []

    async def progress(value: float, total: float | None, message: str | None) -> None:
        notes.append(value)

    done = await session.call_tool("call_tool", {"name": "fix__progress"}, progress_callback=progress)
    assert text_of(done) == "progressed" and notes == [1, 2, 3]
    invalid = await session.call_tool("call_tool", {"name": "fix__echo", "arguments": {"text": 1}})
    assert invalid.is_error and "fix__echo" in text_of(invalid)
    unknown = await session.call_tool("call_tool", {"name": "fix__hang", "arguments": {}})
    assert unknown.is_error and text_of(unknown) == "call_tool: no tool named 'fix__hang'; find tools with search_tools"
    bad = await session.call_tool("search_tools", {"query": "note", "limit": 500})
    assert bad.is_error and text_of(bad) == "search_tools: limit must be a whole number from 1 to 50, not 500"
    extra = await session.call_tool("describe_tools", {"names": ["notes__add_note"], "full": True})
    assert extra.is_error and text_of(extra) == "describe_tools: unknown argument 'full' (it takes names)"


async def test_the_sdk_client_in_the_2026_07_28_era(reaper: Any) -> None:
    async with search_gateway() as (_, port):
        with anyio.fail_after(LIMIT):
            async with Client(url(port)) as client:
                await exercise(client)
                with pytest.raises(Exception, match="Unknown tool: 'notes__add_note'"):
                    await client.call_tool("notes__add_note", {"title": "t", "body": "b"})


@contextlib.asynccontextmanager
async def handshake(address: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(address) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        assert session.protocol_version == "2025-11-25"
        yield session


async def test_the_sdk_client_in_the_handshake_era(reaper: Any) -> None:
    async with search_gateway() as (_, port):
        with anyio.fail_after(LIMIT):
            async with handshake(url(port)) as session:
                await exercise(session)


def scoped(token: str) -> dict[str, Any] | None:
    """``<scopes joined by +>-token`` grants those scopes."""
    if not token.endswith("-token"):
        return None
    return {"sub": "someone", "scopes": token.removesuffix("-token").replace("+", " ")}


async def test_per_principal_scopes_decide_what_is_found_and_called(reaper: Any) -> None:
    policy = AccessPolicy(tools={"fix__echo": requires("echo:use")})
    async with search_gateway(auth=BearerAuth(scoped, PRM), access_policy=policy) as (_, port):
        async def tools(token: str, name: str, arguments: dict[str, Any], status: int = 200) -> Any:
            got, response = await answer(port, call(1, name, arguments), token)
            assert got == status, (got, response)
            return response

        plain = await tools("none-token", "search_tools", {"query": "echo"})
        assert plain["result"]["structuredContent"] == {"tools": []}
        refused = await tools("none-token", "call_tool", {"name": "fix__echo", "arguments": {"text": "x"}}, 400)
        assert refused["error"]["message"].startswith("Forbidden: tool 'fix__echo' needs scope echo:use")
        assert refused["error"]["data"] == {"requiredScopes": ["echo:use"], "missingScopes": ["echo:use"]}
        hidden = await tools("none-token", "describe_tools", {"names": ["fix__echo"]})
        assert hidden["result"]["isError"] is True
        allowed = await tools("echo:use-token", "search_tools", {"query": "echo"})
        assert [t["name"] for t in allowed["result"]["structuredContent"]["tools"]] == ["fix__echo"]
        echoed = await tools("echo:use-token", "call_tool", {"name": "fix__echo", "arguments": {"text": "x"}})
        assert json.loads(echoed["result"]["content"][0]["text"]) == {"text": "x"}


# -- mcp-host serve --expose search, a process ----------------------------------------------------


@contextlib.contextmanager
def served(tmp_path: Path, *flags: str, host: dict[str, Any] | None = None) -> Iterator[str]:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(catalog(**(host or {}))))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(path), "--http",
         f"127.0.0.1:{port}", *flags],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        wait_listening(process, port, timeout=LIMIT)
        yield url(port)
    finally:
        stop_process(process, strict=True)
        assert process.stderr is not None
        assert "in search mode at http://127.0.0.1" in process.stderr.read().decode()


async def test_mcp_host_serve_expose_search_in_both_eras(reaper: Any, tmp_path: Path) -> None:
    with served(tmp_path, "--expose", "search") as address:
        with anyio.fail_after(LIMIT):
            async with Client(address) as client:
                await exercise(client)
            async with handshake(address) as session:
                listed = await session.list_tools()
                assert [tool.name for tool in listed.tools] == SEARCH_TOOLS
                found = structured(await session.call_tool("search_tools", {"query": "notes"}))
                assert {t["name"] for t in found["tools"]} >= {"notes__add_note", "notes__search_notes"}


async def test_mcp_host_serve_takes_expose_from_the_file(reaper: Any, tmp_path: Path) -> None:
    with served(tmp_path, host={"expose": "search"}) as address:
        with anyio.fail_after(LIMIT):
            async with Client(address) as client:
                listed = await client.list_tools()
                assert [tool.name for tool in listed.tools] == SEARCH_TOOLS


def test_mcp_host_serve_refuses_an_unknown_expose_mode(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {}}))
    done = subprocess.run(
        [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(path), "--stdio", "--expose", "all"],
        cwd=REPO, capture_output=True, text=True, timeout=LIMIT,
    )
    assert done.returncode == 2
    assert "argument --expose: invalid choice: 'all'" in done.stderr and "search" in done.stderr


async def test_over_stdio_a_direct_call_of_a_hidden_tool_does_not_pass_through(reaper: Any, tmp_path: Path) -> None:
    """``mcp-host serve --stdio`` relays routed calls without the usual path (``fastpath``);
    in search mode nothing but the three tools is served, so nothing passes through."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(catalog()))
    command = [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(config), "--stdio",
               "--expose", "search"]
    async with connect_stdio(command, cwd=str(REPO)) as client:
        assert client.session.era == "stateless"
        with anyio.fail_after(LIMIT):
            listed = await client.list_tools()
            assert [tool.name for tool in listed.tools] == SEARCH_TOOLS
            with pytest.raises(RpcError, match="Unknown tool: 'fix__echo'"):
                await client.call_tool(name="fix__echo", arguments={"text": "direct"})
            routed = await client.call_tool(name="call_tool", arguments={"name": "fix__echo", "arguments": {"text": "x"}})
            assert json.loads(text_of(routed)) == {"text": "x"}
