"""The pinned extension schemas (``schema/extensions/pins.json``): which extensions there are,
where each schema came from, its sha256 and licence, and how to load it verified.

An extension's schema is looked up in ``<schema-dir>/extensions/<file>`` when a schema folder
is named (``--schema-dir``, ``MCP_CODEGEN_SCHEMA_DIR``) and holds it, else in the copy shipped
with mcp-codegen; wherever it comes from, its bytes must have the pinned sha256.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import CodegenError
from .load import (
    SHIPPED_PACKAGE,
    SHIPPED_SUFFIX,
    LoadedSchema,
    SchemaSource,
    meta_validate,
    parse_json,
    read_schema_file,
)

EXTENSIONS_FOLDER = "extensions"
EXTENSION_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")
#: What ``--extensions`` takes besides names: every pinned extension, or none.
ALL_EXTENSIONS = "all"
NO_EXTENSIONS = "none"
SENDER_SIDES = ("client", "server")


@dataclass(frozen=True)
class ExtensionPin:
    """One extension whose schema is pinned: its short ``name`` (the package name), the
    identifier it has in ``capabilities.extensions``, and its schema's origin and sha256.

    ``revision``: the core protocol revision it extends (the methods that revision defines are
    the core's, even where the extension's schema repeats them); ``senders``: which side sends
    the extension's requests and its notifications, when the extension says so for all of
    them (None: the schema does not say; every method is then ``Direction.BOTH``).
    """

    name: str
    identifier: str
    title: str
    version: str
    schema: str
    dialect: str
    sha256: str
    url: str
    license: str
    license_sha256: str
    license_spdx: str
    package: str | None = None
    repository: str | None = None
    path: str | None = None
    commit: str | None = None
    revision: str | None = None
    senders: dict[str, str] | None = None
    notes: str = ""


@dataclass(frozen=True)
class UnpublishedExtension:
    """An extension the runtime supports without a published schema (nothing to generate)."""

    name: str
    identifier: str
    title: str
    notes: str


@dataclass(frozen=True)
class ExtensionTable:
    """Every pinned extension, by name, and the known ones that publish no schema."""

    pins: tuple[ExtensionPin, ...]
    unpublished: tuple[UnpublishedExtension, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(pin.name for pin in self.pins)

    def find(self, name: str) -> ExtensionPin:
        """The pin named ``name``; a clear error for an unknown or schema-less extension."""
        for pin in self.pins:
            if name in (pin.name, pin.identifier):
                return pin
        for known in self.unpublished:
            if name in (known.name, known.identifier):
                raise CodegenError(
                    f"extension {name!r} publishes no schema, so there is nothing to generate "
                    f"({known.notes})",
                    f"pick one of the pinned extensions: {', '.join(self.names)}",
                )
        raise CodegenError(
            f"unknown extension {name!r}; pinned extensions: {', '.join(self.names)}",
            "pick one of those (mcp-codegen --list shows them), or pin the extension's "
            "schema in schema/extensions/pins.json",
        )

    def select(self, text: str) -> tuple[ExtensionPin, ...]:
        """The pins a ``--extensions`` value names: ``all``, ``none`` or ``a,b``."""
        names = [part.strip() for part in text.split(",") if part.strip()]
        if names == [ALL_EXTENSIONS]:
            return self.pins
        if names == [NO_EXTENSIONS]:
            return ()
        if not names or ALL_EXTENSIONS in names or NO_EXTENSIONS in names:
            raise CodegenError(
                f"--extensions {text!r} names no extension",
                f"give a comma-separated list of {', '.join(self.names)}, or "
                f"{ALL_EXTENSIONS} or {NO_EXTENSIONS} on its own",
            )
        chosen = {self.find(name).name for name in names}
        return tuple(pin for pin in self.pins if pin.name in chosen)


def load_extension_pins() -> ExtensionTable:
    """Read ``extensions/pins.json`` shipped with the package."""
    folder = resources.files(SHIPPED_PACKAGE).joinpath(EXTENSIONS_FOLDER)
    return parse_extension_pins(json.loads(folder.joinpath("pins.json").read_text("utf-8")))


def parse_extension_pins(document: dict[str, Any]) -> ExtensionTable:
    """Build an :class:`ExtensionTable` from the parsed ``extensions/pins.json``."""
    try:
        pins = tuple(ExtensionPin(**entry) for entry in document["extensions"])
        unpublished = tuple(
            UnpublishedExtension(entry["name"], entry["identifier"], entry["title"], entry["notes"])
            for entry in document.get("unpublished", [])
        )
    except (KeyError, TypeError) as exc:
        raise CodegenError(
            f"extensions/pins.json is malformed ({exc})",
            "reinstall mcp-codegen; pins.json is package data, not a user file",
        ) from exc
    for pin in pins:
        bad_senders = pin.senders is not None and (
            set(pin.senders) != {"requests", "notifications"}
            or not set(pin.senders.values()) <= set(SENDER_SIDES)
        )
        if not EXTENSION_NAME.fullmatch(pin.name) or bad_senders:
            raise CodegenError(
                f"extensions/pins.json: extension {pin.name!r} has a bad name or senders",
                "a name is a lower-case Python identifier; senders maps requests and "
                "notifications to client or server",
            )
    return ExtensionTable(pins, unpublished)


def load_extension_schema(pin: ExtensionPin, source: SchemaSource) -> LoadedSchema:
    """Find, verify (sha256, dialect) and meta-validate the schema of one extension."""
    raw, origin = _extension_bytes(pin, source)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != pin.sha256:
        shipped = origin.endswith(SHIPPED_SUFFIX)
        raise CodegenError(
            f"{origin}: sha256 {digest} does not match the pin {pin.sha256} of extension "
            f"{pin.name}",
            "reinstall mcp-codegen (its shipped schema file was changed)"
            if shipped
            else f"use the official schema of the extension ({pin.url}); if upstream really "
            "changed, update schema/extensions/pins.json",
        )
    document = lift_nested_defs(parse_json(raw, origin), origin)
    if document.get("$schema") != pin.dialect:
        raise CodegenError(
            f"{origin}: declares dialect {document.get('$schema')}, the pin says {pin.dialect}",
            "use the official schema file of the extension",
        )
    meta_validate(document, origin, None)
    return LoadedSchema(pin.name, digest, True, origin, document)


def lift_nested_defs(document: dict[str, Any], origin: str) -> dict[str, Any]:
    """Move the ``$defs`` nested in definitions up to the document's own.

    ext-apps' schema writes each definition as a document of its own (with its ``$schema``
    and ``$defs``, but no ``$id``), so a nested ``#/$defs/__schema0`` means that definition's
    ``__schema0``; read as one document, the reference points at nothing. Lifted to the top
    (they are the same schema wherever they repeat), every reference resolves as written.
    Two different nested definitions of one name are refused.
    """
    top = document.get("$defs")
    if not isinstance(top, dict) or not any(
        isinstance(d, dict) and isinstance(d.get("$defs"), dict) for d in top.values()
    ):
        return document
    lifted = dict(document)
    merged = dict(top)
    for name, definition in top.items():
        nested = definition.get("$defs") if isinstance(definition, dict) else None
        if not isinstance(nested, dict):
            continue
        merged[name] = {key: value for key, value in definition.items() if key != "$defs"}
        for inner, schema in nested.items():
            if inner in top or (inner in merged and merged[inner] != schema):
                raise CodegenError(
                    f"{origin}: definition {name} nests a $defs/{inner} that differs from "
                    "another of that name",
                    "report this schema; its nested definitions cannot be lifted",
                )
            merged[inner] = schema
    lifted["$defs"] = dict(sorted(merged.items()))
    return lifted


def _extension_bytes(pin: ExtensionPin, source: SchemaSource) -> tuple[bytes, str]:
    if source.schema_dir is not None:
        candidate = Path(source.schema_dir) / EXTENSIONS_FOLDER / pin.schema
        if candidate.is_file():
            return read_schema_file(candidate), str(candidate)
    shipped = resources.files(SHIPPED_PACKAGE).joinpath(EXTENSIONS_FOLDER).joinpath(pin.schema)
    if not shipped.is_file():
        raise CodegenError(
            f"no schema file for extension {pin.name}: {shipped} is missing",
            f"reinstall mcp-codegen, or put the official file ({pin.url}) at "
            f"<schema-dir>/{EXTENSIONS_FOLDER}/{pin.schema} and pass --schema-dir",
        )
    return shipped.read_bytes(), f"{shipped}{SHIPPED_SUFFIX}"

