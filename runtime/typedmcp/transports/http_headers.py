"""The stateless era's request-metadata headers, client side: ``Mcp-Method``,
``Mcp-Name`` and the ``Mcp-Param-*`` headers of a tool's ``x-mcp-header`` parameters."""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from ..protocol.meta import HEADER_ANNOTATION, NAME_PARAM, TASK_NAME_PARAM, encode_header_value, header_form

#: The per-request headers of the POST being sent (set by the session around one request;
#: the transport's ``send`` runs in the same task, so it sees them).
REQUEST_HEADERS: ContextVar[Mapping[str, str] | None] = ContextVar(
    "mcp_request_headers", default=None
)

#: Extra headers for the POST of one call, any era (the host's interceptors set them
#: around a call; the transport's ``send`` runs in the caller's task, so it sees them).
CALL_HEADERS: ContextVar[Mapping[str, str] | None] = ContextVar("mcp_call_headers", default=None)


ParamHeaders = dict[tuple[str, ...], str]
"""Where a tool's ``x-mcp-header`` parameters sit in its arguments -> their header token."""


_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")  # RFC 9110 token


_HEADER_TYPES = frozenset({"string", "integer", "boolean"})


_NOT_SCHEMAS = frozenset({"const", "enum", "default", "examples"})


class InvalidHeaderAnnotation(ValueError):
    """A tool's ``x-mcp-header`` annotations break the rules (such a tool is not used)."""


def param_headers(input_schema: Any) -> ParamHeaders:
    """The ``x-mcp-header`` annotations of a tool's input schema, by property path.

    Valid only on ``string``/``integer``/``boolean`` properties reached from the root
    through ``properties`` alone, as non-empty RFC 9110 tokens unique ignoring case;
    anything else raises :class:`InvalidHeaderAnnotation`.
    """
    found: ParamHeaders = {}
    seen: set[str] = set()

    def walk(node: Any, path: tuple[str, ...] | None) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, None)
            return
        if not isinstance(node, dict):
            return
        if HEADER_ANNOTATION in node:
            token = node[HEADER_ANNOTATION]
            where = ".".join(path) if path else "(not a property)"
            if not path:
                raise InvalidHeaderAnnotation(f"{where}: {HEADER_ANNOTATION} outside properties")
            if not isinstance(token, str) or not _TOKEN.match(token):
                raise InvalidHeaderAnnotation(f"{where}: {token!r} is not a header token")
            if node.get("type") not in _HEADER_TYPES:
                raise InvalidHeaderAnnotation(
                    f"{where}: {HEADER_ANNOTATION} on a {node.get('type')!r} property"
                )
            if token.lower() in seen:
                raise InvalidHeaderAnnotation(f"{where}: header {token!r} is used twice")
            seen.add(token.lower())
            found[path] = token
        for key, value in node.items():
            if key in _NOT_SCHEMAS or key == HEADER_ANNOTATION:
                continue
            if key == "properties" and path is not None and isinstance(value, dict):
                for name, child in value.items():
                    walk(child, (*path, name))
            else:
                walk(value, None)

    walk(input_schema, ())
    return found


def request_headers(
    method: str, params: Mapping[str, Any] | None, version: str, params_headers: ParamHeaders | None
) -> dict[str, str]:
    """The request-metadata headers of one stateless-era POST: ``MCP-Protocol-Version``,
    ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-{Name}`` (Base64 sentinel when needed)."""
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    name_field = NAME_PARAM.get(method) or TASK_NAME_PARAM.get(method)
    if name_field is not None and params:
        name = params.get(name_field)
        if isinstance(name, str):
            headers["Mcp-Name"] = encode_header_value(name)
    if params_headers and params:
        arguments = params.get("arguments")
        for path, token in params_headers.items():
            value: Any = arguments
            for key in path:
                value = value.get(key) if isinstance(value, Mapping) else None
            form = header_form(value) if value is not None else None
            if form is not None:
                headers["Mcp-Param-" + token] = encode_header_value(form)
    return headers
