"""The client credentials grant in one call: :func:`ClientCredentials`."""

from __future__ import annotations

from typing import Any

from .dpop import DPoPKey
from .fetch import Fetch
from .grants import PrivateKeyJwt
from .oauth import AuthMethod, OAuthProvider
from .tokens import TokenStorage

__all__ = ["ClientCredentials", "PrivateKeyJwt"]


def ClientCredentials(  # a factory named like the provider it makes
    server_url: str,
    *,
    client_id: str,
    client_secret: str | None = None,
    private_key: str | bytes | Any = None,
    signing_algorithm: str = "ES256",
    scope: str | None = None,
    token_endpoint_auth_method: AuthMethod | None = None,
    dpop: bool | DPoPKey = False,
    storage: TokenStorage | None = None,
    fetch: Fetch | None = None,
) -> OAuthProvider:
    """An :class:`OAuthProvider` for the client credentials grant: with ``client_secret``
    (``client_secret_basic``, or what the server supports) or with ``private_key`` (a
    ``private_key_jwt`` assertion signed by ``signing_algorithm``). The other arguments are the
    provider's (:class:`OAuthProvider`)."""
    if (client_secret is None) == (private_key is None):
        raise ValueError("ClientCredentials needs exactly one of client_secret= or private_key=")
    assertion = PrivateKeyJwt(private_key, algorithm=signing_algorithm) if private_key is not None else None
    return OAuthProvider(
        server_url,
        grant="client_credentials",
        client_id=client_id,
        client_secret=client_secret,
        client_assertion=assertion,
        scope=scope,
        token_endpoint_auth_method=token_endpoint_auth_method,
        dpop=dpop,
        storage=storage,
        fetch=fetch,
    )
