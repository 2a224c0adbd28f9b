"""Tool schemas at run time: argument and structured-output validation, function-calling export.

Validation uses jsonschema (imported on first use), with the dialect a schema declares in
``$schema`` (2020-12 when it declares none, as MCP specifies from 2025-11-25).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from ..engine.jsonrpc import ECHO_LIMIT, clip

Validator = Any


class OutputChecked:
    """Mixed into a ``CallToolResult`` class whose instances are built only from a value
    already validated against the tool's declared output, and dumped by the same types its
    ``outputSchema`` was derived from (``typedmcp.app`` does so): the server sends such a
    result without checking its ``structuredContent`` against the schema a second time.
    Any other result (a hand-written handler's, a ``CallToolResult`` a tool returns itself)
    is checked."""

    __slots__ = ()


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value


def compile_schema(schema: Mapping[str, Any]) -> Validator:
    """A jsonschema validator for ``schema`` in the dialect it declares."""
    import jsonschema.validators

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def problems(validator: Validator, instance: Any, limit: int = 5) -> list[str]:
    """Readable validation errors (JSON pointer: message), at most ``limit``."""
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    return [  # jsonschema quotes the whole value in its message: the peer's, so clipped
        f"{'/' + '/'.join(clip(str(p)) for p in error.absolute_path) or '(root)'}: "
        f"{_clipped(error)}"
        for error in errors[:limit]
    ]


def _clipped(error: Any) -> str:
    """A jsonschema error's message with the instance it quotes cut to a few characters."""
    message = str(error.message)
    if len(message) <= 2 * ECHO_LIMIT:
        return message
    shown = repr(error.instance)
    if shown in message:
        message = message.replace(shown, clip(shown))
    return clip(message, 4 * ECHO_LIMIT)


# JSON Schema primitive type -> (Python types, whether bool is excluded: it is an int)
_PRIMITIVE_TYPES: dict[str, tuple[tuple[type, ...], bool]] = {
    "string": ((str,), False),
    "integer": ((int,), True),
    "number": ((int, float), True),
    "boolean": ((bool,), False),
}
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$schema"})


def _keywords(schema: Mapping[str, Any]) -> set[str]:
    """A schema's keys less its annotations (vendor ``x-`` keys are annotations too: JSON
    Schema ignores them, e.g. ``x-typedmcp-wrapped``)."""
    return {key for key in schema if key not in _ANNOTATIONS and not key.startswith("x-")}


def simple_check(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A plain-Python validity test for the common tool schema (an object of primitive
    properties, ``required``, ``additionalProperties``), or None for anything richer.
    It only says valid/invalid; jsonschema still words the errors."""
    if schema.get("type") != "object" or _keywords(schema) - {
        "type", "properties", "required", "additionalProperties"
    }:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    closed = schema.get("additionalProperties", True) is False
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    kinds: dict[str, tuple[tuple[type, ...], bool]] = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict) or _keywords(prop) - {"type"}:
            return None
        kind = _PRIMITIVE_TYPES.get(prop.get("type", ""))
        if kind is None:
            return None
        kinds[name] = kind

    def valid(instance: Any) -> bool:
        if not isinstance(instance, dict):
            return False
        for key in required:
            if key not in instance:
                return False
        for key, value in instance.items():
            kind = kinds.get(key)
            if kind is None:
                if closed:
                    return False
            elif not isinstance(value, kind[0]) or (kind[1] and isinstance(value, bool)):
                return False
        return True

    return valid


class ToolSchemas:
    """Input and output schemas of the tools a server lists, compiled once each."""

    def __init__(self) -> None:
        self.tools: dict[str, dict[str, Any]] = {}
        self._compiled: dict[tuple[str, ...], Any] = {}

    def update(self, tools: Iterable[Any]) -> None:
        """Record the tools of a ``tools/list`` page (models or wire dicts)."""
        for tool in tools:
            plain = _plain(tool)
            self.tools[plain["name"]] = plain
            for which in ("inputSchema", "outputSchema"):
                self._compiled.pop((plain["name"], which), None)
                self._compiled.pop((plain["name"], which, "simple"), None)

    def clear(self) -> None:
        self.tools.clear()
        self._compiled.clear()

    def check(self, name: str, which: str, instance: Any) -> list[str]:
        """Problems of ``instance`` against the tool's ``which`` schema (none: valid)."""
        key = (name, which, "simple")
        try:
            fast = self._compiled[key]
        except KeyError:
            schema = self.tools.get(name, {}).get(which)
            fast = self._compiled[key] = simple_check(schema) if isinstance(schema, dict) else None
        if fast is not None and fast(instance):
            return []
        validator = self.validator(name, which)
        return problems(validator, instance) if validator is not None else []

    def validator(self, name: str, which: str) -> Validator | None:
        """The compiled ``inputSchema``/``outputSchema`` of tool ``name``, if it has one."""
        key = (name, which)
        if key not in self._compiled:
            schema = self.tools.get(name, {}).get(which)
            self._compiled[key] = compile_schema(schema) if isinstance(schema, dict) else None
        return self._compiled[key]


def as_functions(tools: Iterable[Any]) -> list[dict[str, Any]]:
    """Tools as function-calling definitions, the plain JSON-Schema form LLM APIs take:
    ``{"type": "function", "function": {"name", "description", "parameters"}}``."""
    functions = []
    for tool in tools:
        plain = _plain(tool)
        function: dict[str, Any] = {"name": plain["name"]}
        description = plain.get("description") or plain.get("title")
        if description:
            function["description"] = description
        function["parameters"] = plain.get("inputSchema") or {"type": "object", "properties": {}}
        functions.append({"type": "function", "function": function})
    return functions
