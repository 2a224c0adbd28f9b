"""``mcp-codegen``: the command line. Turns errors into one clear message and exit code 2."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import Any

import click

from . import __version__
from .errors import CodegenError
from .generate import generate_package, generate_revisions, generate_root
from .load import SchemaSource, load_schema, shipped_schema_path
from .output import check_tree, write_tree
from .pins import PinTable, load_pins, package_name

DEFAULT_ROOT = Path("generated") / "mcp_generated"
NO_VALUE = "\0"
EXIT_STALE = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
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
@click.option("--list", "list_revisions", is_flag=True, help="List pinned revisions and exit.")
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
@click.option("--offline", is_flag=True, help="Never download a pinned schema.")
@click.option("--tool-version", is_flag=True, help="Print mcp-codegen's own version and exit.")
def main(**options: Any) -> None:
    """Generate typed Python packages from the official MCP schema."""
    try:
        code = run(**options)
    except CodegenError as error:
        click.echo(f"error: {error.problem}\n  fix: {error.fix}", err=True)
        code = EXIT_BAD_INPUT
    except Exception as exc:  # never a traceback for the user, unless asked for
        if os.environ.get("MCP_CODEGEN_DEBUG"):
            traceback.print_exc()
        click.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "  fix: rerun with MCP_CODEGEN_DEBUG=1 for details and report it",
            err=True,
        )
        code = EXIT_INTERNAL
    sys.exit(code)


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
) -> int:
    """The command's logic; returns the exit code, raises CodegenError on bad input."""
    pins = load_pins()
    if tool_version:
        click.echo(f"mcp-codegen {__version__}")
        return 0
    if list_revisions:
        _print_list(pins)
        return 0
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
    if all_revisions:
        packages = generate_revisions([pin.revision for pin in pins.released], pins, source)
        files = generate_root(packages)
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
        files = package.files
        target = out or DEFAULT_ROOT / package_name(schema.revision)
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
        notes = ["shipped"] if shipped_schema_path(pin.revision) is not None else []
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
