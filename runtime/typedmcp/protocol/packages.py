"""Generated protocol packages as the runtime uses them: one revision's dispatch table and
models (:class:`ProtocolPackage`), the package a handler object comes from, and the
revisions generated beside it."""

from __future__ import annotations

import importlib
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

from ..engine.jsonrpc import CapabilityError as CapabilityError
from .stubs import Handlers, Outbound


class VersionError(RuntimeError):
    """The peer answered with a protocol revision this side cannot speak."""


@dataclass(frozen=True)
class ProtocolPackage:
    """A generated package of one revision, as the runtime uses it."""

    version: str
    era: str
    module: ModuleType
    dispatch: ModuleType
    models: ModuleType

    @classmethod
    def of(cls, package: ModuleType | ProtocolPackage) -> ProtocolPackage:
        """Wrap a generated package module (``mcp_generated.v2025_06_18``)."""
        if isinstance(package, ProtocolPackage):
            return package
        name = package.__name__
        return cls(
            version=str(package.PROTOCOL_VERSION),
            era=str(package.ERA),
            module=package,
            dispatch=importlib.import_module(f"{name}.dispatch"),
            models=importlib.import_module(f"{name}.models"),
        )

    @property
    def accepts_batches(self) -> bool:
        """Whether the revision defines JSON-RPC batches (only 2025-03-26 does)."""
        return "JSONRPCBatchRequest" in self.models.__all__

    def log_levels(self) -> tuple[str, ...]:
        """The schema's ``LoggingLevel`` values (in the schema's order, not by severity)."""
        return tuple(typing.get_args(self.models.LoggingLevel.__value__))


# RFC 5424 severities, least severe first: the order MCP's log levels follow.
SEVERITY = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def severity(level: str) -> int:
    """Rank of a log level (unknown levels rank as the most severe)."""
    return SEVERITY.index(level) if level in SEVERITY else len(SEVERITY)


def package_of(handlers: object) -> ModuleType:
    """The generated package a handler object's class comes from."""
    for klass in type(handlers).__mro__:
        module = klass.__module__
        if module.endswith((".server", ".client")) and issubclass(klass, Handlers):
            return importlib.import_module(module.rsplit(".", 1)[0])
    raise TypeError(f"{type(handlers).__name__} does not derive from a generated handler class")


def client_package(client: type) -> ModuleType:
    """The generated package a ``Client`` class (or a subclass of one) comes from."""
    for klass in client.__mro__:
        if klass.__module__.endswith(".client") and issubclass(klass, Outbound) and klass is not Outbound:
            return importlib.import_module(klass.__module__.rsplit(".", 1)[0])
    raise TypeError(
        f"client={client.__qualname__} is not a generated Client class "
        "(pass your package's, e.g. client=acme_mcp.client.Client)"
    )


def own_package(handlers: object | None, client: type | None) -> ModuleType | None:
    """The package a client's code is typed with: its ``Client`` class's, else its handlers'
    (both must be of the same package); None when neither is given."""
    if client is None:
        return package_of(handlers) if handlers is not None else None
    own = client_package(client)
    if handlers is not None and package_of(handlers) is not own:
        raise TypeError(
            f"client={client.__qualname__} is of {own.__name__}, but the handlers "
            f"({type(handlers).__qualname__}) are of {package_of(handlers).__name__}: "
            "use one package's Client and ClientHandlers"
        )
    return own


#: The generated packages the runtime ships (every revision), in the ``typedmcp`` distribution.
BUNDLED_PACKAGES = "mcp_generated"


def generated_beside(own: ModuleType) -> list[ProtocolPackage]:
    """Every revision generated beside ``own`` (its parent's ``REVISIONS``), newest first;
    a lone vendored package offers its own revision only."""
    parent_name = own.__name__.rpartition(".")[0]
    revisions: Mapping[str, str] = {}
    if parent_name:
        revisions = getattr(importlib.import_module(parent_name), "REVISIONS", {}) or {}
    packages = {str(own.PROTOCOL_VERSION): ProtocolPackage.of(own)}
    for revision, name in revisions.items():
        if revision not in packages:
            packages[revision] = ProtocolPackage.of(importlib.import_module(f"{parent_name}.{name}"))
    return sorted(packages.values(), key=lambda p: p.version, reverse=True)


def with_bundled_eras(packages: list[ProtocolPackage]) -> list[ProtocolPackage]:
    """``packages`` plus, for an era none of them speaks, every revision of that era the
    runtime ships (:data:`BUNDLED_PACKAGES`), newest first: a vendored 2025-06-18 package
    gains 2026-07-28, a vendored 2026-07-28 one the handshake-era revisions."""
    eras = {p.era for p in packages}
    versions = {p.version for p in packages}
    bundled = importlib.import_module(BUNDLED_PACKAGES)
    revisions: Mapping[str, str] = bundled.REVISIONS
    added = []
    for revision, name in revisions.items():
        module = importlib.import_module(f"{BUNDLED_PACKAGES}.{name}")
        if str(module.ERA) not in eras and revision not in versions:
            added.append(ProtocolPackage.of(module))
    return sorted([*packages, *added], key=lambda p: p.version, reverse=True)


def runtime_version() -> str:
    """This runtime's version (what a client reports in ``clientInfo``)."""
    from .. import __version__

    return __version__
