"""``mcp-codegen diff A B``: what moving from one schema to another changes, in protocol terms.

Both sides go through the generator's own front half: ``analyse`` (methods, directions,
params/result types, capability gates) and ``rewrite`` (the schema as the models see it), so
the report speaks of methods, fields, enum values, capabilities and the generated handler and
client signatures, never of text lines. Each change says whether it breaks code written
against the old side, and whose: handler code (what a server or client implements), calling
code (what sends requests) or code that names a model.

A side is a revision name (``2025-06-18``, ``latest``, ``draft``), a schema file, or a folder
written by ``mcp-codegen`` (its ``__init__.py`` records the revision and the schema's sha256;
the schema is then looked up like any other and must have that sha256).
"""

from __future__ import annotations

import ast
import json
import keyword
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from typing import Protocol as TypingProtocol

from .analyse import Direction, Notification, Protocol, Request, analyse
from .document import HANDSHAKE_MESSAGES, definitions, ref_name
from .errors import CodegenError
from .load import LoadedSchema, SchemaSource, load_schema, load_schema_file
from .models import field_aliases
from .names import snake_case
from .pins import PinTable
from .rewrite import rewrite_for_models

#: Definitions the report covers in its own sections (capabilities), not among the types.
CAPABILITY_DEFINITIONS = {"client": "ClientCapabilities", "server": "ServerCapabilities"}
# Who a breaking change breaks.
HANDLER_CODE = "handler code"
CALLING_CODE = "calling code"
READING_CODE = "code reading it"
BUILDING_CODE = "code building it"
NAMING_CODE = "code naming it"
SECTIONS = ("methods", "types", "capabilities", "signatures")
SECTION_TITLES = {
    "methods": "Methods",
    "types": "Types",
    "capabilities": "Capabilities",
    "signatures": "Generated signatures",
}
MAX_DEPTH = 8


@dataclass(frozen=True)
class Change:
    """One difference between the two sides.

    ``section``: methods, types, capabilities or signatures. ``subject``: what changed (a
    method, a type, ``client``/``server`` capabilities, ``ServerHandlers.call_tool``).
    ``change``: what happened to it (``added``, ``field removed``, ``made required``, ...),
    ``item`` the field, value or argument concerned, ``before``/``after`` the old and new
    value where there is one. ``breaks`` names the code it breaks (empty: nothing breaks).
    """

    section: str
    subject: str
    change: str
    item: str = ""
    before: str | None = None
    after: str | None = None
    breaks: tuple[str, ...] = ()

    @property
    def breaking(self) -> bool:
        return bool(self.breaks)


@dataclass(frozen=True)
class Side:
    """One side of a diff: where it came from and its protocol model."""

    label: str
    revision: str
    sha256: str
    era: str
    protocol: Protocol
    defs: dict[str, Any] = field(repr=False)
    aliases: dict[str, str] = field(repr=False)


@dataclass(frozen=True)
class DiffReport:
    """Every change from ``old`` to ``new``, in a stable order."""

    old: Side
    new: Side
    changes: tuple[Change, ...]

    @property
    def breaking(self) -> bool:
        return any(change.breaking for change in self.changes)

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (``mcp-codegen diff --json``)."""
        sides = {
            name: {"label": s.label, "revision": s.revision, "sha256": s.sha256, "era": s.era}
            for name, s in (("old", self.old), ("new", self.new))
        }
        changes = []
        for change in self.changes:
            entry = asdict(change)
            entry["breaks"] = list(change.breaks)
            entry["breaking"] = change.breaking
            changes.append(entry)
        return {
            **sides,
            "breaking": self.breaking,
            "summary": {
                "changes": len(self.changes),
                "breaking": sum(change.breaking for change in self.changes),
            },
            "changes": changes,
        }

    def to_markdown(self) -> str:
        """The report for people: one section per area, breaking changes marked."""
        breaking = sum(change.breaking for change in self.changes)
        lines = [
            f"# MCP schema diff: {self.old.label} -> {self.new.label}",
            "",
            f"{_side_line('old', self.old)}  ",
            f"{_side_line('new', self.new)}",
            "",
        ]
        if not self.changes:
            lines.append("No changes.")
            return "\n".join(lines) + "\n"
        marked = " (marked **breaking**, with the code they break)" if breaking else ""
        lines.append(f"{len(self.changes)} changes, {breaking} breaking{marked}.")
        for section in SECTIONS:
            entries = [c for c in self.changes if c.section == section]
            if not entries:
                continue
            lines += ["", f"## {SECTION_TITLES[section]}", ""]
            subject = None
            for change in entries:
                if change.subject != subject:
                    subject = change.subject
                    lines.append(f"- `{subject}`")
                lines.append(f"  - {_describe(change)}")
        return "\n".join(lines) + "\n"


def _side_line(name: str, side: Side) -> str:
    sha = side.sha256[:12]
    return f"{name}: {side.label} (revision {side.revision}, {side.era} era, sha256 {sha}...)"


def _describe(change: Change) -> str:
    text = change.change
    if change.item:
        text += f" `{change.item}`"
    if change.before is not None and change.after is not None:
        text += f": `{change.before}` -> `{change.after}`"
    elif change.after is not None:
        text += f": `{change.after}`"
    elif change.before is not None:
        text += f" (was `{change.before}`)"
    if change.breaks:
        text = f"**breaking** ({', '.join(change.breaks)}): {text}"
    return text


# -- loading the two sides -----------------------------------------------------------------


def load_side(argument: str, pins: PinTable, source: SchemaSource) -> Side:
    """A revision name, a schema file or a folder written by mcp-codegen."""
    path = Path(argument)
    if path.is_dir():
        schema = _vendored_schema(path, pins, source)
        label = f"{argument} ({schema.revision})"
    elif path.is_file():
        schema = load_schema_file(path, pins)
        label = argument
    elif "/" in argument or argument.endswith(".json"):
        raise CodegenError(
            f"{argument}: no such schema file or package folder",
            "pass a revision name (see mcp-codegen --list), a schema.json or a folder "
            "written by mcp-codegen",
        )
    else:
        schema = load_schema(argument, pins, source)
        label = schema.revision
    return side_of(schema, label)


def side_of(schema: LoadedSchema, label: str) -> Side:
    """Analyse a loaded schema for the diff."""
    protocol = analyse(schema.document, schema.revision, schema.sha256)
    rewritten = rewrite_for_models(schema.document)
    return Side(
        label=label,
        revision=schema.revision,
        sha256=schema.sha256,
        era=protocol.era.value,
        protocol=protocol,
        defs=definitions(rewritten),
        aliases=field_aliases(rewritten),
    )


def recorded_revision(folder: Path) -> tuple[str, str]:
    """(revision, schema sha256) that a package written by mcp-codegen records."""
    init = folder / "__init__.py"
    try:
        tree = ast.parse(init.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError) as exc:
        raise CodegenError(
            f"{folder}: no readable __init__.py ({exc})",
            "pass a folder written by mcp-codegen (it holds __init__.py, models/, ...)",
        ) from exc
    found: dict[str, str] = {}
    for node in tree.body:
        target: ast.expr
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        else:
            continue
        text = value.value if isinstance(value, ast.Constant) else None
        if isinstance(target, ast.Name) and isinstance(text, str):
            found[target.id] = text
    if "PROTOCOL_VERSION" not in found or "SCHEMA_SHA256" not in found:
        raise CodegenError(
            f"{folder}: its __init__.py records no PROTOCOL_VERSION and SCHEMA_SHA256",
            "pass a package folder written by mcp-codegen, or the schema file itself",
        )
    return found["PROTOCOL_VERSION"], found["SCHEMA_SHA256"]


def _vendored_schema(folder: Path, pins: PinTable, source: SchemaSource) -> LoadedSchema:
    revision, sha256 = recorded_revision(folder)
    pin = pins.find(revision)
    if pin is None or pin.sha256 != sha256:
        why = "an unpinned" if pin is None or pin.floating else "another"
        raise CodegenError(
            f"{folder} was generated from {why} schema of revision {revision} "
            f"(sha256 {sha256}), which mcp-codegen cannot find by name",
            "pass that schema file instead of the folder",
        )
    schema = load_schema(revision, pins, source)
    assert schema.sha256 == sha256  # load_schema verified it against the same pin
    return schema


# -- the comparison -------------------------------------------------------------------------


def diff(old: Side, new: Side) -> DiffReport:
    """Compare two sides: methods, then types, capabilities and generated signatures."""
    changes: list[Change] = []
    covered = _method_changes(old, new, changes)
    _type_changes(old, new, covered, changes)
    _capability_changes(old, new, changes)
    _signature_changes(old, new, changes)
    return DiffReport(old, new, tuple(changes))


Message = Request | Notification


def _messages(protocol: Protocol) -> dict[str, Message]:
    messages: list[Message] = [*protocol.requests, *protocol.notifications]
    return {message.method: message for message in messages}


def _kind(message: Message) -> str:
    return "request" if isinstance(message, Request) else "notification"


def _method_changes(old: Side, new: Side, changes: list[Change]) -> set[str]:
    """Methods added, removed or changed; returns the types reported here (params/results)."""
    before, after = _messages(old.protocol), _messages(new.protocol)
    covered: set[str] = set()
    for method in sorted(before.keys() | after.keys()):
        was, now = before.get(method), after.get(method)
        if was is None and now is not None:
            changes.append(
                Change("methods", method, f"{_kind(now)} added", after=now.direction.value)
            )
            continue
        if now is None and was is not None:
            changes.append(
                Change(
                    "methods",
                    method,
                    f"{_kind(was)} removed",
                    before=was.direction.value,
                    breaks=(HANDLER_CODE, CALLING_CODE),
                )
            )
            continue
        assert was is not None and now is not None
        changes.extend(_one_method(old, new, was, now, covered))
    return covered


def _one_method(
    old: Side, new: Side, was: Message, now: Message, covered: set[str]
) -> Iterator[Change]:
    method = was.method
    if was.direction is not now.direction:
        yield Change(
            "methods",
            method,
            "direction changed",
            before=was.direction.value,
            after=now.direction.value,
            breaks=(HANDLER_CODE, CALLING_CODE),
        )
    if _gates(was) != _gates(now):
        yield Change(
            "methods", method, "capability gate changed", before=_gates(was), after=_gates(now)
        )
    if was.params_type != now.params_type:
        yield Change(
            "methods",
            method,
            "params type renamed",
            before=str(was.params_type),
            after=str(now.params_type),
        )
    if was.params_required != now.params_required:
        yield Change(
            "methods",
            method,
            "params made required" if now.params_required else "params made optional",
            breaks=(CALLING_CODE,) if now.params_required else (HANDLER_CODE,),
        )
    old_params, new_params = _params_node(old, was), _params_node(new, now)
    if was.params_type == now.params_type and was.params_type is not None:
        covered.add(was.params_type)
    params = Comparison(
        old, new, "methods", method, "params field", (HANDLER_CODE,), (CALLING_CODE,)
    )
    if _is_object(old, old_params) and _is_object(new, new_params):
        yield from _compare_objects(params, old_params, new_params)
    elif old_params is not None and new_params is not None:
        old_text = type_text(_deref(old.defs, old_params))
        new_text = type_text(_deref(new.defs, new_params))
        if old_text != new_text:
            yield Change(
                "methods",
                method,
                "params retyped",
                before=old_text,
                after=new_text,
                breaks=(HANDLER_CODE, CALLING_CODE),
            )
    if isinstance(was, Request) and isinstance(now, Request):
        if was.result_type != now.result_type:
            yield Change(
                "methods",
                method,
                "result type renamed",
                before=was.result_type,
                after=now.result_type,
            )
        else:
            covered.add(was.result_type)
        result = Comparison(
            old, new, "methods", method, "result field", (CALLING_CODE,), (HANDLER_CODE,)
        )
        yield from _compare_objects(
            result, old.defs.get(was.result_type), new.defs.get(now.result_type)
        )
        for alternative in sorted(
            set(now.alternative_result_types) - set(was.alternative_result_types)
        ):
            yield Change("methods", method, "alternative result added", item=alternative)
        for alternative in sorted(
            set(was.alternative_result_types) - set(now.alternative_result_types)
        ):
            yield Change(
                "methods",
                method,
                "alternative result removed",
                item=alternative,
                breaks=(HANDLER_CODE,),
            )


def _gates(message: Message) -> str:
    return ", ".join(f"{gate.side}:{'.'.join(gate.path)}" for gate in message.gates) or "none"


def _params_node(side: Side, message: Message) -> Any:
    """The params schema of a message (inline or a definition), as the models see it."""
    kind = message.request_type if isinstance(message, Request) else message.notification_type
    return side.defs.get(kind, {}).get("properties", {}).get("params")


# -- comparing schemas ------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldView:
    """A property of an object schema: its type in words, requiredness and schema node."""

    type_text: str
    required: bool
    node: Any = field(compare=False, repr=False)


class Schemas(TypingProtocol):
    """What comparing schemas needs of a side: its definitions by name (a :class:`Side`, or
    one tool's schemas in ``mcp-codegen tools --check``)."""

    @property
    def defs(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Comparison:
    """What one comparison reports: where, with which words, and whose code breaks how.

    ``readers`` break when something they read goes away or changes; ``writers`` when more
    is demanded of them (a new required field) or something they set goes away (a removed
    field: its constructor keyword or send argument is gone)."""

    old: Schemas
    new: Schemas
    section: str
    subject: str
    noun: str
    readers: tuple[str, ...]
    writers: tuple[str, ...]

    def change(self, change: str, item: str = "", **values: Any) -> Change:
        return Change(self.section, self.subject, f"{self.noun} {change}", item, **values)

    @property
    def everyone(self) -> tuple[str, ...]:
        """The readers and the writers, each once."""
        return tuple(dict.fromkeys(self.readers + self.writers))


def _deref(defs: dict[str, Any], node: Any) -> Any:
    for _ in range(MAX_DEPTH):
        name = ref_name(node)
        if name is None:
            return node
        node = defs.get(name, {})
    return node


def _fields(side: Schemas, node: Any) -> dict[str, FieldView]:
    """The properties of an object schema (``allOf`` parts merged), by wire name."""
    node = _deref(side.defs, node)
    if not isinstance(node, dict):
        return {}
    properties: dict[str, Any] = dict(node.get("properties", {}))
    required = set(node.get("required", ()))
    for branch in node.get("allOf", ()):
        branch = _deref(side.defs, branch)
        if isinstance(branch, dict):
            properties.update(branch.get("properties", {}))
            required.update(branch.get("required", ()))
    return {
        name: FieldView(type_text(schema), name in required, schema)
        for name, schema in properties.items()
    }


def _is_object(side: Schemas, node: Any) -> bool:
    node = _deref(side.defs, node)
    return isinstance(node, dict) and ("properties" in node or "allOf" in node)


def _enum(node: Any) -> tuple[str, ...] | None:
    if isinstance(node, dict) and isinstance(node.get("enum"), list):
        return tuple(json.dumps(value) for value in node["enum"])
    return None


def type_text(node: Any) -> str:
    """A schema node's type in words: ``string``, ``array of ContentBlock``, ``"a" | "b"``."""
    if not isinstance(node, dict):
        return "any" if node is not False else "nothing"
    name = ref_name(node)
    if name is not None:
        return name
    if "const" in node:
        return json.dumps(node["const"])
    if "enum" in node:
        return " | ".join(json.dumps(value) for value in node["enum"])
    for key in ("anyOf", "oneOf"):  # a union: its members in a stable order
        if isinstance(node.get(key), list):
            return " | ".join(sorted(type_text(branch) for branch in node[key]))
    if isinstance(node.get("allOf"), list):
        return " & ".join(type_text(branch) for branch in node["allOf"])
    kinds = node.get("type")
    parts = []
    for kind in kinds if isinstance(kinds, list) else [kinds] if kinds else []:
        if kind == "array":
            parts.append(f"array of {type_text(node['items'])}" if "items" in node else "array")
        elif (
            kind == "object"
            and "properties" not in node
            and isinstance(node.get("additionalProperties"), dict)
            and node["additionalProperties"]
        ):
            parts.append(f"map of {type_text(node['additionalProperties'])}")
        else:
            parts.append(str(kind))
    return " | ".join(parts) or "any"


def _compare_objects(
    how: Comparison, was: Any, now: Any, prefix: str = "", depth: int = 0
) -> Iterator[Change]:
    """Fields added, removed, made required or optional, retyped; nested objects followed."""
    before, after = _fields(how.old, was), _fields(how.new, now)
    for name in sorted(before.keys() | after.keys()):
        path = f"{prefix}{name}"
        old_field, new_field = before.get(name), after.get(name)
        if old_field is None and new_field is not None:
            required = new_field.required
            yield how.change(
                f"added ({'required' if required else 'optional'})",
                path,
                after=new_field.type_text,
                breaks=how.writers if required else (),
            )
        elif new_field is None and old_field is not None:
            # gone for the code that reads it, and for the code that sets it (a constructor
            # keyword, a send method's argument, which mypy then refuses)
            yield how.change("removed", path, before=old_field.type_text, breaks=how.everyone)
        elif old_field is not None and new_field is not None:
            if old_field.required != new_field.required:
                required = new_field.required
                yield how.change(
                    f"made {'required' if required else 'optional'}",
                    path,
                    breaks=how.writers if required else how.readers,
                )
            yield from _compare_nodes(how, path, old_field.node, new_field.node, depth)


def _compare_nodes(
    how: Comparison, path: str, was: Any, now: Any, depth: int = 0
) -> Iterator[Change]:
    """One property's type on both sides. A type of the same name is compared once, in the
    types section; objects of different names (or inline) are compared field by field, so a
    renamed type with the same fields is a rename, not a break."""
    old_name, new_name = ref_name(was), ref_name(now)
    if (old_name is not None and old_name == new_name) or depth > MAX_DEPTH:
        return
    old_text, new_text = type_text(was), type_text(now)
    old_values, new_values = _enum(_deref(how.old.defs, was)), _enum(_deref(how.new.defs, now))
    if old_values is not None and new_values is not None:
        for value in (v for v in new_values if v not in old_values):
            yield how.change("enum value added", f"{path} = {value}")
        for value in (v for v in old_values if v not in new_values):
            yield how.change("enum value removed", f"{path} = {value}", breaks=how.writers)
        return
    old_members = _union_members(_deref(how.old.defs, was))
    new_members = _union_members(_deref(how.new.defs, now))
    if old_members is not None and new_members is not None:
        for member in (m for m in new_members if m not in old_members):
            yield how.change("union member added", path, after=member)
        for member in (m for m in old_members if m not in new_members):
            yield how.change("union member removed", path, before=member, breaks=how.writers)
        return
    if _is_object(how.old, was) and _is_object(how.new, now):
        nested = list(_compare_objects(how, was, now, f"{path}.", depth + 1))
        if old_text != new_text:
            what = "type renamed" if not nested else "type changed"
            yield how.change(what, path, before=old_text, after=new_text)
        yield from nested
        return
    old_items, new_items = _items(how.old, was), _items(how.new, now)
    if old_items is not None and new_items is not None:
        yield from _compare_nodes(how, f"{path}[]", old_items, new_items, depth + 1)
        return
    if old_text != new_text:
        yield how.change(
            "retyped", path, before=old_text, after=new_text, breaks=how.readers + how.writers
        )


def _items(side: Schemas, node: Any) -> Any:
    node = _deref(side.defs, node)
    if isinstance(node, dict) and node.get("type") == "array" and "items" in node:
        return node["items"]
    return None


# -- types, capabilities, signatures ----------------------------------------------------------


def _reachable(side: Side) -> set[str]:
    """Definitions user code can meet: everything the params and results refer to."""
    roots: list[Any] = []
    for message in _messages(side.protocol).values():
        roots.append(_params_node(side, message))
        if isinstance(message, Request):
            roots += [
                {"$ref": f"#/{name}"}
                for name in (message.result_type, *message.alternative_result_types)
            ]
    seen: set[str] = set()
    stack = roots
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            name = ref_name(node)
            if name is not None and name not in seen and name in side.defs:
                seen.add(name)
                stack.append(side.defs[name])
            stack.extend(value for key, value in node.items() if key not in ("const", "enum"))
    return seen


def _type_changes(old: Side, new: Side, covered: set[str], changes: list[Change]) -> None:
    names = (_reachable(old) | _reachable(new)) - covered - set(CAPABILITY_DEFINITIONS.values())
    for name in sorted(names):
        was, now = old.defs.get(name), new.defs.get(name)
        if was is None and now is not None:
            changes.append(Change("types", name, "type added", after=_shape(now)))
        elif now is None and was is not None:
            changes.append(
                Change("types", name, "type removed", before=_shape(was), breaks=(NAMING_CODE,))
            )
        elif was is not None and now is not None:
            changes.extend(_one_type(old, new, name, was, now))


def _shape(node: Any) -> str:
    if isinstance(node, dict) and "properties" in node:
        return "object"
    return type_text(node)


def _one_type(old: Side, new: Side, name: str, was: Any, now: Any) -> Iterator[Change]:
    how = Comparison(old, new, "types", name, "field", (READING_CODE,), (BUILDING_CODE,))
    if _enum(was) is not None and _enum(now) is not None:
        values = Comparison(old, new, "types", name, "enum", (READING_CODE,), (BUILDING_CODE,))
        old_values, new_values = _enum(was) or (), _enum(now) or ()
        for value in (v for v in new_values if v not in old_values):
            yield values.change("value added", value)
        for value in (v for v in old_values if v not in new_values):
            yield values.change("value removed", value, breaks=(BUILDING_CODE,))
        return
    members = [_union_members(node) for node in (was, now)]
    if members[0] is not None and members[1] is not None:
        for member in (m for m in members[1] if m not in members[0]):
            yield Change("types", name, "union member added", item=member)
        for member in (m for m in members[0] if m not in members[1]):
            yield Change(
                "types", name, "union member removed", item=member, breaks=(BUILDING_CODE,)
            )
        return
    if _is_object(old, was) and _is_object(new, now):
        yield from _compare_objects(how, was, now)
    elif _shape(was) != _shape(now):
        yield Change(
            "types",
            name,
            "retyped",
            before=_shape(was),
            after=_shape(now),
            breaks=(READING_CODE, BUILDING_CODE),
        )


def _union_members(node: Any) -> list[str] | None:
    branches = node.get("anyOf") if isinstance(node, dict) else None
    if not isinstance(branches, list):
        return None
    names = [ref_name(branch) for branch in branches]
    return [n for n in names if n] if all(names) else None


def _capability_changes(old: Side, new: Side, changes: list[Change]) -> None:
    for side, name in CAPABILITY_DEFINITIONS.items():
        before = _capabilities(old, old.defs.get(name))
        after = _capabilities(new, new.defs.get(name))
        for path in sorted(after.keys() - before.keys()):
            changes.append(
                Change("capabilities", side, "capability added", item=path, after=after[path])
            )
        for path in sorted(before.keys() - after.keys()):
            changes.append(
                Change(
                    "capabilities",
                    side,
                    "capability removed",
                    item=path,
                    before=before[path],
                    breaks=(HANDLER_CODE,),
                )
            )
        for path in sorted(before.keys() & after.keys()):
            if before[path] != after[path]:
                changes.append(
                    Change(
                        "capabilities",
                        side,
                        "capability retyped",
                        item=path,
                        before=before[path],
                        after=after[path],
                        breaks=(HANDLER_CODE,),
                    )
                )


def _capabilities(side: Side, node: Any, prefix: str = "", depth: int = 0) -> dict[str, str]:
    """Capability path -> type; nested capability objects are followed through ``$ref``."""
    node = _deref(side.defs, node)
    if not isinstance(node, dict) or depth > MAX_DEPTH:
        return {}
    found: dict[str, str] = {}
    for name, schema in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        target = _deref(side.defs, schema)
        if isinstance(target, dict) and target.get("properties"):
            found[path] = "object"
            found.update(_capabilities(side, target, f"{path}.", depth + 1))
        else:
            found[path] = type_text(schema)
    return found


@dataclass(frozen=True)
class Signature:
    """A generated method: handler (params annotation) or sender (keyword arguments)."""

    params: str
    returns: tuple[str, ...]
    arguments: dict[str, FieldView] | None


def signatures(side: Side) -> dict[str, Signature]:
    """``Class.method`` -> signature, for every method of the generated stub classes."""
    found: dict[str, Signature] = {}
    for message in _messages(side.protocol).values():
        for sender, (handlers, senders) in (
            (Direction.CLIENT_TO_SERVER, ("ServerHandlers", "Client")),
            (Direction.SERVER_TO_CLIENT, ("ClientHandlers", "ClientPeer")),
        ):
            if message.direction not in (sender, Direction.BOTH):
                continue
            params = "None"
            if message.params_type is not None:
                params = f"models.{message.params_type}"
                params += "" if message.params_required else " | None"
            if isinstance(message, Request):
                returns = tuple(
                    f"models.{name}"
                    for name in (message.result_type, *message.alternative_result_types)
                )
                handler, send = message.handler_name, message.handler_name
            else:
                returns = ("None",)
                handler, send = f"on_{message.handler_name}", f"send_{message.handler_name}"
            found[f"{handlers}.{handler}"] = Signature(params, returns, None)
            if message.method not in HANDSHAKE_MESSAGES:  # the runtime's, not a Client method
                found[f"{senders}.{send}"] = Signature(params, returns[:1], _arguments(side, message))
            for variant in message.variants if isinstance(message, Request) else ():
                if not variant.default:  # its own hook (elicit_url), typed with its branch
                    hook = Signature(f"models.{variant.params_type}", returns, None)
                    found[f"{handlers}.{variant.handler_name}"] = hook
    return dict(sorted(found.items()))


def _arguments(side: Side, message: Message) -> dict[str, FieldView] | None:
    """Keyword arguments of a send method (None: it takes one ``params`` model)."""
    if message.params_type is None:
        return {}
    node = _params_node(side, message)
    if not _is_object(side, node):
        return None
    arguments = {}
    for wire, view in _fields(side, node).items():
        name = side.aliases.get(wire) or snake_case(wire)
        name = f"{name}_" if keyword.iskeyword(name) else name
        arguments[name] = FieldView(view.type_text, view.required and wire != "_meta", view.node)
    return arguments


def _signature_changes(old: Side, new: Side, changes: list[Change]) -> None:
    before, after = signatures(old), signatures(new)
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name), after.get(name)
        handler = name.split(".")[0].endswith("Handlers")
        breaks = (HANDLER_CODE,) if handler else (CALLING_CODE,)
        if was is None and now is not None:
            changes.append(Change("signatures", name, "method added"))
        elif now is None and was is not None:
            changes.append(Change("signatures", name, "method removed", breaks=breaks))
        elif was is not None and now is not None:
            how = Comparison(old, new, "signatures", name, "argument", (), breaks)
            changes.extend(_one_signature(how, handler, was, now))


def _one_signature(
    how: Comparison, handler: bool, was: Signature, now: Signature
) -> Iterator[Change]:
    if was.returns != now.returns:
        widened = handler and set(was.returns) <= set(now.returns)
        yield Change(
            how.section,
            how.subject,
            "returns",
            before=" | ".join(was.returns),
            after=" | ".join(now.returns),
            breaks=() if widened else how.writers,
        )
    if was.arguments is None or now.arguments is None or handler:
        if was.params != now.params:
            yield Change(
                how.section,
                how.subject,
                "params",
                before=was.params,
                after=now.params,
                breaks=how.writers,
            )
        return
    for argument in sorted(was.arguments.keys() | now.arguments.keys()):
        a, b = was.arguments.get(argument), now.arguments.get(argument)
        if a is None and b is not None:
            yield how.change(
                f"added ({'required' if b.required else 'optional'})",
                argument,
                after=b.type_text,
                breaks=how.writers if b.required else (),
            )
        elif b is None and a is not None:
            yield how.change("removed", argument, before=a.type_text, breaks=how.writers)
        elif a is not None and b is not None:
            if a.required != b.required:
                yield how.change(
                    f"made {'required' if b.required else 'optional'}",
                    argument,
                    breaks=how.writers if b.required else (),
                )
            if a.type_text != b.type_text:
                # what a caller may pass: breaking if anything it passed is no longer taken
                nested = list(_compare_nodes(how, argument, a.node, b.node))
                breaking = any(change.breaking for change in nested)
                yield how.change(
                    "retyped" if breaking else "type renamed",
                    argument,
                    before=a.type_text,
                    after=b.type_text,
                    breaks=how.writers if breaking else (),
                )
