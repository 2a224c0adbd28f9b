"""One process's link to Redis: the client, a message bus between workers, a heartbeat.

Every worker process of a deployment holds one :class:`RedisState`. It owns

* the ``redis.asyncio`` client (imported lazily: the ``redis`` package is the optional
  extra ``[redis]``), with short socket timeouts, so a command against an unreachable Redis
  fails within about ``timeout`` seconds instead of hanging;
* the **bus**: one pub/sub connection subscribed to the broadcast channel of the
  deployment, to this worker's own channel, and to whatever channels the stores add
  (an SSE stream followed here). It reconnects with back-off after a failure, logs the
  outage once and its end once, and tells the stores (``on_reconnect``) so they can make up
  for what they may have missed;
* a **heartbeat** key (``<prefix>worker:<id>``, a few seconds of TTL) that tells other
  workers this one is alive: a task or an SSE stream whose worker has gone quiet is known
  to be orphaned, not waited for.

Everything it writes is under ``prefix`` and expires; messages are JSON bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic_core import from_json

from ..engine.jsonrpc import INTERNAL_ERROR, RpcError

logger = logging.getLogger("typedmcp")

#: The environment variable that switches a server's shared state to Redis.
REDIS_URL_ENV = "MCP_REDIS_URL"
#: And the one that namespaces its keys (several deployments may share one Redis).
REDIS_PREFIX_ENV = "MCP_REDIS_PREFIX"
DEFAULT_PREFIX = "mcp:"
HEARTBEAT_SECONDS = 5.0
HEARTBEAT_TTL_SECONDS = 15
#: After a command failed, others fail at once for this long (a hung Redis would make each
#: wait for its timeout); the first to try after it, or the bus reconnecting, ends that.
FAIL_FAST_SECONDS = 1.0
#: The bus pings Redis after this long without a message (and reconnects after three).
BUS_PING_SECONDS = 5.0

Handler = Callable[[dict[str, Any]], None]
RawHandler = Callable[[bytes], None]


class StateUnavailable(RpcError):
    """Redis cannot be reached (or timed out) for something that needs it: the request
    fails with this JSON-RPC error (-32603, a message that says why and to retry), and the
    HTTP layer answers 503 where there is no request to answer."""

    def __init__(self) -> None:
        super().__init__(
            INTERNAL_ERROR,
            "Service unavailable: the server's shared state (Redis) cannot be reached; "
            "retry in a moment",
        )


class RedisState:
    """The shared state of a deployment, in Redis (see the module doc).

    ``url``: a ``redis://`` or ``rediss://`` URL (``MCP_REDIS_URL``). ``prefix`` namespaces
    every key and channel. ``timeout``: seconds a command may take before it fails with
    :class:`StateUnavailable`. Start it in the serving event loop (:meth:`start`; the HTTP
    app does at lifespan startup, or at its first request).
    """

    def __init__(self, url: str, *, prefix: str = DEFAULT_PREFIX, timeout: float = 2.0) -> None:
        self.url = url
        self.prefix = prefix
        self.timeout = timeout
        self.worker = ""  # this process's id on the bus, drawn at start (after any fork)
        self.client: Any = None
        self.up = False  # the bus is connected (commands may still fail meanwhile)
        # One more each time the bus (re)connects: what a worker learnt while the bus was
        # up stays true only as long as it has not been down since (no message was missed).
        self.epoch = 0
        self._handlers: dict[str, RawHandler] = {}  # channel -> what takes its messages
        self._pubsub: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._reconnected: list[Callable[[], None]] = []
        self._started: asyncio.Future[None] | None = None
        self._down_since: float | None = None
        self._failed_at: float | None = None  # the last command that failed, while failing
        self._closing = False
        self._starters: list[Callable[[], Awaitable[None]]] = []
        self._loops: list[Callable[[], Awaitable[None]]] = []
        self.broadcast = prefix + "bus"
        self.extensions: dict[str, Any] = {}
        self._kinds: dict[str, list[Handler]] = {}  # what the stores share per process (by name)

    # -- life -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Connect (once per process; later calls wait for the first). Redis being down
        at start is not fatal: the bus keeps trying, and commands fail clearly meanwhile."""
        if self._started is not None:
            await asyncio.shield(self._started)
            return
        self._started = asyncio.get_running_loop().create_future()
        try:
            from redis.asyncio import Redis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
        except ImportError as error:  # pragma: no cover - depends on the install
            self._started.set_exception(error)
            raise RuntimeError(
                "shared state on Redis needs the redis package: pip install 'typedmcp[redis]'"
            ) from error
        self.worker = secrets.token_hex(8)
        self.client = Redis.from_url(
            self.url,
            socket_timeout=self.timeout,
            socket_connect_timeout=self.timeout,
            retry=Retry(NoBackoff(), 1),
            health_check_interval=0,
        )
        self._handlers[self.broadcast] = self._on_broadcast
        self._handlers[self.channel(self.worker)] = self._on_direct
        self._tasks = [
            asyncio.ensure_future(self._bus()),
            asyncio.ensure_future(self._heartbeat()),
            *(asyncio.ensure_future(loop()) for loop in self._loops),
        ]
        for starter in self._starters:
            with contextlib.suppress(StateUnavailable):  # (logged; caught up when it is back)
                await starter()
        self._started.set_result(None)

    def at_start(self, starter: Callable[[], Awaitable[None]]) -> None:
        """Await ``starter()`` when the state starts (a failure to reach Redis is logged,
        not fatal)."""
        self._starters.append(starter)

    def run_while_open(self, loop: Callable[[], Awaitable[None]]) -> None:
        """Run ``loop()`` from start (or now, if started) to close (cancelled at close)."""
        self._loops.append(loop)
        if self._started is not None and self._started.done() and not self._closing:
            self._tasks.append(asyncio.ensure_future(loop()))

    async def close(self) -> None:
        self._closing = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.delete(self.key("worker", self.worker))
            with contextlib.suppress(Exception):
                await self.client.aclose()

    # -- names ----------------------------------------------------------------------------

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def channel(self, worker: str) -> str:
        """The bus channel of one worker."""
        return f"{self.prefix}w:{worker}"

    # -- commands -------------------------------------------------------------------------

    async def call(self, command: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run ``command(client)``; :class:`StateUnavailable` if Redis cannot answer."""
        if self.client is None:
            await self.start()
        if self._closing:
            raise StateUnavailable()
        failed_at = self._failed_at
        if failed_at is not None and time.monotonic() - failed_at < FAIL_FAST_SECONDS:
            raise StateUnavailable()  # (a hung Redis: do not make every request wait for it)
        try:
            result = await command(self.client)
        except StateUnavailable:
            raise
        except Exception as error:
            if not _is_redis_error(error):
                raise
            if _is_outage(error):
                self._failed_at = time.monotonic()
                self._note_down(error)
            else:  # Redis answered, with an error (out of memory, a command refused, ...)
                logger.error("Redis refused a command: %s", error)
            raise StateUnavailable() from None
        self._failed_at = None
        return result

    def _note_down(self, error: BaseException) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            logger.warning("lost the connection to Redis (%s); retrying with back-off", error)

    # -- bus ------------------------------------------------------------------------------

    def listen(self, channel: str, handler: RawHandler) -> None:
        """Take the messages of ``channel`` (bytes) in ``handler`` (called in the event
        loop, must not block), until :meth:`unlisten`."""
        self._handlers[channel] = handler
        if self._pubsub is not None and self.up:
            self._spawn(self._pubsub.subscribe(channel))

    def unlisten(self, channel: str) -> None:
        if self._handlers.pop(channel, None) is not None and self._pubsub is not None and self.up:
            self._spawn(self._pubsub.unsubscribe(channel))

    def on_reconnect(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` each time the bus is back after an outage (messages sent
        meanwhile are lost: pub/sub keeps nothing)."""
        self._reconnected.append(callback)

    async def publish(self, channel: str, message: dict[str, Any]) -> None:
        """Send ``message`` on ``channel``; :class:`StateUnavailable` if Redis is down."""
        data = json.dumps(message, separators=(",", ":")).encode("utf-8")
        await self.call(lambda client: client.publish(channel, data))

    async def send_to(self, worker: str, message: dict[str, Any]) -> None:
        await self.publish(self.channel(worker), message)

    async def tell_all(self, message: dict[str, Any]) -> None:
        """Broadcast to every worker (this one too, which ignores its own)."""
        await self.publish(self.broadcast, {**message, "from": self.worker})

    def on(self, kind: str, handler: Handler) -> None:
        """Take the messages of type ``kind`` sent to this worker or to all."""
        self._kinds.setdefault(kind, []).append(handler)

    def _on_broadcast(self, data: bytes) -> None:
        message = from_json(data, allow_inf_nan=False)
        if isinstance(message, dict) and message.get("from") != self.worker:
            self._dispatch(message)

    def _on_direct(self, data: bytes) -> None:
        message = from_json(data, allow_inf_nan=False)
        if isinstance(message, dict):
            self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        for handler in self._kinds.get(message.get("t"), ()):  # type: ignore[arg-type]
            handler(message)

    async def _bus(self) -> None:
        delay = 0.05
        while not self._closing:
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(*self._handlers)
                if pubsub.connection is not None:  # (redis-py reconnects it by itself)
                    pubsub.connection.register_connect_callback(self._bus_reconnected)
                self._pubsub = pubsub
                self.epoch += 1
                self.up = True
                self._failed_at = None
                if self._down_since is not None:
                    logger.warning(
                        "the connection to Redis is back after %.1f s",
                        time.monotonic() - self._down_since,
                    )
                    self._down_since = None
                    self._catch_up()
                delay = 0.05
                heard = time.monotonic()
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=BUS_PING_SECONDS)
                    now = time.monotonic()
                    if message is None:
                        if now - heard > 3 * BUS_PING_SECONDS:  # a half-open connection
                            raise ConnectionError("Redis stopped answering on the bus connection")
                        await pubsub.ping()
                        continue
                    heard = now
                    if message.get("type") != "message":
                        continue
                    channel = message["channel"]
                    handler = self._handlers.get(
                        channel.decode() if isinstance(channel, bytes) else channel
                    )
                    if handler is None:
                        continue
                    try:
                        handler(message["data"])
                    except Exception:
                        logger.exception("a shared-state message could not be handled")
            except asyncio.CancelledError:
                raise
            except Exception as error:
                if not _is_redis_error(error):
                    logger.exception("the shared-state bus failed; restarting it")
                self._note_down(error)
            finally:
                self.up = False
                self._pubsub = None
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def _bus_reconnected(self, connection: object) -> None:
        """redis-py reconnected the bus on its own (a killed connection, a failover) and
        subscribed again: what was published meanwhile is lost, so the epoch moves on (no
        copy made before is trusted) and the stores catch up as after an outage. (Closing
        the bus reconnects it too: nothing to say then.)"""
        if self._closing:
            return
        self.epoch += 1
        logger.warning("the bus connection to Redis was re-established; messages sent meanwhile may be lost")
        self._catch_up()

    def _catch_up(self) -> None:
        """Run the :meth:`on_reconnect` callbacks (a failing one is logged)."""
        for callback in list(self._reconnected):
            try:
                callback()
            except Exception:
                logger.exception("a shared-state store failed to catch up after an outage")

    async def _heartbeat(self) -> None:
        key = self.key("worker", self.worker)
        while True:
            with contextlib.suppress(StateUnavailable):
                await self.call(lambda client: client.set(key, b"1", ex=HEARTBEAT_TTL_SECONDS))
            await asyncio.sleep(HEARTBEAT_SECONDS)

    async def alive(self, worker: str) -> bool:
        """Whether ``worker`` has beaten its heart lately (this one always is)."""
        if worker == self.worker:
            return True
        return bool(await self.call(lambda client: client.exists(self.key("worker", worker))))

    def _spawn(self, awaitable: Awaitable[Any]) -> None:
        """Run ``awaitable`` on its own (kept until done; a failure is logged)."""
        future = asyncio.ensure_future(awaitable)
        _BACKGROUND.add(future)
        future.add_done_callback(_forget_background)


_BACKGROUND: set[asyncio.Future[Any]] = set()


def _forget_background(future: asyncio.Future[Any]) -> None:
    _BACKGROUND.discard(future)
    if not future.cancelled() and future.exception() is not None:
        logger.debug("a background Redis command failed: %s", future.exception())


def _is_redis_error(error: BaseException) -> bool:
    from redis.exceptions import RedisError

    return isinstance(error, RedisError | OSError | asyncio.TimeoutError)


def _is_outage(error: BaseException) -> bool:
    """Redis could not be reached, or did not answer in time (not: it answered an error)."""
    from redis.exceptions import ConnectionError as Unreachable
    from redis.exceptions import TimeoutError as Unanswered

    return isinstance(error, Unreachable | Unanswered | OSError | asyncio.TimeoutError)
