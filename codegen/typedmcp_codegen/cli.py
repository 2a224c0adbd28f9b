"""``mcp-codegen``: the command line. Turns errors into one clear message and exit code 2.

``mcp-codegen --version REVISION ...`` generates (the documented form, unchanged);
``mcp-codegen diff A B`` reports what a schema update changes; ``mcp-codegen version``
prints the tool's own version. Exit codes: 0 done, 1 ``--check`` found drift, 2 bad input,
3 internal error, 4 ``diff`` found breaking changes.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import __version__
from .diff import diff, load_side
from .errors import CodegenError
from .extension import core_methods, generate_extension, generate_extensions, methods_of
from .extension_diff import extension_diff, extension_sides
from .extension_pins import (
    ALL_EXTENSIONS,
    EXTENSIONS_FOLDER,
    NO_EXTENSIONS,
    load_extension_pins,
    load_extension_schema,
)
from .generate import generate_package, generate_revisions, generate_root
from .load import DEBUG_ENV, SchemaSource, load_schema, shipped_schema_path, unknown_environment
from .output import check_tree, write_tree
from .pins import PinTable, load_pins, package_name
from .tools_command import run_tools

DEFAULT_ROOT = Path("generated") / "mcp_generated"
NO_VALUE = "\0"
EXIT_STALE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_BREAKING = 4
CONTEXT = {"help_option_names": ["-h", "--help"]}


def finish(work: Callable[[], int]) -> None:
    """Run one command's work and exit with its code; errors become one clear paragraph."""
    try:
        code = work()
    except CodegenError as error:
        click.echo(f"error: {error.problem}\n  fix: {error.fix}", err=True)
        code = EXIT_BAD_INPUT
    except Exception as exc:  # never a traceback for the user, unless asked for
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        click.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "  fix: rerun with MCP_CODEGEN_DEBUG=1 for details and report it",
            err=True,
        )
        code = EXIT_INTERNAL
    sys.exit(code)


@click.group(
    context_settings=CONTEXT,
    invoke_without_command=True,
    subcommand_metavar="[COMMAND ARGS]...",
    epilog="Exit codes: 0 done, 1 --check found drift, 2 bad input, 3 internal error, "
    "4 diff found breaking changes.",
)
@click.option(
    "--version",
    "revision",
    is_flag=False,
    flag_value=NO_VALUE,
    default=None,
    metavar="REVISION",
    help="Protocol revision to generate (e.g. 2025-06-18, or latest).",
)
@click.option("--all", "all_revisions", is_flag=True, help="Generate every released revision.")
@click.option("--list", "list_revisions", is_flag=True, help="List known revisions and exit.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Package folder (with --version) or parent folder (with --all). "
    f"Default: {DEFAULT_ROOT}[/<package>].",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 with a diff if --out is stale.")
@click.option(
    "--schema",
    "schema_file",
    type=click.Path(path_type=Path),
    help="Use this schema.json (an unpinned revision needs it).",
)
@click.option(
    "--schema-dir",
    type=click.Path(path_type=Path),
    help="Folder with <revision>/schema.json [env: MCP_CODEGEN_SCHEMA_DIR].",
)
@click.option("--offline", is_flag=True, help="Never download a schema.")
@click.option(
    "--extension",
    "extension_name",
    metavar="NAME",
    help="Generate one extension's package (e.g. tasks, apps) instead of a revision. "
    f"Default --out: {DEFAULT_ROOT / EXTENSIONS_FOLDER}/<NAME>.",
)
@click.option(
    "--extensions",
    "extension_names",
    metavar="NAMES",
    help="The extensions to include, comma-separated, or all or none: with --all (default "
    "all, in <out>/extensions/) or --version (default none, in the package's extensions/).",
)
@click.option("--tool-version", is_flag=True, help="Same as: mcp-codegen version.")
@click.pass_context
def main(context: click.Context, /, **options: Any) -> None:
    """Generate typed Python packages from the official MCP schema:
    mcp-codegen --version REVISION [--out FOLDER]."""
    for warning in unknown_environment():
        click.echo(f"warning: {warning}", err=True)
    if context.invoked_subcommand is None:
        finish(lambda: run(**options))
    given = [f"--{name.replace('_', '-')}" for name, value in options.items()
             if value not in (None, False)]
    if given:
        finish(lambda: _refuse_with_subcommand(given, context.invoked_subcommand or ""))


def _refuse_with_subcommand(given: list[str], command: str) -> int:
    raise CodegenError(
        f"{', '.join(given)}: generating options, not for mcp-codegen {command}",
        f"run mcp-codegen {command} without them (see mcp-codegen {command} --help)",
    )


@main.command("version", context_settings=CONTEXT)
def version_command() -> None:
    """Print mcp-codegen's own version."""
    click.echo(f"mcp-codegen {__version__}")


@main.command("diff", context_settings=CONTEXT)
@click.argument("old")
@click.argument("new")
@click.option("--json", "as_json", is_flag=True, help="Print JSON for tools, not Markdown.")
@click.option(
    "--schema-dir",
    type=click.Path(path_type=Path),
    help="Folder with <revision>/schema.json [env: MCP_CODEGEN_SCHEMA_DIR].",
)
@click.option("--offline", is_flag=True, help="Never download a schema.")
def diff_command(old: str, new: str, as_json: bool, schema_dir: Path | None, offline: bool) -> None:
    """What moving from OLD to NEW changes, in protocol terms.

    OLD and NEW are each a revision (2025-06-18, latest, draft), a schema.json, or a
    package folder written by mcp-codegen (compared as the schema it was generated from);
    or an extension: its name (tasks), its package folder, or a schema file of it.
    Exit code 4 when a change breaks code written against OLD, 0 otherwise.
    """

    def work() -> int:
        pins = load_pins()
        source = SchemaSource.from_environment(None, schema_dir, offline)
        sides = extension_sides(old, new, pins, load_extension_pins(), source)
        if sides is None:
            report = diff(load_side(old, pins, source), load_side(new, pins, source))
        else:
            report = extension_diff(*sides)
        if as_json:
            click.echo(json.dumps(report.to_json(), indent=2))
        else:
            click.echo(report.to_markdown(), nl=False)
        return EXIT_BREAKING if report.breaking else 0

    finish(work)


PASS_THROUGH = {**CONTEXT, "ignore_unknown_options": True, "allow_extra_args": True}
#: the name the runtime's commands give themselves in their messages (typedmcp.cli.__main__)
RUNTIME_PROG_ENV = "TYPEDMCP_CLI_PROG"


def _runtime_command(name: str, arguments: tuple[str, ...]) -> None:
    """The runtime's developer command ``name`` (``python -m typedmcp.cli``, also
    ``mcp-host NAME``), run in a child process as the generator runs the runtime elsewhere
    (it never imports it); stdin, stdout and the exit code are the child's."""
    import subprocess

    environment = {**os.environ, RUNTIME_PROG_ENV: "mcp-codegen"}
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(subprocess.run([sys.executable, "-m", "typedmcp.cli", name, *arguments], env=environment).returncode)
    sys.exit(130)


@main.command("run", context_settings={**PASS_THROUGH, "help_option_names": []}, add_help_option=False)
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def run_command(arguments: tuple[str, ...]) -> None:
    """Serve a server file's McpApp: TARGET [--http PORT] (same as: mcp-host run)."""
    _runtime_command("run", arguments)


@main.command("inspect", context_settings={**PASS_THROUGH, "help_option_names": []}, add_help_option=False)
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def inspect_command(arguments: tuple[str, ...]) -> None:
    """A server's name, era, tools, resources and prompts: TARGET|URL [--json] (same as:
    mcp-host inspect)."""
    _runtime_command("inspect", arguments)


@main.command("tools", context_settings=CONTEXT)
@click.option("--out", type=click.Path(path_type=Path), required=True,
              help="The package folder (its name is the package's import name).")
@click.option("--manifest", type=click.Path(path_type=Path),
              help="A saved snapshot (tools.json) or tools/list result; no server needed.")
@click.option("--url", help="A Streamable HTTP server (falls back to HTTP+SSE).")
@click.option("--header", "headers", multiple=True, metavar="'K: V'",
              help="An HTTP header for --url (repeatable).")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 with a report when --out differs from the source "
              "(no source: its own tools.json).")
@click.option("--config", type=click.Path(path_type=Path),
              help="An mcpServers config file (as mcp-host reads it); with --server.")
@click.option("--server", help="The server's name in --config.")
@click.option("--protocol", metavar="REVISION",
              help="Offer only this revision to the live server (default: negotiate).")
@click.option("--max-reply-bytes", type=click.IntRange(min=1), metavar="N",
              help="The largest reply read from --url (or a remote --config server), in bytes "
              "(default 64 MiB).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="[-- COMMAND [ARG...]]")
def tools_command(out: Path, manifest: Path | None, url: str | None, headers: tuple[str, ...],
                  check: bool, config: Path | None, server: str | None, protocol: str | None,
                  max_reply_bytes: int | None, command: tuple[str, ...]) -> None:
    """A typed, vendorable package for one server's own tools (one module per tool):
    mcp-codegen tools --out DIR (--manifest tools.json | --url URL | --config FILE --server
    NAME | -- COMMAND [ARG...])."""
    finish(lambda: run_tools(out, manifest, url, list(headers), check, list(command), protocol,
                           config, server, max_reply_bytes))


def run(
    *,
    revision: str | None,
    all_revisions: bool,
    list_revisions: bool,
    out: Path | None,
    check: bool,
    schema_file: Path | None,
    schema_dir: Path | None,
    offline: bool,
    tool_version: bool,
    extension_name: str | None = None,
    extension_names: str | None = None,
) -> int:
    """The command's logic; returns the exit code, raises CodegenError on bad input."""
    pins = load_pins()
    if tool_version:
        click.echo(f"mcp-codegen {__version__}")
        return 0
    if list_revisions:
        _print_list(pins)
        return 0
    if extension_name is not None:
        return _run_extension(extension_name, revision, all_revisions, extension_names, out,
                              check, schema_file, schema_dir, offline, pins)
    if revision == NO_VALUE:
        raise CodegenError(
            "--version needs a protocol revision", f"use one of: {_choices(pins)}"
        )
    if (revision is None) == (not all_revisions):
        raise CodegenError(
            "say which revision to generate: --version REVISION or --all (not both)",
            f"e.g. mcp-codegen --version latest; revisions: {_choices(pins)}",
        )
    if all_revisions and schema_file is not None:
        raise CodegenError(
            "--schema names one file, but --all generates every revision",
            "use --schema-dir DIR (with DIR/<revision>/schema.json) together with --all",
        )
    source = SchemaSource.from_environment(schema_file, schema_dir, offline)
    default = ALL_EXTENSIONS if all_revisions else NO_EXTENSIONS
    extensions = load_extension_pins().select(
        default if extension_names is None else extension_names
    )
    if all_revisions:
        packages = generate_revisions([pin.revision for pin in pins.released], pins, source)
        files = generate_root(packages)
        cores = {p.protocol.revision: methods_of(p.protocol) for p in packages}
        files = dict(sorted({**files, **generate_extensions(extensions, pins, source, cores)}.items()))
        target = out or DEFAULT_ROOT
    else:
        assert revision is not None
        schema = load_schema(revision, pins, source)
        if not schema.pinned:
            floating = pins.find(schema.revision) is not None
            click.echo(
                f"notice: revision {schema.revision} is not pinned"
                f"{' (it changes upstream)' if floating else ''}; generating from "
                f"{schema.origin} (sha256 {schema.sha256}) as given, without verification",
                err=True,
            )
        package = generate_package(schema, pins.find(schema.revision))
        files = {**package.files, **generate_extensions(extensions, pins, source)}
        target = out or DEFAULT_ROOT / package_name(schema.revision)
    if check:
        return _check(files, target)
    write_tree(files, target)
    click.echo(f"wrote {len(files)} files to {target}")
    return 0


def _run_extension(
    name: str, revision: str | None, all_revisions: bool, extension_names: str | None,
    out: Path | None, check: bool, schema_file: Path | None, schema_dir: Path | None,
    offline: bool, pins: PinTable,
) -> int:
    """``--extension NAME``: one extension's package on its own."""
    if revision is not None or all_revisions or extension_names is not None or schema_file:
        raise CodegenError(
            "--extension generates one extension's package on its own; it takes no --version, "
            "--all, --extensions or --schema",
            "run mcp-codegen --extension NAME [--out FOLDER], or include extensions in a "
            "revision's package with --version REVISION --extensions NAMES",
        )
    pin = load_extension_pins().find(name)
    source = SchemaSource.from_environment(None, schema_dir, offline)
    schema = load_extension_schema(pin, source)
    files = generate_extension(schema, pin, core_methods(pin, pins, source))
    target = out or DEFAULT_ROOT / EXTENSIONS_FOLDER / pin.name
    if check:
        return _check(files, target)
    write_tree(files, target)
    click.echo(f"wrote {len(files)} files to {target}")
    return 0


def _check(files: dict[str, str], target: Path) -> int:
    report = check_tree(files, target)
    if report.up_to_date:
        click.echo(f"{target} is up to date ({len(files)} files)")
        return 0
    if report.diff:
        click.echo(report.diff, nl=False)
    for label, paths in (("changed", report.changed), ("missing", report.missing),
                         ("extra", report.extra)):
        for path in paths:
            click.echo(f"{label}: {target / path}")
    click.echo(f"{target} is stale: regenerate it (same command without --check)", err=True)
    return EXIT_STALE


def _choices(pins: PinTable) -> str:
    return ", ".join([*pins.names, "latest"])


LIST_COLUMNS = ("revision", "era", "sha256", "notes")


def _print_list(pins: PinTable) -> None:
    """One header row, then one row per known revision (``draft`` floats: no sha256)."""
    rows = [LIST_COLUMNS]
    for pin in pins.pins:
        notes = ["shipped"] if shipped_schema_path(pin) is not None else []
        if pin.revision == pins.latest:
            notes.append("latest")
        if not pin.released:
            notes.append("unreleased")
        if pin.floating:
            notes.append("floating: follows upstream, not pinned")
        rows.append((pin.revision, pin.era, pin.sha256 or "-", ", ".join(notes) or "-"))
    widths = [max(len(row[column]) for row in rows) for column in range(len(LIST_COLUMNS) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        click.echo("  ".join([*cells, row[-1]]))
