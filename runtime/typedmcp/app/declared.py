"""The functions an :class:`~typedmcp.app.core.McpApp` declares as prompts and resources:
still callable as themselves (unit-testable without a server), with the spec the app
serves them from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

from .completions import CompleterT
from .prompts import PromptSpec
from .resources import ResourceSpec

P = ParamSpec("P")
R = TypeVar("R")


class DeclaredFunction(Generic[P, R]):
    """A declared function that stays callable as itself (unit-testable without a server),
    with the spec the app serves it from."""

    def __init__(self, function: Callable[P, R], spec: PromptSpec | ResourceSpec) -> None:
        self.__wrapped__ = function
        self.spec = spec
        self.__doc__ = function.__doc__
        self.__name__ = getattr(function, "__name__", spec.name)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.__wrapped__(*args, **kwargs)


class PromptFunction(DeclaredFunction[P, R]):
    """A declared prompt: still callable as the function, plus :meth:`complete`."""

    def complete(self, argument: str) -> Callable[[CompleterT], CompleterT]:
        """Declare the completion function of ``argument``: it takes the value typed so far
        and returns the suggestions (at most 100 are sent)."""
        return self.spec.completions.register(argument)


class ResourceFunction(DeclaredFunction[P, R]):
    """A declared resource or template: still callable as the function, plus :meth:`complete`
    for a template's variables."""

    def complete(self, variable: str) -> Callable[[CompleterT], CompleterT]:
        """Declare the completion function of a template variable."""
        return self.spec.completions.register(variable)


__all__ = ["DeclaredFunction", "PromptFunction", "ResourceFunction"]
