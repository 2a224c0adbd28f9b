"""What the HTTP clients (Streamable HTTP, HTTP+SSE, OAuth) share below MCP: how they
reach servers (:class:`HttpOptions`: trust, client certificate, proxy, time limits, or a
session of the user's own), the errors of getting there and back, and the one SSE parser.

No HTTP is spoken here: that is aiohttp's, configured in ``http_aiohttp``, which
``http_client.open_client`` imports at the first connection (a program that never speaks
HTTP never imports aiohttp).
"""

from __future__ import annotations

import os
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from ..engine.peer_json import decode

if TYPE_CHECKING:
    import aiohttp

#: The largest SSE event a client reads (its data lines together).
MAX_EVENT_BYTES = 2**26


class ServerUnreachable(ConnectionError):
    """No connection to the server (refused, unresolvable, no answer within the connect
    time limit, the proxy refusing): nothing was sent."""


class TlsError(ServerUnreachable):
    """The TLS handshake failed (an untrusted certificate, a wrong host name, a client
    certificate the server requires or refuses): nothing was sent. The message names the
    host and what to pass (``verify=``, ``cert=``)."""


class BrokenReply(ConnectionError):
    """The connection broke, or stayed silent past a time limit (``timed_out``), after a
    request was sent (the server may have acted on it). The transports report it as
    ``ResponseLost``."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


class InsecureTlsWarning(UserWarning):
    """A client was made with ``verify=False``: TLS certificates are not checked."""


class RedirectNotFollowed(ConnectionError):
    """A redirect the client does not follow (see ``http_aiohttp``): to another origin
    (credentials stay on theirs), a 301/302/303 of a POST (it would become a GET), too
    many. The message names the location; ``status`` is the redirect's."""

    def __init__(self, status: int, location: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.location = location


# -- how the client reaches servers --------------------------------------------------------


@dataclass(frozen=True)
class HttpTimeouts:
    """Time limits of the HTTP client, in seconds (None: none). A server that stays silent
    past one gets a clear error (:class:`ServerUnreachable` for ``connect``, else
    ``ResponseLost``), never a hang.

    ``connect``: to open a connection (TCP, the proxy's tunnel, the TLS handshake).
    ``reply``: from sending a request to the first bytes of its response, and between the
    bytes of a JSON reply. None by default: a call's own limit (``request_timeout``) applies.
    ``idle``: silence on an SSE stream once it has started (a reply stream, the GET stream,
    a listen stream; servers send keep-alive comments on long quiet streams). The GET
    stream reconnects after it; a call's reply stream fails (or, handshake era, resumes).
    """

    connect: float | None = 30.0
    reply: float | None = None
    idle: float | None = 300.0


Verify = bool | str | os.PathLike[str] | ssl.SSLContext
ClientCert = str | tuple[str, str] | tuple[str, str, str]


@dataclass(frozen=True)
class HttpOptions:
    """How an HTTP client reaches servers (``connect_http``'s keyword arguments).

    ``verify``: True (the system trust store), a CA bundle file or directory, an
    ``ssl.SSLContext``, or False (no checks: local testing only; warns). ``cert``: a client
    certificate for mutual TLS: a PEM file holding certificate and key, or ``(cert, key)``
    or ``(cert, key, password)``. ``proxy``: a proxy URL for every request; else, with
    ``trust_env``, ``HTTP_PROXY``/``HTTPS_PROXY``/``NO_PROXY``. ``timeouts``: see
    :class:`HttpTimeouts`. ``http_session``: an ``aiohttp.ClientSession`` of your own, used
    as it is configured (trust, proxy, cookies, headers, hooks) and never closed by the
    client; ``verify``/``cert``/``proxy``/``trust_env`` are then yours to set on it.
    """

    verify: Verify = True
    cert: ClientCert | None = None
    proxy: str | None = None
    trust_env: bool = True
    timeouts: HttpTimeouts = field(default_factory=HttpTimeouts)
    http_session: aiohttp.ClientSession | None = None

    def __post_init__(self) -> None:
        if self.http_session is not None and (
            self.verify is not True or self.cert is not None or self.proxy is not None
        ):
            raise ValueError(
                "verify=, cert= and proxy= configure the client's own HTTP session; with "
                "http_session= set them on that session (its connector's ssl=, its proxy=)"
            )


@dataclass(frozen=True)
class HttpReply:
    """A complete HTTP response (header names lower-cased)."""

    status: int
    headers: Mapping[str, str]
    body: bytes

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return decode(self.body)
        except ValueError:
            return None


class SseEvent(NamedTuple):
    """One server-sent event: its type (``message`` when unnamed), id, data and retry."""

    kind: str
    id: str | None
    data: bytes
    retry: int | None


async def parse_sse(chunks: AsyncIterator[bytes]) -> AsyncIterator[SseEvent]:
    """The SSE events of a body read as ``chunks`` (the runtime's one SSE parser).

    Comments and events without data (or retry) are skipped; the last ``id`` seen carries
    over to later events, as the spec says. An event longer than :data:`MAX_EVENT_BYTES`
    raises ValueError (a stream is never read into memory without a bound).
    """
    buffer = b""
    event_id: str | None = None
    kind = ""
    data_lines: list[bytes] = []
    retry: int | None = None
    pending = 0  # bytes of the event being read
    async for chunk in chunks:
        buffer = buffer + chunk if buffer else chunk
        start = 0
        while True:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            line = buffer[start:end]
            start = end + 1
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if data_lines or retry is not None:
                    yield SseEvent(kind or "message", event_id, b"\n".join(data_lines), retry)
                kind, data_lines, retry, pending = "", [], None, 0
                continue
            name, _, value = line.partition(b":")
            if value.startswith(b" "):
                value = value[1:]
            if name == b"data":
                data_lines.append(value)
                pending += len(value)
            elif name == b"event":
                kind = value.decode("utf-8", "replace")
            elif name == b"id":
                event_id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                retry = int(value)
        buffer = buffer[start:]
        if len(buffer) + pending > MAX_EVENT_BYTES:
            raise ValueError(f"an SSE event longer than {MAX_EVENT_BYTES} bytes")

