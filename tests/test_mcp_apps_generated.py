"""The hand-written MCP Apps helpers (``typedmcp.protocol.apps``) checked against the models
generated from ext-apps' pinned schema (``mcp_generated.extensions.apps``).

The helpers stay hand-written (they validate declarations, read the legacy ``_meta`` key and
are lenient when reading a host's data); what they put on the wire must be what the generated
models accept, and their constants must be the schema's.
"""

from __future__ import annotations

import typing
from typing import Any

import pytest

from mcp_generated.extensions.apps import IDENTIFIER, models
from typedmcp.protocol import apps


def round_trip(model: Any, wire: dict[str, Any]) -> dict[str, Any]:
    """``wire`` as the generated model reads it and writes it back (unknown keys refused)."""
    dumped: dict[str, Any] = model.model_validate(wire, by_name=False).model_dump(by_alias=True, exclude_none=True)
    return dumped


def test_the_constants_are_the_schemas() -> None:
    assert apps.EXTENSION_ID == IDENTIFIER
    fields = models.McpUiResourcePermissions.model_fields
    assert apps.PERMISSIONS == tuple(field.alias or name for name, field in fields.items())
    (visibility,) = typing.get_args(models.McpUiToolMeta.model_fields["visibility"].annotation)[:1]
    assert apps.VISIBILITIES == typing.get_args(typing.get_args(visibility)[0])


@pytest.mark.parametrize(
    "meta",
    [
        apps.UiResourceMeta(),
        apps.UiResourceMeta(csp=apps.UiCsp(connect_domains=["https://api.example.com"],
                                           base_uri_domains=["https://cdn.example.com"]),
                            permissions=frozenset({"camera", "clipboardWrite"}),
                            domain="notes.example.com", prefers_border=False),
    ],
    ids=["empty", "everything"],
)
def test_a_resources_ui_meta_is_what_the_generated_model_reads(meta: apps.UiResourceMeta) -> None:
    wire = meta.to_wire()
    assert round_trip(models.McpUiResourceMeta, wire) == wire
    assert apps.UiResourceMeta.from_wire(wire) == meta


def test_a_tools_ui_link_is_what_the_generated_model_reads() -> None:
    meta = apps.ui_tool_meta("ui://notes/board", visibility=["app", "model"])
    assert round_trip(models.McpUiToolMeta, meta["ui"]) == meta["ui"]
    assert round_trip(models.McpUiClientCapabilities, apps.ui_extension()[IDENTIFIER]) == {
        "mimeTypes": [apps.RESOURCE_MIME_TYPE]
    }


def test_the_generated_model_refuses_what_the_helpers_refuse() -> None:
    with pytest.raises(apps.UiError):
        apps.UiResourceMeta(permissions=frozenset({"bluetooth"}))
    with pytest.raises(ValueError):
        models.McpUiResourcePermissions.model_validate({"bluetooth": {}}, by_name=False)
    with pytest.raises(apps.UiError):
        apps.ui_tool_meta("ui://x", visibility=["user"])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        models.McpUiToolMeta.model_validate({"resourceUri": "ui://x", "visibility": ["user"]}, by_name=False)
