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
