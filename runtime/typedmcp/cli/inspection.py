"""What a server offers: name, version, era and revision, tools, resources, templates and
prompts, read over a real connection (``mcp-host inspect``).

A URL is connected with :func:`~typedmcp.connecting.connect_http` (either era: 2026-07-28
discovery first, else ``initialize``; HTTP+SSE for an old server); a ``.py`` file's app is
served in process (:func:`~typedmcp.connecting.connect_memory`), or started over stdio with
``stdio=True`` (``mcp-host run``, as a client would start it).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from ..engine.jsonrpc import CapabilityError, RpcError
from ..protocol.results import to_wire
from .terminal import terminal_text

#: The lists read, in order: (what the report calls them, the client method, the result key).
LISTS = (
    ("tools", "list_tools", "tools"),
    ("resources", "list_resources", "resources"),
    ("templates", "list_resource_templates", "resourceTemplates"),
    ("prompts", "list_prompts", "prompts"),
)


def is_url(target: str) -> bool:
    return target.startswith(("http://", "https://"))


def connection(target: str, *, stdio: bool = False, protocol: str = "auto") -> AbstractAsyncContextManager[Any]:
    """A connected client of ``target`` (a URL, or a server file / module run in process or,
    with ``stdio``, as a child process)."""
    from ..connecting import connect_http, connect_memory, connect_stdio

    if is_url(target):
        return connect_http(target, protocol=protocol)
    if stdio:
        return connect_stdio([sys.executable, "-m", "typedmcp.cli", "run", target], protocol=protocol)
    from .load import load_app

    return connect_memory(load_app(target), protocol=protocol)


async def _all(method: Callable[..., Awaitable[Any]], key: str) -> list[dict[str, Any]]:
    """Every page of one list (wire dicts); [] when the server does not offer it."""
    items: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(1000):  # a server that never stops paging is cut off
        try:
            page = to_wire(await method(cursor=cursor))
        except CapabilityError:
            return []
        except RpcError as error:
            if error.code == -32601:  # method not found: the server has none
                return []
            raise
        items.extend(page.get(key) or [])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return items


async def inspect_server(target: str, *, stdio: bool = False, protocol: str = "auto") -> dict[str, Any]:
    """The report of ``target`` (see the module): a JSON-ready dict."""
    async with connection(target, stdio=stdio, protocol=protocol) as client:
        session = client.session
        report: dict[str, Any] = {
            "server": dict(session.server_info),
            "era": session.era,
            "revision": session.protocol_version,
            "instructions": session.instructions,
        }
        for label, method, key in LISTS:
            report[label] = await _all(getattr(client, method), key)
    return report


def _first_line(text: Any) -> str:
    lines = str(text or "").strip().splitlines()
    return terminal_text(lines[0][:80]) if lines else ""


def describe(report: dict[str, Any]) -> str:
    """The report as text, one line per item."""
    server = report["server"]
    lines = [
        f"server:    {terminal_text(server.get('name', '?'))} {terminal_text(server.get('version', ''))}".rstrip(),
        f"era:       {report['era']} (revision {report['revision']})",
    ]
    if report.get("instructions"):
        lines.append(f"about:     {_first_line(report['instructions'])}")
    columns = {"tools": "name", "resources": "uri", "templates": "uriTemplate", "prompts": "name"}
    for label, key in columns.items():
        items = report[label]
        lines.append(f"\n{label} ({len(items)}):")
        for item in items:
            about = _first_line(item.get("description") or item.get("title") or "")
            lines.append(f"  {terminal_text(item.get(key, '?'))}" + (f"  - {about}" if about else ""))
    return "\n".join(lines)


