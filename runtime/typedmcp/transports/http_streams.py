"""The streams of a Streamable HTTP session: what the engine sends goes to the stream of
the request being served, else to the session's GET stream (:class:`SessionTransport`);
each :class:`Stream` keeps a window of its latest events and feeds the event store for
resumption with ``Last-Event-ID``; the helpers write them as SSE."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import secrets
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable
from typing import Any

from .asgi import SSE_HEADERS, Receive, Send, disconnected
from .events import Event, EventStore, MemoryEventStore

logger = logging.getLogger("typedmcp")


#: An open stream's window of recent events (for live delivery and quick resumption).
MAX_EVENTS_PER_STREAM = 10_000


MAX_WINDOW_BYTES = 1024 * 1024


#: How long a stream written in full stays replayable (see ``SessionTransport.delivered``).
REPLAY_GRACE_SECONDS = 10.0


class Stream:
    """One stream of a session: a request's reply or the GET stream. Every event is
    delivered live; once the stream is SSE (``stored``: from the start for the GET stream,
    from :meth:`store_events` on for a request's reply, which stays plain JSON if it can),
    its events also go to the session's :class:`EventStore` for resumption. A window of
    the latest events (at most ``MAX_EVENTS_PER_STREAM`` and ``MAX_WINDOW_BYTES``, the
    newest always) is kept here while the stream is open, so following it live never reads
    the store; a reader falling further behind skips what left the window.

    Events are numbered from 1; the event id on the wire is ``<stream id>.<index>``, and
    ``<stream id>.0`` (the priming event of 2025-11-25) means "before the first event".
    """

    def __init__(
        self,
        stream_id: str,
        store: EventStore,
        session_id: str,
        *,
        polling: bool = False,
        stored: bool = False,
    ) -> None:
        self.id = stream_id
        self.store = store
        self.session_id = session_id
        self.polling = polling  # 2025-11-25+: the client resumes a dropped POST stream
        self.stored = stored  # its events go to the store (it is, or will be, SSE)
        self.events: deque[bytes] = deque()
        self.size = 0  # bytes in ``events``
        self.first = 1  # the index of events[0]: older events were dropped from the window
        self.closed = False
        self.drops = 0  # how many times the server dropped the connections following it
        self._changed = asyncio.Event()

    @property
    def end(self) -> int:
        """The index the next event will get."""
        return self.first + len(self.events)

    def append(self, data: bytes) -> Awaitable[None] | None:
        """Add an event: live at once; what the store returns (an awaitable when it does
        I/O) is for the sender to await."""
        index = self.end
        events = self.events
        events.append(data)
        self.size += len(data)
        while len(events) > 1 and (
            len(events) > MAX_EVENTS_PER_STREAM or self.size > MAX_WINDOW_BYTES
        ):
            self.size -= len(events.popleft())
            self.first += 1
        self._changed.set()
        if self.stored:
            return self.store.append(self.session_id, self.id, index, data)
        return None

    async def store_events(self) -> None:
        """The stream is SSE from now on (replayable): the store gets what the window holds
        and every event after it."""
        self.stored = True
        pending = [
            self.store.append(self.session_id, self.id, self.first + offset, data)
            for offset, data in enumerate(self.events)
        ]
        for awaitable in pending:
            if awaitable is not None:
                await awaitable

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    def drop_connections(self) -> None:
        """End the HTTP responses following this stream now (after a ``retry`` field);
        the stream goes on, and the client resumes it with GET + ``Last-Event-ID``."""
        self.drops += 1
        self._changed.set()

    def event_id(self, index: int) -> str:
        return f"{self.id}.{index}"

    def follow(self, start: int = 1, drops: int | None = None) -> AsyncIterator[tuple[str, bytes]]:
        """``(event id, data)`` from ``start`` on (or from the oldest event still kept),
        live, until the stream closes, or until its connections are dropped after the
        ``drops``-th time (default: from now on); then ``("", b"")`` comes last."""
        return self._follow(start, self.drops if drops is None else drops)

    async def _follow(self, start: int, drops: int) -> AsyncIterator[tuple[str, bytes]]:
        index = start
        while True:
            index = max(index, self.first)
            while index < self.end:
                yield self.event_id(index), self.events[index - self.first]
                index = max(index + 1, self.first)
            if self.closed:
                return
            if self.drops != drops:
                yield "", b""
                return
            self._changed.clear()
            if index < self.end or self.closed or self.drops != drops:
                continue
            await self._changed.wait()


_current_stream: contextvars.ContextVar[Stream | None] = contextvars.ContextVar(
    "mcp_current_stream", default=None
)


def close_sse_stream() -> bool:
    """From a handler: drop the connection of the SSE stream answering the current request
    (2025-11-25 SSE polling), after sending a ``retry`` field. The handler goes on; the
    client reconnects with GET + ``Last-Event-ID`` and gets the rest, the response
    included. False (nothing done) outside an HTTP request or for older sessions."""
    stream = _current_stream.get()
    if stream is None or not stream.polling or stream.closed:
        return False
    stream.drop_connections()
    return True


class SessionTransport:
    """Routes what the engine sends: to the POST stream of the request being served (a
    context variable, inherited by its handler task) while that stream is open, else to
    the session's GET stream. A stream of another session is never written to, whatever
    context the sender runs in.

    Stream ids are ``<tag>p<n>`` (POST replies) and ``<tag>g`` (the GET stream), where the
    tag is random per session: event ids are unique over the session's streams, name their
    stream, and an id from another session never matches one of ours.
    """

    #: What the server middleware context calls this transport.
    transport_name = "streamable-http"
    #: The ``network.transport`` of the OpenTelemetry conventions (``protocol/telemetry``).
    network_transport = "tcp"

    def __init__(
        self,
        session_id: str,
        store: EventStore | None = None,
        replay_grace: float = REPLAY_GRACE_SECONDS,
    ) -> None:
        self.session_id = session_id
        self.store: EventStore = store if store is not None else MemoryEventStore()
        self.replay_grace = replay_grace
        # Streams written in full, with when they stop being replayable (oldest first).
        self._delivered: deque[tuple[float, str]] = deque()
        self.tag = secrets.token_hex(4)
        self.polling = False  # set once the session has negotiated 2025-11-25 or later
        self.standalone = Stream(self.tag + "g", self.store, session_id, stored=True)
        self.streams: dict[str, Stream] = {self.standalone.id: self.standalone}  # open ones
        self._counter = 0

    def new_stream(self) -> Stream:
        self._counter += 1
        stream = Stream(
            f"{self.tag}p{self._counter}", self.store, self.session_id, polling=self.polling
        )
        self.streams[stream.id] = stream
        return stream

    def close_stream(self, stream: Stream) -> None:
        """The stream is complete: from now on it is resumed from the store only."""
        stream.close()
        self.streams.pop(stream.id, None)

    async def delivered(self, stream_id: str) -> None:
        """A complete stream was written in full to a live connection. The connection may
        still break before the client has read its end (the kernel took the bytes, nothing
        more is known), so it stays replayable for ``replay_grace`` seconds, then the store
        forgets it (checked as later streams are delivered; all of it at session end).
        Memory stays bounded meanwhile by the store's per-session limits."""
        now = time.monotonic()
        self._delivered.append((now + self.replay_grace, stream_id))
        delivered = self._delivered
        while delivered and delivered[0][0] <= now:
            await _settle(self.store.forget(self.session_id, delivered.popleft()[1]))

    async def resume(self, last_event_id: str) -> tuple[Stream | None, AsyncIterator[tuple[str, bytes]]] | None:
        """What follows ``last_event_id`` on its own stream (the stream, if still open, and
        the events); None for an id that names no stream of this session."""
        stream_id, _, index = last_event_id.rpartition(".")
        if not index.isdigit() or not stream_id.startswith(self.tag):
            return None
        after = int(index)
        stream = self.streams.get(stream_id)
        if stream is not None and after + 1 >= stream.first:
            return stream, stream.follow(after + 1)  # all of it is still in memory
        end = stream.end if stream is not None else None
        history = await self.store.replay(self.session_id, stream_id, after)
        if history is None and stream is None:
            return None
        return stream, _chain(stream_id, history or [], stream, end)

    async def receive(self) -> bytes | None:  # the engine's read loop is not used over HTTP
        return None

    async def send(self, data: bytes) -> None:
        stream = _current_stream.get()
        if stream is None or stream.closed or stream.session_id != self.session_id:
            # Not sent by a request of this session that is still open (a task that outlived
            # its request, or work another session's request started): the GET stream.
            stream = self.standalone
            if stream.closed:  # the session has ended
                return
        pending = stream.append(data)
        if pending is not None:
            await pending


async def _chain(
    stream_id: str, history: list[Event], stream: Stream | None, end: int | None
) -> AsyncIterator[tuple[str, bytes]]:
    """Stored events, then (for a stream still open) the live ones from ``end`` on."""
    for index, data in history:
        if end is None or index < end:
            yield f"{stream_id}.{index}", data
    if stream is not None and end is not None:
        async for event in stream.follow(end):
            yield event


def _event(event_id: str, data: bytes, retry_ms: int | None = None) -> bytes:
    """One SSE event: ``event: message``, its id, an optional ``retry``, one data line."""
    retry = b"retry: %d\n" % retry_ms if retry_ms is not None else b""
    return b"event: message\nid: " + event_id.encode() + b"\n" + retry + b"data: " + data + b"\n\n"


async def _pump(send: Send, events: AsyncIterator[tuple[str, bytes]], retry_ms: int) -> str:
    """Write ``events``; return the id of the last one written ("" for none)."""
    written = ""
    async for event_id, data in events:
        if not event_id:  # the server drops this connection: say when to come back
            chunk = b"retry: %d\n\n" % retry_ms
        else:
            chunk = b"event: message\nid: " + event_id.encode() + b"\ndata: " + data + b"\n\n"
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
        written = event_id or written
    return written


_BACKGROUND: set[asyncio.Future[Any]] = set()


def _background(pending: Awaitable[None]) -> None:
    """Let an event store's clean-up run on its own (from code that cannot await), in an
    empty context (it may be another session's), its failure logged."""
    future = contextvars.Context().run(asyncio.ensure_future, pending)
    _BACKGROUND.add(future)
    future.add_done_callback(_background_done)


def _background_done(future: asyncio.Future[None]) -> None:
    _BACKGROUND.discard(future)
    if not future.cancelled() and future.exception() is not None:
        logger.error("event store clean-up failed", exc_info=future.exception())


async def _settle(pending: Awaitable[None] | None) -> None:
    if pending is not None:
        await pending


async def _stream_events(
    send: Send,
    receive: Receive,
    events: AsyncIterator[tuple[str, bytes]],
    priming: bytes,
    retry_ms: int,
) -> str | None:
    """Write ``priming`` then ``events`` as SSE until they end or the client hangs up.

    A hang-up ends only this HTTP response: the stream itself (and the handler feeding it)
    goes on, and its events stay replayable with ``Last-Event-ID``. Returns the id of the
    last event written ("" for none) when the response ended with the connection still
    open, None when the client hung up first: the server cannot know more of delivery.
    """
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                *SSE_HEADERS,
            ],
        }
    )
    if priming:
        await send({"type": "http.response.body", "body": priming, "more_body": True})
    pump = asyncio.ensure_future(_pump(send, events, retry_ms))
    hangup = asyncio.ensure_future(disconnected(receive))
    try:
        await asyncio.wait({pump, hangup}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (pump, hangup):
            task.cancel()
        await asyncio.gather(pump, hangup, return_exceptions=True)
    if pump.cancelled() or pump.exception() is not None:
        return None  # the client is gone (or the server's send failed): nothing more to write
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    return None if not hangup.cancelled() else pump.result()
