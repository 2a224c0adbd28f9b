"""The HTTP side of the access policy (:mod:`typedmcp.protocol.access`): a request the
caller's token may not make is answered ``403`` before any handler runs, so before any
response (JSON or SSE) has started.

A missing scope carries the step-up challenge of the MCP authorization spec (RFC 6750
``insufficient_scope``)::

    WWW-Authenticate: Bearer error="insufficient_scope", scope="notes:write",
        resource_metadata="https://host/.well-known/oauth-protected-resource/mcp"

``scope`` names every scope the request needs; a client re-authorizes asking for them and
retries. A refusing ``allow=`` predicate is a ``403`` without a challenge: no wider token
would help. The body is a JSON-RPC error naming what was refused and which scopes it needs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol

from ..engine.jsonrpc import INVALID_REQUEST, RpcError, encode_error, is_request_id
from ..protocol.access import AccessPolicy, Refusal
from .asgi import Scope, Send, respond
from .http_mount import mount_prefix, origin_of

logger = logging.getLogger("typedmcp")


class ChallengingApp(Protocol):
    """What the gate needs of the app: where its protected-resource metadata lives."""

    def public_metadata_path(self, prefix: str = "") -> str: ...


def first_refusal(policy: AccessPolicy | None, message: Any, principal: Any) -> tuple[Any, Refusal] | None:
    """The first request of ``message`` (one request or a batch) that ``principal`` may not
    make, with its id; None when every one may be made."""
    if not policy or principal is None:
        return None
    for item in message if isinstance(message, list) else (message,):
        if isinstance(item, Mapping) and "id" in item:
            refusal = policy.refusal(item.get("method"), item.get("params"), principal)
            if refusal is not None:
                return item.get("id"), refusal
    return None


async def refused_access(
    app: ChallengingApp, scope: Scope, headers: Mapping[str, str], policy: AccessPolicy | None,
    message: Any, principal: Any, send: Send,
) -> bool:
    """Answer ``403`` if ``message`` asks for something ``principal``'s token may not use;
    whether it did."""
    found = first_refusal(policy, message, principal)
    if found is None:
        return False
    request_id, refusal = found
    metadata_url = origin_of(scope, dict(headers)) + app.public_metadata_path(mount_prefix(scope))
    challenge = refusal.challenge(metadata_url)
    extra = [(b"www-authenticate", challenge.encode("latin-1"))] if challenge else []
    logger.info("refused %s to %r: %s", refusal.what, principal, refusal.message)
    error = RpcError(INVALID_REQUEST, refusal.message, refusal.data)
    body = encode_error(request_id if is_request_id(request_id) else None, error)
    await respond(send, 403, body, "application/json", extra)
    return True


async def refused_post(
    app: Any, scope: Scope, headers: Mapping[str, str], message: Any, principal: Any, send: Send
) -> bool:
    """:func:`refused_access` for a POST to :class:`~.http_server.HttpApp` ``app``."""
    policy = policy_of_request(app, headers)
    return await refused_access(app, scope, headers, policy, message, principal, send)


def policy_of_request(app: Any, headers: Mapping[str, str]) -> AccessPolicy | None:
    """The access policy serving a POST to :class:`~.http_server.HttpApp` ``app``: its
    stateless endpoint's, else that of the session the request names, else of any session
    of this worker (the handlers are the same object for both eras and every session). A
    worker holding no session yet (a shared session served here first) finds none: the
    session's own guard then refuses with the JSON-RPC error alone."""
    if app.modern is not None:
        policy: AccessPolicy | None = app.modern.server.access_policy
        return policy
    sessions = app.sessions
    session = sessions.get(headers.get("mcp-session-id", "")) or next(iter(sessions.values()), None)
    return session.server.access_policy if session is not None else None
