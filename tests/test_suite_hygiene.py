"""The suite's own habits that keep it honest on a slow machine.

A time read while pytest collects (in a ``parametrize`` list, a default argument, a module
constant) is stale by the time the test runs: on a busy 2-core machine the suite takes
20 minutes, and a "not valid yet" token computed at collection is valid when its test runs.
Every clock read in the tests happens inside a test or a fixture, when the test runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from conftest import REPO_ROOT

TESTS = REPO_ROOT / "tests"
# the clocks whose readings go stale: wall time, monotonic time and today's date
CLOCKS = (
    "time.time", "time.time_ns", "time.monotonic", "time.monotonic_ns", "time.perf_counter",
    "datetime.now", "datetime.utcnow", "datetime.datetime.now", "datetime.datetime.utcnow",
    "date.today", "datetime.date.today",
)


def clock_reads_at_collection(source: str) -> Iterator[tuple[int, str]]:
    """Yield (line, call) for each clock read that runs when the module is imported."""

    def at_import(node: ast.AST) -> Iterator[ast.AST]:
        # what runs at import: everything but function bodies and lambdas; a function's
        # decorators and default values run when it is defined, so they count
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            run_at_definition = [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]
            for expression in run_at_definition:
                if expression is not None:
                    yield from at_import(expression)
            return
        if isinstance(node, ast.Lambda):
            return
        yield node
        for child in ast.iter_child_nodes(node):
            yield from at_import(child)

    for node in at_import(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) in CLOCKS:
            yield node.lineno, ast.unparse(node)

def test_no_test_reads_the_clock_at_collection() -> None:
    found = [
        f"{path.relative_to(REPO_ROOT)}:{line}: {call}"
        for path in sorted(TESTS.rglob("*.py"))
        if "fixtures" not in path.parts
        for line, call in clock_reads_at_collection(path.read_text("utf-8"))
    ]
    assert not found, (
        "these clock reads run when pytest collects the tests, so they are stale when a slow run "
        "reaches the test; read the clock inside the test or a fixture:\n" + "\n".join(found)
    )


def test_the_check_finds_clock_reads_in_parametrize_defaults_and_constants() -> None:
    source = '''
import time, datetime, pytest
STARTED = time.time()
@pytest.mark.parametrize("exp", [int(time.time()) + 60])
def test_a(exp, now=datetime.datetime.now()):
    inside = time.time()
later = lambda: time.monotonic()
class TestB:
    when = datetime.date.today()
    def test_c(self):
        time.time()
'''
    assert [line for line, _ in clock_reads_at_collection(source)] == [3, 4, 5, 9]
