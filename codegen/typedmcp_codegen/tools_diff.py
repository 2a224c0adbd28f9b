"""``mcp-codegen tools --check``: what changed between two tool snapshots, in tool terms.

Tools added and removed; per tool, arguments and output fields added, removed, made
required or optional and retyped (through ``diff``'s own schema comparison), each marked
breaking for a caller or not: a removed tool or argument, a new required argument, a
narrowed or changed type, a removed output field break calling code; a new tool, a new
optional argument, a new output field or a changed description do not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from .diff import CALLING_CODE, NAMING_CODE, READING_CODE, Change, Comparison, _compare_objects, _describe
from .toolset import PARAMS, RESULT, Tool, ToolSet, tool_document

SECTION = "tools"


@dataclass(frozen=True)
class ToolSchemas:
    """One tool's definitions (``Params``, ``Result`` and theirs), as ``diff`` compares them."""

    defs: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class ToolDrift:
    """Every change from the vendored snapshot (``old``) to the source (``new``)."""

    old: ToolSet
    new: ToolSet
    changes: tuple[Change, ...]

    @property
    def breaking(self) -> bool:
        return any(change.breaking for change in self.changes)

    def to_markdown(self) -> str:
        """The report for people: one entry per tool, breaking changes marked."""
        lines = [
            "# Tool drift: vendored snapshot -> source",
            "",
            f"vendored: {_describe_set(self.old)}  ",
            f"source: {_describe_set(self.new)}",
            "",
        ]
        if not self.changes:
            lines.append("No tool changes (the generated files differ: see below).")
            return "\n".join(lines) + "\n"
        breaking = sum(change.breaking for change in self.changes)
        lines.append(f"{len(self.changes)} changes, {breaking} breaking.")
        lines.append("")
        subject = None
        for change in self.changes:
            if change.subject != subject:
                subject = change.subject
                lines.append(f"- `{subject}`")
            lines.append(f"  - {_describe(change)}")
        return "\n".join(lines) + "\n"


def _describe_set(toolset: ToolSet) -> str:
    server = f"{toolset.server_name} {toolset.server_version}".strip() or "(unnamed server)"
    return f"{server}, {len(toolset.tools)} tools, sha256 {toolset.sha256[:12]}..."


def diff_tools(old: ToolSet, new: ToolSet) -> ToolDrift:
    """Compare two snapshots tool by tool (tools in name order)."""
    before = {tool.name: tool for tool in old.tools}
    after = {tool.name: tool for tool in new.tools}
    changes: list[Change] = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        if was is None and now is not None:
            changes.append(Change(SECTION, name, "tool added", after=now.module))
        elif now is None and was is not None:
            changes.append(Change(SECTION, name, "tool removed", before=was.module, breaks=(CALLING_CODE,)))
        elif was is not None and now is not None:
            changes.extend(_one_tool(was, now))
    return ToolDrift(old, new, tuple(changes))


def _one_tool(was: Tool, now: Tool) -> Iterator[Change]:
    if was.module != now.module:
        yield Change(SECTION, was.name, "module renamed", before=was.module, after=now.module,
                     breaks=(NAMING_CODE,))
    for label, old_text, new_text in (
        ("title", was.title, now.title),
        ("description", was.description, now.description),
        ("annotations", json.dumps(was.annotations, sort_keys=True), json.dumps(now.annotations, sort_keys=True)),
    ):
        if old_text != new_text:
            yield Change(SECTION, was.name, f"{label} changed")
    old_side, new_side = ToolSchemas(tool_document(was)["$defs"]), ToolSchemas(tool_document(now)["$defs"])
    arguments = Comparison(old_side, new_side, SECTION, was.name, "argument",
                           readers=(CALLING_CODE,), writers=(CALLING_CODE,))
    for change in _compare_objects(arguments, _ref(PARAMS), _ref(PARAMS)):
        # an argument that becomes optional, or accepts a new value, breaks no caller
        relaxed = change.change in ("argument made optional", "argument enum value added",
                                    "argument union member added")
        yield replace(change, breaks=()) if relaxed else change
    if was.output_schema is None and now.output_schema is not None:
        yield Change(SECTION, was.name, "output schema added")
    elif was.output_schema is not None and now.output_schema is None:
        yield Change(SECTION, was.name, "output schema removed", breaks=(READING_CODE,))
    elif was.output_schema is not None and now.output_schema is not None:
        outputs = Comparison(old_side, new_side, SECTION, was.name, "output field",
                             readers=(READING_CODE,), writers=())
        yield from _compare_objects(outputs, _ref(RESULT), _ref(RESULT))
    shared = sorted((old_side.defs.keys() & new_side.defs.keys()) - {PARAMS, RESULT})
    for name in shared:  # named types are compared once, here (diff skips same-name refs)
        types = Comparison(old_side, new_side, SECTION, was.name, f"type {name}:",
                           readers=(CALLING_CODE,), writers=(CALLING_CODE,))
        yield from _compare_objects(types, _ref(name), _ref(name))


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}
