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
    ``WWW-Authenticate`` challenge of every 401.
    """

    verify: Callable[[str], Awaitable[Any] | Any]
    resource_metadata: dict[str, Any]
