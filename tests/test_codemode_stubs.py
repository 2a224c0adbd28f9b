"""Code mode's stubs (issue 32): the ``tools`` module's signatures written from the tools'
schemas by the runtime (``typedmcp.host.codemode.stubs``), checked as text; no sandbox, no
process (the runs are ``tests/test_codemode.py``)."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from typedmcp.host.codemode import CodeLimits, function_names, python_name, write_stubs
from typedmcp.host.codemode.stubs import _union


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
