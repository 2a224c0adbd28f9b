"""The client session over Streamable HTTP (:class:`HttpClientSession`), above
``http_client.HttpClientTransport``.

Handshake era: a 404 for the session id (:class:`~.http_client.SessionExpired`) starts a new
session with a fresh ``initialize`` and retries the call, and the handshake itself is run
again when the server forgot its new session before ``notifications/initialized`` came
(bounded: :data:`HANDSHAKE_ATTEMPTS`). Stateless era: the request-metadata headers on every
POST, ``tools/list`` refreshed once on -32020, cancellation by closing the reply stream.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..engine.jsonrpc import RequestId, RpcError, clip, quoted
from ..protocol.client import CALL_TOOL, LIST_TOOLS, ClientSession
from ..protocol.deadlines import RequestOptions
from ..protocol.meta import DISCOVER, HEADER_MISMATCH
from ..protocol.negotiation import STATELESS
from .http_client import SessionExpired
from .http_headers import REQUEST_HEADERS, InvalidHeaderAnnotation, param_headers, request_headers

logger = logging.getLogger("typedmcp")

#: How many handshakes ``connect`` runs when the server forgets each new session before its
#: ``notifications/initialized`` (404) arrives, before giving up (SessionLostInHandshake).
HANDSHAKE_ATTEMPTS = 2


class SessionLostInHandshake(SessionExpired):
    """Every handshake's session was gone (404) by the time its ``notifications/initialized``
    arrived: the server forgets sessions at once, so initializing again cannot help."""

    def __init__(self, error: SessionExpired, url: str, handshakes: int) -> None:
        super().__init__(error.status, error.body)
        self.args = (
            f"{url} answered HTTP {error.status} to notifications/initialized in "
            f"{handshakes} handshakes: the session it had just created was already gone "
            f"({error.body[:200].decode('utf-8', 'replace') or 'no body'}). Check the server's "
            "session limit and idle timeout, and that every request reaches the server process "
            "that created the session (session affinity on Mcp-Session-Id)",
        )


class HttpClientSession(ClientSession):
    """A client session over Streamable HTTP.

    Handshake era: re-initializes once when the server has forgotten the session (404),
    then retries the request. Stateless era: request-metadata headers on every POST,
    tools with invalid ``x-mcp-header`` annotations dropped, one ``tools/list`` refresh and
    retry on -32020, cancellation by closing the reply stream.
    """

    transport: Any = None
    transport_kind = "streamable-http"
    _reinitializing: asyncio.Task[Any] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.param_headers: dict[str, Any] = {}  # tool name -> its x-mcp-header paths

    def negotiated(self) -> None:
        self.transport.protocol_version = self.protocol_version
        self.transport.modern = self.era == STATELESS

    async def initialize(self) -> Any:
        """The handshake, run again with a fresh ``initialize`` when the server has already
        forgotten the new session by the time ``notifications/initialized`` arrives (404);
        :class:`SessionLostInHandshake` after :data:`HANDSHAKE_ATTEMPTS` such handshakes."""
        for attempt in range(1, HANDSHAKE_ATTEMPTS + 1):
            try:
                result = await super().initialize()
                break
            except SessionExpired as error:  # (initialize itself carries no session id)
                gone = self.transport.session_id
                self._forget_session()  # (nothing to DELETE, nothing to send it on)
                if attempt == HANDSHAKE_ATTEMPTS:
                    raise SessionLostInHandshake(error, self.transport.http.url, attempt) from None
                logger.info(
                    "%s: session %s was gone before notifications/initialized; initializing again",
                    self.transport.http.url, clip(gone or ""),
                )
        await self.transport.start_get_stream()  # server-initiated messages arrive there
        return result

    def _forget_session(self) -> None:
        """Drop the session the server no longer knows: the next ``initialize`` starts anew."""
        self.transport.session_id = None
        self.transport.protocol_version = None
        self.package = None

    async def _reinitialize(self, expired_session: str | None) -> None:
        """One new handshake however many calls saw the 404 at once."""
        running = self._reinitializing
        if running is None or running.done():
            if self.transport.session_id != expired_session:
                return  # another call already re-initialized
            self._forget_session()
            running = self._reinitializing = asyncio.ensure_future(self.initialize())
        await asyncio.shield(running)

    async def send_request(
        self, spec: Any, params: Any, timeout: float | None = None,
        options: RequestOptions | None = None,
    ) -> Any:
        if self.era == STATELESS:
            return await super().send_request(spec, params, timeout, options)
        session_id = self.transport.session_id
        try:
            return await super().send_request(spec, params, timeout, options)
        except SessionExpired:
            await self._reinitialize(session_id)
            return await super().send_request(spec, params, timeout, options)

    async def send_notification(self, spec: Any, params: Any) -> None:
        session_id = self.transport.session_id
        try:
            await super().send_notification(spec, params)
        except SessionExpired:
            await self._reinitialize(session_id)
            await super().send_notification(spec, params)

    async def _request(
        self,
        spec: Any,
        wire: dict[str, Any],
        timeout: float | None,
        request_id: RequestId | None = None,
        options: RequestOptions | None = None,
    ) -> Any:
        """POST with the request-metadata headers; on -32020 refresh tools and retry once."""
        assert self.package is not None
        for attempt in (1, 2):
            tool = wire.get("name") if spec.method == CALL_TOOL else None
            headers = request_headers(
                spec.method, wire, self.package.version, self.param_headers.get(tool) if tool else None
            )
            token = REQUEST_HEADERS.set(headers)
            try:
                return await super()._request(spec, wire, timeout, request_id, options)
            except RpcError as error:
                if error.code != HEADER_MISMATCH or attempt == 2 or spec.method == DISCOVER:
                    raise
                logger.info(
                    "%s: header mismatch (%s); refreshing tools/list", spec.method, clip(error.message)
                )
            finally:
                REQUEST_HEADERS.reset(token)
            request_id = None  # the retry is a new request
            if spec.method == CALL_TOOL:
                await self.refresh_tools()
        raise AssertionError("unreachable")

    async def refresh_tools(self) -> None:
        """List every page of tools again (their ``x-mcp-header`` annotations)."""
        assert self.package is not None
        spec = self.package.dispatch.REQUESTS[LIST_TOOLS]
        cursor: str | None = None
        while True:
            result = await self.send_request(spec, {"cursor": cursor} if cursor is not None else None)
            cursor = result.next_cursor
            if cursor is None:
                return

    async def cancel_sent(self, request_id: RequestId, reason: str) -> None:
        """Stateless HTTP: closing the reply stream (done by the transport) is the cancel;
        a handshake-era session sends ``notifications/cancelled``."""
        if self.era != STATELESS:
            await super().cancel_sent(request_id, reason)

    def on_result(self, method: str, raw: Any) -> Any:
        """``tools/list``: drop tools whose ``x-mcp-header`` annotations are invalid (with a
        warning) and remember where the valid ones sit."""
        if method != LIST_TOOLS or not isinstance(raw, dict) or not isinstance(raw.get("tools"), list):
            return raw
        kept = []
        for tool in raw["tools"]:
            name: Any = tool.get("name") if isinstance(tool, dict) else None
            try:
                found = param_headers(tool.get("inputSchema") if isinstance(tool, dict) else None)
            except InvalidHeaderAnnotation as error:
                logger.warning(
                    "tool %s is not used: invalid x-mcp-header (%s)", quoted(name), clip(str(error))
                )
                self.param_headers.pop(name, None)
                continue
            if found:
                self.param_headers[name] = found
            else:
                self.param_headers.pop(name, None)
            kept.append(tool)
        return raw if len(kept) == len(raw["tools"]) else {**raw, "tools": kept}
