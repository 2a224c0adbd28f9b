"""Python names from schema names, one rule everywhere."""

from __future__ import annotations

import re

SNAKE_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """``listChanged`` -> ``list_changed``; ``CallTool`` -> ``call_tool``."""
    return SNAKE_BOUNDARY.sub("_", name).lower()
