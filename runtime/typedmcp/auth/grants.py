"""Grants without a user for the OAuth client: client credentials with a signed client
assertion, the JWT-bearer grant of workload identity, and enterprise-managed authorization.

* :class:`PrivateKeyJwt`: authenticates the client at the token endpoint with a JWT it signs
  (RFC 7523 §2.2, ``private_key_jwt``) instead of a shared secret.
* :class:`JwtBearer`: the RFC 7523 §2.1 grant, ``grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer``
  with a JWT the workload already holds (workload identity federation, SEP-1933).
* :class:`EnterpriseManaged`: SEP-990. The user's ID token from the enterprise identity
  provider is exchanged there (RFC 8693 token exchange) for an Identity Assertion JWT
  Authorization Grant (ID-JAG) naming the MCP server's authorization server and resource;
  the ID-JAG is then the assertion of a JWT-bearer grant at that authorization server.

:func:`typedmcp.auth.client_credentials.ClientCredentials` builds a provider for the client
credentials grant.

Signing uses PyJWT with ``cryptography`` keys (``pip install 'typedmcp[auth]'``), imported
only when a :class:`PrivateKeyJwt` is built.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode

from .discovery import basic_credentials
from .dpop import missing_auth_extra
from .fetch import Fetch, HttpReply, OAuthError

__all__ = [
    "ASSERTION_TYPE_JWT",
    "EnterpriseManaged",
    "Grant",
    "GrantRequest",
    "JwtBearer",
    "PrivateKeyJwt",
]

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ASSERTION_TYPE_JWT = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"


class PrivateKeyJwt:
    """``private_key_jwt`` client authentication: each token request carries a fresh JWT
    (``iss`` = ``sub`` = client id, ``aud`` = the authorization server's issuer, ``jti``,
    ``iat``, ``exp``) signed with ``private_key`` (a PEM string/bytes or a ``cryptography``
    key) by ``algorithm`` (``ES256``, ``RS256``, ...)."""

    def __init__(
        self,
        private_key: str | bytes | Any,
        *,
        algorithm: str = "ES256",
        lifetime: float = 300.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        try:
            import jwt  # noqa: F401
            from cryptography.hazmat.primitives.serialization import load_pem_private_key
        except ImportError:
            raise missing_auth_extra("private_key_jwt") from None
        if isinstance(private_key, str):
            private_key = private_key.encode()
        if isinstance(private_key, bytes):
            try:
                private_key = load_pem_private_key(private_key, password=None)
            except ValueError as error:
                raise ValueError(
                    f"private_key is not a PEM private key without a password ({error}); "
                    "pass the PKCS#8 PEM text of the key registered for this client"
                ) from None
        self.private_key: Any = private_key
        self.algorithm = algorithm
        self.lifetime = lifetime
        self.clock = clock

    def assertion(self, client_id: str, audience: str) -> str:
        """A signed client assertion for ``client_id`` addressed to ``audience``."""
        import jwt

        now = int(self.clock())
        claims = {
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "jti": secrets.token_urlsafe(24),
            "iat": now,
            "exp": now + int(self.lifetime),
        }
        return jwt.encode(claims, self.private_key, algorithm=self.algorithm)


@dataclass(frozen=True)
class GrantRequest:
    """What a :class:`Grant` may use to build its token request."""

    issuer: str  #: the authorization server's issuer (from its metadata)
    resource: str  #: the MCP server's canonical URI (RFC 8707)
    scope: str | None
    fetch: Fetch  #: sends a request the way the provider does (trust store, proxy)


class Grant(Protocol):
    """A grant the provider runs on a 401 instead of asking a user: returns the token
    request's form (``grant_type`` and its parameters; the provider adds ``resource``,
    ``scope`` and client authentication)."""

    async def token_form(self, request: GrantRequest) -> dict[str, str]: ...


Assertion = str | Callable[[], str | Awaitable[str]]
"""A JWT, or a callable returning a current one (e.g. reading a projected token file)."""


async def _current(assertion: Assertion) -> str:
    if isinstance(assertion, str):
        return assertion
    value = assertion()
    return value if isinstance(value, str) else await value


@dataclass
class JwtBearer:
    """The RFC 7523 JWT-bearer grant with a workload's JWT as the ``assertion``.

    A refusal (``invalid_grant``, ``invalid_scope``, ``unauthorized_client``) raises
    :class:`OAuthError` at once: the grant is neither retried nor replaced by another."""

    assertion: Assertion

    async def token_form(self, request: GrantRequest) -> dict[str, str]:
        return {"grant_type": JWT_BEARER, "assertion": await _current(self.assertion)}


@dataclass
class EnterpriseManaged:
    """Enterprise-managed authorization (SEP-990): exchange ``id_token`` at the identity
    provider's ``idp_token_endpoint`` for an ID-JAG, then present it as a JWT-bearer grant.

    ``idp_client_id``/``idp_client_secret``: this client's credentials at the identity
    provider (sent with ``client_secret_basic`` when there is a secret, else the id in the
    form). ``id_token`` may be a callable returning a current token."""

    idp_token_endpoint: str
    id_token: Assertion
    idp_client_id: str | None = None
    idp_client_secret: str | None = None

    async def token_form(self, request: GrantRequest) -> dict[str, str]:
        return {"grant_type": JWT_BEARER, "assertion": await self.id_jag(request)}

    async def id_jag(self, request: GrantRequest) -> str:
        """The RFC 8693 token exchange at the identity provider: the ID-JAG it issues."""
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "subject_token": await _current(self.id_token),
            "subject_token_type": ID_TOKEN_TYPE,
            "requested_token_type": ID_JAG_TYPE,
            "audience": request.issuer,
            "resource": request.resource,
        }
        if request.scope:
            form["scope"] = request.scope
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if self.idp_client_id and self.idp_client_secret:
            headers["Authorization"] = basic_credentials(self.idp_client_id, self.idp_client_secret)
        elif self.idp_client_id:
            form["client_id"] = self.idp_client_id
        reply = await request.fetch(
            "POST", self.idp_token_endpoint, urlencode(form).encode(), headers
        )
        answer = reply.json()
        issued = answer.get("issued_token_type") if isinstance(answer, dict) else None
        if reply.status != 200 or not isinstance(answer, dict) or not answer.get("access_token"):
            raise OAuthError(
                f"the token exchange at the identity provider {self.idp_token_endpoint} "
                f"failed: {_describe(reply)}"
            )
        if issued not in (None, ID_JAG_TYPE):
            raise OAuthError(
                f"the identity provider {self.idp_token_endpoint} issued a {issued!r}, "
                f"not an ID-JAG ({ID_JAG_TYPE})"
            )
        return str(answer["access_token"])


def _describe(reply: HttpReply) -> str:
    body = reply.json()
    if isinstance(body, Mapping) and "error" in body:
        detail = body.get("error_description")
        return f"HTTP {reply.status} {body['error']}" + (f": {detail}" if detail else "")
    return f"HTTP {reply.status}"
