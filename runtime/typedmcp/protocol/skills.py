"""The skills extension (SEP-2640) on the server: skills served from folders.

A skill is a folder holding a ``SKILL.md`` that begins with YAML frontmatter (``name`` and
``description`` at least; the folder's name must equal ``name``). Every file of the folder is
a resource ``skill://<name>/<relative path>``; the extension adds three methods:

* ``skills/list`` (paginated; an entry is never split across pages): per skill its ``uri``
  (``skill://<name>/SKILL.md``), its ``frontmatter`` and ``resources``, every file as
  ``{uri, digest: "sha256:<hex>", size}``;
* ``skills/get`` (``{uri}``): the one entry (-32602 for a URI that names no skill);
* ``resources/directory/read`` (``{uri, cursor?}``, with ``directoryRead: true``): a
  directory's direct children, subdirectories with mime type ``inode/directory``
  (-32602 for anything that is not a served directory).

Extensions are on the wire in 2026-07-28 only: a handshake-era client sees no
``capabilities.extensions`` and the three methods answer -32601 there, but the skill files
stay ordinary resources (``resources/list``, ``resources/read``) in both eras.
"""

from __future__ import annotations

import dataclasses
import hashlib
import mimetypes
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..engine.jsonrpc import INVALID_PARAMS, RpcError

#: The skills extension (SEP-2640).
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
#: The methods the extension adds (answered by :meth:`SkillCatalog.serve`).
SKILL_METHODS = ("skills/list", "skills/get", "resources/directory/read")
DIRECTORY_MIME_TYPE = "inode/directory"
MANIFEST = "SKILL.md"
#: The SEP's limits: resources per skill (SKILL.md included) and bytes per skill.
MAX_RESOURCES_PER_SKILL = 512
MAX_SKILL_BYTES = 16 * 1024 * 1024
PAGE_SIZE = 50

# the Agent Skills naming rules: 1-64 lowercase alphanumerics and single hyphens inside
_NAME = re.compile(r"(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*")
_FRONTMATTER = re.compile(r"\A\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
# plain values YAML reads as something other than text
_NOT_TEXT = re.compile(r"[-+]?(\.?[0-9][0-9_.eE+-]*|0x[0-9a-fA-F]+|0o[0-7]+|\.inf|\.nan)|~|null|Null|NULL|"
                       r"true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|")
_KEY = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_./-]*):(?:[ \t]+(.*))?")


class SkillError(ValueError):
    """A skill folder that cannot be served (says which file and what to fix)."""


def _scalar(raw: str, where: str) -> str:
    """One frontmatter value: plain or quoted text (the small YAML subset skills use)."""
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        inner = value[1:-1]
        return inner.replace("''", "'") if value[0] == "'" else inner.replace('\\"', '"').replace("\\\\", "\\")
    if _NOT_TEXT.fullmatch(value):
        raise SkillError(f"{where}: YAML reads {value!r} as a number, boolean or null, not text; quote it")
    if value[:1] in ("[", "{", "|", ">", "&", "*", "!", "%", "@", "`") or " #" in value or ": " in value:
        raise SkillError(
            f"{where}: the value {value!r} needs YAML this parser does not read (lists, blocks, "
            "anchors, comments); write plain or quoted text"
        )
    return value


def parse_frontmatter(text: str, where: str) -> dict[str, Any]:
    """The ``---`` block at the start of a SKILL.md as a JSON object: ``key: value`` lines
    with text values, and one level of nested ``key:`` mappings (``metadata:``)."""
    found = _FRONTMATTER.match(text)
    if found is None:
        raise SkillError(f"{where}: SKILL.md must begin with a '---' line, the frontmatter, and a closing '---'")
    data: dict[str, Any] = {}
    nested: dict[str, Any] | None = None
    for number, line in enumerate(found.group(1).splitlines(), start=2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indented = line[:1] in (" ", "\t")
        match = _KEY.fullmatch(line.strip())
        if match is None:
            raise SkillError(f"{where} line {number}: expected 'key: value', got {line.strip()!r}")
        key, raw = match.group(1), match.group(2)
        if indented:
            if nested is None:
                raise SkillError(f"{where} line {number}: an indented line belongs under a 'key:' line")
            if raw is None:
                raise SkillError(f"{where} line {number}: only one level of nesting is read ({key!r} has none)")
            nested[key] = _scalar(raw, f"{where} line {number}")
            continue
        if key in data:
            raise SkillError(f"{where} line {number}: {key!r} is given twice")
        if raw is None or not raw.strip():
            nested = data[key] = {}
        else:
            nested = None
            data[key] = _scalar(raw, f"{where} line {number}")
    for required in ("name", "description"):
        if not isinstance(data.get(required), str) or not data[required]:
            raise SkillError(f"{where}: the frontmatter needs a non-empty {required!r}")
    return data


@dataclasses.dataclass(frozen=True)
class SkillFile:
    """One file of a skill: its URI, where it was read from, its mime type, size and digest,
    and the bytes those describe (held, so what is read always matches the listed digest)."""

    uri: str
    path: Path
    mime_type: str
    size: int
    digest: str
    data: bytes = dataclasses.field(repr=False)

    def content(self) -> bytes:
        """The file's bytes as they were when the skill was loaded."""
        return self.data


@dataclasses.dataclass(frozen=True)
class Skill:
    """A skill read from its folder: name, frontmatter and files (SKILL.md first)."""

    name: str
    root: Path
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...]

    @property
    def uri(self) -> str:
        """``skill://<name>/SKILL.md``."""
        return f"skill://{self.name}/{MANIFEST}"

    def entry(self) -> dict[str, Any]:
        """The skill's entry in ``skills/list`` and ``skills/get``."""
        return {
            "uri": self.uri,
            "frontmatter": dict(self.frontmatter),
            "resources": [{"uri": f.uri, "digest": f.digest, "size": f.size} for f in self.files],
        }


def _mime_type(path: Path) -> str:
    if path.suffix.lower() in (".md", ".markdown"):
        return "text/markdown"
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def load_skill(folder: str | Path) -> Skill:
    """Read the skill in ``folder``; :class:`SkillError` names what keeps it from being served."""
    root = Path(folder)
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise SkillError(f"{root}: a skill folder holds a {MANIFEST} (none found)")
    try:
        text = manifest.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise SkillError(f"{manifest}: not UTF-8 text") from None
    frontmatter = parse_frontmatter(text, str(manifest))
    name = frontmatter["name"]
    if not _NAME.fullmatch(name):
        raise SkillError(
            f"{manifest}: name {name!r} breaks the naming rules (1-64 lowercase letters, digits "
            "and single hyphens, none leading or trailing)"
        )
    if root.resolve().name != name:
        raise SkillError(f"{manifest}: the folder is {root.resolve().name!r}; rename it to the skill's name {name!r}")
    paths = sorted(
        (p for p in root.rglob("*") if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)),
        key=lambda p: (p != manifest, p.relative_to(root).as_posix()),
    )
    if len(paths) > MAX_RESOURCES_PER_SKILL:
        raise SkillError(f"{root}: {len(paths)} files; a skill has at most {MAX_RESOURCES_PER_SKILL} (SEP-2640)")
    files: list[SkillFile] = []
    total = 0
    inside = root.resolve()
    for path in paths:
        if not path.resolve().is_relative_to(inside):
            raise SkillError(f"{path}: a link to {path.resolve()}, outside the skill folder; copy the file in instead")
        data = path.read_bytes()
        total += len(data)
        files.append(SkillFile(
            uri=f"skill://{name}/{path.relative_to(root).as_posix()}", path=path, mime_type=_mime_type(path),
            size=len(data), digest="sha256:" + hashlib.sha256(data).hexdigest(), data=data,
        ))
    if total > MAX_SKILL_BYTES:
        raise SkillError(f"{root}: {total} bytes; a skill holds at most {MAX_SKILL_BYTES} (16 MiB, SEP-2640)")
    return Skill(name=name, root=root, frontmatter=frontmatter, files=tuple(files))


def _page(items: list[dict[str, Any]], params: Mapping[str, Any], key: str, page_size: int) -> dict[str, Any]:
    cursor = params.get("cursor")
    start = 0
    if cursor is not None:
        if not isinstance(cursor, str) or not cursor.isdigit() or int(cursor) > len(items):
            raise RpcError(INVALID_PARAMS, f"Invalid params: cursor {cursor!r} is not one this server gave out")
        start = int(cursor)
    result: dict[str, Any] = {key: items[start:start + page_size]}
    if start + page_size < len(items):
        result["nextCursor"] = str(start + page_size)
    return result


class SkillCatalog:
    """The skills a server serves, and its answers to the extension's methods."""

    def __init__(self, skills: Iterable[Skill] = (), *, page_size: int = PAGE_SIZE) -> None:
        self.skills: dict[str, Skill] = {}
        self.page_size = page_size
        for skill in skills:
            self.add(skill)

    def add(self, skill: Skill) -> None:
        """Serve ``skill`` (two skills of one name: :class:`SkillError`)."""
        if skill.name in self.skills:
            raise SkillError(f"two skills are named {skill.name!r} ({self.skills[skill.name].root} and {skill.root})")
        self.skills[skill.name] = skill

    def files(self) -> list[SkillFile]:
        """Every file of every skill, the resources to list and read."""
        return [file for skill in self.skills.values() for file in skill.files]

    def file(self, uri: str) -> SkillFile | None:
        """The skill file at ``uri``, if one is served."""
        return next((f for f in self.files() if f.uri == uri), None)

    def serve(self, method: str, params: Any) -> dict[str, Any]:
        """Answer one of :data:`SKILL_METHODS` (without the caching hints)."""
        params = params if isinstance(params, Mapping) else {}
        if method == "skills/list":
            return _page([s.entry() for s in self.skills.values()], params, "skills", self.page_size)
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(INVALID_PARAMS, f"Invalid params: {method} needs params.uri, a string")
        if method == "skills/get":
            skill = next((s for s in self.skills.values() if s.uri == uri), None)
            if skill is None:
                raise RpcError(INVALID_PARAMS, f"Invalid params: {uri!r} is not a skill this server serves "
                               f"(skills/list names them)")
            return {"skill": skill.entry()}
        return _page(self._children(uri), params, "resources", self.page_size)

    def _children(self, uri: str) -> list[dict[str, Any]]:
        """The direct children of the directory ``uri`` (``skill://<name>[/<dir>]``)."""
        name, _, rest = uri.removeprefix("skill://").rstrip("/").partition("/")
        skill = self.skills.get(name) if uri.startswith("skill://") else None
        base = PurePosixPath(rest) if rest else None
        children: dict[str, dict[str, Any]] = {}
        for file in skill.files if skill else ():
            relative = PurePosixPath(file.uri.removeprefix(f"skill://{name}/"))
            parts = relative.parts if base is None else (
                relative.parts[len(base.parts):] if relative.parts[:len(base.parts)] == base.parts else ())
            if len(parts) == 1:
                children[file.uri] = {"uri": file.uri, "name": parts[0], "mimeType": file.mime_type, "size": file.size}
            elif len(parts) > 1:
                sub = f"skill://{name}/{(base / parts[0]) if base else parts[0]}"
                children.setdefault(sub, {"uri": sub, "name": parts[0], "mimeType": DIRECTORY_MIME_TYPE})
        if not children:
            raise RpcError(INVALID_PARAMS, f"Invalid params: {uri!r} is not a directory this server serves "
                           f"(a skill's directory: skill://<name> or one of its subdirectories)")
        return list(children.values())


def served_skills(handlers: Any) -> SkillCatalog | None:
    """The skills a server's handlers serve (their ``skill_catalog``), if they declare any."""
    catalog = getattr(handlers, "skill_catalog", None)
    return catalog if isinstance(catalog, SkillCatalog) else None
