"""Wire vocabulary of the stateless era (2026-07-28), shared by the server and the client.

Reserved ``_meta`` keys, the era's error codes, the HTTP request-metadata headers and
their Base64 sentinel, and which methods may answer with an ``InputRequiredResult``.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

# Reserved _meta keys (io.modelcontextprotocol/ prefix).
PROTOCOL_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY: Final = "io.modelcontextprotocol/subscriptionId"

# Error codes the era defines (HTTP 400 each).
HEADER_MISMATCH: Final = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022

# Methods
DISCOVER: Final = "server/discover"
LISTEN: Final = "subscriptions/listen"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
CANCELLED: Final = "notifications/cancelled"
#: Only these may answer with ``resultType: "input_required"`` (multi round-trip requests).
INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "resources/read", "prompts/get"})
#: What an input request may ask the client for.
INPUT_REQUEST_METHODS: Final = frozenset(
    {"sampling/createMessage", "elicitation/create", "roots/list"}
)
COMPLETE: Final = "complete"
INPUT_REQUIRED: Final = "input_required"

# HTTP request-metadata headers (lower case: ASGI header names are lower case).
VERSION_HEADER: Final = "mcp-protocol-version"
METHOD_HEADER: Final = "mcp-method"
NAME_HEADER: Final = "mcp-name"
PARAM_HEADER_PREFIX: Final = "mcp-param-"
#: ``Mcp-Name`` mirrors this params member for these methods.
NAME_PARAM: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: The same for the tasks extension's methods (a client sends it; a server that serves the
#: extension checks it).
TASK_NAME_PARAM: Final = {"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}
#: The tool-parameter annotation that asks clients to mirror a value as ``Mcp-Param-{Name}``.
HEADER_ANNOTATION: Final = "x-mcp-header"

_SENTINEL = re.compile(r"^=\?base64\?(.*)\?=$")
_SAFE = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$")


class HeaderValueError(ValueError):
    """A request-metadata header value that is not valid (bad characters, broken Base64)."""


def encode_header_value(value: str) -> str:
    """A header value for ``value``: as is when plain safe ASCII, else the Base64 sentinel
    (also for plain values that happen to look like a sentinel)."""
    if value and _SAFE.match(value) and not _SENTINEL.match(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def decode_header_value(raw: str) -> str:
    """The value a header carries: decoded from the Base64 sentinel, or as is.

    Raises :class:`HeaderValueError` for a broken sentinel or characters a plain value
    may not hold (control characters, non-ASCII, surrounding whitespace).
    """
    match = _SENTINEL.match(raw)
    if match is None:
        if raw and not _SAFE.match(raw):
            raise HeaderValueError("holds characters a plain header value may not hold")
        return raw
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise HeaderValueError("holds a broken Base64 sentinel") from None


def header_form(value: Any) -> str | None:
    """How a params value is mirrored in a header (``Mcp-Param-*``): strings as is,
    integers in decimal, booleans as ``true``/``false``; None for anything else."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def modern_meta(params: Any) -> dict[str, Any] | None:
    """The ``_meta`` of a request if it declares a stateless-era protocol version."""
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta:
        return meta
    return None


# Result and multi round-trip fields (wire names).
RESULT_TYPE: Final = "resultType"
INPUT_REQUESTS: Final = "inputRequests"
INPUT_RESPONSES: Final = "inputResponses"
REQUEST_STATE: Final = "requestState"
#: Error codes only a stateless-era server sends: seeing one proves the server is modern.
MODERN_ERRORS: Final = frozenset(
    {HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION}
)
