"""Which revisions a client offers (``protocol=``: ``"auto"``, a revision, a generated
package, or a list), and what negotiation learned about each server for the rest of the process
(:data:`ERA_MEMORY`)."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

from .packages import ProtocolPackage, generated_beside, own_package

AUTO = "auto"


STATELESS = "stateless"


HANDSHAKE = "handshake"


DEFAULT_PACKAGES = "mcp_generated"


ProtocolChoice = ModuleType | Sequence[ModuleType] | str
"""``"auto"``, one revision (``"2025-11-25"``: the package of that revision generated beside
the client's), one generated package, or a list of them."""


def choose_packages(
    protocol: ProtocolChoice, handlers: object | None, client: type | None = None
) -> tuple[list[ProtocolPackage], str]:
    """(the packages to negotiate among, ``"auto"`` or ``"pinned"``). ``"auto"`` offers
    every revision generated beside the package of ``client`` (a generated ``Client``
    class) or of ``handlers``, else beside the newest of ``mcp_generated``."""
    if isinstance(protocol, str):
        own = own_package(handlers, client)
        if own is None:
            folder = importlib.import_module(DEFAULT_PACKAGES)
            newest = max(folder.REVISIONS)
            own = importlib.import_module(f"{DEFAULT_PACKAGES}.{folder.REVISIONS[newest]}")
        beside = generated_beside(own)
        if protocol == AUTO:
            return beside, AUTO
        pinned = [package for package in beside if package.version == protocol]
        if not pinned:
            known = ", ".join(repr(package.version) for package in beside)
            raise ValueError(
                f"protocol must be 'auto', a revision generated beside {own.__name__} ({known}), "
                f"a generated package or a list of them, not {protocol!r}"
            )
        return pinned, "pinned"
    modules = [protocol] if isinstance(protocol, ModuleType) else list(protocol)
    packages = sorted((ProtocolPackage.of(p) for p in modules), key=lambda p: p.version, reverse=True)
    return packages, "pinned"


class EraMemory:
    """What negotiation learned about each server in this process (HC-10: cache the era per
    origin), keyed by where the server is (its URL, or its command line).

    ``handshake``: the server refused the ``server/discover`` probe, so the next connection
    initializes at once instead of probing again (against a server that never answers the
    probe, that saves ``probe_timeout``). ``sse``: the URL served only the deprecated
    HTTP+SSE transport, so ``connect_http`` goes there first. A verdict that stops holding
    is dropped and negotiation starts over.
    """

    def __init__(self) -> None:
        self._verdicts: dict[str, str] = {}

    def recall(self, origin: str | None) -> str | None:
        return self._verdicts.get(origin) if origin else None

    def learn(self, origin: str | None, verdict: str | None) -> None:
        """Remember ``verdict`` (``"handshake"``, ``"sse"``) for ``origin``; None forgets."""
        if not origin:
            return
        if verdict is None:
            self._verdicts.pop(origin, None)
        else:
            self._verdicts[origin] = verdict

    def clear(self) -> None:
        self._verdicts.clear()


#: The process-wide :class:`EraMemory` of every client (``remember_era=False`` opts out).
ERA_MEMORY = EraMemory()
