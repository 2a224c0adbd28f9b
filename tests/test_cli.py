"""The ``mcp-codegen`` command: error paths, --list, --check, regeneration and downloads.

Every error path must exit 2 with one paragraph (``error: ...`` then ``  fix: ...``), no
traceback, and must leave the disk as it was: no --out folder, no ``.name.new-*`` staging.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import FIXTURES

from typedmcp_codegen import __version__, cli, load
from typedmcp_codegen.generate import GeneratedPackage, generate_package
from typedmcp_codegen.load import CACHE_DIR_ENV, OFFLINE_ENV, SCHEMA_DIR_ENV, SchemaSource, load_schema
from typedmcp_codegen.output import write_tree
from typedmcp_codegen.pins import PinTable, load_pins

TINY = FIXTURES / "schemas" / "tiny" / "schema.json"
UNPINNED = "2099-01-01"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli.main, [str(arg) for arg in args])


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file and folder under ``root`` (folders map to b"<dir>"), byte for byte."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes() if path.is_file() else b"<dir>"
        for path in sorted(root.rglob("*"))
    }


def read_tree(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def assert_clean_error(result: Result, *mentions: str) -> None:
    """Exit 2; one paragraph: ``error:`` first, ``  fix:`` last; no traceback; names things.

    An unpinned revision's ``notice:`` line may come first (it is printed before the work).
    """
    output = result.output
    assert result.exit_code == 2, output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in output
    lines = output.rstrip("\n").split("\n")
    while lines and lines[0].startswith("notice: "):
        lines.pop(0)
    assert lines[0].startswith("error: "), output
    assert lines[-1].startswith("  fix: ") and len(lines[-1]) > len("  fix: "), output
    assert sum(line.startswith("  fix: ") for line in lines) == 1, output
    assert all(line.strip() for line in lines), f"more than one paragraph:\n{output}"
    assert result.stdout == "", "errors and notices go to stderr"
    for mention in mentions:
        assert mention in output, f"{mention!r} not in:\n{output}"


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No schema dir from the environment, an empty cache, no network, cwd in tmp."""
    monkeypatch.delenv(SCHEMA_DIR_ENV, raising=False)
    monkeypatch.delenv("MCP_CODEGEN_DEBUG", raising=False)
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(OFFLINE_ENV, "1")
    (tmp_path / "cache").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(scope="module")
def tiny_files() -> dict[str, str]:
    schema = load_schema(UNPINNED, load_pins(), SchemaSource(schema_file=TINY))
    return generate_package(schema, None).files


# error paths


def test_unknown_revision(tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = invoke("--version", "1999-01-01", "--out", tmp_path / "out")
    assert_clean_error(result, "'1999-01-01'", "2025-06-18", "latest", "--schema FILE")
    assert snapshot(tmp_path) == before


def test_version_without_a_value_lists_the_revisions(tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = invoke("--out", tmp_path / "out", "--version")
    assert_clean_error(result, "--version needs a protocol revision")
    fix = result.output.rstrip("\n").split("\n")[-1]
    for name in (*load_pins().names, "latest"):
        assert name in fix
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("choice", [[], ["--all", "--version", "2025-06-18"]])
def test_exactly_one_of_version_and_all(tmp_path: Path, choice: list[str]) -> None:
    result = invoke(*choice, "--out", tmp_path / "out")
    assert_clean_error(result, "--version REVISION or --all")
    assert not (tmp_path / "out").exists()


def test_all_with_one_schema_file(tmp_path: Path) -> None:
    result = invoke("--all", "--schema", TINY, "--out", tmp_path / "out")
    assert_clean_error(result, "--schema", "--all", "--schema-dir")
    assert not (tmp_path / "out").exists()


def test_missing_schema_without_network(tmp_path: Path) -> None:
    """draft is not shipped (it changes upstream): offline, without a schema dir, it is missing."""
    before = snapshot(tmp_path)
    result = invoke("--version", "draft", "--offline", "--out", tmp_path / "out")
    pin = load_pins().find("draft")
    assert pin is not None
    assert_clean_error(result, "revision draft", f"{pin.url} (download disabled)", "--schema-dir")
    assert snapshot(tmp_path) == before


# a schema folder the user names must be there, and hold the revision (issue 17, item 5):
# before, --schema-dir /nope and MCP_CODEGEN_SCHEMA_DIR=/nope fell back to the shipped schemas


@pytest.mark.parametrize("named_by", ["flag", "env"])
@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_schema_dir_that_is_no_folder_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named_by: str, kind: str
) -> None:
    folder = tmp_path / "nope"
    if kind == "file":
        folder.write_text("not a folder")
    before = snapshot(tmp_path)
    if named_by == "env":
        monkeypatch.setenv(SCHEMA_DIR_ENV, str(folder))
        result = invoke("--version", "2025-06-18", "--out", tmp_path / "out")
        named = f"{SCHEMA_DIR_ENV}={folder}"
    else:
        result = invoke("--version", "2025-06-18", "--schema-dir", folder, "--out", tmp_path / "out")
        named = f"--schema-dir {folder}"
    what = "does not exist" if kind == "missing" else "is a file, not a folder"
    assert_clean_error(
        result, f"error: {named}: {what}", "<revision>/schema.json",
        str(folder / "2025-06-18" / "schema.json"), "shipped with mcp-codegen",
    )
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("named_by", ["flag", "env"])
def test_a_schema_dir_without_the_revision_is_refused_naming_what_it_holds(
    tmp_path: Path, spec_dir: Path, monkeypatch: pytest.MonkeyPatch, named_by: str
) -> None:
    schemas = tmp_path / "schemas"
    (schemas / "2025-06-18").mkdir(parents=True)
    shutil.copy(spec_dir / "2025-06-18" / "schema.json", schemas / "2025-06-18" / "schema.json")
    before = snapshot(tmp_path)
    if named_by == "env":
        monkeypatch.setenv(SCHEMA_DIR_ENV, str(schemas))
        result = invoke("--version", "2024-11-05", "--out", tmp_path / "out")
        named, fix = f"{SCHEMA_DIR_ENV}={schemas}", f"unset {SCHEMA_DIR_ENV}"
    else:
        result = invoke("--version", "2024-11-05", "--schema-dir", schemas, "--out", tmp_path / "out")
        named, fix = f"--schema-dir {schemas}", "leave out --schema-dir"
    assert_clean_error(
        result, f"error: {named} has no 2024-11-05/schema.json (it holds 2025-06-18)",
        str(schemas / "2024-11-05" / "schema.json"), fix,
    )
    assert snapshot(tmp_path) == before
    # the revision it holds is generated from it
    held = invoke("--version", "2025-06-18", "--schema-dir", schemas, "--out", tmp_path / "out")
    assert held.exit_code == 0, held.output


@pytest.mark.parametrize(
    ("variable", "meant"),
    [
        ("MCP_CODEGEN_SCHEMADIR", SCHEMA_DIR_ENV),
        ("MCP_CODEGEN_SCHEMA_DIRS", SCHEMA_DIR_ENV),
        ("MCP_CODEGEN_OFLINE", OFFLINE_ENV),
    ],
)
def test_a_misspelt_variable_is_warned_of_with_the_closest_known_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, meant: str
) -> None:
    monkeypatch.setenv(variable, str(tmp_path / "nope"))
    result = invoke("--version", "2025-06-18", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"warning: {variable} is set, but mcp-codegen reads no such variable; did you mean {meant}?\n"
    )
    assert result.stdout.startswith("wrote ")


def test_an_unknown_variable_far_from_any_is_warned_of_with_the_known_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MCP_CODEGEN_COLOUR", "1")
    result = invoke("--list")
    assert result.exit_code == 0
    assert result.stderr == (
        "warning: MCP_CODEGEN_COLOUR is set, but mcp-codegen reads no such variable; it reads "
        f"{SCHEMA_DIR_ENV}, {CACHE_DIR_ENV}, {OFFLINE_ENV}, MCP_CODEGEN_DEBUG\n"
    )


def test_the_known_variables_draw_no_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_CODEGEN_DEBUG", "")
    result = invoke("--list")
    assert result.exit_code == 0 and result.stderr == ""


def test_released_revision_generates_offline_from_the_shipped_schema(
    tmp_path: Path, generate_revision: Callable[[str], GeneratedPackage]
) -> None:
    """No schema dir, an empty cache, no network: the package's own schemas are enough."""
    result = invoke("--version", "2025-06-18", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "notice" not in result.output
    assert read_tree(tmp_path / "out") == generate_revision("2025-06-18").files
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_changed_draft_generates_with_a_notice(tmp_path: Path, spec_dir: Path) -> None:
    """draft is not pinned to bytes: a draft that changed upstream is taken as given."""
    raw = (spec_dir / "draft" / "schema.json").read_bytes()
    changed = raw.replace(b"A progress token", b"A changed progress token", 1)
    assert changed != raw
    (tmp_path / "schemas" / "draft").mkdir(parents=True)
    (tmp_path / "schemas" / "draft" / "schema.json").write_bytes(changed)
    result = invoke("--version", "draft", "--schema-dir", tmp_path / "schemas", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "notice: revision draft is not pinned (it changes upstream)" in result.stderr
    assert hashlib.sha256(changed).hexdigest() in result.stderr
    assert "A changed progress token" in (tmp_path / "out" / "models" / "progress_token.py").read_text()


def test_sha256_mismatch(tmp_path: Path, spec_dir: Path) -> None:
    raw = (spec_dir / "2025-06-18" / "schema.json").read_bytes()
    position = raw.index(b'"description": "') + len(b'"description": "')
    edited = (
        raw[:position]
        + (b"X" if raw[position : position + 1] != b"X" else b"Y")
        + raw[position + 1 :]
    )
    schemas = tmp_path / "schemas" / "2025-06-18"
    schemas.mkdir(parents=True)
    (schemas / "schema.json").write_bytes(edited)
    before = snapshot(tmp_path)
    result = invoke(
        "--version",
        "2025-06-18",
        "--offline",
        "--schema-dir",
        tmp_path / "schemas",
        "--out",
        tmp_path / "out",
    )
    pin = load_pins().find("2025-06-18")
    assert pin is not None
    assert_clean_error(
        result, str(schemas / "schema.json"), "revision 2025-06-18", pin.sha256, "sha256"
    )
    assert snapshot(tmp_path) == before


def test_invalid_json(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(TINY.read_bytes()[:700])
    before = snapshot(tmp_path)
    result = invoke("--schema", truncated, "--version", UNPINNED, "--out", tmp_path / "out")
    assert_clean_error(result, str(truncated), "invalid JSON", "line")
    assert snapshot(tmp_path) == before


def test_meta_validation_failure(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(
        TINY.read_text().replace('"name": {"type": "string"}', '"name": {"type": 5}', 1)
    )
    assert broken.read_text() != TINY.read_text()
    before = snapshot(tmp_path)
    result = invoke("--schema", broken, "--version", UNPINNED, "--out", tmp_path / "out")
    assert_clean_error(result, str(broken), "meta-validation", "/$defs/Gadget/properties/name/type")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("document", "missing"),
    [
        (  # a valid JSON Schema, but not of MCP
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$defs": {"Foo": {"type": "object", "properties": {"a": {"type": "string"}}}},
            },
            "ClientRequest, ClientNotification, ServerRequest (or InputRequest), ServerNotification",
        ),
        ("without ClientRequest", "ClientRequest"),
        ("dangling $ref", "/$defs/ListGadgetsRequest/properties/params: #/$defs/Missing"),
    ],
    ids=["not-mcp", "no-client-request", "dangling-ref"],
)
def test_a_schema_that_is_not_an_mcp_schema_is_bad_input(
    tmp_path: Path, document: Any, missing: str
) -> None:
    if document == "without ClientRequest":
        document = json.loads(TINY.read_text())
        del document["$defs"]["ClientRequest"]
    elif document == "dangling $ref":
        document = json.loads(TINY.read_text())
        document["$defs"]["ListGadgetsRequest"]["properties"]["params"] = {
            "$ref": "#/$defs/Missing"
        }
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(document))
    before = snapshot(tmp_path)
    result = invoke("--schema", schema, "--version", UNPINNED, "--out", tmp_path / "out")
    assert_clean_error(result, missing if missing.startswith("/") else
                       f"not an MCP schema: it lacks {missing}")
    assert "generator bug" not in result.output
    assert snapshot(tmp_path) == before


def test_unwritable_out(tmp_path: Path) -> None:
    """Root ignores permission bits, so the --out parent is a regular file instead."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder\n")
    before = snapshot(tmp_path)
    result = invoke("--schema", TINY, "--version", UNPINNED, "--out", blocker / "pkg")
    assert_clean_error(result, str(blocker), "--out")
    assert snapshot(tmp_path) == before


def test_out_is_a_file(tmp_path: Path) -> None:
    target = tmp_path / "pkg"
    target.write_text("a file\n")
    before = snapshot(tmp_path)
    result = invoke("--schema", TINY, "--version", UNPINNED, "--out", target)
    assert_clean_error(result, str(target), "is a file")
    assert snapshot(tmp_path) == before


def test_non_empty_foreign_out(tmp_path: Path) -> None:
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "my_notes.txt").write_text("precious\n")
    before = snapshot(tmp_path)
    result = invoke("--schema", TINY, "--version", UNPINNED, "--out", out)
    assert_clean_error(result, str(out), "not written by mcp-codegen")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("revision", ["", 'x" + str(1) + "', "two\nlines"])
def test_unusable_revision_names_are_refused(tmp_path: Path, revision: str) -> None:
    """The revision is pasted into file names, headers and string literals of the output."""
    before = snapshot(tmp_path)
    result = invoke("--schema", TINY, "--version", revision, "--out", tmp_path / "out")
    assert_clean_error(result)
    assert "generator bug" not in result.output
    assert snapshot(tmp_path) == before


def test_empty_revision_never_replaces_the_default_root(tmp_path: Path) -> None:
    """Without --out the target is generated/mcp_generated/<package>; for an empty revision
    that is generated/mcp_generated itself, and every committed revision would be replaced.
    """
    root = tmp_path / "generated" / "mcp_generated"
    write_tree(
        {
            "__init__.py": "# Generated by mcp-codegen from the official MCP schemas: do not edit.\n",
            "v2025_06_18/__init__.py": "# Generated by mcp-codegen\n",
        },
        root,
    )
    before = snapshot(tmp_path)
    result = invoke("--schema", TINY, "--version", "")
    assert result.exit_code == 2, result.output
    assert snapshot(tmp_path) == before


def test_internal_errors_have_no_traceback_and_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def explode(*args: object) -> GeneratedPackage:
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "generate_package", explode)
    result = invoke("--schema", TINY, "--version", UNPINNED, "--out", tmp_path / "out")
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    assert "internal error: RuntimeError: boom" in result.output
    assert "MCP_CODEGEN_DEBUG=1" in result.output
    assert not (tmp_path / "out").exists()


# informational options


def test_list_prints_a_header_row_then_every_pin_with_era_and_sha256() -> None:
    result = invoke("--list")
    assert result.exit_code == 0, result.output
    pins = load_pins()
    header, *lines = result.output.splitlines()
    assert header.split() == ["revision", "era", "sha256", "notes"]
    assert len(lines) == len(pins.pins)
    for pin, line in zip(pins.pins, lines, strict=True):
        assert line.split()[:3] == [pin.revision, pin.era, pin.sha256 or "-"]
        assert ("shipped" in line) == pin.released
    latest = next(line for line in lines if line.startswith(pins.latest))
    assert "latest" in latest
    draft = next(line for line in lines if line.startswith("draft"))
    assert "unreleased" in draft and "floating" in draft
    assert len({line.index(line.split()[2]) for line in [header, *lines]}) == 1, "aligned"


@pytest.mark.parametrize("spelling", [["version"], ["--tool-version"]])
def test_tool_version(spelling: list[str]) -> None:
    """``mcp-codegen version`` (and the older ``--tool-version``); ``--version`` names a
    protocol revision."""
    result = invoke(*spelling)
    assert result.exit_code == 0, result.output
    assert result.output == f"mcp-codegen {__version__}\n"
    assert __version__ == importlib.metadata.version("typedmcp-codegen")


def test_help_names_the_subcommands_and_the_generate_form() -> None:
    result = invoke("--help")
    assert result.exit_code == 0, result.output
    assert "--version REVISION" in result.output
    commands = result.output.split("Commands:", 1)[1].split("\n\n", 1)[0].splitlines()
    assert sorted(line.split()[0] for line in commands if line.strip()) == ["diff", "inspect", "run", "tools", "version"]
    assert "4 diff found breaking changes" in " ".join(result.output.split())


def test_generation_options_do_not_go_with_a_subcommand(tmp_path: Path) -> None:
    result = invoke("--out", tmp_path / "out", "version")
    assert_clean_error(result, "--out", "mcp-codegen version")
    assert not (tmp_path / "out").exists()


def test_latest_resolves_to_2026_07_28(
    tmp_path: Path, spec_dir: Path, generate_revision: Callable[[str], GeneratedPackage]
) -> None:
    out = tmp_path / "out"
    write_tree(generate_revision("2026-07-28").files, out)
    before = snapshot(tmp_path)
    result = invoke(
        "--version", "latest", "--check", "--offline", "--schema-dir", spec_dir, "--out", out
    )
    assert result.exit_code == 0, result.output
    assert "up to date" in result.output
    assert snapshot(tmp_path) == before


# --check and regeneration


def test_generate_then_check_is_up_to_date(tmp_path: Path, tiny_files: dict[str, str]) -> None:
    out = tmp_path / "out"
    result = invoke("--schema", TINY, "--version", UNPINNED, "--out", out)
    assert result.exit_code == 0, result.output
    assert f"notice: revision {UNPINNED} is not pinned" in result.stderr
    assert f"wrote {len(tiny_files)} files to {out}" in result.stdout
    assert read_tree(out) == tiny_files
    check = invoke("--schema", TINY, "--version", UNPINNED, "--out", out, "--check")
    assert check.exit_code == 0, check.output
    assert "up to date" in check.stdout


def test_check_reports_a_diff_and_missing_and_extra_files(
    tmp_path: Path, tiny_files: dict[str, str]
) -> None:
    out = tmp_path / "out"
    write_tree(tiny_files, out)
    client = out / "client.py"
    client.write_text(client.read_text().replace("class Client(", "class Klient("))
    (out / "dispatch.py").unlink()
    (out / "stray.py").write_text("STRAY = 1\n")
    before = snapshot(tmp_path)
    result = invoke("--schema", TINY, "--version", UNPINNED, "--out", out, "--check")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert f"--- {out}/client.py (on disk)" in result.stdout
    assert f"+++ {out}/client.py (generated)" in result.stdout
    assert "-class Klient(" in result.stdout and "+class Client(" in result.stdout
    assert f"changed: {client}" in result.stdout
    assert f"missing: {out / 'dispatch.py'}" in result.stdout
    assert f"extra: {out / 'stray.py'}" in result.stdout
    assert "is stale" in result.stderr
    assert snapshot(tmp_path) == before


def test_check_after_a_two_field_schema_change_shows_only_what_changed(
    tmp_path: Path, tiny_files: dict[str, str]
) -> None:
    """The schema's sha256 lives in the package's ``__init__.py`` only, not in every header,
    so a drift check names the files the change touches and nothing else."""
    out = tmp_path / "out"
    write_tree(tiny_files, out)
    document = json.loads(TINY.read_text())
    document["$defs"]["Gadget"]["properties"]["colour"] = {"type": "string"}
    document["$defs"]["Implementation"]["properties"]["vendor"] = {"type": "string"}
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(document))
    result = invoke("--schema", changed, "--version", UNPINNED, "--out", out, "--check")
    assert result.exit_code == 1, result.output
    reported = sorted(line.split(": ", 1)[1] for line in result.stdout.splitlines()
                      if line.startswith(("changed: ", "missing: ", "extra: ")))
    assert reported == [str(out / name) for name in
                        ("__init__.py", "models/gadget.py", "models/implementation.py")]
    assert len(result.stdout.splitlines()) < 60, result.stdout


def test_check_of_a_missing_folder_is_stale_and_writes_nothing(tmp_path: Path) -> None:
    result = invoke("--schema", TINY, "--version", UNPINNED, "--out", tmp_path / "out", "--check")
    assert result.exit_code == 1
    assert "missing: " in result.stdout
    assert not (tmp_path / "out").exists()


def test_regenerating_over_our_own_output_replaces_it(
    tmp_path: Path, tiny_files: dict[str, str]
) -> None:
    out = tmp_path / "out"
    assert invoke("--schema", TINY, "--version", UNPINNED, "--out", out).exit_code == 0
    (out / "stale.py").write_text("OLD = 1\n")
    (out / "models.py").write_text("# edited by hand\n")
    (out / "__pycache__").mkdir()
    (out / "__pycache__" / "models.cpython-310.pyc").write_bytes(b"\0")
    result = invoke("--schema", TINY, "--version", UNPINNED, "--out", out)
    assert result.exit_code == 0, result.output
    assert "not written by mcp-codegen" not in result.output
    assert read_tree(out) == tiny_files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "out"]


# downloads from a local server


@dataclasses.dataclass
class Server:
    root: Path
    url: str
    paths: list[str]


@pytest.fixture
def http_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A local HTTP server in a thread, serving ``tmp_path/www``; records requested paths."""
    root = tmp_path / "www"
    root.mkdir()
    paths: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            paths.append(self.path)
            super().do_GET()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(root))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.delenv(OFFLINE_ENV)
    # as for a pinned revision the package does not ship (one pinned after this release)
    monkeypatch.setattr(load, "shipped_schema_path", lambda pin: None)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(name, "*")
    try:
        yield Server(root, f"http://127.0.0.1:{server.server_address[1]}", paths)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def pins_pointing_at(base_url: str, revision: str) -> PinTable:
    pins = load_pins()
    replaced = tuple(
        dataclasses.replace(pin, url=f"{base_url}/{pin.revision}/schema.json")
        if pin.revision == revision
        else pin
        for pin in pins.pins
    )
    return dataclasses.replace(pins, pins=replaced)


def test_download_is_verified_and_cached(
    tmp_path: Path,
    spec_dir: Path,
    http_server: Server,
    monkeypatch: pytest.MonkeyPatch,
    generate_revision: Callable[[str], GeneratedPackage],
) -> None:
    revision = "2024-11-05"
    official = (spec_dir / revision / "schema.json").read_bytes()
    (http_server.root / revision).mkdir()
    (http_server.root / revision / "schema.json").write_bytes(official)
    pins = pins_pointing_at(http_server.url, revision)
    monkeypatch.setattr(cli, "load_pins", lambda: pins)
    pin = pins.find(revision)
    assert pin is not None
    out = tmp_path / "out"

    result = invoke("--version", revision, "--out", out)
    assert result.exit_code == 0, result.output
    assert http_server.paths == [f"/{revision}/schema.json"]
    cached = tmp_path / "cache" / f"{pin.sha256}.json"
    assert cached.read_bytes() == official
    assert sorted(p.name for p in cached.parent.iterdir()) == [cached.name]
    assert read_tree(out) == generate_revision(revision).files

    # the second run is served from the cache
    check = invoke("--version", revision, "--out", out, "--check")
    assert check.exit_code == 0, check.output
    assert http_server.paths == [f"/{revision}/schema.json"]


def test_wrong_download_fails_the_sha256_check_and_is_not_cached(
    tmp_path: Path, spec_dir: Path, http_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    revision = "2024-11-05"
    official = (spec_dir / revision / "schema.json").read_bytes()
    (http_server.root / revision).mkdir()
    (http_server.root / revision / "schema.json").write_bytes(official.replace(b"{", b" {", 1))
    pins = pins_pointing_at(http_server.url, revision)
    monkeypatch.setattr(cli, "load_pins", lambda: pins)
    pin = pins.find(revision)
    assert pin is not None
    before = snapshot(tmp_path)
    result = invoke("--version", revision, "--out", tmp_path / "out")
    assert_clean_error(result, pin.url, "sha256", pin.sha256, f"revision {revision}")
    assert http_server.paths == [f"/{revision}/schema.json"]
    assert snapshot(tmp_path) == before  # nothing cached, nothing written


def test_failed_download_names_the_url(
    tmp_path: Path, http_server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    pins = pins_pointing_at(http_server.url, "2025-03-26")
    monkeypatch.setattr(cli, "load_pins", lambda: pins)
    pin = pins.find("2025-03-26")
    assert pin is not None
    before = snapshot(tmp_path)
    result = invoke("--version", "2025-03-26", "--out", tmp_path / "out")
    assert_clean_error(result, f"{pin.url} (", "no schema file for revision 2025-03-26")
    assert snapshot(tmp_path) == before


# the installed console script


def test_console_script_generates_a_package(tmp_path: Path, tiny_files: dict[str, str]) -> None:
    script = Path(sys.executable).parent / "mcp-codegen"
    found = shutil.which("mcp-codegen") if not script.exists() else str(script)
    assert found, "the mcp-codegen console script is not installed"
    out = tmp_path / "out"
    env = {key: value for key, value in os.environ.items() if not key.startswith("MCP_CODEGEN")}
    completed = subprocess.run(
        [found, "--schema", str(TINY), "--version", UNPINNED, "--out", str(out)],
        capture_output=True,
        text=True,
        env={**env, OFFLINE_ENV: "1"},
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert "notice: revision 2099-01-01 is not pinned" in completed.stderr
    assert read_tree(out) == tiny_files
