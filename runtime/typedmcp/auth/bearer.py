"""Bearer-token checks for the Streamable HTTP server (``http_app(h, auth=BearerAuth(...))``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .verifiers import TokenVerifier

if TYPE_CHECKING:
    from .fetch import Fetch

logger = logging.getLogger("typedmcp.auth")


@dataclass
class BearerAuth:
    """Bearer-token check: ``verify(token)`` returns a principal (any value) or None.

    ``resource_metadata`` is the RFC 9728 protected-resource metadata document served at
    ``/.well-known/oauth-protected-resource<endpoint path>``; its URL goes into the
    ``WWW-Authenticate`` challenge of every 401. Without a ``resource`` of its own, the
    document names the endpoint's URL as each request reached it. Mounted under a prefix of
    a larger app, the path is ``/.well-known/oauth-protected-resource<prefix><endpoint path>``
    on the outer app, which routes it: ``api.add_route(*mcp.protected_resource_route(prefix))``.

    Built from a token verifier (:meth:`jwt`, :meth:`introspection`, :meth:`from_env`,
    :meth:`from_verifier`), ``verify`` returns a :class:`~typedmcp.Principal`; when the
    verifier cannot reach its authorization server the request is answered 503 with
    ``Retry-After`` (and the outage logged once), not 401: the client's token may be fine.
    """

    verify: Callable[[str], Awaitable[Any] | Any]
    resource_metadata: dict[str, Any]
    verifier: TokenVerifier | None = None  # what ``verify`` belongs to, when built from one

    @classmethod
    def from_verifier(
        cls,
        verifier: TokenVerifier,
        *,
        resource: str | None = None,
        scopes_supported: Iterable[str] | None = None,
        resource_metadata: Mapping[str, Any] | None = None,
    ) -> BearerAuth:
        """Check tokens with ``verifier``; the metadata document lists its issuer in
        ``authorization_servers``, ``resource`` (default: the endpoint's URL as requested)
        and ``scopes_supported`` (without ``offline_access``, which 2026-07-28 asks servers not
        to list: a refresh token is between the client and its authorization server);
        ``resource_metadata`` adds or overrides fields."""
        document: dict[str, Any] = {
            "authorization_servers": verifier.authorization_servers(),
            "bearer_methods_supported": ["header"],
        }
        if resource is not None:
            document["resource"] = resource
        if scopes_supported is not None:
            document["scopes_supported"] = sorted(set(scopes_supported) - {"offline_access"})
        document.update(resource_metadata or {})
        return cls(verifier.verify, document, verifier)

    @classmethod
    def jwt(
        cls,
        *,
        issuer: str,
        audience: str | Sequence[str],
        jwks_url: str,
        resource: str | None = None,
        scopes_supported: Iterable[str] | None = None,
        algorithms: Iterable[str] = ("RS256", "ES256", "EdDSA"),
        leeway: float = 30.0,
        refetch_interval: float = 30.0,
        max_jwks_age: float = 3600.0,
        cache_size: int = 10_000,
        token_type: str | None = None,
        fetch: Fetch | None = None,
    ) -> BearerAuth:
        """JWT access tokens checked against ``jwks_url`` (:class:`~typedmcp.auth.jwt.JwtVerifier`,
        which the other arguments go to). ``resource`` defaults to ``audience`` when that is
        one http(s) URL."""
        from .jwt import JwtVerifier

        verifier = JwtVerifier(
            issuer=issuer, audience=audience, jwks_url=jwks_url, algorithms=algorithms, leeway=leeway,
            refetch_interval=refetch_interval, max_jwks_age=max_jwks_age, cache_size=cache_size,
            token_type=token_type, fetch=fetch,
        )
        if resource is None and isinstance(audience, str) and audience.startswith(("https://", "http://")):
            resource = audience
        return cls.from_verifier(verifier, resource=resource, scopes_supported=scopes_supported)

    @classmethod
    def introspection(
        cls,
        *,
        introspection_url: str,
        client_id: str,
        client_secret: str,
        issuer: str | None = None,
        audience: str | Sequence[str] | None = None,
        resource: str | None = None,
        scopes_supported: Iterable[str] | None = None,
        leeway: float = 30.0,
        cache_size: int = 10_000,
        max_cache_seconds: float = 300.0,
        inactive_cache_seconds: float = 10.0,
        fetch: Fetch | None = None,
    ) -> BearerAuth:
        """Tokens checked by RFC 7662 introspection
        (:class:`~typedmcp.auth.introspection.IntrospectionVerifier`, which the other
        arguments go to)."""
        from .introspection import IntrospectionVerifier

        verifier = IntrospectionVerifier(
            introspection_url=introspection_url, client_id=client_id, client_secret=client_secret,
            issuer=issuer, audience=audience, leeway=leeway, cache_size=cache_size,
            max_cache_seconds=max_cache_seconds, inactive_cache_seconds=inactive_cache_seconds, fetch=fetch,
        )
        if resource is None and isinstance(audience, str) and audience.startswith(("https://", "http://")):
            resource = audience
        return cls.from_verifier(verifier, resource=resource, scopes_supported=scopes_supported)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> BearerAuth:
        """The check the ``MCP_AUTH_*`` variables describe (:mod:`typedmcp.auth.env`); raises
        :class:`~typedmcp.auth.env.AuthConfigError` naming what is missing."""
        from .env import verifier_from_env

        verifier = verifier_from_env(environ)
        audiences = getattr(verifier, "audiences", [])
        resource = audiences[0] if len(audiences) == 1 and audiences[0].startswith(("https://", "http://")) else None
        return cls.from_verifier(verifier, resource=resource)


def auth_from_environment(environ: Mapping[str, str] | None = None) -> BearerAuth | None:
    """``BearerAuth.from_env()`` when ``MCP_AUTH_ISSUER`` is set, else None (``http_app``
    without ``auth=``); misspelt ``MCP_AUTH_*`` variables are warned about either way."""
    from .env import auth_configured, unknown_auth_environment

    if auth_configured(environ):
        return BearerAuth.from_env(environ)  # (which warns)
    for warning in unknown_auth_environment(environ):
        logger.warning("%s", warning)
    return None
