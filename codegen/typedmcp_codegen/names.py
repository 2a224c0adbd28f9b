"""Python names: from schema names (one rule everywhere), and the runtime's import path."""

from __future__ import annotations

import re

#: The import path generated code uses for the runtime's typed seam (the models' base class
#: ``model``, the dispatch specs ``spec``, the stub bases ``stubs``): public, stable modules
#: of the ``typedmcp`` package (distribution typedmcp). The generator itself
#: never imports it.
RUNTIME_PACKAGE = "typedmcp.protocol"
#: The runtime interface level generated code is written for: which modules of
#: RUNTIME_PACKAGE it imports, the names it takes from them and how it calls them. Stamped
#: in each package's ``__init__.py`` (``RUNTIME_INTERFACE``), which checks at import that
#: the installed runtime serves it (``typedmcp.protocol.compat``). Raise it with any
#: change to that surface that an older runtime would not serve.
RUNTIME_INTERFACE = 2
SNAKE_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """``listChanged`` -> ``list_changed``; ``CallTool`` -> ``call_tool``."""
    return SNAKE_BOUNDARY.sub("_", name).lower()
