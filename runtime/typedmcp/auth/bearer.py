"""Bearer-token checks for the Streamable HTTP server (``http_app(h, auth=BearerAuth(...))``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class BearerAuth:
    """Bearer-token check: ``verify(token)`` returns a principal (any value) or None.

    ``resource_metadata`` is the RFC 9728 protected-resource metadata document served at
    ``/.well-known/oauth-protected-resource<endpoint path>``; its URL goes into the
    ``WWW-Authenticate`` challenge of every 401. Without a ``resource`` of its own, the
    document names the endpoint's URL as each request reached it. Mounted under a prefix of
    a larger app, the path is ``/.well-known/oauth-protected-resource<prefix><endpoint path>``
    on the outer app, which routes it: ``api.add_route(*mcp.protected_resource_route(prefix))``.
    """

    verify: Callable[[str], Awaitable[Any] | Any]
    resource_metadata: dict[str, Any]
