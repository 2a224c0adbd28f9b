"""The HTTP exchanges of the OAuth client (metadata, registration, tokens) and the user
agent that takes the user to the authorization URL.

They go through aiohttp, like every HTTP request of the runtime: through the HTTP client of
the connection the provider rides on (:func:`fetch_through`: its trust store, client
certificate, proxy and session), or, outside a connection, a client of their own
(:func:`http_fetch`). Redirects are not followed: the caller sees the 3xx.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..transports.http_client import open_client
from ..transports.http_wire import (
    MAX_FETCH_BYTES,
    ClientCert,
    HttpOptions,
    HttpReply,
    HttpTimeouts,
    ServerUnreachable,
    Verify,
)

if TYPE_CHECKING:
    from ..transports.http_aiohttp import HttpClient

__all__ = ["Fetch", "HttpReply", "OAuthError", "UserAgent", "auto_approve", "fetch_through", "http_fetch"]


class OAuthError(Exception):
    """An authorization step failed; the message says which and why."""


Fetch = Callable[[str, str, bytes, Mapping[str, str]], Awaitable[HttpReply]]
"""``fetch(method, url, body, headers)`` -> :class:`HttpReply`; redirects are not followed."""


async def http_fetch(
    method: str,
    url: str,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    *,
    verify: Verify = True,
    cert: ClientCert | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
    timeouts: HttpTimeouts | None = None,
    http_session: Any = None,
    max_fetch_bytes: int = MAX_FETCH_BYTES,
) -> HttpReply:
    """One HTTP request on a client of its own (closed after it); no redirects. The
    keyword arguments are ``connect_http``'s (``functools.partial(http_fetch, verify=...)``
    is a :data:`Fetch` with a custom trust store); a body over ``max_fetch_bytes`` (1 MiB by
    default) is not read: :class:`OAuthError` naming the cap."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise OAuthError(f"cannot fetch {url!r}: only http(s) URLs are supported")
    options = HttpOptions(verify, cert, proxy, trust_env, timeouts or HttpTimeouts(), http_session,
                          max_fetch_bytes=max_fetch_bytes)
    http = open_client(url, {}, options)
    try:
        return await fetch_through(http, method, url, body, headers or {})
    finally:
        await http.close()


async def fetch_through(
    http: HttpClient, method: str, url: str, body: bytes, headers: Mapping[str, str]
) -> HttpReply:
    """``http.fetch`` (a connection's HTTP client), its failures as :class:`OAuthError`."""
    try:
        return await http.fetch(method, url, body, headers)
    except ServerUnreachable as error:
        raise OAuthError(f"cannot reach {url}: {error}") from None
    except (ConnectionError, ValueError) as error:
        raise OAuthError(f"{method} {url} failed: {error}") from None


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
