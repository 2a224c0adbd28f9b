"""Errors of an HTTP transport that the typed seam tells apart while it negotiates.

A status without a JSON-RPC answer (:class:`HttpError`) means the probe found no
stateless-era server; :class:`AuthRequired` (401/403) is never a reason to fall back.
The HTTP client transport raises them (``mcp_runtime.transports.http_client``)."""

from __future__ import annotations


class HttpError(Exception):
    """A non-success HTTP status from the server."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}")
        self.status = status
        self.body = body


class AuthRequired(HttpError):
    """401/403: the server wants (other) credentials; ``challenge`` is its WWW-Authenticate."""

    def __init__(self, status: int, body: bytes, challenge: str) -> None:
        super().__init__(status, body)
        self.challenge = challenge
