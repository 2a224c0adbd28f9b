"""Tools from typed functions: the input schema from the signature, the output schema from
the return annotation, validation before the call and structured results after it."""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import re
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python
from typing_extensions import is_typeddict

from mcp_generated.v2025_11_25 import models

from ..engine.jsonrpc import RpcError, clip
from ..protocol.stubs import ToolError
from ..protocol.tools import OutputChecked
from .calling import is_async, run_function
from .content import CONTENT_TYPES, text
from .context import Context
from .signature import (
    DeclarationError,
    FunctionSignature,
    QuietTitles,
    describe_errors,
    pydantic_reason,
    read_signature,
)

logger = logging.getLogger("typedmcp.app")

#: The spec's rule for tool names (2025-11-25): 1 to 128 of these characters.
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
#: Marks an output schema whose ``result`` property wraps a non-object return value.
WRAPPED_KEY = "x-typedmcp-wrapped"
#: Characters of a function's own exception message put in the error result.
ERROR_MESSAGE_LIMIT = 500
_PASSTHROUGH_TYPES: tuple[type, ...] = (*CONTENT_TYPES, models.CallToolResult)
_SEQUENCES = (list, tuple)
#: Exact types of return values that cannot be (or hold) content blocks.
_PLAIN_TYPES: frozenset[type] = frozenset({str, int, float, bool, type(None), dict})


def check_tool_name(name: str, function: Callable[..., Any]) -> None:
    """Raise :class:`DeclarationError` unless ``name`` follows the spec's rule."""
    if not isinstance(name, str) or TOOL_NAME.fullmatch(name) is None:
        raise DeclarationError(
            f"tool name {name!r} (function {getattr(function, '__qualname__', function)!r}) "
            "breaks the spec's rule: 1 to 128 characters of A-Z, a-z, 0-9, '_', '-' and '.'; "
            "pass name='...' to @app.tool() or rename the function"
        )


def _leaves(annotation: Any) -> list[Any]:
    """The types an annotation is made of, through Annotated, unions, lists and tuples."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _leaves(get_args(annotation)[0])
    if origin in (Union, types.UnionType, list, tuple, Sequence):
        return [leaf for arg in get_args(annotation) for leaf in _leaves(arg)]
    return [annotation]


def _is_object(annotation: Any) -> bool:
    """Whether values of ``annotation`` are JSON objects: models, TypedDicts, dataclasses."""
    if get_origin(annotation) is Annotated:
        return _is_object(get_args(annotation)[0])
    if not isinstance(annotation, type):
        return False
    return issubclass(annotation, BaseModel) or is_typeddict(annotation) or dataclasses.is_dataclass(annotation)


def _shown(annotation: Any) -> str:
    if annotation is inspect.Signature.empty:
        return "no return annotation"
    if annotation in (None, type(None)):
        return "None"
    return getattr(annotation, "__qualname__", None) or repr(annotation)


@dataclasses.dataclass(frozen=True)
class OutputPlan:
    """How a function's return value becomes a ``CallToolResult``."""

    schema: dict[str, Any] | None
    adapter: TypeAdapter[Any] | None
    wrapped: bool
    #: The declared model class when an instance of it needs no validation before it is
    #: dumped (pydantic would pass it through unchanged: ``revalidate_instances="never"``).
    trusted: type[BaseModel] | None = None
    #: The declared type when it is ``str``, ``int`` or ``bool``: a value of exactly that
    #: type validates and dumps as itself.
    plain: type | None = None
    #: Whether the dump of a validated value is what the schema says (no custom serializer
    #: nor computed field, whose output pydantic does not validate): such a result is sent
    #: without the server checking it against the schema again (:class:`CheckedCallToolResult`).
    faithful: bool = False


def output_plan(
    return_annotation: Any, structured: bool | None, what: str
) -> OutputPlan:
    """The output schema and serializer of a return annotation (see :class:`OutputPlan`).

    No annotation, ``None``, ``Any``, content blocks and ``CallToolResult`` have no output
    schema; models, TypedDicts and dataclasses are the object itself; anything else is
    wrapped as ``{"result": ...}`` and the schema says so (``x-typedmcp-wrapped``).
    ``structured=False`` turns structured output off; True insists on it.
    """
    empty = OutputPlan(None, None, False)
    leaves = _leaves(return_annotation)
    unstructured = (
        return_annotation in (None, type(None), Any, inspect.Signature.empty)
        or any(isinstance(leaf, type) and issubclass(leaf, _PASSTHROUGH_TYPES) for leaf in leaves)
    )
    if structured is False or (unstructured and not structured):
        return empty
    if unstructured:
        raise DeclarationError(
            f"{what}: structured_output=True needs a return annotation with a JSON Schema "
            f"(a model, a TypedDict, a dataclass or a plain type), not {_shown(return_annotation)}"
        )
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(return_annotation)
        inner = adapter.json_schema(mode="serialization", schema_generator=QuietTitles)
    except Exception as error:
        raise DeclarationError(
            f"{what}: its return type {return_annotation!r} has no JSON Schema "
            f"({pydantic_reason(error)}); return a pydantic model, a TypedDict, a dataclass or "
            "a plain type, or pass structured_output=False"
        ) from None
    faithful = _serializes_as_validated(adapter.core_schema)
    if _is_object(return_annotation):
        return OutputPlan(
            _object_on_top(inner), adapter, False, _trusted_model(return_annotation), faithful=faithful
        )
    definitions = inner.pop("$defs", None)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
        WRAPPED_KEY: True,
    }
    if definitions:
        schema["$defs"] = definitions
    plain = return_annotation if return_annotation in (str, int, bool) else None
    return OutputPlan(schema, adapter, True, plain=plain, faithful=faithful)


def _serializes_as_validated(core_schema: Any) -> bool:
    """Whether nothing in a pydantic core schema changes values on the way out: no function
    serializer (``field_serializer``, ``model_serializer``, ``PlainSerializer``, ...) and no
    computed field, whose results pydantic dumps without validating them."""
    if isinstance(core_schema, dict):
        serialization = core_schema.get("serialization")
        if isinstance(serialization, dict) and str(serialization.get("type", "")).startswith("function"):
            return False
        if core_schema.get("computed_fields"):
            return False
        return all(_serializes_as_validated(value) for value in core_schema.values())
    if isinstance(core_schema, list | tuple):
        return all(_serializes_as_validated(value) for value in core_schema)
    return True


def _object_on_top(schema: dict[str, Any]) -> dict[str, Any]:
    """An object's schema with the object at the top, as an ``outputSchema`` must be:
    ``Annotated[Model, Field(description=...)]`` gives ``{"$ref": ..., "description": ...}``,
    so the referenced definition is brought up (and kept in ``$defs`` for other uses)."""
    reference = schema.get("$ref")
    definitions = schema.get("$defs", {})
    if not isinstance(reference, str) or not reference.startswith("#/$defs/"):
        return schema
    target = definitions.get(reference.removeprefix("#/$defs/"))
    if not isinstance(target, dict):
        return schema
    own = {k: v for k, v in target.items() if k != "title"}  # untitled, as a top-level model is
    lifted = {**own, **{k: v for k, v in schema.items() if k not in ("$ref", "$defs")}}
    rest = {name: d for name, d in definitions.items() if d is not target or _refers(schema, name)}
    if rest:
        lifted["$defs"] = rest
    return lifted


def _refers(schema: dict[str, Any], name: str) -> bool:
    """Whether a definition is referred to from inside the definitions (a recursive model)."""
    return f'"#/$defs/{name}"' in json.dumps(schema.get("$defs", {}))


def _trusted_model(annotation: Any) -> type[BaseModel] | None:
    """``annotation`` when it is a model whose instances validate as themselves."""
    if (
        isinstance(annotation, type)
        and issubclass(annotation, BaseModel)
        and annotation.model_config.get("revalidate_instances", "never") == "never"
    ):
        return annotation
    return None


class CheckedCallToolResult(models.CallToolResult, OutputChecked):
    """A result whose ``structuredContent`` the app validated and dumped with the types its
    ``outputSchema`` came from: the server sends it without a second (jsonschema) check."""


def call_result(wire: dict[str, Any], *, checked: bool = False) -> models.CallToolResult:
    """A ``CallToolResult`` validated from its wire form in one pass (cheaper than building
    each block's model and then the result from them); ``checked``: see
    :class:`CheckedCallToolResult`."""
    model = CheckedCallToolResult if checked else models.CallToolResult
    result: models.CallToolResult = model.__pydantic_validator__.validate_python(wire)
    return result


class OutputMismatch(Exception):
    """A function returned a value its return annotation does not allow."""


@dataclasses.dataclass(frozen=True)
class ToolSpec:
    """A declared tool: its definition as listed and how to call it."""

    name: str
    function: Callable[..., Any]
    signature: FunctionSignature
    output: OutputPlan
    definition: models.Tool
    asynchronous: bool

    async def call(
        self, arguments: Mapping[str, Any], context: Context | None, mask_errors: bool = False
    ) -> models.CallToolResult:
        """Validate ``arguments``, run the function, shape its result. A bad argument or the
        function's own exception is an ``isError`` result (``mask_errors``: saying only
        "Internal error in tool NAME", the exception logged here); ``ToolError`` and
        ``RpcError`` propagate (the runtime answers them as for a handler)."""
        try:
            validated = self.signature.validate(arguments)
        except ValidationError as error:
            return error_result(f"Invalid arguments for tool {self.name}: {describe_errors(error)}")
        args, kwargs = self.signature.call_arguments(validated, context)
        try:
            if self.asynchronous and context is None:  # (nothing to mark cancelled)
                value = await self.function(*args, **kwargs)
            else:
                value = await run_function(self.function, args, kwargs, context, asynchronous=self.asynchronous)
        except (ToolError, RpcError):
            raise
        except Exception as error:
            logger.exception("tool %s raised", self.name)
            if mask_errors:
                return error_result(f"Internal error in tool {self.name}")
            return error_result(
                f"Tool {self.name} failed: {type(error).__name__}: {clip(str(error), ERROR_MESSAGE_LIMIT)}"
            )
        try:
            return self.result(value)
        except OutputMismatch as mismatch:
            logger.error("tool %s: %s", self.name, mismatch)
            return error_result(f"Tool {self.name} returned a result that does not match its output schema: {mismatch}")

    def result(self, value: Any) -> models.CallToolResult:
        """The ``CallToolResult`` for a function's return value."""
        if type(value) in _PLAIN_TYPES:  # (no content block: skip the model isinstance checks)
            return self.shaped(value)
        if isinstance(value, models.CallToolResult):
            return value
        if isinstance(value, CONTENT_TYPES):
            return models.CallToolResult(content=[value])
        if isinstance(value, _SEQUENCES) and value and all(isinstance(item, CONTENT_TYPES) for item in value):
            return models.CallToolResult(content=list(value))
        return self.shaped(value)

    def shaped(self, value: Any) -> models.CallToolResult:
        """The ``CallToolResult`` for a value that is no content block nor result."""
        plan = self.output
        adapter = plan.adapter
        if adapter is None:
            return call_result({"content": _unstructured(value)})
        dumped: Any
        if plan.plain is not None and type(value) is plan.plain:
            dumped, checked = value, True
        elif plan.trusted is not None and isinstance(value, plan.trusted):
            # (an instance may have been changed since it was built: the server checks it)
            dumped, checked = adapter.dump_python(value, mode="json", by_alias=True), False
        else:
            try:
                validated = adapter.validate_python(value)
            except ValidationError as error:
                raise OutputMismatch(describe_errors(error)) from None
            dumped, checked = adapter.dump_python(validated, mode="json", by_alias=True), plan.faithful
        structured = {"result": dumped} if plan.wrapped else dumped
        shown = value if isinstance(value, str) else json.dumps(dumped, ensure_ascii=False)
        return call_result(
            {"content": [{"type": "text", "text": shown}], "structuredContent": structured}, checked=checked
        )


def _unstructured(value: Any) -> list[dict[str, str]]:
    """The text blocks (wire form) of a value sent without structured output."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    return [{"type": "text", "text": json.dumps(to_jsonable_python(value), ensure_ascii=False)}]


def error_result(message: str) -> models.CallToolResult:
    """A ``CallToolResult`` reporting a failure for the model to read."""
    return models.CallToolResult(content=[text(message)], is_error=True)


def icon_models(icons: Sequence[models.Icon | Mapping[str, Any]] | None) -> list[models.Icon] | None:
    """Icons as models (wire-named dicts are accepted: ``{"src": ..., "mimeType": ...}``)."""
    if icons is None:
        return None
    found = []
    for icon in icons:
        try:
            found.append(models.Icon.model_validate(dict(icon)) if isinstance(icon, Mapping) else icon)
        except ValidationError as error:
            raise DeclarationError(
                f"icon {icon!r} is not an MCP Icon ({describe_errors(error)}); give at least src"
            ) from None
    return found


def declare_tool(
    function: Callable[..., Any],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    annotations: models.ToolAnnotations | Mapping[str, Any] | None,
    icons: Sequence[models.Icon | Mapping[str, Any]] | None,
    meta: Mapping[str, Any] | None,
    structured_output: bool | None,
) -> ToolSpec:
    """Read ``function`` into a :class:`ToolSpec`; every mistake raises
    :class:`DeclarationError` now, naming the function and the fix."""
    tool_name = name if name is not None else getattr(function, "__name__", "")
    check_tool_name(tool_name, function)
    what = f"tool {tool_name!r}"
    signature = read_signature(function, what=what, context_type=Context)
    output = output_plan(signature.hints.get("return", inspect.Signature.empty), structured_output, what)
    try:
        definition = models.Tool(
            name=tool_name,
            title=title,
            description=description if description is not None else signature.docstring.summary,
            input_schema=models.ToolInputSchema.model_validate(signature.input_schema()),
            output_schema=(
                models.ToolOutputSchema.model_validate(output.schema) if output.schema is not None else None
            ),
            annotations=(
                models.ToolAnnotations.model_validate(dict(annotations))
                if isinstance(annotations, Mapping)
                else annotations
            ),
            icons=icon_models(icons),
            meta=dict(meta) if meta is not None else None,
        )
    except ValidationError as error:
        raise DeclarationError(f"{what}: its metadata is not valid MCP: {describe_errors(error)}") from None
    return ToolSpec(
        name=tool_name,
        function=function,
        signature=signature,
        output=output,
        definition=definition,
        asynchronous=is_async(function),
    )


