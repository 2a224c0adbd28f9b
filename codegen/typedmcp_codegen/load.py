"""Stage 1: find the schema of one revision, verify its sha256, parse and meta-validate it.

Lookup order: what the user names first (``--schema FILE``, then a schema directory
``<revision>/schema.json`` from ``--schema-dir`` or ``MCP_CODEGEN_SCHEMA_DIR``), then the
schemas shipped inside the package (every released revision), then the local cache, then a
download of the upstream URL (stored in the cache after verification). A pinned revision's
bytes are checked against its sha256 wherever they come from; ``draft`` floats (no sha256,
never cached).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

from .document import definitions_key, unresolved_references
from .errors import CodegenError
from .pins import REVISION_NAME, Pin, PinTable, check_revision_name

if TYPE_CHECKING:
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable

SCHEMA_DIR_ENV = "MCP_CODEGEN_SCHEMA_DIR"
CACHE_DIR_ENV = "MCP_CODEGEN_CACHE_DIR"
OFFLINE_ENV = "MCP_CODEGEN_OFFLINE"
DEBUG_ENV = "MCP_CODEGEN_DEBUG"
#: Every environment variable mcp-codegen reads; another ``MCP_CODEGEN_*`` is a typo.
ENV_PREFIX = "MCP_CODEGEN_"
KNOWN_ENV = (SCHEMA_DIR_ENV, CACHE_DIR_ENV, OFFLINE_ENV, DEBUG_ENV)
SCHEMA_DIR_FLAG = "--schema-dir"
DOWNLOAD_TIMEOUT_SECONDS = 15.0
#: The package whose data holds ``pins.json``, ``<revision>/schema.json`` and ``LICENSE``.
SHIPPED_PACKAGE = "typedmcp_codegen.schema"
SHIPPED_SUFFIX = " (shipped with mcp-codegen)"


@dataclass(frozen=True)
class SchemaSource:
    """Where to look for schema files, in order (the shipped schemas after ``schema_dir``)."""

    schema_file: Path | None = None
    schema_dir: Path | None = None
    cache_dir: Path | None = None
    allow_download: bool = True
    use_shipped: bool = True
    #: Who named ``schema_dir`` (``--schema-dir``, ``MCP_CODEGEN_SCHEMA_DIR``): a folder
    #: the user asked for must hold the revision (no falling back to other places); None
    #: (a source built in code) looks further.
    schema_dir_named_by: str | None = None

    @classmethod
    def from_environment(
        cls,
        schema_file: Path | None = None,
        schema_dir: Path | None = None,
        offline: bool = False,
    ) -> SchemaSource:
        """Fill unset places from ``MCP_CODEGEN_*`` variables and the XDG cache. A schema
        folder that is not there (from ``--schema-dir`` or the environment) is refused."""
        named_by = SCHEMA_DIR_FLAG if schema_dir is not None else None
        if schema_dir is None and os.environ.get(SCHEMA_DIR_ENV):
            schema_dir, named_by = Path(os.environ[SCHEMA_DIR_ENV]), SCHEMA_DIR_ENV
        if schema_dir is not None and named_by is not None:
            check_schema_dir(schema_dir, named_by)
        return cls(
            schema_file=schema_file,
            schema_dir=schema_dir,
            cache_dir=default_cache_dir(),
            allow_download=not offline and not os.environ.get(OFFLINE_ENV),
            schema_dir_named_by=named_by,
        )


def _naming(named_by: str, folder: Path) -> str:
    return f"{named_by} {folder}" if named_by.startswith("--") else f"{named_by}={folder}"


def _leave_out(named_by: str) -> str:
    return f"leave out {named_by}" if named_by.startswith("--") else f"unset {named_by}"


def check_schema_dir(folder: Path, named_by: str) -> None:
    """A schema folder the user named must be a folder; CodegenError otherwise."""
    if folder.is_dir():
        return
    what = "is a file, not a folder" if folder.exists() else "does not exist"
    raise CodegenError(
        f"{_naming(named_by, folder)}: {what}",
        f"point {named_by} at a folder holding <revision>/schema.json (e.g. "
        f"{folder / '2025-06-18' / 'schema.json'}), or {_leave_out(named_by)} to use the "
        "schemas shipped with mcp-codegen",
    )


def revisions_in(folder: Path) -> list[str]:
    """The revisions a schema folder holds (``<revision>/schema.json``), sorted."""
    try:
        return sorted(d.name for d in folder.iterdir() if (d / "schema.json").is_file())
    except OSError:
        return []


def unknown_environment(environ: Mapping[str, str] | None = None) -> list[str]:
    """A warning for each ``MCP_CODEGEN_*`` variable mcp-codegen does not read (a typo such
    as ``MCP_CODEGEN_SCHEMADIR``), naming the closest one it does read."""
    found = os.environ if environ is None else environ
    warnings = []
    for name in sorted(found):
        if not name.startswith(ENV_PREFIX) or name in KNOWN_ENV:
            continue
        # (compared without the prefix they share, which would make any name look close)
        suffixes = {known.removeprefix(ENV_PREFIX): known for known in KNOWN_ENV}
        close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), suffixes, n=1, cutoff=0.6)
        hint = (
            f"did you mean {suffixes[close[0]]}?" if close else f"it reads {', '.join(KNOWN_ENV)}"
        )
        warnings.append(f"{name} is set, but mcp-codegen reads no such variable; {hint}")
    return warnings


@dataclass(frozen=True)
class LoadedSchema:
    """A verified, parsed, meta-validated schema document of one revision."""

    revision: str
    sha256: str
    pinned: bool
    origin: str
    document: dict[str, Any]


def default_cache_dir() -> Path:
    """``$MCP_CODEGEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/mcp-codegen``, else ``~/.cache``."""
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcp-codegen"


def shipped_schema_path(pin: Pin) -> Traversable | None:
    """The schema of a pinned revision shipped inside the package, if it is one of those.

    A floating revision (``draft``) is never shipped: its bytes move upstream. (An editable
    install reads the repository's ``schema/``, which also holds a copy of the draft as a
    test vector; that copy is not the package's.)
    """
    if pin.floating:
        return None
    candidate = resources.files(SHIPPED_PACKAGE).joinpath(pin.revision).joinpath("schema.json")
    return candidate if candidate.is_file() else None


def load_schema(revision: str, pins: PinTable, source: SchemaSource) -> LoadedSchema:
    """Find, verify and validate the schema of ``revision`` (``latest`` resolves).

    A floating revision (``draft``) is loaded as given: ``pinned`` is False.
    """
    pin = pins.find(revision)
    check_revision_name(pin.revision if pin else revision)
    if pin is None and source.schema_file is None:
        known = ", ".join(pins.names)
        raise CodegenError(
            f"unknown revision {revision!r}; pinned revisions: {known}, latest",
            f"pick one of those, or generate an unpinned revision with "
            f"--schema FILE --version {revision}",
        )
    name = pin.revision if pin else revision
    raw, origin = _find_bytes(name, pin, source)
    digest = hashlib.sha256(raw).hexdigest()
    pinned = pin if pin is not None and not pin.floating else None
    if pinned is not None and digest != pinned.sha256:
        raise CodegenError(
            f"{origin}: sha256 {digest} does not match the pin {pinned.sha256} "
            f"for revision {name}",
            "reinstall mcp-codegen (its shipped schema file was changed)"
            if origin.endswith(SHIPPED_SUFFIX)
            else "use the official schema file of that revision (it may be truncated, edited "
            "or from another revision); if upstream really changed, update schema/pins.json",
        )
    document = parse_json(raw, origin)
    meta_validate(document, origin, pinned)
    return LoadedSchema(name, digest, pinned is not None, origin, document)


def load_schema_file(path: Path, pins: PinTable) -> LoadedSchema:
    """A schema file on its own (``mcp-codegen diff``): the pinned revision whose sha256 it
    has, else an unpinned schema named after its folder (``.../draft/schema.json``)."""
    raw = read_schema_file(path)
    digest = hashlib.sha256(raw).hexdigest()
    pin = next((p for p in pins.pins if p.sha256 == digest), None)
    document = parse_json(raw, str(path))
    meta_validate(document, str(path), pin)
    folder = path.resolve().parent.name
    revision = pin.revision if pin else folder if REVISION_NAME.fullmatch(folder) else "unpinned"
    return LoadedSchema(revision, digest, pin is not None, str(path), document)


def parse_json(raw: bytes, origin: str) -> dict[str, Any]:
    """Parse a schema file, naming the file and position on failure."""
    try:
        document = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CodegenError(
            f"{origin}: not UTF-8 text ({exc.reason} at byte {exc.start})",
            "pass the schema.json file of the revision, not another file",
        ) from exc
    except json.JSONDecodeError as exc:
        raise CodegenError(
            f"{origin}: invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            "pass an intact schema.json (re-download or re-copy the file)",
        ) from exc
    if not isinstance(document, dict):
        raise CodegenError(
            f"{origin}: the top level is a JSON {type(document).__name__}, not an object",
            "pass the schema.json file of the revision",
        )
    return document


def meta_validate(document: dict[str, Any], origin: str, pin: Pin | None) -> None:
    """Check the document against the JSON Schema dialect it declares."""
    dialect = document.get("$schema")
    if not isinstance(dialect, str):
        raise CodegenError(
            f"{origin}: no '$schema' keyword, so its JSON Schema dialect is unknown",
            "pass an MCP schema.json; it declares its dialect in '$schema'",
        )
    if pin is not None and dialect != pin.dialect:
        raise CodegenError(
            f"{origin}: declares dialect {dialect}, the pin says {pin.dialect}",
            "use the official schema file of that revision",
        )
    validator_class = jsonschema.validators.validator_for(document, default=None)
    if validator_class is None:
        raise CodegenError(
            f"{origin}: unsupported JSON Schema dialect {dialect}",
            "MCP schemas use draft-07 or 2020-12; check the '$schema' keyword",
        )
    errors = sorted(
        validator_class(validator_class.META_SCHEMA).iter_errors(document),
        key=lambda error: list(error.absolute_path),
    )
    if errors:
        lines = [f"/{'/'.join(str(p) for p in e.absolute_path)}: {e.message}" for e in errors]
        shown = "\n    ".join(lines[:10])
        more = f"\n    ... and {len(lines) - 10} more" if len(lines) > 10 else ""
        raise CodegenError(
            f"{origin}: fails meta-validation against {dialect}:\n    {shown}{more}",
            "fix the schema at the JSON pointers above, or use the official file",
        )
    if not isinstance(document.get("$defs", document.get("definitions")), dict):
        raise CodegenError(
            f"{origin}: has neither '$defs' nor 'definitions'",
            "pass an MCP schema.json; its types live under '$defs' or 'definitions'",
        )
    unresolved = unresolved_references(document)
    if unresolved:
        shown = "\n    ".join(unresolved[:10])
        more = f"\n    ... and {len(unresolved) - 10} more" if len(unresolved) > 10 else ""
        raise CodegenError(
            f"{origin}: {len(unresolved)} $ref(s) point at no definition:\n    {shown}{more}",
            f"make every $ref name a definition of the schema (#/{definitions_key(document)}/"
            "<Name>), or add the missing definitions",
        )


def _find_bytes(name: str, pin: Pin | None, source: SchemaSource) -> tuple[bytes, str]:
    tried: list[str] = []
    if source.schema_file is not None:
        return read_schema_file(source.schema_file), str(source.schema_file)
    if source.schema_dir is not None:
        candidate = source.schema_dir / name / "schema.json"
        if candidate.is_file():
            return read_schema_file(candidate), str(candidate)
        if source.schema_dir_named_by is not None:  # the folder the user asked for
            named_by, present = source.schema_dir_named_by, revisions_in(source.schema_dir)
            holds = f"it holds {', '.join(present[:10])}" if present else "it holds no <revision>/schema.json"
            raise CodegenError(
                f"{_naming(named_by, source.schema_dir)} has no {name}/schema.json ({holds})",
                f"put the official schema of {name} at {candidate}, or {_leave_out(named_by)} "
                "to use the schemas shipped with mcp-codegen",
            )
        tried.append(f"{candidate} (missing)")
    assert pin is not None
    if source.use_shipped:
        shipped = shipped_schema_path(pin)
        if shipped is not None:
            return shipped.read_bytes(), f"{shipped}{SHIPPED_SUFFIX}"
    if pin.sha256 is not None and source.cache_dir is not None:
        cached = source.cache_dir / f"{pin.sha256}.json"
        if cached.is_file():
            raw = read_schema_file(cached)
            if hashlib.sha256(raw).hexdigest() == pin.sha256:
                return raw, str(cached)
            tried.append(f"{cached} (corrupt: wrong sha256, ignored)")
        else:
            tried.append(f"{cached} (not cached)")
    if source.allow_download:
        try:
            raw = _download(pin.url)
        except OSError as exc:
            tried.append(f"{pin.url} ({exc})")
        else:
            if (
                pin.sha256 is not None
                and hashlib.sha256(raw).hexdigest() == pin.sha256
                and source.cache_dir
            ):
                _store_in_cache(source.cache_dir, pin.sha256, raw)
            return raw, pin.url
    else:
        tried.append(f"{pin.url} (download disabled)")
    raise CodegenError(
        f"no schema file for revision {name}; tried:\n    " + "\n    ".join(tried),
        f"pass --schema-dir DIR (or set {SCHEMA_DIR_ENV}) where DIR/{name}/schema.json "
        f"is the official file, or --schema FILE, or run once with network access",
    )


def read_schema_file(path: Path) -> bytes:
    """The bytes of a schema file, or a :class:`CodegenError` naming it and what to check."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise CodegenError(
            f"cannot read schema file {path}: {exc.strerror or exc}",
            "check the path and its permissions",
        ) from exc


def _download(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "mcp-codegen"})
    try:
        with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:
            data: bytes = response.read()
            return data
    except urllib.error.HTTPError as exc:
        raise OSError(f"HTTP {exc.code} {exc.reason}") from exc
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from exc


def _store_in_cache(cache_dir: Path, sha256: str, raw: bytes) -> None:
    """Atomically store a verified download; a read-only cache is not an error."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=cache_dir, delete=False) as handle:
            handle.write(raw)
        os.replace(handle.name, cache_dir / f"{sha256}.json")
    except OSError:
        pass
