"""Handler hooks the runtime answers itself, so a handler class may not override them.

What the runtime answers is what its built-in handler classes define (:data:`BUILTINS`)
among the request hooks of the dispatch tables a handler class can be served with (its own
package's and those generated beside it). An override of one would never be called, so it
is refused when the class is made, with a message that says what to use instead: the
built-in's docstring. Notification hooks (``on_cancelled``, ``on_progress``,
``on_initialized``) are never refused: the runtime acts on them and calls the user's too.
``tasks/*`` are the runtime's only with ``tasks=True``, so they are checked when a session
is made (:func:`refuse_task_hooks`).

A misspelt handler (``list_tool`` for ``list_tools``) would be an ordinary method: the
request it meant answers -32601. So a handler class may define a public function (no
leading ``_``) only if it is a handler of some revision generated beside it, or if it is not
a near miss of one: a name at most :data:`MISSPELT_DISTANCE` edits (insertions, deletions,
substitutions, swaps of neighbours; case and ``_`` ignored) from a handler's name is refused
when the class is made, naming that handler (:func:`refuse_misspelt_handlers`). The hooks the
runtime answers are not candidates (they are refused outright); the other side's handler
names (``list_roots`` on a server) and attributes that are not functions are never refused. A helper that must keep such a name starts with ``_``.
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


#: How many edits (case and ``_`` ignored) from a handler's name a public function's name
#: may be before it is taken for a misspelt handler: ``list_tool``, ``callTools``,
#: ``unsubscibe`` are refused; ``add_resource`` (3 from ``read_resource``) and
#: ``list_roots`` (2 from ``list_tools``) are not.
MISSPELT_DISTANCE = 1
#: The other side's generated handler class: its handlers are deliberate names too.
OTHER_SIDE = {"ServerHandlers": ("client", "ClientHandlers"), "ClientHandlers": ("server", "ServerHandlers")}


def refuse_misspelt_handlers(cls: type, base: type, side: str) -> None:
    """Raise :class:`TypeError` if ``cls`` (or a class it mixes in below the generated
    one) defines a public function that is no handler but is a near miss of one."""
    generated = next(klass for klass in cls.__mro__ if base in klass.__bases__)
    handlers = handler_names(generated.__module__, generated.__name__)
    package = generated.__module__.rpartition(".")[0]
    candidates = handlers - runtime_hooks(side, package).keys()
    other = OTHER_SIDE.get(generated.__name__)
    if other is not None:
        handlers = handlers | handler_names(f"{package}.{other[0]}", other[1])
    for klass in cls.__mro__[: cls.__mro__.index(generated)]:
        for name, value in vars(klass).items():
            if name.startswith("_") or name in handlers or not inspect.isfunction(value):
                continue
            meant = near_miss(name, candidates)
            if meant is not None:
                raise TypeError(
                    f"{klass.__name__}.{name} is not a handler, so the request it looks "
                    f"meant for would answer -32601: did you mean {meant}? Rename it to "
                    f"{meant} (or to _{name} if it is a helper)."
                )


def near_miss(name: str, candidates: frozenset[str] | set[str]) -> str | None:
    """The candidate within :data:`MISSPELT_DISTANCE` edits of ``name`` (the nearest;
    case and ``_`` ignored), or None."""
    plain = name.replace("_", "").lower()
    best: tuple[int, str] | None = None
    for candidate in sorted(candidates):
        distance = edit_distance(plain, candidate.replace("_", "").lower())
        if distance <= MISSPELT_DISTANCE and (best is None or distance < best[0]):
            best = (distance, candidate)
    return best[1] if best is not None else None


def edit_distance(a: str, b: str) -> int:
    """Insertions, deletions, substitutions and swaps of neighbours turning ``a`` into ``b``
    (optimal string alignment)."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            cost = 0 if char_a == char_b else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                value = min(value, previous2[j - 2] + 1)
            current.append(value)
        previous2, previous = previous, current
    return previous[-1]


@functools.cache
def handler_names(module: str, class_name: str) -> frozenset[str]:
    """The public methods of the generated handler class ``class_name`` of ``module``'s
    package and of the revisions generated beside it."""
    package_name, _, stubs_name = module.rpartition(".")
    names: set[str] = set()
    for dispatch in _tables_beside(importlib.import_module(package_name)):
        stubs = importlib.import_module(f"{dispatch.__name__.rpartition('.')[0]}.{stubs_name}")
        klass = getattr(stubs, class_name, None)
        if klass is None:
            continue
        names.update(
            name for name, value in vars(klass).items()
            if not name.startswith("_") and inspect.isfunction(value)
        )
    return frozenset(names)


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
