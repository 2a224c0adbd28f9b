"""Reading a loaded schema document: where its definitions live, ``$ref`` targets, its era.

Shared by the stages after ``load`` (``analyse``, ``rewrite``, ``diff``), so none of them
imports another for these helpers; the generator's modules form a DAG along the pipeline.
"""

from __future__ import annotations

import enum
from typing import Any

JSONObject = dict[str, Any]

#: The request that starts a session: a schema that defines it is of the handshake era.
HANDSHAKE_METHOD = "initialize"


class Era(str, enum.Enum):
    """Handshake revisions (initialize, sessions) or stateless ones (server/discover).

    The values are the ones generated packages state in ``ERA`` and the runtime's ``Era``.
    """

    HANDSHAKE = "handshake"
    STATELESS = "stateless"


def definitions_key(document: JSONObject) -> str:
    """``$defs`` (2020-12) or ``definitions`` (draft-07)."""
    return "$defs" if "$defs" in document else "definitions"


def definitions(document: JSONObject) -> JSONObject:
    """The document's definitions by name."""
    found: JSONObject = document[definitions_key(document)]
    return found


def ref_name(node: Any) -> str | None:
    """The definition name a ``{"$ref": "#/$defs/Name"}`` node points at, else None."""
    if isinstance(node, dict) and isinstance(node.get("$ref"), str):
        return str(node["$ref"]).rsplit("/", 1)[-1]
    return None


def schema_era(document: JSONObject) -> Era:
    """Handshake iff some definition is the ``initialize`` request (the rule ``analyse`` uses)."""
    for schema in definitions(document).values():
        method = schema.get("properties", {}).get("method") if isinstance(schema, dict) else None
        if isinstance(method, dict) and method.get("const") == HANDSHAKE_METHOD:
            return Era.HANDSHAKE
    return Era.STATELESS
