"""Skills (SEP-2640) in the typed API: ``app.add_skill_directory("skills/pdf-processing")``
serves the skill in that folder. The app then declares the extension (with
``directoryRead: true``), answers ``skills/list``, ``skills/get`` and
``resources/directory/read`` (2026-07-28), and lists every file of the skill as a resource
(``skill://<name>/<path>``; ``SKILL.md`` as ``text/markdown`` named and described from its
frontmatter), readable in both eras. The wire pieces are :mod:`typedmcp.protocol.skills`'s."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ..protocol.skills import SKILLS_EXTENSION, Skill, SkillCatalog, SkillError, SkillFile, load_skill
from .signature import DeclarationError


class SkillServingApp(Protocol):
    """What :func:`add_skill` uses of an :class:`~typedmcp.app.McpApp` (named structurally:
    ``app.core`` imports this module)."""

    skill_catalog: SkillCatalog | None
    extensions: dict[str, dict[str, Any]]

    def add_resource(self, function: Callable[[], Any], uri: str, *, name: str | None = ...,
                     description: str | None = ..., mime_type: str | None = ...) -> Any: ...


def _reader(file: SkillFile) -> Callable[[], str | bytes]:
    """A resource function returning the file's bytes as loaded: text when they are UTF-8,
    else bytes (a blob)."""

    def read() -> str | bytes:
        data = file.content()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data

    read.__qualname__ = read.__name__ = f"skill_file_{file.uri}"
    return read


def add_skill(app: SkillServingApp, folder: str | Path) -> Skill:
    """Serve the skill in ``folder`` from ``app`` (what :meth:`McpApp.add_skill_directory` does)."""
    try:
        skill = load_skill(folder)
        catalog = app.skill_catalog if isinstance(app.skill_catalog, SkillCatalog) else SkillCatalog()
        catalog.add(skill)
    except SkillError as error:
        raise DeclarationError(str(error)) from None
    app.skill_catalog = catalog
    app.extensions.setdefault(SKILLS_EXTENSION, {"directoryRead": True})
    for file in skill.files:
        manifest = file.uri == skill.uri
        app.add_resource(
            _reader(file),
            file.uri,
            name=skill.name if manifest else file.uri.removeprefix(f"skill://{skill.name}/"),
            description=skill.frontmatter["description"] if manifest else f"A file of the skill {skill.name!r}",
            mime_type=file.mime_type,
        )
    return skill


__all__ = ["add_skill"]
