"""One-shot HTTP exchanges of the OAuth client (metadata, registration, tokens) and the
user agent that takes the user to the authorization URL."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic_core import from_json

from ..transports.http_wire import _Connection, read_response, request_head


class OAuthError(Exception):
    """An authorization step failed; the message says which and why."""


@dataclass(frozen=True)
class HttpReply:
    """A complete HTTP response (header names lower-cased)."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return from_json(self.body, allow_inf_nan=False)
        except ValueError:
            return None


Fetch = Callable[[str, str, bytes, Mapping[str, str]], Awaitable[HttpReply]]
"""``fetch(method, url, body, headers)`` -> :class:`HttpReply`; redirects are not followed."""


async def http_fetch(
    method: str, url: str, body: bytes = b"", headers: Mapping[str, str] | None = None
) -> HttpReply:
    """One HTTP/1.1 request on a fresh connection (``Connection: close``); no redirects."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OAuthError(f"cannot fetch {url!r}: only http(s) URLs are supported")
    secure = parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    head = request_head(method, target, parts.netloc, {"Connection": "close", **(headers or {})}, body)
    try:
        reader, writer = await asyncio.open_connection(
            parts.hostname, port, ssl=ssl.create_default_context() if secure else None
        )
    except OSError as error:
        raise OAuthError(f"cannot reach {url}: {error}") from None
    try:
        writer.write(head + body)
        await writer.drain()
        response = await read_response(_Connection(reader, writer))
        data = await response.read()
    except (OSError, ValueError, IndexError, asyncio.IncompleteReadError) as error:
        raise OAuthError(f"{method} {url} failed: {error or type(error).__name__}") from None
    finally:
        writer.close()
    return HttpReply(response.status, response.headers, data)


UserAgent = Callable[[str], Awaitable[str]]
"""Takes the user to the authorization URL; returns the redirect URL the authorization
server sent them back to (``redirect_uri?code=...&state=...``)."""


def auto_approve(fetch: Fetch = http_fetch) -> UserAgent:
    """A headless user agent for servers that approve without a person (tests, CI): it
    fetches the authorization URL and returns the ``Location`` it redirects to."""

    async def agent(url: str) -> str:
        reply = await fetch("GET", url, b"", {})
        location = reply.headers.get("location")
        if reply.status not in (301, 302, 303, 307, 308) or not location:
            raise OAuthError(
                f"the authorization endpoint answered HTTP {reply.status} instead of a redirect"
            )
        return location

    return agent
