"""Which event loop the runtime's own launchers run on: uvloop when it is installed (the
``typedmcp[http]`` extra brings it), asyncio's otherwise or when ``TYPEDMCP_LOOP=asyncio``.

Launchers that call :func:`run` (``run_stdio``, ``mcp-host``) follow it; an ASGI app served
by uvicorn runs on the loop uvicorn picks (its ``--loop`` option: ``auto`` is uvloop when
installed, ``asyncio`` turns it off).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

#: The environment variable that picks the loop: ``uvloop``, ``asyncio`` or ``auto``.
LOOP_ENV = "TYPEDMCP_LOOP"
LOOP_CHOICES = ("auto", "uvloop", "asyncio")

Result = TypeVar("Result")


class LoopChoiceError(ValueError):
    """``TYPEDMCP_LOOP`` names no loop, or names uvloop where it is not installed."""


def uvloop_installed() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def chosen_loop(setting: str | None = None) -> str:
    """``"uvloop"`` or ``"asyncio"``: ``setting`` (default: ``$TYPEDMCP_LOOP``, else
    ``auto``), where ``auto`` means uvloop if installed."""
    value = (os.environ.get(LOOP_ENV, "auto") if setting is None else setting).strip().lower() or "auto"
    if value not in LOOP_CHOICES:
        raise LoopChoiceError(
            f"{LOOP_ENV}={value!r} names no event loop: use one of {', '.join(LOOP_CHOICES)}"
        )
    if value == "uvloop" and not uvloop_installed():
        raise LoopChoiceError(
            f"{LOOP_ENV}=uvloop, but uvloop is not installed: pip install 'typedmcp[http]' "
            f"(or pip install uvloop), or set {LOOP_ENV}=asyncio"
        )
    if value == "auto":
        return "uvloop" if uvloop_installed() else "asyncio"
    return value


def run(main: Coroutine[Any, Any, Result], *, loop: str | None = None) -> Result:
    """``asyncio.run(main)`` on the chosen loop (see :func:`chosen_loop`)."""
    if chosen_loop(loop) == "uvloop":
        import uvloop

        return uvloop.run(main)
    return asyncio.run(main)
