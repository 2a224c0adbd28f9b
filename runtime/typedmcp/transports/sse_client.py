"""The client side of the deprecated HTTP+SSE transport (2024-11-05).

``GET url`` with ``Accept: text/event-stream`` opens the stream; its first event,
``endpoint``, names the URI for POSTs (resolved against ``url``; it must stay on the same
origin). Each outgoing message is then one POST there (any 2xx is fine: the reply comes on
the stream), and each ``message`` event's data is one incoming message.

``connect_sse`` (``typedmcp.connecting``) runs the handshake-era client over it, and
``connect_http`` falls back to it (rule HC-10) when its first negotiation POST gets HTTP 400,
404 or 405 without a recognised 2026-07-28 error body, and the protocol choice includes a
handshake-era revision: see ``falls_back_to_sse``. ``client.session.transport_kind`` says which transport was used
(``"sse"`` here, ``"streamable-http"`` otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from ..protocol.client import ClientSession
from ..protocol.errors import AuthRequired, HttpError
from .http_client import HttpAuth, ResponseLost, authorized_request, open_client, with_bearer
from .http_headers import CALL_HEADERS
from .http_wire import BrokenReply, HttpOptions, ReplyTooLarge, SseEvent

if TYPE_CHECKING:
    import aiohttp

    from .http_aiohttp import HttpClient

logger = logging.getLogger("typedmcp")

SSE = "sse"


class SseHandshakeError(ConnectionError):
    """The HTTP+SSE stream opened, but gave no usable ``endpoint`` event."""


class SseClientTransport:
    """The client side of HTTP+SSE as an engine transport: call :meth:`open` first."""

    #: The ``network.transport`` of the OpenTelemetry conventions (``protocol/telemetry``).
    network_transport = "tcp"

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        bearer_token: str | None = None,
        auth: HttpAuth | None = None,
        options: HttpOptions | None = None,
    ) -> None:
        self.url = url
        self.headers = with_bearer(headers, bearer_token)
        self.auth = auth
        self.stream_http = open_client(url, dict(self.headers), options)
        self.post_http: HttpClient | None = None  # same session, the announced URL
        self.endpoint: str | None = None  # the POST URI the server announced
        self._stream: aiohttp.ClientResponse | None = None
        self._events: AsyncGenerator[SseEvent, None] | None = None
        #: why requests still waiting when the stream ended are failed (the engine says it)
        self.closed_reason = f"the HTTP+SSE stream of {url} ended"

    async def open(self, timeout: float = 10.0) -> None:
        """GET the stream and wait (up to ``timeout`` seconds) for its ``endpoint`` event."""
        http = self.stream_http
        response = await asyncio.wait_for(
            authorized_request(http, self.auth, "GET", b"", {"Accept": "text/event-stream"}), timeout
        )
        self._stream = response
        if response.status != 200:
            body = await asyncio.wait_for(http.read(response), timeout)
            if response.status in (401, 403):
                raise AuthRequired(response.status, body, response.headers.get("WWW-Authenticate", ""))
            raise HttpError(response.status, body, self.url)
        content_type = response.headers.get("Content-Type", "")
        if not content_type.startswith("text/event-stream"):
            raise SseHandshakeError(
                f"GET {self.url} answered {content_type!r}, not an SSE stream: not an "
                "HTTP+SSE endpoint"
            )
        self._events = http.events(response)
        try:
            event = await asyncio.wait_for(self._next_with_data(), timeout)
        except StopAsyncIteration:
            raise SseHandshakeError(f"the SSE stream of {self.url} ended before its endpoint event") from None
        except asyncio.TimeoutError:
            raise SseHandshakeError(f"no endpoint event from {self.url} within {timeout} s") from None
        if event.kind != "endpoint":
            raise SseHandshakeError(
                f"the first event of {self.url} is {event.kind!r}, not the endpoint event (HTTP+SSE)"
            )
        self.endpoint = self._resolve(event.data.decode("utf-8", "replace").strip())
        self.post_http = http.view(self.endpoint)

    async def _next_with_data(self) -> SseEvent:
        assert self._events is not None
        async for event in self._events:
            if event.data:
                return event
        raise StopAsyncIteration

    def _resolve(self, announced: str) -> str:
        """The announced POST URI, relative to the stream's URL, on the same origin only."""
        endpoint = urljoin(self.url, announced)
        ours, theirs = urlsplit(self.url), urlsplit(endpoint)
        if (ours.scheme, ours.hostname, _port(ours)) != (theirs.scheme, theirs.hostname, _port(theirs)):
            raise SseHandshakeError(
                f"the endpoint event of {self.url} names {endpoint!r}, on another origin: refused"
            )
        return endpoint

    async def receive(self) -> bytes | None:
        """The next ``message`` event's data; None once the stream has ended."""
        assert self._events is not None, "open() the transport first"
        try:
            async for event in self._events:
                if not event.data:
                    continue
                if event.kind == "message":
                    return event.data
                logger.debug("ignored an SSE %r event", event.kind)
        except BrokenReply as error:
            self.closed_reason = f"the HTTP+SSE stream of {self.url} broke off ({error})"
        except ReplyTooLarge as error:
            self.closed_reason = f"the HTTP+SSE stream of {self.url} was closed: {error}"
        return None

    async def send(self, data: bytes) -> None:
        """POST one message to the announced endpoint; anything but a 2xx raises HttpError.

        Sent once: a POST whose connection breaks raises :class:`ResponseLost`."""
        http = self.post_http
        assert http is not None, "open() the transport first"
        response: aiohttp.ClientResponse | None = None
        try:
            headers = {"Content-Type": "application/json", **(CALL_HEADERS.get() or {})}
            response = await authorized_request(http, self.auth, "POST", data, headers)
            body = await http.read(response)
        except BrokenReply as error:  # (ServerUnreachable: nothing was sent; it goes up)
            raise ResponseLost(
                f"a message POSTed to {self.endpoint} may not have arrived: {error}; it is "
                "not sent again"
            ) from None
        except BaseException:
            if response is not None:
                response.close()  # cancelled mid-reply: never reused
            raise
        if not 200 <= response.status < 300:
            if response.status in (401, 403):
                raise AuthRequired(response.status, body, response.headers.get("WWW-Authenticate", ""))
            raise HttpError(response.status, body)

    async def close(self) -> None:
        """Close the stream (the server then ends the session) and every connection."""
        if self._events is not None:
            with contextlib.suppress(Exception):
                await self._events.aclose()
        if self._stream is not None:
            self._stream.close()
        await self.stream_http.close()


def _port(parts: Any) -> int:
    return parts.port or (443 if parts.scheme == "https" else 80)


class SseClientSession(ClientSession):
    """A handshake-era client session over HTTP+SSE."""

    transport_kind = SSE
