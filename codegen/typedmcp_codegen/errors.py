"""The one error type the pipeline raises for bad input."""

from __future__ import annotations


class CodegenError(Exception):
    """Bad input or environment: says what is wrong and how to fix it.

    The CLI prints ``error: <problem>`` and ``  fix: <hint>`` and exits with code 2;
    it never shows a traceback for this class.
    """

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix

    def __reduce__(self) -> tuple[type[CodegenError], tuple[str, str]]:
        """Keep both parts when the error crosses a process boundary (``--all`` workers)."""
        return (type(self), (self.problem, self.fix))

    def __str__(self) -> str:
        return f"{self.problem}\n  fix: {self.fix}"
