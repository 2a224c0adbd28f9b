"""The SSE event store in Redis: resumption with ``Last-Event-ID`` on any worker.

Per session (all keys carry the session id in a hash tag, so a cluster keeps them on one
node), under ``<prefix>ev:{<session>}:``:

* ``meta``: a hash with the session's totals (``count``, ``bytes``), a counter ordering its
  streams (``n``), and per stream: who writes it (``w:<stream>``, a worker id, or ``*`` for
  a stream any worker appends to), its last index once complete (``end:<stream>``), and the
  next index of a stream whose indexes Redis hands out (``next:<stream>``);
* ``streams``: a sorted set of the session's stream ids, oldest first;
* ``s:<stream>``: a sorted set of ``<index>:<data>`` scored by index.

Appends, trims and forgets are Lua scripts (atomic); every key expires ``retention``
seconds after its last write, so an abandoned session's events go even if no one forgets
them. The bounds are those of :class:`~typedmcp.events.MemoryEventStore`, per
session, oldest events of the oldest stream first. Each append also publishes a doorbell
on ``<prefix>sse:{<session>}``, which a worker following the stream live listens to.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..transports.events import MAX_BYTES_PER_SESSION, MAX_EVENTS_PER_SESSION, Event

from .connection import RedisState, StateUnavailable

logger = logging.getLogger("typedmcp")

#: How long a session's events live after their last write (seconds).
DEFAULT_RETENTION = 3600
#: A follower re-reads the store at least this often (a doorbell may be lost in an outage).
POLL_SECONDS = 2.0
SHARED_WRITER = "*"

# KEYS: meta, streams, stream key. ARGV: stream id, index (0: hand one out), data,
# max events, max bytes, retention, key prefix of the session's streams, doorbell channel,
# writer (a worker id, or * for any). Returns the event's index.
_APPEND = """
local meta, streams, skey = KEYS[1], KEYS[2], KEYS[3]
local sid, data = ARGV[1], ARGV[3]
local max_events, max_bytes = tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl, sprefix = tonumber(ARGV[6]), ARGV[7]
local index = tonumber(ARGV[2])
if index == 0 then
  -- never below the time in ms: after Redis lost its data, new ids still follow old ones
  local now = redis.call('TIME')
  local floor = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  index = tonumber(redis.call('HGET', meta, 'next:' .. sid) or '0') + 1
  if index < floor then index = floor end
  redis.call('HSET', meta, 'next:' .. sid, index)
end
if redis.call('HEXISTS', meta, 'end:' .. sid) == 0 then
  redis.call('HSETNX', meta, 'w:' .. sid, ARGV[9])
end
redis.call('PUBLISH', ARGV[8], sid)
local size = string.len(data)
if size > max_bytes then return index end
if not redis.call('ZSCORE', streams, sid) then
  redis.call('ZADD', streams, redis.call('HINCRBY', meta, 'n', 1), sid)
end
if redis.call('ZADD', skey, index, index .. ':' .. data) == 0 then return index end
local count = redis.call('HINCRBY', meta, 'count', 1)
local bytes = redis.call('HINCRBY', meta, 'bytes', size)
while count > max_events or bytes > max_bytes do
  local oldest = redis.call('ZRANGE', streams, 0, 0)[1]
  if not oldest then break end
  local okey = sprefix .. oldest
  local popped = redis.call('ZPOPMIN', okey)
  if #popped == 0 then
    redis.call('ZREM', streams, oldest)
  else
    local member = popped[1]
    local dropped = string.len(member) - string.find(member, ':', 1, true)
    count = redis.call('HINCRBY', meta, 'count', -1)
    bytes = redis.call('HINCRBY', meta, 'bytes', -dropped)
    if redis.call('ZCARD', okey) == 0 then redis.call('ZREM', streams, oldest) end
  end
end
redis.call('EXPIRE', meta, ttl)
redis.call('EXPIRE', streams, ttl)
redis.call('EXPIRE', skey, ttl)
return index
"""

# KEYS: meta, streams, stream key. ARGV: stream id. Drops one stream and its totals.
_FORGET_STREAM = """
local meta, streams, skey, sid = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local members = redis.call('ZRANGE', skey, 0, -1)
local bytes = 0
for _, member in ipairs(members) do
  bytes = bytes + string.len(member) - string.find(member, ':', 1, true)
end
if #members > 0 then
  redis.call('HINCRBY', meta, 'count', -#members)
  redis.call('HINCRBY', meta, 'bytes', -bytes)
end
redis.call('DEL', skey)
redis.call('ZREM', streams, sid)
redis.call('HDEL', meta, 'w:' .. sid, 'end:' .. sid, 'next:' .. sid)
return #members
"""

# KEYS: meta, streams. ARGV: key prefix of the session's streams. Drops the session.
_FORGET_SESSION = """
local streams = redis.call('ZRANGE', KEYS[2], 0, -1)
for _, sid in ipairs(streams) do redis.call('DEL', ARGV[1] .. sid) end
redis.call('DEL', KEYS[1], KEYS[2])
return #streams
"""


class RedisEventStore:
    """An :class:`~typedmcp.events.EventStore` in Redis, shared by every worker,
    with the in-memory store's per-session bounds (see the module doc).

    Beyond the protocol, a worker that resumes a stream another worker still writes
    follows it live (:meth:`follow`), and a session's GET stream is written by any worker
    (:meth:`append_next`, indexes handed out by Redis).
    """

    def __init__(
        self,
        state: RedisState,
        *,
        max_events_per_session: int = MAX_EVENTS_PER_SESSION,
        max_bytes_per_session: int = MAX_BYTES_PER_SESSION,
        retention: int = DEFAULT_RETENTION,
    ) -> None:
        self.state = state
        self.max_events_per_session = max_events_per_session
        self.max_bytes_per_session = max_bytes_per_session
        self.retention = retention
        self._scripts: dict[str, Any] = {}
        self._waiters: dict[str, set[asyncio.Event]] = {}  # doorbell channel -> followers
        self._failing = False

    # -- keys -----------------------------------------------------------------------------

    def _base(self, session_id: str) -> str:
        return f"{self.state.prefix}ev:{{{session_id}}}:"

    def _keys(self, session_id: str, stream_id: str) -> list[str]:
        base = self._base(session_id)
        return [base + "meta", base + "streams", base + "s:" + stream_id]

    def doorbell(self, session_id: str) -> str:
        return f"{self.state.prefix}sse:{{{session_id}}}"

    def _script(self, name: str, source: str) -> Any:
        script = self._scripts.get(name)
        if script is None:
            script = self._scripts[name] = self.state.client.register_script(source)
        return script

    # -- the EventStore protocol ----------------------------------------------------------

    def append(self, session_id: str, stream_id: str, index: int, data: bytes) -> Awaitable[None]:
        return self._append(session_id, stream_id, index, data)

    async def _append(self, session_id: str, stream_id: str, index: int, data: bytes) -> None:
        try:
            await self._run_append(session_id, stream_id, index, data)
        except StateUnavailable:
            self._warn_once()  # live delivery goes on; this event cannot be replayed

    async def _run_append(
        self, session_id: str, stream_id: str, index: int, data: bytes, writer: str | None = None
    ) -> int:
        base = self._base(session_id)
        keys = self._keys(session_id, stream_id)
        args = [
            stream_id, index, data, self.max_events_per_session, self.max_bytes_per_session,
            self.retention, base + "s:", self.doorbell(session_id), writer or self.state.worker,
        ]
        script = self._script("append", _APPEND)
        kept = await self.state.call(lambda client: script(keys=keys, args=args, client=client))
        self._failing = False
        return int(kept)

    def _warn_once(self) -> None:
        if not self._failing:
            self._failing = True
            logger.warning("SSE events are not kept for resumption while Redis is unreachable")

    async def replay(self, session_id: str, stream_id: str, after: int) -> list[Event] | None:
        meta, streams, skey = self._keys(session_id, stream_id)

        async def read(client: Any) -> Any:
            async with client.pipeline(transaction=False) as pipe:
                pipe.zscore(streams, stream_id)
                pipe.zrangebyscore(skey, f"({after}", "+inf")
                pipe.hmget(meta, ["w:" + stream_id, "end:" + stream_id])
                return await pipe.execute()

        known, members, (writer, _end) = await self.state.call(read)
        if known is None and not members and writer is None:
            return None
        return [_event(member) for member in members]

    def forget(self, session_id: str, stream_id: str | None = None) -> Awaitable[None]:
        return self._forget(session_id, stream_id)

    async def _forget(self, session_id: str, stream_id: str | None) -> None:
        base = self._base(session_id)
        try:
            if stream_id is None:
                script = self._script("forget_session", _FORGET_SESSION)
                keys, args = [base + "meta", base + "streams"], [base + "s:"]
            else:
                script = self._script("forget_stream", _FORGET_STREAM)
                keys, args = self._keys(session_id, stream_id), [stream_id]
            await self.state.call(lambda client: script(keys=keys, args=args, client=client))
        except StateUnavailable:
            pass  # the keys expire on their own

    # -- beyond the protocol: streams written by one worker and followed by another --------

    async def completed(self, session_id: str, stream_id: str, last_index: int) -> None:
        """The stream is complete: its last event is ``last_index``."""
        meta = self._keys(session_id, stream_id)[0]

        async def mark(client: Any) -> None:
            async with client.pipeline(transaction=False) as pipe:
                pipe.hset(meta, "end:" + stream_id, last_index)
                pipe.hdel(meta, "w:" + stream_id)
                pipe.publish(self.doorbell(session_id), stream_id)
                await pipe.execute()

        try:
            await self.state.call(mark)
        except StateUnavailable:
            self._warn_once()

    async def append_next(self, session_id: str, stream_id: str, data: bytes) -> int:
        """Append to a stream whose indexes Redis hands out (a session's GET stream, which
        any worker writes); the index it got."""
        return await self._run_append(session_id, stream_id, 0, data, SHARED_WRITER)

    async def next_index(self, session_id: str, stream_id: str) -> int:
        """The index the next :meth:`append_next` to ``stream_id`` will get."""
        meta = self._keys(session_id, stream_id)[0]
        current = await self.state.call(lambda client: client.hget(meta, "next:" + stream_id))
        return int(current or 0) + 1

    async def follow(
        self, session_id: str, stream_id: str, after: int, *, live: Callable[[], bool] | None = None
    ) -> AsyncIterator[tuple[int, bytes]]:
        """The stream's events after ``after``: what the store has, then live ones as they
        are appended, until the stream is complete, its writer is gone, or (a stream no one
        writes) the history ends; with ``live``, for as long as ``live()`` says (a session's
        GET stream). A failing Redis ends it with :class:`StateUnavailable`."""
        channel = self.doorbell(session_id)
        rung = asyncio.Event()
        waiters = self._waiters.get(channel)
        if waiters is None:
            waiters = self._waiters[channel] = set()
            self.state.listen(channel, lambda message: self._ring(channel))
        waiters.add(rung)
        meta, _, skey = self._keys(session_id, stream_id)

        async def read(client: Any, after: int) -> Any:
            async with client.pipeline(transaction=False) as pipe:
                pipe.zrangebyscore(skey, f"({after}", "+inf")
                pipe.hmget(meta, ["w:" + stream_id, "end:" + stream_id])
                return await pipe.execute()

        try:
            while True:
                rung.clear()
                members, (writer, end) = await self.state.call(functools.partial(read, after=after))
                for member in members:
                    index, data = _event(member)
                    after = index
                    yield index, data
                if live is not None:
                    if not live():
                        return
                elif end is not None and after >= int(end):
                    return
                elif writer is None:
                    return  # complete (its writer appended all before saying so), or never live
                elif writer != SHARED_WRITER.encode() and not await self.state.alive(writer.decode()):
                    logger.warning("the worker writing SSE stream %s... is gone", stream_id[:12])
                    return
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(rung.wait(), POLL_SECONDS)
        finally:
            waiters.discard(rung)
            if not waiters:
                del self._waiters[channel]
                self.state.unlisten(channel)

    def wake(self, session_id: str) -> None:
        """Make this worker's followers of a session's streams look again (it ended)."""
        self._ring(self.doorbell(session_id))

    def _ring(self, channel: str) -> None:
        for rung in self._waiters.get(channel, ()):
            rung.set()


def _event(member: bytes) -> Event:
    index, _, data = member.partition(b":")
    return int(index), data
