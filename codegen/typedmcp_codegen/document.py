"""Reading a loaded schema document: where its definitions live, ``$ref`` targets, its era.

Shared by the stages after ``load`` (``analyse``, ``rewrite``, ``diff``), so none of them
imports another for these helpers; the generator's modules form a DAG along the pipeline.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

JSONObject = dict[str, Any]

# Keywords whose values are instance data, not schemas: walks never enter them.
DATA_KEYWORDS = frozenset({"const", "default", "enum", "examples"})
# Keywords whose values map names to schemas.
SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

#: The request that starts a session: a schema that defines it is of the handshake era.
HANDSHAKE_METHOD = "initialize"
#: The messages of the handshake the runtime exchanges itself (the client's ``initialize``
#: and ``notifications/initialized``): the typed ``Client`` has no method for them.
HANDSHAKE_MESSAGES = frozenset({HANDSHAKE_METHOD, "notifications/initialized"})


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


def walk_schemas(node: Any) -> Iterator[JSONObject]:
    """Every schema object in the document, depth first.

    Values of data keywords (``const``, ``default``, ``enum``, ``examples``) are instance
    data and never entered; maps of named schemas (``properties``, ``$defs``, ...) are
    entered through their values only, so a property *named* ``default`` is still a schema.
    """
    if isinstance(node, list):
        for item in node:
            yield from walk_schemas(item)
    elif isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key in DATA_KEYWORDS:
                continue
            if key in SCHEMA_MAPS and isinstance(value, dict):
                for schema in value.values():
                    yield from walk_schemas(schema)
            else:
                yield from walk_schemas(value)


def unresolved_references(document: JSONObject) -> list[str]:
    """``/json/pointer: $ref (why)`` for every ``$ref`` that names no definition of the
    document (only ``#/$defs/<Name>``, or ``#/definitions/<Name>``, are understood)."""
    key = definitions_key(document)
    names = definitions(document)
    prefix = f"#/{key}/"
    found: list[str] = []

    def visit(node: Any, pointer: str) -> None:
        if isinstance(node, list):
            for index, item in enumerate(node):
                visit(item, f"{pointer}/{index}")
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                name = ref.removeprefix(prefix)
                if not ref.startswith(prefix) or "/" in name:
                    found.append(f"{pointer}: {ref} (not a local definition)")
                elif name not in names:
                    found.append(f"{pointer}: {ref} (no such definition)")
            for child, value in node.items():
                if child not in DATA_KEYWORDS:
                    visit(value, f"{pointer}/{child}")

    visit(document, "")
    return found
