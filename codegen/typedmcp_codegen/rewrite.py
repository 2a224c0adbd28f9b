"""Stage 3a: structural rewrites of the schema so datamodel-code-generator emits clean models.

Every step is a pure function over a deep copy of the schema document. None changes which
instances the schema accepts (``discriminator`` is an annotation that JSON Schema validators
ignore); a test checks that against the official examples. The two documented exceptions are
the upstream :data:`ERRATA` and one leniency the specification itself prescribes
(:func:`default_result_type`). Why each step exists: each function's docstring (the documentation's "How it works",
``docs/explanation/how-it-works.md``, gives the pipeline).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from .document import JSONObject, Era, definitions_key, ref_name, schema_era, walk_schemas
from .errors import CodegenError

# Definition names that play a union role (the sets of messages one side may send).
UNION_ROLE_NAME = re.compile(r"^(Client|Server|Input)(Request|Notification|Result|Response)$")
# Inline objects under these property names are shared by many types and get one class.
SHARED_PROPERTY_NAMES = ("_meta", "annotations")
# resultType defaults (stateless era): "complete" unless the result names another kind here.
RESULT_TYPE_PROPERTY = "resultType"
RESULT_TYPE_DEFAULT = "complete"
RESULT_TYPE_EXCEPTIONS = {"InputRequiredResult": "input_required"}
#: Caching hints of the stateless era's cacheable results, and what each means when a
#: result leaves it out (the same as ``typedmcp.protocol.results.ABSENT_RESULT_FIELDS``):
#: ``ttlMs`` 0 ("immediately stale") and the narrower ``cacheScope``, ``private``.
CACHE_HINT_DEFAULTS = {"ttlMs": 0, "cacheScope": "private"}
#: Marks an optional property whose schema admits null; the models' base class reads it
#: (``typedmcp.protocol.model.NULLABLE_MARK`` is the same string).
NULLABLE_MARK = "x-mcp-nullable"
DOC_LINK = re.compile(r"\{@link ([^}]*)\}")
CAMEL_WORD = re.compile(r"[A-Z][a-z0-9]*")


def rewrite_for_models(
    document: JSONObject, *, errata: bool = True, lenient: bool = True
) -> JSONObject:
    """Apply every rewrite, in order, to a deep copy of ``document``.

    All rewrites keep the set of accepted instances unchanged, except the documented
    upstream :data:`ERRATA` (``errata=False`` leaves them out) and the leniency the
    specification prescribes for an absent ``resultType`` (``lenient=False`` leaves it out).
    """
    rewritten = copy.deepcopy(document)
    steps: list[Callable[[JSONObject], None]] = [
        sort_defs,
        *([apply_errata] if errata else []),
        *([default_result_type, default_cache_hints] if lenient else []),
        inherit_request_meta,
        clean_doc_links,
        empty_objects_as_maps,
        open_objects,
        widen_number,
        dedupe_defs,
        hoist_allof_props,
        share_inline_objects,
        name_mixed_unions,
        add_discriminators,
        mark_nullable_optionals,
        sort_defs,
    ]
    for step in steps:
        step(rewritten)
    return rewritten


def sort_defs(document: JSONObject) -> None:
    """Sort definitions by name, so output never depends on the input's key order."""
    key = definitions_key(document)
    document[key] = dict(sorted(document[key].items()))


def apply_errata(document: JSONObject) -> None:
    """Correct known upstream schema errors (the exception table :data:`ERRATA`).

    Each entry names a definition, a path inside it and the fix; an entry whose path is
    absent in a revision does nothing there.
    """
    defs = document[definitions_key(document)]
    for name, path, fix in ERRATA:
        node: Any = defs.get(name)
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            fix(node)


def _allow_fractional_numbers(node: JSONObject) -> None:
    for candidate in [node, *node.get("anyOf", [])]:
        types = candidate.get("type") if isinstance(candidate, dict) else None
        if isinstance(types, list) and "integer" in types and "number" not in types:
            types.insert(types.index("integer") + 1, "number")


# Upstream errata: ElicitResult.content answers a form whose NumberSchema fields take
# fractional values (the TypeScript source says `number`), but the published JSON schema
# narrowed the values to `integer`; the official conformance suite expects 95.5 to pass.
ERRATA: tuple[tuple[str, tuple[str, ...], Callable[[JSONObject], None]], ...] = (
    ("ElicitResult", ("properties", "content", "additionalProperties"), _allow_fractional_numbers),
)


def default_result_type(document: JSONObject) -> None:
    """Stateless era: ``resultType`` becomes optional, defaulting to ``"complete"``.

    Since 2026-07-28 every result definition requires ``resultType: string`` so that a
    client can tell a final result from an ``InputRequiredResult`` before parsing it. The
    property's own description says: "Servers implementing this protocol version MUST
    include this field. For backward compatibility, when a client receives a result from a
    server implementing an earlier protocol version (which does not include
    ``resultType``), the client MUST treat the absent field as ``"complete"``."

    So the models take ``resultType`` as optional with that default (``result_type``
    defaults to ``"complete"``): ``CallToolResult(content=[...])`` builds without it, and a result
    from an older server parses as the spec demands. ``InputRequiredResult`` (the one
    result that is never "complete") defaults to ``"input_required"`` instead, from the
    exception table :data:`RESULT_TYPE_EXCEPTIONS`, so that building it needs no tag either.

    This is a documented leniency, not an equivalence: a result without ``resultType``,
    which the published JSON schema rejects, is accepted by the models (the test suite's
    equivalence check runs with ``lenient=False``; no invalid-instance fixture asserts the
    rejection). datamodel-code-generator types every optional property as nullable unless
    ``strict_nullable`` is on, so the field reads ``str | None = "complete"`` and a ``null``
    tag is accepted too; ``strict_nullable=True`` in ``models.emit_models`` would give
    ``str = "complete"`` (no official schema has another ``default``, so nothing else would
    change). A default is never *set*, so ``model_dump(exclude_unset=True)`` still
    round-trips what was received byte for byte, and a sender that must include the field
    (a server of this revision) has to put it on the wire itself. Handshake-era schemas
    have no ``resultType`` and are left alone.
    """
    if schema_era(document) is not Era.STATELESS:
        return
    for name, schema in document[definitions_key(document)].items():
        prop = schema.get("properties", {}).get(RESULT_TYPE_PROPERTY)
        if not isinstance(prop, dict) or prop.get("type") != "string":
            continue
        prop["default"] = RESULT_TYPE_EXCEPTIONS.get(name, RESULT_TYPE_DEFAULT)
        required = schema.get("required")
        if isinstance(required, list) and RESULT_TYPE_PROPERTY in required:
            required.remove(RESULT_TYPE_PROPERTY)
            if not required:
                del schema["required"]


def default_cache_hints(document: JSONObject) -> None:
    """Stateless era: a cacheable result's ``ttlMs`` and ``cacheScope`` become optional,
    defaulting to :data:`CACHE_HINT_DEFAULTS` (``0`` and ``"private"``).

    2026-07-28 requires both on every list and read result (``ListToolsResult``,
    ``ReadResourceResult``, ``DiscoverResult``, ...), so a handler had to build
    ``ListToolsResult(tools=[...], ttl_ms=0, cache_scope="private")`` by hand. With the
    defaults ``ListToolsResult(tools=[...])`` builds; as with ``resultType`` a default is
    never *set*, so it is not dumped (``exclude_unset``) and the server puts the hints on
    the wire itself: those of its ``CachePolicy`` (``cache=``, per server and per method),
    ``0``/``"private"`` unless told otherwise, while a result that sets them keeps its own.

    The same documented leniency as :func:`default_result_type`: a result without the
    hints, which the published schema rejects, is accepted and read as "stale at once,
    private" (what the runtime already reads an older revision's result as). Definitions
    with only one of the two properties are left alone; handshake-era schemas have neither.
    """
    if schema_era(document) is not Era.STATELESS:
        return
    for schema in document[definitions_key(document)].values():
        properties = schema.get("properties", {})
        if not all(isinstance(properties.get(key), dict) for key in CACHE_HINT_DEFAULTS):
            continue
        required = schema.get("required")
        for key, value in CACHE_HINT_DEFAULTS.items():
            properties[key]["default"] = value
            if isinstance(required, list) and key in required:
                required.remove(key)
        if isinstance(required, list) and not required:
            del schema["required"]


#: The unions that name every request of a revision (each side's requests).
REQUEST_UNIONS = ("ClientRequest", "ServerRequest")
#: The definition the base ``Request``'s ``params._meta`` is hoisted into.
REQUEST_META_DEFINITION = "RequestParamsMeta"


def inherit_request_meta(document: JSONObject) -> None:
    """Before 2025-11-25: every request's params take the base ``Request``'s ``_meta``.

    In these schemas the base ``Request`` says any request may carry
    ``params._meta.progressToken`` (the spec asks for progress that way on every request),
    but each concrete request restates ``params`` without ``_meta`` (a TypeScript interface
    overriding its base's member), so the models, and the typed client methods made from
    them, had no way to ask for progress. The base's ``_meta`` is hoisted into
    ``RequestParamsMeta`` (the name its model had already) and every request of
    ``ClientRequest``/``ServerRequest`` whose params lack ``_meta`` refers to it.

    This narrows what the concrete schemas accept to what the base ``Request`` accepts
    (``_meta``, when present, is an object with an optional progress token), which every
    request must satisfy anyway. From 2025-11-25 every params type extends
    ``RequestParams`` (which has ``_meta``) and the schema is left alone.
    """
    key = definitions_key(document)
    defs = document[key]
    base = defs.get("Request", {}).get("properties", {}).get("params")
    meta = base.get("properties", {}).get("_meta") if isinstance(base, dict) else None
    if not isinstance(meta, dict) or "properties" not in meta:
        return
    _claim_name(defs, REQUEST_META_DEFINITION, "the base Request's params._meta")
    defs[REQUEST_META_DEFINITION] = meta
    reference = {"$ref": f"#/{key}/{REQUEST_META_DEFINITION}"}
    base["properties"]["_meta"] = dict(reference)
    requests = {
        name
        for union in REQUEST_UNIONS
        for branch in defs.get(union, {}).get("anyOf", [])
        if (name := ref_name(branch)) is not None
    }
    for name in sorted(requests):
        params = defs.get(name, {}).get("properties", {}).get("params")
        if (target := ref_name(params)) is not None:  # params named by a definition
            params = defs.get(target)
        if isinstance(params, dict) and params.get("type") == "object":
            params.setdefault("properties", {}).setdefault("_meta", dict(reference))


def clean_doc_links(document: JSONObject) -> None:
    """Turn TypeScript ``{@link Name label}`` into readable text in every description."""
    names = sorted(document[definitions_key(document)], key=len, reverse=True)

    def replace(match: re.Match[str]) -> str:
        body = match.group(1).strip()
        target = next((n for n in names if body.startswith(n)), None)
        if target is None:
            return f"`{body}`"
        label = body[len(target) :].strip()
        if not label:
            return f"`{target}`"
        label = label if label.startswith("`") else f"`{label}`"
        return f"{label} ({target})"

    for node in walk_schemas(document):
        description = node.get("description")
        if isinstance(description, str) and "{@link" in description:
            node["description"] = DOC_LINK.sub(replace, description)


def empty_objects_as_maps(document: JSONObject) -> None:
    """A definition that is only ``{type: object}`` becomes an open map (``dict[str, Any]``)."""
    for schema in document[definitions_key(document)].values():
        keys = set(schema) - {"description", "title"}
        if keys == {"type"} and schema["type"] == "object":
            schema["additionalProperties"] = {}


def open_objects(document: JSONObject) -> None:
    """``additionalProperties: {}`` beside ``properties`` becomes ``true`` (same meaning)."""
    for node in walk_schemas(document):
        if "properties" in node and node.get("additionalProperties") == {}:
            node["additionalProperties"] = True


def widen_number(document: JSONObject) -> None:
    """``type: number`` becomes ``[integer, number]`` so ``50`` round-trips as ``50``."""
    for node in walk_schemas(document):
        if node.get("type") == "number":
            node["type"] = ["integer", "number"]


def dedupe_defs(document: JSONObject) -> None:
    """A union-role definition that copies one message verbatim becomes a ``$ref`` to it."""
    key = definitions_key(document)
    defs = document[key]
    for name in list(defs):
        schema = defs[name]
        if not UNION_ROLE_NAME.match(name) or "anyOf" in schema:
            continue
        body = _canonical(schema, drop=("description",))
        twins = [
            other
            for other, candidate in defs.items()
            if other != name and _canonical(candidate, drop=("description",)) == body
        ]
        if len(twins) == 1:
            defs[name] = {"$ref": f"#/{key}/{twins[0]}"}
            if "description" in schema:
                defs[name]["description"] = schema["description"]


def hoist_allof_props(document: JSONObject) -> None:
    """An inline ``allOf`` under a property becomes its own definition ``<Parent><Prop>``."""
    key = definitions_key(document)
    defs = document[key]
    for parent in list(defs):
        properties = defs[parent].get("properties", {})
        for prop, schema in properties.items():
            if isinstance(schema, dict) and "allOf" in schema:
                new_name = parent + _pascal(prop)
                _claim_name(defs, new_name, f"{parent}.{prop}")
                defs[new_name] = schema
                properties[prop] = {"$ref": f"#/{key}/{new_name}"}


def share_inline_objects(document: JSONObject) -> None:
    """Identical inline objects under ``_meta``/``annotations`` become one named definition.

    The name is the CamelCase words all owners' names end with, plus the property name:
    ``RequestParams._meta``, ``CallToolRequestParams._meta`` -> ``RequestParamsMeta``.
    """
    key = definitions_key(document)
    defs = document[key]
    for prop in SHARED_PROPERTY_NAMES:
        groups: dict[str, list[str]] = {}
        for owner, schema in defs.items():
            inline = schema.get("properties", {}).get(prop)
            if isinstance(inline, dict) and "properties" in inline:
                groups.setdefault(_canonical(inline), []).append(owner)
        for owners in groups.values():
            if len(owners) < 2:
                continue
            new_name = _common_suffix_words(owners) + _pascal(prop)
            _claim_name(defs, new_name, f"the shared '{prop}' of {', '.join(owners)}")
            shared = copy.deepcopy(defs[owners[0]]["properties"][prop])
            defs[new_name] = shared
            for owner in owners:
                description = defs[owner]["properties"][prop].get("description")
                reference: JSONObject = {"$ref": f"#/{key}/{new_name}"}
                if description:
                    reference["description"] = description
                defs[owner]["properties"][prop] = reference


def name_mixed_unions(document: JSONObject) -> None:
    """``anyOf [A, B, {array of X}]`` where ``A|B`` is the named union X -> ``X | list[X]``."""
    key = definitions_key(document)
    defs = document[key]
    named_unions = {
        frozenset(ref_name(branch) for branch in schema["anyOf"]): name
        for name, schema in defs.items()
        if isinstance(schema.get("anyOf"), list)
        and all(ref_name(branch) for branch in schema["anyOf"])
    }
    for node in walk_schemas(document):
        branches = node.get("anyOf")
        if not isinstance(branches, list):
            continue
        refs = frozenset(n for n in (ref_name(b) for b in branches) if n)
        arrays = [b for b in branches if isinstance(b, dict) and b.get("type") == "array"]
        union = named_unions.get(refs)
        if (
            union
            and len(arrays) == 1
            and ref_name(arrays[0].get("items")) == union
            and len(refs) + 1 == len(branches)
        ):
            node["anyOf"] = [{"$ref": f"#/{key}/{union}"}, arrays[0]]


def add_discriminators(document: JSONObject) -> None:
    """Mark every ``anyOf`` whose branches all require a property with distinct consts."""
    defs = document[definitions_key(document)]
    for node in walk_schemas(document):
        branches = node.get("anyOf")
        if not isinstance(branches, list) or len(branches) < 2:
            continue
        resolved = [_resolve(defs, branch) for branch in branches]
        tag = _common_tag(resolved)
        if tag is not None:
            node["discriminator"] = {"propertyName": tag}


def mark_nullable_optionals(document: JSONObject) -> None:
    """An optional property whose schema admits ``null`` is marked :data:`NULLABLE_MARK`.

    The models type every optional field ``X | None = None``. Their base class reads ``None``
    as "absent" (dropped when a model is built, refused when parsed, so no ``null`` the schema
    rejects is ever sent) unless the field carries this mark, because the schema lets it be
    null. No official schema has such a property yet; required nullable fields (2025-11-25
    ``Task.ttl``) are typed ``X | None`` without a default and need no mark. The mark is an
    annotation (validators ignore unknown keywords) and reaches the models as
    ``json_schema_extra``.
    """
    defs = document[definitions_key(document)]
    marked = [
        prop
        for node in walk_schemas(document)
        if isinstance(node.get("properties"), dict)
        for name, prop in node["properties"].items()
        if name not in node.get("required", ())
        and isinstance(prop, dict)
        and admits_null(defs, prop)
    ]
    for prop in marked:
        prop[NULLABLE_MARK] = True


def admits_null(defs: JSONObject, node: Any, seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``null`` is valid against a schema (every keyword that constrains it agrees)."""
    if not isinstance(node, dict):
        return node is True
    admits = True
    kinds = node.get("type")
    if kinds is not None:
        admits &= "null" in kinds if isinstance(kinds, list) else kinds == "null"
    if "const" in node:
        admits &= node["const"] is None
    if isinstance(node.get("enum"), list):
        admits &= None in node["enum"]
    name = ref_name(node)
    if name is not None:
        admits &= name not in seen and admits_null(defs, defs.get(name, {}), seen | {name})
    for key in ("anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            admits &= any(admits_null(defs, branch, seen) for branch in node[key])
    if isinstance(node.get("allOf"), list):
        admits &= all(admits_null(defs, branch, seen) for branch in node["allOf"])
    return admits


def _common_tag(branches: list[JSONObject | None]) -> str | None:
    if any(branch is None for branch in branches):
        return None
    objects = [b for b in branches if b is not None]
    candidates: set[str] = set(objects[0].get("properties", {}))
    for branch in objects:
        candidates &= set(branch.get("required", ())) & set(branch.get("properties", {}))
    for prop in sorted(candidates):
        consts = [branch["properties"][prop].get("const") for branch in objects]
        if all(isinstance(c, str) for c in consts) and len(set(consts)) == len(consts):
            return prop
    return None


def _resolve(defs: JSONObject, node: Any) -> JSONObject | None:
    seen = 0
    while (name := ref_name(node)) is not None and seen < 20:
        node = defs.get(name)
        seen += 1
    if isinstance(node, dict) and "properties" in node:
        return dict(node)
    return None


def _canonical(schema: JSONObject, drop: tuple[str, ...] = ()) -> str:
    return json.dumps({k: v for k, v in schema.items() if k not in drop}, sort_keys=True)


def _pascal(prop: str) -> str:
    stripped = prop.lstrip("_")
    return stripped[:1].upper() + stripped[1:]


def _common_suffix_words(names: list[str]) -> str:
    split = [CAMEL_WORD.findall(name) for name in names]
    suffix: list[str] = []
    for words in zip(*(reversed(w) for w in split), strict=False):
        if len(set(words)) != 1:
            break
        suffix.insert(0, words[0])
    return "".join(suffix)


def _claim_name(defs: JSONObject, name: str, what: str) -> None:
    if name in defs:
        raise CodegenError(
            f"cannot name {what} {name!r}: the schema already defines {name!r}",
            "this schema needs a naming exception in typedmcp_codegen.rewrite; please report it",
        )
