"""Opaque access tokens checked by the authorization server: OAuth 2.0 Token Introspection
(RFC 7662).

:class:`IntrospectionVerifier` POSTs the token to the introspection endpoint, authenticated
with its client credentials (HTTP Basic, RFC 6749 section 2.3.1), and accepts it when the
answer says ``active: true``, its ``exp``/``nbf`` hold (with ``leeway``), and its ``iss`` and
``aud``, when present, are the configured issuer and this resource. Answers are cached by a
hash of the token: an active one until its ``exp`` (never past it) and at most
``max_cache_seconds`` (a revoked token stops working within that time), an inactive one for
``inactive_cache_seconds``; at most ``cache_size`` tokens, the least recently used dropped.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

from ..protocol.origin import Principal
from ..transports.http_wire import HttpTimeouts
from .fetch import Fetch, OAuthError, http_fetch
from .verifiers import OutageLog, principal_from_claims

__all__ = ["IntrospectionVerifier"]

logger = logging.getLogger("typedmcp.auth")

#: The time limits of an introspection request (seconds); the verifier's own fetch uses them.
INTROSPECTION_TIMEOUTS = HttpTimeouts(connect=5.0, reply=10.0)


class IntrospectionVerifier:
    """Checks access tokens at an RFC 7662 introspection endpoint (see the module's text).

    ``issuer``: the authorization server (listed in the protected-resource metadata; an
    answer's ``iss``, when present, must be it). ``audience``: this resource's identifier(s);
    an answer's ``aud``, when present, must name one. ``fetch`` makes the requests (default:
    the runtime's aiohttp client with :data:`INTROSPECTION_TIMEOUTS`). ``clock`` times the
    cache (``time.time``: the answers' ``exp`` is in those seconds).
    """

    def __init__(
        self,
        *,
        introspection_url: str,
        client_id: str,
        client_secret: str,
        issuer: str | None = None,
        audience: str | Sequence[str] | None = None,
        leeway: float = 30.0,
        cache_size: int = 10_000,
        max_cache_seconds: float = 300.0,
        inactive_cache_seconds: float = 10.0,
        fetch: Fetch | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not introspection_url or not client_id or not client_secret:
            raise ValueError(
                "IntrospectionVerifier needs introspection_url=, client_id= and client_secret= "
                "(this resource server's credentials at the authorization server)"
            )
        if cache_size < 0:
            raise ValueError(f"cache_size must be 0 (no cache) or more (got {cache_size})")
        self.introspection_url, self.issuer, self.leeway = introspection_url, issuer, leeway
        self.audiences = [audience] if isinstance(audience, str) else list(audience or [])
        credentials = f"{quote(client_id, safe='')}:{quote(client_secret, safe='')}"
        self._authorization = "Basic " + base64.b64encode(credentials.encode()).decode("ascii")
        self.cache_size, self.max_cache_seconds = cache_size, max_cache_seconds
        self.inactive_cache_seconds = inactive_cache_seconds
        self.fetch: Fetch = fetch or functools.partial(http_fetch, timeouts=INTROSPECTION_TIMEOUTS)
        self.clock = clock
        # sha256(token) -> (the principal or None for inactive, cached until (clock))
        self.cache: OrderedDict[bytes, tuple[Principal | None, float]] = OrderedDict()
        self.requests = 0  # introspection requests made
        self.outage = OutageLog(f"the introspection endpoint {introspection_url}")

    def authorization_servers(self) -> list[str]:
        """The issuer (when configured), for the protected-resource metadata."""
        return [self.issuer] if self.issuer else []

    async def verify(self, token: str) -> Principal | None:
        """The principal of an active token; None for an inactive or foreign one. Raises
        :class:`~typedmcp.auth.verifiers.VerifierUnavailable` when the endpoint cannot say."""
        digest = hashlib.sha256(token.encode()).digest()
        now = self.clock()
        cached = self.cache.get(digest)
        if cached is not None:
            principal, until = cached
            if now < until:
                self.cache.move_to_end(digest)
                return principal
            del self.cache[digest]
        answer = await self._introspect(token)
        principal = self._principal_of(answer, now)
        if principal is None:
            until = now + self.inactive_cache_seconds
        else:
            until = now + self.max_cache_seconds
            if principal.expires_at is not None:
                until = min(until, principal.expires_at)
        self._remember(digest, principal, until)
        return principal

    def _remember(self, digest: bytes, principal: Principal | None, until: float) -> None:
        if self.cache_size == 0 or until <= self.clock():
            return
        self.cache[digest] = (principal, until)
        self.cache.move_to_end(digest)
        while len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)

    async def _introspect(self, token: str) -> Mapping[str, Any]:
        body = urlencode({"token": token, "token_type_hint": "access_token"}).encode()
        headers = {
            "Authorization": self._authorization,
            "Content-Type": "application/x-www-form-urlencoded",
            "Accept": "application/json",
        }
        self.requests += 1
        try:
            reply = await self.fetch("POST", self.introspection_url, body, headers)
        except (OAuthError, OSError, asyncio.TimeoutError) as error:
            raise self.outage.failed(str(error) or type(error).__name__) from None
        if reply.status in (401, 403):
            raise self.outage.failed(
                f"refused this server's client credentials (HTTP {reply.status}); check the "
                "client_id and client_secret (MCP_AUTH_CLIENT_ID, MCP_AUTH_CLIENT_SECRET)"
            )
        if reply.status != 200:
            raise self.outage.failed(f"answered HTTP {reply.status}")
        answer = reply.json()
        if not isinstance(answer, dict) or not isinstance(answer.get("active"), bool):
            raise self.outage.failed('answered something other than an RFC 7662 response (no "active")')
        self.outage.succeeded()
        return answer

    def _principal_of(self, answer: Mapping[str, Any], now: float) -> Principal | None:
        if answer.get("active") is not True:
            return _refused("inactive")
        expiry, not_before = answer.get("exp"), answer.get("nbf")
        if isinstance(expiry, int | float) and expiry + self.leeway <= now:
            return _refused("expired")
        if isinstance(not_before, int | float) and not_before - self.leeway > now:
            return _refused("not valid yet (nbf)")
        issuer = answer.get("iss")
        if self.issuer is not None and issuer is not None and issuer != self.issuer:
            return _refused(f"issued by {issuer!r}, not {self.issuer!r}")
        audience = answer.get("aud")
        if self.audiences and audience is not None:
            named = [audience] if isinstance(audience, str) else audience
            if not isinstance(named, list) or not set(self.audiences) & {str(a) for a in named}:
                return _refused(f"meant for {audience!r}, not {' or '.join(self.audiences)}")
        subject = next(
            (value for name in ("sub", "username", "client_id")
             if isinstance(value := answer.get(name), str) and value),
            None,
        )
        if subject is None:
            return _refused("the answer names no sub, username or client_id")
        claims = dict(answer)
        if issuer is None and self.issuer is not None:
            claims["iss"] = self.issuer
        return principal_from_claims(claims, subject)


def _refused(reason: str) -> Principal | None:
    logger.debug("bearer token refused by introspection: %s", reason)
    return None
