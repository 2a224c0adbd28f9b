"""Where the request being served came from: its HTTP headers and the principal its bearer
token authenticated (``http_app(..., auth=BearerAuth(...))``).

The HTTP server sets it for the handling of each HTTP request (:func:`serving_origin`);
the handler tasks it starts, and the worker threads they hand sync functions to, inherit
it (a context variable). Over stdio there is none. A handler reads it with
:func:`request_origin`; the app's :class:`~typedmcp.app.Context` as ``ctx.principal`` and
``ctx.headers``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

#: Headers never shown to handlers: the bearer token is the transport's business (the
#: principal is what it proved), and MCP forbids passing it on.
HIDDEN_HEADERS = frozenset({"authorization"})


class BearerCheck(Protocol):
    """What the HTTP server needs of its ``auth``: a token check and the protected-resource
    metadata document. :class:`~typedmcp.auth.bearer.BearerAuth` is one; what ``verify``
    returns for a valid token is the request's principal."""

    @property
    def verify(self) -> Callable[[str], Awaitable[Any] | Any]: ...

    @property
    def resource_metadata(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Principal:
    """Who a verified access token speaks for: what the token verifiers return.

    Identity is ``issuer``, ``subject`` and ``client_id``: equality, hashing and ``repr``
    (which the session and request-state bindings fingerprint) use only those, so a
    refreshed or stepped-up token of the same caller keeps its sessions. ``scopes`` and
    ``claims`` are what this token grants and says; ``expires_at`` is a ``time.time()``
    value (None: no expiry known).
    """

    subject: str
    issuer: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = field(default=frozenset(), compare=False, repr=False)
    claims: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    expires_at: float | None = field(default=None, compare=False, repr=False)

    def has_scopes(self, required: frozenset[str] | set[str] | tuple[str, ...]) -> bool:
        """Whether this token grants every scope in ``required``."""
        return self.scopes.issuperset(required)


@dataclass(frozen=True)
class RequestOrigin:
    """The HTTP request behind an MCP request: its headers (names lower-case, as received)
    and the authenticated principal (None without ``auth``)."""

    raw_headers: Mapping[str, str]
    principal: object | None

    @property
    def headers(self) -> dict[str, str]:
        """The headers, lower-case names, without ``Authorization``."""
        return {name: value for name, value in self.raw_headers.items() if name not in HIDDEN_HEADERS}


_current_origin: contextvars.ContextVar[RequestOrigin | None] = contextvars.ContextVar(
    "typedmcp_request_origin", default=None
)


def request_origin() -> RequestOrigin | None:
    """The origin of the request being served; None over stdio (or outside a request)."""
    return _current_origin.get()


class ServingOrigin:
    """The block :func:`serving_origin` opens (a class: cheaper than a generator's context
    manager, and the HTTP servers enter one per request)."""

    __slots__ = ("origin", "token")

    def __init__(self, origin: RequestOrigin) -> None:
        self.origin = origin
        self.token: contextvars.Token[RequestOrigin | None] | None = None

    def __enter__(self) -> None:
        self.token = _current_origin.set(self.origin)

    def __exit__(self, *exc_info: object) -> None:
        assert self.token is not None
        _current_origin.reset(self.token)


def serving_origin(headers: Mapping[str, str], principal: object | None) -> ServingOrigin:
    """Make ``headers`` and ``principal`` the origin of what is served inside the block."""
    return ServingOrigin(RequestOrigin(headers, principal))
