"""Prompts from functions: the arguments from the signature (MCP sends them as strings,
converted by pydantic), the messages from the return value."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import ValidationError

from mcp_generated.v2025_11_25 import models

from ..engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError
from ..protocol.stubs import ToolError
from .calling import is_async, run_function
from .completions import Completions
from .content import CONTENT_TYPES, text
from .context import Context
from .tools import icon_models as _icons
from .signature import DeclarationError, FunctionSignature, describe_errors, read_signature


def user(content: str | Any) -> models.PromptMessage:
    """A user message (text, or any content block)."""
    return message("user", content)


def assistant(content: str | Any) -> models.PromptMessage:
    """An assistant message (text, or any content block)."""
    return message("assistant", content)


def message(role: Literal["user", "assistant"], content: str | Any) -> models.PromptMessage:
    """A prompt message of ``role``."""
    return models.PromptMessage(role=role, content=text(content) if isinstance(content, str) else content)


@dataclasses.dataclass(frozen=True)
class PromptSpec:
    """A declared prompt."""

    name: str
    function: Callable[..., Any]
    signature: FunctionSignature
    definition: models.Prompt
    completions: Completions
    asynchronous: bool

    async def render(self, arguments: Mapping[str, str], context: Context) -> models.GetPromptResult:
        """Validate the arguments, call the function, make its value the messages."""
        try:
            validated = self.signature.validate(arguments)
        except ValidationError as error:
            raise RpcError(
                INVALID_PARAMS, f"Invalid params: prompt {self.name}: {describe_errors(error)}"
            ) from None
        args, kwargs = self.signature.call_arguments(validated, context)
        try:
            value = await run_function(self.function, args, kwargs, context, asynchronous=self.asynchronous)
        except ToolError as error:  # a failure the client should read
            raise RpcError(INTERNAL_ERROR, f"Error getting prompt {self.name}: {error}") from None
        if isinstance(value, models.GetPromptResult):
            return value
        items = value if isinstance(value, list | tuple) else [value]
        messages = [self._message(item) for item in items]
        return models.GetPromptResult(description=self.definition.description, messages=messages)

    def _message(self, item: Any) -> models.PromptMessage:
        if isinstance(item, models.PromptMessage):
            return item
        if isinstance(item, (str, *CONTENT_TYPES)):
            return user(item)
        if isinstance(item, Mapping):
            return models.PromptMessage.model_validate(dict(item))
        raise TypeError(
            f"prompt {self.name} returned {type(item).__name__}; return a str, a PromptMessage "
            "(user(...), assistant(...)) or a list of them"
        )


_SCALARS = frozenset({"string", "integer", "number", "boolean"})


def _from_string(schema: Mapping[str, Any], definitions: Mapping[str, Any]) -> bool:
    """Whether a parameter's JSON Schema is a scalar a string argument can be turned into
    (an enum, a constant, a string, a number or a boolean, or a union of those)."""
    reference = schema.get("$ref")
    if isinstance(reference, str):
        return _from_string(definitions.get(reference.rsplit("/", 1)[-1], {}), definitions)
    if "anyOf" in schema:
        parts = [part for part in schema["anyOf"] if part.get("type") != "null"]
        return all(_from_string(part, definitions) for part in parts)
    if "enum" in schema or "const" in schema:
        return True
    return schema.get("type") in _SCALARS


def declare_prompt(
    function: Callable[..., Any],
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    icons: Sequence[Any] | None,
    meta: Mapping[str, Any] | None,
) -> PromptSpec:
    """Read ``function`` into a :class:`PromptSpec`; mistakes raise :class:`DeclarationError`."""
    prompt_name = name if name is not None else getattr(function, "__name__", "")
    if not isinstance(prompt_name, str) or not prompt_name:
        raise DeclarationError(f"prompt {function!r}: pass name='...' (the function has no name)")
    what = f"prompt {prompt_name!r}"
    signature = read_signature(function, what=what, context_type=Context)
    fields = signature.model.model_fields
    schema = signature.input_schema()
    properties, definitions = schema.get("properties", {}), schema.get("$defs", {})
    for parameter in signature.parameters:
        if not _from_string(properties.get(parameter.name, {}), definitions):
            raise DeclarationError(
                f"{what}: parameter {parameter.name!r} of "
                f"{getattr(function, '__qualname__', prompt_name)} cannot come from a string, and "
                "MCP sends prompt arguments as strings; use str, int, float, bool, a Literal "
                "or an Enum (parse richer values inside the function)"
            )
    arguments = [
        models.PromptArgument(
            name=parameter.name,
            description=fields[parameter.field].description,
            required=fields[parameter.field].is_required(),
        )
        for parameter in signature.parameters
    ]
    try:
        definition = models.Prompt(
            name=prompt_name,
            title=title,
            description=description if description is not None else signature.docstring.summary,
            arguments=arguments or None,
            icons=_icons(icons),
            meta=dict(meta) if meta is not None else None,
        )
    except ValidationError as error:
        raise DeclarationError(f"{what}: its metadata is not valid MCP: {describe_errors(error)}") from None
    return PromptSpec(
        name=prompt_name,
        function=function,
        signature=signature,
        definition=definition,
        completions=Completions(what, [parameter.name for parameter in signature.parameters]),
        asynchronous=is_async(function),
    )
