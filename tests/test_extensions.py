"""Extension negotiation (SEP-2133): each side declares ``capabilities.extensions`` where its
revision has the field (2026-07-28) and reads the peer's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from typedmcp import TASKS_EXTENSION, ExtensionError, extension_settings, supports_extension
from typedmcp.app import Context, McpApp
from typedmcp.connecting import connect_memory
from mcp_generated import v2025_11_25, v2026_07_28

APPS_EXTENSION = "io.modelcontextprotocol/ui"


def app_seeing_the_client(extensions: dict[str, Any] | None = None) -> McpApp:
    """An app that declares ``extensions`` and whose tool reports what the client declared."""
    app = McpApp("ext", "1.0.0", extensions=extensions)

    @app.tool()
    def client_extensions(ctx: Context) -> str:
        """Which extensions the client declared, with the tasks extension's settings."""
        return f"{ctx.client_supports(TASKS_EXTENSION)} {ctx.client_extension(TASKS_EXTENSION)}"

    return app


async def negotiated(
    app: McpApp, protocol: Any, client_extensions: dict[str, Any] | None
) -> tuple[dict[str, Any], bool, dict[str, Any] | None, str]:
    """(server capabilities as the client saw them, peer_supports, peer_extension, the tool's
    report of what the server saw from the client)."""
    async with connect_memory(app, protocol=protocol, extensions=client_extensions) as client:
        session = client.session
        result = await client.call_tool(name="client_extensions", arguments={})
        return (
            dict(session.peer_capabilities),
            session.peer_supports(APPS_EXTENSION),
            session.peer_extension(APPS_EXTENSION),
            result.content[0].text,
        )


def test_both_sides_declare_and_read_extensions_in_2026_07_28() -> None:
    app = app_seeing_the_client({APPS_EXTENSION: {"mimeTypes": ["text/html;profile=mcp-app"]}})
    capabilities, supported, settings, seen = asyncio.run(
        negotiated(app, v2026_07_28, {TASKS_EXTENSION: {"poll": True}})
    )
    assert capabilities["extensions"] == {APPS_EXTENSION: {"mimeTypes": ["text/html;profile=mcp-app"]}}
    assert supported is True and settings == {"mimeTypes": ["text/html;profile=mcp-app"]}
    assert seen == "True {'poll': True}"  # this request's client capabilities carried it


def test_an_undeclared_extension_is_not_supported() -> None:
    capabilities, supported, settings, seen = asyncio.run(
        negotiated(app_seeing_the_client(), v2026_07_28, None)
    )
    assert "extensions" not in capabilities
    assert (supported, settings, seen) == (False, None, "False None")


def test_handshake_revisions_have_no_extensions_on_the_wire() -> None:
    """2025-11-25's capabilities have no ``extensions`` field: nothing is declared there."""
    app = app_seeing_the_client({APPS_EXTENSION: {}})
    capabilities, supported, _, seen = asyncio.run(
        negotiated(app, v2025_11_25, {TASKS_EXTENSION: {}})
    )
    assert "extensions" not in capabilities
    assert supported is False and seen == "False None"


@pytest.mark.parametrize(
    ("extensions", "message"),
    [
        ({"tasks": {}}, "extension identifier 'tasks' is not '<vendor prefix>/<name>'"),
        ({TASKS_EXTENSION: True}, f"the settings of extension '{TASKS_EXTENSION}' must be an object"),
        ([TASKS_EXTENSION], "extensions must be a mapping of extension identifier to settings"),
    ],
)
def test_a_bad_declaration_names_what_is_wrong(extensions: Any, message: str) -> None:
    with pytest.raises(ExtensionError, match="^" + message.replace("(", r"\(").replace("[", r"\[")):
        McpApp("bad", extensions=extensions)
    with pytest.raises(ExtensionError, match="^" + message.replace("(", r"\(").replace("[", r"\[")):

        async def connect() -> None:
            async with connect_memory(McpApp("ok"), extensions=extensions):
                pass

        asyncio.run(connect())


def test_reading_a_capabilities_object() -> None:
    capabilities = {"extensions": {TASKS_EXTENSION: {}, "x.y/z": {"a": 1}}, "tools": {}}
    assert supports_extension(capabilities, TASKS_EXTENSION)
    assert extension_settings(capabilities, "x.y/z") == {"a": 1}
    assert not supports_extension({"extensions": {TASKS_EXTENSION: None}}, TASKS_EXTENSION)
    assert not supports_extension(None, TASKS_EXTENSION)
