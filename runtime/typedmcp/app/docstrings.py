"""Descriptions from a docstring: the first paragraph, and each parameter's text from an
``Args:`` section (Google style), a ``Parameters`` section (NumPy style) or ``:param x:``
fields (Sphinx style)."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

#: Google-style section headers that list parameters.
_GOOGLE_ARGS = frozenset({"args", "arguments", "parameters", "params", "keyword args", "kwargs"})
#: Any Google-style section header (``Returns:``, ``Raises:``, ...) ends the one before.
_GOOGLE_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}[A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_NUMPY_ITEM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*(?::.*)?$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$")
_SPHINX_FIELD = re.compile(r"^:[a-zA-Z]")


@dataclass(frozen=True)
class Docstring:
    """What a docstring says: the summary (its first paragraph) and parameter texts."""

    summary: str | None = None
    params: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _join(lines: list[str]) -> str:
    return " ".join(part.strip() for part in lines if part.strip())


def parse_docstring(text: str | None) -> Docstring:
    """Parse ``text`` (a raw ``__doc__``); any style, or none, is fine."""
    if not text or not text.strip():
        return Docstring()
    lines = inspect.cleandoc(text).splitlines()
    summary_lines: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or _GOOGLE_SECTION.match(stripped) or _SPHINX_FIELD.match(stripped):
            break
        summary_lines.append(stripped)
    params = {**_numpy(lines), **_google(lines), **_sphinx(lines)}
    return Docstring(summary=_join(summary_lines) or None, params=params)


def _google(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    index = 0
    while index < len(lines):
        header = _GOOGLE_SECTION.match(lines[index].strip())
        if header is None or header.group(1).strip().lower() not in _GOOGLE_ARGS:
            index += 1
            continue
        base = _indent(lines[index])
        index += 1
        current: str | None = None
        item_indent = -1
        while index < len(lines):
            line = lines[index]
            if line.strip() and _indent(line) <= base:
                break  # the section ended
            if line.strip():
                item = _GOOGLE_ITEM.match(line.strip())
                if item is not None and (item_indent < 0 or _indent(line) <= item_indent):
                    item_indent = _indent(line)
                    current = item.group(1).lstrip("*")
                    found[current] = item.group(2).strip()
                elif current is not None:
                    found[current] = _join([found[current], line])
            index += 1
    return found


def _numpy(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for index in range(len(lines) - 1):
        if lines[index].strip().lower() not in ("parameters", "other parameters"):
            continue
        if not _NUMPY_RULE.match(lines[index + 1].strip()):
            continue
        base = _indent(lines[index])
        names: list[str] = []
        position = index + 2
        while position < len(lines):
            line = lines[position]
            if position + 1 < len(lines) and _NUMPY_RULE.match(lines[position + 1].strip()):
                break  # the next section's header
            if line.strip() and _indent(line) == base:
                item = _NUMPY_ITEM.match(line.strip())
                names = [name.strip() for name in item.group(1).split(",")] if item else []
                for name in names:
                    found[name] = ""
            elif line.strip() and _indent(line) > base:
                for name in names:
                    found[name] = _join([found[name], line])
            position += 1
    return {name: text for name, text in found.items() if text}


def _sphinx(lines: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        param = _SPHINX_PARAM.match(stripped)
        if param is not None:
            current = param.group(1)
            found[current] = param.group(2).strip()
        elif _SPHINX_FIELD.match(stripped) or not stripped:
            current = None
        elif current is not None:
            found[current] = _join([found[current], stripped])
    return found
