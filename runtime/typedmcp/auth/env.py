"""Token verification configured from the environment, as ``MCP_REDIS_URL`` configures
shared state: :func:`verifier_from_env` (``BearerAuth.from_env()``; ``http_app`` uses it
when ``MCP_AUTH_ISSUER`` is set and no ``auth=`` is given).

- ``MCP_AUTH_ISSUER``: the authorization server (``iss`` of the tokens); required.
- ``MCP_AUTH_AUDIENCE``: this resource's identifier, its URL (``aud``); required with a JWKS.
  Several, comma-separated, are all accepted.
- ``MCP_AUTH_JWKS_URL``: JWT access tokens checked against this JWKS, or
- ``MCP_AUTH_INTROSPECTION_URL`` with ``MCP_AUTH_CLIENT_ID`` and ``MCP_AUTH_CLIENT_SECRET``:
  tokens checked by RFC 7662 introspection with those client credentials.

Another ``MCP_AUTH_*`` variable is a typo: it is warned about, naming the closest one.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Mapping

from .verifiers import TokenVerifier

__all__ = ["AUTH_ENV", "AuthConfigError", "auth_configured", "unknown_auth_environment", "verifier_from_env"]

logger = logging.getLogger("typedmcp.auth")

ISSUER_ENV = "MCP_AUTH_ISSUER"
AUDIENCE_ENV = "MCP_AUTH_AUDIENCE"
JWKS_URL_ENV = "MCP_AUTH_JWKS_URL"
INTROSPECTION_URL_ENV = "MCP_AUTH_INTROSPECTION_URL"
CLIENT_ID_ENV = "MCP_AUTH_CLIENT_ID"
CLIENT_SECRET_ENV = "MCP_AUTH_CLIENT_SECRET"
ENV_PREFIX = "MCP_AUTH_"
#: Every ``MCP_AUTH_*`` variable the runtime reads.
AUTH_ENV = (ISSUER_ENV, AUDIENCE_ENV, JWKS_URL_ENV, INTROSPECTION_URL_ENV, CLIENT_ID_ENV, CLIENT_SECRET_ENV)


class AuthConfigError(ValueError):
    """The ``MCP_AUTH_*`` variables (or the arguments) do not make a verifier; the message
    says which is missing or wrong and what to set."""


def unknown_auth_environment(environ: Mapping[str, str] | None = None) -> list[str]:
    """A warning for each ``MCP_AUTH_*`` variable the runtime does not read (a typo such as
    ``MCP_AUTH_JWKS_URI``), naming the closest one it does read."""
    found = os.environ if environ is None else environ
    warnings = []
    suffixes = {known.removeprefix(ENV_PREFIX): known for known in AUTH_ENV}
    for name in sorted(found):
        if not name.startswith(ENV_PREFIX) or name in AUTH_ENV:
            continue
        close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), suffixes, n=1, cutoff=0.6)
        hint = f"did you mean {suffixes[close[0]]}?" if close else f"it reads {', '.join(AUTH_ENV)}"
        warnings.append(f"{name} is set, but typedmcp reads no such variable; {hint}")
    return warnings


def auth_configured(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the environment asks for token verification (``MCP_AUTH_ISSUER`` is set)."""
    found = os.environ if environ is None else environ
    return bool(found.get(ISSUER_ENV))


def verifier_from_env(environ: Mapping[str, str] | None = None) -> TokenVerifier:
    """The verifier the ``MCP_AUTH_*`` variables describe (see the module's text); raises
    :class:`AuthConfigError` naming what is missing. Misspelt variables are warned about."""
    found = os.environ if environ is None else environ
    for warning in unknown_auth_environment(found):
        logger.warning("%s", warning)
    issuer = found.get(ISSUER_ENV, "").strip()
    audiences = [part.strip() for part in found.get(AUDIENCE_ENV, "").split(",") if part.strip()]
    jwks_url = found.get(JWKS_URL_ENV, "").strip()
    introspection_url = found.get(INTROSPECTION_URL_ENV, "").strip()
    if not issuer:
        raise AuthConfigError(f"{ISSUER_ENV} is not set: set it to the authorization server's issuer URL")
    if jwks_url and introspection_url:
        raise AuthConfigError(
            f"both {JWKS_URL_ENV} and {INTROSPECTION_URL_ENV} are set: set the one that checks "
            "this server's tokens (JWT access tokens: the JWKS; opaque ones: introspection)"
        )
    if jwks_url:
        if not audiences:
            raise AuthConfigError(
                f"{AUDIENCE_ENV} is not set: set it to this server's URL (the aud its tokens carry)"
            )
        from .jwt import JwtVerifier

        return JwtVerifier(issuer=issuer, audience=audiences, jwks_url=jwks_url)
    if introspection_url:
        missing = [name for name in (CLIENT_ID_ENV, CLIENT_SECRET_ENV) if not found.get(name)]
        if missing:
            raise AuthConfigError(
                f"{' and '.join(missing)} not set: introspection at {introspection_url} needs "
                "this server's client credentials at the authorization server"
            )
        from .introspection import IntrospectionVerifier

        return IntrospectionVerifier(
            introspection_url=introspection_url,
            client_id=found[CLIENT_ID_ENV],
            client_secret=found[CLIENT_SECRET_ENV],
            issuer=issuer,
            audience=audiences or None,
        )
    raise AuthConfigError(
        f"{ISSUER_ENV} is set but neither {JWKS_URL_ENV} nor {INTROSPECTION_URL_ENV}: set "
        f"{JWKS_URL_ENV} (JWT access tokens) or {INTROSPECTION_URL_ENV} with {CLIENT_ID_ENV} "
        f"and {CLIENT_SECRET_ENV} (opaque tokens)"
    )
