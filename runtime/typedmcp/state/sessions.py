"""Handshake-era sessions without affinity: any worker serves a POST or GET of any session.

A session is created (``initialize``) on one worker, its **home**, and recorded in Redis:
``<prefix>s:<session id>``, a hash with what the session negotiated (protocol revision,
client capabilities and info, the stream tag of its event ids, a fingerprint of the
principal that opened it) and what changes later (log level, resource subscriptions,
``initialized``), with a version number bumped by each change. It expires after
``session_idle_timeout`` without use. Each worker keeps a copy of the sessions it serves (an
:class:`~typedmcp.transports.http_shared.HttpSession` rebuilt from the record). The first
request of a session on a worker loads the record (one round trip: a Lua script that refreshes its
expiry, returns it, and takes the session over if its home stopped); later ones use the copy
without asking Redis, for as long as the bus has stayed up since: every change to a session
(state written back, DELETE, eviction) is announced on the bus, and a worker whose bus was
down trusts none of its copies until it has loaded them again. Every few seconds each worker
refreshes, in one round trip, the expiry of the sessions it served meanwhile (and of those
busy here: a stream open, a handler running).

What crosses workers, and how:

* **Requests to the client** (sampling, elicitation, roots, sent while a handler runs) go
  out on the handler's own stream, on the worker that runs it. Their ids name that worker
  (``<worker>-<n>``), so the worker that receives the client's answer passes it on the bus
  to the worker waiting for it.
* **Cancellation**: a ``notifications/cancelled`` for a request not running on the worker
  that receives it is broadcast; the worker running it cancels it.
* **The GET stream** lives in the event store (Redis): any worker appends to it (change
  notifications, task status, what a handler sends after its request ended), the worker
  holding the client's GET connection follows it. A POST stream dropped on one worker is
  resumed on any other with ``Last-Event-ID``, live while its handler still runs.
* **Changes** (the ``ChangeFeed``): only the home worker's copy of a session listens, so a
  change reaches each session once. A worker that finds a session's home gone (no
  heartbeat) takes it over.
* **State changes** (``logging/setLevel``, subscribe/unsubscribe, ``initialized``) are
  written back, and announced to every worker (whose copies reload), before the client gets
  its answer: its next request sees them wherever it lands.
* **Ending**: DELETE on any worker deletes the record and tells every worker to drop its
  copy (cancelling what runs there).

A session has one GET stream at a time, whichever worker holds it (a claim in Redis, kept
fresh by its worker; a second GET gets 409). Limits, said plainly: a request id the client reuses while the first request still runs on
another worker is not detected; ``notifications/progress`` a client sends about a server
request goes nowhere unless it lands on the worker that sent the request; the deprecated
HTTP+SSE transport (``legacy_sse``) still needs affinity (its stream and its POSTs must meet
in one process). Session caps count sessions in Redis; a session counts as in use (not to
be evicted) if it served a request, or held a stream or a running handler, in the last
``IN_USE_SECONDS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from pydantic_core import from_json

from ..transports.asgi import Receive, Send, respond, respond_error
from ..transports.http_shared import HttpSession
from ..transports.http_streams import SessionTransport, _stream_events
from ..engine.jsonrpc import INVALID_REQUEST, Engine, RpcError, is_request_id
from ..stateless.sealing import principal_tag
from ..protocol.tasks import TaskBuiltins
from .connection import RedisState, StateUnavailable
from .events import RedisEventStore
from .session_scripts import _LOAD, _MAKE_ROOM, _RELEASE, _TOUCH
from .session_streams import SharedEngine, SharedTransport
from .tasks import RedisTaskStore

if TYPE_CHECKING:
    from ..transports.http_server import HttpApp

logger = logging.getLogger("typedmcp")

#: A copy of a session not used here for this long is dropped (the record lives on).
COPY_SECONDS = 60.0
#: How often this worker marks the sessions it is busy with as used (and sweeps copies).
SWEEP_SECONDS = 10.0
#: A session used within this long counts as in use for the session caps.
IN_USE_SECONDS = 30.0
MAX_SESSION_ID = 128
#: A GET stream's claim outlives its worker's last refresh by this (ms): a worker that dies
#: holding one frees the session for a new GET stream after at most this long.
GET_CLAIM_MS = 30_000
#: What changes a session's recorded state (written back before the answer goes out).
STATE_CHANGES = frozenset(
    {"logging/setLevel", "resources/subscribe", "resources/unsubscribe", "notifications/initialized"}
)


class RedisSessions:
    """The :class:`~typedmcp.transports.http_shared.SharedSessions` of the HTTP app, in Redis."""

    engine_class: type[Engine] = SharedEngine

    def __init__(self, state: RedisState, store: RedisEventStore) -> None:
        self.state = state
        self.store = store
        self.app: HttpApp | None = None
        self._versions: dict[str, bytes] = {}  # session id -> the record version copied
        self._trusted: dict[str, int] = {}  # session id -> the bus epoch its copy is good for
        self._used: set[str] = set()  # sessions served here since the last sweep
        self._homes: set[str] = set()  # sessions whose home is this worker
        self._snapshots: dict[str, tuple[Any, ...]] = {}
        self._all = state.key("sessions")
        self._load_script: Any = None
        self._touch_script: Any = None
        self._release_script: Any = None
        self._room_script: Any = None

    # -- wiring ---------------------------------------------------------------------------

    def attach(self, app: HttpApp) -> None:
        self.app = app
        state = self.state
        state.on("resp", self._on_response)
        state.on("cancel", self._on_cancel)
        state.on("end", self._on_end)
        state.on("changed", self._on_changed)
        state.at_start(self._started)
        state.on_reconnect(self._after_outage)
        state.run_while_open(self._sweep)

    async def _started(self) -> None:
        self.engine_class = type("SharedEngine", (SharedEngine,), {"worker": self.state.worker})

    def close(self) -> None:
        assert self.app is not None
        for session in list(self.app.sessions.values()):
            self._drop(session)

    def _record_key(self, session_id: str) -> str:
        return self.state.key("s", session_id)

    def _owner_key(self, owner: Any) -> str:
        return self.state.key("sessions", "owner", principal_tag(("owner", owner)) or "-")

    def transport(self, session_id: str, tag: str | None) -> SessionTransport:
        assert self.app is not None
        return SharedTransport(session_id, self.store, self.app.replay_grace, self.state.worker, tag)

    def _prepare(self, session: HttpSession) -> None:
        """A new copy: tasks in Redis; change notifications only at home."""
        server = session.server
        server.shared_id = session.id  # type: ignore[attr-defined]  # (see FeedRelay)
        if server.handles_tasks:
            server.task_store = RedisTaskStore(self.state, session.id, server.task_status)
            server.task_builtins = TaskBuiltins(server.task_store)
        self._set_home(session, session.id in self._homes)

    def _set_home(self, session: HttpSession, home: bool) -> None:
        server = session.server
        unsubscribe = server._unsubscribe
        if home and unsubscribe is None and server.changes is not None:
            server._unsubscribe = server.changes.subscribe(server._on_change, owner=server)
        elif not home and unsubscribe is not None:
            unsubscribe()
            server._unsubscribe = None
        if home:
            self._homes.add(session.id)
        else:
            self._homes.discard(session.id)

    # -- creating and finding sessions ----------------------------------------------------

    async def make_room(self, owner: Any) -> tuple[int, str] | None:
        assert self.app is not None
        app = self.app
        await self.state.start()
        if self._room_script is None:
            self._room_script = self.state.client.register_script(_MAKE_ROOM)
        script = self._room_script
        keys = [self._all, self._owner_key(owner)]
        args = [
            int(time.time() * 1000), int(app.session_idle_timeout * 1000),
            int(IN_USE_SECONDS * 1000), app.max_sessions, app.max_sessions_per_client,
        ]
        try:
            outcome = await self.state.call(lambda client: script(keys=keys, args=args, client=client))
        except StateUnavailable as error:
            return 503, error.message
        if outcome[0] == 429:
            return 429, (
                "Too Many Requests: this client already has "
                f"{app.max_sessions_per_client} sessions in use; end one it no longer needs with DELETE"
            )
        if outcome[0] == 503:
            return 503, "Service Unavailable: too many sessions in use; try again later"
        prefix = self._record_key("")
        for victim in outcome[1:]:
            session_id = victim.decode()[len(prefix):]
            logger.info("ended idle session %s... to make room under the session caps", session_id[:12])
            await self._end_everywhere(session_id)
        return None

    async def created(self, session: HttpSession) -> None:
        assert self.app is not None
        self._homes.add(session.id)
        self._prepare_created(session)
        try:
            await self._write(session, only_if_missing=False)
        except StateUnavailable:
            self._drop(session)  # the client gets 503 below, and no session id
            raise
        self._versions[session.id] = b"1"
        self._snapshots[session.id] = self._snapshot(session)
        if self.state.up:
            self._trusted[session.id] = self.state.epoch

    async def _write(self, session: HttpSession, *, only_if_missing: bool) -> None:
        """Record a session (at home), or record it again if Redis lost it (restarted)."""
        assert self.app is not None
        server = session.server
        assert server.package is not None
        fields = {
            "v": server.package.version,
            "caps": json.dumps(server.peer_capabilities),
            "info": json.dumps(server.client_info),
            "pt": principal_tag(session.principal) or "",
            "tag": session.transport.tag,
            "home": self.state.worker,
            "own": self._owner_key(session.owner),
            **self._mutable(session),
            "ver": 1,
        }
        key = self._record_key(session.id)
        idle_ms = int(self.app.session_idle_timeout * 1000)
        now_ms = int(time.time() * 1000)

        async def write(client: Any) -> None:
            if only_if_missing and await client.exists(key):
                return
            async with client.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping=fields)
                pipe.pexpire(key, idle_ms)
                pipe.zadd(self._all, {key: now_ms})
                pipe.zadd(fields["own"], {key: now_ms})
                pipe.pexpire(fields["own"], idle_ms)
                await pipe.execute()

        await self.state.call(write)

    def _after_outage(self) -> None:
        """Redis is back, and may have lost its data (restarted without persistence):
        record again the sessions at home here, so their clients keep them."""
        assert self.app is not None
        for session_id in list(self._homes):
            session = self.app.sessions.get(session_id)
            if session is not None and session.server.package is not None:
                self._versions[session_id] = b"1"
                self.state._spawn(self._write(session, only_if_missing=True))

    def _prepare_created(self, session: HttpSession) -> None:
        server = session.server
        server.shared_id = session.id  # type: ignore[attr-defined]
        if server.handles_tasks and not isinstance(server.task_store, RedisTaskStore):
            # (tasks created during initialize: none; the store is swapped before use)
            server.task_store = RedisTaskStore(self.state, session.id, server.task_status)
            server.task_builtins = TaskBuiltins(server.task_store)

    async def open(
        self, session_id: str | None, principal: Any
    ) -> tuple[HttpSession | None, int, str]:
        assert self.app is not None
        app = self.app
        if session_id is None:
            return None, 400, "Bad Request: missing Mcp-Session-Id header; initialize first"
        unknown = (None, 404, "Not Found: unknown or expired session; initialize again")
        if len(session_id) > MAX_SESSION_ID or not session_id.isascii():
            return unknown
        local = app.sessions.get(session_id)
        state = self.state
        if local is not None and state.up and self._trusted.get(session_id) == state.epoch:
            if local.principal != principal:
                return unknown
            self._used.add(session_id)
            app.sessions.touch(local)
            return local, 200, ""
        await state.start()
        if self._load_script is None:
            self._load_script = state.client.register_script(_LOAD)
        script = self._load_script
        epoch = state.epoch  # (before asking: a reconnect meanwhile leaves the copy untrusted)
        known = self._versions.get(session_id, b"") if local is not None else b""
        key = self._record_key(session_id)
        args = [
            known, int(app.session_idle_timeout * 1000), self.state.key("worker", ""),
            self.state.worker, int(time.time() * 1000), self._all,
        ]
        try:
            found = await self.state.call(lambda client: script(keys=[key], args=args, client=client))
        except StateUnavailable as error:
            return None, 503, error.message
        if found is None:
            if local is not None:
                self._drop(local)
            return unknown
        version, home, claimed = found[0], found[1].decode(), found[2]
        if claimed:
            logger.info("took over session %s... from a worker that stopped", session_id[:12])
        if len(found) > 3:
            record = _fields(found[3])
            if record.get("pt", "") != (principal_tag(principal) or ""):
                return unknown
            session = local if local is not None else self._copy(session_id, record)
            if session is None:
                return unknown
            if local is not None:
                self._restore(session, record)
            session.principal = principal
            self._versions[session_id] = version
            self._snapshots[session_id] = self._snapshot(session)
        else:
            assert local is not None
            if local.principal != principal:
                return unknown
            session = local
        self._set_home(session, home == self.state.worker)
        self._trusted[session_id] = epoch
        self._used.add(session_id)
        app.sessions.touch(session)
        return session, 200, ""

    def _copy(self, session_id: str, record: dict[str, str]) -> HttpSession | None:
        """This worker's copy of a session created elsewhere."""
        assert self.app is not None
        session = self.app.new_session(session_id, record.get("tag") or None)
        if not self._restore(session, record):
            return None
        self._prepare(session)
        self.app.sessions[session_id] = session
        return session

    def _restore(self, session: HttpSession, record: dict[str, str]) -> bool:
        server = session.server
        package = next((p for p in server.packages if p.version == record.get("v")), None)
        if package is None:
            logger.warning("session %s... negotiated %r, which this worker does not serve",
                           session.id[:12], record.get("v"))
            return False
        first = server.package is None
        server.package = package
        if first:
            server.peer_capabilities = from_json(record.get("caps") or "{}", allow_inf_nan=False)
            server.client_info = from_json(record.get("info") or "{}", allow_inf_nan=False)
            server.derive_capabilities(package, server.list_changed)
            server.peer = server._peer_class(server)
            session.transport.polling = package.version >= "2025-11-25"
        server.initialized = record.get("init") == "1"
        server.log_level = record.get("lvl") or None
        server.subscribed_uris = set(from_json(record.get("subs") or "[]", allow_inf_nan=False))
        return True

    # -- what a POST changed --------------------------------------------------------------

    @staticmethod
    def _snapshot(session: HttpSession) -> tuple[Any, ...]:
        server = session.server
        return (server.log_level, server.initialized, frozenset(server.subscribed_uris))

    @staticmethod
    def _mutable(session: HttpSession) -> dict[str, str]:
        server = session.server
        return {
            "lvl": server.log_level or "",
            "init": "1" if server.initialized else "0",
            "subs": json.dumps(sorted(server.subscribed_uris)),
        }

    async def synced(self, session: HttpSession) -> None:
        snapshot = self._snapshot(session)
        if snapshot == self._snapshots.get(session.id):
            return
        self._snapshots[session.id] = snapshot
        key = self._record_key(session.id)
        fields = self._mutable(session)

        async def write(client: Any) -> Any:
            async with client.pipeline(transaction=True) as pipe:
                pipe.exists(key)
                pipe.hset(key, mapping=fields)
                pipe.hincrby(key, "ver", 1)
                return await pipe.execute()

        try:
            exists, _, version = await self.state.call(write)
        except StateUnavailable:
            logger.warning("session %s... changed (log level, subscriptions) while Redis was "
                           "unreachable; other workers do not know", session.id[:12])
            return
        if not exists:  # ended meanwhile
            with contextlib.suppress(StateUnavailable):
                await self.state.call(lambda client: client.delete(key))
            return
        self._versions[session.id] = str(version).encode()
        with contextlib.suppress(StateUnavailable):  # every worker's copy is stale now
            await self.state.tell_all({"t": "changed", "s": session.id})

    # -- messages for other workers ---------------------------------------------------------

    async def handled(self, session: HttpSession, message: dict[str, Any], send: Send) -> bool:
        assert self.app is not None
        method = message.get("method")
        if method is None:  # a response to a request of ours: to the worker waiting for it
            request_id = message.get("id")
            worker = request_id.partition("-")[0] if isinstance(request_id, str) else ""
            if not worker or worker == self.state.worker:
                return False
            try:
                await self.state.send_to(worker, {"t": "resp", "s": session.id, "m": message})
            except StateUnavailable:
                logger.warning("a response for a request of another worker is lost: Redis is unreachable")
            await respond(send, 202, b"", None)
            return True
        if method == "notifications/cancelled":
            params = message.get("params")
            request_id = params.get("requestId") if isinstance(params, dict) else None
            if is_request_id(request_id) and request_id not in session.engine._incoming:
                with contextlib.suppress(StateUnavailable):  # (it may run on another worker)
                    await self.state.tell_all({"t": "cancel", "s": session.id, "id": request_id})
            return False
        if method not in STATE_CHANGES:
            return False
        # the change is recorded (and the other workers told) before the client hears back,
        # so its next request sees it wherever it lands
        if "id" in message:
            reply = await self.app._run(session, message, None, None)
            await self.synced(session)
            await respond(send, 200, reply or b"", "application/json")
        else:
            reply = await session.engine._route(message, in_batch=False)
            await self.synced(session)
            await respond(send, 202 if reply is None else 400, reply or b"", None if reply is None else "application/json")
        return True

    def _local(self, message: dict[str, Any]) -> HttpSession | None:
        assert self.app is not None
        session_id = message.get("s")
        return self.app.sessions.get(session_id) if isinstance(session_id, str) else None

    def _on_response(self, message: dict[str, Any]) -> None:
        session = self._local(message)
        response = message.get("m")
        if session is not None and isinstance(response, dict):
            session.engine._receive_response(response)

    def _on_cancel(self, message: dict[str, Any]) -> None:
        session = self._local(message)
        if session is not None:
            session.engine.cancel_incoming(message.get("id"))

    def _on_end(self, message: dict[str, Any]) -> None:
        session = self._local(message)
        if session is not None:
            self._drop(session)

    def _on_changed(self, message: dict[str, Any]) -> None:
        session = self._local(message)
        if session is not None:
            self._trusted.pop(session.id, None)
            self._versions.pop(session.id, None)  # the next request reloads it...
            if session.id in self._homes:  # ...and home, which forwards changes, now
                self.state._spawn(self.open(session.id, session.principal))

    # -- the GET stream -------------------------------------------------------------------

    async def serve_get(
        self, session: HttpSession, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        assert self.app is not None
        transport = session.transport
        assert isinstance(transport, SharedTransport)
        last_event = headers.get("last-event-id") or None
        standalone = last_event is None
        claim = self._record_key(session.id) + ":get"  # who holds its GET stream, anywhere
        state = self.state
        try:
            if standalone and (
                session.get_connected
                or not await state.call(lambda client: client.set(claim, state.worker, nx=True, px=GET_CLAIM_MS))
            ):
                await respond_error(
                    send, 409, RpcError(INVALID_REQUEST, "Conflict: this session already has a GET stream")
                )
                return
            events = await transport.follow(last_event)
        except StateUnavailable as error:
            await respond_error(send, 503, error)
            return
        if events is None:
            await respond_error(send, 404, RpcError(INVALID_REQUEST, "Not Found: unknown Last-Event-ID"))
            return
        if standalone:
            session.get_connected = True
        try:
            await _stream_events(send, receive, events, b"", self.app.retry_ms)
        finally:
            if standalone:
                session.get_connected = False
                with contextlib.suppress(StateUnavailable):
                    await state.call(lambda client: self._release(client, claim))

    async def _release(self, client: Any, claim: str) -> None:
        if self._release_script is None:
            self._release_script = client.register_script(_RELEASE)
        await self._release_script(keys=[claim], args=[self.state.worker], client=client)

    # -- ending ---------------------------------------------------------------------------

    async def deleted(self, session: HttpSession) -> None:
        await self._end_everywhere(session.id)

    async def _end_everywhere(self, session_id: str) -> None:
        key = self._record_key(session_id)
        with contextlib.suppress(StateUnavailable):
            await self.state.call(lambda client: client.delete(key, key + ":get"))
        with contextlib.suppress(StateUnavailable):
            await self.state.tell_all({"t": "end", "s": session_id})
        await self.store.forget(session_id)
        assert self.app is not None
        local = self.app.sessions.get(session_id)
        if local is not None:
            self._drop(local)

    def _drop(self, session: HttpSession) -> None:
        """Drop this worker's copy (the session may live on elsewhere)."""
        assert self.app is not None
        if self.app.sessions.get(session.id) is session:
            del self.app.sessions[session.id]
        self._versions.pop(session.id, None)
        self._trusted.pop(session.id, None)
        self._used.discard(session.id)
        self._snapshots.pop(session.id, None)
        self._homes.discard(session.id)
        session.server.close()
        session.transport.standalone.close()
        self.store.wake(session.id)  # its GET stream here ends
        for incoming in list(session.engine._incoming.values()):
            incoming.cancelled = True
            incoming.task.cancel()

    def _busy(self, session: HttpSession) -> bool:
        store = session.server.task_store
        return session.busy() or bool(getattr(store, "running", None))

    async def _sweep(self) -> None:
        """Every few seconds (at most a third of the idle timeout): refresh the sessions
        served here meanwhile or busy here (their record does not expire, the caps count
        them in use, and their home is taken over if it stopped); drop copies unused for
        ``COPY_SECONDS``."""
        assert self.app is not None
        interval = min(SWEEP_SECONDS, self.app.session_idle_timeout / 3)
        while True:
            await asyncio.sleep(interval)
            try:
                await self._sweep_once()
            except StateUnavailable:
                pass
            except Exception:
                logger.exception("the session sweep failed")

    async def _sweep_once(self) -> None:
        assert self.app is not None
        app = self.app
        now = time.monotonic()
        touch = self._used
        self._used = set()
        homes = []  # unused here lately, but they forward the session's changes while it lives
        for session in list(app.sessions.values()):
            if self._busy(session):
                touch.add(session.id)
            elif session.id not in touch and now - session.last_seen > COPY_SECONDS:
                if session.id in self._homes:
                    homes.append(session)
                else:
                    self._drop(session)  # (its record lives on, unless it expires)
        if homes:
            keys = [self._record_key(session.id) for session in homes]
            alive = await self.state.call(functools.partial(_exist_each, keys=keys))
            for session, exists in zip(homes, alive, strict=True):
                if not exists:
                    self._drop(session)
        ids = [session_id for session_id in touch if session_id in app.sessions]
        if not ids:
            return
        streaming = [self._record_key(session_id) + ":get" for session_id in ids
                     if app.sessions[session_id].get_connected]
        if streaming:  # the GET streams held here stay claimed
            await self.state.call(functools.partial(_expire_each, keys=streaming, ms=GET_CLAIM_MS))
        if self._touch_script is None:
            self._touch_script = self.state.client.register_script(_TOUCH)
        script = self._touch_script
        keys = [self._record_key(session_id) for session_id in ids]
        args = [int(app.session_idle_timeout * 1000), self.state.key("worker", ""),
                self.state.worker, int(time.time() * 1000), self._all]
        homes = await self.state.call(lambda client: script(keys=keys, args=args, client=client))
        for session_id, home in zip(ids, homes, strict=True):
            copy = app.sessions.get(session_id)
            if copy is None:
                continue
            if not home:  # expired, or ended where the news did not reach us
                self._drop(copy)
            else:
                self._set_home(copy, home.decode() == self.state.worker)


async def _exist_each(client: Any, keys: list[str]) -> list[Any]:
    async with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.exists(key)
        return await pipe.execute()  # type: ignore[no-any-return]


async def _expire_each(client: Any, keys: list[str], ms: int) -> None:
    async with client.pipeline(transaction=False) as pipe:
        for key in keys:
            pipe.pexpire(key, ms)
        await pipe.execute()


def _fields(flat: list[bytes]) -> dict[str, str]:
    return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}


__all__ = ["RedisSessions"]
