"""``McpApp.mount(child, prefix=...)``: a child app's tools, resources, templates and prompts
served through the parent under a prefix, in process (both eras: ``connect_memory`` serves
each), with the child's list changes reaching the parent's clients."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mcp_generated.v2025_11_25 import client as mcp
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ServerHandlers
from typedmcp import connect_memory
from typedmcp.app import DeclarationError, McpApp
from typedmcp.protocol.access import requires


def notes_app() -> McpApp:
    notes = McpApp("notes")

    @notes.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @notes.tool(name="with.dots")
    def dotted() -> str:
        return "dotted"

    @notes.resource("notes://index")
    def index() -> str:
        return "the index"

    @notes.resource("notes://{note_id}")
    def note(note_id: int) -> str:
        return f"note {note_id}"

    @note.complete("note_id")
    def note_ids(prefix: str) -> list[str]:
        return [value for value in ("1", "12", "2") if value.startswith(prefix)]

    @notes.prompt()
    def summarize(note_id: int) -> str:
        return f"Summarize note {note_id}"

    return notes


def parent_with_notes() -> tuple[McpApp, McpApp]:
    parent = McpApp("parent")

    @parent.tool()
    def hello() -> str:
        return "hello"

    child = notes_app()
    parent.mount(child, prefix="notes")
    return parent, child


class Recorder(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.changed: list[str] = []
        self.event = asyncio.Event()

    async def on_tool_list_changed(self, params: Any, ctx: Any) -> None:
        self.changed.append("tools")
        self.event.set()

    async def on_resource_updated(self, params: Any, ctx: Any) -> None:
        self.changed.append(f"updated {params.uri}")
        self.event.set()


@pytest.mark.parametrize("protocol", ["2025-11-25", "auto"])
def test_a_mounted_tool_is_listed_with_the_prefix_and_called_by_that_name(protocol: str) -> None:
    parent, _ = parent_with_notes()

    async def scenario() -> tuple[list[str], Any, Any]:
        async with connect_memory(parent, protocol=protocol) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            added = await client.call_tool(name="notes_add", arguments={"a": 2, "b": 3})
            dotted = await client.call_tool(name="notes_with_dots", arguments={})
        return names, added, dotted

    names, added, dotted = asyncio.run(scenario())
    assert names == ["hello", "notes_add", "notes_with_dots"]  # the host's rule: '.' -> '_'
    assert added.structured_content == {"result": 5}
    assert dotted.content[0].text == "dotted"


def test_a_mounted_resource_and_template_are_read_under_the_prefixed_uri() -> None:
    parent, _ = parent_with_notes()

    async def scenario() -> tuple[list[str], list[str], Any, Any]:
        async with connect_memory(parent, protocol=v2025_11_25) as client:
            uris = [r.uri for r in (await client.list_resources()).resources]
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            index = await client.read_resource(uri="notes://notes/index")
            note = await client.read_resource(uri="notes://notes/7")
        return uris, templates, index, note

    uris, templates, index, note = asyncio.run(scenario())
    assert uris == ["notes://notes/index"]
    assert templates == ["notes://notes/{note_id}"]
    assert (index.contents[0].uri, index.contents[0].text) == ("notes://notes/index", "the index")
    assert (note.contents[0].uri, note.contents[0].text) == ("notes://notes/7", "note 7")


def test_a_mounted_prompt_and_its_completions_are_served_under_the_prefix() -> None:
    parent, _ = parent_with_notes()

    async def scenario() -> tuple[list[str], Any, Any, Any]:
        async with connect_memory(parent, protocol=v2025_11_25) as client:
            names = [p.name for p in (await client.list_prompts()).prompts]
            prompt = await client.get_prompt(name="notes_summarize", arguments={"note_id": "4"})
            by_template = await client.complete(
                ref={"type": "ref/resource", "uri": "notes://notes/{note_id}"}, argument={"name": "note_id", "value": "1"}
            )
            missing = None
            try:
                await client.get_prompt(name="notes_nothing", arguments={})
            except Exception as error:
                missing = error
        return names, prompt, by_template, missing

    names, prompt, by_template, missing = asyncio.run(scenario())
    assert names == ["notes_summarize"]
    assert prompt.messages[0].content.text == "Summarize note 4"
    assert by_template.completion.values == ["1", "12"]
    assert "unknown prompt notes_nothing" in str(missing)


def test_a_change_of_the_mounted_app_reaches_the_parents_clients() -> None:
    parent, child = parent_with_notes()

    async def scenario() -> tuple[list[str], list[str]]:
        recorder = Recorder()
        async with connect_memory(parent, protocol=v2025_11_25, client_handlers=recorder) as client:
            await client.list_tools()

            def later() -> str:
                return "later"

            child.add_tool(later)
            await asyncio.wait_for(recorder.event.wait(), 5)
            recorder.event.clear()
            names = [tool.name for tool in (await client.list_tools()).tools]
            await client.subscribe(uri="notes://notes/index")
            child.resource_updated("notes://index")
            await asyncio.wait_for(recorder.event.wait(), 5)
        return recorder.changed, names

    changed, names = asyncio.run(scenario())
    assert changed == ["tools", "updated notes://notes/index"]
    assert "notes_later" in names


def test_a_tool_of_the_parent_wins_over_a_mounted_one_of_the_same_name() -> None:
    parent = McpApp("parent")

    @parent.tool(name="notes_add")
    def own() -> str:
        return "own"

    parent.mount(notes_app(), prefix="notes")

    async def scenario() -> tuple[list[str], Any]:
        async with connect_memory(parent, protocol=v2025_11_25) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            return names, await client.call_tool(name="notes_add", arguments={})

    names, result = asyncio.run(scenario())
    assert names.count("notes_add") == 1
    assert result.content[0].text == "own"


def test_the_mounted_apps_scopes_guard_the_exported_names() -> None:
    parent, child = McpApp("parent"), McpApp("child")

    @child.tool(scopes=["notes:write"])
    def write() -> None: ...

    @child.resource("notes://{note_id}", scopes=["notes:read"])
    def read(note_id: str) -> str:
        return note_id

    parent.mount(child, prefix="n")
    assert parent.access_policy.tools == {"n_write": requires("notes:write")}
    assert parent.access_policy.resources == {"notes://n/{note_id}": requires("notes:read")}
    child.remove_tool("write")  # the copy follows the child's declarations
    assert parent.access_policy.tools == {}


@pytest.mark.parametrize(
    ("prefix", "problem"),
    [("", "prefix=''"), ("a b", "prefix='a b'"), ("x" * 41, "1 to 40 letters")],
)
def test_a_bad_prefix_is_refused_naming_it(prefix: str, problem: str) -> None:
    with pytest.raises(DeclarationError, match=problem):
        McpApp("parent").mount(notes_app(), prefix=prefix)


def test_mounting_twice_or_something_else_is_refused_saying_what_to_do() -> None:
    parent, child = parent_with_notes()
    with pytest.raises(DeclarationError, match="already mounted"):
        parent.mount(child, prefix="again")
    with pytest.raises(DeclarationError, match="already used by the mounted app 'notes'"):
        parent.mount(notes_app(), prefix="notes")
    with pytest.raises(DeclarationError, match="proxy_app"):
        parent.mount(object(), prefix="other")  # type: ignore[arg-type]


def test_an_unmounted_app_lists_what_it_declares_only() -> None:
    app = notes_app()

    async def scenario() -> models.ListToolsResult:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            return await client.list_tools()

    assert [tool.name for tool in asyncio.run(scenario()).tools] == ["add", "with.dots"]


def test_a_tool_the_mounted_app_removed_is_unknown_by_its_exported_name() -> None:
    parent, child = parent_with_notes()

    async def scenario() -> str:
        async with connect_memory(parent, protocol=v2025_11_25) as client:
            await client.call_tool(name="notes_add", arguments={"a": 1, "b": 1})  # names known
            child.remove_tool("add")
            try:
                await client.call_tool(name="notes_add", arguments={"a": 1, "b": 1})
            except Exception as error:
                return str(error)
        return "no error"

    assert "Unknown tool: notes_add" in asyncio.run(scenario())


def test_a_prompt_the_mounted_app_removed_is_unknown_by_its_exported_name() -> None:
    parent, child = parent_with_notes()

    async def scenario() -> str:
        async with connect_memory(parent, protocol=v2025_11_25) as client:
            await client.get_prompt(name="notes_summarize", arguments={"note_id": "1"})  # names known
            child.remove_prompt("summarize")
            try:
                await client.get_prompt(name="notes_summarize", arguments={"note_id": "1"})
            except Exception as error:
                return str(error)
        return "no error"

    assert "unknown prompt notes_summarize" in asyncio.run(scenario())


def test_mounting_while_serving_tells_the_clients_the_lists_changed() -> None:
    parent = McpApp("parent")

    async def scenario() -> list[str]:
        recorder = Recorder()
        async with connect_memory(parent, protocol=v2025_11_25, client_handlers=recorder) as client:
            parent.mount(notes_app(), prefix="notes")
            await asyncio.wait_for(recorder.event.wait(), 5)
            return [tool.name for tool in (await client.list_tools()).tools]

    assert asyncio.run(scenario()) == ["notes_add", "notes_with_dots"]


def test_a_uri_without_a_scheme_gets_the_prefix_as_its_first_segment() -> None:
    parent, _ = parent_with_notes()
    mount = parent._mounts.mounts[0]
    assert mount.uri("plain/name") == "notes/plain/name"
    assert mount.original_uri("notes/plain/name") == "plain/name"
    assert mount.original_uri("other/plain") is None
    assert mount.original_uri("notes://other/index") is None
    assert mount.uri("file:///etc/x") == "file://notes//etc/x"
    assert mount.original_uri("file://notes//etc/x") == "file:///etc/x"


def test_the_parents_own_requirement_of_a_name_is_kept() -> None:
    parent, child = McpApp("parent"), McpApp("child")

    @parent.tool(name="n_write", scopes=["parent:own"])
    def own() -> None: ...

    @child.tool(scopes=["notes:write"])
    def write() -> None: ...

    parent.mount(child, prefix="n")
    assert parent.access_policy.tools == {"n_write": requires("parent:own")}


def test_a_bad_separator_or_a_handler_object_that_is_no_app_is_refused() -> None:
    with pytest.raises(DeclarationError, match="separator='::'"):
        McpApp("parent").mount(notes_app(), prefix="notes", separator="::")
    with pytest.raises(DeclarationError, match="mount takes an McpApp, not ServerHandlers"):
        McpApp("parent").mount(ServerHandlers(), prefix="other")  # type: ignore[arg-type]
