"""Extensions (SEP-2133): what each side declares in ``capabilities.extensions`` and reads
in its peer's.

An extension is named by an identifier, ``<vendor prefix>/<name>`` (for example
``io.modelcontextprotocol/tasks``), and declared with a settings object (``{}``: supported,
no settings). A server declares its extensions with ``extensions={...}`` (``serve``,
``http_app``, ``McpApp``), a client with ``connect_*(..., extensions={...})``; either reads
the peer's with ``session.peer_supports(identifier)`` and ``session.peer_extension(identifier)``
(a server handler: ``ctx.client_supports(identifier)`` in ``McpApp``).

Only the revisions whose schema has ``capabilities.extensions`` carry them on the wire:
2026-07-28 (in ``server/discover`` and in each request's client capabilities). The
handshake-era revisions (2024-11-05 .. 2025-11-25) have no such field, so nothing is
declared there and a peer on those revisions supports no extension.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: The tasks extension (SEP-2663).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

Extensions = Mapping[str, Mapping[str, Any]]
"""Extension identifier -> its settings object (``{}`` for none)."""

# a reverse-DNS vendor prefix, a slash, a name (SEP-2133)
_IDENTIFIER = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?/[A-Za-z0-9][A-Za-z0-9._-]*")


class ExtensionError(ValueError):
    """An ``extensions=`` option that cannot be declared (says what is wrong and how to fix it)."""


def checked_extensions(extensions: Extensions | None) -> dict[str, dict[str, Any]]:
    """A copy of ``extensions`` as it goes on the wire; :class:`ExtensionError` names the first
    identifier or settings value that is not valid."""
    if extensions is None:
        return {}
    if not isinstance(extensions, Mapping):
        raise ExtensionError(
            f"extensions must be a mapping of extension identifier to settings object, "
            f"for example {{{TASKS_EXTENSION!r}: {{}}}}; got {type(extensions).__name__}"
        )
    checked: dict[str, dict[str, Any]] = {}
    for identifier, settings in extensions.items():
        if not isinstance(identifier, str) or not _IDENTIFIER.fullmatch(identifier):
            raise ExtensionError(
                f"extension identifier {identifier!r} is not '<vendor prefix>/<name>' "
                f"(for example {TASKS_EXTENSION!r})"
            )
        if not isinstance(settings, Mapping):
            raise ExtensionError(
                f"the settings of extension {identifier!r} must be an object (a dict; "
                f"{{}} for no settings), not {type(settings).__name__}"
            )
        checked[identifier] = dict(settings)
    return checked


def carries_extensions(capabilities_model: Any) -> bool:
    """Whether a revision's generated ``ServerCapabilities``/``ClientCapabilities`` has the
    ``extensions`` field (2026-07-28 does; the handshake-era revisions do not)."""
    fields = getattr(capabilities_model, "model_fields", None) or {}
    return any((info.alias or name) == "extensions" for name, info in fields.items())


def declare_extensions(
    capabilities: dict[str, Any], extensions: Mapping[str, Mapping[str, Any]], capabilities_model: Any
) -> None:
    """Put ``extensions`` into a capabilities object when its revision has the field."""
    if extensions and carries_extensions(capabilities_model):
        capabilities["extensions"] = {name: dict(settings) for name, settings in extensions.items()}


def extension_settings(capabilities: Mapping[str, Any] | None, identifier: str) -> dict[str, Any] | None:
    """The settings a capabilities object declares for ``identifier``; None when it does not
    declare the extension."""
    declared = (capabilities or {}).get("extensions")
    if not isinstance(declared, Mapping):
        return None
    settings = declared.get(identifier)
    return dict(settings) if isinstance(settings, Mapping) else None


def supports_extension(capabilities: Mapping[str, Any] | None, identifier: str) -> bool:
    """Whether a capabilities object declares the extension ``identifier``."""
    return extension_settings(capabilities, identifier) is not None


class PeerExtensions:
    """What a session tells of the extensions its peer declared (its ``peer_capabilities``)."""

    peer_capabilities: dict[str, Any]

    def peer_supports(self, extension: str) -> bool:
        """Whether the peer declared the extension (``"io.modelcontextprotocol/tasks"``)."""
        return self.peer_extension(extension) is not None

    def peer_extension(self, extension: str) -> dict[str, Any] | None:
        """The settings the peer declared for an extension; None if it did not declare it."""
        return extension_settings(self.peer_capabilities, extension)
