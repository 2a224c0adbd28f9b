"""``mcp-host``: list, call and serve the servers of an ``mcpServers`` configuration.

::

    mcp-host list  --config mcp.json [--json] [--resources] [--prompts]
    mcp-host call  --config mcp.json weather__current '{"city": "Oslo"}'
    mcp-host serve --config mcp.json --stdio | --http 127.0.0.1:8000
    mcp-host call  --url http://127.0.0.1:8000/mcp weather__current '{"city": "Oslo"}'
    mcp-host tools --config mcp.json --out DIR    # one typed package per server (mcp-codegen tools)
    mcp-host run server.py[:app] [--http PORT]    # the developer commands (typedmcp.cli):
    mcp-host inspect server.py | URL [--json]     # serve, inspect, and add a server to
    mcp-host install cursor server.py [--force]   # Claude Desktop's, Cursor's or VS Code's config

``call`` starts only the server whose prefix begins the tool's name (all of them, in
parallel, when the naming rule cannot tell: ``prefixTools: "collisions"``, or a server
with an empty prefix); with ``--url`` it starts none and calls through a running gateway
(``mcp-host serve --http``).

Exit codes: 0 done; 1 the tool answered with an error result (``call``); 2 bad input
(configuration, arguments, unknown tool); 3 a server failed: one it needed did not start
(``list``: any enabled server, its tools still listed; ``call``: the tool's server), or it
was unavailable, timed out or answered with an error. Errors are one line on stderr naming
the server and what to do; a server that did not start is named with why (for a stdio
server: its command, exit code and the last lines of its stderr, indented below).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .. import cli as developer
from ..cli.terminal import terminal_text
from ..engine import loops
from ..engine.jsonrpc import DEFAULT_MAX_BATCH, DEFAULT_MAX_IN_FLIGHT, INVALID_PARAMS, ConnectionClosed, RpcError
from ..protocol.errors import HttpError
from ..protocol.results import to_wire
from .config import ConfigError, describe_keys
from .core import Host, parse_address
from .discovery import EXPOSE_MODES
from .errors import HostError, InvalidArguments, UnknownTool
from .supervisor import describe_error

OK, TOOL_ERROR, BAD_INPUT, SERVER_FAILED = 0, 1, 2, 3
EXIT_CODES = """exit codes:
  0  done (every server the command needed is up)
  1  call: the tool answered with an error result
  2  bad input: configuration, arguments, unknown tool
  3  a server failed: one the command needed did not start (list: any enabled server,
     the others' tools still listed; call: the tool's server), or the call failed there"""


def _say(message: str) -> None:
    print(f"mcp-host: {terminal_text(message, lines=True)}", file=sys.stderr, flush=True)


def _report_failures(host: Host, config_path: str) -> dict[str, str]:
    """Say which started servers did not start, and why; returns them (name -> why)."""
    failed = host.failed()
    for name, why in failed.items():
        _say(f"server {name!r} did not start (check its entry in {config_path}): {why}")
    return failed


def _table(rows: list[list[str]]) -> str:
    """Rows as aligned columns; what a server sent is escaped (:func:`terminal_text`)."""
    safe = [[terminal_text(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in safe) for i in range(len(safe[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in safe
    )


def _listing(host: Host, args: argparse.Namespace) -> dict[str, Any]:
    listing: dict[str, Any] = {
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
    if args.resources:
        listing["resources"] = [
            {"uri": entry.uri, "server": entry.server, "name": entry.definition.get("name"),
             "description": _text(entry.definition.get("description"))}
            for entry in host.resources()
        ]
        listing["resource_templates"] = [
            {"uri_template": entry.uri_template, "server": entry.server,
             "name": entry.definition.get("name"), "description": _text(entry.definition.get("description"))}
            for entry in host.resource_templates()
        ]
    if args.prompts:
        listing["prompts"] = [
            {"name": entry.name, "server": entry.server, "prompt": entry.prompt,
             "arguments": [
                 argument.get("name") for argument in entry.definition.get("arguments") or ()
                 if isinstance(argument, dict)
             ],
             "description": _text(entry.definition.get("description"))}
            for entry in host.prompts()
        ]
    return listing


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _line(text: str | None, limit: int) -> str:
    """The first line of ``text``, at most ``limit`` characters."""
    return ((text or "").splitlines() or [""])[0][:limit]


async def _list(host: Host, args: argparse.Namespace) -> int:
    await host.start()
    failed = _report_failures(host, args.config)
    _print_listing(host, args)
    return SERVER_FAILED if failed else OK


def _print_listing(host: Host, args: argparse.Namespace) -> None:
    listing = _listing(host, args)
    if args.json:
        print(json.dumps(listing, indent=2))
        return
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
    found = [*listing.get("resources", ()), *listing.get("resource_templates", ())]
    if found:
        print()
        rows = [["RESOURCE", "SERVER", "NAME", "DESCRIPTION"]]
        for resource in found:
            uri = resource.get("uri") or resource["uri_template"]
            rows.append([uri, resource["server"], resource["name"] or "", _line(resource["description"], 60)])
        print(_table(rows))
    elif args.resources:
        print("\nno resources")
    if listing.get("prompts"):
        print()
        rows = [["PROMPT", "SERVER", "ORIGINAL NAME", "ARGUMENTS", "DESCRIPTION"]]
        for prompt in listing["prompts"]:
            rows.append([prompt["name"], prompt["server"], prompt["prompt"],
                         ",".join(prompt["arguments"]) or "-", _line(prompt["description"], 60)])
        print(_table(rows))
    elif args.prompts:
        print("\nno prompts")


def _arguments(text: str) -> dict[str, Any] | None:
    """The call's arguments, or None (said why) when they are not one JSON object."""
    try:
        arguments = json.loads(text)
    except json.JSONDecodeError as error:
        _say(f"the arguments are not JSON ({error.msg} at column {error.colno}); "
             "write them as one JSON object, e.g. '{\"city\": \"Oslo\"}'")
        return None
    if not isinstance(arguments, dict):
        _say("the arguments must be one JSON object, e.g. '{\"city\": \"Oslo\"}'")
        return None
    return arguments


def _progress(note: Any) -> None:
    total = f"/{note.total:g}" if note.total is not None else ""
    message = f" {terminal_text(note.message)}" if note.message else ""
    print(f"progress: {note.progress:g}{total}{message}", file=sys.stderr, flush=True)


def _result(result: Any) -> int:
    print(json.dumps(to_wire(result), indent=2, ensure_ascii=False))
    return TOOL_ERROR if getattr(result, "is_error", False) else OK


async def _call(host: Host, args: argparse.Namespace) -> int:
    arguments = _arguments(args.arguments)
    if arguments is None:
        return BAD_INPUT
    owners = host.possible_owners(args.tool)
    listing = f"list the tools with: mcp-host list --config {args.config}"
    if owners == []:  # under the naming rule no configured server can export it
        separator = host.config.separator
        known = [prefix + separator for prefix in host.prefixes().values()]
        prefixes = ", ".join(known) or "none"
        guess = _closest(args.tool.split(separator, 1)[0] + separator, known)
        hint = f"did you mean a tool of {guess!r}? " if guess else ""
        _say(f"no tool named {args.tool!r}: no enabled server's prefix begins it (prefixes: "
             f"{prefixes}); {hint}{listing}")
        return BAD_INPUT
    await host.start(owners)  # None (the rule cannot tell): every server, in parallel
    failed = _report_failures(host, args.config)
    try:
        result = await host.call_tool(args.tool, arguments, progress=_progress, timeout=args.timeout)
    except UnknownTool:
        if failed:
            _say(f"no tool named {args.tool!r} among the servers that started; "
                 f"{_names(failed)} did not start (see above) and may export it")
            return SERVER_FAILED
        guess = _closest(args.tool, [entry.name for entry in host.tools()])
        hint = f"did you mean {guess!r}? " if guess else ""
        _say(f"no tool named {args.tool!r}; {hint}{listing}")
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
    return _result(result)


def _closest(name: str, known: Sequence[str]) -> str | None:
    """The known name most like ``name`` (a misspelling), if one is close enough."""
    found = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return found[0] if found else None


def _names(servers: dict[str, str]) -> str:
    quoted = ", ".join(repr(name) for name in servers)
    return f"server{'s' if len(servers) > 1 else ''} {quoted}"


async def _call_gateway(args: argparse.Namespace) -> int:
    """``call --url``: the tool through a running gateway (``mcp-host serve --http``)."""
    arguments = _arguments(args.arguments)
    if arguments is None:
        return BAD_INPUT
    from ..connecting import connect_http

    token = "mcp-host-call"
    params: dict[str, Any] = {"name": args.tool, "arguments": arguments, "_meta": {"progressToken": token}}
    started = f"start one with: mcp-host serve --config FILE --http {_address_of(args.url)}"
    try:
        async with connect_http(args.url) as client:
            session = client.session
            session.progress_callbacks[token] = _progress
            spec = session.package.dispatch.REQUESTS["tools/call"]
            result = await session.send_request(spec, params, args.timeout)
    except RpcError as error:
        if error.code == INVALID_PARAMS:
            _say(f"the gateway at {args.url} refused the call: {error.message}")
            return BAD_INPUT
        _say(f"the gateway at {args.url} answered error {error.code}: {error.message}")
        return SERVER_FAILED
    except asyncio.TimeoutError:
        within = f" within {args.timeout:g} s (--timeout)" if args.timeout is not None else " in time"
        _say(f"the gateway at {args.url} did not answer{within}")
        return SERVER_FAILED
    except (OSError, ConnectionError, ConnectionClosed, HttpError) as error:
        _say(f"cannot call the gateway at {args.url} ({describe_error(error)}); {started}")
        return SERVER_FAILED
    return _result(result)


def _address_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.netloc or "127.0.0.1:8000"


async def _serve(host: Host, args: argparse.Namespace) -> int:
    await host.start()
    _report_failures(host, args.config)
    ready = [name for name, status in host.status().items() if status["state"] == "ready"]
    limits = {"max_batch": args.max_batch, "max_in_flight": args.max_in_flight}
    if args.stdio:
        await host.serve(stdio=True, **limits)
        return OK
    address, port = parse_address(args.http)

    def listening(bound: int) -> None:
        mode = "" if host.expose == "tools" else f" in {host.expose} mode"
        _say(f"serving {len(ready)} server(s){mode} at http://{address}:{bound}/mcp")

    from .gateway import serve_http

    await serve_http(host, address, port, ready=listening, **limits)
    return OK


COMMANDS = {"list": _list, "call": _call, "serve": _serve}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="mcp-host",
        description="Connect the MCP servers of an mcpServers configuration; list, call, serve them.",
        epilog="server entry keys:\n" + describe_keys() + "\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = top.add_subparsers(dest="command", required=True)
    listing = commands.add_parser(
        "list", help="servers (state, era, revision) and their tools (and resources, prompts)"
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of tables")
    listing.add_argument("--resources", action="store_true",
                         help="also the resources and resource templates (URIs are not renamed)")
    listing.add_argument("--prompts", action="store_true", help="also the prompts (named like tools)")
    call = commands.add_parser(
        "call", help="call a tool by its exported name; the result as JSON",
        description="Call a tool by its exported name; the result as JSON on stdout. With "
        "--config, only the server whose prefix begins the name is started (every server, in "
        "parallel, when the naming rule cannot tell); with --url the call goes through a "
        "running gateway (mcp-host serve --config FILE --http HOST:PORT) and starts nothing.",
    )
    call.add_argument("tool", help="exported tool name (see: mcp-host list)")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments, one JSON object")
    call.add_argument("--timeout", type=float, default=None, help="seconds (default: the server's)")
    source = call.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", help="an mcpServers JSON file")
    source.add_argument("--url", metavar="URL",
                        help="a running gateway, e.g. http://127.0.0.1:8000/mcp (mcp-host serve --http)")
    call.add_argument("--verbose", action="store_true", help="log what the host does")
    serve = commands.add_parser("serve", help="serve every server's tools as one MCP server")
    where = serve.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", action="store_true", help="on stdin/stdout")
    where.add_argument("--http", metavar="HOST:PORT", help="Streamable HTTP at http://HOST:PORT/mcp")
    serve.add_argument(
        "--max-batch", type=_limit, default=DEFAULT_MAX_BATCH, metavar="N",
        help=f"the most messages of one JSON-RPC batch (2025-03-26); longer is refused (default {DEFAULT_MAX_BATCH})")
    serve.add_argument(
        "--max-in-flight", type=_limit, default=DEFAULT_MAX_IN_FLIGHT, metavar="N",
        help="the most requests one connection or session runs at once; stdio stops reading "
        f"beyond, HTTP answers 429 (default {DEFAULT_MAX_IN_FLIGHT})")
    serve.add_argument(
        "--expose", choices=EXPOSE_MODES, default=None,
        help="what clients see: tools (every tool, the default) or search (three tools: "
        "search_tools, describe_tools, call_tool); default: the file's host.expose",
    )
    tools = commands.add_parser(
        "tools", help="write one typed tools package per server (needs typedmcp-codegen)",
        description="Write DIR/<server name as an identifier>/, a typed package of each enabled "
        "server's tools (mcp-codegen tools --config FILE --server NAME, run for each). A server "
        "that cannot start is reported with why, the others are written; exit code 3 if any failed.",
    )
    tools.add_argument("--out", required=True, help="the folder the packages are written under")
    developer.add_commands(commands)  # run, inspect, install (typedmcp.cli)
    for sub in (listing, serve, tools):
        sub.add_argument("--config", required=True, help="an mcpServers JSON file")
        sub.add_argument("--verbose", action="store_true", help="log what the host does")
    return top


def _limit(text: str) -> int:
    """A count limit given on the command line: a whole number, at least 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def _tools(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .tools_packages import generate_packages, generator_installed, package_folders

    try:
        config = Host.from_config(args.config).config
        package_folders(config, Path(args.out))
    except (ConfigError, ValueError) as error:
        _say(str(error))
        return BAD_INPUT
    if not generator_installed():
        _say("mcp-host tools needs the generator: pip install typedmcp-codegen "
             "(it provides mcp-codegen, which writes the packages)")
        return BAD_INPUT

    def report(outcome: Any) -> None:
        if outcome.failure is None:
            print(f"{outcome.server}: {outcome.summary}", flush=True)
        else:
            _say(f"server {outcome.server!r}: no package written to {outcome.folder} "
                 f"(check its entry in {args.config}): {outcome.failure}")

    outcomes = generate_packages(config, args.config, Path(args.out), report)
    return SERVER_FAILED if any(outcome.failure for outcome in outcomes) else OK


async def run(args: argparse.Namespace) -> int:
    if args.command == "call" and args.url is not None:
        return await _call_gateway(args)
    try:
        host = Host.from_config(args.config)
    except ConfigError as error:
        _say(str(error))  # it names the file
        return BAD_INPUT
    if args.command == "serve":  # the gateway forwards its client's sampling/elicitation
        host = Host(host.config, client_requests=("sampling", "elicitation"), expose=args.expose)
    try:  # each command starts the servers it needs
        return await COMMANDS[args.command](host, args)
    finally:
        await host.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mcp-host`` console script."""
    args = parser().parse_args(argv)
    if args.command in developer.COMMANDS:
        return developer.run_command(args)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR, stream=sys.stderr,
        format="mcp-host: %(name)s: %(message)s",
    )
    if args.command == "call" and args.url is not None:
        parts = urlsplit(args.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            _say(f"--url {args.url!r} is not an http(s) URL with a host; give the gateway's, "
                 "e.g. http://127.0.0.1:8000/mcp (mcp-host serve --http 127.0.0.1:8000)")
            return BAD_INPUT
    if args.command == "serve" and args.http:
        try:
            parse_address(args.http)
        except ValueError as error:
            _say(str(error))
            return BAD_INPUT
    if args.command == "tools":  # child processes only: no event loop
        return _tools(args)
    try:
        loop = loops.chosen_loop()  # uvloop when installed; TYPEDMCP_LOOP=asyncio turns it off
    except loops.LoopChoiceError as error:
        _say(str(error))
        return BAD_INPUT
    with contextlib.suppress(KeyboardInterrupt):
        return loops.run(run(args), loop=loop)
    return OK


if __name__ == "__main__":
    sys.exit(main())
