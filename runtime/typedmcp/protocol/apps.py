"""MCP Apps (the ``io.modelcontextprotocol/ui`` extension, npm ``@modelcontextprotocol/ext-apps``
2.0.4; its schema is pinned in ``schema/extensions/ext-apps/``): the wire pieces, for servers
written with low-level handlers, for ``typedmcp.app`` and for clients and hosts.

* A **UI resource** is a ``ui://`` resource whose contents are HTML with the mime type
  ``text/html;profile=mcp-app`` and, in the contents' ``_meta.ui`` (and the listing's), the
  sandbox it asks for: :class:`UiResourceMeta` (CSP domains, permissions, a dedicated
  ``domain``, ``prefersBorder``). :func:`ui_resource_contents` builds one contents item.
* A **tool links** its UI with ``_meta.ui.resourceUri`` (and ``visibility``: who may call it,
  ``"model"`` and/or ``"app"``); :func:`ui_tool_meta` builds that ``_meta`` and also sets the
  legacy ``_meta["ui/resourceUri"]`` key, as the package's ``registerAppTool`` does.
* A **client** reads a tool's link with :func:`tool_ui_resource_uri` (both keys, the nested one
  first) and the resource with :func:`ui_resource_for`, getting a :class:`UiResource`.

``_meta`` on tools and resource contents exists from 2025-06-18 on; the runtime's sieve drops
it for older revisions, so a 2024-11-05 or 2025-03-26 client sees the tool without its UI.

The extension's capability (``capabilities.extensions["io.modelcontextprotocol/ui"]``, a client
saying which mime types it renders; 2026-07-28 only, as for every extension) goes through the
runtime's extension negotiation (:mod:`typedmcp.protocol.extensions`): a client passes
``extensions=ui_extension()``, a server reads it with :func:`peer_renders_ui`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .extensions import extension_settings

EXTENSION_ID = "io.modelcontextprotocol/ui"
"""The extension's identifier in ``capabilities.extensions``."""
RESOURCE_MIME_TYPE = "text/html;profile=mcp-app"
"""The mime type of a UI resource's contents."""
LEGACY_RESOURCE_URI_KEY = "ui/resourceUri"
"""The flat ``_meta`` key older hosts read instead of ``_meta.ui.resourceUri``."""
UI_SCHEME = "ui://"

Visibility = Literal["model", "app"]
VISIBILITIES: tuple[Visibility, ...] = ("model", "app")
PERMISSIONS = ("camera", "microphone", "geolocation", "clipboardWrite")


class UiError(ValueError):
    """A UI declaration or a UI resource that does not follow the extension."""


@dataclass(frozen=True)
class UiCsp:
    """The origins a UI resource's sandbox allows (each empty by default: nothing allowed).

    ``connect_domains``: fetch/XHR/WebSocket (``connect-src``); ``resource_domains``: images,
    scripts, styles, fonts, media; ``frame_domains``: nested iframes; ``base_uri_domains``:
    ``base-uri``."""

    connect_domains: Sequence[str] = ()
    resource_domains: Sequence[str] = ()
    frame_domains: Sequence[str] = ()
    base_uri_domains: Sequence[str] = ()

    def __post_init__(self) -> None:
        for name in ("connect_domains", "resource_domains", "frame_domains", "base_uri_domains"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(item, str) for item in value):
                raise UiError(f"UiCsp({name}=...) takes a list of origins, like ['https://api.example.com'] (got {value!r})")
            object.__setattr__(self, name, tuple(value))  # frozen and hashable, whatever was passed

    def to_wire(self) -> dict[str, list[str]]:
        """The ``csp`` object (only the lists that are set)."""
        pairs = (
            ("connectDomains", self.connect_domains),
            ("resourceDomains", self.resource_domains),
            ("frameDomains", self.frame_domains),
            ("baseUriDomains", self.base_uri_domains),
        )
        return {key: list(domains) for key, domains in pairs if domains}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> UiCsp:
        """Read a ``csp`` object (unknown keys are ignored, as a host would)."""

        def domains(key: str) -> tuple[str, ...]:
            value = data.get(key)
            return tuple(str(item) for item in value) if isinstance(value, list) else ()

        return cls(domains("connectDomains"), domains("resourceDomains"), domains("frameDomains"),
                   domains("baseUriDomains"))


@dataclass(frozen=True)
class UiResourceMeta:
    """What a UI resource asks of the host's sandbox: the ``_meta.ui`` of its contents.

    ``permissions`` names the features it requests (``camera``, ``microphone``,
    ``geolocation``, ``clipboardWrite``); ``domain`` a dedicated origin (its format is the
    host's); ``prefers_border`` whether it wants a visible border (None: the host decides)."""

    csp: UiCsp | None = None
    permissions: frozenset[str] = frozenset()
    domain: str | None = None
    prefers_border: bool | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.permissions) - set(PERMISSIONS))
        if unknown:
            raise UiError(
                f"unknown UI permission(s) {', '.join(map(repr, unknown))}: "
                f"the extension defines {', '.join(PERMISSIONS)}"
            )

    def to_wire(self) -> dict[str, Any]:
        """The ``_meta.ui`` object of a UI resource (only what is set)."""
        wire: dict[str, Any] = {}
        if self.csp is not None:
            wire["csp"] = self.csp.to_wire()
        if self.permissions:
            wire["permissions"] = {name: {} for name in PERMISSIONS if name in self.permissions}
        if self.domain is not None:
            wire["domain"] = self.domain
        if self.prefers_border is not None:
            wire["prefersBorder"] = self.prefers_border
        return wire

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> UiResourceMeta:
        """Read a ``_meta.ui`` object (unknown keys and permissions are ignored)."""
        csp = data.get("csp")
        permissions = data.get("permissions")
        domain = data.get("domain")
        border = data.get("prefersBorder")
        return cls(
            csp=UiCsp.from_wire(csp) if isinstance(csp, Mapping) else None,
            permissions=frozenset(
                name for name in permissions if name in PERMISSIONS
            ) if isinstance(permissions, Mapping) else frozenset(),
            domain=domain if isinstance(domain, str) else None,
            prefers_border=border if isinstance(border, bool) else None,
        )


def check_ui_uri(uri: str, what: str) -> str:
    """``uri`` if it is a ``ui://`` URI, else :class:`UiError` naming ``what``."""
    if not isinstance(uri, str) or not uri.startswith(UI_SCHEME) or len(uri) == len(UI_SCHEME):
        raise UiError(f"{what}: a UI resource URI starts with 'ui://' (got {uri!r}); write e.g. 'ui://notes/board'")
    return uri


def ui_tool_meta(
    resource_uri: str,
    *,
    visibility: Sequence[Visibility] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A tool's ``_meta`` linking it to the UI resource ``resource_uri``: ``ui.resourceUri``,
    ``ui.visibility`` when given, and the legacy ``ui/resourceUri`` key; ``meta`` is the rest
    of the tool's ``_meta`` (it must not carry its own ``ui``)."""
    check_ui_uri(resource_uri, "the tool's UI link")
    ui: dict[str, Any] = {"resourceUri": resource_uri}
    if visibility is not None:
        wrong = [item for item in visibility if item not in VISIBILITIES]
        if wrong or not visibility:
            raise UiError(
                f"UI visibility {list(visibility)!r} is not valid: give a non-empty list of "
                f"{' and '.join(map(repr, VISIBILITIES))}"
            )
        ui["visibility"] = list(dict.fromkeys(visibility))
    rest = dict(meta or {})
    if "ui" in rest or LEGACY_RESOURCE_URI_KEY in rest:
        raise UiError("the tool's meta already has a 'ui' entry: give the UI link once, with ui=...")
    return {**rest, "ui": ui, LEGACY_RESOURCE_URI_KEY: resource_uri}


def ui_resource_contents(uri: str, html: str, meta: UiResourceMeta | None = None) -> dict[str, Any]:
    """One ``resources/read`` contents item (wire form) for the UI resource ``uri``."""
    check_ui_uri(uri, "the UI resource")
    if not isinstance(html, str):
        raise UiError(f"UI resource {uri}: its contents are HTML text (a str), got {type(html).__name__}")
    contents: dict[str, Any] = {"uri": uri, "mimeType": RESOURCE_MIME_TYPE, "text": html}
    if meta is not None and meta.to_wire():
        contents["_meta"] = {"ui": meta.to_wire()}
    return contents


def _wire(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if dump is None:
        raise UiError(f"expected a tool or result (a mapping or a model), got {type(value).__name__}")
    dumped = dump(by_alias=True, exclude_none=True, mode="json")
    return dumped if isinstance(dumped, Mapping) else {}


def tool_ui_resource_uri(tool: Any) -> str | None:
    """The UI resource a listed tool (model or wire mapping) links to, or None:
    ``_meta.ui.resourceUri``, else the legacy ``_meta["ui/resourceUri"]``."""
    meta = _wire(tool).get("_meta")
    if not isinstance(meta, Mapping):
        return None
    ui = meta.get("ui")
    if isinstance(ui, Mapping) and isinstance(ui.get("resourceUri"), str):
        return str(ui["resourceUri"])
    legacy = meta.get(LEGACY_RESOURCE_URI_KEY)
    return legacy if isinstance(legacy, str) else None


def tool_ui_visibility(tool: Any) -> tuple[Visibility, ...]:
    """Who may call a listed tool: its ``_meta.ui.visibility`` (default both ``model`` and ``app``)."""
    meta = _wire(tool).get("_meta")
    ui = meta.get("ui") if isinstance(meta, Mapping) else None
    listed = ui.get("visibility") if isinstance(ui, Mapping) else None
    if not isinstance(listed, list):
        return VISIBILITIES
    return tuple(item for item in VISIBILITIES if item in listed)


@dataclass(frozen=True)
class UiResource:
    """A tool's UI as read from its server: the HTML and the sandbox it asks for
    (``meta``: the contents' ``_meta.ui``)."""

    uri: str
    html: str
    mime_type: str
    meta: UiResourceMeta = field(default_factory=UiResourceMeta)


def ui_resource_from_result(uri: str, result: Any) -> UiResource:
    """The :class:`UiResource` in a ``resources/read`` result (model or wire) for ``uri``;
    :class:`UiError` when it holds no HTML contents of the extension's mime type."""
    contents = _wire(result).get("contents")
    items = [item for item in contents if isinstance(item, Mapping)] if isinstance(contents, list) else []
    matching = [item for item in items if item.get("uri") == uri] or items
    for item in matching:
        if item.get("mimeType") != RESOURCE_MIME_TYPE:
            continue
        if isinstance(item.get("text"), str):
            html = str(item["text"])
        elif isinstance(item.get("blob"), str):
            html = base64.b64decode(item["blob"]).decode("utf-8")
        else:
            continue
        meta = item.get("_meta")
        ui = meta.get("ui") if isinstance(meta, Mapping) else None
        return UiResource(
            uri=uri, html=html, mime_type=RESOURCE_MIME_TYPE,
            meta=UiResourceMeta.from_wire(ui) if isinstance(ui, Mapping) else UiResourceMeta(),
        )
    found = ", ".join(repr(item.get("mimeType")) for item in items) or "no contents"
    raise UiError(f"UI resource {uri}: the server returned {found}, not {RESOURCE_MIME_TYPE!r} HTML")


class ResourceReader(Protocol):
    """Anything with a generated client's ``read_resource(uri=...)``."""

    async def read_resource(self, *, uri: str) -> Any: ...


async def ui_resource_for(client: ResourceReader, tool: Any) -> UiResource | None:
    """The UI of a listed ``tool`` (model or wire mapping), read with ``resources/read``
    through ``client`` (a generated client of any revision); None when the tool links none."""
    uri = tool_ui_resource_uri(tool)
    if uri is None:
        return None
    return ui_resource_from_result(uri, await client.read_resource(uri=uri))


# -- the extension's capability (SEP-2133 negotiation: typedmcp.protocol.extensions) --------


def ui_extension(mime_types: Iterable[str] = (RESOURCE_MIME_TYPE,)) -> dict[str, dict[str, Any]]:
    """The ``extensions=`` entry of a client that renders UI resources:
    ``{"io.modelcontextprotocol/ui": {"mimeTypes": [...]}}`` (``connect_*(..., extensions=...)``)."""
    return {EXTENSION_ID: {"mimeTypes": list(mime_types)}}


def ui_extension_settings(capabilities: Any) -> dict[str, Any] | None:
    """The peer's settings for the UI extension (``{"mimeTypes": [...]}``) in its capabilities
    (model or wire form), or None when it does not declare the extension."""
    return extension_settings(_wire(capabilities) if capabilities is not None else None, EXTENSION_ID)


def peer_renders_ui(capabilities: Any) -> bool:
    """Whether the peer's capabilities say it renders ``text/html;profile=mcp-app``
    (in a McpApp function: ``peer_renders_ui(ctx.client_capabilities)``)."""
    settings = ui_extension_settings(capabilities)
    mime_types = settings.get("mimeTypes") if settings is not None else None
    return isinstance(mime_types, list) and RESOURCE_MIME_TYPE in mime_types
