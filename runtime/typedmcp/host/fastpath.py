"""The gateway's pass-through for routed ``tools/call`` and ``prompts/get`` requests (stdio).

The gateway's usual path serves a call as any server would: the request is validated
into models, the handler calls :meth:`~.core.Host.call_tool` (``get_prompt``), whose
client validates the server's result into models again, and the answer is dumped back to
JSON. When nothing in between needs the models, :class:`PassThrough` (the engine's
dispatcher in front of the gateway's own) does what that path does to the wire, and only
that: it routes on the exported name, checks a tool's arguments against its inputSchema,
sends the request to the owning server under the server's own name (the server
connection's own id and ``_meta``), and relays the server's result as it came, completed
as the gateway completes every 2026-07-28 result (``resultType``, the gateway's
``serverInfo``).

What stays the usual path's: time limits and their errors (a tool error result for a
tool, -32602 for a prompt), connection failures, the server's errors, input rounds
(answered by the host's hooks, as there), progress of a tool call (relayed under the
caller's token, increasing only; a prompt's is not asked for, as there), cancellation by
the caller (the engine cancels the call's task, the server is told) and the check of
structured output against the tool's outputSchema. The pass-through steps aside (the
usual path serves the request) for anything else: a handshake-era caller, a caller that
declared sampling or elicitation (its calls may be parked), a log level, tracing (spans,
or a trace context in ``_meta``), params beyond name, arguments and ``_meta``, a
malformed progress token, an unknown name, arguments that break the schema or, for a
prompt, are not all strings (the usual path words the error), a server not connected or
not of the caller's revision, host interceptors, gateway middleware or scopes, or a server
configured with ``resetTimeoutOnProgress``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..engine.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, ConnectionClosed, RequestId, RpcError
from ..protocol import telemetry
from ..protocol.client import ToolOutputError
from ..protocol.meta import CLIENT_CAPABILITIES_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY
from ..protocol.server import tool_error
from ..stateless.server import RETIRED_CODES
from .errors import HostError
from .parking import FORWARDED

CALL_TOOL = "tools/call"
GET_PROMPT = "prompts/get"
#: The methods that may pass through (when the gateway serves them).
PASSED = frozenset({CALL_TOOL, GET_PROMPT})
#: The params the pass-through relays; any other key (``task``, ``inputResponses``,
#: ``requestState``, ...) is the usual path's to serve.
PLAIN_CALL_KEYS = frozenset({"name", "arguments", "_meta"})
#: what a caller declaring it may be asked, via the gateway (sampling, elicitation)
INPUT_KINDS = frozenset(FORWARDED)
_CONNECTION_ERRORS = (ConnectionClosed, ConnectionError, OSError)


@dataclass(slots=True)
class _Route:
    """Where a request passing through goes: its method, the exported name it was made
    under, the server's runtime, the request to send, the caller's progress token (relayed
    for ``tools/call`` only) and, for a tool, the server's name for it."""

    method: str
    name: str
    runtime: Any
    wire: dict[str, Any]
    token: Any
    tool: str | None


class PassThrough:
    """The engine's dispatcher for ``mcp-host serve --stdio``: routed ``tools/call``
    requests pass through (see the module doc); everything else goes to ``router``."""

    def __init__(self, host: Any, router: Any, handlers: object) -> None:
        self.host = host
        self.router = router
        self.modern = router.modern
        #: what the gateway serves of :data:`PASSED` (prompts/get when a server offers prompts)
        self.served = frozenset(
            method for method, handler in ((CALL_TOOL, "call_tool"), (GET_PROMPT, "get_prompt"))
            if handler in type(handlers).__dict__
        )
        #: the revisions the gateway serves 2026-07-28 callers in
        self.versions = frozenset(self.modern.supported_versions if self.modern is not None else ())
        self.engine: Any = None
        #: calls served by the pass-through (tests and benchmarks read it)
        self.passed = 0

    #: Relay in the engine's lane (:mod:`.fastlane`: no task, future or timer task per
    #: call; ``serve_passing`` sets it up); False: every call passing through is served in
    #: a task of its own.
    use_lane: bool = True

    def attach(self, engine: Any) -> None:
        """Attach the connection's engine (to the router's sessions too)."""
        self.engine = engine
        self.router.attach(engine)

    def close(self) -> None:
        self.router.close()

    def end_of_input(self) -> None:
        self.router.end_of_input()

    async def on_notification(self, method: str, params: Any) -> None:
        await self.router.on_notification(method, params)

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        if method in PASSED:
            route = self._plan(method, params)
            if route is not None:
                self.passed += 1
                return await self._send(route)
        return await self.router.on_request(method, params, request_id)

    def _plan(self, method: str, params: Any) -> _Route | None:
        """Where this request goes and what is sent there, when it may pass through; else
        None (the usual path serves it)."""
        modern, host = self.modern, self.host
        if (
            modern is None
            or type(params) is not dict
            or not params.keys() <= PLAIN_CALL_KEYS
            or host.interceptors
            or modern.middleware is not None
            or modern.access_policy
            or method not in self.served
        ):
            return None
        meta = params.get("_meta")
        if type(meta) is not dict or LOG_LEVEL_KEY in meta or _traced(meta):
            return None
        version = meta.get(PROTOCOL_VERSION_KEY)
        capabilities = meta.get(CLIENT_CAPABILITIES_KEY)
        if version not in self.versions or type(capabilities) is not dict:
            return None
        if not INPUT_KINDS.isdisjoint(capabilities):
            return None  # the gateway may park its calls to ask it: the usual path
        token = meta.get("progressToken")
        if token is not None and type(token) not in (str, int):
            return None
        name, arguments = params.get("name"), params.get("arguments")
        if type(name) is not str or (arguments is not None and type(arguments) is not dict):
            return None
        if method == CALL_TOOL:
            route = host._routes.get(name)
            if route is None:
                return None
            entry, runtime = route
            args = {} if arguments is None else arguments
            if runtime.schemas.check(entry.tool, "inputSchema", args):
                return None
            wire: dict[str, Any] = {"name": entry.tool, "arguments": args}
            tool: str | None = entry.tool
        else:  # prompts/get: no progress on the usual path either
            prompt = host.registry.prompts.get(name)
            if prompt is None or (arguments and not all(type(value) is str for value in arguments.values())):
                return None
            runtime, token, tool = host.server(prompt.server), None, None
            wire = {"name": prompt.prompt, **({"arguments": dict(arguments)} if arguments else {})}
        session = runtime.session
        if (
            session is None
            or session.era != "stateless"
            or session.package is None
            or session.package.version != version
            or runtime.config.reset_timeout_on_progress
        ):
            return None
        return _Route(method, name, runtime, wire, token, tool)

    def _address(self, route: _Route) -> str | None:
        """Put the server connection's ``_meta`` on the request (with a progress token of
        the gateway's, relayed to the caller's, when the caller asked for progress); the
        token, to drop once the call ends."""
        session = route.runtime.session
        if route.token is None:
            route.wire["_meta"] = session._meta
            return None
        outgoing = f"host-{next(self.host._tokens)}"
        session.progress_callbacks[outgoing] = _Relay(self, route.token)
        route.wire["_meta"] = {**session._meta, "progressToken": outgoing}
        return outgoing

    async def _send(self, route: _Route) -> Any:
        """Send the request to its server; the gateway's answer, as the usual path's."""
        outgoing = self._address(route)
        try:
            return await self._exchange(route)
        finally:
            if outgoing is not None:
                route.runtime.session.progress_callbacks.pop(outgoing, None)

    async def _exchange(self, route: _Route, raw: Any = None) -> Any:
        """The server's answer to the request (``raw``: its first, when it asked for
        input), as the gateway's answer."""
        method, runtime, wire = route.method, route.runtime, route.wire
        session = runtime.session
        limit = runtime.config.timeout
        engine = session.engine
        try:
            if raw is None:
                if engine is None:
                    raise ConnectionClosed(f"cannot send {method}: the session is not connected")
                # (exchange() less its tracing layer: _plan found nothing to trace for this call)
                raw = await session._exchange(engine, method, wire, engine.new_request_id(), limit, None)
            if type(raw) is dict and raw.get("resultType") == "input_required":
                negotiated, _own = session._allowed(method)
                raw = await session._input_rounds(method, negotiated, wire, raw, limit)
        except (asyncio.TimeoutError, *_CONNECTION_ERRORS) as error:
            return self._failed(route, error)
        except RpcError as error:
            raise _relayed(error) from None
        return self._complete(route, session.on_result(method, raw))

    def _failed(self, route: _Route, error: BaseException) -> Any:
        """The answer to a call its server did not answer in time, or whose connection failed."""
        runtime = route.runtime
        failure = self.host._failure(runtime, error, f"{route.method} {route.name}", runtime.config.timeout)
        if route.method != CALL_TOOL:
            raise RpcError(INVALID_PARAMS, str(failure)) from None  # the gateway's _routed
        return self._finish(route.method, _tool_failure(failure))

    def _complete(self, route: _Route, raw: Any) -> Any:
        """The server's complete result, checked and completed as the usual path's."""
        if type(raw) is not dict or raw.get("resultType", "complete") != "complete":
            raise RpcError(INTERNAL_ERROR, "Internal error")  # as the usual path's validation ends
        if route.tool is not None:
            _check_output(route.runtime.session, route.tool, raw)
        return self._finish(route.method, raw)

    def _finish(self, method: str, wire: dict[str, Any]) -> Any:
        """Complete the result as the gateway's stateless server completes a handler's."""
        return self.modern.finish(method, wire)


def _relayed(error: RpcError) -> RpcError:
    """The server's error as the gateway answers it (a retired code becomes its successor)."""
    if error.code in RETIRED_CODES:
        return RpcError(RETIRED_CODES[error.code], error.message, error.data)
    return error


def _traced(meta: dict[str, Any]) -> bool:
    """Whether the usual path has tracing to do for this call: spans (a provider is set)
    or a trace context in the caller's ``_meta`` to carry on to the server."""
    traced = telemetry.active()
    return traced is not None and (traced._configured() or not traced._fields().isdisjoint(meta))


def _tool_failure(error: Exception) -> dict[str, Any]:
    """The usual path's answer to a host failure: a tool error result for the model."""
    if isinstance(error, HostError):
        return tool_error(str(error))
    raise error


def _check_output(session: Any, tool: str, raw: dict[str, Any]) -> None:
    """The client's check of structured output against the tool's outputSchema."""
    if not session.validate_tool_output or raw.get("isError"):
        return
    listed = session.tool_schemas.tools.get(tool)
    if listed is None or listed.get("outputSchema") is None:
        return
    if session.tool_schemas.validator(tool, "outputSchema") is None:
        return
    structured = raw.get("structuredContent")
    found = (session.tool_schemas.check(tool, "outputSchema", structured) if structured is not None
             else ["(root): no structuredContent"])
    if found:
        raise ToolOutputError(f"tool {tool} returned output that breaks its outputSchema: " + "; ".join(found))


class _Relay:
    """Relays the server's progress on a passed-through call to the caller, under the
    caller's token, increasing only (as a handler's ``report_progress``)."""

    __slots__ = ("last", "passage", "token")

    def __init__(self, passage: PassThrough, token: Any) -> None:
        self.passage = passage
        self.token = token
        self.last: float | None = None

    async def __call__(self, note: Any) -> None:
        progress = note.progress
        if self.last is not None and progress <= self.last:
            return
        self.last = progress
        params: dict[str, Any] = {"progressToken": self.token, "progress": progress}
        if note.total is not None:
            params["total"] = note.total
        if note.message is not None:
            params["message"] = note.message
        engine = self.passage.engine
        if engine is not None:
            await engine.notify("notifications/progress", params)


__all__ = ["PassThrough"]
