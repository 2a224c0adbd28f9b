"""Tool schemas at run time: argument and structured-output validation, function-calling export.

Validation uses jsonschema (imported on first use), with the dialect a schema declares in
``$schema`` (2020-12 when it declares none, as MCP specifies from 2025-11-25).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

Validator = Any


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
    return [
        f"{'/' + '/'.join(str(p) for p in error.absolute_path) or '(root)'}: {error.message}"
        for error in errors[:limit]
    ]


class ToolSchemas:
    """Input and output schemas of the tools a server lists, compiled once each."""

    def __init__(self) -> None:
        self.tools: dict[str, dict[str, Any]] = {}
        self._compiled: dict[tuple[str, str], Validator] = {}

    def update(self, tools: Iterable[Any]) -> None:
        """Record the tools of a ``tools/list`` page (models or wire dicts)."""
        for tool in tools:
            plain = _plain(tool)
            self.tools[plain["name"]] = plain
            self._compiled.pop((plain["name"], "inputSchema"), None)
            self._compiled.pop((plain["name"], "outputSchema"), None)

    def clear(self) -> None:
        self.tools.clear()
        self._compiled.clear()

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
