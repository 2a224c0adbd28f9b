"""The generator's modules form a DAG that follows the pipeline, and the runtime's modules
form a DAG that follows its layers.

Imports are read with ``ast`` (top-level, deferred ones inside functions and
``TYPE_CHECKING`` ones alike), so a cycle hidden behind a function-level import still fails.
The runtime (``runtime/typedmcp``) is grouped in subpackages by layer; a module may import
only from its own layer or the layers below it:

    engine < protocol < stateless < transports < state < auth < app < face (connecting, serving, testing, pytest_plugin, __init__) < host
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO_ROOT

GENERATOR = REPO_ROOT / "codegen" / "typedmcp_codegen"
RUNTIME = REPO_ROOT / "runtime" / "typedmcp"
# Pipeline order: a module may import only modules of an earlier (or the same) layer.
PIPELINE_LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "names"}),
    frozenset({"pins", "document", "escape"}),
    frozenset({"load"}),
    frozenset({"analyse", "toolset", "extension_pins"}),
    frozenset({"rewrite"}),
    frozenset({"models"}),
    frozenset({"render"}),
    frozenset({"format"}),
    frozenset({"output"}),
    frozenset({"generate", "diff", "tools_generate", "tools_diff", "extension", "extension_diff"}),
    frozenset({"tools_command"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)


def import_graph(package_dir: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (by short name).

    Sub-packages are left out (``runtime`` is only the old import path's notice); ``from . import x`` and
    ``from .x import y`` and ``import package.x`` all count, at any depth of the module.
    """
    modules = {path.stem: path for path in package_dir.glob("*.py") if path.stem != "__init__"}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 1:
                    base = node.module or ""
                    targets = [base] if base else [alias.name for alias in node.names]
                elif node.level == 0 and node.module and node.module.startswith(f"{package}."):
                    targets = [node.module.removeprefix(f"{package}.")]
            elif isinstance(node, ast.Import):
                targets = [
                    alias.name.removeprefix(f"{package}.")
                    for alias in node.names
                    if alias.name.startswith(f"{package}.")
                ]
            for target in targets:
                head = target.split(".", 1)[0]
                if head in modules and head != name:
                    graph[name].add(head)
    return graph


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle found by a depth-first search (each reported once)."""
    cycles: list[list[str]] = []
    seen: set[frozenset[str]] = set()

    def visit(node: str, path: list[str]) -> None:
        for target in sorted(graph.get(node, ())):
            if target in path:
                cycle = [*path[path.index(target) :], target]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    cycles.append(cycle)
            elif len(path) < len(graph):
                visit(target, [*path, target])

    for start in sorted(graph):
        visit(start, [start])
    return cycles


def test_find_cycles_sees_a_deferred_import(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import thing\n")
    (package / "b.py").write_text("def f():\n    from .a import other\n    return other\n")
    (package / "c.py").write_text("import pkg.a\n")
    graph = import_graph(package, "pkg")
    assert graph == {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert find_cycles(graph) == [["a", "b", "a"]]


def test_generator_modules_have_no_import_cycle() -> None:
    cycles = find_cycles(import_graph(GENERATOR, "typedmcp_codegen"))
    assert cycles == [], " ; ".join(" -> ".join(cycle) for cycle in cycles)


def test_generator_modules_follow_the_pipeline() -> None:
    layer_of = {name: index for index, layer in enumerate(PIPELINE_LAYERS) for name in layer}
    graph = import_graph(GENERATOR, "typedmcp_codegen")
    unplaced = sorted(set(graph) - set(layer_of))
    assert not unplaced, f"place these modules in PIPELINE_LAYERS: {unplaced}"
    backwards = [
        f"{module} imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of[target] > layer_of[module]
    ]
    assert backwards == []


@pytest.mark.parametrize("path", sorted(GENERATOR.glob("*.py")), ids=lambda p: p.name)
def test_generator_does_not_import_the_runtime(path: Path) -> None:
    """Generated code names the runtime package; the generator itself never imports it,
    so the runtime lives in its own distribution."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [
        name
        for node in ast.walk(tree)
        for name in (
            [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0
            else ["." + (node.module or "")] if isinstance(node, ast.ImportFrom)
            else [alias.name for alias in node.names] if isinstance(node, ast.Import)
            else []
        )
        if name.split(".")[0] == "typedmcp"
        or name.startswith(("typedmcp", ".runtime"))
    ]
    assert imported == []


# -- the runtime ------------------------------------------------------------------------------

#: The runtime's layers, lowest first: the first part of a module's dotted name places it
#: (the face: the launchers and the package itself).
RUNTIME_LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"engine"}),
    frozenset({"protocol"}),
    frozenset({"stateless"}),
    frozenset({"transports"}),
    frozenset({"state"}),
    frozenset({"auth"}),
    frozenset({"app"}),
    frozenset({"connecting", "serving", "testing", "pytest_plugin", ""}),
    frozenset({"host", "tool_snapshot", "cli"}),
)
#: The generator and what only it needs: the runtime's distribution has none of them.
GENERATOR_ONLY = frozenset({"typedmcp_codegen", "jinja2", "black", "datamodel_code_generator", "click"})
#: Lines a runtime module may have before a second idea in it should move out.
#: The runtime modules generated code imports: the stable, public seam.
GENERATED_CODE_IMPORTS = frozenset(
    {
        "typedmcp.protocol.compat",
        "typedmcp.protocol.model",
        "typedmcp.protocol.spec",
        "typedmcp.protocol.stubs",
    }
)


def runtime_modules(root: Path = RUNTIME) -> dict[str, Path]:
    """Dotted name under the package (``protocol.client``; a package by its folder, the
    root as ``""``) -> file."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def package_import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports, at any depth (deferred and
    ``TYPE_CHECKING`` imports included). ``from .x import name`` counts as an import of
    ``x`` (or of ``x.name`` when that is a module)."""
    modules = runtime_modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}

    def known(dotted: str) -> str | None:
        while dotted not in modules and "." in dotted:
            dotted = dotted.rsplit(".", 1)[0]
        return dotted if dotted in modules else None

    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        here = name.split(".") if name else []
        home = here if is_package else here[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.level:
                base = home[: len(home) - (node.level - 1)] if node.level > 1 else home
                prefix = ".".join([*base, *([node.module] if node.module else [])])
                targets = [f"{prefix}.{alias.name}".lstrip(".") for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
                prefix = (node.module or "").removeprefix(package).lstrip(".")
                targets = [f"{prefix}.{alias.name}".lstrip(".") for alias in node.names]
            elif isinstance(node, ast.Import):
                targets = [
                    alias.name.removeprefix(package).lstrip(".")
                    for alias in node.names
                    if alias.name.split(".")[0] == package
                ]
            for target in targets:
                found = known(target)
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def foreign_imports(path: Path) -> set[str]:
    """The top-level names of every package a module imports absolutely."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found


def layer_of(module: str) -> int:
    head = module.split(".")[0]
    for index, layer in enumerate(RUNTIME_LAYERS):
        if head in layer:
            return index
    raise AssertionError(f"place runtime module {module!r} in RUNTIME_LAYERS")


def test_package_import_graph_reads_nested_and_deferred_imports(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    for folder in (root, root / "low", root / "high"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (root / "low" / "a.py").write_text("from . import b\nfrom .b import thing\n")
    (root / "low" / "b.py").write_text("def f():\n    from ..high.c import other\n")
    (root / "high" / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.low.a import x\n"
    )
    (root / "face.py").write_text("import pkg.high.c\nfrom .low import a\n")
    graph = package_import_graph(root, "pkg")
    assert graph["low.a"] == {"low.b"}
    assert graph["low.b"] == {"high.c"}
    assert graph["high.c"] == {"low.a"}
    assert graph["face"] == {"high.c", "low.a"}
    assert find_cycles(graph) == [["high.c", "low.a", "low.b", "high.c"]]


def test_runtime_modules_have_no_import_cycle() -> None:
    cycles = find_cycles(package_import_graph(RUNTIME, "typedmcp"))
    assert cycles == [], " ; ".join(" -> ".join(cycle) for cycle in cycles)


def test_runtime_modules_import_only_downwards() -> None:
    """engine < protocol < stateless < transports < auth < face < host: no module imports
    from a layer above its own (so the launchers are a thin face over both the transports
    and the typed seam)."""
    graph = package_import_graph(RUNTIME, "typedmcp")
    for module in graph:
        layer_of(module)  # every module is placed
    upwards = [
        f"{module or '__init__'} ({RUNTIME_LAYERS[layer_of(module)]}) imports {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if layer_of(target) > layer_of(module)
    ]
    assert upwards == []


def test_the_layers_are_used_as_declared() -> None:
    """Each layer holds modules (a renamed folder cannot empty one unnoticed) and the
    launchers do sit above both the transports and the typed seam."""
    graph = package_import_graph(RUNTIME, "typedmcp")
    for layer in RUNTIME_LAYERS:
        assert any(module.split(".")[0] in layer for module in graph), layer
    assert {"transports.stdio", "protocol.client"} <= graph["connecting"]
    assert {"transports.http_server", "transports.stdio"} <= graph["serving"]


@pytest.mark.parametrize("path", sorted(RUNTIME.rglob("*.py")), ids=lambda p: p.relative_to(RUNTIME).as_posix())
def test_runtime_never_imports_the_generator(path: Path) -> None:
    """The runtime's distribution (pydantic, jsonschema) has nothing of the generator."""
    assert foreign_imports(path) & GENERATOR_ONLY == set()


def test_generated_code_imports_only_the_runtime_seam() -> None:
    """Generated packages (committed, and the golden fixture) import only the runtime's
    stable modules, so the runtime can reorganise everything else."""
    roots = [REPO_ROOT / "generated" / "mcp_generated", REPO_ROOT / "tests" / "fixtures" / "golden"]
    imported: set[str] = set()
    for root in roots:
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("typedmcp"):
                    imported.add(node.module or "")
                elif isinstance(node, ast.Import):
                    imported.update(a.name for a in node.names if a.name.startswith("typedmcp"))
    assert imported and imported <= GENERATED_CODE_IMPORTS, imported
