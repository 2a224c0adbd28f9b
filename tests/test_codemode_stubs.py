"""Code mode's stubs (issue 32): the ``tools`` module's signatures written from the tools'
schemas by the runtime (``typedmcp.host.codemode.stubs``), checked as text; no sandbox, no
process (the runs are ``tests/test_codemode.py``)."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from typedmcp.host.codemode import CodeLimits, function_names, python_name, write_stubs
from typedmcp.host.codemode.stubs import _members, _union, _Writer


# -- names and types ----------------------------------------------------------------------------------------


def test_function_names_follow_the_tools_generators_rule() -> None:
    assert python_name("notes__addNote") == "notes_add_note"
    assert python_name("get-HTTPResponse") == "get_http_response"
    assert python_name("9lives") == "tool_9lives"
    assert python_name("print") == "print_" and python_name("class") == "class_"
    names = function_names(["a__b_c", "a_b__c", "a_b_c"])
    assert names["a_b_c"] == "a_b_c"  # already the name: keeps it
    assert names["a__b_c"].startswith("a_b_c_") and len(names["a__b_c"]) == len("a_b_c_") + 8
    assert len(set(names.values())) == 3
    assert function_names(["a_b__c", "a__b_c", "a_b_c"]) == names  # independent of order


def tool(name: str, properties: dict[str, Any], required: list[str] = (), **extra: Any) -> dict[str, Any]:  # type: ignore[assignment]
    return {"name": name, "inputSchema": {"type": "object", "properties": properties, "required": list(required)}, **extra}


def test_stubs_map_json_schema_to_python_types() -> None:
    text, stubs = write_stubs({
        "s__find": tool("find", {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "ratio": {"type": "number"},
            "exact": {"type": "boolean"},
            "mode": {"enum": ["a", "b"]},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "filter": {"type": "object", "additionalProperties": {"type": "string"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "owner": {"$ref": "#/$defs/Owner"},
        }, ["query", "owner"], description="Find things.",
            outputSchema={"type": "object", "properties": {"hits": {"type": "array", "items": {
                "type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}}},
                "required": ["hits"]}),
    } | {"s__plain": tool("plain", {})})
    find = stubs["s_find"]
    assert find.name == "s__find" and find.structured and not find.unwrap
    assert not stubs["s_plain"].structured
    assert "async def s_plain() -> str:" in text
    assert (
        "async def s_find(*, query: str, owner: Any, limit: int | None = None, ratio: float | None = None, "
        "exact: bool | None = None, mode: Literal[\"a\", \"b\"] | None = None, ids: list[int] | None = None, "
        "filter: dict[str, str] | None = None, either: str | None = None) -> SFindResult:"
    ) in text
    assert "class SFindResult:\n    hits: list[SFindResultHitsItem]" in text
    assert "class SFindResultHitsItem:\n    id: int" in text
    assert '"""Find things.\n    \n    Defaults: limit=10"""' in text
    ast.parse(text)


def test_a_ref_to_defs_is_followed_and_names_that_are_not_identifiers_take_keyword_arguments() -> None:
    definition = tool("t", {"owner": {"$ref": "#/$defs/Owner"}}, ["owner"])
    definition["inputSchema"]["$defs"] = {"Owner": {"type": "object", "properties": {"name": {"type": "string"}}}}
    text, _ = write_stubs({"s__t": definition, "s__odd": tool("odd", {"from": {"type": "string"}, "user-id": {}})})
    assert "async def s_t(*, owner: STOwner) -> str:" in text
    assert "class STOwner:\n    name: str | None" in text
    assert "async def s_odd(**arguments: Any) -> str:" in text
    ast.parse(text)


def test_a_wrapped_result_is_the_value_itself() -> None:
    wrapped = {"type": "object", "properties": {"result": {"type": "array", "items": {"type": "string"}}},
               "required": ["result"], "x-typedmcp-wrapped": True}
    text, stubs = write_stubs({"s__names": tool("names", {}, outputSchema=wrapped)})
    assert stubs["s_names"].unwrap
    assert "async def s_names() -> list[str]:" in text


def test_a_docstring_cannot_end_the_stub() -> None:
    text, _ = write_stubs({"s__q": tool("q", {}, description='Say """hi""" and \\ "x"')})
    assert ast.parse(text)  # a quote or backslash in a description stays in the docstring
    assert 'Say \\"\\"\\"hi\\"\\"\\" and \\\\ \\"x\\"' in text


def test_limits_are_checked() -> None:
    for wrong in ({"seconds": 0}, {"tool_calls": -1}, {"memory_bytes": 1.5}, {"wall_seconds": True}):
        with pytest.raises(ValueError, match=f"CodeLimits.{next(iter(wrong))} must be a"):
            CodeLimits(**wrong)  # type: ignore[arg-type]




def test_unions_are_flat_and_keep_nested_and_quoted_bars() -> None:
    assert _union(["str | None", "None"]) == "str | None"
    assert _union(["list[int | None]", "None", "int"]) == "list[int | None] | None | int"
    assert _union(['Literal["a | b"]', "b"]) == 'Literal["a | b"] | b'
    assert _union(["int", "Any"]) == "Any"


# -- the corners: recursion depth, literals, fallbacks ----------------------------------------------


RECURSIVE = {"$defs": {
    "L": {"type": "array", "items": {"$ref": "#/$defs/L"}},
    "U": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/U"}}, {"type": "null"}]},
    "T": {"type": ["array", "null"], "items": {"$ref": "#/$defs/T"}},
    "M": {"type": "object", "additionalProperties": {"$ref": "#/$defs/M"}},
    "N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}, "required": ["next"]},
}}


@pytest.mark.parametrize(("name", "annotation"), [
    ("L", "list[" * 9 + "Any" + "]" * 9),  # each level one deeper, nine levels (MAX_DEPTH 8) then Any
    ("U", "list[list[list[list[Any] | None] | None] | None] | None"),  # anyOf and items: two a level
    ("T", "list[list[list[list[Any] | None] | None] | None] | None"),  # a type list and items: two
    ("M", "dict[str, " * 9 + "Any" + "]" * 9),
])
def test_a_recursive_schema_ends_in_any_at_the_depth_limit(name: str, annotation: str) -> None:
    writer = _Writer(RECURSIVE, set())
    assert writer.annotation({"$ref": f"#/$defs/{name}"}, name) == annotation


def test_a_recursive_object_is_a_chain_of_classes_ending_in_any() -> None:
    writer = _Writer(RECURSIVE, set())
    assert writer.annotation({"$ref": "#/$defs/N"}, "N") == "N"
    assert writer.classes[0] == "class " + "N" + "Next" * 8 + ":\n    next: Any"
    assert writer.classes[-1] == "class N:\n    next: NNext"
    assert len(writer.classes) == 9


@pytest.mark.parametrize(("schema", "annotation"), [
    ({"const": None}, "Literal[None]"),
    ({"const": True}, "Literal[True]"),
    ({"const": "a\"b"}, 'Literal["a\\"b"]'),
    ({"enum": [1, "a", None, False]}, 'Literal[1, "a", None, False]'),
    ({"const": 1.5}, "Any"),  # not a Literal value
    ({"const": {"a": 1}}, "Any"),
    ({"enum": []}, "Any"),
    ({"enum": [1, {"a": 1}], "type": "integer"}, "int"),
    ({"anyOf": [], "type": "string"}, "str"),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, "int | str"),
    ({"type": "object", "properties": {}}, "dict[str, Any]"),
    ({"type": "object", "properties": {"a-b": {}}}, "dict[str, Any]"),
    ({"type": "object", "properties": "no"}, "dict[str, Any]"),
    ({"type": "object", "additionalProperties": True}, "dict[str, Any]"),
    ({"$ref": "#/$defs/Missing"}, "Any"),
    ({"$ref": "https://example.com/schema"}, "Any"),
    (True, "Any"),
    ({"type": "blob"}, "Any"),
])
def test_json_schema_corners(schema: Any, annotation: str) -> None:
    assert _Writer({}, set()).annotation(schema, "P") == annotation


def test_nested_class_names_that_meet_get_an_underscore() -> None:
    writer = _Writer({}, set())
    schema = {"type": "object", "properties": {
        "x_y": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "x": {"type": "object", "properties": {"y": {"type": "object", "properties": {"b": {"type": "string"}}}}},
    }}
    assert writer.annotation(schema, "T") == "T"
    assert "class TXY:\n    a: int | None" in writer.classes
    assert "class TXY_:\n    b: str | None" in writer.classes


def test_two_tools_on_one_name() -> None:
    names = function_names(["a-b", "a_b"])
    assert names["a_b"] == "a_b" and names["a-b"].startswith("a_b_") and len(names["a-b"]) == 12


def test_only_a_marked_wrapper_is_unwrapped() -> None:
    result = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
    unmarked = write_stubs({"s__n": {"name": "n", "outputSchema": result}})[1]["s_n"]
    assert not unmarked.unwrap
    fastmcp = write_stubs({"s__n": {"name": "n", "outputSchema": {**result, "x-fastmcp-wrap-result": True}}})
    assert fastmcp[1]["s_n"].unwrap and "async def s_n() -> int:" in fastmcp[0]
    no_result = {"type": "object", "properties": {"other": {}}, "x-typedmcp-wrapped": True}
    assert not write_stubs({"s__n": {"name": "n", "outputSchema": no_result}})[1]["s_n"].unwrap


def test_union_members_split_outside_strings_only() -> None:
    assert _members('Literal["a\\" | b"] | c') == ['Literal["a\\" | b"]', "c"]
    assert _members('"a | b" | c') == ['"a | b"', "c"]
    assert _members("dict[str, int | None] | list[str | int]") == ["dict[str, int | None]", "list[str | int]"]
