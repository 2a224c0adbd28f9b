"""Pure helpers of OAuth discovery: challenges, PKCE, canonical resource URIs, the
well-known metadata URLs in the spec's order, issuer comparison and scopes."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from urllib.parse import quote, urlsplit, urlunsplit

_PARAM = re.compile(r'([A-Za-z0-9_.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)')


def parse_challenge(header: str) -> dict[str, str]:
    """The auth-params of a ``WWW-Authenticate`` Bearer challenge (names lower-cased;
    the first occurrence wins)."""
    bearer = re.search(r"(?i)\bbearer\b", header)
    text = header[bearer.end() :] if bearer else header
    params: dict[str, str] = {}
    for name, value in _PARAM.findall(text):
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params.setdefault(name.lower(), value)
    return params


def basic_credentials(client_id: str, secret: str) -> str:
    """The ``Authorization: Basic`` value of ``client_secret_basic`` (RFC 6749 §2.3.1)."""
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode()).decode("ascii")


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier (64 unreserved characters) and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707): scheme and host lower-cased, no
    fragment, no query, no trailing slash."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def resource_covers(resource: str, server_url: str) -> bool:
    """Whether protected-resource metadata for ``resource`` may speak for ``server_url``:
    same origin, and the server's path is the resource's path or below it."""
    have, want = urlsplit(canonical_resource(resource)), urlsplit(canonical_resource(server_url))
    if (have.scheme, have.netloc) != (want.scheme, want.netloc):
        return False
    base = have.path.rstrip("/")
    return want.path == base or want.path.startswith(base + "/")


def resource_metadata_urls(server_url: str, hinted: str | None) -> list[str]:
    """Where to look for protected-resource metadata, in order (RFC 9728 §3.1)."""
    origin, path = _origin(server_url), urlsplit(server_url).path.rstrip("/")
    urls = [hinted] if hinted else []
    if path:
        urls.append(f"{origin}/.well-known/oauth-protected-resource{path}")
    urls.append(f"{origin}/.well-known/oauth-protected-resource")
    return list(dict.fromkeys(urls))


def server_metadata_urls(issuer: str) -> list[str]:
    """Where to look for authorization-server metadata, in the MCP spec's order."""
    origin, path = _origin(issuer), urlsplit(issuer).path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def same_issuer(a: str, b: str) -> bool:
    """RFC 8414 §3.3 issuer comparison: simple string equality, except that a bare origin
    with and without its trailing slash name the same issuer."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    return long_ == short + "/" and short == _origin(short)


def union_scopes(*scopes: str | None) -> str | None:
    """Space-separated scope strings merged in order, duplicates dropped."""
    merged = dict.fromkeys(s for scope in scopes if scope for s in scope.split())
    return " ".join(merged) or None
