"""MCP Apps in the typed API: ``@app.ui_resource("ui://notes/board", csp=...)`` declares a UI
resource from a function returning its HTML, ``@app.tool(ui="ui://notes/board")`` links a tool
to it (``_meta.ui.resourceUri``; ``ui=UiLink(uri, visibility=["app"])`` for a tool only the UI
calls). The wire pieces are :mod:`typedmcp.protocol.apps`'s."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from mcp_generated.v2025_11_25 import models

from ..engine.jsonrpc import INTERNAL_ERROR, RpcError
from ..protocol.apps import (
    RESOURCE_MIME_TYPE,
    UiCsp,
    UiError,
    UiResourceMeta,
    Visibility,
    check_ui_uri,
    ui_resource_contents,
    ui_tool_meta,
)
from .resources import ResourceSpec, declare_resource
from .signature import DeclarationError


@dataclasses.dataclass(frozen=True)
class UiLink:
    """A tool's link to its UI: the ``ui://`` resource and who may call the tool
    (``visibility``: ``"model"``, ``"app"``; None leaves the host's default, both)."""

    resource_uri: str
    visibility: Sequence[Visibility] | None = None


def tool_meta_with_ui(
    meta: Mapping[str, Any] | None, ui: str | UiLink | None, function: Callable[..., Any]
) -> Mapping[str, Any] | None:
    """The tool's ``_meta`` with its UI link added (``meta`` unchanged when ``ui`` is None)."""
    if ui is None:
        return meta
    link = UiLink(ui) if isinstance(ui, str) else ui
    if not isinstance(link, UiLink):
        raise DeclarationError(
            f"tool {getattr(function, '__qualname__', function)!r}: ui= takes a 'ui://...' URI or "
            f"UiLink(...), got {type(ui).__name__}"
        )
    try:
        return ui_tool_meta(link.resource_uri, visibility=link.visibility, meta=meta)
    except UiError as error:
        raise DeclarationError(f"tool {getattr(function, '__qualname__', function)!r}: {error}") from None


@dataclasses.dataclass(frozen=True)
class UiResourceSpec(ResourceSpec):
    """A declared UI resource: its function's HTML is served with the extension's mime type
    and, in the contents' ``_meta.ui``, the sandbox it asks for."""

    ui_meta: UiResourceMeta = dataclasses.field(default_factory=UiResourceMeta)

    def contents(self, uri: str, value: Any) -> list[Any]:
        if isinstance(value, str):
            return [models.TextResourceContents.model_validate(ui_resource_contents(uri, value, self.ui_meta))]
        if isinstance(value, models.TextResourceContents | models.BlobResourceContents):
            return [value]
        raise RpcError(
            INTERNAL_ERROR,
            f"UI resource {uri}: {getattr(self.function, '__qualname__', '?')} returned "
            f"{type(value).__name__}; a UI resource function returns its HTML as a str",
        )


def declare_ui_resource(
    function: Callable[..., Any],
    uri: str,
    *,
    name: str | None,
    title: str | None,
    description: str | None,
    csp: UiCsp | None,
    permissions: Iterable[str],
    domain: str | None,
    prefers_border: bool | None,
    meta: Mapping[str, Any] | None,
) -> UiResourceSpec:
    """Read ``function`` into a :class:`UiResourceSpec`; mistakes raise :class:`DeclarationError`."""
    what = f"UI resource {getattr(function, '__qualname__', function)!r}"
    try:
        check_ui_uri(uri, what)
        if "{" in uri or "}" in uri:
            raise UiError(f"{what}: {uri!r} is a template; a tool links one fixed 'ui://' URI")
        if isinstance(permissions, str):
            raise UiError(f"{what}: permissions= takes a list, like ['clipboardWrite'] (got {permissions!r})")
        if csp is not None and not isinstance(csp, UiCsp):
            raise UiError(f"{what}: csp= takes UiCsp(connect_domains=[...], ...), got {type(csp).__name__}")
        ui_meta = UiResourceMeta(
            csp=csp, permissions=frozenset(permissions), domain=domain, prefers_border=prefers_border
        )
    except UiError as error:
        raise DeclarationError(str(error)) from None
    listing = dict(meta or {})
    if "ui" in listing:
        raise DeclarationError(f"{what}: give the sandbox with csp=, permissions=, domain=, prefers_border=, not meta['ui']")
    if ui_meta.to_wire():
        listing["ui"] = ui_meta.to_wire()
    spec = declare_resource(
        function, uri, name=name, title=title, description=description, mime_type=RESOURCE_MIME_TYPE,
        icons=None, meta=listing or None,
    )
    fields = {item.name: getattr(spec, item.name) for item in dataclasses.fields(ResourceSpec)}
    return UiResourceSpec(**fields, ui_meta=ui_meta)
