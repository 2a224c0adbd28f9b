"""MCP Apps through the host and the gateway, and seen by the official SDK client (mcp 2.3.0).

Real parts: ``examples/apps_server.py`` runs as stdio processes (two of them, both serving
``ui://notes/board`` with different headings); the host reads a tool's UI from the tool's own
server; the gateway (``mcp-host serve --stdio``) passes ``_meta.ui`` and the ``ui://``
resource through, to the SDK client and to ours in the 2026-07-28 era."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from host_support import REPO, stdio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_mcp_apps import check_against

from mcp_generated import v2025_11_25, v2026_07_28
from typedmcp.connecting import connect_stdio
from typedmcp.host import Host, UnknownTool
from typedmcp.protocol.apps import RESOURCE_MIME_TYPE, tool_ui_resource_uri, ui_resource_for

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]
LIMIT = 60.0
APPS_SERVER = REPO / "examples" / "apps_server.py"
SERVERS = {
    "alpha": stdio(APPS_SERVER, "--heading", "Alpha board"),
    "beta": stdio(APPS_SERVER, "--heading", "Beta board"),
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_the_host_reads_a_tools_ui_from_the_tools_own_server() -> None:
    with anyio.fail_after(LIMIT):
        async with Host(SERVERS) as host:
            tools = {entry.name: entry for entry in host.tools()}
            assert tool_ui_resource_uri(tools["beta__show_board"].definition) == "ui://notes/board"
            check_against("McpUiToolMeta", tools["beta__move_note"].definition["_meta"]["ui"])
            alpha = await host.ui_resource_for("alpha__show_board")
            beta = await host.ui_resource_for("beta__show_board")
            assert alpha is not None and "Alpha board" in alpha.html
            assert beta is not None and "Beta board" in beta.html  # not the first lister's board
            assert beta.mime_type == RESOURCE_MIME_TYPE
            assert beta.meta.permissions == frozenset({"clipboardWrite"})
            assert beta.meta.prefers_border is True
            offered = {item["function"]["name"] for item in host.function_definitions()}
            assert {"alpha__show_board", "beta__show_board"} <= offered
            assert not offered & {"alpha__move_note", "beta__move_note"}  # app-only: not for the model
            assert "beta__move_note" in tools  # still listed and callable (by the app)
            with pytest.raises(UnknownTool, match="no tool named 'nope'"):
                await host.ui_resource_for("nope")


def gateway_command(config: Path) -> list[str]:
    return [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(config), "--stdio"]


@pytest.fixture
def one_server_config(tmp_path: Path) -> Path:
    import json

    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"board": SERVERS["beta"]}}))
    return path


@asynccontextmanager
async def sdk_session(command: list[str]) -> AsyncIterator[ClientSession]:
    parameters = StdioServerParameters(command=command[0], args=command[1:], cwd=str(REPO), env=dict(os.environ))
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def sdk_sees_the_ui(session: ClientSession, tool_name: str) -> None:
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    meta = tools[tool_name].meta
    assert meta is not None and meta["ui"] == {"resourceUri": "ui://notes/board"}
    check_against("McpUiToolMeta", meta["ui"])
    read = await session.read_resource("ui://notes/board")
    (contents,) = read.contents
    assert contents.mime_type == RESOURCE_MIME_TYPE
    assert "Beta board" in getattr(contents, "text", "")
    assert contents.meta is not None
    check_against("McpUiResourceMeta", contents.meta["ui"])


async def test_the_sdk_client_sees_the_ui_on_the_server() -> None:
    with anyio.fail_after(LIMIT):
        async with sdk_session([sys.executable, str(APPS_SERVER), "--heading", "Beta board"]) as session:
            await sdk_sees_the_ui(session, "show_board")


async def test_the_gateway_passes_the_ui_through_to_the_sdk_client(one_server_config: Path) -> None:
    with anyio.fail_after(LIMIT):
        async with sdk_session(gateway_command(one_server_config)) as session:
            await sdk_sees_the_ui(session, "board__show_board")


@pytest.fixture
def two_servers_config(tmp_path: Path) -> Path:
    import json

    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": SERVERS}))
    return path


async def test_the_gateway_keeps_each_servers_view_when_two_share_a_ui_uri(two_servers_config: Path) -> None:
    """Both servers serve ui://notes/board: through the gateway each one's tools link (and read)
    its own copy, ui://alpha/notes/board and ui://beta/notes/board."""
    with anyio.fail_after(LIMIT):
        async with sdk_session(gateway_command(two_servers_config)) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            listed = {resource.uri for resource in (await session.list_resources()).resources}
            assert {"ui://alpha/notes/board", "ui://beta/notes/board"} <= {str(uri) for uri in listed}
            for server, heading in (("alpha", "Alpha board"), ("beta", "Beta board")):
                meta = tools[f"{server}__show_board"].meta
                assert meta is not None
                uri = meta["ui"]["resourceUri"]
                assert uri == f"ui://{server}/notes/board" and meta["ui/resourceUri"] == uri
                assert tools[f"{server}__move_note"].meta["ui"] == {"resourceUri": uri, "visibility": ["app"]}  # type: ignore[index]
                (contents,) = (await session.read_resource(uri)).contents
                assert heading in getattr(contents, "text", "")
                assert str(contents.uri) == uri
                assert contents.mime_type == RESOURCE_MIME_TYPE


@pytest.mark.parametrize("package", [v2025_11_25, v2026_07_28], ids=lambda package: package.PROTOCOL_VERSION)
async def test_the_gateway_passes_the_ui_through_to_our_client(one_server_config: Path, package: Any) -> None:
    with anyio.fail_after(LIMIT):
        async with connect_stdio(gateway_command(one_server_config), protocol=package, cwd=str(REPO)) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            found = await ui_resource_for(client, tools["board__show_board"])
            assert found is not None and "Beta board" in found.html
            assert found.meta.prefers_border is True
            assert await ui_resource_for(client, tools["board__move_note"]) is not None
