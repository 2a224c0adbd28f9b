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

#: The default of :attr:`HttpOptions.max_reply_bytes`: the largest JSON reply body, or SSE
#: event (its data lines together), an MCP client reads (64 MiB).
MAX_REPLY_BYTES = 64 * 1024 * 1024
#: The default of :attr:`HttpOptions.max_fetch_bytes`: the largest body ``HttpClient.fetch``
#: reads (OAuth metadata, registration, tokens, a JWKS, an introspection answer: 1 MiB).
MAX_FETCH_BYTES = 1024 * 1024
#: Where the two caps are raised, for the error that names them.
_RAISE_HINTS = {
    "max_reply_bytes": "connect_http(..., max_reply_bytes=N) or connect_sse(...); in an mcp-host "
    'config the server\'s "maxReplyBytes"; mcp-codegen tools --max-reply-bytes N',
    "max_fetch_bytes": "connect_http(..., max_fetch_bytes=N) (an OAuth provider on that "
    "connection), or http_fetch(..., max_fetch_bytes=N) (functools.partial of it as a "
    "verifier's fetch=)",
}


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


class ReplyTooLarge(ConnectionError):
    """A reply (a JSON body, one SSE event, a fetched document) is larger than the client's
    cap (``option``: ``max_reply_bytes`` or ``max_fetch_bytes``; ``limit``, in bytes). It
    was not read into memory: the client stopped at the cap (or at a ``Content-Length``
    over it) and closed the connection. The request itself may have run on the server."""

    def __init__(self, what: str, option: str, limit: int) -> None:
        super().__init__(
            f"{what} is larger than {limit} bytes ({option}, {_size(limit)}): not read, the "
            f"connection closed. If the server's replies are that large, raise the cap: "
            f"{_RAISE_HINTS.get(option, option)}"
        )
        self.option = option
        self.limit = limit


def _size(count: int) -> str:
    """``count`` bytes in words (``64 MiB``)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:g} {unit}"
    return f"{count} bytes"


def _check_cap(name: str, value: object) -> None:
    """A reply cap must be a positive whole number of bytes (ValueError naming it)."""
    if type(value) is not int or value < 1:
        raise ValueError(f"{name}={value!r}: give the largest reply to read, in bytes, as a positive int "
                         f"(e.g. {name}={64 * 1024 * 1024} for 64 MiB)")


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

    ``max_reply_bytes``: the largest JSON reply body, or SSE event, the MCP transports read
    (default :data:`MAX_REPLY_BYTES`, 64 MiB); ``max_fetch_bytes``: the largest body of a
    ``fetch`` (OAuth metadata, registration, tokens; default :data:`MAX_FETCH_BYTES`, 1 MiB).
    A larger reply raises :class:`ReplyTooLarge` without being read (a ``Content-Length``
    over the cap is refused before the body; without one, reading stops at the cap).
    """

    verify: Verify = True
    cert: ClientCert | None = None
    proxy: str | None = None
    trust_env: bool = True
    timeouts: HttpTimeouts = field(default_factory=HttpTimeouts)
    http_session: aiohttp.ClientSession | None = None
    max_reply_bytes: int = MAX_REPLY_BYTES
    max_fetch_bytes: int = MAX_FETCH_BYTES

    def __post_init__(self) -> None:
        _check_cap("max_reply_bytes", self.max_reply_bytes)
        _check_cap("max_fetch_bytes", self.max_fetch_bytes)
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


async def parse_sse(chunks: AsyncIterator[bytes], max_event_bytes: int = MAX_REPLY_BYTES) -> AsyncIterator[SseEvent]:
    """The SSE events of a body read as ``chunks`` (the runtime's one SSE parser).

    Comments and events without data (or retry) are skipped; the last ``id`` seen carries
    over to later events, as the spec says. An event longer than ``max_event_bytes`` (its
    data lines, a newline each, and the line being read: a line without an end too) raises
    :class:`ReplyTooLarge` as soon as the bytes read pass it: a stream is never read into
    memory without a bound. Linear in the bytes read: a line that spans chunks is joined
    once, when it ends (its chunks are searched for a line end twice at most).
    """
    parts: list[bytes] = []  # the start of a line that has not ended yet (chunks, in order)
    partial = 0  # their bytes
    event_id: str | None = None
    kind = ""
    data_lines: list[bytes] = []
    retry: int | None = None
    pending = 0  # bytes of the event being read (its data lines, a newline each)
    async for chunk in chunks:
        if parts:
            parts.append(chunk)
            partial += len(chunk)
            if b"\n" not in chunk:  # the line goes on: kept, not copied
                if partial + pending > max_event_bytes:
                    raise ReplyTooLarge("an SSE event", "max_reply_bytes", max_event_bytes)
                continue
            buffer = b"".join(parts)
            parts, partial = [], 0
        else:
            buffer = chunk
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
                pending += len(value) + 1
            elif name == b"event":
                kind = value.decode("utf-8", "replace")
            elif name == b"id":
                event_id = value.decode("utf-8", "replace")
            elif name == b"retry" and value.isdigit():
                retry = int(value)
        if start < len(buffer):
            rest = buffer[start:]
            parts, partial = [rest], len(rest)
        if partial + pending > max_event_bytes:
            raise ReplyTooLarge("an SSE event", "max_reply_bytes", max_event_bytes)
