"""Event stores: where Streamable HTTP keeps SSE events for resumption (``Last-Event-ID``).

The HTTP server numbers the events of each stream itself (1, 2, ...; the event id on the
wire is ``<stream id>.<index>``, and stream ids are unique per session and carry a random
tag of the session, so ids never repeat across the streams of a session and an id from
another session resolves to nothing). A store only keeps ``(index, data)`` per stream and
hands back what followed a given index.

What the server hands a store, and when it takes it back:

- only events that can be replayed: those of SSE streams (a request answered with plain
  JSON never reaches the store, nor does the reply to ``initialize``);
- ``forget(session, stream)`` once a stream is complete and acknowledged: its final
  response was written to a connection that was still open when the response ended (a
  client that hangs up, or a connection the server drops for SSE polling, leaves the
  stream to be resumed);
- ``forget(session)`` when the session ends.

Between those, a store keeps each session within bounds of its own, in events and in bytes,
dropping the oldest events first; a resumption that asks for dropped events gets what is
left (or 404 when nothing of the stream is). The server's own memory is bounded apart from
the store: an open stream keeps a window of its latest events (see ``http.Stream``).

Live delivery never waits for the store on the read side: the store is asked only to resume
a stream that has ended or whose in-memory window has moved past the requested event.
``append`` and ``forget`` may return None (done at once, no await: the in-memory default) or
an awaitable (a store doing I/O), which the server awaits. A stream's events are appended in
index order; with a store doing I/O, appends may overlap, so keep them by index (a sorted
set, say) and ``replay`` in index order.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Awaitable
from typing import Protocol

Event = tuple[int, bytes]

#: Default bounds of the in-memory store, per session.
MAX_EVENTS_PER_SESSION = 10_000
MAX_BYTES_PER_SESSION = 1024 * 1024


class EventStore(Protocol):
    """Keeps the events of a session's SSE streams for replay, within per-session bounds."""

    def append(self, session_id: str, stream_id: str, index: int, data: bytes) -> Awaitable[None] | None:
        """Keep event ``index`` (1, 2, ... in order) of ``stream_id``, dropping the session's
        oldest events if it goes over the store's bounds (an event larger than the bound
        is not kept at all)."""
        ...

    async def replay(self, session_id: str, stream_id: str, after: int) -> list[Event] | None:
        """The kept events of ``stream_id`` with an index above ``after``, in order; None
        when the store knows no such stream of that session (the server answers 404)."""
        ...

    def forget(self, session_id: str, stream_id: str | None = None) -> Awaitable[None] | None:
        """Drop one stream of a session (it was delivered in full), or, without
        ``stream_id``, every stream of the session (it has ended)."""
        ...


class _Kept:
    """One session's streams in the memory store, oldest stream first, with its totals."""

    __slots__ = ("bytes", "count", "streams")

    def __init__(self) -> None:
        self.streams: OrderedDict[str, deque[Event]] = OrderedDict()
        self.count = 0
        self.bytes = 0


class MemoryEventStore:
    """The default store, in this process's memory: per session at most
    ``max_events_per_session`` events and ``max_bytes_per_session`` bytes of event data;
    beyond that the oldest events of the oldest stream go first.

    At worst it holds ``max_bytes_per_session`` times the number of sessions (the HTTP
    app's ``max_sessions``): 1 GiB with the defaults, and in practice only the streams
    whose client went away before their response.
    """

    def __init__(
        self,
        *,
        max_events_per_session: int = MAX_EVENTS_PER_SESSION,
        max_bytes_per_session: int = MAX_BYTES_PER_SESSION,
    ) -> None:
        self.max_events_per_session = max_events_per_session
        self.max_bytes_per_session = max_bytes_per_session
        self._sessions: dict[str, _Kept] = {}

    def append(self, session_id: str, stream_id: str, index: int, data: bytes) -> None:
        if len(data) > self.max_bytes_per_session:
            return  # delivered live, never replayable
        kept = self._sessions.get(session_id)
        if kept is None:
            kept = self._sessions[session_id] = _Kept()
        events = kept.streams.get(stream_id)
        if events is None:
            events = kept.streams[stream_id] = deque()
        events.append((index, data))
        kept.count += 1
        kept.bytes += len(data)
        while kept.count > self.max_events_per_session or kept.bytes > self.max_bytes_per_session:
            oldest_id, oldest = next(iter(kept.streams.items()))
            _, dropped = oldest.popleft()
            kept.count -= 1
            kept.bytes -= len(dropped)
            if not oldest:
                del kept.streams[oldest_id]

    async def replay(self, session_id: str, stream_id: str, after: int) -> list[Event] | None:
        kept = self._sessions.get(session_id)
        events = kept.streams.get(stream_id) if kept is not None else None
        if events is None:
            return None
        return [event for event in events if event[0] > after]

    def forget(self, session_id: str, stream_id: str | None = None) -> None:
        if stream_id is None:
            self._sessions.pop(session_id, None)
            return
        kept = self._sessions.get(session_id)
        events = kept.streams.pop(stream_id, None) if kept is not None else None
        if kept is None or events is None:
            return
        kept.count -= len(events)
        kept.bytes -= sum(len(data) for _, data in events)
        if not kept.streams:
            del self._sessions[session_id]

    def retained(self, session_id: str) -> tuple[int, int]:
        """How many events, and how many bytes of them, the store keeps for a session."""
        kept = self._sessions.get(session_id)
        return (kept.count, kept.bytes) if kept is not None else (0, 0)
