"""Event stores: where Streamable HTTP keeps SSE events for resumption (``Last-Event-ID``).

The HTTP server numbers the events of each stream itself (1, 2, ...; the event id on the
wire is ``<stream id>.<index>``, and stream ids are unique per session and carry a random
tag of the session, so ids never repeat across the streams of a session and an id from
another session resolves to nothing). A store only keeps ``(index, data)`` per stream and
hands back what followed a given index.

Live delivery never waits for the store on the read side: a stream's recent events are
also kept in memory while it is open, and the store is asked only to resume a stream that
has ended or whose in-memory window has moved past the requested event. ``append`` and
``forget`` may return None (done at once, no await: the in-memory default) or an awaitable
(a store doing I/O), which the server awaits.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Awaitable
from typing import Protocol

Event = tuple[int, bytes]


class EventStore(Protocol):
    """Keeps the events of a session's SSE streams for replay."""

    def append(self, session_id: str, stream_id: str, index: int, data: bytes) -> Awaitable[None] | None:
        """Keep event ``index`` (1, 2, ... in order) of ``stream_id``."""
        ...

    async def replay(self, session_id: str, stream_id: str, after: int) -> list[Event] | None:
        """The kept events of ``stream_id`` with an index above ``after``, in order; None
        when the store knows no such stream of that session (the server answers 404)."""
        ...

    def forget(self, session_id: str) -> Awaitable[None] | None:
        """Drop every stream of a session (it has ended)."""
        ...


class MemoryEventStore:
    """The default store: per session, the last ``max_streams`` streams, each with its last
    ``max_events_per_stream`` events, in this process's memory."""

    def __init__(self, *, max_events_per_stream: int = 10_000, max_streams: int = 1000) -> None:
        self.max_events_per_stream = max_events_per_stream
        self.max_streams = max_streams
        self._sessions: dict[str, OrderedDict[str, deque[Event]]] = {}

    def append(self, session_id: str, stream_id: str, index: int, data: bytes) -> None:
        streams = self._sessions.get(session_id)
        if streams is None:
            streams = self._sessions[session_id] = OrderedDict()
        events = streams.get(stream_id)
        if events is None:
            events = streams[stream_id] = deque(maxlen=self.max_events_per_stream)
            if len(streams) > self.max_streams:
                streams.popitem(last=False)  # the oldest stream goes first
        events.append((index, data))

    async def replay(self, session_id: str, stream_id: str, after: int) -> list[Event] | None:
        streams = self._sessions.get(session_id)
        events = streams.get(stream_id) if streams is not None else None
        if events is None:
            return None
        return [event for event in events if event[0] > after]

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
