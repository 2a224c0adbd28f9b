"""One dispatcher, both eras: :class:`EraRouter` sends a request that names its version in
``_meta`` to the stateless server and anything else to the connection's handshake
session; :class:`Eras` holds what a server serves of each era."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..engine.jsonrpc import METHOD_NOT_FOUND, RequestId, RpcError, clip
from ..protocol.feed import ChangeFeed
from ..protocol.meta import (
    DISCOVER,
    PROTOCOL_VERSION_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    modern_meta,
)
from ..protocol.middleware import stateless_context
from ..protocol.packages import ProtocolPackage, generated_beside, package_of, with_bundled_eras
from ..protocol.results import json_data
from ..protocol.server import ServerSession
from .server import StatelessServer

logger = logging.getLogger("typedmcp")

#: The option of :meth:`Eras.of` (and of ``run_stdio``, ``serve``, ``http_app``) that adds
#: the runtime's bundled packages for the era the handlers' own package does not speak.
BOTH_ERAS_OPTION = "both_eras"


class EraRouter:
    """The engine's dispatcher when one process serves both eras (stdio, in-process).

    A request whose ``_meta`` names a protocol version (or ``server/discover``) is served
    statelessly; anything else belongs to the handshake session of this connection, which
    ``initialize`` starts. Cancellation works the same in both eras.
    """

    def __init__(self, legacy: ServerSession | None, modern: StatelessServer | None) -> None:
        if legacy is None and modern is None:
            raise ValueError("EraRouter needs at least one era")
        self.legacy = legacy
        self.modern = modern
        self._told_both_eras = False

    def accepts_batches(self) -> bool:
        """Whether the engine may take a JSON-RPC batch now: only once the handshake session
        has negotiated a revision that has them (2025-03-26)."""
        legacy = self.legacy
        return legacy is not None and legacy.package is not None and legacy.package.accepts_batches

    def attach(self, engine: Any) -> None:
        for side in (self.legacy, self.modern):
            if side is not None:
                side.engine = engine

    def _stateless(self, method: str, params: Any) -> StatelessServer | None:
        """The stateless server if this request is of its era, else None (handshake)."""
        modern = self.modern
        if modern is None:
            legacy = self.legacy
            if (
                legacy is not None
                and legacy.package is None
                and (method == DISCOVER or modern_meta(params) is not None)
            ):
                raise self._no_stateless_era(legacy, params)
            return None
        if type(params) is dict and method != "initialize":  # the usual case, quickly
            meta = params.get("_meta")
            if type(meta) is dict and PROTOCOL_VERSION_KEY in meta and modern is not None:
                return modern
        if modern is not None and (
            self.legacy is None
            or method == DISCOVER
            or modern_meta(params) is not None
        ):
            if self.legacy is None and method == "initialize":
                raise RpcError(
                    METHOD_NOT_FOUND,
                    "Method not found: initialize; this server speaks only "
                    f"{', '.join(modern.supported_versions)} (use server/discover)",
                    {"supported": modern.supported_versions},
                )
            return modern
        return None

    def _no_stateless_era(self, legacy: ServerSession, params: Any) -> RpcError:
        """:func:`refuse_stateless` for this connection's handshake session; the server's
        log says so once (at INFO: a dual-era client's discover probe is routine)."""
        package = legacy.own_package.module.__name__ if legacy.own_package else "?"
        error = refuse_stateless(package, legacy.supported_versions, params)
        if not self._told_both_eras:
            self._told_both_eras = True
            logger.info("a 2026-07-28 request was refused: %s", error.message)
        return error

    async def on_request(self, method: str, params: Any, request_id: RequestId) -> Any:
        modern = self._stateless(method, params)
        if modern is not None:
            return await modern.on_request(method, params, request_id)
        assert self.legacy is not None
        return await self.legacy.on_request(method, params, request_id)

    async def answer(self, method: str, params: Any, request_id: RequestId) -> Any:
        """:meth:`on_request`'s answer as plain JSON data, for a caller that hands it over
        without encoding it (``connect_direct``)."""
        modern = self._stateless(method, params)
        if modern is not None:
            return await modern.serve_request(
                method, params, request_id, modern._notify, json_ready=True
            )
        assert self.legacy is not None
        return json_data(await self.legacy.on_request(method, params, request_id))

    def close(self) -> None:
        for side in (self.legacy, self.modern):
            if side is not None:
                side.close()

    def end_of_input(self) -> None:
        """The connection has no more input (the engine calls this at EOF): listen streams
        end now, with their final result; other handlers get the engine's grace."""
        if self.modern is not None:
            self.modern.end_listens()

    async def on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/cancelled":
            legacy = self.legacy
            if legacy is not None and legacy.package is not None:
                # the session's built-in cancels; the user's on_cancelled hears of it too
                await legacy.on_notification(method, params)
                return
            engine = (self.legacy or self.modern).engine  # type: ignore[union-attr]
            modern = self.modern
            if modern is not None and modern.middleware is not None:  # (a stateless-era cancel)

                async def cancel(ctx: Any) -> None:
                    _cancel_incoming(engine, ctx.params)

                meta = modern_meta(params)
                version = meta.get(PROTOCOL_VERSION_KEY) if meta is not None else None
                await modern.middleware.run(stateless_context(modern, method, params, None, version), cancel)
                return
            _cancel_incoming(engine, params)
            return
        if self.legacy is not None:
            await self.legacy.on_notification(method, params)


def _cancel_incoming(engine: Any, params: Any) -> None:
    """Cancel the request a ``notifications/cancelled`` names (stateless era, or before
    the handshake)."""
    if engine is not None and isinstance(params, dict):
        engine.cancel_incoming(params.get("requestId"))


def refuse_stateless(package: str, supported: list[str], params: Any) -> RpcError:
    """-32022 for a 2026-07-28 request (``server/discover``, or a version in ``_meta``) to a
    server whose package speaks only the handshake era: the error names the versions it
    does speak (``data.supported``: a dual-era client falls back to ``initialize``), its
    package, and how to serve 2026-07-28 too."""
    meta = modern_meta(params)
    requested = meta.get(PROTOCOL_VERSION_KEY) if meta is not None else None
    shown = clip(requested) if isinstance(requested, str) else "2026-07-28"
    return RpcError(
        UNSUPPORTED_PROTOCOL_VERSION,
        f"Unsupported protocol version {shown}: this server's package {package} speaks only "
        f"{', '.join(supported)} (the handshake era: send initialize first); to serve "
        f"2026-07-28 from it too, start the server with {BOTH_ERAS_OPTION}=True (run_stdio, "
        "serve, http_app), which adds the runtime's bundled 2026-07-28 package",
        {"supported": supported, **({"requested": requested} if requested is not None else {})},
    )


MODERN_OPTIONS = (
    "state_key",
    "state_keys",
    "state_ttl",
    "single_use_state",
    "used_states",
    "cache",
    "server_info_in_results",
    "resource_subscriptions",
    "task_registry",
)


@dataclass(frozen=True)
class Eras:
    """What a server serves: the generated packages of each era, the change feed both
    eras share, and the options of the handshake sessions and of the stateless server."""

    handshake: list[ProtocolPackage]
    stateless: list[ProtocolPackage]
    changes: ChangeFeed
    session_options: dict[str, Any]
    modern_options: dict[str, Any]

    @classmethod
    def of(
        cls,
        handlers: object,
        *,
        packages: Sequence[ProtocolPackage | ModuleType] | None = None,
        changes: ChangeFeed | None = None,
        both_eras: bool = False,
        **options: Any,
    ) -> Eras:
        """``packages`` defaults to every revision generated beside the handlers' own
        package; pass a subset to serve fewer (only 2026-07-28, say). ``both_eras=True``
        serves the era none of them speaks with the runtime's bundled ``mcp_generated``
        packages: a lone vendored package speaks only its own revision."""
        wrapped = (
            [ProtocolPackage.of(p) for p in packages]
            if packages
            else generated_beside(package_of(handlers))
        )
        if both_eras:
            wrapped = with_bundled_eras(wrapped)
        modern_options = {name: options.pop(name) for name in MODERN_OPTIONS if name in options}
        return cls(
            handshake=[p for p in wrapped if p.era == "handshake"],
            stateless=[p for p in wrapped if p.era == "stateless"],
            changes=changes if changes is not None else ChangeFeed(),
            session_options=options,
            modern_options=modern_options,
        )

    def handshake_session(self, handlers: object) -> ServerSession | None:
        """A new handshake-era session (one per connection), if that era is served."""
        if not self.handshake:
            return None
        return ServerSession(
            handlers, packages=self.handshake, changes=self.changes, **self.session_options
        )

    def stateless_server(self, handlers: object) -> StatelessServer | None:
        """The stateless server (one per process), if that era is served."""
        if not self.stateless:
            return None
        return StatelessServer(
            handlers,
            packages=self.stateless,
            changes=self.changes,
            **self.modern_options,
            **self.session_options,
        )


def with_handler_defaults(handlers: object, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` over the handler object's own defaults: an object with a
    ``server_defaults()`` method (``McpApp``: its name and version, its change feed)
    supplies the server options not given."""
    defaults = getattr(handlers, "server_defaults", None)
    if not callable(defaults):
        return options
    return {**defaults(), **options}


def build_router(handlers: object, **options: Any) -> EraRouter:
    """One dispatcher for a connection, serving every era the packages cover (see
    :meth:`Eras.of` for ``packages`` and ``changes``)."""
    eras = Eras.of(handlers, **with_handler_defaults(handlers, options))
    return EraRouter(eras.handshake_session(handlers), eras.stateless_server(handlers))
