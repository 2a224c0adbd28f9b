"""``examples/notes_server.py`` (McpApp) against the FastMCP 4.1.6 client (issue 18,
requirement 11), over stdio and Streamable HTTP, in both eras as FastMCP's client does them
(``mode="auto"`` adopts 2026-07-28, ``mode="legacy"`` negotiates 2025-11-25): the tools and
the schemas it sees, calls (and the typed ``data`` it builds from our output schemas), the
resource and the template, the prompt and a completion."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.exceptions import ToolError

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

REPO = Path(__file__).resolve().parent.parent
SERVER = REPO / "examples" / "notes_server.py"
NOTE = {"id": 1, "title": "Groceries", "tags": ["home"]}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def fastmcp_client(transport: str, mode: str, request: pytest.FixtureRequest) -> AsyncIterator[Client[Any]]:
    target: StdioTransport | StreamableHttpTransport
    if transport == "http":
        target = StreamableHttpTransport(request.getfixturevalue("notes_http_url"))
    else:
        target = StdioTransport(sys.executable, [str(SERVER)], cwd=str(REPO), keep_alive=False)
    async with Client(target, mode=mode) as client:
        yield client


def wire(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize(("mode", "version"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
async def test_the_fastmcp_client_uses_every_feature_of_the_notes_server(
    transport: str, mode: str, version: str, request: pytest.FixtureRequest
) -> None:
    async with fastmcp_client(transport, mode, request) as client:
        assert client.protocol_version == version
        tools = {tool.name: wire(tool) for tool in await client.list_tools()}
        assert list(tools) == ["add_note", "search_notes", "export_notes"]
        add_note = tools["add_note"]
        assert add_note["description"] == "Add a note."
        assert add_note["annotations"] == {"readOnlyHint": False}
        assert add_note["inputSchema"]["required"] == ["title", "body"]
        assert add_note["inputSchema"]["properties"]["priority"] == {
            "type": "string", "enum": ["low", "high"], "default": "low", "description": "How urgent the note is.",
        }
        assert add_note["outputSchema"]["required"] == ["id", "title", "tags"]
        assert tools["search_notes"]["inputSchema"]["properties"]["limit"] == {
            "type": "integer", "minimum": 1, "maximum": 100, "default": 10, "description": "The most notes to return.",
        }
        # a list return is wrapped as {"result": [...]}, and the wrapping declared
        assert tools["search_notes"]["outputSchema"]["x-typedmcp-wrapped"] is True

        added = await client.call_tool("add_note", {"title": "Groceries", "body": "milk", "tags": ["home"]})
        assert added.is_error is False
        assert added.structured_content == NOTE
        assert json.loads(added.content[0].text) == NOTE  # type: ignore[union-attr]
        # FastMCP builds a typed object from our output schema: its fields are the note's
        assert (added.data.id, added.data.title, added.data.tags) == (1, "Groceries", ["home"])

        found = await client.call_tool("search_notes", {"query": "home"})
        assert found.structured_content == {"result": [NOTE]}
        with pytest.raises(ToolError, match=r"^Invalid arguments for tool search_notes: /limit: 101 is greater than the maximum of 100$"):
            await client.call_tool("search_notes", {"query": "x", "limit": 101})

        updates: list[float] = []

        async def progress(value: float, total: float | None, message: str | None) -> None:
            updates.append(value)

        exported = await client.call_tool("export_notes", {"count": 3}, progress_handler=progress)
        assert exported.structured_content == {"result": "1. Groceries\n2. (none)\n3. (none)"}
        assert updates == [1, 2, 3]

        index = await client.read_resource("notes://index")
        assert [wire(item) for item in index] == [{"uri": "notes://index", "mimeType": "application/json", "text": "[1]"}]
        one = await client.read_resource("notes://1")
        assert json.loads(one[0].text) == NOTE  # type: ignore[union-attr]
        templates = await client.list_resource_templates()
        assert [wire(t) for t in templates] == [
            {"name": "note", "uriTemplate": "notes://{note_id}", "description": "One note, as JSON.", "mimeType": "application/json"}
        ]

        prompts = await client.list_prompts()
        assert [wire(p)["arguments"] for p in prompts] == [[
            {"name": "note_id", "description": "The note to summarize.", "required": True},
            {"name": "style", "description": "short, detailed or bullet.", "required": False},
        ]]
        prompt = await client.get_prompt("summarize", {"note_id": "1", "style": "bullet"})
        assert [wire(m) for m in prompt.messages] == [
            {"role": "user", "content": {"type": "text", "text": "Summarize this note (bullet): Groceries"}}
        ]
        completed = await client.complete(
            types.PromptReference(type="ref/prompt", name="summarize"), {"name": "style", "value": "b"}
        )
        assert wire(completed) == {"values": ["bullet"], "total": 1, "hasMore": False}
