"""What the token verifiers share: the :class:`TokenVerifier` protocol, the claims that
make a :class:`~typedmcp.protocol.origin.Principal`, and the log of an authorization server
that cannot be reached (once per outage, not once per request)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from ..protocol.origin import Principal
from ..transports.http_auth import VerifierUnavailable

__all__ = ["OutageLog", "TokenVerifier", "VerifierUnavailable", "principal_from_claims", "scopes_of"]

logger = logging.getLogger("typedmcp.auth")


class TokenVerifier(Protocol):
    """Checks an access token: the :class:`Principal` it speaks for, or None when it is not
    valid here; raises :class:`VerifierUnavailable` when it cannot tell (the authorization
    server unreachable)."""

    async def verify(self, token: str) -> Principal | None: ...

    def authorization_servers(self) -> list[str]:
        """The issuers to list in the protected-resource metadata (RFC 9728)."""
        ...


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """The scopes a token grants: ``scope`` (space-separated, RFC 9068 and RFC 7662) or
    ``scp`` (a list, or a space-separated string, as some identity providers send)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list | tuple):
        return frozenset(str(item) for item in value)
    return frozenset()


def principal_from_claims(claims: Mapping[str, Any], subject: str) -> Principal:
    """The principal of a verified token's claims (``subject`` chosen by the verifier)."""
    client_id = claims.get("client_id", claims.get("azp"))
    issuer = claims.get("iss")
    expiry = claims.get("exp")
    return Principal(
        subject=subject,
        issuer=issuer if isinstance(issuer, str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=scopes_of(claims),
        claims=dict(claims),
        expires_at=float(expiry) if isinstance(expiry, int | float) and not isinstance(expiry, bool) else None,
    )


class OutageLog:
    """Logs an authorization server's failure once when it starts and once when it ends,
    however many requests it fails meanwhile."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.down = False

    def failed(self, reason: str) -> VerifierUnavailable:
        """Note a failure (logged if it is the first of an outage); the error to raise."""
        if not self.down:
            self.down = True
            logger.warning(
                "%s: %s; requests with a bearer token are answered 503 until it recovers",
                self.what, reason,
            )
        return VerifierUnavailable(f"{self.what}: {reason}")

    def succeeded(self) -> None:
        """Note a success (logged if it ends an outage)."""
        if self.down:
            self.down = False
            logger.warning("%s: reachable again", self.what)
