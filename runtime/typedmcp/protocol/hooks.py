"""Handler hooks the runtime answers itself, so a handler class may not override them.

What the runtime answers is what its built-in handler classes define (:data:`BUILTINS`)
among the request hooks of the dispatch tables a handler class can be served with (its own
package's and those generated beside it). An override of one would never be called, so it
is refused when the class is made, with a message that says what to use instead: the
built-in's docstring. Notification hooks (``on_cancelled``, ``on_progress``,
``on_initialized``) are never refused: the runtime acts on them and calls the user's too.
``tasks/*`` are the runtime's only with ``tasks=True``, so they are checked when a session
is made (:func:`refuse_task_hooks`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from types import ModuleType

from .spec import Direction

#: The runtime's built-in handler classes per side, as (module under ``typedmcp``,
#: class): what the sessions of that side use (a test checks it). Named, not imported, as
#: the stateless server sits above this layer.
BUILTINS: dict[str, tuple[tuple[str, str], ...]] = {
    "server": (("protocol.server", "ServerBuiltins"), ("stateless.server", "StatelessBuiltins")),
    "client": (("protocol.session", "CommonBuiltins"),),
}
RECEIVES = {
    "server": (Direction.CLIENT_TO_SERVER, Direction.BOTH),
    "client": (Direction.SERVER_TO_CLIENT, Direction.BOTH),
}


def refuse_runtime_hooks(cls: type, base: type, side: str) -> None:
    """Raise :class:`TypeError` if ``cls`` (a subclass of a generated handler class, whose
    runtime base is ``base``) overrides a request hook the runtime answers on ``side``."""
    generated = next(klass for klass in cls.__mro__ if base in klass.__bases__)
    package = importlib.import_module(generated.__module__.rpartition(".")[0])
    for name, (method, builtin) in runtime_hooks(side, package.__name__).items():
        if getattr(cls, name, None) is not getattr(generated, name, None):
            raise TypeError(
                f"{cls.__name__}.{name} would never be called: the runtime answers "
                f"{method} itself. {_instead(builtin)} Remove {name} from {cls.__name__}."
            )


@functools.cache
def runtime_hooks(side: str, package: str) -> dict[str, tuple[str, Callable[..., Any]]]:
    """Hook name -> (its method, the built-in answering it) on ``side``, for handler
    classes of the generated package named ``package``."""
    hooks: dict[str, str] = {}
    for dispatch in _tables_beside(importlib.import_module(package)):
        for spec in dispatch.REQUESTS.values():
            if spec.direction in RECEIVES[side]:
                hooks[spec.handler_name] = spec.method
    found: dict[str, tuple[str, Callable[..., Any]]] = {}
    for module, name in BUILTINS[side]:
        builtins = getattr(importlib.import_module(f"typedmcp.{module}"), name)
        for hook, method in hooks.items():
            builtin = getattr(builtins, hook, None)
            if builtin is not None:
                found[hook] = (method, builtin)
    return found


def _tables_beside(package: ModuleType) -> list[ModuleType]:
    """The dispatch tables of ``package`` and of the revisions generated beside it (what
    ``packages.generated_beside`` serves; read here without it, which imports the stubs)."""
    parent = package.__name__.rpartition(".")[0]
    revisions = getattr(importlib.import_module(parent), "REVISIONS", None) if parent else None
    names = {package.__name__, *(f"{parent}.{name}" for name in (revisions or {}).values())}
    return [importlib.import_module(f"{name}.dispatch") for name in sorted(names)]


def refuse_task_hooks(handlers: object, base: type | None, task_builtins: type) -> None:
    """With ``tasks=True`` the runtime answers ``tasks/*`` from its task store: raise
    :class:`ValueError` if ``handlers`` overrides one of those hooks of ``base``."""
    if base is None:
        return
    kind = type(handlers)
    for name, builtin in inspect.getmembers(task_builtins, inspect.isfunction):
        if name.startswith("_") or not hasattr(base, name):
            continue
        if getattr(kind, name, None) is not getattr(base, name):
            raise ValueError(
                f"{kind.__name__}.{name} would never be called: with tasks=True the "
                f"runtime answers it from its task store. {_instead(builtin)} Remove "
                f"{name}, or pass tasks=False to answer tasks yourself."
            )


def _instead(builtin: Callable[..., Any]) -> str:
    """The built-in's docstring, first paragraph: what the runtime does, what to use."""
    doc = inspect.getdoc(builtin) or ""
    return " ".join(doc.split("\n\n")[0].split())
