"""State shared by several workers (processes, machines) behind one endpoint, in Redis.

In one process everything lives in memory (the default, and the fastest). Behind a load
balancer, set ``MCP_REDIS_URL`` (or pass ``redis_url=`` / ``state=`` to
:func:`~typedmcp.serving.http_app`) and every worker shares, through Redis:

* the change feed (:mod:`.feed`): a change published in any worker (on the server's
  ``ChangeFeed``, the one passed as ``changes=`` included) reaches every worker's sessions
  and listen streams, once each;
* tasks of 2025-11-25 (:mod:`.tasks`): get, result, list and cancel from any worker;
* tasks of the tasks extension (:mod:`.extension_tasks`, 2026-07-28): get, update and
  cancel from any worker;
* the SSE event store (:mod:`.events`): ``Last-Event-ID`` resumes on any worker;
* single-use ``requestState`` records and the key ring that seals them (:mod:`.keys`);
* handshake-era sessions (:mod:`.sessions`), unless ``session_affinity=True``.

Everything in Redis is under one key prefix (``MCP_REDIS_PREFIX``, ``mcp:`` by default),
bounded, and expires; what crosses workers is JSON. The ``redis`` package is an optional
extra (``pip install 'typedmcp[redis]'``), imported only when Redis is asked for.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from .connection import (
    DEFAULT_PREFIX,
    REDIS_PREFIX_ENV,
    REDIS_URL_ENV,
    RedisState,
    StateUnavailable,
)
from .events import RedisEventStore
from .extension_tasks import RedisTaskRegistry
from .feed import FeedRelay
from .keys import RedisKeyRing, RedisUsedStates
from .sessions import RedisSessions
from .tasks import RedisTaskStore


def shared_options(
    options: dict[str, Any],
) -> tuple[dict[str, Any], RedisState | None, RedisSessions | None]:
    """``http_app``'s options with the shared pieces filled in (what the caller set is
    kept), the state to start with the app, and the shared sessions (None with
    ``session_affinity=True``, or without Redis)."""
    from ..stateless.sealing import DEFAULT_STATE_TTL, STATE_KEY_ENV, STATE_KEYS_ENV

    options = dict(options)
    state: RedisState | None = options.pop("state", None)
    url = options.pop("redis_url", None) or os.environ.get(REDIS_URL_ENV)
    prefix = options.pop("redis_prefix", None) or os.environ.get(REDIS_PREFIX_ENV) or DEFAULT_PREFIX
    affinity = bool(options.pop("session_affinity", False))
    if state is None:
        if not url:
            return options, None, None
        state = RedisState(url, prefix=prefix)
    from ..protocol.feed import ChangeFeed

    feed = options.get("changes")
    if feed is None:
        feed = options["changes"] = ChangeFeed()
    if feed.relay is None:  # (the same feed may serve several apps of one process)
        FeedRelay(state, feed)
    options.setdefault("used_states", RedisUsedStates(state))
    options.setdefault("task_registry", RedisTaskRegistry(state))
    if not (
        {"state_key", "state_keys"} & options.keys()
        or os.environ.get(STATE_KEY_ENV)
        or os.environ.get(STATE_KEYS_ENV)
    ):
        ring = RedisKeyRing(state, float(options.get("state_ttl", DEFAULT_STATE_TTL)))
        options["state_keys"] = ring.keys
    sessions = None
    if not affinity:
        store = options.get("event_store")
        if store is None:
            store = options["event_store"] = RedisEventStore(state)
        if not isinstance(store, RedisEventStore):
            raise ValueError("sessions shared by workers need a RedisEventStore (or session_affinity=True)")
        sessions = RedisSessions(state, store)
    return options, state, sessions




def share_cancels(state: RedisState, endpoint: Any) -> None:
    """2026-07-28: a ``notifications/cancelled`` POSTed to a worker where the request does
    not run is passed to every worker; the one running a request with that id for the same
    principal cancels it."""
    from ..stateless.sealing import principal_tag

    async def elsewhere(principal: Any, request_id: Any) -> None:
        with contextlib.suppress(StateUnavailable):  # (logged: it reaches this worker only)
            await state.tell_all({"t": "mcancel", "p": principal_tag(principal), "id": request_id})

    def cancel(message: dict[str, Any]) -> None:
        tag = message.get("p")
        endpoint._cancel(None, message.get("id"), match=lambda owner: principal_tag(owner) == tag)

    endpoint.cancel_elsewhere = elsewhere
    state.on("mcancel", cancel)


__all__ = [
    "DEFAULT_PREFIX",
    "REDIS_PREFIX_ENV",
    "REDIS_URL_ENV",
    "FeedRelay",
    "RedisEventStore",
    "RedisKeyRing",
    "RedisSessions",
    "RedisState",
    "RedisTaskRegistry",
    "RedisTaskStore",
    "RedisUsedStates",
    "StateUnavailable",
    "share_cancels",
    "shared_options",
]
