"""The extension pipeline: an extension's pinned schema -> a typed package of its own.

The same stages as a core revision (load -> analyse -> models -> render -> format), with an
analysis of its own, because an extension's schema has no Client*/Server* unions: its
messages are the definitions with a constant ``method`` (``XRequest`` paired with
``XResult``, ``XNotification``), less the methods of the core revision it extends (which its
schema repeats only because its types refer to them: ext-tasks carries ``elicitation/create``
for the input requests a task asks). The schema is first rewritten (:func:`hoist_params`),
none of it changing an accepted instance: inline params become definitions of their own
(``GetTaskRequestParams``), so the method table can name them; a message written as
``allOf`` of the JSON-RPC envelope and its own object becomes one object; and a request with
no result of its own gets :data:`EMPTY_RESULT`.

The package: ``__init__.py`` (identifier, version, sha256 of the schema), ``dispatch.py``
(``REQUESTS`` and ``NOTIFICATIONS``: method -> spec, as a core revision's table) and the
lazy ``models`` package.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Any

from .analyse import Direction, Gate, Notification, Protocol, Request, analyse, handler_name
from .document import JSONObject, definitions, definitions_key, ref_name
from .errors import CodegenError
from .extension_pins import EXTENSIONS_FOLDER, ExtensionPin, load_extension_schema
from .format import format_files
from .load import LoadedSchema, SchemaSource, load_schema
from .models import emit_models, index_models, prune_unused_imports
from .pins import PinTable
from .render import (
    PackageHeader,
    extension_dispatch,
    render_extension_init,
    render_extensions_root,
    render_models,
)

#: The capability path every extension method is gated by: ``extensions.<identifier>``.
CAPABILITY_ROOT = "extensions"
RECEIVER = {"client": "server", "server": "client"}
#: The result of a request whose schema names none (``XRequest`` without ``XResult``: ext-apps'
#: ``ui/update-model-context``, whose package answers it with the core's empty result).
EMPTY_RESULT = "EmptyResult"
EMPTY_RESULT_SCHEMA: JSONObject = {
    "type": "object",
    "description": "An empty result (added by mcp-codegen: the extension's schema names no "
    "result for the requests that answer with it).",
}


@dataclass(frozen=True)
class ExtensionProtocol:
    """The extension's own methods (the core's left out), in method order."""

    requests: tuple[Request, ...]
    notifications: tuple[Notification, ...]


def core_methods(pin: ExtensionPin, pins: PinTable, source: SchemaSource) -> frozenset[str]:
    """The methods of the core revision ``pin`` extends (none when it names none)."""
    if pin.revision is None:
        return frozenset()
    if pins.find(pin.revision) is None:
        raise CodegenError(
            f"extensions/pins.json: extension {pin.name} extends revision {pin.revision}, "
            "which is not pinned",
            "correct its 'revision' (see mcp-codegen --list)",
        )
    schema = load_schema(pin.revision, pins, source)
    return methods_of(analyse(schema.document, schema.revision, schema.sha256))


def methods_of(protocol: Protocol) -> frozenset[str]:
    """Every request and notification method of a core revision."""
    return frozenset([r.method for r in protocol.requests] + [n.method for n in protocol.notifications])


def hoist_params(document: JSONObject) -> JSONObject:
    """A copy of ``document`` where each message's inline ``params`` is a definition of its
    own, ``<Message>Params`` (the method table and the models then share one name), plus
    :data:`EMPTY_RESULT` when a request has no result of its own (the schema's own
    ``EmptyResult``, if it has one, is kept). A message written as ``allOf`` of the JSON-RPC
    envelope and its own object is flattened into one object (see :func:`_flatten_envelope`)."""
    hoisted = copy.deepcopy(document)
    defs = definitions(hoisted)
    key = definitions_key(hoisted)
    for name in sorted(defs):
        branch = _method_branch(defs[name])
        if branch is None:
            continue
        params = branch.get("properties", {}).get("params")
        if not isinstance(params, dict) or ref_name(params) is not None:
            continue
        params_name = f"{name}Params"
        if _same_schema(defs.get(params_name), params):  # the schema names it already
            branch["properties"]["params"] = {"$ref": f"#/{key}/{params_name}"}
            continue
        if params_name in defs:
            raise CodegenError(
                f"{name}: its inline params cannot be named {params_name}, which the schema "
                "already defines",
                "report this schema; the hoisting rule needs an exception for it",
            )
        defs[params_name] = params
        branch["properties"]["params"] = {"$ref": f"#/{key}/{params_name}"}
    for name in sorted(defs):
        flat = _flatten_envelope(defs, defs[name])
        if flat is not None:
            defs[name] = flat
    unpaired = [
        name for name in defs
        if name.endswith("Request") and _method_branch(defs[name]) is not None
        and f"{name.removesuffix('Request')}Result" not in defs
    ]
    if unpaired:
        defs.setdefault(EMPTY_RESULT, EMPTY_RESULT_SCHEMA)
    return hoisted


def analyse_extension(
    document: JSONObject, pin: ExtensionPin, core: frozenset[str]
) -> ExtensionProtocol:
    """The extension's requests and notifications (``document`` has its params hoisted)."""
    defs = definitions(document)
    requests: list[Request] = []
    notifications: list[Notification] = []
    for type_name in sorted(defs):
        branch = _method_branch(defs[type_name])
        if branch is None:
            continue
        method = branch["properties"]["method"]["const"]
        if method in core:
            continue
        params = branch.get("properties", {}).get("params")
        params_type = ref_name(params) if params is not None else None
        params_required = "params" in branch.get("required", ())
        description = _first_paragraph(str(defs[type_name].get("description", "")))
        if type_name.endswith("Request"):
            direction = _direction(pin, "requests")
            result_type = f"{type_name.removesuffix('Request')}Result"
            if result_type not in defs:
                result_type = EMPTY_RESULT
            requests.append(
                Request(
                    method=method,
                    direction=direction,
                    request_type=type_name,
                    params_type=params_type,
                    params_required=params_required,
                    result_type=result_type,
                    alternative_result_types=(),
                    handler_name=handler_name(type_name, "Request"),
                    gates=_gates(pin, direction, receiver=True),
                    embedded=False,
                    pairing_rule="naming",
                    description=description,
                )
            )
        elif type_name.endswith("Notification"):
            direction = _direction(pin, "notifications")
            notifications.append(
                Notification(
                    method=method,
                    direction=direction,
                    notification_type=type_name,
                    params_type=params_type,
                    params_required=params_required,
                    handler_name=handler_name(type_name, "Notification"),
                    gates=_gates(pin, direction, receiver=False),
                    description=description,
                )
            )
        else:
            raise CodegenError(
                f"extension {pin.name}: {type_name} has the const method {method!r} but is "
                "named neither ...Request nor ...Notification",
                "report this schema; the generator tells requests from notifications by name",
            )
    if not requests and not notifications:
        raise CodegenError(
            f"extension {pin.name}: its schema defines no method of its own",
            "check that the pinned file is the extension's schema, not the core's",
        )
    return ExtensionProtocol(
        tuple(sorted(requests, key=lambda r: r.method)),
        tuple(sorted(notifications, key=lambda n: n.method)),
    )


def generate_extension(schema: LoadedSchema, pin: ExtensionPin, core: frozenset[str]) -> dict[str, str]:
    """The formatted file map of one extension's package."""
    document = hoist_params(schema.document)
    protocol = analyse_extension(document, pin, core)
    header = PackageHeader(pin.version, "extension", schema.sha256, True, extension=pin)
    modules = {name: optional_as_union(source) for name, source in emit_models(document).items()}
    index = index_models(modules)
    named: list[tuple[str, tuple[str | None, str | None]]] = [
        (r.method, (r.params_type, r.result_type)) for r in protocol.requests
    ]
    named += [(n.method, (n.params_type, None)) for n in protocol.notifications]
    for method, types in named:
        missing = [name for name in types if name is not None and name not in index]
        if missing:
            raise CodegenError(
                f"extension {pin.name}: {method} names {', '.join(missing)}, for "
                "which no model was generated",
                "this is a generator bug; report it with the extension's schema",
            )
    files = {
        "__init__.py": render_extension_init(header),
        "dispatch.py": extension_dispatch(header, protocol.requests, protocol.notifications),
    }
    files.update(render_models(header, modules, index))
    return format_files(files)


def generate_extensions(
    selected: tuple[ExtensionPin, ...], pins: PinTable, source: SchemaSource,
    known_core: dict[str, frozenset[str]] | None = None,
) -> dict[str, str]:
    """The ``extensions`` folder of a generated root or vendored package: its
    ``__init__.py`` and one package per selected extension (paths relative to the folder
    that holds ``extensions/``); empty when none is selected."""
    if not selected:
        return {}
    cores = dict(known_core or {})
    files = format_files({f"{EXTENSIONS_FOLDER}/__init__.py": render_extensions_root(selected)})
    for pin in selected:
        if pin.revision is not None and pin.revision not in cores:
            cores[pin.revision] = core_methods(pin, pins, source)
        core = cores.get(pin.revision or "", frozenset())
        schema = load_extension_schema(pin, source)
        for path, text in generate_extension(schema, pin, core).items():
            files[f"{EXTENSIONS_FOLDER}/{pin.name}/{path}"] = text
    return dict(sorted(files.items()))


class _OptionalAsUnion(ast.NodeTransformer):
    """``Optional[Union[a, b]]`` -> ``Union[a, b, None]``; ``Optional[a]`` -> ``Union[a, None]``."""

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if not (isinstance(node.value, ast.Name) and node.value.id == "Optional"):
            return node
        inner = node.slice
        is_union = (
            isinstance(inner, ast.Subscript)
            and isinstance(inner.value, ast.Name)
            and inner.value.id == "Union"
        )
        members: list[ast.expr] = [inner]
        if isinstance(inner, ast.Subscript) and is_union:
            members = list(inner.slice.elts) if isinstance(inner.slice, ast.Tuple) else [inner.slice]
        union = ast.Subscript(
            value=ast.Name("Union", ast.Load()),
            slice=ast.Tuple([*members, ast.Constant(None)], ast.Load()),
            ctx=ast.Load(),
        )
        return ast.copy_location(union, node)


def optional_as_union(source: str) -> str:
    """A model module without ``Optional[...]`` (as ``Union[..., None]``, the same type).

    datamodel-code-generator writes ``Optional[Union[...]]`` for a recursive nullable alias
    (ext-apps' JSON value), whose string forward references keep it from using ``|``; the
    linter asks for ``X | None`` there, which those references would break at run time.
    Modules without ``Optional[`` are returned as they are.
    """
    if "Optional[" not in source:
        return source
    tree = _OptionalAsUnion().visit(ast.parse(source))
    typing_imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == "typing"]
    if not any(alias.name == "Union" for node in typing_imports for alias in node.names):
        tree.body.insert(0, ast.ImportFrom("typing", [ast.alias("Union")], 0))
    return prune_unused_imports(ast.unparse(ast.fix_missing_locations(tree)) + "\n")


def _flatten_envelope(defs: JSONObject, schema: Any) -> JSONObject | None:
    """``allOf: [{$ref: JSONRPCRequest}, {method, params}]`` as one object, or None.

    The envelope types its fields loosely (``params``: any object, ``method``: any string); the
    message narrows them. As ``allOf`` the models would inherit the envelope and narrow its
    fields, which a type checker refuses; as one object, with the message's field where both
    have one, the same instances are accepted: each loose field is only a ``type``, which the
    message's own field implies (a check below; anything else is left as written).
    """
    branches = schema.get("allOf") if isinstance(schema, dict) else None
    if not isinstance(branches, list) or len(branches) != 2 or _method_branch(schema) is None:
        return None
    base_name, own = ref_name(branches[0]), branches[1]
    base = defs.get(base_name or "")
    loose = {"type", "additionalProperties", "description"}
    if (
        not isinstance(base, dict)
        or set(base) - {"type", "properties", "required", "description", "$schema"}
        or base.get("type") != "object"
        or not isinstance(own, dict)
        or set(own) - {"type", "properties", "required"}
    ):
        return None
    properties = dict(base.get("properties", {}))
    for key, narrow in own.get("properties", {}).items():
        wide = properties.get(key)
        if wide is not None and (
            set(wide) - loose
            or wide.get("additionalProperties", {}) != {}
            or _type_of(defs, narrow) != wide.get("type")
        ):
            return None
        properties[key] = narrow
    required = list(base.get("required", []))
    required += [key for key in own.get("required", []) if key not in required]
    flat: JSONObject = {k: v for k, v in schema.items() if k != "allOf"}
    flat.update(type="object", properties=properties, required=required)
    return flat


def _type_of(defs: JSONObject, node: Any, depth: int = 0) -> str | None:
    """The JSON type a schema node fixes (following ``$ref`` and a first ``allOf`` branch)."""
    if not isinstance(node, dict) or depth > 20:
        return None
    name = ref_name(node)
    if name is not None:
        return _type_of(defs, defs.get(name), depth + 1)
    if isinstance(node.get("type"), str):
        return str(node["type"])
    branches = node.get("allOf")
    if isinstance(branches, list) and branches:
        return _type_of(defs, branches[0], depth + 1)
    return None


def _same_schema(named: Any, inline: JSONObject) -> bool:
    """``named`` is ``inline`` (a definition may repeat the dialect in ``$schema``)."""
    if not isinstance(named, dict):
        return False
    return {k: v for k, v in named.items() if k != "$schema"} == inline


def _method_branch(schema: Any) -> dict[str, Any] | None:
    """The object (the schema itself or one of its ``allOf``) with a constant ``method``."""
    if not isinstance(schema, dict):
        return None
    for branch in [schema, *schema.get("allOf", [])]:
        method = branch.get("properties", {}).get("method") if isinstance(branch, dict) else None
        if isinstance(method, dict) and isinstance(method.get("const"), str):
            found: dict[str, Any] = branch
            return found
    return None


def _direction(pin: ExtensionPin, kind: str) -> Direction:
    if pin.senders is None:
        return Direction.BOTH
    sender = pin.senders[kind]
    return Direction.CLIENT_TO_SERVER if sender == "client" else Direction.SERVER_TO_CLIENT


def _gates(pin: ExtensionPin, direction: Direction, *, receiver: bool) -> tuple[Gate, ...]:
    """The extension's capability: on the receiver of a request, the sender of a notification."""
    if direction is Direction.BOTH:
        return ()
    sender = "client" if direction is Direction.CLIENT_TO_SERVER else "server"
    side = RECEIVER[sender] if receiver else sender
    return (Gate(side, (CAPABILITY_ROOT, pin.identifier)),)


def _first_paragraph(text: str) -> str:
    return text.strip().split("\n\n", 1)[0].replace("\n", " ").strip()
