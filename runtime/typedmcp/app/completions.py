"""Completions of prompt arguments and resource-template variables."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection
from typing import Any, TypeVar

from mcp_generated.v2025_11_25 import models

from .calling import is_async, run_function
from .signature import DeclarationError

#: A completion function: the value typed so far -> the suggestions (sync or async).
Completer = Callable[[str], Collection[str] | Awaitable[Collection[str]]]
CompleterT = TypeVar("CompleterT", bound=Callable[..., Any])
#: The most values one completion result may carry (the spec's limit).
MAX_VALUES = 100


class Completions:
    """The completion functions of one prompt or template, by argument name."""

    def __init__(self, what: str, arguments: Collection[str]) -> None:
        self.what = what
        self.arguments = tuple(arguments)
        self.functions: dict[str, Callable[..., Any]] = {}

    def register(self, argument: str) -> Callable[[CompleterT], CompleterT]:
        """A decorator registering a completion function for ``argument``; an argument
        the prompt or template does not have, or one completed twice, is refused now."""
        if argument not in self.arguments:
            known = ", ".join(repr(name) for name in self.arguments) or "none"
            raise DeclarationError(
                f"{self.what} has no argument {argument!r} to complete (its arguments: "
                f"{known}); pass one of those to .complete()"
            )
        if argument in self.functions:
            raise DeclarationError(
                f"{self.what}: argument {argument!r} already has a completion function "
                f"({getattr(self.functions[argument], '__qualname__', '?')}); keep one"
            )

        def decorator(function: CompleterT) -> CompleterT:
            self.functions[argument] = function
            return function

        return decorator

    async def complete(self, argument: str, value: str) -> models.CompleteResult:
        """The suggestions for ``argument`` (none when it has no completion function)."""
        function = self.functions.get(argument)
        if function is None:
            values: list[str] = []
        else:
            found = await run_function(function, [value], {}, None, asynchronous=is_async(function))
            values = [str(item) for item in found]
        return models.CompleteResult(
            completion=models.CompleteResultCompletion(
                values=values[:MAX_VALUES], total=len(values), has_more=len(values) > MAX_VALUES
            )
        )
