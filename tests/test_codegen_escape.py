"""Outside text never becomes code (issue 29): what a server or a schema sends (names,
versions, descriptions, ``$ref``s, defaults, enum values) reaches generated source only
through ``typedmcp_codegen.escape``, and no such text makes a generated package run anything
on import. Hostile manifests and schemas carry payloads that would create a marker file if
they ever ran; the packages are imported in a child process and their syntax trees compared
with those of benign input. Tool module names are unique against each other and against the
names the package itself defines.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jinja2
import pytest
from conftest import FIXTURES, RELEASED, REPO_ROOT
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from typedmcp_codegen.errors import CodegenError
from typedmcp_codegen.escape import comment, docstring, guard, identifier, string_literal
from typedmcp_codegen.generate import generate_package
from typedmcp_codegen.load import LoadedSchema, SchemaSource, load_schema
from typedmcp_codegen.models import checked_model_code
from typedmcp_codegen.pins import load_pins
from typedmcp_codegen.render import _environment
from typedmcp_codegen.tools_generate import generate_tools_package
from typedmcp_codegen.toolset import PACKAGE_NAMES, analyse_tools, module_names

TOOLS_FIXTURE = FIXTURES / "tools" / "realworld.json"
TINY = FIXTURES / "schemas" / "tiny" / "schema.json"
#: The characters the issue names, each one that could end a comment, docstring or literal.
NASTY = ['\n', '\r', '\u2028', '\x00', '"', "'", '"""', "'''", '\\', '\ud800', '\x85', '\x0c']


def payloads(marker: Path) -> list[str]:
    """Texts that create ``marker`` if any part of them ever runs as code."""
    run = f'__import__("pathlib").Path({str(marker)!r}).touch()'
    return [
        f"x\n{run}\n#",  # ends a comment line
        f"x\r{run}\r#",
        f"x\u2028{run}\u2028#",
        f'x"""; {run}; """',  # ends a docstring
        f"x'''; {run}; '''",
        f'x"; {run}; "',  # ends a string literal
        f"x'; {run}; '",
        f'x\\"; {run}; #\\',  # a backslash before the quote
        f"x\x00\n{run}\n",
        f'"""; import os; os.system("touch {marker}")  # \n',
    ]


def hostile_manifest(p: str) -> dict[str, Any]:
    """Every string of a snapshot set to ``p``: server, revision, tool names, docs, schemas."""
    return {
        "protocolVersion": p,
        "serverInfo": {"name": p, "version": p},
        "tools": [
            {"name": p, "title": p, "description": p, "annotations": {"title": p, p: p},
             "inputSchema": {
                 "type": "object", "title": p, "description": p,
                 "properties": {
                     p: {"type": "string", "description": p, "title": p, "default": p,
                         "enum": [p, "b"], "examples": [p]},
                     "d": {"$ref": "#/$defs/" + p},
                 },
                 "required": [p],
                 "$defs": {p: {"type": "object", "description": p,
                               "properties": {"z": {"type": "string", "description": p}}}},
             },
             "outputSchema": {"type": "object", "description": p,
                              "properties": {p: {"type": "string", "description": p}}}},
            # names the models stage takes: the descriptions, defaults and enums reach its code
            {"name": "plain", "title": p, "description": p,
             "inputSchema": {
                 "type": "object", "description": p, "title": p,
                 "properties": {
                     "a": {"type": "string", "description": p, "title": p, "default": p, "enum": [p, "b"]},
                     "c": {"type": "string", "const": p, "examples": [p]},
                     "m": {"$ref": "#/$defs/M"},
                 },
                 "$defs": {"M": {"type": "object", "description": p, "title": p,
                                 "properties": {"k": {"type": "integer", "description": p}}}},
             },
             "outputSchema": {"type": "object", "description": p,
                              "properties": {"r": {"type": "string", "description": p, "default": p}}}},
            {"name": "outside", "description": p,
             "inputSchema": {"type": "object", "properties": {"x": {"$ref": "https://example.invalid/" + p}}}},
        ],
    }


def import_time_shape(source: str) -> tuple[set[str], set[str]]:
    """What a module does when imported: the kinds of its top-level and class-level
    statements, and every call outside a function body (``X.model_rebuild`` as one)."""
    tree = ast.parse(source)
    kinds = {type(node).__name__ for node in tree.body}
    kinds |= {f"class:{type(s).__name__}" for node in tree.body if isinstance(node, ast.ClassDef)
              for s in node.body}
    calls: set[str] = set()
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            pending.extend(getattr(node, "decorator_list", []))
            continue  # runs when called, not on import
        if isinstance(node, ast.Call):
            func = node.func
            named = isinstance(func, ast.Attribute) and func.attr == "model_rebuild"
            calls.add("*.model_rebuild" if named else ast.unparse(func))
        pending.extend(ast.iter_child_nodes(node))
    return kinds, calls


def package_shape(files: dict[str, str]) -> tuple[set[str], set[str]]:
    kinds: set[str] = set()
    calls: set[str] = set()
    for path, text in files.items():
        if path.endswith(".py"):
            found_kinds, found_calls = import_time_shape(text)
            kinds |= found_kinds
            calls |= found_calls
    return kinds, calls


@pytest.fixture(scope="module")
def benign_shape() -> tuple[set[str], set[str]]:
    """The statements and import-time calls the templates write for benign snapshots."""
    kinds: set[str] = set()
    calls: set[str] = set()
    for manifest in (json.loads(TOOLS_FIXTURE.read_text()), hostile_manifest("benign")):
        files, _ = generate_tools_package(analyse_tools(manifest), load_pins(), workers=1)
        found_kinds, found_calls = package_shape(files)
        kinds |= found_kinds
        calls |= found_calls
    return kinds, calls


def assert_only_template_statements(files: dict[str, str], benign: tuple[set[str], set[str]]) -> None:
    kinds, calls = package_shape(files)
    assert kinds <= benign[0], f"statements no template writes: {kinds - benign[0]}"
    assert calls <= benign[1], f"calls on import no template writes: {calls - benign[1]}"


def import_everything(root: Path, package: str, marker: Path) -> None:
    """Import the package and each of its modules (each model too) in a child process."""
    script = f"""
import importlib, pkgutil, sys
sys.path.insert(0, {str(root)!r})
package = importlib.import_module({package!r})
for found in pkgutil.walk_packages(package.__path__, {package!r} + "."):
    importlib.import_module(found.name)
models = sys.modules.get({package!r} + ".models")
for name in getattr(models, "__all__", ()):
    getattr(models, name)
print("imported")
"""
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=root, check=False)
    assert ran.returncode == 0 and "imported" in ran.stdout, ran.stderr[-3000:]
    assert not marker.exists(), "importing the generated package ran code from its input"


def write(files: dict[str, str], folder: Path) -> None:
    for path, text in files.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


# --- the escaping functions ---------------------------------------------------------------

@given(st.text())
@example("".join(NASTY))
@example('"')
@example('x\\')
@settings(max_examples=300)
def test_a_string_literal_reads_back_as_the_text_on_one_line(text: str) -> None:
    literal = string_literal(text)
    assert ast.literal_eval(literal) == text
    assert len(f"x = {literal}".splitlines()) == 1 and literal.isprintable()
    assert isinstance(ast.parse(f"x = {literal}").body[0], ast.Assign)


@given(st.text())
@example("".join(NASTY))
@example('"')
@example('""')
@example('a\\')
@example('\\"')  # found by Hypothesis: an escaped-looking final quote
@settings(max_examples=300)
def test_a_docstring_reads_back_as_the_text_and_stays_one_string(text: str) -> None:
    body = docstring(text)
    tree = ast.parse(f'def f():\n    """{body}"""\n')
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef) and len(function.body) == 1
    assert ast.get_docstring(function, clean=False) == text
    assert all(line.isprintable() or "\t" in line for line in body.split("\n"))


@given(st.text())
@example("".join(NASTY))
@settings(max_examples=300)
def test_a_comment_stays_one_comment_line(text: str) -> None:
    line = "# " + comment(text)
    assert len(line.splitlines()) == 1 and line.isprintable()
    assert ast.parse(line + "\n").body == []


def test_an_identifier_must_already_be_a_python_name() -> None:
    assert identifier("get_sum") == "get_sum"
    for bad in ("class", "a b", "x; import os", "a\nb", "", "1a", "é"):
        with pytest.raises(CodegenError, match="cannot be a name"):
            identifier(bad)


def test_a_template_given_outside_text_without_a_filter_stops_with_a_clear_error() -> None:
    template = _environment().from_string('NAME = "{{ value }}"  # {{ value }}\n')
    for hostile in ('a"; import os; "', "a\nimport os", "x; exec(chr(1))", "a'b", "a\\b"):
        with pytest.raises(CodegenError, match="unescaped") as caught:
            template.render(value=hostile)
        assert "typedmcp_codegen.escape" in caught.value.fix
    assert template.render(value="get_sum-2.0/x") == 'NAME = "get_sum-2.0/x"  # get_sum-2.0/x\n'
    filtered = _environment().from_string("NAME = {{ value | literal }}  # {{ value | comment }}\n")
    assert ast.literal_eval(filtered.render(value='a"\n').split(" = ")[1].split("  #")[0]) == 'a"\n'
    assert guard(3) == 3 and guard(None) is None
    with pytest.raises(CodegenError):
        guard(object())
    assert isinstance(_environment().undefined, type) and _environment().finalize is guard
    with pytest.raises(jinja2.UndefinedError):
        _environment().from_string("{{ missing }}").render()


def test_model_code_with_anything_but_models_is_refused() -> None:
    fine = 'from pydantic import Field\nclass A(MCPModel):\n    """d"""\n    x: int = Field(default=1, description="y")\nA.model_rebuild()\n__all__ = ["A"]\n'
    assert checked_model_code(fine) == fine
    for bad, what in (
        ('import os\n', "Import"),
        ('from os import system\n', "imports from os"),
        ('__import__("os")\n', "top-level Expr"),
        ('class A(MCPModel):\n    x: int = Field(default=__import__("os"))\n', "passes __import__"),
        ('class A(MCPModel):\n    x: int = print(1)\n', "calls print"),
        ('class A(MCPModel):\n    x: int = Field(default_factory=exec)\n', "passes exec"),
        ('class A(MCPModel):\n    x: int = Field(default=os.environ)\n', "passes os.environ"),
        ('class A(MCPModel):\n    def f(self): pass\n', "FunctionDef"),
        ('@dataclass\nclass A:\n    pass\n', "decorators"),
        ('X = (lambda: 1)\n', "Lambda"),
        ('B.model_rebuild()\n', "top-level Expr"),
    ):
        with pytest.raises(ValueError, match=what):
            checked_model_code(bad)


# --- mcp-codegen tools ------------------------------------------------------------------------

@pytest.mark.parametrize("index", range(len(payloads(Path("m")))))
def test_a_hostile_snapshot_generates_a_package_whose_import_runs_nothing(
    index: int, tmp_path: Path, benign_shape: tuple[set[str], set[str]]
) -> None:
    marker = tmp_path / "ran"
    p = payloads(marker)[index]
    manifest_file = tmp_path / "hostile.json"
    manifest_file.write_text(json.dumps(hostile_manifest(p)), encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, "-m", "typedmcp_codegen", "tools", "--out", str(tmp_path / "evil_tools"),
         "--manifest", str(manifest_file)], capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stderr
    warnings = ran.stderr.splitlines()  # one printable line each, the server's text in them too
    assert len(warnings) == ran.stderr.count("warning: tool ") >= 2
    assert all(line.isprintable() for line in warnings), warnings
    package = tmp_path / "evil_tools"
    files = {path.name: path.read_text(encoding="utf-8") for path in package.iterdir() if path.is_file()}
    assert_only_template_statements(files, benign_shape)
    for name, text in files.items():
        if name.endswith(".py"):
            assert [line.startswith("#") for line in text.splitlines()[:4]] == [True] * 3 + [False], name
    import_everything(tmp_path, "evil_tools", marker)
    # the text itself survives, exactly, where it is data
    names = {}
    for name, text in files.items():
        for node in ast.parse(text).body if name.endswith(".py") else ():
            if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "NAME":
                names[name] = ast.literal_eval(node.value)
    assert sorted(names.values()) == sorted([p, "plain", "outside"])
    doc = ast.get_docstring(ast.parse(files["__init__.py"]), clean=False) or ""

    def lines(text: str) -> list[str]:  # black strips the ends of a docstring's lines
        return [line.rstrip() for line in text.split("\n")]

    expected = lines(f"Typed calls to the tools of {p}: ``Tools(client)``.")
    assert lines(doc)[: len(expected)] == expected
    plain = ast.parse(files["plain.py"])
    assert any(isinstance(node, ast.ClassDef) and node.name == "Params" for node in plain.body), \
        "the tool with plain names went through the models stage"


@given(
    server=st.text(), version=st.text(), revision=st.text(), tool=st.text(min_size=1),
    description=st.text(), key=st.text(min_size=1), value=st.text(), ref=st.text(),
)
@example(server="".join(NASTY), version="\x00", revision='"""', tool="\n", description="\\",
         key='"', value="'''", ref="\u2028")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_text_in_a_snapshot_writes_code_the_templates_do_not(
    server: str, version: str, revision: str, tool: str, description: str, key: str, value: str,
    ref: str, benign_shape: tuple[set[str], set[str]],
) -> None:
    manifest = {
        "protocolVersion": revision,
        "serverInfo": {"name": server, "version": version},
        "tools": [
            {"name": tool, "title": value, "description": description, "annotations": {key: value},
             "inputSchema": {"type": "object", "description": description, "properties": {
                 key: {"type": "string", "description": description, "default": value, "enum": [value]},
                 "r": {"$ref": ref}}},
             "outputSchema": {"type": "object", "properties": {key: {"type": "string", "title": value}}}},
            {"name": tool + "_", "description": value, "inputSchema": {"type": "object", "properties": {
                "a": {"type": "string", "description": value, "default": description}}}},
        ],
    }
    files, _ = generate_tools_package(analyse_tools(manifest), load_pins(), workers=1)
    assert_only_template_statements(files, benign_shape)
    names = sorted(ast.literal_eval(node.value) for path, text in files.items() if path.endswith(".py")
                   for node in ast.parse(text).body
                   if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "NAME")
    assert names == sorted([tool, tool + "_"])


# --- the protocol packages ----------------------------------------------------------------------

def hostile_schema(p: str, source: Path = TINY) -> dict[str, Any]:
    """A schema (the tiny fixture's) with every description and title set to ``p``."""
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {key: p if key in ("description", "title") and isinstance(value, str) else walk(value)
                    for key, value in node.items()}
        return [walk(item) for item in node] if isinstance(node, list) else node
    hostile: dict[str, Any] = walk(json.loads(source.read_text()))
    return hostile


@pytest.mark.parametrize("index", range(len(payloads(Path("m")))))
def test_a_schema_with_hostile_descriptions_generates_a_package_whose_import_runs_nothing(
    index: int, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    p = payloads(marker)[index]
    schema_file = tmp_path / "schema.json"
    schema_file.write_text(json.dumps(hostile_schema(p)), encoding="utf-8")
    files = generate_package(load_schema("2099-01-01", load_pins(), SchemaSource(schema_file=schema_file)), None).files
    benign = generate_package(load_schema("2099-01-01", load_pins(), SchemaSource(schema_file=TINY)), None).files
    assert sorted(files) == sorted(benign)
    for path in files:
        if path.endswith(".py"):
            assert import_time_shape(files[path]) == import_time_shape(benign[path]), path
    write(files, tmp_path / "hostile_mcp")
    import_everything(tmp_path, "hostile_mcp", marker)
    described = [node for path, text in files.items() if path.startswith("models/")
                 for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ClassDef)]
    assert any(ast.get_docstring(node, clean=False) is not None for node in described)


@pytest.mark.parametrize("revision", RELEASED)
def test_every_revision_with_hostile_descriptions_imports_without_running_anything(
    revision: str, tmp_path: Path, spec_dir: Path
) -> None:
    marker = tmp_path / "ran"
    p = "".join(payloads(marker))
    pins = load_pins()
    official = load_schema(revision, pins, SchemaSource(schema_dir=spec_dir))
    hostile = LoadedSchema(official.revision, official.sha256, True, official.origin,
                           hostile_schema(p, spec_dir / revision / "schema.json"))
    files = generate_package(hostile, pins.find(revision)).files  # (past the pin's sha256 check)
    benign = generate_package(official, pins.find(revision)).files
    assert sorted(files) == sorted(benign)
    for path in files:
        if path.endswith(".py"):
            assert import_time_shape(files[path]) == import_time_shape(benign[path]), path
    write(files, tmp_path / "hostile_mcp")
    import_everything(tmp_path, "hostile_mcp", marker)


# --- tool module names ----------------------------------------------------------------------

COLLIDING = ["get-sum", "get_sum", "get_sum_" + hashlib.sha256(b"get-sum").hexdigest()[:8],
             "support", "_support", "Support", "client_of", "overload", "date", "tools", "contract",
             "Foo", "foo", "FOO", "class", "__init__", "Tools"]


def test_module_names_are_unique_against_each_other_and_the_packages_own_names() -> None:
    chosen = module_names(COLLIDING)
    modules = list(chosen.values())
    assert len({m.lower() for m in modules}) == len(COLLIDING)  # case-insensitive file systems too
    for module in modules:
        assert module.isidentifier() and module == module.lower() and not module.startswith("_")
        assert module not in PACKAGE_NAMES and "_" + module not in PACKAGE_NAMES, module
    digest = hashlib.sha256(b"get-sum").hexdigest()
    assert chosen["get_sum"] == "get_sum"
    assert chosen[f"get_sum_{digest[:8]}"] == f"get_sum_{digest[:8]}"  # it is its own name
    assert chosen["get-sum"] == f"get_sum_{digest[:12]}"  # taken: four digits more
    assert chosen["client_of"] == "client_of_" and chosen["overload"] == "overload_"
    assert chosen["class"] == "class_" and chosen["foo"] == "foo"
    for order in itertools.islice(itertools.permutations(COLLIDING), 0, 2000, 97):
        assert module_names(list(order)) == chosen  # the listing order never matters


def test_a_package_of_colliding_tool_names_imports_and_calls_each_tool(tmp_path: Path) -> None:
    manifest = {"serverInfo": {"name": "clash", "version": "1"}, "protocolVersion": "2025-06-18",
                "tools": [{"name": name, "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}}
                          for name in COLLIDING]}
    files, warnings = generate_tools_package(analyse_tools(manifest), load_pins(), workers=1)
    assert not warnings
    assert len([path for path in files if path.endswith(".py")]) == len(COLLIDING) + 3
    write(files, tmp_path / "clash_tools")
    script = f"""
import asyncio, sys
sys.path.insert(0, {str(tmp_path)!r})
import clash_tools
from clash_tools import Tools, contract

class Client:
    def __init__(self): self.calls = []
    async def call_tool(self, *, name, arguments=None):
        self.calls.append((name, arguments))
        return {{"content": [{{"type": "text", "text": "ok"}}]}}

async def main():
    client = Client()
    tools = Tools(client)
    for name, module in sorted(contract.MODULES.items()):
        method = getattr(tools, module.__name__.rpartition(".")[2])
        await method(n=1)
    print(sorted(name for name, _ in client.calls) == sorted(contract.MODULES), len(client.calls))

asyncio.run(main())
"""
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         check=False, cwd=REPO_ROOT)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split() == ["True", str(len(COLLIDING))]


def test_a_suffix_grows_to_the_whole_sha256_and_then_the_clash_is_a_clear_error() -> None:
    digest = hashlib.sha256(b"get-sum").hexdigest()
    squatters = [f"get_sum_{digest[:digits]}" for digits in range(8, 64, 4)]  # 8 .. 60 digits
    chosen = module_names(["get-sum", "get_sum", *squatters])
    assert chosen["get-sum"] == f"get_sum_{digest}"  # the last try: all 64 digits
    assert all(chosen[name] == name for name in squatters)
    with pytest.raises(CodegenError, match="has no free module name"):
        module_names(["get-sum", "get_sum", *squatters, f"get_sum_{digest}"])


def test_check_is_clean_for_a_package_of_colliding_names_and_names_a_renamed_module(tmp_path: Path) -> None:
    def manifest(names: list[str]) -> dict[str, Any]:
        return {"tools": [{"name": name, "inputSchema": {"type": "object"}} for name in names]}

    first = tmp_path / "first.json"
    first.write_text(json.dumps(manifest(COLLIDING[:2])), encoding="utf-8")
    out = tmp_path / "clash_tools"

    def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "typedmcp_codegen", "tools", "--out", str(out), *arguments],
                              capture_output=True, text=True, timeout=300, check=False)

    assert cli("--manifest", str(first)).returncode == 0
    assert cli("--check").returncode == 0  # from the vendored tools.json
    second = tmp_path / "second.json"
    second.write_text(json.dumps(manifest(COLLIDING[:3])), encoding="utf-8")
    stale = cli("--check", "--manifest", str(second))
    digest = hashlib.sha256(b"get-sum").hexdigest()
    assert stale.returncode == 1
    assert "module renamed" in stale.stdout and f"get_sum_{digest[:12]}" in stale.stdout, stale.stdout
