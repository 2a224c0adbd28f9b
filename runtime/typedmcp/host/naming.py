"""The host's naming rule: it lives in :mod:`typedmcp.protocol.naming`, where
:meth:`McpApp.mount <typedmcp.app.core.McpApp.mount>` uses it too; imported from here as before."""

from __future__ import annotations

from ..protocol.naming import (
    MAX_NAME,
    Candidate,
    NamingRule,
    assign,
    collisions,
    possible_owners,
    sanitize,
    shorten,
    valid_function_name,
    with_suffix,
)

__all__ = [
    "MAX_NAME",
    "Candidate",
    "NamingRule",
    "assign",
    "collisions",
    "possible_owners",
    "sanitize",
    "shorten",
    "valid_function_name",
    "with_suffix",
]
