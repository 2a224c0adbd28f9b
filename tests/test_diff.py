"""``mcp-codegen diff A B``: protocol-level changes between schemas, and what they break."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import copy
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import FIXTURES, RELEASED, REPO_ROOT

from typedmcp_codegen import cli
from typedmcp_codegen.diff import Change, DiffReport, Side, diff, load_side, side_of, signatures
from typedmcp_codegen.generate import GeneratedPackage
from typedmcp_codegen.load import CACHE_DIR_ENV, OFFLINE_ENV, SCHEMA_DIR_ENV, SchemaSource
from typedmcp_codegen.output import write_tree
from typedmcp_codegen.pins import load_pins

TINY = FIXTURES / "schemas" / "tiny" / "schema.json"
ADJACENT = list(itertools.pairwise(RELEASED))
#: The pair whose report docs/reference/diff-example.md shows.
README_PAIR = ("2025-06-18", "2025-11-25")


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli.main, [str(arg) for arg in args])


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The shipped schemas only: no schema dir, an empty cache, no network."""
    monkeypatch.delenv(SCHEMA_DIR_ENV, raising=False)
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(OFFLINE_ENV, "1")


def source() -> SchemaSource:
    return SchemaSource(allow_download=False, cache_dir=None)


def report_of(old: str, new: str) -> DiffReport:
    pins = load_pins()
    return diff(load_side(old, pins, source()), load_side(new, pins, source()))


def changes_of(report: DiffReport, section: str, subject: str) -> list[Change]:
    return [c for c in report.changes if c.section == section and c.subject == subject]


def find(report: DiffReport, section: str, subject: str, change: str, item: str = "") -> Change:
    matches = [
        c for c in changes_of(report, section, subject) if c.change == change and c.item == item
    ]
    assert len(matches) == 1, (section, subject, change, item, changes_of(report, section, subject))
    return matches[0]


# every pair of adjacent shipped revisions, through the command line


@pytest.mark.parametrize(("old", "new"), ADJACENT, ids=[f"{a}..{b}" for a, b in ADJACENT])
def test_adjacent_revisions(old: str, new: str) -> None:
    markdown = invoke("diff", old, new)
    as_json = invoke("diff", old, new, "--json")
    report = json.loads(as_json.output)
    assert (report["old"]["revision"], report["new"]["revision"]) == (old, new)
    assert report["changes"], "every revision changed something"
    breaking = [c for c in report["changes"] if c["breaking"]]
    assert report["breaking"] == bool(breaking)
    assert report["summary"] == {"changes": len(report["changes"]), "breaking": len(breaking)}
    expected_exit = cli.EXIT_BREAKING if breaking else 0
    assert (markdown.exit_code, as_json.exit_code) == (expected_exit, expected_exit)
    assert markdown.output.startswith(f"# MCP schema diff: {old} -> {new}\n")
    assert f"{len(report['changes'])} changes, {len(breaking)} breaking" in markdown.output
    assert markdown.output.count("- **breaking** (") == len(breaking)
    for change in report["changes"]:
        assert f"`{change['subject']}`" in markdown.output
        assert change["breaking"] == bool(change["breaks"])
    assert invoke("diff", old, new).output == markdown.output, "deterministic"


def test_a_revision_against_itself_has_no_changes() -> None:
    result = invoke("diff", "2025-06-18", "2025-06-18")
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().endswith("No changes.")
    as_json = json.loads(invoke("diff", "latest", "2026-07-28", "--json").output)
    assert (as_json["changes"], as_json["breaking"]) == ([], False)


def test_2024_11_05_to_2025_03_26_adds_without_breaking() -> None:
    report = report_of("2024-11-05", "2025-03-26")
    assert not report.breaking
    find(report, "capabilities", "server", "capability added", "completions")
    find(report, "types", "AudioContent", "type added")
    find(report, "methods", "tools/call", "result field union member added", "content[]")
    find(report, "methods", "notifications/progress", "params field added (optional)", "message")
    assert (
        find(
            report, "signatures", "Client.send_progress", "argument added (optional)", "message"
        ).after
        == "string"
    )


def test_2025_03_26_to_2025_06_18_adds_elicitation_and_structured_output() -> None:
    report = report_of("2025-03-26", "2025-06-18")
    find(report, "methods", "elicitation/create", "request added")
    find(report, "methods", "tools/call", "result field added (optional)", "structuredContent")
    find(report, "signatures", "ClientHandlers.elicit", "method added")
    removed = find(
        report, "methods", "completion/complete", "params field union member removed", "ref"
    )
    assert removed.before == "ResourceReference" and removed.breaks == ("calling code",)


def test_2025_06_18_to_2025_11_25_tasks_and_their_signatures() -> None:
    report = report_of(*README_PAIR)
    for method in ("tasks/get", "tasks/result", "tasks/cancel", "tasks/list"):
        assert not find(report, "methods", method, "request added").breaking
    find(report, "methods", "notifications/tasks/status", "notification added")
    assert not find(
        report, "methods", "tools/call", "params field added (optional)", "task"
    ).breaking
    widened = find(report, "signatures", "ServerHandlers.call_tool", "returns")
    assert widened.after == "models.CallToolResult | models.CreateTaskResult"
    assert not widened.breaking, "a handler returning CallToolResult still type-checks"
    renamed = find(report, "signatures", "Client.call_tool", "argument type renamed", "meta")
    assert (renamed.before, renamed.after, renamed.breaking) == (
        "RequestParamsMeta",
        "ParamsMeta",
        False,
    )
    params = find(report, "signatures", "ServerHandlers.list_tools", "params")
    assert params.after == "models.PaginatedRequestParams | None"
    assert params.breaks == ("handler code",)
    elicit = find(report, "methods", "elicitation/create", "params retyped")
    assert elicit.breaks == ("handler code", "calling code")
    find(report, "capabilities", "server", "capability added", "tasks.requests.tools.call")
    find(report, "types", "Tool", "field added (optional)", "icons")


def test_2025_11_25_to_2026_07_28_is_the_stateless_era() -> None:
    report = report_of("2025-11-25", "2026-07-28")
    assert report.breaking and (report.old.era, report.new.era) == ("handshake", "stateless")
    removed = find(report, "methods", "initialize", "request removed")
    assert removed.breaks == ("handler code", "calling code")
    find(report, "methods", "server/discover", "request added")
    find(report, "signatures", "ServerHandlers.initialize", "method removed")
    # 2026-07-28 requires ttlMs, but the models default it (as resultType): no handler breaks
    hint = find(report, "methods", "tools/list", "result field added (optional)", "ttlMs")
    assert hint.breaks == ()
    required = find(
        report, "methods", "tools/list", "params field added (required)",
        "_meta.io.modelcontextprotocol/protocolVersion",
    )
    assert required.breaks == ("calling code",)


def test_a_removed_field_breaks_the_code_building_the_model_as_mypy_says(tmp_path: Path) -> None:
    """At 2026-07-28 ``Tool.inputSchema`` lost ``properties`` and ``required``: code that
    builds ``ToolInputSchema(properties=..., required=...)`` fails mypy, so the report says
    it breaks code building it, not only code reading it (issue 30)."""
    report = report_of("2025-11-25", "2026-07-28")
    for item in ("inputSchema.properties", "inputSchema.required"):
        removed = find(report, "types", "Tool", "field removed", item)
        assert removed.breaks == ("code reading it", "code building it")
    built = tmp_path / "build.py"
    built.write_text(
        "from mcp_generated.v2025_11_25 import models as before\n"
        "from mcp_generated.v2026_07_28 import models as after\n"
        "before.ToolInputSchema(properties={'city': {'type': 'string'}}, required=['city'])\n"
        "after.ToolInputSchema(properties={'city': {'type': 'string'}}, required=['city'])\n"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", str(built)],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "MYPYPATH": f"{REPO_ROOT / 'runtime'}{os.pathsep}{REPO_ROOT / 'generated'}"},
    )
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert errors and all(line.startswith(f"{built}:4:") for line in errors), checked.stdout


# what breaks and what does not, on a small schema


def tiny_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(TINY.read_text())
    return document


def tiny_diff(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> tuple[Result, Any]:
    old, new = tmp_path / "old" / "schema.json", tmp_path / "new" / "schema.json"
    document = tiny_document()
    old.parent.mkdir()
    old.write_text(json.dumps(document))
    edited = copy.deepcopy(document)
    edit(edited)
    new.parent.mkdir()
    new.write_text(json.dumps(edited))
    result = invoke("diff", old, new, "--json")
    return result, json.loads(result.output) if result.exit_code in (0, 4) else None


def entries(report: Any, change: str) -> list[dict[str, Any]]:
    return [c for c in report["changes"] if c["change"] == change]


def test_an_added_optional_field_breaks_nothing(tmp_path: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        document["$defs"]["Gadget"]["properties"]["colour"] = {"type": "string"}

    result, report = tiny_diff(tmp_path, edit)
    assert result.exit_code == 0, result.output
    (added,) = entries(report, "field added (optional)")
    assert (added["subject"], added["item"], added["breaking"]) == ("Gadget", "colour", False)
    assert [c["change"] for c in report["changes"]] == ["field added (optional)"]


def test_removed_required_and_retyped_fields_break_their_readers_and_a_removed_one_its_builders(
    tmp_path: Path,
) -> None:
    def edit(document: dict[str, Any]) -> None:
        gadget = document["$defs"]["Gadget"]
        del gadget["properties"]["weight"]
        gadget["properties"]["name"] = {"type": "integer"}
        params = document["$defs"]["ListGadgetsRequest"]["properties"]["params"]
        params["required"] = ["cursor"]

    result, report = tiny_diff(tmp_path, edit)
    assert result.exit_code == cli.EXIT_BREAKING, result.output
    (removed,) = entries(report, "field removed")
    assert (removed["subject"], removed["item"], removed["breaks"]) == (
        "Gadget",
        "weight",
        ["code reading it", "code building it"],  # Gadget(weight=...) no longer type-checks
    )
    (retyped,) = entries(report, "field retyped")
    assert (retyped["before"], retyped["after"]) == ("string", "integer")
    (required,) = entries(report, "params field made required")
    assert (required["subject"], required["breaks"]) == ("gadgets/list", ["calling code"])
    (argument,) = entries(report, "argument made required")
    assert (argument["subject"], argument["item"]) == ("Client.list_gadgets", "cursor")


def test_methods_enum_values_and_capabilities(tmp_path: Path) -> None:
    def edit(document: dict[str, Any]) -> None:
        defs = document["$defs"]
        defs["ClientRequest"]["anyOf"] = [
            b for b in defs["ClientRequest"]["anyOf"] if b["$ref"] != "#/$defs/PingRequest"
        ]
        defs["ServerRequest"]["anyOf"].append({"$ref": "#/$defs/PingRequest"})
        defs["ServerNotification"]["anyOf"] = [defs["ServerNotification"]["anyOf"][0]]
        defs["CreateMessageRequest"]["properties"]["params"]["properties"]["mode"] = {
            "enum": ["fast", "careful"],
            "type": "string",
        }
        del defs["ServerCapabilities"]["properties"]["gadgets"]["properties"]["listChanged"]
        defs["ClientCapabilities"]["properties"]["roots"] = {"type": "object"}

    result, report = tiny_diff(tmp_path, edit)
    assert result.exit_code == cli.EXIT_BREAKING
    (direction,) = entries(report, "direction changed")
    assert (direction["subject"], direction["before"], direction["after"]) == (
        "ping",
        "both",
        "server->client",
    )
    (gone,) = entries(report, "notification removed")
    assert gone["subject"] == "notifications/gadgets/list_changed" and gone["breaking"]
    (capability,) = entries(report, "capability removed")
    assert (capability["subject"], capability["item"]) == ("server", "gadgets.listChanged")
    (added,) = entries(report, "capability added")
    assert (added["subject"], added["item"], added["breaking"]) == ("client", "roots", False)
    handlers = {c["subject"] for c in entries(report, "method removed")}
    assert {"ServerHandlers.ping", "ClientHandlers.on_gadget_list_changed"} <= handlers

    def change_values(document: dict[str, Any]) -> None:
        change_values_base(document)
        mode = document["$defs"]["CreateMessageRequest"]["properties"]["params"]["properties"]
        mode["mode"]["enum"] = ["fast", "thorough"]

    def change_values_base(document: dict[str, Any]) -> None:
        params = document["$defs"]["CreateMessageRequest"]["properties"]["params"]
        params["properties"]["mode"] = {"enum": ["fast", "careful"], "type": "string"}

    old, new = tmp_path / "e1" / "schema.json", tmp_path / "e2" / "schema.json"
    for path, edit_it in ((old, change_values_base), (new, change_values)):
        document = tiny_document()
        edit_it(document)
        path.parent.mkdir()
        path.write_text(json.dumps(document))
    values = json.loads(invoke("diff", old, new, "--json").output)["changes"]
    kinds = {(c["change"], c["item"], c["breaking"]) for c in values if c["section"] == "methods"}
    assert kinds == {
        ("params field enum value added", 'mode = "thorough"', False),
        ("params field enum value removed", 'mode = "careful"', True),
    }


# sides given as schema files and vendored folders


def test_a_vendored_folder_is_compared_as_the_schema_it_records(
    tmp_path: Path, generate_revision: Callable[[str], GeneratedPackage]
) -> None:
    vendored = tmp_path / "vendor" / "mcp_old"
    write_tree(generate_revision("2025-06-18").files, vendored)
    by_folder = json.loads(invoke("diff", vendored, "2025-11-25", "--json").output)
    by_name = json.loads(invoke("diff", "2025-06-18", "2025-11-25", "--json").output)
    assert by_folder["old"]["label"] == f"{vendored} (2025-06-18)"
    assert by_folder["changes"] == by_name["changes"]
    committed = REPO_ROOT / "generated" / "mcp_generated" / "v2025_06_18"
    assert json.loads(invoke("diff", committed, "2025-11-25", "--json").output)["changes"] == (
        by_name["changes"]
    )


def test_a_schema_file_of_a_pinned_revision_is_that_revision(spec_dir: Path) -> None:
    result = json.loads(
        invoke("diff", spec_dir / "2025-06-18" / "schema.json", "2025-06-18", "--json").output
    )
    assert result["old"]["revision"] == "2025-06-18" and result["changes"] == []


def test_a_folder_from_an_unpinned_schema_asks_for_the_schema_file(tmp_path: Path) -> None:
    vendored = tmp_path / "vendor"
    assert invoke("--schema", TINY, "--version", "2099-01-01", "--out", vendored).exit_code == 0
    result = invoke("diff", vendored, "2025-06-18")
    assert result.exit_code == 2
    assert "unpinned schema of revision 2099-01-01" in result.output
    assert "fix: pass that schema file instead of the folder" in result.output


@pytest.mark.parametrize("argument", ["nowhere/schema.json", "1999-01-01"])
def test_an_unknown_side_is_bad_input(argument: str) -> None:
    result = invoke("diff", argument, "2025-06-18")
    assert result.exit_code == 2, result.output
    assert "error: " in result.output and "Traceback" not in result.output


def test_a_folder_that_is_no_generated_package_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("X = 1\n")
    result = invoke("diff", tmp_path / "pkg", "2025-06-18")
    assert result.exit_code == 2
    assert "records no PROTOCOL_VERSION and SCHEMA_SHA256" in result.output


# the report's view of generated signatures is the generated code's


def generated_signatures(revision: str) -> dict[str, tuple[str, str, dict[str, bool] | None]]:
    """``Class.method`` -> (params annotation, return annotation, keyword arguments)."""
    folder = REPO_ROOT / "generated" / "mcp_generated" / f"v{revision.replace('-', '_')}"
    found: dict[str, tuple[str, str, dict[str, bool] | None]] = {}
    for module in ("client.py", "server.py"):
        for node in ast.parse((folder / module).read_text()).body:
            if not isinstance(node, ast.ClassDef):
                continue
            for method in node.body:
                if not isinstance(method, ast.AsyncFunctionDef):
                    continue
                args = method.args
                returns = ast.unparse(method.returns) if method.returns else ""
                params = next((a for a in args.args if a.arg == "params"), None)
                annotation = (
                    ast.unparse(params.annotation) if params and params.annotation else "None"
                )
                keywords = {  # (on_progress is the runtime's, beside the params' fields)
                    a.arg: d is None
                    for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
                    if a.arg != "on_progress"
                }
                found[f"{node.name}.{method.name}"] = (
                    annotation,
                    returns,
                    keywords if not params else None,
                )
    return found


@pytest.mark.parametrize("revision", RELEASED)
def test_signatures_match_the_generated_stubs(revision: str) -> None:
    side: Side = load_side(revision, load_pins(), source())
    ours = signatures(side)
    generated = generated_signatures(revision)
    assert sorted(ours) == sorted(generated)
    for name, signature in ours.items():
        annotation, returns, keywords = generated[name]
        assert " | ".join(signature.returns) == returns, name
        if name.split(".")[0].endswith("Handlers") or signature.arguments is None:
            assert signature.params == annotation, name
        else:
            assert signature.arguments is not None and keywords is not None
            assert {k: v.required for k, v in signature.arguments.items()} == keywords, name


def test_side_of_a_loaded_schema_keeps_its_label(offline_source: SchemaSource) -> None:
    from typedmcp_codegen.load import load_schema

    schema = load_schema("2025-03-26", load_pins(), offline_source)
    side = side_of(schema, "mine")
    assert (side.label, side.revision, side.era) == ("mine", "2025-03-26", "handshake")


# the documentation shows the 2025-06-18 -> 2025-11-25 report as the command prints it


def test_the_docs_show_the_current_report() -> None:
    page = (REPO_ROOT / "docs" / "reference" / "diff-example.md").read_text(encoding="utf-8")
    begin = "<!-- diff 2025-06-18 2025-11-25 -->\n"
    end = "<!-- end of diff -->"
    assert begin in page, "docs/reference/diff-example.md embeds the report between these markers"
    embedded = page.split(begin, 1)[1].split(end, 1)[0]
    printed = invoke("diff", *README_PAIR).output
    # embedded as a fenced block under a collapsed <details>
    assert printed in embedded, "refresh it: mcp-codegen diff 2025-06-18 2025-11-25"
