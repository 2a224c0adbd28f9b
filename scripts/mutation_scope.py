"""Cosmic Ray work-db filter for scripts/mutation.sh: keep only the mutations inside the
functions a module's config lists (its security-relevant code), outside annotations (never
evaluated), made by the operators that change a decision (:func:`operator_kept`), and skip
every other one.

The config (scripts/mutation/<name>.toml) names them by qualified name::

    [cosmic-ray.filters.function-filter]
    functions = ["StateSealer.open", "arguments_digest"]

Usage: python scripts/mutation_scope.py CONFIG SESSION   (after ``cosmic-ray init``)
       python scripts/mutation_scope.py --check CONFIG...  (names resolve; no session)
       python scripts/mutation_scope.py --score SESSION     (killed / total, survivors)
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


#: Operators whose mutants run. Cosmic Ray swaps each binary operator for every other one and
#: each comparison for every other one; most of those swaps only make a type error that any
#: test kills, at the cost of a test run each. Kept: the swaps that change a decision
#: (negated and off-by-one comparisons, identity and membership flips, + for -, * for /,
#: | for &); every other operator (not, and/or, True/False, numbers, exceptions, break,
#: loops, decorators) runs whole.
_BINARY_KEPT = ("Add_Sub", "Sub_Add", "Mul_Div", "Div_Mul", "BitOr_BitAnd", "BitAnd_BitOr")
_COMPARISON_KEPT = (
    "Lt_LtE", "Lt_GtE", "LtE_Lt", "LtE_Gt", "Gt_GtE", "Gt_LtE", "GtE_Gt", "GtE_Lt",
    "Eq_NotEq", "NotEq_Eq", "Is_IsNot", "IsNot_Is", "In_NotIn", "NotIn_In",
)


def operator_kept(operator_name: str) -> bool:
    """Whether mutants of ``operator_name`` (e.g. ``core/ReplaceBinaryOperator_Add_Mul``) run."""
    for family, kept in (("core/ReplaceBinaryOperator_", _BINARY_KEPT),
                         ("core/ReplaceComparisonOperator_", _COMPARISON_KEPT)):
        if operator_name.startswith(family):
            return operator_name[len(family):] in kept
    return True


class ScopeError(Exception):
    """A config that cannot be applied (message says what is wrong and how to fix it)."""


def load_scope(config_path: Path) -> tuple[Path, list[str], list[str]]:
    """(module path, function names, tests: files or file::test ids) that ``config_path``
    declares."""
    try:
        document = tomllib.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ScopeError(f"{config_path}: cannot read it as TOML ({error})") from error
    section = document.get("cosmic-ray", {})
    module_path = section.get("module-path")
    if not isinstance(module_path, str):
        raise ScopeError(f"{config_path}: [cosmic-ray] module-path must be one file path")
    functions = section.get("filters", {}).get("function-filter", {}).get("functions")
    if not isinstance(functions, list) or not functions or not all(
        isinstance(name, str) for name in functions
    ):
        raise ScopeError(
            f"{config_path}: [cosmic-ray.filters.function-filter] functions must list the "
            "qualified names (Class.method or function) whose mutations run"
        )
    command = section.get("test-command", "")
    tests = [word for word in command.split() if word.startswith("tests/")]
    if not tests:
        raise ScopeError(f"{config_path}: test-command names no tests/... file to run")
    return Path(module_path), functions, tests


def function_spans(source: str) -> dict[str, tuple[int, int]]:
    """Qualified name -> (first line, last line) of every function and method, decorators
    included (1-based, inclusive)."""
    spans: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    spans[name] = (first, child.end_lineno or child.lineno)
                visit(child, name + ".")

    visit(ast.parse(source), "")
    return spans


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """((line, column), (end line, end column)) of every annotation: with ``from
    __future__ import annotations`` (every runtime module) they are never evaluated, so a
    mutant there changes nothing."""
    spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for node in ast.walk(ast.parse(source)):
        found: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append(node.returns)
        elif isinstance(node, (ast.arg, ast.AnnAssign)):
            found.append(node.annotation)
        for annotation in found:
            if annotation is not None and annotation.end_lineno is not None:
                spans.append(((annotation.lineno, annotation.col_offset),
                              (annotation.end_lineno, annotation.end_col_offset or 0)))
    return spans


def selected_lines(root: Path, config_path: Path) -> tuple[Path, list[tuple[int, int]]]:
    """The module of ``config_path`` and the line spans of its listed functions; every
    listed name and test file must exist."""
    module_path, functions, tests = load_scope(config_path)
    module_file = root / module_path
    if not module_file.is_file():
        raise ScopeError(f"{config_path}: module-path {module_path} does not exist")
    for test in tests:
        test_file, _, test_name = test.partition("::")
        if not (root / test_file).is_file():
            raise ScopeError(f"{config_path}: test file {test_file} does not exist")
        test_source = (root / test_file).read_text(encoding="utf-8")
        if test_name and not re.search(rf"^(async )?def {re.escape(test_name)}\(", test_source, re.M):
            raise ScopeError(f"{config_path}: {test_file} has no test {test_name}; update the test-command")
    spans = function_spans(module_file.read_text(encoding="utf-8"))
    missing = [name for name in functions if name not in spans]
    if missing:
        raise ScopeError(
            f"{config_path}: {module_path} has no function {', '.join(missing)}; "
            "update the functions list to the module's current names"
        )
    return module_file, [spans[name] for name in functions]


def apply(config_path: Path, session: Path) -> tuple[int, int]:
    """Mark the session's mutations outside the listed functions SKIPPED; (kept, skipped)."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    module_file, spans = selected_lines(Path.cwd(), config_path)
    annotations = annotation_spans(module_file.read_text(encoding="utf-8"))
    kept = skipped = 0
    with use_db(str(session)) as work_db:
        for item in list(work_db.pending_work_items):
            inside = all(
                operator_kept(mutation.operator_name)
                and any(first <= mutation.start_pos[0] <= last for first, last in spans)
                and not any(start <= tuple(mutation.start_pos) < end for start, end in annotations)
                for mutation in item.mutations
            )
            if inside:
                kept += 1
                continue
            skipped += 1
            work_db.set_result(
                item.job_id,
                WorkResult(output="outside the listed functions or operators",
                           worker_outcome=WorkerOutcome.SKIPPED),
            )
    return kept, skipped


def score(session: Path) -> str:
    """``killed / total killed, N survived`` of a finished session, the survivors listed
    as ``line: operator`` (skipped mutants are not counted; a timeout counts as killed)."""
    from cosmic_ray.work_db import use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    killed = total = 0
    survivors: list[str] = []
    unfinished = 0
    with use_db(str(session)) as work_db:
        for item, result in work_db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                continue
            total += 1
            if result.worker_outcome != WorkerOutcome.NORMAL:
                unfinished += 1
            elif result.test_outcome == TestOutcome.SURVIVED:
                survivors.extend(
                    f"line {m.start_pos[0]}: {m.operator_name} #{m.occurrence}" for m in item.mutations
                )
            else:
                killed += 1
        pending = sum(1 for _ in work_db.pending_work_items)
    text = f"{killed} / {total} killed, {len(survivors)} survived"
    if unfinished or pending:
        text += f", {unfinished} errored, {pending} not run"
    return "\n".join([text, *(f"  survivor {s}" for s in survivors)])


def main(argv: list[str]) -> int:
    """Filter one session, ``--check`` configs, or ``--score`` a session."""
    try:
        if argv[:1] == ["--score"] and len(argv) == 2:
            print(score(Path(argv[1])))
            return 0
        if argv[:1] == ["--check"] and len(argv) > 1:
            for config in argv[1:]:
                selected_lines(Path.cwd(), Path(config))
            return 0
        if len(argv) != 2:
            print(__doc__, file=sys.stderr)
            return 2
        kept, skipped = apply(Path(argv[0]), Path(argv[1]))
    except ScopeError as error:
        print(f"mutation scope: {error}", file=sys.stderr)
        return 1
    print(f"mutation scope: {kept} mutants in the listed functions, {skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
