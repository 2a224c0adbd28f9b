"""``mcp-codegen tools``, stage 1-2: load a tools snapshot and analyse it into tool models.

A snapshot (``tools.json``) is ``{"tools": [...], "serverInfo": {...}, "protocolVersion":
...}``: a ``tools/list`` result (every page) sorted by name. It is written canonically
(:func:`manifest_text`), so its sha256, stamped in every generated module, names exactly
what the package was generated from.

Module names (also the ``Tools`` method names) are the snake_case of the tool name: camel
humps split, every run of other characters one ``_``, lower case (so two module files never
differ only by case); a leading digit gets ``tool_``; a Python keyword or builtin, or a name
the package itself uses (:data:`PACKAGE_NAMES`: ``support`` would be imported as
``_support``, ``client_of`` would replace the init's function), a trailing ``_``. When several
tools map to the same name, the tool whose name already *is* that name keeps it and every
other one gets ``_`` plus the first 8 hex digits of the sha256 of its own name (``get-sum``
beside ``get_sum`` -> ``get_sum_<8 hex>``). Then again: a suffixed name that another tool
keeps (a tool named ``get_sum_<those 8 hex>``), or that an earlier suffixed tool (by tool
name) took, gets 4 hex digits more, until it is free. No name depends on the order tools
are listed in.
"""

from __future__ import annotations

import builtins
import copy
import hashlib
import json
import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .document import walk_schemas
from .errors import CodegenError

MANIFEST_FILE = "tools.json"
CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
NOT_WORD = re.compile(r"[^0-9a-zA-Z]+")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
#: Names a generated module, method or argument must not take (a trailing ``_`` is added).
RESERVED = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(
    name for name in dir(builtins) if not name.startswith("_")
) | frozenset({"self", "cls"})
#: Names in the package's own namespace: its modules, what ``__init__.py`` defines and
#: imports (lower-case ones only: module names are lower case) and the names argument types
#: import there. A module ``m`` is taken if ``m`` or its alias ``_m`` is one of them.
PACKAGE_NAMES = frozenset({
    "_support", "contract", "tools", "client_of", "overload", "cast", "date", "datetime", "time",
    "timedelta", "annotations",
})
#: Hex digits of the sha256 of a tool's name in a disambiguating suffix: the first try.
SUFFIX_DIGITS = 8
PARAMS, RESULT = "Params", "Result"
REF_PREFIXES = ("#/$defs/", "#/definitions/")


@dataclass(frozen=True)
class Tool:
    """One tool as the generator sees it: names, docs and its two schema documents."""

    name: str
    module: str
    title: str | None
    description: str | None
    annotations: dict[str, Any]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None


@dataclass(frozen=True)
class ToolSet:
    """A whole snapshot: the canonical text, its sha256 and the tools in name order."""

    text: str
    sha256: str
    server_name: str
    server_version: str
    revision: str | None
    tools: tuple[Tool, ...]


def manifest_text(manifest: dict[str, Any]) -> str:
    """The canonical ``tools.json``: top-level keys sorted, tools sorted by name, two-space
    indent. Keys inside a tool keep the server's order: the order of ``properties`` is the
    order of the models' fields and of the generated arguments."""
    canonical = {key: manifest[key] for key in sorted(manifest) if key != "tools"}
    canonical["tools"] = sorted(manifest["tools"], key=lambda tool: str(tool.get("name")))
    text = json.dumps(canonical, indent=2, ensure_ascii=False) + "\n"
    # a lone surrogate (JSON allows "\ud800") cannot be written as UTF-8: keep its escape
    return LONE_SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def load_manifest(path: Path) -> dict[str, Any]:
    """Read a snapshot file (a saved ``tools/list`` result also works)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CodegenError(
            f"cannot read --manifest {path}: {exc.strerror or exc}",
            "pass the path of a tools.json written by mcp-codegen tools, or a saved tools/list result",
        ) from exc
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise CodegenError(f"--manifest {path} is not JSON: {exc}", "fix or regenerate the file") from exc
    if isinstance(manifest, dict) and isinstance(manifest.get("result"), dict):
        manifest = manifest["result"]  # a whole JSON-RPC response
    return manifest if isinstance(manifest, dict) else {"tools": None}


def analyse_tools(manifest: dict[str, Any]) -> ToolSet:
    """Check a snapshot and turn it into a :class:`ToolSet`; every problem is reported."""
    tools = manifest.get("tools")
    if not isinstance(tools, list):
        raise CodegenError(
            "the snapshot has no \"tools\" list",
            "give a tools/list result: {\"tools\": [{\"name\": ..., \"inputSchema\": {...}}]}",
        )
    problems = []
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            problems.append(f"/tools/{index}: a tool needs a non-empty string \"name\"")
        elif not isinstance(tool.get("inputSchema"), dict):
            problems.append(f"/tools/{index} ({tool['name']}): \"inputSchema\" must be an object")
        elif "outputSchema" in tool and not isinstance(tool["outputSchema"], dict):
            problems.append(f"/tools/{index} ({tool['name']}): \"outputSchema\" must be an object")
    names = [tool["name"] for tool in tools if isinstance(tool, dict) and "name" in tool]
    duplicates = sorted({str(name) for name in names if names.count(name) > 1})
    if duplicates:
        problems.append(f"tools listed twice: {', '.join(duplicates)}")
    if problems:
        raise CodegenError("bad tools snapshot: " + "; ".join(problems),
                           "fix the snapshot, or take a fresh one from the server")
    text = manifest_text(manifest)
    modules = module_names([tool["name"] for tool in tools])
    found_info = manifest.get("serverInfo")
    info: dict[str, Any] = found_info if isinstance(found_info, dict) else {}
    revision = manifest.get("protocolVersion")
    return ToolSet(
        text=text,
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
        server_name=str(info.get("name", "")),
        server_version=str(info.get("version", "")),
        revision=revision if isinstance(revision, str) else None,
        tools=tuple(
            Tool(
                name=tool["name"],
                module=modules[tool["name"]],
                title=_text(tool.get("title")) or _text((tool.get("annotations") or {}).get("title")),
                description=_text(tool.get("description")),
                annotations=tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {},
                input_schema=tool["inputSchema"],
                output_schema=tool.get("outputSchema"),
            )
            for tool in sorted(tools, key=lambda tool: str(tool["name"]))
        ),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def python_name(name: str) -> str:
    """``get-sum`` -> ``get_sum``, ``listItems`` -> ``list_items``, ``2fa`` -> ``tool_2fa``."""
    words = NOT_WORD.sub("_", CAMEL_HUMP.sub("_", name)).strip("_").lower()
    words = re.sub("_+", "_", words) or "tool"
    if words[0].isdigit():
        words = "tool_" + words
    taken = words in RESERVED or words in PACKAGE_NAMES or "_" + words in PACKAGE_NAMES
    return words + "_" if taken else words


def module_names(tool_names: list[str]) -> dict[str, str]:
    """Tool name -> module name, with the documented disambiguation (module docstring)."""
    groups: dict[str, list[str]] = {}
    for name in tool_names:
        groups.setdefault(python_name(name), []).append(name)
    chosen = {}
    suffixed = []
    for base, members in groups.items():
        for name in members:
            if len(members) == 1 or name == base:
                chosen[name] = base
            else:
                suffixed.append(name)
    taken = set(chosen.values())
    for name in sorted(suffixed):
        digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
        stem = python_name(name).rstrip("_")
        for digits in range(SUFFIX_DIGITS, len(digest) + 1, 4):
            candidate = f"{stem}_{digest[:digits]}"
            if candidate not in taken:
                break
        else:  # a tool named after the whole sha256 of another's name
            raise CodegenError(f"tool {name!r} has no free module name",
                               "rename one of the server's tools")
        chosen[name] = candidate
        taken.add(candidate)
    return chosen


def tool_document(tool: Tool) -> dict[str, Any]:
    """One JSON Schema document holding ``Params`` (and ``Result``) with their definitions.

    Each side's ``$defs``/``definitions`` move to the shared ``$defs`` (an output definition
    whose name the input already uses differently gets a ``Result`` prefix); references
    follow, and ``#`` (a recursive root) points at the side's own model."""
    defs: dict[str, Any] = {}
    sides = [(PARAMS, tool.input_schema)]
    if tool.output_schema is not None:
        sides.append((RESULT, tool.output_schema))
    for role, original in sides:
        schema = copy.deepcopy(original)
        local: dict[str, Any] = {}
        for key in ("definitions", "$defs"):
            found = schema.pop(key, None)
            if isinstance(found, dict):
                local.update(found)
        renames = {}
        for name, body in local.items():
            new = name if name not in (PARAMS, RESULT) else role + name
            if new in defs and defs[new] != body:
                new = role + name
            renames[name] = new
        for key in ("$schema", "$id", "title", "description"):
            schema.pop(key, None)
        if schema.get("type") == "object" and not any(
            key in schema for key in ("properties", "anyOf", "oneOf", "allOf", "$ref")
        ):
            schema["properties"] = {}
        for node in walk_schemas([schema, *local.values()]):
            reference = node.get("$ref")
            if not isinstance(reference, str):
                continue
            if reference == "#":
                node["$ref"] = f"#/$defs/{role}"
            for prefix in REF_PREFIXES:
                if reference.startswith(prefix) and reference[len(prefix):] in renames:
                    node["$ref"] = f"#/$defs/{renames[reference[len(prefix):]]}"
        for name, body in local.items():
            defs[renames[name]] = body
        defs[role] = schema
    return {"$defs": dict(sorted(defs.items()))}


def reserved_aliases(document: dict[str, Any]) -> dict[str, str]:
    """Wire keys that are Python keywords or builtins -> ``key_`` (``from`` -> ``from_``)."""
    aliases = {}
    for node in walk_schemas(document):
        properties = node.get("properties")
        if isinstance(properties, dict):
            for key in properties:
                if isinstance(key, str) and key in RESERVED:
                    aliases[key] = key + "_"
    return dict(sorted(aliases.items()))
