"""Resources and resource templates from functions: ``notes://index`` is read by calling
a function of no arguments; ``notes://{note_id}`` matches URIs and passes each variable,
converted to its parameter's type by pydantic."""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from mcp_generated.v2025_11_25 import models

from ..engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, RpcError, clip
from ..protocol.stubs import ToolError
from .calling import is_async, run_function
from .completions import Completions
from .context import Context
from .tools import icon_models as _icons
from .signature import DeclarationError, FunctionSignature, describe_errors, read_signature

logger = logging.getLogger("typedmcp.app")
#: The JSON-RPC error for a URI no resource or template serves (the spec's -32002).
RESOURCE_NOT_FOUND = -32002
_VARIABLE = re.compile(r"\{([^{}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DRIVE = re.compile(r"[A-Za-z]:")


@dataclasses.dataclass(frozen=True)
class UriTemplate:
    """An RFC 6570 template of simple variables (``{name}``, level 1) and path variables
    (``{+path}``, level 2's reserved expansion), percent-decoded when matched.

    ``{name}`` matches one or more characters other than ``/``; its decoded value never
    holds ``/``, ``\\`` or NUL and is never ``.`` or ``..``: ``files://..%2Fetc%2Fpasswd``
    does not match ``files://{name}`` (it is an unknown resource, as any URI no template
    serves), so a function may join the value to a directory. ``{+path}`` is the opt-out
    for a variable that is a relative path: it matches ``/`` too, and its decoded value
    still never holds NUL, a ``..`` segment (between ``/`` or ``\\``) or an absolute path
    (a leading ``/`` or ``\\``, or a drive such as ``C:``)."""

    template: str
    variables: tuple[str, ...]
    pattern: re.Pattern[str]
    #: the variables written ``{+name}``: relative paths (see the class docstring)
    paths: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, template: str, what: str) -> UriTemplate:
        variables: list[str] = []
        paths: set[str] = set()
        parts: list[str] = []
        position = 0
        for found in _VARIABLE.finditer(template):
            expression = found.group(1)
            name = expression.removeprefix("+")
            if _NAME.fullmatch(name) is None:
                raise DeclarationError(
                    f"{what}: {{{expression}}} in {template!r} is not a variable; use {{name}} "
                    "(one path segment) or {+name} (a relative path) with a Python identifier"
                )
            if name in variables:
                raise DeclarationError(f"{what}: variable {{{name}}} appears twice in {template!r}")
            variables.append(name)
            parts.append(re.escape(template[position : found.start()]))
            if name != expression:
                paths.add(name)
                parts.append(f"(?P<{name}>.+)")
            else:
                parts.append(f"(?P<{name}>[^/]+)")
            position = found.end()
        rest = template[position:]
        if "{" in rest or "}" in rest:
            raise DeclarationError(f"{what}: unbalanced braces in {template!r}")
        parts.append(re.escape(rest))
        return cls(template, tuple(variables), re.compile("".join(parts)), frozenset(paths))

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri`` (decoded), or None when it does not match: also when a
        decoded value is one its variable refuses (see the class docstring)."""
        found = self.pattern.fullmatch(uri)
        if found is None:
            return None
        variables: dict[str, str] = {}
        for name, raw in found.groupdict().items():
            value = unquote(raw)
            if not (safe_path(value) if name in self.paths else safe_segment(value)):
                return None
            variables[name] = value
        return variables


def safe_segment(value: str) -> bool:
    """Whether ``value`` (a decoded ``{name}`` variable) names no more than one entry of a
    directory: no ``/``, ``\\`` or NUL in it, and not ``.`` or ``..``."""
    return "/" not in value and "\\" not in value and "\0" not in value and value not in (".", "..")


def safe_path(value: str) -> bool:
    """Whether ``value`` (a decoded ``{+path}`` variable) is a path that stays below the
    directory it is joined to: relative (no leading ``/`` or ``\\``, no drive such as
    ``C:``), without a ``..`` segment, without NUL."""
    if "\0" in value or value.startswith(("/", "\\")) or _DRIVE.match(value) is not None:
        return False
    return ".." not in value.replace("\\", "/").split("/")


@dataclasses.dataclass(frozen=True)
class ResourceSpec:
    """A declared resource (``template`` None) or resource template."""

    uri: str
    name: str
    function: Callable[..., Any]
    signature: FunctionSignature
    mime_type: str | None
    template: UriTemplate | None
    definition: models.Resource | models.ResourceTemplate
    completions: Completions
    asynchronous: bool
    adapter: TypeAdapter[Any] | None

    async def read(self, uri: str, variables: Mapping[str, str], context: Context) -> models.ReadResourceResult:
        """Call the function with the URI's variables (validated) and shape its contents."""
        try:
            validated = self.signature.validate(variables)
        except ValidationError as error:
            raise RpcError(
                INVALID_PARAMS, f"Invalid params: resource URI {clip(uri)}: {describe_errors(error)}"
            ) from None
        args, kwargs = self.signature.call_arguments(validated, context)
        try:
            value = await run_function(self.function, args, kwargs, context, asynchronous=self.asynchronous)
        except ToolError as error:  # a failure the client should read
            raise RpcError(INTERNAL_ERROR, f"Error reading resource {clip(uri)}: {error}", {"uri": uri}) from None
        except LookupError as error:  # NOTES[note_id]: nothing there
            logger.info("resource %s: %r read as not found", clip(uri), error)
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {clip(uri)}", {"uri": uri}) from None
        return models.ReadResourceResult(contents=self.contents(uri, value))

    def contents(self, uri: str, value: Any) -> list[Any]:
        """``str`` is text, ``bytes`` a blob, resource contents pass through; anything else
        is JSON (through the return annotation, when there is one)."""
        if isinstance(value, models.TextResourceContents | models.BlobResourceContents):
            return [value]
        if isinstance(value, list) and value and all(
            isinstance(item, models.TextResourceContents | models.BlobResourceContents) for item in value
        ):
            return value
        if isinstance(value, str):
            return [models.TextResourceContents(uri=uri, text=value, mime_type=self.mime_type or "text/plain")]
        if isinstance(value, bytes):
            return [
                models.BlobResourceContents(
                    uri=uri,
                    blob=base64.b64encode(value).decode(),
                    mime_type=self.mime_type or "application/octet-stream",
                )
            ]
        data = self.adapter.dump_python(value, mode="json") if self.adapter else to_jsonable_python(value)
        return [
            models.TextResourceContents(
                uri=uri, text=json.dumps(data, ensure_ascii=False), mime_type=self.mime_type or "application/json"
            )
        ]


def declare_resource(
    function: Callable[..., Any],
    uri: str,
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    mime_type: str | None,
    icons: Sequence[Any] | None,
    meta: Mapping[str, Any] | None,
) -> ResourceSpec:
    """Read ``function`` into a :class:`ResourceSpec`; mistakes raise :class:`DeclarationError`."""
    if not isinstance(uri, str) or not uri or ":" not in uri:
        raise DeclarationError(
            f"resource {getattr(function, '__qualname__', function)!r}: {uri!r} is not a URI; "
            "pass one with a scheme, like 'notes://index' or 'notes://{note_id}'"
        )
    resource_name = name if name is not None else getattr(function, "__name__", uri)
    what = f"resource {uri!r} ({getattr(function, '__qualname__', resource_name)})"
    template = UriTemplate.parse(uri, what) if "{" in uri or "}" in uri else None
    signature = read_signature(function, what=what, context_type=Context)
    parameters = [parameter.name for parameter in signature.parameters]
    variables = template.variables if template is not None else ()
    if set(parameters) != set(variables):
        extra = sorted(set(parameters) - set(variables))
        missing = sorted(set(variables) - set(parameters))
        problems = []
        if extra:
            problems.append(f"parameters {extra} are not variables of the URI")
        if missing:
            problems.append(f"URI variables {missing} are not parameters")
        raise DeclarationError(
            f"{what}: {'; '.join(problems)}; a resource's parameters are exactly its URI's "
            "{variables} (plus, optionally, the Context)"
        )
    return_type = signature.hints.get("return")
    adapter: TypeAdapter[Any] | None = None
    if return_type is not None and return_type not in (str, bytes):
        try:
            adapter = TypeAdapter(return_type)
        except Exception:
            adapter = None
    summary = description if description is not None else signature.docstring.summary
    common: dict[str, Any] = {
        "name": resource_name,
        "title": title,
        "description": summary,
        "mime_type": mime_type,
        "icons": _icons(icons),
        "meta": dict(meta) if meta is not None else None,
    }
    try:
        definition: models.Resource | models.ResourceTemplate = (
            models.ResourceTemplate(uri_template=uri, **common)
            if template is not None
            else models.Resource(uri=uri, **common)
        )
    except ValidationError as error:
        raise DeclarationError(f"{what}: its metadata is not valid MCP: {describe_errors(error)}") from None
    return ResourceSpec(
        uri=uri,
        name=resource_name,
        function=function,
        signature=signature,
        mime_type=mime_type,
        template=template,
        definition=definition,
        completions=Completions(
            f"resource template {uri!r}" if template is not None else f"resource {uri!r} (no URI variables)",
            variables,
        ),
        asynchronous=is_async(function),
        adapter=adapter,
    )
