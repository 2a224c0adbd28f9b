"""MCP Apps through the host: the UI resource of a merged tool, read from the server that
owns the tool (not from whichever server lists the URI first: two servers may both serve a
``ui://board``). The gateway needs nothing more: tool definitions keep their ``_meta`` and
resource URIs are not renamed, so a gateway client reads ``ui://`` resources unchanged."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from ..protocol.apps import UiResource, tool_ui_resource_uri, tool_ui_visibility, ui_resource_from_result
from .errors import UnknownTool
from .registry import Registry, ToolEntry


class RoutingHost(Protocol):
    """What is used of :class:`~typedmcp.host.Host`: its registry and its routed reads."""

    @property
    def registry(self) -> Registry: ...

    async def read_resource(self, uri: str, *, server: str | None = ..., timeout: float | None = ...) -> Any: ...


async def ui_resource_for_tool(host: RoutingHost, name: str, *, timeout: float | None = None) -> UiResource | None:
    """The UI of the merged tool ``name`` (its exported name), or None when it links none."""
    entry = host.registry.tools.get(name)
    if entry is None:
        raise UnknownTool("tool", name, len(host.registry.tools))
    uri = tool_ui_resource_uri(entry.definition)
    if uri is None:
        return None
    result = await host.read_resource(uri, server=entry.server, timeout=timeout)
    return ui_resource_from_result(uri, result)


def model_visible(entries: Iterable[ToolEntry]) -> list[ToolEntry]:
    """The tools a model may be offered: all but those whose ``_meta.ui.visibility`` leaves out
    ``"model"`` (the extension's app-only tools, called by their UI alone)."""
    return [entry for entry in entries if "model" in tool_ui_visibility(entry.definition)]
