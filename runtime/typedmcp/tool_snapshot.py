"""Snapshot a live server's tools for ``mcp-codegen tools``: ``python -m typedmcp.tool_snapshot``.

Connects (stdio, or Streamable HTTP with its HTTP+SSE fallback), lists every page of
``tools/list`` and prints the snapshot as JSON on stdout: ``{"tools": [...]}`` sorted by
name, the server's ``serverInfo`` and the negotiated ``protocolVersion``. The generator runs
this module in a child process, so that it never imports the runtime itself.

Arguments: ``--url URL [--header 'K: V']...``, ``--config mcp.json --server NAME`` (an
``mcpServers`` entry, parsed as ``mcp-host`` parses it) or ``-- COMMAND [ARG...]``; optionally
``--protocol REVISION`` and ``--max-reply-bytes N`` (the HTTP client's cap on one reply;
else the entry's ``maxReplyBytes``, else 64 MiB). Exit code 2 and one line on stderr when the server cannot be reached
or answers badly.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

from .connecting import connect_http, connect_sse, connect_stdio
from .host.config import ServerConfig, load_config

#: A server that keeps returning cursors is refused after this many pages.
MAX_PAGES = 1000


async def snapshot(
    command: Sequence[str] | None = None,
    url: str | None = None,
    headers: dict[str, str] | None = None,
    revision: str | None = None,
    server: ServerConfig | None = None,
    max_reply_bytes: int | None = None,
) -> dict[str, Any]:
    """The tools of one server (every page), sorted by name, with its info and revision
    (``revision``: offer only this one, e.g. ``2025-11-25``; default: negotiate, or the
    ``protocol`` of the ``server`` entry)."""
    env: dict[str, str] | None = None
    cwd: str | None = None
    sse = False
    if server is not None:
        revision = revision or (server.protocol if server.protocol != "auto" else None)
        command = list(server.command) if server.transport == "stdio" else None
        url = server.url if server.transport != "stdio" else None
        headers = dict(server.headers)
        env = {**os.environ, **dict(server.env)} if server.env else None
        cwd = server.cwd
        sse = server.transport == "sse"
        max_reply_bytes = max_reply_bytes or server.max_reply_bytes
    http: dict[str, Any] = {} if max_reply_bytes is None else {"max_reply_bytes": max_reply_bytes}
    protocol: Any = "auto"
    if revision:
        protocol = importlib.import_module("mcp_generated.v" + revision.replace("-", "_"))
    context: Any
    if command:
        context = connect_stdio(list(command), protocol=protocol, env=env, cwd=cwd)
    elif url and sse:
        context = connect_sse(url, headers=headers or None, protocol=protocol, **http)
    elif url:
        context = connect_http(url, headers=headers or None, protocol=protocol, **http)
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


class Arguments(NamedTuple):
    """What :func:`parse_arguments` read."""

    command: list[str] | None
    url: str | None
    headers: dict[str, str]
    revision: str | None
    server: ServerConfig | None
    max_reply_bytes: int | None = None


def parse_arguments(argv: Sequence[str]) -> Arguments:
    """``[--protocol REV] [--max-reply-bytes N] --url URL --header 'K: V' ...``, ``--config
    FILE --server NAME`` or ``-- COMMAND ...`` -> (command, url, headers, revision, server
    entry, max_reply_bytes)."""
    argv = list(argv)
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1 :]
    else:
        command = []
    url: str | None = None
    headers: dict[str, str] = {}
    revision: str | None = None
    config: str | None = None
    name: str | None = None
    max_reply_bytes: int | None = None
    while argv:
        option = argv.pop(0)
        if option not in ("--url", "--header", "--protocol", "--config", "--server", "--max-reply-bytes") or not argv:
            raise ValueError(f"unexpected argument {option!r}")
        value = argv.pop(0)
        if option == "--max-reply-bytes":
            if not value.isdigit() or int(value) < 1:
                raise ValueError(f"--max-reply-bytes {value!r}: expected a positive number of bytes")
            max_reply_bytes = int(value)
        elif option == "--url":
            url = value
        elif option == "--protocol":
            revision = value
        elif option == "--config":
            config = value
        elif option == "--server":
            name = value
        else:
            key, colon, text = value.partition(":")
            if not colon or not key.strip():
                raise ValueError(f"--header {value!r}: expected 'Name: value'")
            headers[key.strip()] = text.strip()
    server = None
    if (config is None) != (name is None):
        raise ValueError("--config FILE and --server NAME go together")
    if config is not None and name is not None:
        servers = load_config(config).servers
        if name not in servers:
            raise ValueError(f"{config} has no server {name!r} (it has: {', '.join(sorted(servers)) or 'none'})")
        server = servers[name]
    if [bool(command), bool(url), server is not None].count(True) != 1:
        raise ValueError("give one of --url URL, --config FILE --server NAME, -- COMMAND [ARG...]")
    return Arguments(command or None, url, headers, revision, server, max_reply_bytes)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the snapshot as JSON; exit code 2 with one line on stderr on failure."""
    try:
        read = parse_arguments(sys.argv[1:] if argv is None else argv)
        result = asyncio.run(snapshot(*read))
    except Exception as exc:  # reported to the generator as one line, never a traceback
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
