"""The client handlers the host gives each server's connection.

One handler object per connection, knowing its server's name: server-to-client requests
(sampling, elicitation, roots) and notifications (list changes, log messages, progress,
resource updates) go to the host tagged with that name. The class is derived from the
generated ``ClientHandlers`` of the host's package with only the methods the host serves,
because the runtime declares client capabilities from the methods a class overrides.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

#: server-to-client request kinds -> the generated handler method
REQUEST_METHODS = {"sampling": "create_message", "elicitation": "elicit", "roots": "list_roots"}
#: list_changed notification handler -> the lists it invalidates
LIST_CHANGES = {
    "on_tool_list_changed": ("tools",),
    "on_resource_list_changed": ("resources", "templates"),
    "on_prompt_list_changed": ("prompts",),
}
#: notification kinds the host can pass on -> the generated handler method
NOTIFICATION_METHODS = {
    "log": "on_logging_message",
    "progress": "on_progress",
    "resource_updated": "on_resource_updated",
}
#: Where the gateway sends a server's request made during a call it forwarded:
#: ``await forward(kind, server, params)``; NotImplemented: use the host's hooks.
Forward = Callable[[str, str, Any], Awaitable[Any]]


class HostSide(Protocol):
    """What a connection's handlers call on the host."""

    async def server_request(self, server: str, kind: str, params: Any, ctx: Any) -> Any: ...

    def list_changed(self, server: str, kinds: tuple[str, ...]) -> None: ...

    def notified(self, server: str, kind: str, params: Any) -> None: ...


class _Base:
    """State of every host handler object."""

    def __init__(self, host: HostSide, server: str) -> None:
        self.host = host
        self.server = server


def _request(kind: str) -> Any:
    async def handle(self: Any, params: Any, ctx: Any) -> Any:
        return await self.host.server_request(self.server, kind, params, ctx)

    handle.__name__ = REQUEST_METHODS[kind]
    return handle


def _list_change(kinds: tuple[str, ...]) -> Any:
    async def handle(self: Any, params: Any, ctx: Any) -> None:
        self.host.list_changed(self.server, kinds)

    return handle


def _notification(kind: str) -> Any:
    async def handle(self: Any, params: Any, ctx: Any) -> None:
        self.host.notified(self.server, kind, params)

    return handle


_classes: dict[tuple[str, frozenset[str], frozenset[str]], type] = {}


def handler_class(
    package: ModuleType, requests: frozenset[str], notifications: frozenset[str]
) -> type:
    """A ``ClientHandlers`` subclass of ``package`` answering ``requests`` (kinds of
    :data:`REQUEST_METHODS`) and passing on ``notifications`` (kinds of
    :data:`NOTIFICATION_METHODS`); list changes always reach the host. Cached."""
    key = (package.__name__, requests, notifications)
    found = _classes.get(key)
    if found is not None:
        return found
    base = importlib.import_module(f"{package.__name__}.client").ClientHandlers
    namespace: dict[str, Any] = {"__doc__": "Client handlers of one host connection."}
    for kind in requests:
        if hasattr(base, REQUEST_METHODS[kind]):
            namespace[REQUEST_METHODS[kind]] = _request(kind)
    for method, kinds in LIST_CHANGES.items():
        if hasattr(base, method):
            namespace[method] = _list_change(kinds)
    for kind in notifications:
        if hasattr(base, NOTIFICATION_METHODS[kind]):
            namespace[NOTIFICATION_METHODS[kind]] = _notification(kind)
    found = _classes[key] = type("HostClientHandlers", (_Base, base), namespace)
    return found


__all__ = ["LIST_CHANGES", "NOTIFICATION_METHODS", "REQUEST_METHODS", "HostSide", "handler_class"]
