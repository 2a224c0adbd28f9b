"""A function's signature as a pydantic model: read once, when the function is declared.

Each parameter becomes a field of one model per function (``create_model``): its annotation
(``Annotated``/``Field`` constraints included), its default, and a description from
``Field(description=...)`` or else the docstring. A parameter annotated with the context
type is left out and filled in at call time. Fields are named ``p0``, ``p1``... with the
parameter's name as alias, so any parameter name works (``json``, ``model_x``, ``_x``).
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from ..engine.jsonrpc import clip
from .docstrings import Docstring, parse_docstring


class DeclarationError(TypeError):
    """A tool, resource, prompt or completion declared in a way that cannot be served:
    raised when it is declared (at import time), naming the function and the fix."""


class QuietTitles(GenerateJsonSchema):
    """JSON Schema without the titles pydantic makes up from field names (``"Title":
    "Note Id"``): a model's schema keeps only what the code says."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def generate(self, schema: core_schema.CoreSchema, mode: Any = "validation") -> JsonSchemaValue:
        result = super().generate(schema, mode)
        result.pop("title", None)
        return result


def describe_errors(error: ValidationError, limit: int = 5) -> str:
    """A pydantic error as one line a model can act on: ``field: problem; ...``."""
    parts = []
    for item in error.errors(include_url=False)[:limit]:
        where = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        parts.append(f"{where}: {clip(item['msg'], 200)}")
    more = error.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One parameter the peer provides: its name, field name in the model, kind."""

    name: str
    field: str
    positional_only: bool


@dataclasses.dataclass(frozen=True)
class FunctionSignature:
    """What calling a declared function needs: the arguments model, the parameters in
    order, the context parameter's name, the docstring's descriptions."""

    function: Callable[..., Any]
    model: type[BaseModel]
    parameters: tuple[Parameter, ...]
    context_parameter: str | None
    docstring: Docstring
    hints: Mapping[str, Any]
    #: ``(parameter name, field name)`` of each parameter, when none is positional-only.
    keyword_fields: tuple[tuple[str, str], ...] | None = None

    def input_schema(self) -> dict[str, Any]:
        """The arguments' JSON Schema (an object, closed: unknown arguments are refused)."""
        return self.model.model_json_schema(by_alias=True, schema_generator=QuietTitles)

    def validate(self, arguments: Mapping[str, Any]) -> BaseModel:
        """The arguments validated (converted) by the model; raises ``ValidationError``."""
        validated: BaseModel = self.model.__pydantic_validator__.validate_python(arguments)
        return validated

    def call_arguments(
        self, validated: BaseModel, context: object | None
    ) -> tuple[list[Any], dict[str, Any]]:
        """Positional and keyword arguments for the function from validated arguments."""
        if self.keyword_fields is not None:  # (the usual case: every parameter by keyword)
            kwargs = {name: getattr(validated, field) for name, field in self.keyword_fields}
            if self.context_parameter is not None:
                kwargs[self.context_parameter] = context
            return [], kwargs
        args: list[Any] = []
        kwargs = {}
        for parameter in self.parameters:
            value = getattr(validated, parameter.field)
            if parameter.positional_only:
                args.append(value)
            else:
                kwargs[parameter.name] = value
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        return args, kwargs


def _is_context(annotation: Any, context_type: type) -> bool:
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _is_context(typing.get_args(annotation)[0], context_type)
    candidate = origin if origin is not None else annotation
    return isinstance(candidate, type) and issubclass(candidate, context_type)


def _check_documented(docstring: Docstring, names: list[str], what: str, function: Callable[..., Any]) -> None:
    """A docstring entry (``Args:``, ``Parameters``, ``:param x:``) for a parameter the
    function does not have is a mistake: a renamed parameter whose description is lost."""
    unknown = [name for name in docstring.params if name not in names]
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, [n for n in names if n not in docstring.params], n=1)
    fix = f"rename it to {close[0]!r}" if close else "rename it to the parameter it describes, or remove it"
    more = f" (and {', '.join(map(repr, unknown[1:]))})" if len(unknown) > 1 else ""
    raise DeclarationError(
        f"{what}: the docstring of {_qualname(function)} describes {name!r}{more}, which is not "
        f"one of its parameters ({', '.join(names) or 'none'}); {fix}"
    )


def read_signature(
    function: Callable[..., Any], *, what: str, context_type: type
) -> FunctionSignature:
    """Read ``function`` into a :class:`FunctionSignature`; ``what`` names it in errors
    (``"tool 'add_note'"``). Raises :class:`DeclarationError` for what cannot be served."""
    try:
        signature = inspect.signature(function)
        hints = typing.get_type_hints(function, include_extras=True)
    except (NameError, TypeError, ValueError) as error:
        raise DeclarationError(
            f"{what}: cannot read the signature of {_qualname(function)} ({error}); "
            "define its annotations at module level so they resolve when it is declared"
        ) from None
    docstring = parse_docstring(inspect.getdoc(function))
    _check_documented(docstring, list(signature.parameters), what, function)
    fields: dict[str, Any] = {}
    parameters: list[Parameter] = []
    context_parameter: str | None = None
    for index, (name, parameter) in enumerate(signature.parameters.items()):
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise DeclarationError(
                f"{what}: parameter {'*' if parameter.kind is inspect.Parameter.VAR_POSITIONAL else '**'}"
                f"{name} of {_qualname(function)} takes any number of "
                "arguments, which no schema can describe; list each argument as a parameter"
            )
        if name not in hints:
            raise DeclarationError(
                f"{what}: parameter {name!r} of {_qualname(function)} has no type annotation; "
                f"annotate it (for example {name}: str) so its schema and validation follow"
            )
        annotation = hints[name]
        if _is_context(annotation, context_type):
            context_parameter = name
            continue
        field_name = f"p{index}"
        fields[field_name] = _field(annotation, parameter.default, name, docstring)
        parameters.append(
            Parameter(name, field_name, parameter.kind is inspect.Parameter.POSITIONAL_ONLY)
        )
    model = _model(function, what, fields, parameters)
    return FunctionSignature(
        function=function,
        model=model,
        parameters=tuple(parameters),
        context_parameter=context_parameter,
        docstring=docstring,
        hints=hints,
        keyword_fields=(
            None
            if any(parameter.positional_only for parameter in parameters)
            else tuple((parameter.name, parameter.field) for parameter in parameters)
        ),
    )


def _field(annotation: Any, default: Any, name: str, docstring: Docstring) -> tuple[Any, Any]:
    """``(annotation, default)`` for ``create_model``, with the alias and the docstring's
    description (unless ``Field(description=...)`` gives one)."""
    default = ... if default is inspect.Parameter.empty else default
    info = FieldInfo.from_annotated_attribute(annotation, default)
    extra: dict[str, Any] = {"alias": name}
    if info.description is None and name in docstring.params:
        extra["description"] = docstring.params[name]
    return (Annotated[annotation, Field(**extra)], default)


def _model(
    function: Callable[..., Any],
    what: str,
    fields: dict[str, Any],
    parameters: list[Parameter],
) -> type[BaseModel]:
    """The arguments model; a parameter whose type has no JSON Schema is named."""
    config = ConfigDict(extra="forbid", validate_by_alias=True)
    name = f"{_camel(getattr(function, '__name__', 'function'))}Arguments"
    try:
        model: type[BaseModel] = create_model(name, __config__=config, **fields)
        model.model_json_schema(by_alias=True, schema_generator=QuietTitles)
        return model
    except Exception:  # pydantic's schema errors have several types: find the parameter
        pass
    for parameter in parameters:
        annotation = fields[parameter.field][0]
        try:
            single = create_model("Check", __config__=config, value=(annotation, ...))
            single.model_json_schema(schema_generator=QuietTitles)
        except Exception as error:
            shown = _type_name(typing.get_args(annotation)[0])
            raise DeclarationError(
                f"{what}: parameter {parameter.name!r} of {_qualname(function)} has type "
                f"{shown}, which pydantic cannot validate or describe in JSON Schema "
                f"({pydantic_reason(error)}); use str, numbers, bool, lists, dicts, Literal, "
                "Enum, a pydantic model, a dataclass or a TypedDict (or annotate the "
                "context parameter with the app's Context)"
            ) from None
    raise DeclarationError(
        f"{what}: the parameters of {_qualname(function)} do not make a valid pydantic "
        "model together; check their defaults against their types"
    )


def pydantic_reason(error: Exception) -> str:
    """The first line of a pydantic error (its type name when it has no message)."""
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return clip(f"{type(error).__name__}: {first}" if first else type(error).__name__, 300)


def _camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in name.split("_") if part) or "Function"


def _qualname(function: Callable[..., Any]) -> str:
    return str(getattr(function, "__qualname__", repr(function)))


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation)
