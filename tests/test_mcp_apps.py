"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension): a typed app declares a UI resource
and links tools to it; the wire is checked against the ext-apps 2.0.4 package's own JSON
schema (pinned in schema/extensions/ext-apps/), in both eras and each revision; a client
reads a tool's UI with ``ui_resource_for``."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conftest import REPO_ROOT
from mcp_generated import v2024_11_05, v2025_03_26, v2025_06_18, v2025_11_25, v2026_07_28
from typedmcp.app import Context, DeclarationError, McpApp, UiCsp, UiLink
from typedmcp.connecting import connect_memory
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.apps import (
    EXTENSION_ID,
    LEGACY_RESOURCE_URI_KEY,
    RESOURCE_MIME_TYPE,
    UiError,
    UiResourceMeta,
    peer_renders_ui,
    tool_ui_resource_uri,
    tool_ui_visibility,
    ui_extension,
    ui_extension_settings,
    ui_resource_contents,
    ui_resource_for,
    ui_tool_meta,
)

EXTENSIONS = REPO_ROOT / "schema" / "extensions"
BOARD = "<!doctype html><html><body><div id='board'></div></body></html>"


def ext_apps_schema() -> dict[str, Any]:
    """The pinned ext-apps schema (its sha256 checked by test_the_pin_matches_the_file)."""
    return dict(json.loads((EXTENSIONS / "ext-apps" / "schema.json").read_text("utf-8")))


def check_against(definition: str, instance: Any) -> None:
    """Validate ``instance`` against ``$defs[definition]`` of the pinned ext-apps schema."""
    schema = ext_apps_schema()
    target = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
    jsonschema.Draft202012Validator(target).validate(instance)


def make_app() -> McpApp:
    app = McpApp("board", version="1.0.0")

    @app.ui_resource(
        "ui://notes/board",
        title="Notes board",
        csp=UiCsp(connect_domains=["https://api.example.com"], resource_domains=["https://cdn.example.com"]),
        permissions=["clipboardWrite"],
        domain="board.example.com",
        prefers_border=False,
    )
    def board() -> str:
        """The board."""
        return BOARD

    @app.tool(ui="ui://notes/board")
    def show_board() -> str:
        """Show the notes board."""
        return "shown"

    @app.tool(ui=UiLink("ui://notes/board", visibility=["app"]))
    def move_note(note_id: int, column: str) -> str:
        """Move a note (called by the board only)."""
        return f"{note_id} -> {column}"

    @app.tool
    def plain() -> str:
        """No UI."""
        return "plain"

    return app


def test_the_pin_matches_the_file() -> None:
    pins = json.loads((EXTENSIONS / "pins.json").read_text("utf-8"))
    (pin,) = [entry for entry in pins["extensions"] if entry["identifier"] == EXTENSION_ID]
    assert hashlib.sha256((EXTENSIONS / pin["schema"]).read_bytes()).hexdigest() == pin["sha256"]
    assert hashlib.sha256((EXTENSIONS / pin["license"]).read_bytes()).hexdigest() == pin["license_sha256"]
    assert pin["version"] == "2.0.4"
    assert ext_apps_schema()["$schema"] == pin["dialect"]


def test_the_constants_are_the_packages() -> None:
    """The mime type is the one the pinned schema names; the identifier and the legacy key are
    the package's ``EXTENSION_ID`` and ``RESOURCE_URI_META_KEY`` (dist/src/server/index.d.ts,
    constants.d.ts of ext-apps 2.0.4), written out here so a typo in the runtime fails."""
    described = ext_apps_schema()["$defs"]["McpUiClientCapabilities"]["properties"]["mimeTypes"]["description"]
    assert f'"{RESOURCE_MIME_TYPE}"' in described
    assert RESOURCE_MIME_TYPE == "text/html;profile=mcp-app"
    assert EXTENSION_ID == "io.modelcontextprotocol/ui"
    assert LEGACY_RESOURCE_URI_KEY == "ui/resourceUri"


def test_the_schema_rejects_what_it_should() -> None:
    """The schema route has teeth: a wrong visibility or CSP key fails validation."""
    with pytest.raises(jsonschema.ValidationError):
        check_against("McpUiToolMeta", {"resourceUri": "ui://x", "visibility": ["user"]})
    with pytest.raises(jsonschema.ValidationError):
        check_against("McpUiResourceMeta", {"csp": {"connectSrc": ["https://a"]}})


REVISIONS_WITH_META = [v2025_06_18, v2025_11_25, v2026_07_28]


@pytest.mark.parametrize("package", REVISIONS_WITH_META, ids=lambda package: package.PROTOCOL_VERSION)
def test_tools_and_resource_on_the_wire_follow_the_ext_apps_schema(package: Any) -> None:
    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
        async with connect_memory(make_app(), protocol=package) as client:
            tools = (await client.list_tools()).model_dump(by_alias=True, exclude_none=True)["tools"]
            resources = (await client.list_resources()).model_dump(by_alias=True, exclude_none=True)["resources"]
            read = (await client.read_resource(uri="ui://notes/board")).model_dump(by_alias=True, exclude_none=True)
            return tools, resources, read

    tools, resources, read = asyncio.run(scenario())
    by_name = {tool["name"]: tool for tool in tools}
    assert by_name["show_board"]["_meta"] == {
        "ui": {"resourceUri": "ui://notes/board"}, LEGACY_RESOURCE_URI_KEY: "ui://notes/board",
    }
    assert by_name["move_note"]["_meta"]["ui"] == {"resourceUri": "ui://notes/board", "visibility": ["app"]}
    assert "_meta" not in by_name["plain"]
    for name in ("show_board", "move_note"):
        check_against("McpUiToolMeta", by_name[name]["_meta"]["ui"])
    (contents,) = read["contents"]
    assert contents["uri"] == "ui://notes/board"
    assert contents["mimeType"] == RESOURCE_MIME_TYPE
    assert contents["text"] == BOARD
    ui = contents["_meta"]["ui"]
    assert ui == {
        "csp": {"connectDomains": ["https://api.example.com"], "resourceDomains": ["https://cdn.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "domain": "board.example.com",
        "prefersBorder": False,
    }
    check_against("McpUiResourceMeta", ui)
    (listed,) = resources
    assert listed["mimeType"] == RESOURCE_MIME_TYPE
    assert listed["_meta"]["ui"] == ui  # the listing carries the same default for hosts to review


@pytest.mark.parametrize("package", [v2024_11_05, v2025_03_26], ids=lambda package: package.PROTOCOL_VERSION)
def test_revisions_without_tool_meta_see_the_tool_without_its_ui(package: Any) -> None:
    async def scenario() -> tuple[list[dict[str, Any]], str]:
        async with connect_memory(make_app(), protocol=package) as client:
            tools = (await client.list_tools()).model_dump(by_alias=True, exclude_none=True)["tools"]
            read = await client.read_resource(uri="ui://notes/board")
            return tools, read.contents[0].text

    tools, html = asyncio.run(scenario())
    assert all("_meta" not in tool for tool in tools)
    assert html == BOARD


@pytest.mark.parametrize("package", REVISIONS_WITH_META, ids=lambda package: package.PROTOCOL_VERSION)
def test_a_client_reads_a_tools_ui(package: Any) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with connect_memory(make_app(), protocol=package) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            return await ui_resource_for(client, tools["show_board"]), await ui_resource_for(client, tools["plain"])

    found, none = asyncio.run(scenario())
    assert none is None
    assert found.uri == "ui://notes/board"
    assert found.html == BOARD
    assert found.mime_type == RESOURCE_MIME_TYPE
    assert found.meta.csp is not None and found.meta.csp.connect_domains == ("https://api.example.com",)
    assert found.meta.permissions == frozenset({"clipboardWrite"})
    assert found.meta.domain == "board.example.com"
    assert found.meta.prefers_border is False


def test_low_level_helpers_build_the_same_wire() -> None:
    meta = ui_tool_meta("ui://weather/view", visibility=["model", "app"], meta={"x": 1})
    assert meta == {
        "x": 1, "ui": {"resourceUri": "ui://weather/view", "visibility": ["model", "app"]},
        LEGACY_RESOURCE_URI_KEY: "ui://weather/view",
    }
    check_against("McpUiToolMeta", meta["ui"])
    contents = ui_resource_contents(
        "ui://weather/view", "<p>hi</p>", UiResourceMeta(csp=UiCsp(frame_domains=("https://maps.example",)), prefers_border=True)
    )
    assert contents == {
        "uri": "ui://weather/view", "mimeType": RESOURCE_MIME_TYPE, "text": "<p>hi</p>",
        "_meta": {"ui": {"csp": {"frameDomains": ["https://maps.example"]}, "prefersBorder": True}},
    }
    check_against("McpUiResourceMeta", contents["_meta"]["ui"])
    assert tool_ui_resource_uri({"name": "t", "_meta": meta}) == "ui://weather/view"
    assert tool_ui_resource_uri({"name": "t", "_meta": {LEGACY_RESOURCE_URI_KEY: "ui://old"}}) == "ui://old"
    assert tool_ui_visibility({"name": "t", "_meta": {"ui": {"resourceUri": "ui://a", "visibility": ["app"]}}}) == ("app",)
    assert tool_ui_visibility({"name": "t"}) == ("model", "app")


def test_the_extension_settings_follow_the_schema() -> None:
    declared = ui_extension()
    assert declared == {EXTENSION_ID: {"mimeTypes": [RESOURCE_MIME_TYPE]}}
    check_against("McpUiClientCapabilities", declared[EXTENSION_ID])
    assert peer_renders_ui({"extensions": declared})
    assert not peer_renders_ui({"extensions": {EXTENSION_ID: {"mimeTypes": ["text/html"]}}})
    assert ui_extension_settings({}) is None and ui_extension_settings(None) is None


@pytest.mark.parametrize(
    ("package", "renders"), [(v2026_07_28, True), (v2025_11_25, False)], ids=["2026-07-28", "2025-11-25"]
)
def test_a_tool_sees_whether_the_client_renders_ui(package: Any, renders: bool) -> None:
    """A client declares the extension with extensions=ui_extension(); a server function reads it
    (2026-07-28 carries extensions; the handshake era has no such field)."""
    app = McpApp("renders")

    @app.tool
    def board_or_text(ctx: Context) -> str:
        """A view when the client renders one, else text."""
        return "view" if peer_renders_ui(ctx.client_capabilities) else "text"

    async def scenario() -> Any:
        async with connect_memory(app, protocol=package, extensions=ui_extension()) as client:
            return await client.call_tool(name="board_or_text")

    result = asyncio.run(scenario())
    assert result.content[0].text == ("view" if renders else "text")


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda app: app.tool(ui="https://x/board")(lambda: "x"), "starts with 'ui://'"),
        (lambda app: app.tool(ui=UiLink("ui://a", visibility=["user"]))(lambda: "x"), "visibility"),
        (lambda app: app.tool(ui="ui://a", meta={"ui": {}})(lambda: "x"), "give the UI link once"),
        (lambda app: app.ui_resource("notes://board")(lambda: "x"), "starts with 'ui://'"),
        (lambda app: app.ui_resource("ui://{board}")(lambda board: "x"), "template"),
        (lambda app: app.ui_resource("ui://a", permissions=["webcam"])(lambda: "x"), "unknown UI permission"),
        (lambda app: app.ui_resource("ui://a", permissions="camera")(lambda: "x"), "takes a list"),
    ],
)
def test_mistakes_are_declaration_errors_naming_the_fix(declare: Any, message: str) -> None:
    with pytest.raises(DeclarationError, match=message):
        declare(McpApp("bad"))


def test_a_ui_function_returning_no_html_is_a_clear_error() -> None:
    app = McpApp("bad")

    @app.ui_resource("ui://bad")
    def bad() -> Any:
        return {"not": "html"}

    async def scenario() -> str:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            try:
                await client.read_resource(uri="ui://bad")
            except RpcError as error:
                return str(error)
        return "no error"

    assert "returns its HTML as a str" in asyncio.run(scenario())


def test_ui_errors_are_value_errors() -> None:
    with pytest.raises(UiError):
        ui_tool_meta("ui://a", visibility=[])
    with pytest.raises(UiError, match="list of origins"):
        UiCsp(connect_domains="https://a")  # type: ignore[arg-type]
    assert UiCsp(connect_domains=["https://a"]) == UiCsp(connect_domains=("https://a",))
    assert issubclass(UiError, ValueError)
    assert Path(EXTENSIONS / "ext-apps" / "LICENSE").is_file()


class LowLevelBoard(v2025_11_25.server.ServerHandlers):
    """A server of low-level handlers using the helpers for the tool's ``_meta`` and the contents."""

    async def list_tools(self, params: Any, ctx: Any) -> Any:
        tool = {
            "name": "show_board", "inputSchema": {"type": "object"},
            "_meta": ui_tool_meta("ui://low/board", visibility=["model"]),
        }
        return v2025_11_25.models.ListToolsResult(tools=[v2025_11_25.models.Tool.model_validate(tool)])

    async def read_resource(self, params: Any, ctx: Any) -> Any:
        meta = UiResourceMeta(csp=UiCsp(connect_domains=("https://api.example.com",)), permissions=frozenset({"camera"}))
        contents = ui_resource_contents(params.uri, BOARD, meta)
        return v2025_11_25.models.ReadResourceResult.model_validate({"contents": [contents]})


@pytest.mark.parametrize("package", [v2025_11_25, v2026_07_28], ids=lambda package: package.PROTOCOL_VERSION)
def test_low_level_handlers_serve_a_ui_a_client_reads(package: Any) -> None:
    async def scenario() -> tuple[dict[str, Any], Any]:
        async with connect_memory(LowLevelBoard(), protocol=package) as client:
            (tool,) = (await client.list_tools()).tools
            return tool.model_dump(by_alias=True, exclude_none=True), await ui_resource_for(client, tool)

    tool, found = asyncio.run(scenario())
    check_against("McpUiToolMeta", tool["_meta"]["ui"])
    assert tool["_meta"]["ui"] == {"resourceUri": "ui://low/board", "visibility": ["model"]}
    assert found.html == BOARD
    assert found.meta.permissions == frozenset({"camera"})
    check_against("McpUiResourceMeta", UiResourceMeta(permissions=found.meta.permissions, csp=found.meta.csp).to_wire())
