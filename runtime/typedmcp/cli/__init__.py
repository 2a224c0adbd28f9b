"""The developer commands: serve a server file, inspect a server, install one in a client.

::

    mcp-host run server.py[:app] [--http PORT]          # stdio, or Streamable HTTP at /mcp
    mcp-host inspect server.py[:app] | URL [--json]     # name, era, tools, resources, prompts
    mcp-host install claude-desktop|cursor|vscode server.py[:app] [--name N] [--force]

They are the runtime's (a service that installs only ``typedmcp`` has them, as ``mcp-host``
subcommands and ``python -m typedmcp.cli``); ``mcp-codegen run`` and ``mcp-codegen
inspect`` are the same commands. Exit codes: 0 done; 2 bad input (a file without an app, a
corrupt client configuration, an existing entry without ``--force``); 3 the server could
not be reached or failed. Errors are one line on stderr naming what is wrong and the fix.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .terminal import terminal_text

OK, BAD_INPUT, SERVER_FAILED = 0, 2, 3
INTERRUPTED = 130  # as a shell reports SIGINT
COMMANDS = ("run", "inspect", "install")


def add_commands(commands: Any) -> None:
    """Add ``run``, ``inspect`` and ``install`` to an argparse subparsers object."""
    from .install import CLIENTS

    run = commands.add_parser(
        "run", help="serve a server file's McpApp (stdio, or --http PORT)",
        description="Serve TARGET (server.py, server.py:app or package.module:app): on "
        "stdin/stdout, or over Streamable HTTP (both eras) with --http. Without :app the "
        "file's one McpApp is served.",
    )
    run.add_argument("target", metavar="TARGET", help="server.py[:app] or package.module[:app]")
    run.add_argument("--http", metavar="PORT", type=int, help="serve Streamable HTTP on this port")
    run.add_argument("--host", default="127.0.0.1", help="the address to listen on (with --http)")
    run.add_argument("--path", default="/mcp", help="the endpoint's path (with --http; default /mcp)")
    inspect = commands.add_parser(
        "inspect", help="a server's name, era, tools, resources, templates and prompts",
        description="Connect to TARGET and print what it offers. A URL is connected in either "
        "era (Streamable HTTP, or HTTP+SSE); a server file is served in process (--stdio: "
        "started as a child process, as a client would).",
    )
    inspect.add_argument("target", metavar="TARGET", help="server.py[:app], package.module[:app] or a URL")
    inspect.add_argument("--json", action="store_true", help="print JSON (the lists as the server sent them)")
    inspect.add_argument("--stdio", action="store_true", help="start a server file over stdio")
    inspect.add_argument("--protocol", default="auto", help="auto (default) or one revision, e.g. 2025-11-25")
    install = commands.add_parser(
        "install", help="add a server file to Claude Desktop's, Cursor's or VS Code's configuration",
        description="Add TARGET to a client's MCP configuration, started with this Python "
        "(python -m typedmcp.cli run TARGET). Other servers and settings in the file are kept; "
        "an entry of the same name is replaced only with --force; a file that is not valid "
        "JSON is refused and left as it is.",
    )
    install.add_argument("client", choices=sorted(CLIENTS), help="the client whose configuration to change")
    install.add_argument("target", metavar="TARGET", help="server.py[:app] or package.module[:app]")
    install.add_argument("--name", help="the entry's name (default: the app's name)")
    install.add_argument("--config", metavar="FILE",
                         help="write this file instead of the client's (also: $TYPEDMCP_CLIENT_CONFIG)")
    install.add_argument("--project", metavar="DIR",
                         help="the project's configuration (cursor: DIR/.cursor/mcp.json; vscode: "
                         "DIR/.vscode/mcp.json, default the current folder)")
    install.add_argument("--env", metavar="KEY=VALUE", action="append", default=[],
                         help="an environment variable for the server (repeatable)")
    install.add_argument("--force", action="store_true", help="replace an entry of the same name")


def _say(prog: str, message: str) -> None:
    print(f"{prog}: {terminal_text(message, lines=True)}", file=sys.stderr, flush=True)


def run_command(args: argparse.Namespace, prog: str = "mcp-host") -> int:
    """Run a parsed ``run``, ``inspect`` or ``install``; the exit code."""
    from .load import LoadError

    try:
        if args.command == "run":
            return _run(args, prog)
        if args.command == "inspect":
            return _inspect(args, prog)
        return _install(args, prog)
    except LoadError as error:
        _say(prog, str(error))
        return BAD_INPUT
    except KeyboardInterrupt:  # Ctrl-C ends a server (or an inspection): no traceback
        return INTERRUPTED


def _run(args: argparse.Namespace, prog: str) -> int:
    from .load import load_app

    app = load_app(args.target)
    if args.http is None:
        from ..serving import run_stdio

        run_stdio(app)
        return OK
    try:
        import uvicorn
    except ImportError:
        _say(prog, "--http needs the HTTP server: pip install 'typedmcp[http]'")
        return BAD_INPUT
    from ..serving import http_app

    served = http_app(app, path=args.path)
    _say(prog, f"serving {getattr(app, 'name', type(app).__name__)} at http://{args.host}:{args.http}{args.path}")
    uvicorn.run(served, host=args.host, port=args.http, log_level="warning")
    return OK


def _inspect(args: argparse.Namespace, prog: str) -> int:
    from ..engine import loops
    from ..engine.jsonrpc import ConnectionClosed, RpcError
    from ..protocol.errors import HttpError
    from .inspection import describe, inspect_server, is_url
    from .load import LoadError

    if not is_url(args.target) and "://" in args.target:
        _say(prog, f"{args.target!r}: inspect takes an http(s) URL or a server file")
        return BAD_INPUT
    revisions = importlib.import_module("mcp_generated").REVISIONS
    if args.protocol != "auto" and args.protocol not in revisions:
        _say(prog, f"--protocol {args.protocol!r}: give auto or one of {', '.join(revisions)}")
        return BAD_INPUT
    try:
        report = loops.run(asyncio.wait_for(
            inspect_server(args.target, stdio=args.stdio, protocol=args.protocol), 60))
    except (OSError, HttpError, ConnectionClosed, RpcError, asyncio.TimeoutError) as error:
        why = str(error) or type(error).__name__
        _say(prog, f"cannot inspect {args.target}: {why}")
        return SERVER_FAILED
    except LoadError:
        raise
    except Exception as error:  # a server's answer the client refuses, say: one line
        first = (str(error).splitlines() or [""])[0]
        _say(prog, f"cannot inspect {args.target}: {type(error).__name__}: {first}")
        return SERVER_FAILED
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else describe(report))
    return OK


def _install(args: argparse.Namespace, prog: str) -> int:
    from .install import CLIENTS, InstallError, config_path, entry, install
    from .load import load_app, split_target

    env: dict[str, str] = {}
    for pair in args.env:
        key, equals, value = pair.partition("=")
        if not equals or not key:
            _say(prog, f"--env {pair!r}: write KEY=VALUE")
            return BAD_INPUT
        env[key] = value
    app = load_app(args.target)  # the server must load here before a client starts it
    source, name = split_target(args.target)
    if source.endswith(".py") or Path(source).exists():
        source = str(Path(source).resolve())
    target = f"{source}:{name}" if name else source
    client = CLIENTS[args.client]
    entry_name = args.name or str(getattr(app, "name", "") or Path(source).stem)
    try:
        path = config_path(client, args.config, args.project)
        replaced = install(client, path, entry_name, entry(client, sys.executable, ["-m", "typedmcp.cli", "run", target], env),
                           force=args.force)
    except InstallError as error:
        _say(prog, str(error))
        return BAD_INPUT
    print(f"{'replaced' if replaced else 'added'} server {entry_name!r} in {path} ({args.client}); "
          "restart the client to load it")
    return OK


def main(argv: Sequence[str] | None = None, prog: str = "python -m typedmcp.cli") -> int:
    """``python -m typedmcp.cli run|inspect|install ...``."""
    top = argparse.ArgumentParser(prog=prog, description="Run, inspect and install MCP servers.")
    add_commands(top.add_subparsers(dest="command", required=True))
    args = top.parse_args(argv)
    return run_command(args, prog.split()[0] if prog.startswith("mcp-") else "typedmcp")
