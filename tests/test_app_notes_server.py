"""``examples/notes_server.py``, written only with McpApp, against the official SDK client
(mcp 2.3.0) over stdio and Streamable HTTP in both eras (``mode="auto"`` adopts
2026-07-28, ``mode="legacy"`` negotiates 2025-11-25), and against our own client."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from typedmcp.connecting import connect_stdio
from mcp_generated import v2025_06_18, v2025_11_25

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

REPO = Path(__file__).resolve().parent.parent
SERVER = REPO / "examples" / "notes_server.py"
NOTE_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["id", "title", "tags"],
    "description": "A stored note.",  # the model's docstring
}
ADD_NOTE = {
    "name": "add_note",
    "description": "Add a note.",
    "annotations": {"readOnlyHint": False},
    "inputSchema": {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "A short title."},
            "body": {"type": "string", "description": "The text of the note."},
            "tags": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Labels to find the note by.",
            },
            "priority": {
                "type": "string",
                "enum": ["low", "high"],
                "default": "low",
                "description": "How urgent the note is.",
            },
        },
        "required": ["title", "body"],
        "additionalProperties": False,
    },
    "outputSchema": NOTE_SCHEMA,
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def sdk_client(transport: str, mode: str, request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    target: StdioServerParameters | str
    if transport == "http":
        target = request.getfixturevalue("notes_http_url")
    else:
        target = StdioServerParameters(command=sys.executable, args=[str(SERVER)], cwd=str(REPO))
    async with Client(target, mode=mode) as client:  # type: ignore[arg-type]
        yield client


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_the_sdk_client_uses_every_feature_of_the_notes_server(
    transport: str, mode: str, version: str, request: pytest.FixtureRequest
) -> None:
    async with sdk_client(transport, mode, request) as client:
        assert client.protocol_version == version
        assert wire(client.server_info) == {"name": "notes", "version": "1.0.0"}
        tools = {tool.name: wire(tool) for tool in (await client.list_tools()).tools}
        assert list(tools) == ["add_note", "search_notes", "export_notes"]
        assert tools["add_note"] == ADD_NOTE
        assert tools["search_notes"]["inputSchema"]["properties"]["limit"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 10,
            "description": "The most notes to return.",
        }

        added = await client.call_tool("add_note", {"title": "Groceries", "body": "milk", "tags": ["home"]})
        assert added.structured_content == {"id": 1, "title": "Groceries", "tags": ["home"]}
        assert json.loads(added.content[0].text) == added.structured_content  # type: ignore[union-attr]
        found = await client.call_tool("search_notes", {"query": "home"})
        assert found.structured_content == {"result": [{"id": 1, "title": "Groceries", "tags": ["home"]}]}
        refused = await client.call_tool("search_notes", {"query": "x", "limit": 101})
        assert refused.is_error is True
        assert [wire(block) for block in refused.content] == [
            {"type": "text", "text": "Invalid arguments for tool search_notes: /limit: 101 is greater than the maximum of 100"}
        ]

        updates: list[float] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            updates.append(value)

        exported = await client.call_tool("export_notes", {"count": 3}, progress_callback=progress)
        assert exported.structured_content == {"result": "1. Groceries\n2. (none)\n3. (none)"}
        assert updates == [1, 2, 3]

        index = await client.read_resource("notes://index")
        assert [wire(item) for item in index.contents] == [
            {"uri": "notes://index", "mimeType": "application/json", "text": "[1]"}
        ]
        one = await client.read_resource("notes://1")
        assert json.loads(one.contents[0].text) == {"id": 1, "title": "Groceries", "tags": ["home"]}  # type: ignore[union-attr]
        templates = (await client.list_resource_templates()).resource_templates
        assert [wire(t) for t in templates] == [
            {"name": "note", "uriTemplate": "notes://{note_id}", "description": "One note, as JSON.", "mimeType": "application/json"}
        ]

        prompts = (await client.list_prompts()).prompts
        assert [wire(p) for p in prompts] == [
            {
                "name": "summarize",
                "description": "Ask for a summary of a note.",
                "arguments": [
                    {"name": "note_id", "description": "The note to summarize.", "required": True},
                    {"name": "style", "description": "short, detailed or bullet.", "required": False},
                ],
            }
        ]
        prompt = await client.get_prompt("summarize", {"note_id": "1", "style": "bullet"})
        assert [wire(m) for m in prompt.messages] == [
            {"role": "user", "content": {"type": "text", "text": "Summarize this note (bullet): Groceries"}}
        ]
        completed = await client.complete(
            types.PromptReference(type="ref/prompt", name="summarize"), {"name": "style", "value": ""}
        )
        assert wire(completed.completion) == {"values": ["short", "detailed", "bullet"], "total": 3, "hasMore": False}


@pytest.mark.parametrize("protocol", ["auto", v2025_11_25, v2025_06_18], ids=["auto", "2025-11-25", "2025-06-18"])
async def test_our_client_over_stdio(protocol: Any) -> None:
    async with connect_stdio([sys.executable, str(SERVER)], cwd=str(REPO), protocol=protocol) as client:
        added = await client.call_tool(name="add_note", arguments={"title": "t", "body": "b"})
        assert wire(added)["structuredContent"] == {"id": 1, "title": "t", "tags": []}
        listed = await client.list_tools()
        assert wire(listed.tools[0]) == ADD_NOTE
        read = await client.read_resource(uri="notes://1")
        assert json.loads(wire(read)["contents"][0]["text"]) == {"id": 1, "title": "t", "tags": []}
