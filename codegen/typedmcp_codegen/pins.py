"""The known schema revisions: upstream URL, sha256, dialect and era of each.

A released revision is pinned: its schema must have the sha256 of ``pins.json``. ``draft``
floats: it has no sha256 (upstream changes it), so any draft schema is taken as given, with
a notice, and its URL names the moving branch.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .errors import CodegenError


REVISION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def package_name(revision: str) -> str:
    """The Python package name of a revision: ``2025-06-18`` -> ``v2025_06_18``."""
    name = re.sub(r"\W", "_", revision)
    return f"v{name}" if name[:1].isdigit() else name


def check_revision_name(revision: str) -> None:
    """Refuse names that cannot be a folder, a package name and a header line."""
    package = package_name(revision)
    if (
        not REVISION_NAME.fullmatch(revision)
        or not package.isidentifier()
        or keyword.iskeyword(package)
    ):
        raise CodegenError(
            f"{revision!r} cannot name a protocol revision",
            "use letters, digits, '.', '_' and '-' (at most 64, starting with a letter or "
            "digit, not a Python keyword), e.g. 2026-12-01",
        )


@dataclass(frozen=True)
class Pin:
    """One known protocol revision of the official MCP schema.

    ``sha256`` is None for a floating revision (``draft``): then ``era`` and ``dialect``
    say what it had when last looked at, and nothing is checked against them.
    """

    revision: str
    released: bool
    era: str
    dialect: str
    sha256: str | None
    url: str

    @property
    def floating(self) -> bool:
        """True when the revision is not pinned to bytes (upstream still changes it)."""
        return self.sha256 is None


@dataclass(frozen=True)
class PinTable:
    """Every pinned revision, in release order, and which one ``latest`` means."""

    upstream_commit: str
    latest: str
    pins: tuple[Pin, ...]

    def find(self, revision: str) -> Pin | None:
        """The pin for ``revision`` (``latest`` resolves), or None when it is not pinned."""
        wanted = self.latest if revision == "latest" else revision
        return next((pin for pin in self.pins if pin.revision == wanted), None)

    @property
    def released(self) -> tuple[Pin, ...]:
        """The released revisions (not ``draft``), oldest first."""
        return tuple(pin for pin in self.pins if pin.released)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(pin.revision for pin in self.pins)


def load_pins() -> PinTable:
    """Read ``pins.json`` shipped with the package."""
    text = resources.files("typedmcp_codegen.schema").joinpath("pins.json").read_text("utf-8")
    return parse_pins(json.loads(text))


def parse_pins(document: dict[str, Any]) -> PinTable:
    """Build a :class:`PinTable` from the parsed ``pins.json`` document."""
    try:
        pins = tuple(Pin(**entry) for entry in document["revisions"])
        table = PinTable(document["upstream_commit"], document["latest"], pins)
    except (KeyError, TypeError) as exc:
        raise CodegenError(
            f"pins.json is malformed ({exc})",
            "reinstall mcp-codegen; pins.json is package data, not a user file",
        ) from exc
    latest = table.find(table.latest)
    if latest is None or latest.floating:
        raise CodegenError(
            f"pins.json names latest={table.latest!r}, which is not pinned",
            "add the revision to pins.json or correct 'latest'",
        )
    floating_releases = [pin.revision for pin in table.released if pin.floating]
    if floating_releases:
        raise CodegenError(
            f"pins.json gives released revisions no sha256: {', '.join(floating_releases)}",
            "a released revision is pinned: add the sha256 of its official schema",
        )
    return table
