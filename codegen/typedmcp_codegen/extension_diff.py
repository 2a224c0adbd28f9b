"""``mcp-codegen diff`` for extensions: what a new schema of an extension changes.

A side is an extension when it is a pinned extension's name (``tasks``: its pinned schema),
a package folder written by ``mcp-codegen --extension`` (the pinned schema it records), or a
schema file whose sha256 is an extension's pin. A schema file that is none of these is read
as a schema of the other side's extension (an upstream update), unpinned. Both sides go
through the extension pipeline's front half (hoisted params, the extension's own methods),
then through the same comparison as two revisions.
"""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

from .analyse import Protocol
from .diff import DiffReport, Side, diff
from .document import Era, definitions
from .errors import CodegenError
from .extension import analyse_extension, core_methods, hoist_params
from .extension_pins import ExtensionPin, ExtensionTable, lift_nested_defs, load_extension_schema
from .load import LoadedSchema, SchemaSource, meta_validate, parse_json, read_schema_file
from .models import field_aliases
from .pins import PinTable
from .rewrite import rewrite_for_models

#: ``Side.era`` of an extension (the report's header line says "extension era").
EXTENSION_ERA = "extension"


def resolve_extension(
    argument: str, table: ExtensionTable, source: SchemaSource
) -> tuple[ExtensionPin, LoadedSchema] | None:
    """The extension and schema ``argument`` names, or None when it names no extension
    (a revision, a revision's package, or a schema file of no pinned extension)."""
    path = Path(argument)
    if path.is_dir():
        recorded = _recorded_extension(path)
        if recorded is None:
            return None
        name, sha256 = recorded
        pin = table.find(name)
        if pin.sha256 != sha256:
            raise CodegenError(
                f"{path} was generated from another schema of extension {name} (sha256 "
                f"{sha256}), which mcp-codegen cannot find by name",
                "pass that schema file instead of the folder",
            )
        return pin, load_extension_schema(pin, source)
    if path.is_file():
        digest = hashlib.sha256(read_schema_file(path)).hexdigest()
        pin_of_file = next((p for p in table.pins if p.sha256 == digest), None)
        if pin_of_file is None:
            return None
        return pin_of_file, _loaded_file(path, pin_of_file)
    if argument in table.names:
        pin = table.find(argument)
        return pin, load_extension_schema(pin, source)
    return None


def extension_sides(
    old: str, new: str, pins: PinTable, table: ExtensionTable, source: SchemaSource
) -> tuple[Side, Side] | None:
    """Both sides of an extension diff, or None when neither names an extension."""
    found = {argument: resolve_extension(argument, table, source) for argument in (old, new)}
    known = [resolved for resolved in found.values() if resolved is not None]
    if not known:
        return None
    pin = known[0][0]
    sides = []
    for argument, resolved in found.items():
        if resolved is None:
            path = Path(argument)
            if not path.is_file():
                raise CodegenError(
                    f"{argument}: the other side is the extension {pin.name}, so this side "
                    "must be one too",
                    f"pass a schema file of the extension, the name {pin.name}, or a folder "
                    "written by mcp-codegen --extension",
                )
            resolved = (pin, _loaded_file(path, None))
        elif resolved[0].name != pin.name:
            raise CodegenError(
                f"the sides are different extensions ({pin.name} and {resolved[0].name})",
                "compare two schemas of one extension",
            )
        sides.append(_side(argument, resolved[1], resolved[0], core_methods(pin, pins, source)))
    return sides[0], sides[1]


def extension_diff(old: Side, new: Side) -> DiffReport:
    """The comparison of two extension sides: methods and types (an extension's package has
    no typed client or handler classes, so the generated-signature section is left out)."""
    report = diff(old, new)
    kept = tuple(change for change in report.changes if change.section != "signatures")
    return DiffReport(report.old, report.new, kept)


def _side(label: str, schema: LoadedSchema, pin: ExtensionPin, core: frozenset[str]) -> Side:
    document = hoist_params(schema.document)
    protocol = analyse_extension(document, pin, core)
    rewritten = rewrite_for_models(document)
    revision = f"{pin.name} {pin.version}" if schema.pinned else f"{pin.name} (unpinned)"
    return Side(
        label=label,
        revision=revision,
        sha256=schema.sha256,
        era=EXTENSION_ERA,
        protocol=Protocol(revision, Era.STATELESS, schema.sha256, protocol.requests,
                          protocol.notifications),
        defs=definitions(rewritten),
        aliases=field_aliases(rewritten),
    )


def _loaded_file(path: Path, pin: ExtensionPin | None) -> LoadedSchema:
    """A schema file of an extension: the pinned one (``pin``) or a new one, as given."""
    raw = read_schema_file(path)
    document = lift_nested_defs(parse_json(raw, str(path)), str(path))
    meta_validate(document, str(path), None)
    name = pin.name if pin is not None else path.stem
    return LoadedSchema(name, hashlib.sha256(raw).hexdigest(), pin is not None, str(path), document)


def _recorded_extension(folder: Path) -> tuple[str, str] | None:
    """(NAME, SCHEMA_SHA256) an extension package's ``__init__.py`` records, or None."""
    try:
        tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            target = node.target if isinstance(node, ast.AnnAssign) else node.targets[0]
            value = node.value
            if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
                found[target.id] = value.value
    if {"NAME", "IDENTIFIER", "SCHEMA_SHA256"} <= set(found):
        return found["NAME"], found["SCHEMA_SHA256"]
    return None

