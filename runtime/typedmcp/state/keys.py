"""requestState in Redis: single-use states claimed once across workers, and the sealing
key ring.

:class:`RedisUsedStates` claims a single-use state with ``SET <prefix>used:<id> 1 NX
PXAT <expiry>``: the first worker to claim it wins, the record goes when the state expires.

:class:`RedisKeyRing` keeps the keys that seal ``requestState`` in Redis (a list, newest
first, each entry ``{"key": <base64url>, "until": <unix time or null>}``): the newest seals,
every key not yet past its ``until`` opens. :meth:`RedisKeyRing.rotate` puts a new key in
front and retires the others ``state_ttl`` seconds later, when the last state they sealed
has expired. Each worker loads the ring at start, again when told of a rotation, and every
minute.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import secrets
import time
from typing import Any

from pydantic_core import from_json

from .connection import RedisState, StateUnavailable

logger = logging.getLogger("typedmcp")

RELOAD_SECONDS = 60.0
MAX_KEYS = 16


class RedisUsedStates:
    """A :class:`~typedmcp.stateless.UsedStates` shared by every worker."""

    def __init__(self, state: RedisState) -> None:
        self.state = state

    async def claim(self, state_id: str, expires_at: float) -> bool:
        key = self.state.key("used", state_id)
        at_ms = int(expires_at * 1000) + 1000
        claimed = await self.state.call(lambda client: client.set(key, b"1", nx=True, pxat=at_ms))
        return bool(claimed)


# KEYS: ring. ARGV: new entry, now, retire at, max keys. Puts a key in front, retires the
# others at ``retire at`` (those already retiring keep their earlier time), drops expired ones.
_ROTATE = """
local ring = KEYS[1]
local now = tonumber(ARGV[2])
local kept = {}
for _, raw in ipairs(redis.call('LRANGE', ring, 0, -1)) do
  local entry = cjson.decode(raw)
  if entry['until'] == nil or entry['until'] == cjson.null then
    entry['until'] = tonumber(ARGV[3])
  end
  if entry['until'] > now then table.insert(kept, cjson.encode(entry)) end
end
redis.call('DEL', ring)
redis.call('RPUSH', ring, ARGV[1])
for i = 1, math.min(#kept, tonumber(ARGV[4]) - 1) do redis.call('RPUSH', ring, kept[i]) end
return redis.call('LLEN', ring)
"""

# KEYS: ring. ARGV: entries. Creates the ring with these if it has none (a new deployment:
# one random key; a Redis that lost its data: the keys this worker holds, so states sealed
# before go on opening).
_ENSURE = """
if redis.call('LLEN', KEYS[1]) == 0 then redis.call('RPUSH', KEYS[1], unpack(ARGV)) end
return redis.call('LRANGE', KEYS[1], 0, -1)
"""


def _entry(key: bytes, until: float | None = None) -> str:
    text = base64.urlsafe_b64encode(key).decode("ascii")
    return json.dumps({"key": text, "until": until})


class RedisKeyRing:
    """The key ring of ``requestState`` in Redis; :attr:`keys` is newest first (what a
    :class:`~typedmcp.stateless.StateSealer` with ``keys=ring.keys`` uses)."""

    def __init__(self, state: RedisState, state_ttl: float) -> None:
        self.state = state
        self.state_ttl = state_ttl
        # Newest first, changed in place (a sealer holds this list). Until the ring is read,
        # a key of this process only: states it seals open on this worker alone.
        self.keys: list[bytes] = [secrets.token_bytes(32)]
        self.ring = state.key("state-keys")
        state.on("keys", lambda message: self._reload_soon())
        state.on_reconnect(self._reload_soon)
        self.loaded = False
        state.at_start(self._first_load)
        state.run_while_open(self.run)

    async def load(self) -> None:
        """Read the ring (creating it with this worker's keys if Redis has none)."""
        seed = [_entry(key) for key in self.keys]
        script = self.state.client.register_script(_ENSURE)
        raw = await self.state.call(lambda client: script(keys=[self.ring], args=seed, client=client))
        now = time.time()
        keys = []
        for item in raw:
            entry = from_json(item, allow_inf_nan=False)
            until = entry.get("until")
            if until is None or until > now:
                keys.append(base64.urlsafe_b64decode(entry["key"]))
        if keys:
            self.keys[:] = keys
            self.loaded = True

    async def _first_load(self) -> None:
        try:
            await self.load()
        except StateUnavailable:
            logger.warning("the requestState key ring is not loaded yet (Redis is unreachable): "
                           "states sealed meanwhile open on this worker only")

    async def run(self) -> None:
        """Reload every minute (a worker that missed a rotation catches up); every second
        while it has never been read."""
        while True:
            await asyncio.sleep(RELOAD_SECONDS if self.loaded else 1.0)
            with contextlib.suppress(StateUnavailable):
                await self.load()

    def _reload_soon(self) -> None:
        self.state._spawn(self._quiet_load())

    async def _quiet_load(self) -> None:
        with contextlib.suppress(StateUnavailable):
            await self.load()

    async def rotate(self, key: bytes | None = None) -> None:
        """Seal with a new key from now on (random unless given); the old keys open what
        they sealed for ``state_ttl`` more seconds, then go."""
        now = time.time()
        script = self.state.client.register_script(_ROTATE)
        args: list[Any] = [_entry(key or secrets.token_bytes(32)), now, now + self.state_ttl, MAX_KEYS]
        await self.state.call(lambda client: script(keys=[self.ring], args=args, client=client))
        await self.load()
        await self.state.tell_all({"t": "keys"})
