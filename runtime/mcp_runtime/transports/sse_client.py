"""The client side of the deprecated HTTP+SSE transport (2024-11-05).

``GET url`` with ``Accept: text/event-stream`` opens the stream; its first event,
``endpoint``, names the URI for POSTs (resolved against ``url``; it must stay on the same
origin). Each outgoing message is then one POST there (any 2xx is fine: the reply comes on
the stream), and each ``message`` event's data is one incoming message.

``connect_sse`` (``mcp_runtime.connecting``) runs the handshake-era client over it, and
``connect_http`` falls back to it (rule HC-10) when its first negotiation POST gets HTTP 400,
404 or 405 without a recognised 2026-07-28 error body, and the protocol choice includes a
handshake-era revision: see ``falls_back_to_sse``. ``client.session.transport_kind`` says which transport was used
(``"sse"`` here, ``"streamable-http"`` otherwise).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from urllib.parse import urljoin, urlsplit

from ..protocol.client import ClientSession
from ..protocol.errors import AuthRequired, HttpError
from .http_client import HttpAuth, ResponseLost, authorized_request, how_it_broke, with_bearer
from .http_wire import HttpClient, Response, ServerUnreachable

logger = logging.getLogger("mcp_runtime")

SSE = "sse"


class SseHandshakeError(ConnectionError):
    """The HTTP+SSE stream opened, but gave no usable ``endpoint`` event."""


async def sse_events(response: Response) -> AsyncIterator[tuple[str, bytes]]:
    """``(event type, data)`` of each SSE event of ``response`` with data."""
    async for event in response.sse_events():
        if event.data:
            yield event.kind, event.data


class SseClientTransport:
    """The client side of HTTP+SSE as an engine transport: call :meth:`open` first."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        bearer_token: str | None = None,
        auth: HttpAuth | None = None,
    ) -> None:
        self.url = url
        self.headers = with_bearer(headers, bearer_token)
        self.auth = auth
        self.stream_http = HttpClient(url, dict(self.headers))
        self.post_http: HttpClient | None = None
        self.endpoint: str | None = None  # the POST URI the server announced
        self._stream: Response | None = None
        self._events: AsyncIterator[tuple[str, bytes]] | None = None
        #: why requests still waiting when the stream ended are failed (the engine says it)
        self.closed_reason = f"the HTTP+SSE stream of {url} ended"

    async def open(self, timeout: float = 10.0) -> None:
        """GET the stream and wait (up to ``timeout`` seconds) for its ``endpoint`` event."""
        response = await asyncio.wait_for(
            authorized_request(self.stream_http, self.auth, "GET", b"", {"Accept": "text/event-stream"}), timeout
        )
        self._stream = response
        if response.status != 200:
            body = await asyncio.wait_for(response.read(), timeout)
            if response.status in (401, 403):
                raise AuthRequired(response.status, body, response.headers.get("www-authenticate", ""))
            raise HttpError(response.status, body)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            raise SseHandshakeError(
                f"GET {self.url} answered {response.headers.get('content-type')!r}, not an SSE "
                "stream: not an HTTP+SSE endpoint"
            )
        self._events = sse_events(response)
        try:
            kind, data = await asyncio.wait_for(self._events.__anext__(), timeout)
        except StopAsyncIteration:
            raise SseHandshakeError(f"the SSE stream of {self.url} ended before its endpoint event") from None
        except asyncio.TimeoutError:
            raise SseHandshakeError(f"no endpoint event from {self.url} within {timeout} s") from None
        if kind != "endpoint":
            raise SseHandshakeError(
                f"the first event of {self.url} is {kind!r}, not the endpoint event (HTTP+SSE)"
            )
        self.endpoint = self._resolve(data.decode("utf-8", "replace").strip())
        self.post_http = HttpClient(self.endpoint, dict(self.headers))

    def _resolve(self, announced: str) -> str:
        """The announced POST URI, relative to the stream's URL, on the same origin only."""
        endpoint = urljoin(self.url, announced)
        ours, theirs = urlsplit(self.url), urlsplit(endpoint)
        if (ours.scheme, ours.hostname, ours.port or 80) != (
            theirs.scheme,
            theirs.hostname,
            theirs.port or 80,
        ):
            raise SseHandshakeError(
                f"the endpoint event of {self.url} names {endpoint!r}, on another origin: refused"
            )
        return endpoint

    async def receive(self) -> bytes | None:
        """The next ``message`` event's data; None once the stream has ended."""
        assert self._events is not None, "open() the transport first"
        try:
            async for kind, data in self._events:
                if kind == "message":
                    return data
                logger.debug("ignored an SSE %r event", kind)
        except (OSError, asyncio.IncompleteReadError) as error:
            self.closed_reason = f"the HTTP+SSE stream of {self.url} broke off ({how_it_broke(error)})"
        return None

    async def send(self, data: bytes) -> None:
        """POST one message to the announced endpoint; anything but a 2xx raises HttpError.

        Sent once: a POST whose connection breaks raises :class:`ResponseLost`."""
        assert self.post_http is not None, "open() the transport first"
        response: Response | None = None
        try:
            response = await authorized_request(
                self.post_http, self.auth, "POST", data, {"Content-Type": "application/json"}
            )
            body = await response.read()
        except ServerUnreachable:
            raise  # nothing was sent
        except BaseException as error:
            if response is not None:
                response.connection.close()  # cancelled or broken mid-reply: never reused
            if isinstance(error, (OSError, asyncio.IncompleteReadError)):
                raise ResponseLost(
                    f"a message POSTed to {self.endpoint} may not have arrived: "
                    f"{how_it_broke(error)}; it is not sent again"
                ) from None
            raise
        self.post_http.release(response)
        if not 200 <= response.status < 300:
            if response.status in (401, 403):
                raise AuthRequired(response.status, body, response.headers.get("www-authenticate", ""))
            raise HttpError(response.status, body)

    async def close(self) -> None:
        """Close the stream (the server then ends the session) and every connection."""
        if self._stream is not None:
            self._stream.connection.close()
        await self.stream_http.close()
        if self.post_http is not None:
            await self.post_http.close()


class SseClientSession(ClientSession):
    """A handshake-era client session over HTTP+SSE."""

    transport_kind = SSE
