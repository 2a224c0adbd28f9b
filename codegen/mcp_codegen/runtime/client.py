"""Connect a generated ``Client`` to a server: handshake, capabilities, stdio launcher."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import AsyncIterator, Sequence
from types import ModuleType
from typing import Any

from .jsonrpc import Engine
from .session import (
    CommonBuiltins,
    ProtocolPackage,
    Session,
    VersionError,
    package_of,
    to_wire,
)
from .stdio import spawn
from .tools import ToolSchemas, as_functions, problems

INITIALIZE = "initialize"
INITIALIZED = "notifications/initialized"
LIST_TOOLS = "tools/list"
CALL_TOOL = "tools/call"


class ToolOutputError(ValueError):
    """A tool's structured output does not match the outputSchema the server listed."""


class ClientSession(Session):
    """The client side of one connection."""

    side = "client"
    peer_side = "server"

    def __init__(
        self,
        packages: Sequence[ProtocolPackage | ModuleType],
        handlers: object | None = None,
        *,
        client_info: dict[str, Any] | None = None,
        list_changed: Sequence[str] = (),
        request_timeout: float | None = None,
        validate_tool_output: bool = True,
    ) -> None:
        wrapped = sorted(
            (ProtocolPackage.of(p) for p in packages), key=lambda p: p.version, reverse=True
        )
        if not wrapped:
            raise ValueError("connect needs at least one generated protocol package")
        self.packages = wrapped
        own = package_of(handlers) if handlers is not None else wrapped[0].module
        client_module = importlib.import_module(f"{own.__name__}.client")
        handlers = handlers if handlers is not None else client_module.ClientHandlers()
        super().__init__(handlers, None, None)
        self.own_package = ProtocolPackage.of(own)
        if request_timeout is not None:
            self.request_timeout = request_timeout
        self.builtins = CommonBuiltins(self)
        self._handler_base = client_module.ClientHandlers
        self.client_info = client_info or {"name": "mcp-codegen", "version": "0.1.0"}
        self.list_changed = tuple(list_changed)
        self.server_info: dict[str, Any] = {}
        self.instructions: str | None = None
        self.client = client_module.Client(self)
        self.on_engine: Any = None  # called with the engine once it exists (in-process pipes)
        self.validate_tool_output = validate_tool_output
        self.tool_schemas = ToolSchemas()

    async def send_request(
        self, spec: Any, params: Any, timeout: float | None = None
    ) -> Any:
        """Send a request; remember listed tools, check structured tool output."""
        result = await super().send_request(spec, params, timeout)
        if spec.method == LIST_TOOLS:
            self.tool_schemas.update(result.tools)
        elif spec.method == CALL_TOOL and self.validate_tool_output:
            self._check_tool_output(params, result)
        return result

    def _check_tool_output(self, params: Any, result: Any) -> None:
        name = (params or {}).get("name")
        validator = self.tool_schemas.validator(name, "outputSchema") if name else None
        if validator is None or getattr(result, "is_error", False):
            return
        structured = getattr(result, "structured_content", None)
        found = (
            ["(root): no structuredContent"] if structured is None else problems(validator, structured)
        )
        if found:
            raise ToolOutputError(f"tool {name} returned output that breaks its outputSchema: "
                                  + "; ".join(found))

    def tools_as_functions(self) -> list[dict[str, Any]]:
        """The tools listed so far as function-calling definitions (see ``tools.as_functions``)."""
        return as_functions(self.tool_schemas.tools.values())

    def negotiated(self) -> None:
        """Hook run once the revision is known, before ``notifications/initialized``."""

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision (None before the handshake)."""
        return self.package.version if self.package else None

    async def initialize(self) -> Any:
        """Run the handshake with the newest revision offered; accept any of ours back."""
        assert self.engine is not None
        offered = self.packages[0]
        self.derive_capabilities(offered, self.list_changed)
        params = {
            "protocolVersion": offered.version,
            "capabilities": self.own_capabilities,
            "clientInfo": self.client_info,
        }
        raw = await self.engine.request(INITIALIZE, params)
        answered = raw.get("protocolVersion") if isinstance(raw, dict) else None
        package = next((p for p in self.packages if p.version == answered), None)
        if package is None:
            raise VersionError(
                f"the server answered protocol revision {answered!r}; this client speaks "
                f"{', '.join(p.version for p in self.packages)}"
            )
        result = package.dispatch.REQUESTS[INITIALIZE].validate_result(raw)
        self.package = package
        self.derive_capabilities(package, self.list_changed)
        self.peer_capabilities = to_wire(result.capabilities) or {}
        self.server_info = to_wire(result.server_info) or {}
        self.instructions = getattr(result, "instructions", None)
        self.peer = self.client
        self.negotiated()
        await self.engine.notify(INITIALIZED)
        return result


@contextlib.asynccontextmanager
async def connect(
    transport: Any, session: ClientSession
) -> AsyncIterator[Any]:
    """Run the engine over ``transport``, handshake, yield the typed ``Client``."""
    engine = Engine(
        transport,
        session,
        accept_batches=lambda: session.package is not None and session.package.accepts_batches,
    )
    session.engine = engine
    if session.on_engine is not None:
        session.on_engine(engine)
    if hasattr(transport, "deliver"):
        transport.deliver = engine._receive  # HTTP: responses arrive on the POSTs
    reader = asyncio.create_task(engine.run())
    try:
        initialize = asyncio.create_task(session.initialize())
        done, _ = await asyncio.wait({initialize, reader}, return_when=asyncio.FIRST_COMPLETED)
        if initialize not in done:
            initialize.cancel()
            raise ConnectionError("the server closed the connection during initialize")
        initialize.result()
        yield session.client
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader


@contextlib.asynccontextmanager
async def connect_stdio(
    command: Sequence[str],
    *,
    protocol: ModuleType | Sequence[ModuleType],
    handlers: object | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    **options: Any,
) -> AsyncIterator[Any]:
    """Start ``command`` as a stdio server and yield a connected, typed ``Client``.

    ``protocol`` is a generated package (or several, to negotiate among them). The server
    process is always cleaned up: stdin closed, then terminated, then killed.
    """
    packages = [protocol] if isinstance(protocol, ModuleType) else list(protocol)
    session = ClientSession(packages, handlers, **options)
    async with spawn(command, env=env, cwd=cwd) as transport, connect(transport, session) as client:
        yield client


class HttpClientSession(ClientSession):
    """A client session over Streamable HTTP: re-initializes once when the server has
    forgotten the session (404), then retries the request."""

    transport: Any = None
    _reinitializing: asyncio.Task[Any] | None = None

    def negotiated(self) -> None:
        self.transport.protocol_version = self.protocol_version

    async def initialize(self) -> Any:
        result = await super().initialize()
        await self.transport.start_get_stream()  # server-initiated messages arrive there
        return result

    async def _reinitialize(self, expired_session: str | None) -> None:
        """One new handshake however many calls saw the 404 at once."""
        running = self._reinitializing
        if running is None or running.done():
            if self.transport.session_id != expired_session:
                return  # another call already re-initialized
            self.transport.session_id = None
            self.transport.protocol_version = None
            self.package = None
            running = self._reinitializing = asyncio.ensure_future(self.initialize())
        await asyncio.shield(running)

    async def send_request(
        self, spec: Any, params: Any, timeout: float | None = None
    ) -> Any:
        from .http_client import SessionExpired

        session_id = self.transport.session_id
        try:
            return await super().send_request(spec, params, timeout)
        except SessionExpired:
            await self._reinitialize(session_id)
            return await super().send_request(spec, params, timeout)

    async def send_notification(self, spec: Any, params: Any) -> None:
        from .http_client import SessionExpired

        session_id = self.transport.session_id
        try:
            await super().send_notification(spec, params)
        except SessionExpired:
            await self._reinitialize(session_id)
            await super().send_notification(spec, params)


@contextlib.asynccontextmanager
async def connect_http(
    url: str,
    *,
    protocol: ModuleType | Sequence[ModuleType],
    handlers: object | None = None,
    headers: dict[str, str] | None = None,
    bearer_token: str | None = None,
    **options: Any,
) -> AsyncIterator[Any]:
    """Connect to a Streamable HTTP server and yield a connected, typed ``Client``.

    The session is ended with DELETE on exit; a 404 for a known session re-initializes.
    """
    from .http_client import HttpClientTransport

    packages = [protocol] if isinstance(protocol, ModuleType) else list(protocol)
    transport = HttpClientTransport(url, headers=headers, bearer_token=bearer_token)
    session = HttpClientSession(packages, handlers, **options)
    session.transport = transport
    try:
        async with connect(transport, session) as client:
            yield client
    finally:
        await transport.close()
