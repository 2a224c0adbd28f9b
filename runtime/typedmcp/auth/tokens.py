"""Tokens and client registrations of the OAuth client, and where they are kept."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Tokens:
    """A token response. ``expires_at`` is a ``time.time()`` value (None: unknown)."""

    access_token: str
    token_type: str = "Bearer"
    refresh_token: str | None = None
    scope: str | None = None
    expires_at: float | None = None

    def expired(self, now: float, leeway: float = 30.0) -> bool:
        return self.expires_at is not None and now + leeway >= self.expires_at


@dataclass(frozen=True)
class ClientRegistration:
    """Client credentials at one authorization server. ``issuer`` binds dynamically
    registered credentials to the server that issued them (None: not bound)."""

    client_id: str
    client_secret: str | None = None
    token_endpoint_auth_method: str | None = None
    issuer: str | None = None


class TokenStorage(Protocol):
    """Where a provider keeps its tokens and client registration between uses."""

    async def load_tokens(self) -> Tokens | None: ...

    async def save_tokens(self, tokens: Tokens | None) -> None: ...

    async def load_client(self) -> ClientRegistration | None: ...

    async def save_client(self, client: ClientRegistration | None) -> None: ...


class MemoryTokenStorage:
    """Keeps tokens and registration in memory (the default)."""

    def __init__(self) -> None:
        self.tokens: Tokens | None = None
        self.client: ClientRegistration | None = None

    async def load_tokens(self) -> Tokens | None:
        return self.tokens

    async def save_tokens(self, tokens: Tokens | None) -> None:
        self.tokens = tokens

    async def load_client(self) -> ClientRegistration | None:
        return self.client

    async def save_client(self, client: ClientRegistration | None) -> None:
        self.client = client


@dataclass(frozen=True)
class ClientMetadata:
    """What the client says about itself in dynamic registration (RFC 7591). The first
    redirect URI is the one used in authorization requests: the user agent must be able to
    capture the redirect to it (a loopback URI, ``application_type`` ``native``)."""

    client_name: str = "typedmcp client"
    redirect_uris: tuple[str, ...] = ("http://localhost:8765/callback",)
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    response_types: tuple[str, ...] = ("code",)
    application_type: str = "native"
    extra: Mapping[str, Any] = field(default_factory=dict)

    def document(self, auth_method: str, scope: str | None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "client_name": self.client_name,
            "redirect_uris": list(self.redirect_uris),
            "grant_types": list(self.grant_types),
            "response_types": list(self.response_types),
            "token_endpoint_auth_method": auth_method,
            "application_type": self.application_type,
            **self.extra,
        }
        if scope:
            body["scope"] = scope
        return body
