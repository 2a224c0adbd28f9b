"""One registry of every server's tools, prompts, resources and resource templates.

A :class:`Registry` is immutable: the host builds a new one when any server's lists change
and swaps it in with one assignment, so a reader never sees half of a refresh. Each entry
knows its server and its original name; exported names follow :mod:`.naming`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..protocol.tools import as_functions
from .config import ServerConfig
from .naming import Candidate, NamingRule, assign, collisions

KINDS = ("tools", "resources", "templates", "prompts")


@dataclass(frozen=True)
class ToolEntry:
    """A tool of the registry: ``name`` is what the model sees, ``tool`` what its server
    calls it; ``definition`` is the tool as the server listed it (wire form)."""

    name: str
    server: str
    tool: str
    definition: Mapping[str, Any]

    @property
    def description(self) -> str | None:
        found = self.definition.get("description") or self.definition.get("title")
        return found if isinstance(found, str) else None

    def exported(self) -> dict[str, Any]:
        """The definition under its exported name."""
        return {**self.definition, "name": self.name}


@dataclass(frozen=True)
class PromptEntry:
    """A prompt of the registry (named like tools)."""

    name: str
    server: str
    prompt: str
    definition: Mapping[str, Any]


@dataclass(frozen=True)
class ResourceEntry:
    """A resource, by its URI (not renamed: URIs identify content)."""

    uri: str
    server: str
    definition: Mapping[str, Any]


@dataclass(frozen=True)
class TemplateEntry:
    """A resource template; :meth:`matches` tells whether a URI is one of its resources."""

    uri_template: str
    server: str
    definition: Mapping[str, Any]
    pattern: re.Pattern[str] = field(compare=False, repr=False, default=re.compile("(?!)"))

    def matches(self, uri: str) -> bool:
        return self.pattern.fullmatch(uri) is not None


def template_pattern(template: str) -> re.Pattern[str]:
    """A regular expression for the URIs an RFC 6570 template expands to (levels 1-3,
    the forms MCP servers use: ``{x}``, ``{+x}``, ``{#x}``, ``{/x}``, ``{?x,y}``, ...)."""
    parts: list[str] = []
    position = 0
    for match in re.finditer(r"\{([+#./;?&]?)([^}]*)\}", template):
        parts.append(re.escape(template[position : match.start()]))
        operator = match.group(1)
        if operator in ("+", "#"):
            parts.append(("#" if operator == "#" else "") + ".*")
        elif operator in ("?", "&"):
            parts.append(r"(?:[?&][^#]*)?")
        elif operator in ("/", ".", ";"):
            parts.append(rf"(?:\{operator}[^/?#]*)*")
        else:
            parts.append(r"[^/?#]*")
        position = match.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts))


@dataclass
class ServerLists:
    """What one server listed, in wire form, and until when each list is fresh
    (``ttlMs`` of 2026-07-28; 0: stale at once)."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    fresh_until: dict[str, float] = field(default_factory=dict)

    def fresh(self, kind: str, now: float) -> bool:
        return self.fresh_until.get(kind, 0.0) > now


@dataclass(frozen=True)
class Registry:
    """The merged lists of every server; build with :meth:`build`."""

    tools: Mapping[str, ToolEntry] = field(default_factory=dict)
    prompts: Mapping[str, PromptEntry] = field(default_factory=dict)
    resources: Mapping[str, ResourceEntry] = field(default_factory=dict)
    templates: tuple[TemplateEntry, ...] = ()
    #: original tool names exported by several servers -> those servers
    collisions: Mapping[str, list[str]] = field(default_factory=dict)
    #: URIs listed by several servers -> the servers (the first one serves them)
    shared_uris: Mapping[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(
        cls, servers: Sequence[tuple[ServerConfig, ServerLists]], rule: NamingRule
    ) -> Registry:
        """Merge the lists of ``servers`` (in configuration order) under ``rule``."""
        tool_items: list[tuple[Candidate, dict[str, Any]]] = []
        prompt_items: list[tuple[Candidate, dict[str, Any]]] = []
        resources: dict[str, ResourceEntry] = {}
        shared: dict[str, list[str]] = {}
        templates: list[TemplateEntry] = []
        for config, lists in servers:
            prefix = config.name if config.prefix is None else config.prefix
            seen: set[str] = set()
            for tool in lists.tools:
                name = tool.get("name")
                if isinstance(name, str) and name not in seen and config.exports(name):
                    seen.add(name)
                    tool_items.append((Candidate(config.name, prefix, name), tool))
            seen.clear()
            for prompt in lists.prompts:
                name = prompt.get("name")
                if isinstance(name, str) and name not in seen:
                    seen.add(name)
                    prompt_items.append((Candidate(config.name, prefix, name), prompt))
            for resource in lists.resources:
                uri = resource.get("uri")
                if not isinstance(uri, str):
                    continue
                if uri in resources:
                    owners = shared.setdefault(uri, [resources[uri].server])
                    if config.name not in owners:
                        owners.append(config.name)
                    continue
                resources[uri] = ResourceEntry(uri, config.name, resource)
            for template in lists.templates:
                text = template.get("uriTemplate")
                if isinstance(text, str):
                    templates.append(
                        TemplateEntry(text, config.name, template, template_pattern(text))
                    )
        tool_names = assign([c for c, _ in tool_items], rule)
        prompt_names = assign([c for c, _ in prompt_items], rule)
        return cls(
            tools={
                exported: ToolEntry(exported, c.server, c.name, tool)
                for exported, (c, tool) in zip(tool_names, tool_items, strict=True)
            },
            prompts={
                exported: PromptEntry(exported, c.server, c.name, prompt)
                for exported, (c, prompt) in zip(prompt_names, prompt_items, strict=True)
            },
            resources=resources,
            templates=tuple(templates),
            collisions=collisions(c for c, _ in tool_items),
            shared_uris=shared,
        )

    def owner_of_uri(self, uri: str) -> str | None:
        """The server that serves ``uri``: the one listing it, else the first whose
        template matches it."""
        entry = self.resources.get(uri)
        if entry is not None:
            return entry.server
        for template in self.templates:
            if template.matches(uri):
                return template.server
        return None

    def names_of(self, server: str) -> dict[str, set[str]]:
        """Exported names (tools, prompts), URIs and templates of one server, per kind."""
        return {
            "tools": {e.name for e in self.tools.values() if e.server == server},
            "prompts": {e.name for e in self.prompts.values() if e.server == server},
            "resources": {e.uri for e in self.resources.values() if e.server == server},
            "templates": {e.uri_template for e in self.templates if e.server == server},
        }


# -- function-calling export ---------------------------------------------------------------

STYLES = ("openai", "anthropic", "gemini")


def function_definitions(entries: Iterable[ToolEntry], style: str = "openai") -> list[dict[str, Any]]:
    """Tools as function-calling definitions in the shape an LLM API takes:

    * ``openai``: ``{"type": "function", "function": {"name", "description", "parameters"}}``
      (:func:`typedmcp.protocol.tools.as_functions`, also what the Responses API and most
      OpenAI-compatible APIs take, after lifting ``function``);
    * ``anthropic``: ``{"name", "description", "input_schema"}``;
    * ``gemini``: ``{"name", "description", "parametersJsonSchema"}`` (a
      ``FunctionDeclaration``; the schema is passed as JSON Schema, not converted).
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    functions = as_functions(entry.exported() for entry in entries)
    if style == "openai":
        return functions
    shaped = []
    for item in functions:
        function = item["function"]
        out: dict[str, Any] = {"name": function["name"]}
        if "description" in function:
            out["description"] = function["description"]
        out["input_schema" if style == "anthropic" else "parametersJsonSchema"] = function["parameters"]
        shaped.append(out)
    return shaped


__all__ = [
    "KINDS",
    "STYLES",
    "PromptEntry",
    "Registry",
    "ResourceEntry",
    "ServerLists",
    "TemplateEntry",
    "ToolEntry",
    "function_definitions",
    "template_pattern",
]
