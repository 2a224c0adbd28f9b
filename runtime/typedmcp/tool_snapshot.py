"""Snapshot a live server's tools for ``mcp-codegen tools``: ``python -m typedmcp.tool_snapshot``.

Connects (stdio, or Streamable HTTP with its HTTP+SSE fallback), lists every page of
``tools/list`` and prints the snapshot as JSON on stdout: ``{"tools": [...]}`` sorted by
name, the server's ``serverInfo`` and the negotiated ``protocolVersion``. The generator runs
this module in a child process, so that it never imports the runtime itself.

Arguments: ``--url URL [--header 'K: V']...`` or ``-- COMMAND [ARG...]``. Exit code 2 and one
line on stderr when the server cannot be reached or answers badly.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from .connecting import connect_http, connect_stdio

#: A server that keeps returning cursors is refused after this many pages.
MAX_PAGES = 1000


async def snapshot(
    command: Sequence[str] | None = None,
    url: str | None = None,
    headers: dict[str, str] | None = None,
    revision: str | None = None,
) -> dict[str, Any]:
    """The tools of one server (every page), sorted by name, with its info and revision
    (``revision``: offer only this one, e.g. ``2025-11-25``; default: negotiate)."""
    protocol: Any = "auto"
    if revision:
        protocol = importlib.import_module("mcp_generated.v" + revision.replace("-", "_"))
    if command:
        context = connect_stdio(list(command), protocol=protocol)
    elif url:
        context = connect_http(url, headers=headers or None, protocol=protocol)
    else:
        raise ValueError("give a command or a URL")
    async with context as client:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(tool.model_dump(mode="json", by_alias=True, exclude_unset=True)
                         for tool in page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        else:
            raise ValueError(f"tools/list returned more than {MAX_PAGES} pages")
        session = client.session
        return {
            "protocolVersion": session.protocol_version,
            "serverInfo": dict(session.server_info or {}),
            "tools": sorted(tools, key=lambda tool: str(tool.get("name", ""))),
        }


def parse_arguments(
    argv: Sequence[str],
) -> tuple[list[str] | None, str | None, dict[str, str], str | None]:
    """``[--protocol REV] --url URL --header 'K: V' ...`` or ``-- COMMAND ...`` -> (command,
    url, headers, revision)."""
    argv = list(argv)
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    else:
        command = []
    url: str | None = None
    headers: dict[str, str] = {}
    revision: str | None = None
    while argv:
        option = argv.pop(0)
        if option not in ("--url", "--header", "--protocol") or not argv:
            raise ValueError(f"unexpected argument {option!r}")
        value = argv.pop(0)
        if option == "--url":
            url = value
        elif option == "--protocol":
            revision = value
        else:
            key, colon, text = value.partition(":")
            if not colon or not key.strip():
                raise ValueError(f"--header {value!r}: expected 'Name: value'")
            headers[key.strip()] = text.strip()
    if bool(command) == bool(url):
        raise ValueError("give either --url URL or -- COMMAND [ARG...]")
    return command or None, url, headers, revision


def main(argv: Sequence[str] | None = None) -> int:
    """Print the snapshot as JSON; exit code 2 with one line on stderr on failure."""
    try:
        command, url, headers, revision = parse_arguments(sys.argv[1:] if argv is None else argv)
        result = asyncio.run(snapshot(command, url, headers, revision))
    except Exception as exc:  # reported to the generator as one line, never a traceback
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
