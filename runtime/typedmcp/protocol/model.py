"""The base class of every generated pydantic model."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, GetCoreSchemaHandler
from pydantic.fields import FieldInfo
from pydantic_core import CoreSchema, PydanticUndefined

#: Set by the generator (``json_schema_extra``) on an optional field whose schema lets it be
#: null; the same string as ``typedmcp_codegen.rewrite.NULLABLE_MARK``.
NULLABLE_MARK = "x-mcp-nullable"


@dataclass(frozen=True)
class _Plan:
    """What one model class does beyond pydantic: its constant fields (name -> value) and
    the names (and wire names) of optional fields for which None means "absent"."""

    constants: dict[str, Any]
    absent_if_none: frozenset[str]


_PLANS: dict[type[BaseModel], _Plan] = {}


class MCPModel(BaseModel):
    """Open MCP object: unknown keys are kept, either field name or wire name is accepted.

    Built in Python (``TextContent(text="hi")``): a field whose schema value is a constant
    (``type``, ``method``, ``jsonrpc``) fills itself and is always sent, and ``None`` for an
    optional field the schema does not let be null means "absent" (never sent as ``null``).
    Parsed (``model_validate``, and the runtime's validators): exactly the schema, so a
    missing constant or such a ``null`` is refused; a parsed message dumps back to exactly
    what was parsed. ``model_dump()`` and ``model_dump_json()`` give the wire form (wire names,
    fields nobody set left out). Validators are built on first use (``defer_build``), which
    keeps importing a generated package cheap; the construction conveniences run in
    ``__init__`` only, never while parsing.
    """

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
    )

    def __init__(self, /, **data: Any) -> None:
        plan = _PLANS.get(type(self)) or _plan_of(type(self))
        if plan.constants:
            data = {**plan.constants, **data}
        if plan.absent_if_none and None in data.values():
            data = {
                key: value
                for key, value in data.items()
                if value is not None or key not in plan.absent_if_none
            }
        self.__pydantic_validator__.validate_python(data, self_instance=self)

    # pydantic-core validates input without calling a model's __init__ unless it is custom;
    # this one only prepares Python arguments, so parsing stays in the core validator.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler, /
    ) -> CoreSchema:
        """Pydantic's schema, tightened to the MCP schema for parsed input: a constant field
        is required (its default serves construction only) and an optional field the schema
        does not let be null refuses ``null``. Runs once per class, when it is built."""
        schema = handler(source)
        if source is cls:
            _tighten(schema, _plan_from_fields(cls))
        return schema

    def model_dump(self, **options: Any) -> dict[str, Any]:
        """The wire form by default (``exclude_unset=True``); any option can be overridden."""
        options.setdefault("exclude_unset", True)
        return super().model_dump(**options)

    def model_dump_json(self, **options: Any) -> str:
        """The wire form by default (``exclude_unset=True``); any option can be overridden."""
        options.setdefault("exclude_unset", True)
        return super().model_dump_json(**options)


def _plan_of(cls: type[BaseModel]) -> _Plan:
    """The plan of a model class, building the class first (its fields are then final)."""
    if not cls.__pydantic_complete__:
        cls.model_rebuild()
    plan = _PLANS.get(cls)
    return plan if plan is not None else _plan_from_fields(cls)


def _plan_from_fields(cls: type[BaseModel]) -> _Plan:
    constants: dict[str, Any] = {}
    absent: set[str] = set()
    for name, info in cls.__pydantic_fields__.items():
        if _is_constant(info):
            constants[name] = info.default
        elif info.default is None and not _may_be_null(info):
            absent.add(name)
            if info.alias:
                absent.add(info.alias)
    plan = _PLANS[cls] = _Plan(constants, frozenset(absent))
    return plan


def _is_constant(info: FieldInfo) -> bool:
    """``type: Literal["text"] = "text"``: a one-value literal that defaults to its value."""
    if info.default is PydanticUndefined or typing.get_origin(info.annotation) is not Literal:
        return False
    values = typing.get_args(info.annotation)
    return len(values) == 1 and values[0] == info.default


def _may_be_null(info: FieldInfo) -> bool:
    extra = info.json_schema_extra
    return isinstance(extra, dict) and extra.get(NULLABLE_MARK) is True


def _tighten(schema: CoreSchema, plan: _Plan) -> None:
    fields = _model_fields(schema)
    if fields is None:
        return
    for name, field in fields.items():
        wrapped = field.get("schema")
        if not isinstance(wrapped, dict) or wrapped.get("type") != "default":
            continue
        if name in plan.constants:
            field["schema"] = wrapped["schema"]  # required: no default when parsing
        elif name in plan.absent_if_none:
            inner = wrapped["schema"]
            if isinstance(inner, dict) and inner.get("type") == "nullable":
                wrapped["schema"] = inner["schema"]  # still optional, but not null


def _model_fields(schema: Any) -> dict[str, Any] | None:
    """The ``fields`` of the ``model-fields`` schema inside a model's schema."""
    node = schema
    for _ in range(4):
        if not isinstance(node, dict):
            return None
        if node.get("type") == "model-fields":
            fields = node.get("fields")
            return fields if isinstance(fields, dict) else None
        node = node.get("schema")
    return None
