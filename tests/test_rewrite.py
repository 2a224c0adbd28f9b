"""Stage 3a (rewrite): each step on a tiny hand-written schema, and semantic equivalence."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema.validators
import pytest

from conftest import models_module

from typedmcp_codegen.errors import CodegenError
from typedmcp_codegen.rewrite import (
    add_discriminators,
    clean_doc_links,
    dedupe_defs,
    default_cache_hints,
    default_result_type,
    empty_objects_as_maps,
    hoist_allof_props,
    NULLABLE_MARK,
    admits_null,
    inherit_request_meta,
    mark_nullable_optionals,
    name_mixed_unions,
    open_objects,
    rewrite_for_models,
    share_inline_objects,
    sort_defs,
    widen_number,
)
from typedmcp_codegen.document import Era, schema_era

JSONObject = dict[str, Any]


def schema(defs: JSONObject, key: str = "$defs") -> JSONObject:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", key: defs}


def ref(name: str, key: str = "$defs") -> JSONObject:
    return {"$ref": f"#/{key}/{name}"}


def tagged(tag: str, value: str, *extra: str) -> JSONObject:
    """An object definition that requires ``tag`` with a const ``value``."""
    properties: JSONObject = {tag: {"const": value, "type": "string"}}
    properties.update({name: {"type": "string"} for name in extra})
    return {"type": "object", "properties": properties, "required": [tag, *extra]}


# sort_defs


@pytest.mark.parametrize("key", ["$defs", "definitions"])
def test_sort_defs_orders_definitions_by_name(key: str) -> None:
    document = schema({"b": {}, "C": {}, "a": {}}, key)
    sort_defs(document)
    assert list(document[key]) == ["C", "a", "b"]


# clean_doc_links


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("See {@link Tool}.", "See `Tool`."),
        ("Use {@link ToolAnnotations} here", "Use `ToolAnnotations` here"),
        (
            "A {@link CallToolRequest tools/call} request",
            "A `tools/call` (CallToolRequest) request",
        ),
        # upstream often glues the label to the name
        (
            "A {@link ListToolsRequesttools/list} request",
            "A `tools/list` (ListToolsRequest) request",
        ),
        ("{@link Tool`_meta` rules} apply", "`_meta` rules (Tool) apply"),
        ("see {@link Unknown thing}", "see `Unknown thing`"),
        ("no links at all", "no links at all"),
    ],
)
def test_clean_doc_links_makes_readable_text(text: str, expected: str) -> None:
    names = ["Tool", "ToolAnnotations", "CallToolRequest", "ListToolsRequest"]
    document = schema({name: {"type": "object"} for name in names})
    document["$defs"]["Tool"] = {
        "type": "object",
        "description": text,
        "properties": {"inner": {"type": "string", "description": text}},
    }
    clean_doc_links(document)
    assert document["$defs"]["Tool"]["description"] == expected
    assert document["$defs"]["Tool"]["properties"]["inner"]["description"] == expected


def test_clean_doc_links_leaves_a_property_named_description_alone() -> None:
    document = schema(
        {"Tool": {"type": "object", "properties": {"description": {"type": "string"}}}}
    )
    before = copy.deepcopy(document)
    clean_doc_links(document)
    assert document == before


# empty_objects_as_maps


def test_empty_objects_as_maps_opens_bare_object_definitions_only() -> None:
    document = schema(
        {
            "Bare": {"type": "object", "description": "anything"},
            "Closed": {"type": "object", "additionalProperties": False},
            "Shaped": {"type": "object", "properties": {"a": {"type": "string"}}},
            "Text": {"type": "string"},
        }
    )
    before = copy.deepcopy(document)
    empty_objects_as_maps(document)
    assert document["$defs"]["Bare"] == {
        "type": "object",
        "description": "anything",
        "additionalProperties": {},
    }
    for name in ("Closed", "Shaped", "Text"):
        assert document["$defs"][name] == before["$defs"][name]


# open_objects


def test_open_objects_turns_empty_additional_properties_into_true_beside_properties() -> None:
    document = schema(
        {
            "A": {
                "type": "object",
                "properties": {
                    "nested": {"type": "object", "properties": {}, "additionalProperties": {}}
                },
                "additionalProperties": {},
            },
            "Map": {"type": "object", "additionalProperties": {}},
            "Typed": {
                "type": "object",
                "properties": {},
                "additionalProperties": {"type": "string"},
            },
        }
    )
    open_objects(document)
    defs = document["$defs"]
    assert defs["A"]["additionalProperties"] is True
    assert defs["A"]["properties"]["nested"]["additionalProperties"] is True
    assert defs["Map"]["additionalProperties"] == {}
    assert defs["Typed"]["additionalProperties"] == {"type": "string"}


# widen_number


def test_widen_number_accepts_integers_explicitly() -> None:
    document = schema(
        {
            "A": {
                "type": "object",
                "properties": {
                    "n": {"type": "number", "minimum": 0},
                    "i": {"type": "integer"},
                    "maybe": {"type": ["number", "null"]},
                    "items": {"type": "array", "items": {"type": "number"}},
                },
            }
        }
    )
    widen_number(document)
    properties = document["$defs"]["A"]["properties"]
    assert properties["n"] == {"type": ["integer", "number"], "minimum": 0}
    assert properties["i"] == {"type": "integer"}
    assert properties["maybe"] == {"type": ["number", "null"]}
    assert properties["items"]["items"] == {"type": ["integer", "number"]}


def test_widen_number_leaves_instance_values_alone() -> None:
    """``const`` and ``default`` hold instances, not schemas; rewriting them changes what
    the schema accepts, which the module promises no rewrite does.
    """
    document = schema(
        {
            "A": {
                "type": "object",
                "properties": {
                    "kind": {"const": {"type": "number"}},
                    "field": {"type": "object", "default": {"type": "number"}},
                },
            }
        }
    )
    instance = {"kind": {"type": "number"}}
    validator_class = jsonschema.validators.validator_for(document)
    assert validator_class({**document, "$ref": "#/$defs/A"}).is_valid(instance)
    widen_number(document)
    assert validator_class({**document, "$ref": "#/$defs/A"}).is_valid(instance)
    assert document["$defs"]["A"]["properties"]["field"]["default"] == {"type": "number"}


# dedupe_defs


@pytest.mark.parametrize("key", ["$defs", "definitions"])
def test_dedupe_defs_points_a_copied_union_role_at_its_message(key: str) -> None:
    message = {**tagged("method", "notifications/cancelled"), "description": "Cancel."}
    role = {**copy.deepcopy(message), "description": "Sent by the client."}
    document = schema({"CancelledNotification": message, "ClientNotification": role}, key)
    dedupe_defs(document)
    assert document[key]["ClientNotification"] == {
        **ref("CancelledNotification", key),
        "description": "Sent by the client.",
    }
    assert document[key]["CancelledNotification"] == message


def test_dedupe_defs_ignores_anyof_unions_non_roles_and_ambiguous_copies() -> None:
    message = tagged("method", "ping")
    document = schema(
        {
            "PingRequest": message,
            "OtherPing": copy.deepcopy(message),
            "ServerRequest": copy.deepcopy(message),  # two twins: ambiguous
            "ClientRequest": {"anyOf": [ref("PingRequest")]},
            "NotARole": copy.deepcopy(message),
        }
    )
    before = copy.deepcopy(document)
    dedupe_defs(document)
    assert document == before


# hoist_allof_props


def test_hoist_allof_props_names_the_inline_allof_by_its_path() -> None:
    inline = {"allOf": [ref("Base"), {"properties": {"extra": {"type": "string"}}}]}
    document = schema(
        {
            "Base": {"type": "object", "properties": {"a": {"type": "string"}}},
            "Parent": {"type": "object", "properties": {"theThing": copy.deepcopy(inline)}},
        }
    )
    hoist_allof_props(document)
    assert document["$defs"]["Parent"]["properties"]["theThing"] == ref("ParentTheThing")
    assert document["$defs"]["ParentTheThing"] == inline


def test_hoist_allof_props_refuses_to_take_an_existing_name() -> None:
    document = schema(
        {
            "ParentTheThing": {"type": "string"},
            "Parent": {"type": "object", "properties": {"theThing": {"allOf": [{}]}}},
        }
    )
    with pytest.raises(CodegenError, match="ParentTheThing"):
        hoist_allof_props(document)


# share_inline_objects


def meta_object(description: str | None = None) -> JSONObject:
    node: JSONObject = {
        "type": "object",
        "additionalProperties": {},
        "properties": {"progressToken": {"type": "string"}},
    }
    if description:
        node["description"] = description
    return node


def with_meta(meta: JSONObject) -> JSONObject:
    return {"type": "object", "properties": {"_meta": meta, "x": {"type": "string"}}}


def test_share_inline_objects_names_shared_meta_by_common_suffix() -> None:
    document = schema(
        {
            "RequestParams": with_meta(meta_object()),
            "CallToolRequestParams": with_meta(meta_object()),
            "Lonely": with_meta({**meta_object(), "required": ["progressToken"]}),
        }
    )
    share_inline_objects(document)
    defs = document["$defs"]
    assert defs["RequestParamsMeta"] == meta_object()
    assert defs["RequestParams"]["properties"]["_meta"] == ref("RequestParamsMeta")
    assert defs["CallToolRequestParams"]["properties"]["_meta"] == ref("RequestParamsMeta")
    assert "$ref" not in defs["Lonely"]["properties"]["_meta"]  # one owner: stays inline


def test_share_inline_objects_ignores_property_less_maps() -> None:
    bare = {"type": "object", "additionalProperties": {}}
    document = schema({"A": with_meta(dict(bare)), "B": with_meta(dict(bare))})
    before = copy.deepcopy(document)
    share_inline_objects(document)
    assert document == before


def test_share_inline_objects_refuses_a_taken_name() -> None:
    document = schema(
        {
            "RequestParams": with_meta(meta_object()),
            "CallToolRequestParams": with_meta(meta_object()),
            "RequestParamsMeta": {"type": "string"},
        }
    )
    with pytest.raises(CodegenError, match="RequestParamsMeta"):
        share_inline_objects(document)


# name_mixed_unions


def test_name_mixed_unions_uses_the_named_union() -> None:
    mixed = {"anyOf": [ref("B"), ref("A"), {"type": "array", "items": ref("AB")}]}
    document = schema(
        {
            "A": tagged("type", "a"),
            "B": tagged("type", "b"),
            "AB": {"anyOf": [ref("A"), ref("B")]},
            "Holder": {"type": "object", "properties": {"content": mixed}},
        }
    )
    name_mixed_unions(document)
    assert document["$defs"]["Holder"]["properties"]["content"] == {
        "anyOf": [ref("AB"), {"type": "array", "items": ref("AB")}]
    }


def test_name_mixed_unions_leaves_partial_matches_alone() -> None:
    partial = {"anyOf": [ref("A"), {"type": "array", "items": ref("AB")}]}
    other_items = {"anyOf": [ref("A"), ref("B"), {"type": "array", "items": ref("A")}]}
    document = schema(
        {
            "A": tagged("type", "a"),
            "B": tagged("type", "b"),
            "AB": {"anyOf": [ref("A"), ref("B")]},
            "Holder": {"type": "object", "properties": {"p": partial, "q": other_items}},
        }
    )
    before = copy.deepcopy(document)
    name_mixed_unions(document)
    assert document == before


# add_discriminators


def test_add_discriminators_marks_unions_with_distinct_required_consts() -> None:
    document = schema(
        {
            "Result": {
                "type": "object",
                "properties": {"kind": {"const": "r", "type": "string"}},
                "required": ["kind"],
            },
            "EmptyResult": ref("Result"),  # resolved through $ref chains
            "Other": tagged("kind", "o", "text"),
            "Union": {"anyOf": [ref("EmptyResult"), ref("Other")]},
        }
    )
    add_discriminators(document)
    assert document["$defs"]["Union"]["discriminator"] == {"propertyName": "kind"}


@pytest.mark.parametrize(
    "branches",
    [
        # the tag is optional in one branch
        [tagged("type", "a"), {"type": "object", "properties": {"type": {"const": "b"}}}],
        # the consts are not distinct
        [tagged("type", "a"), tagged("type", "a", "x")],
        # a branch is not an object
        [tagged("type", "a"), {"type": "string"}],
        # a single branch is no union
        [tagged("type", "a")],
    ],
)
def test_add_discriminators_skips_unions_without_a_clean_tag(branches: list[JSONObject]) -> None:
    document = schema({"U": {"anyOf": branches}})
    add_discriminators(document)
    assert "discriminator" not in document["$defs"]["U"]


def test_add_discriminators_picks_the_first_tag_in_name_order() -> None:
    document = schema(
        {
            "U": {
                "anyOf": [
                    {
                        **tagged("type", "a"),
                        "properties": {"type": {"const": "a"}, "kind": {"const": "x"}},
                        "required": ["type", "kind"],
                    },
                    {
                        **tagged("type", "b"),
                        "properties": {"type": {"const": "b"}, "kind": {"const": "y"}},
                        "required": ["type", "kind"],
                    },
                ]
            }
        }
    )
    add_discriminators(document)
    assert document["$defs"]["U"]["discriminator"] == {"propertyName": "kind"}


# default_result_type


def result_def(*extra: str) -> JSONObject:
    """A stateless-era result definition: ``resultType`` plus ``extra`` required strings."""
    properties: JSONObject = {"resultType": {"type": "string", "description": "kind"}}
    properties.update({name: {"type": "string"} for name in extra})
    return {"type": "object", "properties": properties, "required": [*extra, "resultType"]}


def stateless_schema() -> JSONObject:
    return schema(
        {
            "DiscoverRequest": tagged("method", "server/discover"),
            "Result": result_def(),
            "CallToolResult": result_def("content"),
            "InputRequiredResult": result_def(),
            "Tool": {"type": "object", "properties": {"resultType": {"type": "string"}}},
        }
    )


def test_schema_era_is_handshake_iff_initialize_is_defined() -> None:
    assert schema_era(stateless_schema()) is Era.STATELESS
    handshake = schema({"InitializeRequest": tagged("method", "initialize")}, "definitions")
    assert schema_era(handshake) is Era.HANDSHAKE


def test_default_result_type_makes_it_optional_with_the_spec_default() -> None:
    document = stateless_schema()
    default_result_type(document)
    defs = document["$defs"]
    assert defs["Result"]["properties"]["resultType"] == {
        "type": "string",
        "description": "kind",
        "default": "complete",
    }
    assert "required" not in defs["Result"]  # emptied, so dropped
    assert defs["CallToolResult"]["required"] == ["content"]
    assert defs["CallToolResult"]["properties"]["resultType"]["default"] == "complete"
    assert defs["InputRequiredResult"]["properties"]["resultType"]["default"] == "input_required"
    # a non-required resultType still gets the default; nothing else is touched
    assert defs["Tool"]["properties"]["resultType"]["default"] == "complete"
    assert defs["DiscoverRequest"] == tagged("method", "server/discover")


def test_default_result_type_leaves_handshake_era_schemas_alone() -> None:
    document = schema({"InitializeRequest": tagged("method", "initialize"), "Result": result_def()})
    before = copy.deepcopy(document)
    default_result_type(document)
    assert document == before


def cacheable_def(*required: str) -> JSONObject:
    """A stateless-era cacheable result: ``ttlMs``, ``cacheScope`` and ``required``."""
    properties: JSONObject = {
        "ttlMs": {"type": "integer", "minimum": 0},
        "cacheScope": {"type": "string", "enum": ["private", "public"]},
        "tools": {"type": "array"},
    }
    return {"type": "object", "properties": properties, "required": list(required)}


def test_default_cache_hints_makes_them_optional_with_their_absent_meaning() -> None:
    document = stateless_schema()
    defs = document["$defs"]
    defs["ListToolsResult"] = cacheable_def("cacheScope", "tools", "ttlMs")
    defs["CacheableResult"] = cacheable_def("cacheScope", "ttlMs")
    defs["HalfResult"] = {"type": "object", "properties": {"ttlMs": {"type": "integer"}}, "required": ["ttlMs"]}
    default_cache_hints(document)
    listed = defs["ListToolsResult"]
    assert listed["required"] == ["tools"]
    assert listed["properties"]["ttlMs"] == {"type": "integer", "minimum": 0, "default": 0}
    assert listed["properties"]["cacheScope"]["default"] == "private"
    assert "required" not in defs["CacheableResult"]  # emptied, so dropped
    assert defs["HalfResult"]["required"] == ["ttlMs"]  # one hint alone: left as it is
    handshake = schema({"InitializeRequest": tagged("method", "initialize"), "L": cacheable_def("ttlMs")})
    before = copy.deepcopy(handshake)
    default_cache_hints(handshake)
    assert handshake == before


def test_the_cache_hint_leniency_admits_missing_hints_and_no_wrong_ones(spec_dir: Path) -> None:
    document = json.loads((spec_dir / "2026-07-28" / "schema.json").read_text())
    validator_class = jsonschema.validators.validator_for(document)
    strict = validator_class({**rewrite_for_models(document, lenient=False), "$ref": "#/$defs/ListToolsResult"})
    fixed = validator_class({**rewrite_for_models(document), "$ref": "#/$defs/ListToolsResult"})
    base: JSONObject = {"tools": [], "resultType": "complete"}
    assert not strict.is_valid(base) and fixed.is_valid(base)
    for hints, valid in (
        ({"ttlMs": 5, "cacheScope": "public"}, True),
        ({"ttlMs": -1}, False),
        ({"cacheScope": "shared"}, False),
    ):
        assert fixed.is_valid({**base, **hints}) is valid, hints


def test_the_result_type_leniency_admits_a_missing_result_type_and_nothing_else(
    spec_dir: Path,
) -> None:
    """The one prescribed widening: a stateless-era result may omit ``resultType``."""
    document = json.loads((spec_dir / "2026-07-28" / "schema.json").read_text())
    validator_class = jsonschema.validators.validator_for(document)
    strict = rewrite_for_models(document, lenient=False)
    lenient = rewrite_for_models(document)
    for name in ("CallToolResult", "InputRequiredResult", "Result", "ListToolsResult"):
        original = validator_class({**strict, "$ref": f"#/$defs/{name}"})
        fixed = validator_class({**lenient, "$ref": f"#/$defs/{name}"})
        base: JSONObject = {"content": []} if name == "CallToolResult" else {}
        if name == "ListToolsResult":
            base.update({"tools": [], "cacheScope": "public", "ttlMs": 0})
        if name == "InputRequiredResult":
            base["requestState"] = "opaque"
        assert not original.is_valid(base) and fixed.is_valid(base), name
        for value, valid in (
            ("complete", True),
            ("input_required", True),
            (None, False),
            (7, False),
        ):
            instance = {**base, "resultType": value}
            assert original.is_valid(instance) is valid and fixed.is_valid(instance) is valid


def test_generated_results_default_their_result_type_and_dump_only_what_was_set() -> None:
    models = models_module("2026-07-28")
    built = models.CallToolResult(content=[models.TextContent(type="text", text="hi")])
    assert built.result_type == "complete"
    assert built.model_dump(mode="json", exclude_unset=True) == {
        "content": [{"type": "text", "text": "hi"}]
    }
    assert models.InputRequiredResult(request_state="s").result_type == "input_required"
    listed = models.ListToolsResult(tools=[], cache_scope="public", ttl_ms=0)
    assert listed.result_type == "complete"
    received = {"content": [], "resultType": "complete"}
    parsed = models.CallToolResult.model_validate(received, by_name=False)
    assert parsed.model_dump(mode="json", exclude_unset=True) == received
    older = models.CallToolResult.model_validate({"content": []}, by_name=False)
    assert older.result_type == "complete"  # the spec: absent means "complete"
    assert "resultType" not in older.model_dump(mode="json", exclude_unset=True)


# the whole chain


def test_rewrite_for_models_does_not_touch_its_input(spec_dir: Path) -> None:
    document = json.loads((spec_dir / "2026-07-28" / "schema.json").read_text())
    before = copy.deepcopy(document)
    rewritten = rewrite_for_models(document)
    assert document == before
    assert rewritten != document
    assert list(rewritten["$defs"]) == sorted(rewritten["$defs"])


def variants(instance: Any) -> Iterator[tuple[str, Any]]:
    """The instance, then instances that differ by one dropped, changed or extra key."""
    yield "as-is", instance
    if not isinstance(instance, dict):
        return
    for key in sorted(instance):
        dropped = dict(instance)
        del dropped[key]
        yield f"drop {key}", dropped
        bad: Any
        for bad in (None, 7, 1.5, "x", [], {}, True):
            yield f"{key}={bad!r}", {**instance, key: bad}
        if isinstance(instance[key], dict):
            for label, inner in variants(instance[key]):
                if label != "as-is":
                    yield f"{key}.{label}", {**instance, key: inner}
    yield "extra key", {**instance, "unexpectedKey": 1}


def test_rewritten_schema_accepts_and_rejects_exactly_what_the_original_does(
    spec_dir: Path,
) -> None:
    """Every official example of 2026-07-28, and one-key mutations of it, get the same verdict.

    (Less the documented deviations: the errata and the ``resultType`` leniency.)
    """
    document = json.loads((spec_dir / "2026-07-28" / "schema.json").read_text())
    rewritten = rewrite_for_models(document, errata=False, lenient=False)
    validator_class = jsonschema.validators.validator_for(document)
    examples = sorted((spec_dir / "2026-07-28" / "examples").rglob("*.json"))
    assert len(examples) > 100
    disagreements = []
    verdicts = {True: 0, False: 0}
    for path in examples:
        type_name = path.parent.name
        original = validator_class({**document, "$ref": f"#/$defs/{type_name}"})
        changed = validator_class({**rewritten, "$ref": f"#/$defs/{type_name}"})
        instance = json.loads(path.read_text())
        assert original.is_valid(instance), f"{path} is not valid against the original"
        for label, candidate in variants(instance):
            before, after = original.is_valid(candidate), changed.is_valid(candidate)
            verdicts[before] += 1
            if before != after:
                disagreements.append(f"{type_name}/{path.name} [{label}]: {before} -> {after}")
    assert disagreements == []
    assert verdicts[True] > 500 and verdicts[False] > 1000  # both verdicts were exercised


def test_the_elicit_result_erratum_admits_fractional_answers_and_nothing_else(
    spec_dir: Path,
) -> None:
    """The one documented widening: ElicitResult.content values may be fractional numbers."""
    document = json.loads((spec_dir / "2025-11-25" / "schema.json").read_text())
    validator_class = jsonschema.validators.validator_for(document)
    original = validator_class({**document, "$ref": "#/$defs/ElicitResult"})
    fixed = validator_class({**rewrite_for_models(document), "$ref": "#/$defs/ElicitResult"})
    fractional = {"action": "accept", "content": {"score": 95.5}}
    assert not original.is_valid(fractional) and fixed.is_valid(fractional)
    for still_invalid in ({"score": None}, {"score": {"a": 1}}, {"score": [1]}):
        instance = {"action": "accept", "content": still_invalid}
        assert not original.is_valid(instance) and not fixed.is_valid(instance)


# inherit_request_meta

BASE_META = {"type": "object", "properties": {"progressToken": {"type": "string"}}}


def request_schema() -> JSONObject:
    """A pre-2025-11-25 shape: the base Request has params._meta, concrete requests do not."""
    params_with_meta = {"type": "object", "properties": {"_meta": copy.deepcopy(BASE_META)}}
    return schema(
        {
            "Request": {"type": "object", "properties": {"params": params_with_meta}},
            "CallToolRequest": {
                "type": "object",
                "properties": {
                    "method": {"const": "tools/call", "type": "string"},
                    "params": {"type": "object", "properties": {"name": {"type": "string"}}},
                },
            },
            "PingRequest": {
                "type": "object",
                "properties": {
                    "method": {"const": "ping", "type": "string"},
                    "params": {"type": "object", "properties": {"_meta": {"type": "object"}}},
                },
            },
            "ListThingsRequest": {
                "type": "object",
                "properties": {"method": {"const": "x/list"}, "params": ref("ListThingsParams")},
            },
            "ListThingsParams": {"type": "object", "properties": {"cursor": {"type": "string"}}},
            "ProgressNotification": {
                "type": "object",
                "properties": {"params": {"type": "object", "properties": {}}},
            },
            "ClientRequest": {"anyOf": [ref("CallToolRequest"), ref("ListThingsRequest")]},
            "ServerRequest": {"anyOf": [ref("PingRequest")]},
        }
    )


def test_inherit_request_meta_gives_every_request_the_base_requests_meta() -> None:
    document = request_schema()
    inherit_request_meta(document)
    defs = document["$defs"]
    assert defs["RequestParamsMeta"] == BASE_META  # hoisted, and referred to from the base
    assert defs["Request"]["properties"]["params"]["properties"]["_meta"] == ref("RequestParamsMeta")
    call = defs["CallToolRequest"]["properties"]["params"]["properties"]
    assert call == {"name": {"type": "string"}, "_meta": ref("RequestParamsMeta")}
    listed = defs["ListThingsParams"]["properties"]  # params named by a definition
    assert listed["_meta"] == ref("RequestParamsMeta")
    # a request that has its own _meta keeps it; notifications are not requests
    assert defs["PingRequest"]["properties"]["params"]["properties"]["_meta"] == {"type": "object"}
    assert defs["ProgressNotification"]["properties"]["params"]["properties"] == {}


def test_inherit_request_meta_leaves_schemas_whose_params_extend_request_params_alone() -> None:
    document = request_schema()
    document["$defs"]["Request"]["properties"]["params"] = ref("RequestParams")  # 2025-11-25
    before = copy.deepcopy(document)
    inherit_request_meta(document)
    assert document == before


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_every_request_of_an_older_revision_can_ask_for_progress(revision: str) -> None:
    models = models_module(revision)
    params = models.CallToolRequestParams.model_validate(
        {"name": "t", "_meta": {"progressToken": "p"}}, by_name=False
    )
    assert params.meta.progress_token == "p"
    with pytest.raises(ValueError, match="progressToken"):  # the base Request's own rule
        models.ListToolsRequestParams.model_validate({"_meta": {"progressToken": 1.5}})


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        ({}, True),
        ({"description": "anything"}, True),
        ({"type": "string"}, False),
        ({"type": ["string", "null"]}, True),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, True),
        ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, False),
        ({"allOf": [{}, {"type": "object"}]}, False),
        ({"const": None}, True),
        ({"enum": ["a", None]}, True),
        ({"enum": ["a"]}, False),
        ({"$ref": "#/$defs/Nullable"}, True),
        ({"$ref": "#/$defs/Text"}, False),
        ({"$ref": "#/$defs/Loop"}, False),
        ({"type": "null", "$ref": "#/$defs/Text"}, False),
        (True, True),
        (False, False),
    ],
)
def test_admits_null(node: Any, expected: bool) -> None:
    defs = {
        "Nullable": {"type": ["integer", "null"]},
        "Text": {"type": "string"},
        "Loop": {"$ref": "#/$defs/Loop"},
    }
    assert admits_null(defs, node) is expected


def test_mark_nullable_optionals_marks_only_optional_properties_that_admit_null() -> None:
    document: JSONObject = {
        "$defs": {
            "Thing": {
                "type": "object",
                "properties": {
                    "required_nullable": {"type": ["integer", "null"]},
                    "optional_nullable": {"type": ["string", "null"]},
                    "optional_any": {"description": "any JSON value"},
                    "optional_text": {"type": "string"},
                    "nested": {
                        "type": "object",
                        "properties": {"inner": {"anyOf": [{"type": "null"}, {"type": "string"}]}},
                    },
                },
                "required": ["required_nullable"],
            }
        }
    }
    mark_nullable_optionals(document)
    properties = document["$defs"]["Thing"]["properties"]
    marked = {name for name, prop in properties.items() if prop.get(NULLABLE_MARK)}
    assert marked == {"optional_nullable", "optional_any"}
    assert properties["nested"]["properties"]["inner"][NULLABLE_MARK] is True


def test_the_nullable_mark_is_the_one_the_models_read() -> None:
    from typedmcp.protocol.model import NULLABLE_MARK as READ

    assert READ == NULLABLE_MARK
