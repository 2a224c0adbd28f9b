"""The Host and Origin check of the Streamable HTTP server (DNS rebinding protection): which
hosts and origins a request may name, and :class:`HostCheck`, which remembers its verdict per
(Host, Origin) pair, since a client sends the same ones on every request."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from ..engine.jsonrpc import quoted

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")
#: How many (Host, Origin) pairs a :class:`HostCheck` remembers the verdict of.
HOST_VERDICTS_KEPT = 256


def host_problem(
    headers: Mapping[str, str], allowed_hosts: frozenset[str] | None, allowed_origins: frozenset[str] | None
) -> str | None:
    """Why the request's Host or Origin is refused (403), or None: without allow-lists, only
    loopback names pass."""
    host = headers.get("host", "")
    hostname = urlsplit(f"//{host}").hostname or ""
    if allowed_hosts is not None:
        if host not in allowed_hosts and hostname not in allowed_hosts:
            return f"Forbidden: host {quoted(host)} is not allowed"
    elif hostname not in LOOPBACK_HOSTS and f"[{hostname}]" not in LOOPBACK_HOSTS:
        return f"Forbidden: host {quoted(host)} is not allowed (loopback only by default)"
    origin = headers.get("origin")
    if origin is None:
        return None
    if allowed_origins is not None:
        return None if origin in allowed_origins else f"Forbidden: origin {quoted(origin)}"
    origin_host = urlsplit(origin).hostname or ""
    if origin_host not in LOOPBACK_HOSTS and f"[{origin_host}]" not in LOOPBACK_HOSTS:
        return f"Forbidden: origin {quoted(origin)} is not allowed"
    return None


class HostCheck:
    """:func:`host_problem`, remembered per (Host, Origin) pair; forgotten when the
    allow-lists it is given are other objects than last time, and all at once past
    :data:`HOST_VERDICTS_KEPT` pairs."""

    __slots__ = ("allowed", "verdicts")

    def __init__(self) -> None:
        self.allowed: tuple[frozenset[str] | None, frozenset[str] | None] = (None, None)
        self.verdicts: dict[tuple[str, str | None], str | None] = {}

    def problem(
        self, headers: Mapping[str, str], allowed_hosts: frozenset[str] | None,
        allowed_origins: frozenset[str] | None,
    ) -> str | None:
        hosts, origins = self.allowed
        if hosts is not allowed_hosts or origins is not allowed_origins:
            self.allowed, self.verdicts = (allowed_hosts, allowed_origins), {}
        key = (headers.get("host", ""), headers.get("origin"))
        verdicts = self.verdicts
        if key in verdicts:
            return verdicts[key]
        if len(verdicts) >= HOST_VERDICTS_KEPT:
            verdicts.clear()
        found = verdicts[key] = host_problem(headers, allowed_hosts, allowed_origins)
        return found
