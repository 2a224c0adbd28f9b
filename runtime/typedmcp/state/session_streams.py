"""A session's copy on one worker: its engine (requests to the client carry ids naming the
worker) and its transport (POST streams written here, the GET stream in the shared event
store, resumption from any worker)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

from ..engine.jsonrpc import Engine
from ..transports.http_streams import SessionTransport, Stream, _current_stream
from .connection import StateUnavailable
from .events import RedisEventStore

logger = logging.getLogger("typedmcp")


class SharedEngine(Engine):
    """A session's engine whose requests to the client carry ids that name this worker."""

    worker = ""

    def new_request_id(self) -> str:  # type: ignore[override]
        self._next_id += 1
        return f"{self.worker}-{self._next_id}"


class SharedTransport(SessionTransport):
    """A session's transport on one worker: its POST streams are this worker's (ids that
    name it), its GET stream is the event store's (any worker appends to it)."""

    def __init__(
        self, session_id: str, store: RedisEventStore, replay_grace: float, worker: str,
        tag: str | None,
    ) -> None:
        super().__init__(session_id, store, replay_grace)
        self.shared_store = store
        self.worker = worker
        if tag is not None:  # a copy of a session created elsewhere
            self.tag = tag
            self.standalone = Stream(tag + "g", store, session_id, stored=True)
            self.streams = {self.standalone.id: self.standalone}

    def new_stream(self) -> Stream:
        self._counter += 1
        stream = Stream(
            f"{self.tag}p{self.worker[:8]}x{self._counter}", self.store, self.session_id,
            polling=self.polling,
        )
        self.streams[stream.id] = stream
        return stream

    def close_stream(self, stream: Stream) -> None:
        was_open = not stream.closed
        super().close_stream(stream)
        if was_open and stream.stored and stream is not self.standalone:
            self.shared_store.state._spawn(
                self.shared_store.completed(self.session_id, stream.id, stream.end - 1)
            )

    async def send(self, data: bytes) -> None:
        stream = _current_stream.get()
        if stream is None or stream.closed or stream.session_id != self.session_id:
            if self.standalone.closed:  # this copy was dropped
                return
            try:
                await self.shared_store.append_next(self.session_id, self.standalone.id, data)
            except StateUnavailable:
                logger.warning("a message for the GET stream of session %s... is lost: Redis "
                               "is unreachable", self.session_id[:12])
            return
        pending = stream.append(data)
        if pending is not None:
            await pending

    async def follow(self, last_event_id: str | None) -> AsyncIterator[tuple[str, bytes]] | None:
        """The events after ``last_event_id`` (None: the GET stream from now on), live
        while their stream is written anywhere; None for an id naming no stream of this
        session."""
        store = self.shared_store
        if last_event_id is None:
            stream_id = self.standalone.id
            after = await store.next_index(self.session_id, stream_id) - 1
        else:
            stream_id, _, index = last_event_id.rpartition(".")
            if not index.isdigit() or not stream_id.startswith(self.tag):
                return None
            after = int(index)
            local = self.streams.get(stream_id)
            if local is not None and local is not self.standalone and after + 1 >= local.first:
                return local.follow(after + 1)  # written here, and still in memory
            if stream_id != self.standalone.id and await store.replay(
                self.session_id, stream_id, 1 << 62
            ) is None:
                return None
        standalone = self.standalone
        live = (lambda: not standalone.closed) if stream_id == standalone.id else None
        return _with_ids(stream_id, store.follow(self.session_id, stream_id, after, live=live))


async def _with_ids(
    stream_id: str, events: AsyncIterator[tuple[int, bytes]]
) -> AsyncIterator[tuple[str, bytes]]:
    async for index, data in events:
        yield f"{stream_id}.{index}", data
