"""One handler class, typed with 2025-11-25, serving older clients: each peer only receives
what its own revision defines (the generated models of that revision are the sieve)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

SERVER = Path(__file__).resolve().parent / "servers" / "rich_server.py"


def _session(version: str, *requests: dict[str, Any]) -> dict[int, Any]:
    """Initialize at ``version`` over stdio, send ``requests``; replies by id."""
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": version, "capabilities": {},
                    "clientInfo": {"name": "old", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *requests,
    ]
    completed = subprocess.run(
        [sys.executable, str(SERVER)],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True,
        timeout=30,
        check=True,
    )
    replies = [json.loads(line) for line in completed.stdout.splitlines() if line.strip()]
    assert replies[0]["result"]["protocolVersion"] == version
    return {reply["id"]: reply for reply in replies}


LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def _call(request_id: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": {}}}


def test_a_2024_11_05_client_gets_no_field_of_later_revisions() -> None:
    replies = _session("2024-11-05", LIST, _call(2, "rich"))
    assert replies[1]["result"]["tools"] == [
        {"name": "rich", "description": "Uses every newer field", "inputSchema": {"type": "object"}}
    ]
    assert replies[2]["result"] == {"content": [{"type": "text", "text": "n is 1"}]}


def test_a_2025_06_18_client_gets_titles_and_structured_output_but_no_icons() -> None:
    replies = _session("2025-06-18", LIST, _call(2, "rich"))
    (tool,) = replies[1]["result"]["tools"]
    assert sorted(tool) == ["annotations", "description", "inputSchema", "name", "outputSchema", "title"]
    result = replies[2]["result"]
    assert [block["type"] for block in result["content"]] == ["text", "audio", "resource_link"]
    assert result["structuredContent"] == {"n": 1}


def test_a_2025_03_26_client_gets_audio_but_not_resource_links() -> None:
    replies = _session("2025-03-26", _call(2, "rich"))
    assert [block["type"] for block in replies[2]["result"]["content"]] == ["text", "audio"]
    assert "structuredContent" not in replies[2]["result"]


def test_the_handlers_own_revision_gets_everything() -> None:
    replies = _session("2025-11-25", LIST)
    (tool,) = replies[1]["result"]["tools"]
    assert sorted(tool) == [
        "annotations", "description", "icons", "inputSchema", "name", "outputSchema", "title"
    ]
