"""``mcp-host``: list, call and serve the servers of an ``mcpServers`` configuration.

::

    mcp-host list  --config mcp.json [--json]
    mcp-host call  --config mcp.json weather__current '{"city": "Oslo"}'
    mcp-host serve --config mcp.json --stdio | --http 127.0.0.1:8000

Exit codes: 0 done; 1 the tool answered with an error result (``call``); 2 bad input
(configuration, arguments, unknown tool); 3 the server failed (unavailable, timed out, or
an error answer). Errors are one line on stderr naming the server and what to do.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from ..engine.jsonrpc import RpcError
from ..protocol.results import to_wire
from .config import ConfigError, describe_keys
from .core import Host, parse_address
from .errors import HostError, InvalidArguments, UnknownTool

OK, TOOL_ERROR, BAD_INPUT, SERVER_FAILED = 0, 1, 2, 3


def _say(message: str) -> None:
    print(f"mcp-host: {message}", file=sys.stderr, flush=True)


def _report_failures(host: Host, config_path: str) -> None:
    for name, status in host.status().items():
        if status["state"] not in ("ready", "disabled"):
            _say(
                f"server {name!r} did not start ({status['last_error'] or status['state']}); "
                f"check its entry in {config_path}"
            )


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def _listing(host: Host) -> dict[str, Any]:
    return {
        "servers": host.status(),
        "tools": [
            {
                "name": entry.name,
                "server": entry.server,
                "tool": entry.tool,
                "description": entry.description,
                "available": host.available(entry.name),
            }
            for entry in host.tools()
        ],
    }


async def _list(host: Host, args: argparse.Namespace) -> int:
    listing = _listing(host)
    if args.json:
        print(json.dumps(listing, indent=2))
        return OK
    counts: dict[str, int] = {}
    for tool in listing["tools"]:
        counts[tool["server"]] = counts.get(tool["server"], 0) + 1
    rows = [["SERVER", "STATE", "ERA", "REVISION", "TRANSPORT", "TOOLS", "LAST ERROR"]]
    for name, status in listing["servers"].items():
        rows.append([
            name, status["state"], status["era"] or "-", status["revision"] or "-",
            status["transport"], str(counts.get(name, 0)),
            ((status["last_error"] or "").splitlines() or [""])[0][:80],
        ])
    print(_table(rows))
    if listing["tools"]:
        print()
        rows = [["TOOL", "SERVER", "ORIGINAL NAME", "DESCRIPTION"]]
        for tool in listing["tools"]:
            mark = "" if tool["available"] else " (unavailable)"
            rows.append([tool["name"], tool["server"], tool["tool"],
                         ((tool["description"] or "").splitlines() or [""])[0][:60] + mark])
        print(_table(rows))
    return OK


async def _call(host: Host, args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as error:
        _say(f"the arguments are not JSON ({error.msg} at column {error.colno}); "
             "write them as one JSON object, e.g. '{\"city\": \"Oslo\"}'")
        return BAD_INPUT
    if not isinstance(arguments, dict):
        _say("the arguments must be one JSON object, e.g. '{\"city\": \"Oslo\"}'")
        return BAD_INPUT

    def progress(note: Any) -> None:
        total = f"/{note.total:g}" if note.total is not None else ""
        message = f" {note.message}" if note.message else ""
        print(f"progress: {note.progress:g}{total}{message}", file=sys.stderr, flush=True)

    try:
        result = await host.call_tool(args.tool, arguments, progress=progress, timeout=args.timeout)
    except UnknownTool as error:
        _say(f"{error}")
        return BAD_INPUT
    except InvalidArguments as error:
        _say(f"{error} (see the tool's inputSchema: mcp-host list --config {args.config} --json)")
        return BAD_INPUT
    except HostError as error:
        _say(f"{error}")
        return SERVER_FAILED
    except RpcError as error:
        entry = next((e for e in host.tools() if e.name == args.tool), None)
        server = entry.server if entry is not None else "?"
        _say(f"server {server!r} answered error {error.code}: {error.message}")
        return SERVER_FAILED
    print(json.dumps(to_wire(result), indent=2, ensure_ascii=False))
    return TOOL_ERROR if getattr(result, "is_error", False) else OK


async def _serve(host: Host, args: argparse.Namespace) -> int:
    ready = [name for name, status in host.status().items() if status["state"] == "ready"]
    if args.stdio:
        await host.serve(stdio=True)
        return OK
    address, port = parse_address(args.http)

    def listening(bound: int) -> None:
        _say(f"serving {len(ready)} server(s) at http://{address}:{bound}/mcp")

    from .gateway import serve_http

    await serve_http(host, address, port, ready=listening)
    return OK


COMMANDS = {"list": _list, "call": _call, "serve": _serve}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="mcp-host",
        description="Connect the MCP servers of an mcpServers configuration; list, call, serve them.",
        epilog="server entry keys:\n" + describe_keys(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="servers (state, era, revision) and their tools")
    listing.add_argument("--json", action="store_true", help="print JSON instead of tables")
    call = commands.add_parser("call", help="call a tool by its exported name; the result as JSON")
    call.add_argument("tool", help="exported tool name (see: mcp-host list)")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments, one JSON object")
    call.add_argument("--timeout", type=float, default=None, help="seconds (default: the server's)")
    serve = commands.add_parser("serve", help="serve every server's tools as one MCP server")
    where = serve.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", action="store_true", help="on stdin/stdout")
    where.add_argument("--http", metavar="HOST:PORT", help="Streamable HTTP at http://HOST:PORT/mcp")
    for sub in (listing, call, serve):
        sub.add_argument("--config", required=True, help="an mcpServers JSON file")
        sub.add_argument("--verbose", action="store_true", help="log what the host does")
    return top


async def run(args: argparse.Namespace) -> int:
    try:
        host = Host.from_config(args.config)
    except ConfigError as error:
        _say(str(error))  # it names the file
        return BAD_INPUT
    if args.command == "serve":  # the gateway forwards its client's sampling/elicitation
        host = Host(host.config, client_requests=("sampling", "elicitation"))
    async with host:
        _report_failures(host, args.config)
        return await COMMANDS[args.command](host, args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mcp-host`` console script."""
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, stream=sys.stderr,
        format="mcp-host: %(name)s: %(message)s",
    )
    if args.command == "serve" and args.http:
        try:
            parse_address(args.http)
        except ValueError as error:
            _say(str(error))
            return BAD_INPUT
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(run(args))
    return OK


if __name__ == "__main__":
    sys.exit(main())
