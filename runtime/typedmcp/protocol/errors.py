"""Errors of an HTTP transport that the typed seam tells apart while it negotiates.

A status without a JSON-RPC answer (:class:`HttpError`) means the probe found no
stateless-era server; :class:`AuthRequired` (401/403) is never a reason to fall back.
The HTTP client transport raises them (``typedmcp.transports.http_client``)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from pydantic_core import from_json

#: The path an mcp-codegen server (``http_app``) serves MCP on unless told otherwise.
DEFAULT_MCP_PATH = "/mcp"


class HttpError(Exception):
    """A non-success HTTP status from the server. With ``url`` (where the request went), the
    message adds what :func:`wrong_path_hint` says about it."""

    def __init__(self, status: int, body: bytes, url: str | None = None) -> None:
        message = f"HTTP {status}: {body[:200].decode('utf-8', 'replace')}"
        hint = wrong_path_hint(url, status, body) if url is not None else None
        super().__init__(f"{message} ({hint})" if hint else message)
        self.status = status
        self.body = body


def wrong_path_hint(url: str, status: int, body: bytes) -> str | None:
    """What to tell a user whose request to ``url`` was answered ``status`` with ``body``,
    when that looks like the wrong path: a 404 whose body is no JSON-RPC message (a web
    server's "Not Found", where an MCP server would answer in JSON-RPC). Says which path to
    try: an mcp-codegen server serves :data:`DEFAULT_MCP_PATH` unless ``http_app(path=...)``
    says otherwise. None when the reply does not look like a wrong path."""
    if status != 404 or _is_json_rpc(body):
        return None
    parts = urlsplit(url)
    path = parts.path or "/"
    served = _served_path(body)
    if served is not None:  # an mcp-codegen server's own 404 says where it serves MCP
        suggested = urlunsplit((parts.scheme, parts.netloc, served, "", ""))
        return f"nothing answers at {path}: this server serves MCP at {served}, so try {suggested}"
    if path.rstrip("/").endswith(DEFAULT_MCP_PATH):
        return (
            f"nothing answers at {path}: check which path the server serves MCP on "
            "(http_app(path=...) sets it)"
        )
    suggested = urlunsplit((parts.scheme, parts.netloc, DEFAULT_MCP_PATH, "", ""))
    return (
        f"nothing answers at {path}: MCP servers usually serve one path, "
        f"{DEFAULT_MCP_PATH} by default (http_app's), so try {suggested}"
    )


#: How ``http_app``'s 404 for a wrong path begins; the path it serves MCP at follows.
SERVED_AT = b"Not Found: this server serves MCP at "


def _served_path(body: bytes) -> str | None:
    """The path a 404 of ``http_app`` names (the mount prefix included), if it is one."""
    if not body.startswith(SERVED_AT):
        return None
    path = body[len(SERVED_AT):].decode("utf-8", "replace").strip()
    return path if path.startswith("/") and " " not in path else None


def _is_json_rpc(body: bytes) -> bool:
    try:
        message = from_json(body, allow_inf_nan=False)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("jsonrpc") == "2.0"


class AuthRequired(HttpError):
    """401/403: the server wants (other) credentials; ``challenge`` is its WWW-Authenticate."""

    def __init__(self, status: int, body: bytes, challenge: str) -> None:
        super().__init__(status, body)
        self.challenge = challenge
