"""The HTTP library boundary: every byte the HTTP clients send or receive goes through
aiohttp here (``http_client``, ``sse_client`` and ``auth`` reach this module through
``http_client.open_client`` when they first connect, so a stdio-only program never imports
aiohttp).

aiohttp does HTTP/1.1: connections and keep-alive, TLS, proxies (CONNECT for https),
cookies, chunked and compressed bodies. :class:`HttpClient` configures it for MCP and turns
its errors into the runtime's (``http_wire``: ``ServerUnreachable``, ``TlsError``,
``RedirectNotFollowed``, ``BrokenReply``); SSE events are read from the body stream by
``http_wire.parse_sse``.

What is configured, and why:

* **Trust**: ``verify=True`` is the system trust store (``ssl.create_default_context()``);
  a CA bundle path or an ``ssl.SSLContext`` replaces it; ``cert`` adds a client certificate
  (mutual TLS); ``verify=False`` turns checking off, with a warning.
* **Proxies**: ``proxy=`` for every request, else (``trust_env=True``) ``HTTP_PROXY`` /
  ``HTTPS_PROXY`` / ``NO_PROXY`` read once per origin (not on every request, as aiohttp's
  own ``trust_env`` would, in a thread). An https URL goes through the proxy with CONNECT.
* **Cookies**: one jar per client, taking cookies from hosts named by IP address too (a
  load balancer at ``10.0.0.5`` pins sessions with a cookie like any other).
* **Connections**: unlimited, kept alive (aiohttp's 15 s idle limit). A pooled connection
  the server has closed (its keep-alive timeout) is dropped before it carries a request,
  even when the event loop has not yet seen the close: the socket itself is asked
  (:class:`_Connector`). Otherwise a POST written on it would be lost, and a POST is never
  sent twice.
* **Re-sending**: a POST never is (aiohttp repeats only idempotent requests). aiohttp sends
  a GET or DELETE once more, on a new connection, when the connection broke before the
  response head came (RFC 9112 9.3.1 allows it); both are harmless to repeat.
* **Redirects** of MCP requests are followed by this module, not aiohttp, at most
  :data:`MAX_REDIRECTS`: only on the same origin (or from http to https on the same host
  with default ports), and only keeping the method (307 and 308; any redirect of a GET).
  Anything else raises ``RedirectNotFollowed`` naming the location, so
  credentials (``Authorization``, the session id, cookies) never follow a redirect to
  another origin. :meth:`HttpClient.fetch` (OAuth) follows none: the caller sees the 3xx.
* **Time limits** (``HttpTimeouts``): ``connect`` (TCP, proxy tunnel
  and TLS handshake), ``reply`` (from sending a request to the first bytes of its response,
  and between them), ``idle`` (silence on an SSE stream once it has started).
* ``raise_for_status=False`` (statuses are MCP's business: 404 re-initializes, 401 starts
  OAuth); ``auto_decompress=True`` (a compressed reply is read like any other).

A session of the user's own (``http_session=``) is used as configured (its trust, proxy,
cookies, headers, trace hooks, connector) and never closed here; only ``total`` of its
``ClientTimeout`` is dropped (streams outlive any total; calls have their own limit), and
``timeouts.idle`` still applies to streams.
"""

from __future__ import annotations

import asyncio
import errno
import os
import select
import ssl
import urllib.request
import warnings
import weakref
from collections.abc import AsyncGenerator, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import ClientResponse, ClientSession, ClientTimeout
from yarl import URL

from .http_wire import (
    BrokenReply,
    HttpOptions,
    HttpReply,
    InsecureTlsWarning,
    RedirectNotFollowed,
    ReplyTooLarge,
    ServerUnreachable,
    SseEvent,
    TlsError,
    parse_sse,
)

__all__ = ["MAX_REDIRECTS", "HttpClient", "broken", "describe", "env_proxy", "tls_context"]

#: Redirects (307/308, same origin) one MCP request follows.
MAX_REDIRECTS = 5
_FOLLOWED = frozenset({307, 308})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


def _has_input(fileno: int) -> bool:
    """Whether a socket has something to read (or its peer closed it), without waiting."""
    if fileno < 1024 or not hasattr(select, "poll"):  # select's range (FD_SETSIZE)
        return bool(select.select([fileno], [], [], 0)[0])
    poller = select.poll()
    poller.register(fileno, select.POLLIN)
    return bool(poller.poll(0))


class _Connector(aiohttp.TCPConnector):
    """aiohttp's connector, except that a pooled connection is checked before it is used
    again: if the server has closed it (or sent anything, which it may not do between
    responses), it is dropped and another one taken. aiohttp checks only what the event
    loop has already processed, so a close still in the socket's buffer would take the
    next request down with it."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._served: weakref.WeakSet[Any] = weakref.WeakSet()

    async def connect(self, req: Any, traces: Any, timeout: ClientTimeout) -> Any:
        while True:
            connection = await super().connect(req, traces, timeout)
            protocol = connection.protocol
            if protocol not in self._served:  # new: nothing to check
                self._served.add(protocol)
                return connection
            transport = connection.transport
            sock = transport.get_extra_info("socket") if transport is not None else None
            try:
                usable = sock is not None and not _has_input(sock.fileno())
            except (OSError, ValueError):  # closed meanwhile
                usable = False
            if usable:
                return connection
            connection.close()


def tls_context(verify: Any, cert: Any) -> ssl.SSLContext | bool:
    """What aiohttp's ``ssl=`` gets for ``verify`` and ``cert`` (see ``HttpOptions``)."""
    if isinstance(verify, ssl.SSLContext):
        if cert is not None:
            raise ValueError(
                "cert= cannot be combined with an ssl.SSLContext in verify=: load the client "
                "certificate into that context (context.load_cert_chain(...))"
            )
        return verify
    if verify is False:
        if cert is None:
            return False
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif verify is True:
        if cert is None:
            return True  # aiohttp's default context: the system trust store
        context = ssl.create_default_context()
    elif isinstance(verify, (str, os.PathLike)):
        path = os.fspath(verify)
        if os.path.isdir(path):
            context = ssl.create_default_context(capath=path)
        elif os.path.isfile(path):
            try:
                context = ssl.create_default_context(cafile=path)
            except (OSError, ValueError) as error:
                raise ValueError(f"verify={path!r}: not a PEM CA bundle ({error})") from None
        else:
            raise ValueError(f"verify={path!r}: no such CA bundle file or directory")
    else:
        raise TypeError(
            f"verify= takes True, False, a CA bundle path or an ssl.SSLContext, not {verify!r}"
        )
    if cert is not None:
        files = (cert,) if isinstance(cert, (str, os.PathLike)) else cert
        if not isinstance(files, tuple) or len(files) not in (1, 2, 3):
            raise TypeError(
                "cert= takes a PEM file with certificate and key, or (certificate, key) or "
                f"(certificate, key, password), not {cert!r}"
            )
        try:
            context.load_cert_chain(*files)
        except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
            raise ValueError(f"cert={cert!r}: cannot load the client certificate ({error})") from None
    context.set_alpn_protocols(["http/1.1"])
    return context


def env_proxy(url: str) -> str | None:
    """The proxy ``HTTP_PROXY``/``HTTPS_PROXY`` name for ``url``, unless ``NO_PROXY``
    exempts its host (urllib's reading of the environment, as aiohttp's)."""
    parts = urlsplit(url)
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


def _same_origin(url: URL, location: URL) -> bool:
    """Whether ``location`` is on ``url``'s origin, or is its https upgrade on the same
    host with default ports (the rule the official SDK follows too)."""
    if (url.scheme, url.host, url.port) == (location.scheme, location.host, location.port):
        return True
    return (
        url.scheme == "http"
        and location.scheme == "https"
        and url.host == location.host
        and url.is_default_port()
        and location.is_default_port()
    )


class _Pool:
    """The aiohttp session of one client and what every request of it shares; created at
    the first request (aiohttp needs a running loop), closed by :meth:`close` if ours."""

    def __init__(self, options: HttpOptions) -> None:
        self.options = options
        self.session: ClientSession | None = options.http_session
        self.owned = options.http_session is None
        self.proxies: dict[tuple[str, str], str | None] = {}
        limits = options.timeouts
        if self.owned:
            self.timeout = ClientTimeout(total=None, connect=limits.connect, sock_read=limits.reply)
        else:
            theirs = options.http_session.timeout  # type: ignore[union-attr]
            self.timeout = ClientTimeout(
                total=None,
                connect=theirs.connect,
                sock_connect=theirs.sock_connect,
                sock_read=theirs.sock_read,
                ceil_threshold=theirs.ceil_threshold,
            )
        self.idle = limits.idle
        self.closed = False
        #: aiohttp's ssl= (bad trust or certificate files are refused here, up front)
        self.ssl = tls_context(options.verify, options.cert) if self.owned else True
        if self.ssl is False:
            warnings.warn(
                "TLS certificates are not checked (verify=False): anyone on the path can "
                "read and change the traffic; use it for local testing only",
                InsecureTlsWarning,
                stacklevel=2,
            )
        #: whether any response has come yet (a TLS server that refuses the client's
        #: certificate, or its absence, may just close the connection before the first)
        self.answered = False

    def proxy_for(self, url: URL) -> str | None:
        """The proxy for requests to ``url``'s origin (None: direct, or the user's session
        decides)."""
        if not self.owned:
            return None
        if self.options.proxy is not None:
            return self.options.proxy
        if not self.options.trust_env:
            return None
        key = (url.scheme, url.host or "")
        if key not in self.proxies:
            self.proxies[key] = env_proxy(str(url))
        return self.proxies[key]

    def open(self) -> ClientSession:
        if self.session is None:
            if self.closed:
                raise RuntimeError("the HTTP client is closed")
            self.session = ClientSession(
                connector=_Connector(ssl=self.ssl, limit=0),
                cookie_jar=aiohttp.CookieJar(unsafe=True),
                timeout=self.timeout,
                trust_env=False,  # the environment's proxies are read once, in proxy_for
                raise_for_status=False,
                auto_decompress=True,
            )
        return self.session

    async def close(self) -> None:
        self.closed = True
        session, self.session = self.session, None
        if session is not None and self.owned:
            await session.close()


class HttpClient:
    """Requests to one URL (MCP's endpoint) through one aiohttp session.

    ``headers`` go on every request (the transport's ``Accept``, the user's headers, the
    bearer token; an OAuth provider keeps ``Authorization`` here). :meth:`view` gives a
    client for another URL on the same session (the HTTP+SSE POST endpoint).
    """

    def __init__(
        self,
        url: str,
        headers: dict[str, str] | None = None,
        options: HttpOptions | None = None,
        *,
        _pool: _Pool | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not an http:// or https:// URL with a host")
        self.url = url
        self.target = URL(url)
        self.headers: dict[str, str] = dict(headers or {})
        self._pool = _pool if _pool is not None else _Pool(options or HttpOptions())
        self.options = self._pool.options
        self._owner = _pool is None
        self._proxy = self._pool.proxy_for(self.target)
        self._session: ClientSession | None = None

    def view(self, url: str) -> HttpClient:
        """A client for ``url`` sharing this one's session, headers and settings; closing
        it closes nothing."""
        return HttpClient(url, self.headers, _pool=self._pool)

    @property
    def idle_limit(self) -> float | None:
        return self._pool.idle

    def _where(self) -> str:
        return f"{self.url} (through the proxy {self._proxy})" if self._proxy else self.url

    async def request(
        self, method: str, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> ClientResponse:
        """Send one request; return its response once the head is in (read the body with
        :meth:`read` or :meth:`events`). Raises ``ServerUnreachable``
        (nothing sent), ``RedirectNotFollowed``, or :class:`BrokenReply`.
        """
        session = self._session or self._open()
        merged = {**self.headers, **headers} if headers else self.headers
        target = self.target
        for _hop in range(MAX_REDIRECTS + 1):
            try:
                response = await session.request(
                    method,
                    target,
                    data=body or None,
                    headers=merged,
                    allow_redirects=False,
                    raise_for_status=False,
                    proxy=self._proxy,
                    timeout=self._pool.timeout,
                )
            except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as error:
                raise self._failure(error, target) from error
            if not self._pool.answered:
                self._pool.answered = True
            if response.status not in _REDIRECTS:
                return response
            target = self._redirect(response, method, target)
        raise RedirectNotFollowed(
            response.status, str(target), f"{self.url} redirected more than {MAX_REDIRECTS} times"
        )

    def _open(self) -> ClientSession:
        self._session = self._pool.open()
        return self._session

    def _redirect(self, response: ClientResponse, method: str, target: URL) -> URL:
        """Where a 3xx leads, if it is followed; else it raises. Followed: a redirect on the
        same origin (or to https on the same host, default ports), that keeps the method
        (307/308; any redirect of a GET)."""
        status = response.status
        location = response.headers.get("Location", "")
        response.release()
        try:
            goes = target.join(URL(location)) if location else None
        except ValueError:
            goes = None
        if goes is None:
            raise RedirectNotFollowed(
                status, location, f"{target} answered HTTP {status} without a usable Location"
            )
        if status not in _FOLLOWED and method != "GET":
            raise RedirectNotFollowed(
                status,
                str(goes),
                f"{target} answered HTTP {status}, a redirect to {goes}: a {method} follows "
                "only 307 and 308 redirects (the others turn it into a GET); connect to that "
                "URL instead if it is the server",
            )
        if not _same_origin(target, goes):
            raise RedirectNotFollowed(
                status,
                str(goes),
                f"{target} redirects to {goes}, another origin: not followed, so the "
                "credentials of this connection (Authorization, session id, cookies) stay "
                "where they belong; connect to that URL directly if you trust it",
            )
        return goes

    def _failure(self, error: BaseException, target: URL) -> Exception:
        """The runtime's exception for an aiohttp failure of a request to ``target``."""
        host = f"{target.host}:{target.port}"
        if isinstance(error, aiohttp.ClientConnectorCertificateError):
            reason = getattr(error.certificate_error, "verify_message", None) or str(
                error.certificate_error
            )
            return TlsError(
                f"cannot connect to {target}: the TLS certificate of {host} is not trusted "
                f"({reason}). Pass verify='/path/to/ca.pem' (the CA bundle that signed it) or "
                "verify=<ssl.SSLContext>; verify=False turns the check off (local testing only)"
            )
        if isinstance(error, aiohttp.ClientConnectorSSLError):
            return TlsError(f"cannot connect to {target}: the TLS handshake with {host} failed ({_ssl_reason(error)}){_tls_hint(error)}")
        if isinstance(error, aiohttp.ClientHttpProxyError):
            return ServerUnreachable(
                f"cannot connect to {target}: the proxy {self._proxy} refused to open a "
                f"tunnel to {host} (HTTP {error.status} {error.message})"
            )
        if isinstance(error, aiohttp.ClientProxyConnectionError):
            return ServerUnreachable(
                f"cannot connect to {target}: the proxy {self._proxy} is unreachable "
                f"({error.os_error.strerror or error.os_error}); check proxy= or HTTP(S)_PROXY"
            )
        if isinstance(error, aiohttp.ClientConnectorDNSError):
            return ServerUnreachable(
                f"cannot connect to {target}: the host name {target.host!r} does not resolve "
                f"({error.os_error.strerror or error.os_error})"
            )
        if isinstance(error, aiohttp.ClientConnectorError):
            refused = isinstance(error.os_error, ConnectionRefusedError)
            return ServerUnreachable(
                f"cannot connect to {self._where()}: "
                f"{'connection refused' if refused else error.os_error.strerror or error.os_error} "
                "(is the server running, and listening on that host and port?)"
            )
        if isinstance(error, aiohttp.ConnectionTimeoutError):
            return ServerUnreachable(
                f"cannot connect to {self._where()}: no connection within "
                f"{self._pool.timeout.connect} s (the connect time limit)"
            )
        if isinstance(error, (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError)):
            return ValueError(f"cannot send to {target}: {error}")
        alert = _tls_refusal(error)
        if alert is not None:
            return TlsError(f"{host} closed the TLS connection ({alert}){_tls_hint(error)}")
        if (
            _closed_or_reset(error)
            and target.scheme == "https"
            and self._pool.owned
            and self.options.cert is None
            and not self._pool.answered
        ):  # (the first request of a client negotiates: nothing has run on the server)
            return TlsError(
                f"{host} closed the TLS connection before answering the first request: it "
                "may require a client certificate (mutual TLS): pass "
                "cert=('client.pem', 'client.key')"
            )
        return broken(error, self._pool.timeout.sock_read)

    async def read(self, response: ClientResponse) -> bytes:
        """The whole body of ``response`` (the connection goes back to the pool), at most
        ``max_reply_bytes`` (else :class:`ReplyTooLarge`, the connection closed)."""
        try:
            return await _read_capped(response, self.options.max_reply_bytes, "max_reply_bytes")
        except ReplyTooLarge:
            response.close()
            raise
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as error:
            response.close()
            raise broken(error, self._pool.timeout.sock_read) from error

    async def events(self, response: ClientResponse) -> AsyncGenerator[SseEvent, None]:
        """The body of ``response`` as SSE events (see ``parse_sse``); silence longer than
        the idle limit, or a broken connection, raises :class:`BrokenReply`."""
        idle = self._pool.idle
        connection = response.connection
        protocol = connection.protocol if connection is not None else None
        if protocol is not None and not response.content.is_eof():
            protocol.read_timeout = idle  # from now on: silence on the stream
            protocol.start_timeout()
        try:
            async for event in parse_sse(response.content.iter_any(), self.options.max_reply_bytes):
                yield event
        except ReplyTooLarge:
            response.close()
            raise
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError) as error:
            response.close()
            raise broken(error, idle) from error

    async def fetch(
        self, method: str, url: str, body: bytes = b"", headers: Mapping[str, str] | None = None
    ) -> HttpReply:
        """One complete exchange with any URL on this client's session (trust, proxy,
        cookies): OAuth metadata, registration and tokens. Redirects are not followed; only
        ``headers`` are sent (not this client's). Raises ``ServerUnreachable``/``BrokenReply``,
        or :class:`ReplyTooLarge` for a body over ``max_fetch_bytes``."""
        session = self._session or self._open()
        target = URL(url)
        try:
            async with session.request(
                method,
                target,
                data=body or None,
                headers=dict(headers or {}),
                allow_redirects=False,
                raise_for_status=False,
                proxy=self._pool.proxy_for(target),
                timeout=self._pool.timeout,
            ) as response:
                try:
                    data = await _read_capped(response, self.options.max_fetch_bytes, "max_fetch_bytes", url)
                except ReplyTooLarge:
                    response.close()
                    raise
                return HttpReply(
                    response.status, {k.lower(): v for k, v in response.headers.items()}, data
                )
        except ReplyTooLarge:
            raise
        except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as error:
            raise self._failure(error, target) from error

    async def probe(self) -> None:
        """Raise ``ServerUnreachable`` at once if nothing accepts a TCP
        connection where this client's requests go (the server, or the proxy); nothing is
        sent. (Not with a session of the user's own, whose route is its own business.)"""
        if not self._pool.owned:
            return
        where = URL(self._proxy) if self._proxy else self.target
        loop = asyncio.get_running_loop()
        try:
            transport, _ = await asyncio.wait_for(
                loop.create_connection(asyncio.Protocol, where.host or "", where.port or 0),
                self._pool.timeout.connect,
            )
        except (OSError, asyncio.TimeoutError) as error:
            what = "connection refused" if isinstance(error, ConnectionRefusedError) else (
                str(error) or type(error).__name__
            )
            raise ServerUnreachable(f"cannot connect to {self._where()}: {what}") from None
        transport.close()

    async def close(self) -> None:
        """Close the session and its connections, if this client made it."""
        if self._owner:
            await self._pool.close()
        self._session = None


async def _read_capped(response: ClientResponse, limit: int, option: str, url: str | None = None) -> bytes:
    """The body of ``response``, or :class:`ReplyTooLarge` (``option`` names the cap) as
    soon as it is known to pass ``limit`` bytes: a ``Content-Length`` over it before any of
    the body is read, else the bytes read so far (decompressed: what memory holds)."""
    length = response.content_length
    if length is not None and length > limit:
        raise ReplyTooLarge(f"the reply of {url or response.url} (Content-Length {length})", option, limit)
    if length is not None and "Content-Encoding" not in response.headers:
        return await response.read()  # (HTTP reads no more than Content-Length)
    content = response.content
    chunks: list[bytes] = []
    total = 0
    while chunk := await content.readany():
        total += len(chunk)
        if total > limit:
            raise ReplyTooLarge(f"the reply of {url or response.url}", option, limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _ssl_reason(error: BaseException) -> str:
    cause: Any = getattr(error, "os_error", None) or error
    return str(getattr(cause, "reason", None) or getattr(cause, "strerror", None) or cause)


def _tls_refusal(error: BaseException) -> str | None:
    """The TLS alert of a server that refused the connection after the handshake (TLS 1.3
    reports a missing or refused client certificate only then), if that is what happened."""
    seen: BaseException | None = error
    for _ in range(4):
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLError) and "ALERT" in str(seen.reason or "").upper():
            return str(seen.reason).lower().replace("_", " ")
        seen = seen.__cause__ or seen.__context__
    return None


def _closed_or_reset(error: BaseException) -> bool:
    """Whether the server closed the connection or reset it (after a refused TLS 1.3 client
    certificate either can come first: the alert, a close, or a reset)."""
    return isinstance(error, (aiohttp.ServerDisconnectedError, ConnectionResetError)) or (
        isinstance(error, aiohttp.ClientOSError) and error.errno == errno.ECONNRESET
    )


def _tls_hint(error: BaseException) -> str:
    text = str(error).upper()
    if "CERTIFICATE_REQUIRED" in text or "HANDSHAKE_FAILURE" in text or "BAD_CERTIFICATE" in text:
        return (
            ": the server may require a client certificate (mutual TLS): pass "
            "cert=('client.pem', 'client.key')"
        )
    return ""


def broken(error: BaseException, limit: float | None) -> BrokenReply:
    """:class:`BrokenReply` for a failure after a request was sent (``limit``: the time
    limit that was running)."""
    return BrokenReply(describe(error, limit), timed_out=isinstance(error, asyncio.TimeoutError))


def describe(error: BaseException, limit: float | None = None) -> str:
    """How a connection broke, in words."""
    if isinstance(error, aiohttp.SocketTimeoutError):
        return f"nothing came from the server for {limit} s (a time limit)" if limit else "it timed out"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(error, aiohttp.ClientPayloadError):
        return "the reply broke off (the connection closed mid-body)"
    if isinstance(error, ConnectionResetError) or getattr(error, "errno", None) == 104:
        return "the connection was reset"
    if isinstance(error, aiohttp.ClientConnectionError) and "Connection closed" in str(error):
        return "the connection was closed"
    return str(error) or type(error).__name__

