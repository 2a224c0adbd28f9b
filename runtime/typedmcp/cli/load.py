"""Find the app a command serves: ``server.py``, ``server.py:app``, ``package.module:app``.

A file is loaded by its path (its folder first on ``sys.path``, so its own imports work,
whether or not it is on ``sys.path`` itself); its ``if __name__ == "__main__":`` block does
not run. Without ``:name`` the file's one :class:`~typedmcp.app.core.McpApp` is taken; none
or several is a :class:`LoadError` naming them and the ``:name`` to add.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from ..app.core import McpApp


class LoadError(Exception):
    """A target that cannot be loaded: the message says what is wrong and how to fix it."""


def split_target(target: str) -> tuple[str, str | None]:
    """``"server.py:app"`` -> (``"server.py"``, ``"app"``); a Windows drive's colon is kept."""
    path, colon, name = target.rpartition(":")
    if not colon or not name.isidentifier() or (len(path) == 1 and path.isalpha()):
        return target, None
    return path, name


def load_module(source: str) -> ModuleType:
    """The module of ``source``, a ``.py`` file or a dotted module name."""
    path = Path(source)
    if source.endswith(".py") or path.exists():
        if not path.is_file():
            raise LoadError(f"{source}: no such file (or not a file); give the server's .py file, e.g. server.py:app")
        path = path.resolve()
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        name = f"typedmcp_cli_target_{path.stem}" if path.stem.isidentifier() else "typedmcp_cli_target"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        runner = spec.loader.exec_module
        what = str(path)
    else:
        runner = None
        what = source
    try:
        if runner is None:
            return importlib.import_module(source)
        runner(module)
        return module
    except ModuleNotFoundError as error:
        if runner is None and error.name is not None and source.startswith(error.name):
            raise LoadError(f"{source}: no such file or module; give a .py file (server.py) "
                            "or an importable module (package.server)") from None
        raise LoadError(_failure(what, error)) from None
    except Exception as error:  # the server's own code failed: say where, never a bare traceback
        raise LoadError(_failure(what, error)) from None


def _failure(what: str, error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    own = [frame for frame in frames if "importlib" not in frame.filename]
    where = f" (at {own[-1].filename}:{own[-1].lineno})" if own else ""
    return f"{what} failed to import: {type(error).__name__}: {error}{where}; fix it and run again"


def load_app(target: str) -> object:
    """The app (or handler object) that ``target`` names (see the module)."""
    source, name = split_target(target)
    module = load_module(source)
    if name is not None:
        if not hasattr(module, name):
            apps = _apps(module)
            hint = f"; it has {', '.join(apps)}" if apps else ""
            raise LoadError(f"{source} has no {name!r}{hint}")
        value = getattr(module, name)
        if isinstance(value, type):
            raise LoadError(f"{source}:{name} is a class; serve an instance (app = {name}(...))")
        if isinstance(value, ModuleType) or (callable(value) and not hasattr(value, "list_tools")):
            raise LoadError(f"{source}:{name} is not an app; name an McpApp (or a ServerHandlers object)")
        return value
    apps = _apps(module)
    if len(apps) == 1:
        return getattr(module, apps[0])
    if not apps:
        raise LoadError(f"{source} has no McpApp; create one (app = McpApp('name')) or name the "
                        f"object to serve: {source}:NAME")
    raise LoadError(f"{source} has several McpApps ({', '.join(apps)}); name one: "
                    f"{source}:{apps[0]}")


def _apps(module: ModuleType) -> list[str]:
    """The module's McpApp objects (each once, by its first name)."""
    seen: dict[int, str] = {}
    for attribute, value in vars(module).items():
        if isinstance(value, McpApp) and id(value) not in seen and not attribute.startswith("_"):
            seen[id(value)] = attribute
    return list(seen.values())
