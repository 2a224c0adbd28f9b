"""Server-wide change notifications, shared by both eras: the :class:`ChangeFeed`.

Handshake-era sessions subscribe to it (and publish their handlers' change
notifications there); 2026-07-28 ``subscriptions/listen`` streams read it."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from typing import Any

RESOURCE_UPDATED = "notifications/resources/updated"


#: Server-wide changes: published on the ChangeFeed so every session and listen stream hears.
CHANGE_NOTIFICATIONS = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        RESOURCE_UPDATED,
    }
)


class ChangeFeed:
    """Server-wide change notifications (list_changed, ``resources/updated``).

    Publish here; every ``subscriptions/listen`` stream that opted in receives it (2026-07-28),
    and so does every handshake-era session that declared the capability.
    """

    def __init__(self) -> None:
        self._listeners: dict[Callable[[str, dict[str, Any]], None], object] = {}
        #: Also tell other workers: set by ``typedmcp.state`` when the workers share
        #: their state (called with the method, the params and the origin).
        self.relay: Callable[[str, Mapping[str, Any] | None, object], None] | None = None

    def subscribe(
        self, listener: Callable[[str, dict[str, Any]], None], owner: object = None
    ) -> Callable[[], None]:
        """Call ``listener(method, params)`` for each change; returns the unsubscribe.
        ``owner`` does not hear the changes it publishes itself (see :meth:`publish`)."""
        self._listeners[listener] = owner

        def unsubscribe() -> None:
            self._listeners.pop(listener, None)

        return unsubscribe

    def publish(
        self, method: str, params: Mapping[str, Any] | None = None, *, origin: object = None
    ) -> None:
        """Tell every listener, except those owned by ``origin`` (a session that already
        sent the notification to its own client). Each listener runs in an empty context:
        nothing of the publishing request (its stream, its scope) follows the change into
        work done for another session."""
        for listener, owner in list(self._listeners.items()):
            if origin is None or owner is not origin:
                contextvars.Context().run(listener, method, dict(params or {}))
        if self.relay is not None:
            self.relay(method, params, origin)

    def tools_changed(self) -> None:
        self.publish("notifications/tools/list_changed")

    def prompts_changed(self) -> None:
        self.publish("notifications/prompts/list_changed")

    def resources_changed(self) -> None:
        self.publish("notifications/resources/list_changed")

    def resource_updated(self, uri: str) -> None:
        self.publish(RESOURCE_UPDATED, {"uri": uri})
