"""The generator's modules form a DAG that follows the pipeline.

Imports are read with ``ast`` (top-level and deferred ones inside functions alike), so a
cycle hidden behind a function-level import still fails. ``import_graph`` and
``find_cycles`` take any package folder, so the same check can cover the runtime.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from conftest import REPO_ROOT

GENERATOR = REPO_ROOT / "codegen" / "mcp_codegen"
# Pipeline order: a module may import only modules of an earlier (or the same) layer.
PIPELINE_LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "names"}),
    frozenset({"pins", "document"}),
    frozenset({"load"}),
    frozenset({"analyse"}),
    frozenset({"rewrite"}),
    frozenset({"models"}),
    frozenset({"render"}),
    frozenset({"format"}),
    frozenset({"output"}),
    frozenset({"generate", "diff"}),
    frozenset({"cli"}),
    frozenset({"__main__"}),
)


def import_graph(package_dir: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports (by short name).

    Sub-packages are left out (``runtime`` is its own layer); ``from . import x`` and
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
    cycles = find_cycles(import_graph(GENERATOR, "mcp_codegen"))
    assert cycles == [], " ; ".join(" -> ".join(cycle) for cycle in cycles)


def test_generator_modules_follow_the_pipeline() -> None:
    layer_of = {name: index for index, layer in enumerate(PIPELINE_LAYERS) for name in layer}
    graph = import_graph(GENERATOR, "mcp_codegen")
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
    so the runtime can live in its own distribution."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [
        node.module or ""
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (
            (node.level == 1 and (node.module or "").split(".")[0] == "runtime")
            or (node.level == 0 and (node.module or "").startswith("mcp_codegen.runtime"))
        )
    ]
    assert imported == []
