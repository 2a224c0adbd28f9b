"""Streamable HTTP client: the transport (:class:`HttpClientTransport`); the client session
over it is ``http_session.HttpClientSession``.

The HTTP itself (connections, keep-alive, TLS, proxies, cookies, chunked bodies, time
limits) is aiohttp's, configured in ``http_aiohttp``; this module keeps the MCP parts: the
headers the spec names, SSE events read from the body stream, the session id (a 404 for
it raises :class:`SessionExpired`; the session initializes again), resumption, and the
stateless era's POST-only rules. Responses are JSON or SSE;
every message they carry is handed to the JSON-RPC engine. Credentials come from an
:class:`HttpAuth` (``typedmcp.auth.oauth`` implements it).

The stateless era (2026-07-28) is POST only: no session, no GET stream, no DELETE; every
POST carries the request-metadata headers (``http_headers.request_headers``), and closing a reply
stream is how a request is cancelled.

A reply is read up to the client's ``max_reply_bytes`` (``HttpOptions``; a JSON body, or
one SSE event): a larger one raises ``ReplyTooLarge`` at the call, naming the cap, and is
never resumed (the server would send it again).

A message is POSTed once, never again: a POST whose connection breaks may have reached the
server (and a tool may have run), so the call fails with :class:`ResponseLost` and the caller
decides whether to send it again, as a new request with a new id (the transport rules: HC-5,
HC-6). A pooled connection the server has closed is noticed before it carries a POST, and a
refused connection means nothing was sent (``ServerUnreachable``). aiohttp may send a GET
or DELETE a second time when its connection broke before the response came (both are safe
to repeat). Resuming a broken SSE reply with GET + ``Last-Event-ID`` (handshake era) is not
a re-send: it reads the rest of the same reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pydantic_core import from_json, to_json

from ..engine.jsonrpc import ConnectionClosed
from ..engine.peer_json import decode
from ..protocol.errors import AuthRequired, HttpError
from .http_headers import CALL_HEADERS, REQUEST_HEADERS
from .http_wire import BrokenReply, HttpOptions, ReplyTooLarge, ServerUnreachable

if TYPE_CHECKING:
    import aiohttp

    from .http_aiohttp import HttpClient

logger = logging.getLogger("typedmcp")


class ResponseLost(ConnectionClosed, ConnectionError):
    """The connection broke after a message was sent and before its response came (in the
    handshake era: and resuming the reply failed). The request may have run on the server;
    it is never sent again by the client: send it again (a new request, with a new id) only
    where running it twice is harmless."""


#: How many times a handshake-era reply stream is resumed (GET + Last-Event-ID) before
#: the request is given up as lost.
MAX_RESUMPTIONS = 10
#: Seconds closing a handshake-era client waits for the DELETE that ends its session.
DELETE_LIMIT = 5.0


class SessionExpired(HttpError):
    """404 for a request that carried a session id: the client must initialize again."""



class NotAnMcpReply(HttpError):
    """A 2xx reply that is neither JSON-RPC in ``application/json`` nor an SSE stream: the
    URL is not an MCP endpoint (a web page, a proxy's error page, ...)."""

    def __init__(self, status: int, body: bytes, content_type: str, url: str) -> None:
        super().__init__(status, body)
        self.args = (
            f"{url} answered HTTP {status} with {content_type or 'no Content-Type'!r} and "
            f"{'a body that is not JSON' if content_type.startswith('application/json') else 'no JSON-RPC'}"
            ": it does not look like an MCP endpoint (check the URL and its path, e.g. /mcp)",
        )


Deliver = Callable[[bytes], Coroutine[Any, Any, None]]


_NOT_JSON = object()


def _request_id_of(data: bytes) -> Any:
    """The id of a request we are about to POST (None for notifications and responses)."""
    try:
        message = from_json(data, allow_inf_nan=False)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" in message:
        return message.get("id")
    return None


def _error_for(body: bytes, request_id: Any) -> bytes:
    """An id-less JSON-RPC error body re-addressed to ``request_id`` (empty if not one)."""
    try:
        message = from_json(body, allow_inf_nan=False)
    except ValueError:
        return b""
    if not isinstance(message, dict) or message.get("id") is not None or "error" not in message:
        return b""
    return to_json({**message, "id": request_id})


def _response_id(data: bytes) -> Any:
    """The id a response answers (None for requests and notifications)."""
    if b'"result"' not in data and b'"error"' not in data:
        return None
    try:
        message = from_json(data, allow_inf_nan=False)
    except ValueError:
        return None
    if isinstance(message, dict) and "method" not in message:
        return message.get("id")
    return None


class HttpAuth(Protocol):
    """What the HTTP client transport needs from an authorization provider
    (:class:`~typedmcp.auth.oauth.OAuthProvider` is one)."""

    async def send(
        self, http: HttpClient, method: str, body: bytes, headers: dict[str, str]
    ) -> aiohttp.ClientResponse:
        """Send one request with credentials, handling challenges; return the response."""
        ...


def with_bearer(headers: Mapping[str, str] | None, bearer_token: str | None) -> dict[str, str]:
    """``headers`` plus an ``Authorization: Bearer`` header when there is a token."""
    found = dict(headers or {})
    if bearer_token:
        found["Authorization"] = f"Bearer {bearer_token}"
    return found


async def authorized_request(
    http: HttpClient, auth: HttpAuth | None, method: str, body: bytes, headers: dict[str, str]
) -> aiohttp.ClientResponse:
    """``http.request``, through ``auth`` (credentials, challenges answered) when there is one."""
    if auth is not None:
        return await auth.send(http, method, body, headers)
    return await http.request(method, body, headers)


def open_client(url: str, headers: dict[str, str], options: HttpOptions | None) -> HttpClient:
    """An HTTP client for ``url`` (aiohttp is imported here, at the first connection)."""
    try:
        from .http_aiohttp import HttpClient
    except ModuleNotFoundError as error:
        if error.name is None or not error.name.startswith(("aiohttp", "yarl", "multidict")):
            raise
        raise ModuleNotFoundError(
            f"the HTTP client needs aiohttp ({error}): pip install 'typedmcp[http]'",
            name=error.name,
        ) from None

    return HttpClient(url, headers, options)


class HttpClientTransport:
    """The client side of Streamable HTTP as an engine transport.

    ``send`` POSTs one message and hands whatever the response carries (JSON or SSE) to
    ``deliver``; the session id and protocol-version headers are kept and sent after the
    handshake. A GET stream for server-initiated messages is opened on demand.

    ``send`` returns once the reply is in: a request's response has been delivered, or the
    request has failed (:class:`ResponseLost`, naming the server). A handshake-era reply
    stream that breaks is resumed within ``send`` (GET + ``Last-Event-ID``), so a pending
    request never outlives its caller's task, and a dead server fails it at once.

    With ``modern`` set (stateless era) no session id is kept, each POST also carries
    :data:`REQUEST_HEADERS`, an id-less JSON-RPC error body answers the request it came
    for, and a reply stream that ends without the response fails the request.
    """

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
        base = {"Accept": "application/json, text/event-stream", **with_bearer(headers, bearer_token)}
        self.http = open_client(url, base, options)
        self.auth = auth  # OAuth: credentials on every POST, challenges answered (oauth.py)
        self.deliver: Deliver | None = None
        #: where a reply already parsed here goes (the engine's ``receive_message``)
        self.deliver_message: Callable[[Any], Coroutine[Any, Any, None]] | None = None
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.modern = False
        self._closed = asyncio.Event()
        self._get_task: asyncio.Task[None] | None = None
        self.last_event_id: str | None = None
        self.retry_ms = 1000
        #: requests whose reply stream is being resumed -> resolved when the response
        #: comes on another stream (or failed when the transport closes)
        self._resuming: dict[Any, asyncio.Future[None]] = {}

    @property
    def closed_reason(self) -> str:
        """Why requests still waiting when the engine stops are failed."""
        return f"the connection to {self.http.url} was closed"

    def _session_headers(self) -> dict[str, str]:
        headers = {}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _lost(self, request_id: Any, why: str) -> ResponseLost:
        what = "a message" if request_id is None else f"request {request_id!r}"
        return ResponseLost(
            f"{what} to {self.http.url} got no response: {why}. It may have run on the "
            "server and is not sent again; send it again (a new request) only if running "
            "it twice is harmless"
        )

    async def receive(self) -> bytes | None:
        await self._closed.wait()
        return None

    async def send(self, data: bytes) -> None:
        """POST one message; deliver what comes back; resume a broken SSE reply via GET.

        A POST is never sent twice: if its connection breaks, :class:`ResponseLost`."""
        headers = {"Content-Type": "application/json", **self._session_headers()}
        if self.modern:
            extra = REQUEST_HEADERS.get()
            if extra:
                headers.update(extra)
        per_call = CALL_HEADERS.get()
        if per_call:
            headers.update(per_call)
        try:
            response = await authorized_request(self.http, self.auth, "POST", data, headers)
        except BrokenReply as error:  # (ServerUnreachable: nothing was sent; it goes up)
            raise self._lost(_request_id_of(data), str(error)) from None
        try:
            await self._handle(response, data)
        except BrokenReply as error:  # the reply broke off
            response.close()
            raise self._lost(_request_id_of(data), str(error)) from None
        except BaseException:
            # Cancelled (the caller timed out) or failed mid-reply: the connection is in an
            # unknown state, so it is closed, never reused.
            response.close()
            raise

    async def _handle(self, response: aiohttp.ClientResponse, sent: bytes) -> None:
        """Deliver what a POST's response carries (the id of the request ``sent`` is read
        only when the reply needs it: an error body or an SSE stream)."""
        status = response.status
        if status == 202:
            await self.http.read(response)
            return
        headers = response.headers
        content_type = headers.get("Content-Type", "")
        if status != 200:
            body = await self.http.read(response)
            if status == 404 and self.session_id:
                raise SessionExpired(status, body)
            request_id = _request_id_of(sent)
            if content_type.startswith("application/json") and request_id is not None and self.deliver:
                answered = _response_id(body)
                if answered is None and self.modern:
                    body = _error_for(body, request_id)  # an id-less error answers this POST
                    answered = request_id if body else None
                if answered == request_id:
                    await self.deliver(body)  # a JSON-RPC error answering our request
                    return
            if status in (401, 403):
                raise AuthRequired(status, body, headers.get("WWW-Authenticate", ""))
            raise HttpError(status, body, self.http.url)
        if not self.session_id and not self.modern:
            self.session_id = headers.get("Mcp-Session-Id")
        if content_type.startswith("text/event-stream"):
            request_id = _request_id_of(sent)
            answered, last_id, why, broke = await self._consume(response, request_id)
            if request_id is None or answered:
                return
            if self.modern:  # no resumption in the stateless era: the caller decides
                raise self._lost(request_id, f"the reply stream {why}")
            await self._resume(request_id, last_id, why, broke)
            return
        body = await self.http.read(response)
        if not body:
            return
        # parsed here, once: garbage is never answered with a parse error POSTed back
        message: Any = _NOT_JSON
        if content_type.startswith("application/json"):
            with contextlib.suppress(ValueError):
                message = decode(body, cache_strings="keys")
        if message is _NOT_JSON:
            raise NotAnMcpReply(status, body, content_type, self.http.url)
        if self.deliver_message is not None:
            await self.deliver_message(message)
        elif self.deliver is not None:
            await self.deliver(body)

    async def _consume(
        self, response: aiohttp.ClientResponse, request_id: Any = None, last_id: str | None = None
    ) -> tuple[bool, str | None, str, bool]:
        """Deliver an SSE reply's messages. Returns whether the response to ``request_id``
        came, the id of this stream's last event (where a resumption starts), how the
        stream ended (for an error message), and whether it broke (rather than ended)."""
        try:
            async with contextlib.aclosing(self.http.events(response)) as events:
                async for event in events:
                    if event.id is not None:
                        last_id = self.last_event_id = event.id
                    if event.retry is not None:
                        self.retry_ms = event.retry
                    if event.data and self.deliver:
                        responded = await self._deliver(event.data)
                        if request_id is not None and responded == request_id:
                            # the stream has served its purpose; do not wait for its end
                            response.close()
                            return True, last_id, "", False
        except BrokenReply as error:
            return False, last_id, f"broke off ({error})", True
        except BaseException:
            response.close()
            raise
        return False, last_id, "ended before the response", False

    async def _deliver(self, data: bytes) -> Any:
        """Hand a message to the engine; a response to a request being resumed ends its
        resumption. Returns the id the message answers (None unless it is a response)."""
        answered = _response_id(data)
        if answered is not None and self._resuming:
            waiter = self._resuming.get(answered)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        assert self.deliver is not None
        await self.deliver(data)
        return answered

    async def _resume(self, request_id: Any, last_id: str | None, why: str, broke: bool) -> None:
        """The reply stream of ``request_id`` ended before its response: resume it, in the
        caller's task, with GET + the ``Last-Event-ID`` of that same stream (2025-11-25 SSE
        polling: after waiting ``retry`` ms) until the response arrives, here or on another
        stream. After a stream that broke (rather than ended), the server's address is
        probed during the wait (:meth:`_wait_retry`), so a server that is gone fails the
        request at once, however long ``retry`` is, and one that is there is reconnected to
        after ``retry``, not ``retry`` plus the probe's round trip. Raises
        :class:`ResponseLost` when the stream cannot be resumed: no event id, the server
        gone or refusing, too many attempts.
        """
        if last_id is None:
            raise self._lost(request_id, f"the reply stream {why}, with no event id to resume from")
        resume_from: str = last_id
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._resuming[request_id] = waiter
        try:
            for _attempt in range(MAX_RESUMPTIONS):
                try:
                    await self._wait_retry(waiter, probe=broke)
                except ServerUnreachable as error:
                    raise self._lost(request_id, f"the reply stream {why}, and {error}") from None
                if waiter.done():
                    waiter.result()  # answered elsewhere (or raises: the transport closed)
                    return
                headers = {
                    "Accept": "text/event-stream",
                    "Last-Event-ID": resume_from,
                    **self._session_headers(),
                }
                try:
                    response = await self.http.request("GET", b"", headers)
                except (BrokenReply, ServerUnreachable) as error:
                    raise self._lost(
                        request_id, f"the reply stream {why}, and resuming it failed ({error})"
                    ) from None
                if response.status != 200:
                    response.close()
                    raise self._lost(
                        request_id,
                        f"the reply stream {why}, and resuming it got HTTP {response.status}",
                    )
                answered, last_id, why, broke = await self._consume_or_answer(
                    response, request_id, resume_from, waiter
                )
                if answered:
                    return
                resume_from = last_id or resume_from
            raise self._lost(request_id, f"the reply stream {why}, {MAX_RESUMPTIONS} times")
        finally:
            self._resuming.pop(request_id, None)
            if waiter.done() and not waiter.cancelled():
                waiter.exception()  # retrieved, whatever happens to it
            else:
                waiter.cancel()

    async def _wait_retry(self, waiter: asyncio.Future[None], probe: bool) -> None:
        """Wait ``retry`` ms before a resumption, or less if ``waiter`` is done (the response
        came on another stream). With ``probe``, the server's address is probed meanwhile:
        raises ``ServerUnreachable`` as soon as it is found gone; a probe still running when
        the wait is over is dropped (the GET that follows tells as much)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.retry_ms / 1000
        probing = asyncio.ensure_future(self.http.probe()) if probe else None
        watched: set[asyncio.Future[Any]] = {waiter} if probing is None else {waiter, probing}
        try:
            while not waiter.done():
                left = deadline - loop.time()
                if left <= 0:
                    return
                await asyncio.wait(watched, timeout=left, return_when=asyncio.FIRST_COMPLETED)
                if probing is not None and probing.done() and not waiter.done():
                    probing.result()  # ServerUnreachable: the server is gone
                    watched.discard(probing)  # it is there: wait out the rest
        finally:
            if probing is not None:
                if not probing.done():
                    probing.cancel()
                    await asyncio.wait({probing})
                if not probing.cancelled():
                    probing.exception()  # retrieved, whatever became of it

    async def _consume_or_answer(
        self,
        response: aiohttp.ClientResponse,
        request_id: Any,
        last_id: str,
        waiter: asyncio.Future[None],
    ) -> tuple[bool, str | None, str, bool]:
        """Read a resumed stream until it ends or the response came (on it, or elsewhere:
        ``waiter``); what :meth:`_consume` returns."""
        consume = asyncio.ensure_future(self._consume(response, request_id, last_id))
        either: set[asyncio.Future[Any]] = {consume, waiter}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not consume.done():
                consume.cancel()  # it closes its connection
                await asyncio.wait({consume})
        if not waiter.done():
            return consume.result()
        if not consume.cancelled():
            consume.exception()  # nothing left unretrieved
        waiter.result()  # raises if the transport closed
        return True, last_id, "", False

    async def start_get_stream(self, timeout: float = 2.0) -> None:
        """Listen for server-initiated messages (a 405 means the server offers none).

        Returns once the server has answered the GET (or after ``timeout``), so the stream
        is in place before the next request is sent.
        """
        if self._get_task is not None:  # a stream of an earlier session (re-initialize)
            self._get_task.cancel()
            await asyncio.gather(self._get_task, return_exceptions=True)
        ready = asyncio.Event()
        self._get_task = asyncio.create_task(self._get_stream(ready))
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(ready.wait(), timeout)

    async def _get_stream(self, ready: asyncio.Event) -> None:
        """The GET stream's task: it ends quietly when the server goes away (requests in
        flight fail on their own streams) and never with an exception. A stream that
        ends, or stays silent past the idle limit, is opened again after ``retry``, from
        its last event id (``Last-Event-ID``: the server replays what came meanwhile). An
        event over ``max_reply_bytes`` stops it for good, with a warning."""
        response: aiohttp.ClientResponse | None = None
        last_id: str | None = None  # where the next GET resumes (nothing missed meanwhile)
        try:
            while not self._closed.is_set():
                headers = {"Accept": "text/event-stream", **self._session_headers()}
                if last_id is not None:
                    headers["Last-Event-ID"] = last_id
                response = await self.http.request("GET", b"", headers)
                ready.set()
                if response.status != 200:
                    await self.http.read(response)
                    return
                try:
                    async with contextlib.aclosing(self.http.events(response)) as events:
                        async for event in events:
                            if event.id is not None:
                                last_id = event.id
                            if event.data and self.deliver:
                                await self._deliver(event.data)
                except BrokenReply as error:
                    if not error.timed_out:
                        return  # the server went away
                response.close()
                response = None
                await asyncio.sleep(self.retry_ms / 1000)  # no tight loop on short streams
        except (BrokenReply, ServerUnreachable, HttpError):
            return
        except ReplyTooLarge as error:  # not opened again: the server would send it again
            logger.warning("the GET stream of %s stopped: %s", self.http.url, error)
        except Exception:
            logger.exception("the GET stream of %s failed", self.http.url)
        finally:
            ready.set()
            if response is not None:
                response.close()  # cancelled mid-stream: never left open

    async def close(self) -> None:
        """End the session (DELETE) and close connections."""
        self._closed.set()
        for request_id, waiter in list(self._resuming.items()):
            if not waiter.done():
                waiter.set_exception(self._lost(request_id, "the client closed the connection"))
        if self._get_task is not None:
            self._get_task.cancel()
            with contextlib.suppress(BaseException):
                await self._get_task
        if self.session_id:
            with contextlib.suppress(Exception):  # a courtesy: never holds up closing long
                await asyncio.wait_for(self._delete(), DELETE_LIMIT)
        await self.http.close()

    async def _delete(self) -> None:
        response = await self.http.request("DELETE", b"", self._session_headers())
        await self.http.read(response)
