"""What the Streamable HTTP server shares with the other workers of a deployment, when it
does: the seam between :class:`~typedmcp.transports.http_server.HttpApp` and a store of
sessions outside the process (``typedmcp.state``: Redis), and the session object both use.

Without a :class:`SharedSessions`, a session lives in the worker that created it (the
default, and the fastest: the load balancer must then route by ``Mcp-Session-Id``). With one,
any worker serves any request of any session; the app calls it at the points listed below,
and only there, so the in-memory path does no extra work.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..engine.jsonrpc import Engine
from ..protocol.server import ServerSession
from .asgi import Receive, Send
from .http_streams import SessionTransport


@dataclass
class HttpSession:
    """One MCP session: its server session, engine and streams."""

    id: str
    server: ServerSession
    engine: Engine
    transport: SessionTransport
    last_seen: float = field(default_factory=time.monotonic)
    get_connected: bool = False
    principal: Any = None  # who initialized it (with auth on): no one else may use it
    owner: Any = None  # whose sessions it counts with against the per-client cap
    active: int = 0  # HTTP requests of this session being served right now

    def busy(self) -> bool:
        """Serving an HTTP request (an open GET stream included) or running a handler."""
        return self.active > 0 or bool(self.engine._incoming)


class SessionTable(MutableMapping[str, HttpSession]):
    """A worker's live sessions by id, kept in order of last use, overall and per owner, so
    that expiry and eviction look only at the front of an order, never at every session.

    Iteration runs least recently used first. A session's ``last_seen`` is set here only:
    when it is added, when :meth:`touch` marks it used, and when a scan for expired or
    evictable sessions meets it busy (it is in use at that moment); so each order is sorted
    by ``last_seen``. Owners (the principal, or the client's network) that cannot be hashed
    are told apart by their ``repr``. ``clock``: where times come from (never decreasing).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._by_use: OrderedDict[str, HttpSession] = OrderedDict()  # least recently used first
        self._by_owner: dict[Any, OrderedDict[str, HttpSession]] = {}  # the same, per owner key
        self._owner_keys: dict[str, Any] = {}  # session id -> the owner key it is filed under

    # -- the mapping ------------------------------------------------------------------------

    def __getitem__(self, session_id: str) -> HttpSession:
        return self._by_use[session_id]

    def get(self, session_id: str, default: Any = None) -> Any:  # (faster than the mixin's)
        return self._by_use.get(session_id, default)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._by_use

    def __len__(self) -> int:
        return len(self._by_use)

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_use)

    def __setitem__(self, session_id: str, session: HttpSession) -> None:
        """Add ``session`` as the most recently used one (of everyone's and its owner's)."""
        if session_id in self._by_use:
            del self[session_id]
        key = owner_key(session.owner)
        session.last_seen = self.clock()
        self._by_use[session_id] = session
        self._by_owner.setdefault(key, OrderedDict())[session_id] = session
        self._owner_keys[session_id] = key

    def __delitem__(self, session_id: str) -> None:
        del self._by_use[session_id]
        key = self._owner_keys.pop(session_id)
        own = self._by_owner[key]
        del own[session_id]
        if not own:
            del self._by_owner[key]

    # -- use, expiry and eviction -----------------------------------------------------------

    def touch(self, session: HttpSession, now: float | None = None) -> None:
        """``session`` was used now: it becomes the most recently used (if it is still here)."""
        session.last_seen = self.clock() if now is None else now
        session_id = session.id
        if self._by_use.get(session_id) is session:
            self._by_use.move_to_end(session_id)
            self._by_owner[self._owner_keys[session_id]].move_to_end(session_id)

    def count_of(self, owner: Any) -> int:
        """How many sessions ``owner`` holds."""
        own = self._by_owner.get(owner_key(owner))
        return len(own) if own is not None else 0

    def owned_by(self, owner: Any) -> list[HttpSession]:
        """``owner``'s sessions, least recently used first."""
        own = self._by_owner.get(owner_key(owner))
        return list(own.values()) if own is not None else []

    def take_expired(self, idle_timeout: float) -> list[HttpSession]:
        """Remove and return the sessions idle (not busy) for more than ``idle_timeout``
        seconds. Looks at the sessions not used within that time only."""
        now = self.clock()
        expired = []
        by_use = self._by_use
        while by_use:
            session = next(iter(by_use.values()))
            if not now - session.last_seen > idle_timeout:  # (as ``HttpApp._expired`` reckons)
                break
            if session.busy():
                self.touch(session, now)  # in use now: no longer a candidate
            else:
                expired.append(session)
                del self[session.id]
        return expired

    def least_recently_used_idle(self) -> HttpSession | None:
        """The least recently used session of anyone that is not busy; None when every one
        is. The busy ones met on the way are marked used now, so the next scan starts past
        them."""
        return self._first_idle(self._by_use)

    def least_recently_used_idle_of(self, owner: Any) -> HttpSession | None:
        """The same among ``owner``'s sessions."""
        return self._first_idle(self._by_owner.get(owner_key(owner)))

    def _first_idle(self, order: OrderedDict[str, HttpSession] | None) -> HttpSession | None:
        now: float | None = None
        for _ in range(len(order) if order else 0):
            assert order is not None
            session = next(iter(order.values()))
            if not session.busy():
                return session
            if now is None:
                now = self.clock()
            self.touch(session, now)  # (moves it to the end of ``order`` too)
        return None


def owner_key(owner: Any) -> Any:
    """``owner`` as a dict key: itself if it can be hashed, else its ``repr``."""
    try:
        hash(owner)
    except TypeError:
        return (SessionTable, repr(owner))
    return owner


class SharedState(Protocol):
    """A connection to the state the workers share (``typedmcp.state.RedisState``),
    started and closed with the app (lifespan)."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...


class SharedSessions(Protocol):
    """Handshake-era sessions that any worker serves (``typedmcp.state.RedisSessions``)."""

    #: The engine class of the sessions (server-to-client request ids name the worker).
    engine_class: type[Engine]

    def attach(self, app: Any) -> None:
        """Called once by the app (an ``HttpApp``) it serves."""

    def close(self) -> None:
        """Drop this worker's copies of the sessions (lifespan shutdown); they live on."""

    def transport(self, session_id: str, tag: str | None) -> SessionTransport:
        """The transport of a session (``tag``: its stream tag; None: a new session)."""
        ...

    async def make_room(self, owner: Any) -> tuple[int, str] | None:
        """Apply the session caps before a new session, as ``HttpApp._make_room``."""
        ...

    async def created(self, session: HttpSession) -> None:
        """A session was initialized here: record it for every worker."""

    async def open(
        self, session_id: str | None, principal: Any
    ) -> tuple[HttpSession | None, int, str]:
        """The session a request names, as ``HttpApp._session_for`` answers."""
        ...

    async def handled(self, session: HttpSession, message: dict[str, Any], send: Send) -> bool:
        """Serve a message the other workers must know of: a client's response or
        cancellation for a request another worker runs (passed on to it), or a request or
        notification that changes the session's state (log level, subscriptions,
        ``initialized``: recorded before the answer goes out). False: serve it as usual."""
        ...

    async def serve_get(
        self, session: HttpSession, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        """Serve the session's GET stream (or resume a stream with ``Last-Event-ID``)."""

    async def deleted(self, session: HttpSession) -> None:
        """The client ended the session (DELETE): end it on every worker."""
