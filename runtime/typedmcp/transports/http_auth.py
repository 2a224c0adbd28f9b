"""The bearer-token gate of the HTTP server: the token taken from ``Authorization``, checked
by the app's ``auth`` (:class:`~typedmcp.protocol.origin.BearerCheck`), and the answer when
it does not pass.

- No token, or one the check returns None for: 401 with ``WWW-Authenticate: Bearer
  resource_metadata="..."`` (and ``error="invalid_token"`` when a token was sent).
- The check could not decide (:class:`VerifierUnavailable`: the authorization server's JWKS
  or introspection endpoint unreachable, or answering nonsense): 503 with ``Retry-After``,
  so a client retries later instead of throwing its token away, never a 500 traceback.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..engine.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, RpcError
from ..protocol.origin import BearerCheck
from .asgi import Scope, Send, respond_error

__all__ = ["VerifierUnavailable", "authenticate"]


class VerifierUnavailable(Exception):
    """A token verifier could not check a token (its authorization server is unreachable or
    answers nonsense): the request is answered 503 with ``Retry-After: retry_after``."""

    def __init__(self, message: str, retry_after: int = 5) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def bearer_token(headers: dict[str, str]) -> str:
    """The token of an ``Authorization: Bearer <token>`` header; empty without one."""
    authorization = headers.get("authorization", "")
    return authorization[7:].strip() if authorization.lower().startswith("bearer ") else ""


async def authenticate(
    auth: BearerCheck, scope: Scope, headers: dict[str, str], send: Send, metadata_url: str
) -> Any:
    """The principal of the request's valid bearer token; else None, after answering 401
    (no token, or an invalid one) or 503 (the verifier could not check it)."""
    token = bearer_token(headers)
    principal = None
    if token:
        try:
            principal = auth.verify(token)
            if asyncio.iscoroutine(principal):
                principal = await principal
        except VerifierUnavailable as unavailable:  # (the reason is the server's log's business)
            await respond_error(
                send,
                503,
                RpcError(
                    INTERNAL_ERROR,
                    "Service Unavailable: the access token could not be checked (the "
                    "authorization server is unavailable); try again later",
                ),
                [(b"retry-after", str(unavailable.retry_after).encode("latin-1"))],
            )
            return None
    if principal is not None:
        scope.setdefault("state", {})["mcp_principal"] = principal
        return principal
    challenge = f'Bearer resource_metadata="{metadata_url}"'
    if token:
        challenge += ', error="invalid_token"'
    await respond_error(
        send,
        401,
        RpcError(INVALID_REQUEST, "Unauthorized: a valid bearer token is required"),
        [(b"www-authenticate", challenge.encode("latin-1"))],
    )
    return None
