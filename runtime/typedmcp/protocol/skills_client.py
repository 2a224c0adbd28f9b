"""The skills extension (SEP-2640) on the client: a server's skills, read when asked.

``SkillsClient(client)`` wraps a connected typed client whose server declares
``io.modelcontextprotocol/skills`` (2026-07-28: extensions are on the wire there only):

* :meth:`~SkillsClient.list_skills` / :meth:`~SkillsClient.list_page` (``skills/list``) and
  :meth:`~SkillsClient.get` (``skills/get``) return :class:`SkillEntry` manifests: the
  frontmatter and every file with its digest and size, and no file content;
* :meth:`~SkillsClient.load` reads ``SKILL.md`` (``resources/read``) and checks it against the
  entry: size, ``sha256`` digest, and its frontmatter field by field;
* :meth:`~SkillsClient.read_file` reads one file the entry lists (a URI or a path relative to
  the skill's root), checked by size and digest; a file the entry does not list is refused;
* :meth:`~SkillsClient.read_directory` (``resources/directory/read``, when the server declares
  ``directoryRead: true``) lists a directory's direct children.

Nothing is prefetched: connecting and listing read no file; each read is one request, made
when the application asks (a verified file is kept by URI and digest and not fetched twice).
A check that fails raises :class:`SkillVerificationError` and the content is not returned.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from ..engine.jsonrpc import CapabilityError
from .extensions import extension_settings
from .meta import COMPLETE, RESULT_TYPE
from .results import ProtocolViolation
from .skills import MANIFEST, MAX_RESOURCES_PER_SKILL, MAX_SKILL_BYTES, SKILLS_EXTENSION, SkillError, parse_frontmatter

#: ``resources`` of an entry whose content is generated (no digests to check against).
DYNAMIC = "dynamic"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class SkillVerificationError(ValueError):
    """Skill content that does not match the entry the client holds (size, digest,
    frontmatter, or a file the entry does not list): the content is not used."""


@dataclasses.dataclass(frozen=True)
class SkillResource:
    """One file of a skill's manifest: its URI, ``sha256:<hex>`` digest and size in bytes."""

    uri: str
    digest: str
    size: int


@dataclasses.dataclass(frozen=True)
class SkillEntry:
    """A skill as ``skills/list`` and ``skills/get`` describe it: the URI of its ``SKILL.md``,
    its frontmatter, and its files (None when the server marks them ``"dynamic"``)."""

    uri: str
    frontmatter: dict[str, Any]
    resources: tuple[SkillResource, ...] | None

    @property
    def name(self) -> str:
        """The frontmatter's ``name`` (a label: two entries may share one)."""
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        """The frontmatter's ``description``."""
        return str(self.frontmatter["description"])

    @property
    def root(self) -> str:
        """The skill's directory: its ``uri`` without ``/SKILL.md``."""
        return self.uri[: -len(MANIFEST) - 1]

    @property
    def dynamic(self) -> bool:
        """Whether the server publishes no digests for the skill (``"resources": "dynamic"``)."""
        return self.resources is None

    def resource(self, uri: str) -> SkillResource | None:
        """The manifest's line for ``uri`` (None: not listed, or a dynamic skill)."""
        return next((r for r in self.resources or () if r.uri == uri), None)

    def resolve(self, path_or_uri: str) -> str:
        """A URI as given, or a path relative to the skill's root (``references/FORMS.md``)
        as the URI under it."""
        if "://" in path_or_uri:
            return path_or_uri
        relative = PurePosixPath(path_or_uri)
        if relative.is_absolute() or ".." in relative.parts:
            raise ValueError(f"{path_or_uri!r}: give a path inside the skill (no leading '/', no '..') or a full URI")
        return f"{self.root}/{relative.as_posix()}"

    @classmethod
    def from_wire(cls, raw: Any) -> SkillEntry:
        """An entry from its JSON; :class:`ProtocolViolation` names what makes it invalid
        (the SEP: an entry without ``resources`` must not be loaded)."""
        if not isinstance(raw, Mapping):
            raise ProtocolViolation(f"a skill entry must be an object, got {type(raw).__name__}")
        uri, frontmatter, resources = raw.get("uri"), raw.get("frontmatter"), raw.get("resources")
        if not isinstance(uri, str) or not uri.endswith(f"/{MANIFEST}"):
            raise ProtocolViolation(f"a skill entry's uri must be the URI of its {MANIFEST}, got {uri!r}")
        if not isinstance(frontmatter, Mapping) or not all(
            isinstance(frontmatter.get(key), str) and frontmatter.get(key) for key in ("name", "description")
        ):
            raise ProtocolViolation(f"skill {uri}: frontmatter must be an object with a 'name' and a 'description'")
        if uri.removesuffix(f"/{MANIFEST}").rsplit("/", 1)[-1] != frontmatter["name"]:
            raise ProtocolViolation(f"skill {uri}: the last segment of its path is not its name {frontmatter['name']!r}")
        if resources == DYNAMIC:
            return cls(uri=uri, frontmatter=dict(frontmatter), resources=None)
        if not isinstance(resources, list):
            raise ProtocolViolation(f"skill {uri}: resources must be a list of files or \"dynamic\", got {resources!r}")
        files: list[SkillResource] = []
        for item in resources:
            file = item if isinstance(item, Mapping) else {}
            ref_uri, digest, size = file.get("uri"), file.get("digest"), file.get("size")
            if (not isinstance(ref_uri, str) or not isinstance(digest, str) or not _DIGEST.fullmatch(digest)
                    or not isinstance(size, int) or isinstance(size, bool) or size < 0):
                raise ProtocolViolation(
                    f"skill {uri}: each resource needs a uri, a digest 'sha256:<64 lowercase hex>' "
                    f"and a size >= 0, got {item!r}"
                )
            files.append(SkillResource(uri=ref_uri, digest=digest, size=size))
        if not any(f.uri == uri for f in files):
            raise ProtocolViolation(f"skill {uri}: resources must list its {MANIFEST}")
        root = uri[: -len(MANIFEST)]
        outside = next((f.uri for f in files if not f.uri.startswith(root)), None)
        if outside is not None:
            raise ProtocolViolation(f"skill {uri}: its resources list {outside}, which is not inside the skill")
        return cls(uri=uri, frontmatter=dict(frontmatter), resources=tuple(files))

    def check_limits(self) -> None:
        """:class:`SkillVerificationError` when the manifest exceeds the SEP's limits (512
        files, 16 MiB), checked before any file is read."""
        files = self.resources or ()
        total = sum(f.size for f in files)
        if len(files) > MAX_RESOURCES_PER_SKILL or total > MAX_SKILL_BYTES:
            raise SkillVerificationError(
                f"skill {self.uri}: {len(files)} files of {total} bytes exceed the SEP-2640 limits "
                f"({MAX_RESOURCES_PER_SKILL} files, {MAX_SKILL_BYTES} bytes); not loaded"
            )


@dataclasses.dataclass(frozen=True)
class SkillsPage:
    """One page of ``skills/list``: the entries, the cursor of the next page, the caching hints."""

    skills: list[SkillEntry]
    next_cursor: str | None
    ttl_ms: int | None
    cache_scope: str | None


@dataclasses.dataclass(frozen=True)
class DirectoryChild:
    """A direct child in ``resources/directory/read``: a file, or a directory
    (``mime_type`` ``inode/directory``)."""

    uri: str
    name: str
    mime_type: str | None
    size: int | None

    @property
    def is_directory(self) -> bool:
        """Whether the child is a directory (read it with ``read_directory`` again)."""
        return self.mime_type == "inode/directory"


@dataclasses.dataclass(frozen=True)
class DirectoryPage:
    """One page of ``resources/directory/read``."""

    resources: list[DirectoryChild]
    next_cursor: str | None


@dataclasses.dataclass(frozen=True)
class SkillFileContent:
    """A file read and checked against its skill's entry: its URI, bytes and mime type."""

    uri: str
    data: bytes
    mime_type: str | None

    @property
    def text(self) -> str:
        """The bytes as UTF-8 text."""
        return self.data.decode("utf-8")


def _content_bytes(uri: str, result: Any) -> tuple[bytes, str | None]:
    """The bytes (and mime type) of ``uri`` in a typed ``resources/read`` result."""
    contents = list(getattr(result, "contents", None) or ())
    item = next((c for c in contents if str(getattr(c, "uri", "")) == uri), contents[0] if contents else None)
    if item is None:
        raise ProtocolViolation(f"resources/read of {uri} returned no contents")
    mime = getattr(item, "mime_type", None)
    text, blob = getattr(item, "text", None), getattr(item, "blob", None)
    if isinstance(text, str):
        return text.encode("utf-8"), mime
    if isinstance(blob, (str, bytes)):
        try:
            return base64.b64decode(blob, validate=True), mime
        except (binascii.Error, ValueError):
            raise ProtocolViolation(f"resources/read of {uri}: blob is not base64") from None
    raise ProtocolViolation(f"resources/read of {uri}: contents carry neither text nor blob")


def verify(expected: SkillResource, data: bytes) -> None:
    """:class:`SkillVerificationError` unless ``data`` has the entry's size and digest
    (the size first: a wrong length fails whatever its digest)."""
    if len(data) != expected.size:
        raise SkillVerificationError(
            f"{expected.uri}: read {len(data)} bytes, the skill's entry lists {expected.size}; "
            "the content is not used (refresh the entry with skills/get)"
        )
    actual = "sha256:" + hashlib.sha256(data).hexdigest()
    if actual != expected.digest:
        raise SkillVerificationError(
            f"{expected.uri}: digest {actual} differs from the entry's {expected.digest}; "
            "the content is not used (refresh the entry with skills/get)"
        )


def verify_frontmatter(entry: SkillEntry, manifest: bytes) -> None:
    """:class:`SkillVerificationError` unless the ``SKILL.md`` read has the entry's
    frontmatter, field by field."""
    try:
        found = parse_frontmatter(manifest.decode("utf-8"), entry.uri)
    except (SkillError, UnicodeDecodeError) as error:
        raise SkillVerificationError(f"{entry.uri}: its frontmatter cannot be checked against the entry: {error}") from None
    if found != entry.frontmatter:
        differing = sorted(k for k in set(found) | set(entry.frontmatter) if found.get(k) != entry.frontmatter.get(k))
        raise SkillVerificationError(
            f"{entry.uri}: the frontmatter read differs from the entry's in {', '.join(map(repr, differing))}; "
            "the skill is not loaded"
        )


class SkillsClient:
    """A server's skills through a connected typed client (``async with connect_*(...) as
    client``): nothing is requested until a method here is called."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.session: Any = client.session
        self._verified: dict[tuple[str, str], SkillFileContent] = {}
        self._dynamic_bytes: dict[str, int] = {}  # per dynamic skill: what was read so far

    @property
    def settings(self) -> dict[str, Any] | None:
        """The settings the server declared for the extension (None: not declared)."""
        return extension_settings(self.session.peer_capabilities, SKILLS_EXTENSION)

    @property
    def supported(self) -> bool:
        """Whether the server declares the skills extension."""
        return self.settings is not None

    @property
    def directory_read(self) -> bool:
        """Whether the server declares ``directoryRead: true``."""
        return bool((self.settings or {}).get("directoryRead") is True)

    def _require(self, method: str) -> None:
        if not self.supported:
            raise CapabilityError(
                f"cannot send {method}: the server does not declare the {SKILLS_EXTENSION} extension "
                f"(this session speaks {self.session.protocol_version}; extensions are on the wire "
                "in 2026-07-28 only)"
            )
        if method == "resources/directory/read" and not self.directory_read:
            raise CapabilityError(
                "cannot send resources/directory/read: the server does not declare "
                f"directoryRead: true for {SKILLS_EXTENSION} (read the entry's resources instead)"
            )

    async def _call(self, method: str, params: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """One request of the extension, its raw complete result."""
        self._require(method)
        session = self.session
        engine = session.engine
        if engine is None:
            raise CapabilityError(f"cannot send {method}: the session is not connected")
        # the stateless era's per-request _meta (version, capabilities, client info)
        wire = {**params, "_meta": dict(session._meta)} if session._meta else params
        limit = session.request_timeout if timeout is None else timeout
        raw = await session.exchange(engine, method, wire, engine.new_request_id(), limit)
        if not isinstance(raw, dict) or raw.get(RESULT_TYPE, COMPLETE) != COMPLETE:
            kind = raw.get(RESULT_TYPE) if isinstance(raw, dict) else type(raw).__name__
            raise ProtocolViolation(f"{method} answered {kind!r}, not a complete result")
        return raw

    async def list_page(self, cursor: str | None = None, *, timeout: float | None = None) -> SkillsPage:
        """One page of ``skills/list`` (entries only: no file is read)."""
        raw = await self._call("skills/list", {} if cursor is None else {"cursor": cursor}, timeout)
        skills = raw.get("skills")
        if not isinstance(skills, list):
            raise ProtocolViolation(f"skills/list answered without a 'skills' list: {sorted(raw)}")
        next_cursor = raw.get("nextCursor")
        return SkillsPage(
            skills=[SkillEntry.from_wire(s) for s in skills],
            next_cursor=next_cursor if isinstance(next_cursor, str) else None,
            ttl_ms=raw.get("ttlMs") if isinstance(raw.get("ttlMs"), int) else None,
            cache_scope=raw.get("cacheScope") if isinstance(raw.get("cacheScope"), str) else None,
        )

    async def list_skills(self, *, max_pages: int = 100, timeout: float | None = None) -> list[SkillEntry]:
        """Every entry, page by page (at most ``max_pages`` pages; a server repeating a
        cursor is refused). An empty list does not prove the server has no skills: a skill
        named elsewhere is still reachable with :meth:`get`."""
        entries: list[SkillEntry] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(max_pages):
            page = await self.list_page(cursor, timeout=timeout)
            entries.extend(page.skills)
            if page.next_cursor is None:
                return entries
            if page.next_cursor in seen:
                raise ProtocolViolation(f"skills/list gave the cursor {page.next_cursor!r} twice")
            seen.add(cursor := page.next_cursor)
        raise ProtocolViolation(f"skills/list had more than max_pages={max_pages} pages")

    async def get(self, uri: str, *, timeout: float | None = None) -> SkillEntry:
        """The entry of the skill whose ``SKILL.md`` is ``uri`` (``skills/get``: the server
        answers -32602 for a URI that names no skill it serves)."""
        raw = await self._call("skills/get", {"uri": uri}, timeout)
        entry = SkillEntry.from_wire(raw.get("skill"))
        if entry.uri != uri:
            raise ProtocolViolation(f"skills/get {uri} answered the entry of {entry.uri}")
        return entry

    async def _read(self, entry: SkillEntry, uri: str) -> SkillFileContent:
        listed = entry.resource(uri)
        if listed is None and not entry.dynamic:
            raise SkillVerificationError(
                f"{uri} is not a file the entry of {entry.uri} lists; refresh the entry with skills/get "
                "(a changed skill needs approving again)"
            )
        if entry.dynamic and uri != entry.uri and not uri.startswith(f"{entry.root}/"):
            raise SkillVerificationError(f"{uri} is not inside the skill {entry.root}; not read")
        if listed is not None and (hit := self._verified.get((uri, listed.digest))) is not None:
            return hit
        result = await self.client.read_resource(uri=uri)
        data, mime = _content_bytes(uri, result)
        read = SkillFileContent(uri=uri, data=data, mime_type=mime)
        if listed is not None:
            verify(listed, data)
            self._verified[(uri, listed.digest)] = read
        else:  # a dynamic skill: no digest to check; the SEP's total size still bounds it
            total = self._dynamic_bytes[entry.uri] = self._dynamic_bytes.get(entry.uri, 0) + len(data)
            if total > MAX_SKILL_BYTES:
                raise SkillVerificationError(
                    f"{uri}: the dynamic skill {entry.uri} has now sent {total} bytes, over the "
                    f"SEP-2640 limit of {MAX_SKILL_BYTES}; not used"
                )
        return read

    async def load(self, entry: SkillEntry) -> SkillFileContent:
        """Read the skill's ``SKILL.md`` and check it against ``entry``: the limits, then its
        size and digest, then its frontmatter field by field (:class:`SkillVerificationError`
        on any mismatch; a dynamic skill has no digest to check, only its frontmatter)."""
        entry.check_limits()
        manifest = await self._read(entry, entry.uri)
        verify_frontmatter(entry, manifest.data)
        return manifest

    async def read_file(self, entry: SkillEntry, path_or_uri: str) -> SkillFileContent:
        """Read one file of the skill (a URI, or a path relative to its root), checked by
        size and digest; a file the entry does not list is refused unread."""
        return await self._read(entry, entry.resolve(path_or_uri))

    async def read_directory(
        self, uri: str, cursor: str | None = None, *, timeout: float | None = None
    ) -> DirectoryPage:
        """The direct children of the directory ``uri`` (``skill://<name>`` or one of its
        subdirectories), one page (``resources/directory/read``; needs ``directoryRead``)."""
        params: dict[str, Any] = {"uri": uri} if cursor is None else {"uri": uri, "cursor": cursor}
        raw = await self._call("resources/directory/read", params, timeout)
        children: list[DirectoryChild] = []
        for item in raw.get("resources") or []:
            if not isinstance(item, Mapping) or not isinstance(item.get("uri"), str):
                raise ProtocolViolation(f"resources/directory/read {uri}: a child without a uri: {item!r}")
            size = item.get("size")
            children.append(DirectoryChild(
                uri=item["uri"], name=str(item.get("name", "")),
                mime_type=item.get("mimeType") if isinstance(item.get("mimeType"), str) else None,
                size=size if isinstance(size, int) else None,
            ))
        next_cursor = raw.get("nextCursor")
        return DirectoryPage(resources=children, next_cursor=next_cursor if isinstance(next_cursor, str) else None)


__all__ = [
    "DYNAMIC", "DirectoryChild", "DirectoryPage", "SkillEntry", "SkillFileContent", "SkillResource",
    "SkillVerificationError", "SkillsClient", "SkillsPage", "verify", "verify_frontmatter",
]
