"""Keyword checks of the launchers and the app: a misspelt option (``server_inf=``) is
refused at the call, naming it and the closest valid one, instead of failing later (at
the first request) or with Python's bare ``TypeError``."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
import inspect
from typing import Any


class UnknownOptionError(TypeError):
    """An unknown keyword argument, named with the closest valid one (a ``TypeError``, as
    Python's own for an unexpected keyword)."""


def closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like ``name`` (difflib), or None if none is close."""
    found = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


def check_options(call: str, given: Iterable[str], valid: Iterable[str]) -> None:
    """Raise :class:`UnknownOptionError` if a name of ``given`` is not in ``valid``: the
    message names the call, the keyword, the closest valid one and where the list is."""
    allowed = set(valid)
    unknown = sorted(set(given) - allowed)
    if not unknown:
        return
    name = unknown[0]
    suggestion = closest(name, allowed)
    hint = (
        f"did you mean {suggestion}=?"
        if suggestion is not None
        else f"valid ones: {', '.join(sorted(allowed))}."
    )
    more = f" (unknown too: {', '.join(unknown[1:])})" if len(unknown) > 1 else ""
    raise UnknownOptionError(f"{call}() got an unknown keyword {name}={more}: {hint}")


def keyword_parameters(function: Callable[..., Any], *, leave_out: Iterable[str] = ()) -> set[str]:
    """The names ``function`` accepts as keywords (``self`` and ``leave_out`` left out)."""
    skipped = {"self", *leave_out}
    return {
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
        and name not in skipped
    }


def accepts_any_keyword(function: Callable[..., Any]) -> bool:
    """True if ``function`` takes ``**kwargs`` (so no keyword is unknown to it)."""
    return any(
        parameter.kind is parameter.VAR_KEYWORD
        for parameter in inspect.signature(function).parameters.values()
    )


def check_call(call: str, function: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """Refuse a keyword of ``kwargs`` that ``function`` does not accept (nothing to check
    if it takes ``**kwargs``)."""
    if not accepts_any_keyword(function):
        check_options(call, kwargs, keyword_parameters(function))
