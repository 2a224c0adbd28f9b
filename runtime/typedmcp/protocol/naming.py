"""The naming rule of the host and of mounted apps (``McpApp.mount``): every exported tool
(and prompt) name is unique and is a valid function name for the major LLM APIs (OpenAI,
Anthropic, Gemini).

1. A name gets its server's prefix and the separator: ``weather__current`` (the prefix is
   the server's name unless its entry sets ``prefix``; ``prefixTools: "collisions"`` prefixes
   only names that more than one server exports, on every server that exports them).
2. Every character outside ``A-Z a-z 0-9 _ -`` becomes ``_``; a name that does not start
   with a letter or ``_`` gets a leading ``_``.
3. A name over 64 characters keeps its first 55 and ends with ``_`` and 8 hex digits of the
   SHA-256 of the unshortened name.
4. Names that are still equal (two originals that differ only in replaced characters) each
   end with ``_`` and 8 hex digits of the SHA-256 of ``server/original``, the same way.

Each step depends only on the entry itself and on which names collide, so a name is the
same across restarts and reloads as long as its server keeps it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

MAX_NAME = 64
_HASH = 8
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def valid_function_name(name: str) -> bool:
    """Whether ``name`` is accepted by every major LLM API as a function name."""
    return bool(_VALID.match(name))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH]


def sanitize(name: str) -> str:
    """Step 2 of the rule: replace invalid characters, make the first one valid."""
    cleaned = _INVALID.sub("_", name) or "_"
    if not (cleaned[0].isascii() and (cleaned[0].isalpha() or cleaned[0] == "_")):
        cleaned = "_" + cleaned
    return cleaned


def with_suffix(name: str, seed: str) -> str:
    """``name`` cut so that ``_`` plus 8 hex digits of ``seed``'s hash fit in 64."""
    return f"{name[: MAX_NAME - _HASH - 1]}_{_digest(seed)}"


def shorten(name: str) -> str:
    """Step 3 of the rule (a valid name of at most 64 characters is left alone)."""
    return name if len(name) <= MAX_NAME else with_suffix(name, name)


@dataclass(frozen=True)
class NamingRule:
    """How exported names are made: ``separator`` between prefix and name, and whether
    names are prefixed ``"always"`` or only on ``"collisions"``."""

    separator: str = "__"
    prefix_tools: str = "always"

    def join(self, prefix: str, name: str) -> str:
        return f"{prefix}{self.separator}{name}" if prefix else name


@dataclass(frozen=True)
class Candidate:
    """One tool or prompt to name: its server, the server's prefix, its original name."""

    server: str
    prefix: str
    name: str


def assign(candidates: Sequence[Candidate], rule: NamingRule) -> list[str]:
    """The exported name of each candidate (same order), unique, valid, deterministic."""
    if rule.prefix_tools == "always":
        bases = [rule.join(c.prefix, c.name) for c in candidates]
    else:
        owners: dict[str, set[str]] = {}
        for c in candidates:
            owners.setdefault(c.name, set()).add(c.server)
        bases = [
            rule.join(c.prefix, c.name) if len(owners[c.name]) > 1 else c.name for c in candidates
        ]
    names = [shorten(sanitize(base)) for base in bases]
    count: dict[str, int] = {}
    for name in names:
        count[name] = count.get(name, 0) + 1
    if len(count) == len(names):
        return names
    return [
        with_suffix(name, f"{c.server}/{c.name}") if count[name] > 1 else name
        for name, c in zip(names, candidates, strict=True)
    ]


def possible_owners(exported: str, prefixes: Mapping[str, str], rule: NamingRule) -> list[str] | None:
    """The servers of ``prefixes`` (server -> its prefix) that could export a tool or
    prompt named ``exported``, from the rule alone, without listing anything: under
    ``prefixTools: "always"``, those whose sanitized prefix and separator begin the name
    (as much of them as a shortened name keeps), and any whose prefix is empty (their names
    are not prefixed). None under ``"collisions"``: an unprefixed name may be any server's."""
    if rule.prefix_tools != "always":
        return None
    kept = MAX_NAME - _HASH - 1  # what a shortened or suffixed name keeps of the original
    owners = []
    for server, prefix in prefixes.items():
        start = sanitize(rule.join(prefix, "x"))[:-1] if prefix else ""
        if exported.startswith(start) or (
            len(exported) == MAX_NAME and len(start) > kept and exported[:kept] == start[:kept]
        ):
            owners.append(server)
    return owners


def collisions(candidates: Iterable[Candidate]) -> dict[str, list[str]]:
    """Original names exported by more than one server -> those servers (for reports)."""
    owners: dict[str, list[str]] = {}
    for c in candidates:
        owners.setdefault(c.name, []).append(c.server)
    return {name: servers for name, servers in owners.items() if len(servers) > 1}


__all__ = [
    "MAX_NAME",
    "Candidate",
    "NamingRule",
    "assign",
    "collisions",
    "possible_owners",
    "sanitize",
    "shorten",
    "valid_function_name",
]
