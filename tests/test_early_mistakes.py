"""Mistakes caught when they are made (issue 18, requirement 8).

Before, ``run_stdio(app, server_inf=...)`` failed only at the first request (the option
reached the session when a client connected), ``http_app(app, server_inf=...)`` and
``McpApp("x", server_inf=...)`` with Python's bare ``TypeError``, and a misspelt handler
(``list_tool`` for ``list_tools``) made a server that answered ``tools/list`` with -32601.
Now each is refused at the call or when the class is made, naming the closest valid name.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO_ROOT
from mcp_generated.v2025_11_25 import client as client25
from mcp_generated.v2025_11_25 import models as models25
from mcp_generated.v2025_11_25 import server as server25
from mcp_generated.v2026_07_28 import server as server26
from typedmcp import McpApp, http_app, run_stdio, serve, serve_stdio
from typedmcp.protocol.hooks import edit_distance
from typedmcp.protocol.options import UnknownOptionError


def test_run_stdio_refuses_an_unknown_option_before_serving() -> None:
    # before the fix this blocked on stdin (the option reached a session only later)
    with pytest.raises(UnknownOptionError, match=r"^run_stdio\(\) got an unknown keyword server_inf=: did you mean server_info=\?$"):
        run_stdio(McpApp("x"), server_inf={"name": "x", "version": "1"})


def test_serve_and_serve_stdio_refuse_an_unknown_option() -> None:
    with pytest.raises(UnknownOptionError, match=r"^serve_stdio\(\) got an unknown keyword instructons=: did you mean instructions=\?"):
        asyncio.run(serve_stdio(McpApp("x"), instructons="hi"))
    with pytest.raises(UnknownOptionError, match=r"^serve\(\) got an unknown keyword validate_tool=: did you mean validate_tools=\?"):
        asyncio.run(serve(McpApp("x"), object(), validate_tool=False))


def test_http_app_refuses_an_unknown_option_naming_the_closest() -> None:
    with pytest.raises(UnknownOptionError, match=r"^http_app\(\) got an unknown keyword server_inf=: did you mean server_info=\?"):
        http_app(McpApp("x"), server_inf={"name": "x", "version": "1"})
    # an HTTP option and a shared-state option are suggested too
    with pytest.raises(UnknownOptionError, match=r"did you mean allowed_origins=\?"):
        http_app(McpApp("x"), allowed_origin=["https://a"])
    with pytest.raises(UnknownOptionError, match=r"did you mean redis_url=\?"):
        http_app(McpApp("x"), redis_uri="redis://localhost")
    # nothing close: the valid ones are listed
    with pytest.raises(UnknownOptionError, match=r"got an unknown keyword zzz=: valid ones: .*server_info"):
        http_app(McpApp("x"), zzz=1)


def test_unknown_option_is_a_type_error_and_valid_ones_still_pass() -> None:
    assert issubclass(UnknownOptionError, TypeError)
    # every documented kind of option is accepted: session, stateless, HTTP, internal-only ones not
    app = http_app(McpApp("x"), server_info={"name": "x", "version": "1"}, state_ttl=60.0,
                   allowed_hosts=["localhost"], max_sessions=5, legacy_sse=True)
    assert app.path == "/mcp"
    with pytest.raises(UnknownOptionError, match=r"unknown keyword make_session="):
        http_app(McpApp("x"), make_session=None)


def test_mcp_app_refuses_an_unknown_keyword_naming_the_closest() -> None:
    with pytest.raises(UnknownOptionError, match=r"^McpApp\(\) got an unknown keyword instrutions=: did you mean instructions=\?$"):
        McpApp("notes", instrutions="hi")  # type: ignore[call-arg]
    with pytest.raises(UnknownOptionError, match=r"did you mean version=\?"):
        McpApp("notes", versoin="1.0")  # type: ignore[call-arg]
    app = McpApp("notes", "1.0", title="Notes", instructions="hi")
    assert (app.name, app.version, app.title) == ("notes", "1.0", "Notes")


def test_a_mcp_app_subclass_is_checked_against_its_own_init() -> None:
    class Own(McpApp):
        def __init__(self, name: str, *, colour: str = "red") -> None:
            super().__init__(name)
            self.colour = colour

    assert Own("x", colour="blue").colour == "blue"
    with pytest.raises(UnknownOptionError, match=r"^Own\(\) got an unknown keyword color=: did you mean colour=\?$"):
        Own("x", color="blue")  # type: ignore[call-arg]


async def handler(self: Any, params: Any, ctx: Any) -> Any:
    return models25.ListToolsResult(tools=[])


@pytest.mark.parametrize(
    ("base", "name", "meant"),
    [
        (server25.ServerHandlers, "list_tool", "list_tools"),
        (server25.ServerHandlers, "call_tools", "call_tool"),
        (server25.ServerHandlers, "get_prompts", "get_prompt"),
        (server25.ServerHandlers, "read_resources", "read_resource"),
        (server25.ServerHandlers, "on_progres", "on_progress"),
        (server25.ServerHandlers, "callTool", "call_tool"),
        (server25.ServerHandlers, "unsubscibe", "unsubscribe"),
        (server25.ServerHandlers, "completes", "complete"),
        (server26.ServerHandlers, "list_tool", "list_tools"),
        (client25.ClientHandlers, "create_mesage", "create_message"),
        (client25.ClientHandlers, "list_root", "list_roots"),
    ],
)
def test_a_misspelt_handler_is_refused_naming_the_one_meant(base: type, name: str, meant: str) -> None:
    with pytest.raises(TypeError, match=rf"^Mine\.{name} is not a handler, .* did you mean {meant}\? Rename it to {meant} \(or to _{name} if it is a helper\)\.$"):
        type("Mine", (base,), {name: handler})


def test_a_misspelt_handler_in_a_mixin_is_refused_too() -> None:
    class Listing:
        async def list_tool(self, params: Any, ctx: Any) -> Any:
            return None

    with pytest.raises(TypeError, match=r"^Listing\.list_tool is not a handler"):
        type("Mine", (Listing, server25.ServerHandlers), {})


def test_helpers_and_handlers_of_other_revisions_are_allowed() -> None:
    class Mine(server25.ServerHandlers):
        async def list_tools(self, params: Any, ctx: Any) -> Any:  # a handler
            return await self._list_tool()

        async def _list_tool(self) -> Any:  # private: any name
            return models25.ListToolsResult(tools=[])

        def list_notes(self) -> list[str]:  # public, not like a handler
            return []

        list_toolz = "not a function"  # data is never taken for a handler

    assert Mine().list_notes() == []


def test_a_handler_of_an_other_revision_is_not_taken_for_a_misspelling() -> None:
    # 2024-11-05's ServerHandlers has no elicitation/tasks handlers; a 2025-11-25 name is
    # a handler of a revision generated beside it
    from mcp_generated.v2024_11_05 import server as server24

    type("Mine", (server24.ServerHandlers,), {"list_tasks": handler})


def test_near_misses_are_counted_in_edits() -> None:
    assert edit_distance("listtool", "listtools") == 1
    assert edit_distance("unsubscibe", "unsubscribe") == 1
    assert edit_distance("callotol", "calltool") == 1  # a swap of neighbours is one edit
    assert edit_distance("addresource", "readresource") == 3  # McpApp.add_resource: a helper


def test_a_near_miss_of_a_runtime_hook_is_not_refused() -> None:
    # ping/initialize are answered by the runtime (refused outright): a helper "pong" is fine
    type("Mine", (server25.ServerHandlers,), {"pong": handler, "initialise_db": handler})


def test_the_other_side_handler_names_are_deliberate() -> None:
    # a gateway's server class may define list_roots (a client handler), a client class
    # list_tools (a server handler); neither is a misspelling
    type("Mine", (server25.ServerHandlers,), {"list_roots": handler, "list_prompt_names": handler})
    type("Mine", (client25.ClientHandlers,), {"list_tools": handler, "call_tool": handler})


@pytest.mark.parametrize("path", sorted((REPO_ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_the_example_servers_still_import(path: Path) -> None:
    # every handler class of the examples is made on import: none is refused by the rule
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(spec.name, None)
