"""``mcp-codegen tools``: a typed, vendorable package for one server's own tools.

Sources: ``--manifest tools.json`` (a saved snapshot), ``--url URL [--header 'K: V']...``
(Streamable HTTP, with the HTTP+SSE fallback; ``--max-reply-bytes N``: the client's cap on
one reply, 64 MiB by default) or ``-- COMMAND [ARG...]`` (stdio). A live
server is listed by the runtime in a child process (``python -m typedmcp.tool_snapshot``),
so the generator never imports the runtime. ``--check`` writes nothing: exit 0 when DIR is
current, 1 with a report in tool terms when not.
"""

from __future__ import annotations

import json
import keyword
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from .errors import CodegenError
from .output import check_tree, write_tree
from .pins import load_pins
from .tools_diff import diff_tools
from .tools_generate import generate_tools_package
from .toolset import MANIFEST_FILE, analyse_tools, load_manifest

EXIT_STALE = 1
SNAPSHOT_MODULE = "typedmcp.tool_snapshot"
SNAPSHOT_TIMEOUT = 120.0


def run_tools(out: Path, manifest_path: Path | None, url: str | None, headers: list[str],
              check: bool, command: list[str], protocol: str | None = None,
              config: Path | None = None, server: str | None = None,
              max_reply_bytes: int | None = None) -> int:
    """The command's logic; returns the exit code, raises CodegenError on bad input."""
    if not out.name.isidentifier() or keyword.iskeyword(out.name):
        raise CodegenError(
            f"--out {out}: the folder's name {out.name!r} must be a Python package name",
            "name the folder like a module: letters, digits and _ (e.g. weather_tools)",
        )
    if (config is None) != (server is None):
        raise CodegenError("--config FILE and --server NAME go together",
                           "e.g. mcp-codegen tools --out DIR --config mcp.json --server weather")
    sources = [given for given in (manifest_path, url, command or None, config) if given]
    if len(sources) > 1:
        raise CodegenError("give one source: --manifest, --url, --config/--server or -- COMMAND",
                           "e.g. mcp-codegen tools --out weather_tools -- python server.py")
    if headers and not url:
        raise CodegenError("--header needs --url", "add --url URL, or drop --header")
    if max_reply_bytes is not None and not (url or config):
        raise CodegenError("--max-reply-bytes needs --url or --config/--server",
                           "it caps replies read over HTTP; drop it for a manifest or a command")
    vendored = out / MANIFEST_FILE
    if manifest_path is not None:
        manifest = load_manifest(manifest_path)
    elif url or command or config:
        entry = (str(config), str(server)) if config is not None and server is not None else None
        manifest = live_snapshot(url, headers, command, protocol, entry, max_reply_bytes)
    elif check and vendored.is_file():
        manifest = load_manifest(vendored)
    else:
        raise CodegenError(
            "say where the tools come from: --manifest FILE, --url URL or -- COMMAND [ARG...]",
            "e.g. mcp-codegen tools --out weather_tools -- python weather_server.py",
        )
    toolset = analyse_tools(manifest)
    files, problems = generate_tools_package(toolset, load_pins())
    for problem in problems:
        click.echo(f"warning: {problem}", err=True)
    if check:
        return _check(files, out, manifest)
    write_tree(files, out)
    click.echo(f"wrote {len(toolset.tools)} tools ({len(files)} files) to {out}")
    return 0


def _check(files: dict[str, str], out: Path, manifest: dict[str, Any]) -> int:
    report = check_tree(files, out)
    if report.up_to_date:
        click.echo(f"{out} is up to date ({len(files)} files)")
        return 0
    vendored = out / MANIFEST_FILE
    old = load_manifest(vendored) if vendored.is_file() else {"tools": []}
    drift = diff_tools(analyse_tools(old), analyse_tools(manifest))
    click.echo(drift.to_markdown(), nl=False)
    for label, paths in (("changed", report.changed), ("missing", report.missing),
                         ("extra", report.extra)):
        for path in paths:
            click.echo(f"{label}: {out / path}")
    click.echo(f"{out} is stale: regenerate it (same command without --check)", err=True)
    return EXIT_STALE


def live_snapshot(url: str | None, headers: list[str], command: list[str],
                  protocol: str | None = None, entry: tuple[str, str] | None = None,
                  max_reply_bytes: int | None = None) -> dict[str, Any]:
    """List a live server's tools with the runtime, in a child process (``entry``: an
    ``mcpServers`` config file and the server's name in it; ``max_reply_bytes``: the
    client's cap on a reply, over HTTP)."""
    arguments = ["--protocol", protocol] if protocol else []
    if max_reply_bytes is not None:
        arguments += ["--max-reply-bytes", str(max_reply_bytes)]
    if entry is not None:
        arguments += ["--config", entry[0], "--server", entry[1]]
        what = f"server {entry[1]} of {entry[0]}"
    elif url:
        arguments += ["--url", url, *[part for h in headers for part in ("--header", h)]]
        what = url
    else:
        arguments += ["--", *command]
        what = " ".join(command)
    try:
        ran = subprocess.run([sys.executable, "-m", SNAPSHOT_MODULE, *arguments], capture_output=True,
                             text=True, timeout=SNAPSHOT_TIMEOUT, check=False)
    except subprocess.TimeoutExpired as exc:
        raise CodegenError(f"listing the tools of {what} took over {SNAPSHOT_TIMEOUT:.0f} s",
                           "check that the server starts and answers tools/list") from exc
    if ran.returncode != 0:
        lines = [line for line in ran.stderr.splitlines() if line.strip()]
        raise CodegenError(
            f"cannot list the tools of {what}: {lines[-1] if lines else f'exit code {ran.returncode}'}",
            "check the command or URL (and headers); the typedmcp runtime must be installed",
        )
    try:
        snapshot: dict[str, Any] = json.loads(ran.stdout)
    except ValueError as exc:
        raise CodegenError(f"the snapshot of {what} is not JSON", "report this") from exc
    return snapshot
