"""Python names: from schema names (one rule everywhere), and the runtime's import path."""

from __future__ import annotations

import re

#: The import path generated code uses for the runtime's typed seam (the models' base class
#: ``model``, the dispatch specs ``spec``, the stub bases ``stubs``): public, stable modules
#: of the ``mcp_runtime`` package (distribution mcp-codegen-runtime). The generator itself
#: never imports it.
RUNTIME_PACKAGE = "mcp_runtime.protocol"
SNAKE_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """``listChanged`` -> ``list_changed``; ``CallTool`` -> ``call_tool``."""
    return SNAKE_BOUNDARY.sub("_", name).lower()
