"""One configured server under supervision: connect, list, watch, restart.

Each :class:`ServerRuntime` runs one task that owns its connection (the connect context
managers are entered and left in it): connect within ``startupTimeout``, list everything the
server offers, then wait until the connection goes down. A stdio server is watched through
its process, so its exit is noticed when it happens; any server whose connection a call
finds broken (an HTTP server that went away) is torn down the same way. Then the runtime
waits a bounded exponential back-off and connects again: ``initial_backoff`` doubled after
each failure up to ``max_backoff``, from ``initial_backoff`` again once a connection stayed
up ``HEALTHY_AFTER`` seconds (both measured on the runtime's :class:`SupervisorClock`, which
tests replace). In-flight calls of a connection that goes down fail at once (the engine
fails every pending request when its reader stops), and the host turns that into
:class:`~.errors.ServerUnavailable` naming the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import shlex
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any, Protocol

from pydantic import ValidationError

from ..connecting import connect_http, connect_process
from ..engine.jsonrpc import ConnectionClosed, RpcError
from ..protocol.capabilities import has_capability
from ..protocol.client import ClientSession
from ..protocol.probing import NegotiationTimeout
from ..protocol.results import InvalidResult, to_wire
from ..protocol.tools import ToolSchemas
from ..transports.stdio import spawn
from .config import ServerConfig
from .registry import ServerLists

logger = logging.getLogger("typedmcp.host")

STARTING, READY, RESTARTING, FAILED, STOPPED = "starting", "ready", "restarting", "failed", "stopped"
#: a connection that stayed up this long resets the back-off
HEALTHY_AFTER = 10.0
#: how long a broken stdio connection waits for its process's exit code (for the report)
EXIT_GRACE = 1.0
#: A stdio server's negotiation gives up this long before ``startupTimeout`` runs out, so
#: its own error (naming the command and the time waited) is the one reported.
NEGOTIATION_MARGIN = 0.05
MAX_PAGES = 1000
#: list kind -> (request method, server capability, result field)
LISTS = {
    "tools": ("tools/list", "tools", "tools"),
    "resources": ("resources/list", "resources", "resources"),
    "templates": ("resources/templates/list", "resources", "resourceTemplates"),
    "prompts": ("prompts/list", "prompts", "prompts"),
}


class SupervisorClock(Protocol):
    """The time a supervisor goes by: how long a connection stayed up, and the back-off
    wait before a restart. :class:`LoopClock` is the real one; tests pass their own."""

    def now(self) -> float:
        """Seconds on a monotonic clock."""
        ...

    async def wait(self, delay: float, stop: asyncio.Event) -> None:
        """Return after ``delay`` seconds, or as soon as ``stop`` is set."""
        ...


class LoopClock:
    """The event loop's clock, and a back-off wait that ``stop()`` ends early."""

    def now(self) -> float:
        """The running loop's time."""
        return asyncio.get_running_loop().time()

    async def wait(self, delay: float, stop: asyncio.Event) -> None:
        """Wait ``delay`` seconds, or until ``stop`` is set."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)


class RuntimeOwner(Protocol):
    """What a runtime tells its host."""

    def lists_changed(self, runtime: ServerRuntime) -> None: ...

    def state_changed(self, runtime: ServerRuntime) -> None: ...


def describe_error(error: BaseException) -> str:
    """What went wrong, for ``status()`` and error messages: the error's type and message,
    whole (a server that died names its command, exit code and last lines of stderr on the
    lines after the first)."""
    if isinstance(error, asyncio.TimeoutError) and not str(error):
        return "timed out"
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class ServerRuntime:
    """A configured server: its connection (``client``/``session`` while up), its state,
    what it listed, and the task that keeps it connected."""

    def __init__(
        self,
        config: ServerConfig,
        owner: RuntimeOwner,
        handlers: Callable[[], object],
        package: ModuleType,
        *,
        initial_backoff: float = 0.25,
        max_backoff: float = 30.0,
        log_level: str | None = None,
        refresh_delay: float = 0.02,
        clock: SupervisorClock | None = None,
    ) -> None:
        self.config = config
        self.name = config.name
        self.owner = owner
        self.make_handlers = handlers
        self.package = package
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.log_level = log_level
        self.refresh_delay = refresh_delay
        #: uptime and back-off waits are measured on it (:class:`LoopClock` unless given)
        self.clock: SupervisorClock = clock or LoopClock()
        self.state = STOPPED
        self.client: Any = None
        self.session: Any = None
        self.era: str | None = None
        self.revision: str | None = None
        self.transport_kind: str | None = None
        self.server_info: dict[str, Any] = {}
        self.capabilities: dict[str, Any] = {}
        self.last_error: str | None = None
        self.restarts = 0
        self.lists = ServerLists()
        self.list_errors: dict[str, str] = {}  # list kind -> why the last listing failed
        self.schemas = ToolSchemas()
        self.started = asyncio.Event()  # the first attempt ended (up, or failed)
        #: forwarders of gateway calls in flight (see ``Host.server_request``)
        self.origins: list[Any] = []
        dispatch = importlib.import_module(f"{package.__name__}.dispatch")
        self.specs = dispatch.REQUESTS
        self.call_spec = dispatch.REQUESTS["tools/call"]
        self._task: asyncio.Task[None] | None = None
        self._down = asyncio.Event()
        self._down_reason: str | None = None
        self._stopping = False
        self._dirty: set[str] = set()
        self._refresher: asyncio.Task[None] | None = None

    # -- status ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """State, era, revision, transport, last error and restart count."""
        return {
            "state": self.state,
            "era": self.era,
            "revision": self.revision,
            "transport": self.transport_kind or self.config.transport,
            "last_error": self.last_error,
            "restarts": self.restarts,
            "list_errors": dict(self.list_errors),
            "server_info": dict(self.server_info),
        }

    def why_unavailable(self) -> str:
        reason = self._down_reason or self.last_error
        return f"{self.state}" + (f" ({reason})" if reason else "")

    # -- life cycle --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the supervising task (connect now, restart after failures)."""
        if self._task is None:
            self.state = STARTING
            self._task = asyncio.create_task(self._supervise(), name=f"mcp-host:{self.name}")

    async def stop(self, why: str = "stopped") -> None:
        """Disconnect for good; in-flight calls fail with ``why``."""
        self._stopping = True
        self._down_reason = why
        self._down.set()
        task = self._task
        if task is not None and self.client is None:
            task.cancel()  # connecting or waiting to restart: nothing to close gracefully
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.state = STOPPED
        self.started.set()

    def connection_lost(self, error: BaseException) -> None:
        """A call found the connection broken: no new calls go there; the supervising
        task tears it down and reconnects."""
        if self.client is not None and not self._down.is_set():
            self._down_reason = self.last_error = f"connection lost ({describe_error(error)})"
            self._down.set()
            self._mark_down()

    async def _supervise(self) -> None:
        clock = self.clock
        failures = 0
        while not self._stopping:
            began = clock.now()
            self._down.clear()
            self._down_reason = None
            was_up = False
            try:
                was_up = await self._run_once()
                error = self._down_reason or "the connection ended"
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = describe_error(exc)
                logger.info("server %r: %s", self.name, error)
            finally:
                await self._disconnected()
            if self._stopping:
                return
            self.last_error = error
            self.started.set()
            if not self.config.restart:
                self.state = FAILED
                self.owner.state_changed(self)
                return
            failures = 1 if was_up and clock.now() - began >= HEALTHY_AFTER else failures + 1
            delay = min(self.max_backoff, self.initial_backoff * 2 ** (failures - 1))
            self.state = RESTARTING
            self.owner.state_changed(self)
            logger.warning("server %r is down (%s); restarting in %.2f s", self.name, error, delay)
            await clock.wait(delay, self._down)  # stop() ends the wait
            if self._stopping:
                return
            self.restarts += 1
            self.state = STARTING
            self.owner.state_changed(self)

    async def _run_once(self) -> bool:
        """Connect, list, serve until the connection goes down. True if it came up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.startup_timeout
        async with contextlib.AsyncExitStack() as stack:
            try:
                client, exited = await asyncio.wait_for(
                    self._open(stack, deadline), self.config.startup_timeout
                )
                session = client.session
                if self.log_level is not None and session.era == "handshake" and has_capability(
                    session.peer_capabilities, ("logging",)
                ):
                    await asyncio.wait_for(session.set_log_level(self.log_level), deadline - loop.time())
                self._adopt(client)
                await asyncio.wait_for(
                    self._list(set(LISTS), force=False, session=session),
                    max(0.1, deadline - loop.time()),
                )
            except NegotiationTimeout as error:
                raise TimeoutError(
                    f"not ready within startupTimeout={self.config.startup_timeout:g} s: {error}"
                ) from None
            except asyncio.TimeoutError:
                raise TimeoutError(
                    f"not ready within startupTimeout={self.config.startup_timeout:g} s"
                ) from None
            self.client, self.session = client, session
            self.state = READY  # last_error stays: the last failure, with ``restarts``
            self.started.set()
            self.owner.lists_changed(self)
            self.owner.state_changed(self)
            waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._down.wait())]
            if exited is not None:
                waiters.append(asyncio.ensure_future(exited))
            if self.config.ping_interval:
                waiters.append(asyncio.ensure_future(self._check_health(session, self.config.ping_interval)))
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                if exited is not None and not self._stopping:
                    # a call may have seen the pipe close first: the exit says more
                    await asyncio.wait(waiters[1:2], timeout=EXIT_GRACE)
            finally:
                for waiter in waiters:
                    waiter.cancel()
                await asyncio.gather(*waiters, return_exceptions=True)
            if exited is not None and waiters[1].done() and not waiters[1].cancelled():
                self._down_reason = f"the process exited with code {waiters[1].result()}"
            self._mark_down()
            return True

    async def _check_health(self, session: Any, interval: float) -> None:
        """Every ``interval`` seconds ask the server something cheap (``ping``; in
        2026-07-28, which has none, ``server/discover``); no answer within ``interval``
        counts as a lost connection. Returns only then."""
        while True:
            await asyncio.sleep(interval)
            package = session.package
            spec = package.dispatch.REQUESTS.get("ping") or package.dispatch.REQUESTS.get("server/discover")
            if spec is None:
                return
            try:
                await session.send_request(spec, None, interval)
            except RpcError:
                continue  # it answered
            except (asyncio.TimeoutError, ConnectionError, OSError, ConnectionClosed) as error:
                self.connection_lost(error)
                return

    def _mark_down(self) -> None:
        """No new calls from here on; the registry shows the server unavailable."""
        self.client = self.session = None
        if self._stopping:
            self.state = STOPPED
        else:
            self.state = RESTARTING if self.config.restart else FAILED
        self.owner.state_changed(self)

    async def _disconnected(self) -> None:
        self.client = self.session = None
        refresher, self._refresher = self._refresher, None
        if refresher is not None:
            refresher.cancel()
            await asyncio.gather(refresher, return_exceptions=True)

    def _protocol(self) -> Any:
        if self.config.protocol == "auto":
            return "auto"
        parent = self.package.__name__.rpartition(".")[0]
        return importlib.import_module(f"{parent}.v{self.config.protocol.replace('-', '_')}")

    async def _open(
        self, stack: contextlib.AsyncExitStack, deadline: float
    ) -> tuple[Any, Awaitable[int] | None]:
        """Connect (entering the contexts on ``stack``) by ``deadline`` (loop time): the
        client, and for stdio the process's exit to watch."""
        config = self.config
        options: dict[str, Any] = {
            "list_changed": ("roots",),
            "request_timeout": config.timeout,
            "log_level": self.log_level,
        }
        handlers: Any = self.make_handlers()  # (typed by the host's package at run time)
        protocol = self._protocol()
        if config.transport == "stdio":
            env = {**os.environ, **dict(config.env)} if config.env else None
            transport = await stack.enter_async_context(
                spawn(list(config.command), env=env, cwd=config.cwd)
            )
            # a slow server's probe is waited for until just before startupTimeout ends
            remaining = deadline - asyncio.get_running_loop().time() - NEGOTIATION_MARGIN
            session = ClientSession(protocol, handlers, connect_timeout=max(0.01, remaining), **options)
            session.origin = "stdio:" + shlex.join(config.command)
            client = await stack.enter_async_context(connect_process(transport, session))
            process = transport.process
            return client, (process.wait() if process is not None else None)
        if config.max_reply_bytes is not None:
            options["max_reply_bytes"] = config.max_reply_bytes
        if config.transport == "sse":
            from ..connecting import connect_sse

            opened = connect_sse(
                str(config.url), protocol=protocol, handlers=handlers,
                headers=dict(config.headers), **options,
            )
        else:
            opened = connect_http(
                str(config.url), protocol=protocol, handlers=handlers,
                headers=dict(config.headers), **options,
            )
        return await stack.enter_async_context(opened), None

    def _adopt(self, client: Any) -> None:
        session = client.session
        self.era = session.era
        self.revision = session.protocol_version
        self.transport_kind = session.transport_kind or self.config.transport
        self.server_info = dict(session.server_info or {})
        self.capabilities = dict(session.peer_capabilities or {})

    # -- lists -------------------------------------------------------------------------------

    async def _list(self, kinds: set[str], force: bool, session: Any = None) -> None:
        """List ``kinds`` again (all pages) unless still fresh; swap them in at once."""
        session = session or self.session
        if session is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        found: dict[str, list[dict[str, Any]]] = {}
        fresh_until: dict[str, float] = {}
        for kind in kinds:
            method, capability, field_name = LISTS[kind]
            if not has_capability(self.capabilities, (capability,)):
                found[kind] = []
                continue
            if not force and self.lists.fresh(kind, now):
                continue
            items: list[dict[str, Any]] = []
            cursor: str | None = None
            ttl: float | None = None
            try:
                for _page in range(MAX_PAGES):
                    result = await session.send_request(
                        self.specs[method], {"cursor": cursor} if cursor else None
                    )
                    wire = to_wire(result)
                    items.extend(wire.get(field_name) or [])
                    page_ttl = wire.get("ttlMs")
                    if isinstance(page_ttl, int):
                        ttl = page_ttl if ttl is None else min(ttl, page_ttl)
                    cursor = wire.get("nextCursor")
                    if not cursor:
                        break
            except (RpcError, InvalidResult, ValidationError) as error:  # this list only; the others stand
                self.list_errors[kind] = f"{method} failed: {describe_error(error)}"
                logger.warning("server %r: %s", self.name, self.list_errors[kind])
                continue
            self.list_errors.pop(kind, None)
            found[kind] = items
            fresh_until[kind] = now + (ttl or 0) / 1000.0
        lists = ServerLists(
            tools=found.get("tools", self.lists.tools),
            resources=found.get("resources", self.lists.resources),
            templates=found.get("templates", self.lists.templates),
            prompts=found.get("prompts", self.lists.prompts),
            fresh_until={**self.lists.fresh_until, **fresh_until},
        )
        if "tools" in found:
            schemas = ToolSchemas()
            schemas.update(lists.tools)
            self.schemas = schemas
        self.lists = lists

    def list_changed(self, kinds: tuple[str, ...]) -> None:
        """A list_changed notification: re-list those kinds soon, once per burst."""
        self._dirty.update(kinds)
        if self._refresher is None or self._refresher.done():
            self._refresher = asyncio.ensure_future(self._refresh())

    async def refresh(self, force: bool) -> None:
        """Re-list everything now (``force``: even lists still fresh)."""
        if self.client is None:
            return
        await self._list(set(LISTS), force)
        self.owner.lists_changed(self)

    async def _refresh(self) -> None:
        if self.refresh_delay:
            await asyncio.sleep(self.refresh_delay)  # let the rest of a burst arrive
        while self._dirty and self.client is not None:
            kinds, self._dirty = self._dirty, set()
            try:
                await self._list(kinds, force=True)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # the connection's own failure handling reconnects
                logger.warning("server %r: re-listing %s failed: %s", self.name,
                               ", ".join(sorted(kinds)), describe_error(error))
                return
            self.owner.lists_changed(self)


__all__ = [
    "FAILED", "READY", "RESTARTING", "STARTING", "STOPPED",
    "LoopClock", "RuntimeOwner", "ServerRuntime", "SupervisorClock",
]
