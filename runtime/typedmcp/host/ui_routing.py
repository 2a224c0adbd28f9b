"""MCP Apps through the gateway when several servers serve the same ``ui://`` URI.

Resource URIs are not renamed by the gateway (they identify content), so a ``ui://`` URI
listed by one server resolves unchanged. When several servers list the same one (two
``ui://notes/board``), reading it would go to the first lister and every other server's tools
would show that server's view; so, for those URIs only, the gateway exports one URI per owner,
``ui://<server>/<rest>`` (``ui://beta/notes/board``), in the owner's tools' ``_meta.ui``
(and the legacy key), in ``resources/list``, and maps a read of it back to the owner's
original URI (the contents' ``uri`` is the exported one again)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..protocol.apps import LEGACY_RESOURCE_URI_KEY, UI_SCHEME
from ..protocol.results import to_wire
from .registry import ResourceEntry, ToolEntry


def exported_ui_uri(server: str, uri: str) -> str:
    """The URI the gateway exports for ``server``'s copy of the shared ``uri``."""
    return f"{UI_SCHEME}{server}/{uri[len(UI_SCHEME):]}"


def _shared_ui(shared_uris: Mapping[str, list[str]]) -> dict[str, list[str]]:
    return {uri: owners for uri, owners in shared_uris.items() if uri.startswith(UI_SCHEME)}


def export_tool(entry: ToolEntry, shared_uris: Mapping[str, list[str]]) -> dict[str, Any]:
    """The tool as the gateway lists it: its UI link pointing at its own server's copy."""
    exported = entry.exported()
    meta = exported.get("_meta")
    if not isinstance(meta, Mapping):
        return exported
    shared = _shared_ui(shared_uris)
    rewritten = dict(meta)
    ui = meta.get("ui")
    if isinstance(ui, Mapping) and ui.get("resourceUri") in shared:
        rewritten["ui"] = {**ui, "resourceUri": exported_ui_uri(entry.server, str(ui["resourceUri"]))}
    legacy = meta.get(LEGACY_RESOURCE_URI_KEY)
    if isinstance(legacy, str) and legacy in shared:
        rewritten[LEGACY_RESOURCE_URI_KEY] = exported_ui_uri(entry.server, legacy)
    return {**exported, "_meta": rewritten} if rewritten != meta else exported


def export_resources(entries: Iterable[ResourceEntry], shared_uris: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    """The resources as the gateway lists them: a shared ``ui://`` URI once per owner."""
    shared = _shared_ui(shared_uris)
    listed: list[dict[str, Any]] = []
    for entry in entries:
        owners = shared.get(entry.uri)
        if owners is None:
            listed.append(dict(entry.definition))
        else:
            listed.extend({**entry.definition, "uri": exported_ui_uri(owner, entry.uri)} for owner in owners)
    return listed


def resolve_ui_uri(uri: str, shared_uris: Mapping[str, list[str]]) -> tuple[str, str] | None:
    """``(original URI, server)`` when ``uri`` is one the gateway exported for a shared one."""
    for original, owners in _shared_ui(shared_uris).items():
        for owner in owners:
            if exported_ui_uri(owner, original) == uri:
                return original, owner
    return None


def relabel_contents(result: Any, original: str, exported: str) -> dict[str, Any]:
    """A ``resources/read`` result with the contents of ``original`` named ``exported``."""
    wire = dict(to_wire(result))
    contents = wire.get("contents")
    if isinstance(contents, list):
        wire["contents"] = [
            {**item, "uri": exported} if isinstance(item, Mapping) and item.get("uri") == original else item
            for item in contents
        ]
    return wire
