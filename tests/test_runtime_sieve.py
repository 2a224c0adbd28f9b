"""The wire sieve: results made with a newer revision's models, sent to an older peer.

Every case builds realistic wire data valid for the *source* revision, sieves it for the
*target* revision and checks that the output: parses into the target class and dumps back to
itself; is valid per the target's official JSON schema; carries no member that the source
revision defines and the target does not (anywhere in the parsed tree); keeps unknown
extras and free-form objects; and leaves the input untouched.
"""

from __future__ import annotations

import copy
import json
import time
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any, Literal

import pytest
from conftest import RELEASED, models_module, official_spec_dir
from jsonschema.validators import validator_for
from pydantic import BaseModel, ConfigDict, Field

from typedmcp.protocol.sieve import SieveError, Sieved, sieve

JSON = dict[str, Any]
HANDSHAKE = RELEASED[:4]
NEWEST_HANDSHAKE = "2025-11-25"
STATELESS = "2026-07-28"
PAIRS = [(NEWEST_HANDSHAKE, target) for target in HANDSHAKE] + [
    (STATELESS, target) for target in HANDSHAKE
]
PAIR_IDS = [f"{source}->{target}" for source, target in PAIRS]
OLDEST = RELEASED[0]

# Extras no revision defines, and free-form objects holding member names of newer revisions.
VENDOR = {"x-vendor": {"title": "kept", "icons": [1]}}
META = {"com.example/trace": {"title": "free-form", "structuredContent": 1, "icons": []}}
ICONS = [{"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"]}]
ANNOTATIONS = {"audience": ["user"], "priority": 0.5, "lastModified": "2025-01-12T15:00:58Z"}


def models(revision: str) -> ModuleType:
    return models_module(revision)


@cache
def _schema(revision: str) -> JSON:
    path: Path = official_spec_dir() / revision / "schema.json"
    document: JSON = json.loads(path.read_text())
    return document


def schema_valid(revision: str, type_name: str, instance: Any) -> bool:
    document = _schema(revision)
    key = "$defs" if "$defs" in document else "definitions"
    validator = validator_for(document)({**document, "$ref": f"#/{key}/{type_name}"})
    return bool(validator.is_valid(instance))


def wire_fields(cls: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in cls.model_fields.items()}


def leaks(instance: Any, source: ModuleType) -> list[str]:
    """Members kept as extras of a parsed target model that the source's class defines."""
    found: list[str] = []
    if isinstance(instance, BaseModel):
        twin = getattr(source, type(instance).__name__, None)
        defined = wire_fields(twin) if isinstance(twin, type) else set()
        extras = set(instance.model_extra or ())
        found += [f"{type(instance).__name__}.{key}" for key in sorted(extras & defined)]
        for name in type(instance).model_fields:
            found += leaks(getattr(instance, name), source)
    elif isinstance(instance, list):
        for item in instance:
            found += leaks(item, source)
    elif isinstance(instance, dict):
        for item in instance.values():
            found += leaks(item, source)
    return found


def check(source: str, target: str, type_name: str, data: JSON) -> Sieved:
    """Sieve ``data`` (valid for ``source``) for ``target`` and check every invariant."""
    source_models, target_models = models(source), models(target)
    source_models_cls: type[BaseModel] = getattr(source_models, type_name)
    source_models_cls.model_validate(data, by_name=False)
    assert schema_valid(source, type_name, data), "the test data must be valid for its source"
    before = copy.deepcopy(data)
    target_cls: type[BaseModel] = getattr(target_models, type_name)
    sieved = sieve(data, target_cls, source_models)
    assert data == before, "the input must not be mutated"
    parsed = target_cls.model_validate(sieved.value, by_name=False)
    assert parsed.model_dump(mode="json", exclude_unset=True) == sieved.value
    assert schema_valid(target, type_name, sieved.value)
    assert leaks(parsed, source_models) == []
    if source == target:
        assert sieved.value is data and sieved.dropped == ()
    return sieved


def stateless(revision: str, data: JSON, *, cacheable: bool = False) -> JSON:
    """Add what a 2026-07-28 result requires (``resultType``, cache hints) to ``data``."""
    if revision != STATELESS:
        return data
    extra: JSON = {"resultType": "complete"}
    if cacheable:
        extra |= {"cacheScope": "public", "ttlMs": 60000}
    return {**data, **extra}


def types_of(blocks: list[JSON]) -> list[str]:
    return [block["type"] for block in blocks]


# Realistic results as a server written against the source revision sends them.


def call_tool_result(source: str) -> JSON:
    return stateless(
        source,
        {
            "content": [
                {"type": "text", "text": "22°C", "annotations": ANNOTATIONS, "_meta": META},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {
                    "type": "resource_link",
                    "uri": "file:///project/report.md",
                    "name": "report.md",
                    "title": "Report",
                    "mimeType": "text/markdown",
                    "icons": ICONS,
                },
                {
                    "type": "resource",
                    "resource": {
                        "uri": "file:///project/notes.txt",
                        "mimeType": "text/plain",
                        "text": "notes",
                        "_meta": META,
                    },
                    "annotations": {"audience": ["assistant"]},
                },
                {
                    "type": "resource",
                    "resource": {"uri": "file:///logo.png", "blob": "iVBORw0KGgo="},
                },
            ],
            "structuredContent": {"temperature": 22, "title": "free-form", "icons": []},
            "isError": False,
            "_meta": META,
            **VENDOR,
        },
    )


def tool(index: int) -> JSON:
    return {
        "name": f"get_weather_{index}",
        "title": "Weather",
        "description": "Current weather for a city.",
        "icons": ICONS,
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "title": "City", "description": "free-form"},
                "icons": {"type": "array"},
            },
            "required": ["city"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"temperature": {"type": "number"}},
            "required": ["temperature"],
        },
        "annotations": {"title": "Weather", "readOnlyHint": True, "openWorldHint": True},
        "_meta": META,
        **VENDOR,
    }


def list_tools_result(source: str, count: int = 3) -> JSON:
    tools = [tool(i) for i in range(count)]
    if source == NEWEST_HANDSHAKE:
        tools[0]["execution"] = {"taskSupport": "optional"}
    return stateless(source, {"tools": tools, "nextCursor": "abc", **VENDOR}, cacheable=True)


def list_resources_result(source: str) -> JSON:
    resource = {
        "uri": "file:///project/src/main.rs",
        "name": "main.rs",
        "title": "Main",
        "description": "Entry point",
        "mimeType": "text/x-rust",
        "size": 1024,
        "icons": ICONS,
        "annotations": ANNOTATIONS,
        "_meta": META,
    }
    return stateless(
        source, {"resources": [resource, {"uri": "file:///b", "name": "b"}]}, cacheable=True
    )


def read_resource_result(source: str) -> JSON:
    contents = [
        {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello", "_meta": META},
        {"uri": "file:///a.png", "mimeType": "image/png", "blob": "iVBORw0KGgo=", **VENDOR},
    ]
    return stateless(source, {"contents": contents, "_meta": META}, cacheable=True)


def list_prompts_result(source: str) -> JSON:
    prompt = {
        "name": "code_review",
        "title": "Code review",
        "description": "Review code",
        "icons": ICONS,
        "arguments": [
            {"name": "code", "title": "Code", "description": "The code", "required": True}
        ],
        "_meta": META,
    }
    return stateless(source, {"prompts": [prompt]}, cacheable=True)


def get_prompt_result(source: str) -> JSON:
    messages = [
        {"role": "user", "content": {"type": "text", "text": "Review this", "_meta": META}},
        {"role": "user", "content": {"type": "resource_link", "uri": "file:///a", "name": "a"}},
        {
            "role": "assistant",
            "content": {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        },
        {
            "role": "user",
            "content": {"type": "resource", "resource": {"uri": "file:///b", "text": "b"}},
        },
    ]
    return stateless(source, {"description": "A review", "messages": messages})


def server_capabilities(source: str) -> JSON:
    capabilities: JSON = {
        "experimental": {"com.example/x": {"title": "free-form"}},
        "logging": {},
        "completions": {},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "tools": {"listChanged": True, **VENDOR},
    }
    if source == STATELESS:
        capabilities["extensions"] = {"io.example/ui": {}}
    else:
        capabilities["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    return capabilities


def implementation() -> JSON:
    return {
        "name": "weather",
        "version": "1.0.0",
        "title": "Weather server",
        "description": "Weather",
        "icons": ICONS,
        "websiteUrl": "https://example.com",
    }


# CallToolResult


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=PAIR_IDS)
def test_call_tool_result(source: str, target: str) -> None:
    sieved = check(source, target, "CallToolResult", call_tool_result(source))
    out = sieved.value
    expected_types = {
        "2024-11-05": ["text", "image", "resource", "resource"],
        "2025-03-26": ["text", "image", "audio", "resource", "resource"],
    }.get(target, ["text", "image", "audio", "resource_link", "resource", "resource"])
    assert types_of(out["content"]) == expected_types
    assert len(sieved.dropped) == 6 - len(expected_types)
    assert all(d.path.startswith("/content/") for d in sieved.dropped)
    assert ("structuredContent" in out) is (target >= "2025-06-18")
    assert "resultType" not in out
    assert out["isError"] is False
    assert out["_meta"] == META and out["x-vendor"] == VENDOR["x-vendor"]
    assert out["content"][0]["annotations"]["audience"] == ["user"]
    assert ("lastModified" in out["content"][0]["annotations"]) is (target >= "2025-06-18")
    assert ("_meta" in out["content"][0]) is (target >= "2025-06-18")


def test_call_tool_result_drop_paths_name_the_items() -> None:
    sieved = check(NEWEST_HANDSHAKE, OLDEST, "CallToolResult", call_tool_result(NEWEST_HANDSHAKE))
    assert [(d.path, d.reason) for d in sieved.dropped] == [
        ("/content/2", "type 'audio' is not defined by the target"),
        ("/content/3", "type 'resource_link' is not defined by the target"),
    ]


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=PAIR_IDS)
def test_call_tool_result_error(source: str, target: str) -> None:
    data = stateless(
        source, {"content": [{"type": "text", "text": "Upstream unavailable"}], "isError": True}
    )
    sieved = check(source, target, "CallToolResult", data)
    assert sieved.value == {
        "content": [{"type": "text", "text": "Upstream unavailable"}],
        "isError": True,
    }


# ListToolsResult


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=PAIR_IDS)
def test_list_tools_result(source: str, target: str) -> None:
    out = check(source, target, "ListToolsResult", list_tools_result(source)).value
    first = out["tools"][0]
    newer = {
        "2024-11-05": {"annotations", "title", "icons", "outputSchema", "_meta", "execution"},
        "2025-03-26": {"title", "icons", "outputSchema", "_meta", "execution"},
        "2025-06-18": {"icons", "execution"},
        "2025-11-25": set(),
    }[target]
    assert not newer & set(first), newer & set(first)
    assert first["x-vendor"] == VENDOR["x-vendor"] and out["x-vendor"] == VENDOR["x-vendor"]
    assert not {"resultType", "cacheScope", "ttlMs"} & set(out)
    # the input schema is a free-form JSON Schema: its property titles stay
    assert first["inputSchema"]["properties"] == tool(0)["inputSchema"]["properties"]
    if target == "2025-11-25" and source == NEWEST_HANDSHAKE:
        assert first["execution"] == {"taskSupport": "optional"}
    # what the target does define is kept (the data carries every field)
    assert ("annotations" in first) is (target >= "2025-03-26")
    assert ("title" in first) is ("outputSchema" in first) is (target >= "2025-06-18")
    assert ("icons" in first) is (target == "2025-11-25")
    if target >= "2025-03-26":
        assert first["annotations"]["readOnlyHint"] is True


# Resources and prompts


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=PAIR_IDS)
def test_list_resources_result(source: str, target: str) -> None:
    out = check(source, target, "ListResourcesResult", list_resources_result(source)).value
    first = out["resources"][0]
    assert ("icons" in first) is (target == "2025-11-25")
    assert ("title" in first) is (target >= "2025-06-18")
    assert first["annotations"]["priority"] == 0.5
    assert out["resources"][1] == {"uri": "file:///b", "name": "b"}


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=PAIR_IDS)
def test_read_resource_result(source: str, target: str) -> None:
    out = check(source, target, "ReadResourceResult", read_resource_result(source)).value
    text, blob = out["contents"]
    assert ("_meta" in text) is (target >= "2025-06-18")
    assert text["text"] == "hello" and blob["blob"] == "iVBORw0KGgo="
    assert blob["x-vendor"] == VENDOR["x-vendor"] and out["_meta"] == META


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=PAIR_IDS)
def test_list_prompts_result(source: str, target: str) -> None:
    out = check(source, target, "ListPromptsResult", list_prompts_result(source)).value
    prompt = out["prompts"][0]
    assert ("title" in prompt) is (target >= "2025-06-18")
    assert ("title" in prompt["arguments"][0]) is (target >= "2025-06-18")
    assert ("icons" in prompt) is (target == "2025-11-25")


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=PAIR_IDS)
def test_get_prompt_result_drops_messages_whose_content_the_target_lacks(
    source: str, target: str
) -> None:
    sieved = check(source, target, "GetPromptResult", get_prompt_result(source))
    kinds = [m["content"]["type"] for m in sieved.value["messages"]]
    assert kinds == {
        "2024-11-05": ["text", "resource"],
        "2025-03-26": ["text", "audio", "resource"],
    }.get(target, ["text", "resource_link", "audio", "resource"])
    # a message is dropped whole: its required content cannot be held
    assert all(d.path.startswith("/messages/") for d in sieved.dropped)
    assert len(sieved.dropped) == 4 - len(kinds)


# Capabilities and server info (the InitializeResult of a handshake)


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=PAIR_IDS)
def test_server_capabilities_and_info(source: str, target: str) -> None:
    capabilities = check(source, target, "ServerCapabilities", server_capabilities(source)).value
    assert ("completions" in capabilities) is (target >= "2025-03-26")
    assert "extensions" not in capabilities
    assert capabilities["experimental"] == {"com.example/x": {"title": "free-form"}}
    assert capabilities["tools"] == {"listChanged": True, **VENDOR}
    if source == NEWEST_HANDSHAKE:
        assert ("tasks" in capabilities) is (target == "2025-11-25")
    else:  # the 2026-07-28 data has no tasks capability to keep
        assert "tasks" not in capabilities
    info = check(source, target, "Implementation", implementation()).value
    assert set(info) == {
        "2024-11-05": {"name", "version"},
        "2025-03-26": {"name", "version"},
        "2025-06-18": {"name", "version", "title"},
    }.get(target, set(implementation()))


@pytest.mark.parametrize("target", HANDSHAKE)
def test_initialize_result(target: str) -> None:
    data = {
        "protocolVersion": target,
        "capabilities": server_capabilities(NEWEST_HANDSHAKE),
        "serverInfo": implementation(),
        "instructions": "Use get_weather.",
        "_meta": META,
    }
    out = check(NEWEST_HANDSHAKE, target, "InitializeResult", data).value
    assert out["instructions"] == "Use get_weather." and out["_meta"] == META
    assert ("icons" in out["serverInfo"]) is (target == "2025-11-25")


# The other direction: results a client returns to an older server


SAMPLING_TARGETS = [(s, t) for s, t in PAIRS]


@pytest.mark.parametrize(("source", "target"), SAMPLING_TARGETS, ids=PAIR_IDS)
def test_create_message_result(source: str, target: str) -> None:
    data = {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris", "_meta": META},
        "model": "claude-sonnet-4",
        "stopReason": "endTurn",
        "_meta": META,
    }
    out = check(source, target, "CreateMessageResult", data).value
    assert out["content"]["text"] == "Paris" and out["stopReason"] == "endTurn"
    assert ("_meta" in out["content"]) is (target >= "2025-06-18")


@pytest.mark.parametrize("source", [NEWEST_HANDSHAKE, STATELESS])
@pytest.mark.parametrize("target", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_create_message_result_the_target_cannot_hold_is_refused(source: str, target: str) -> None:
    """Several content blocks (a list) or a tool_use block have no form before 2025-11-25."""
    target_cls = models(target).CreateMessageResult
    as_list = {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "model": "m",
    }
    with pytest.raises(SieveError, match="/content: a list where the target takes one object"):
        sieve(as_list, target_cls, models(source))
    tool_use = {
        "role": "assistant",
        "content": {"type": "tool_use", "id": "1", "name": "get_weather", "input": {}},
        "model": "m",
        "stopReason": "toolUse",
    }
    with pytest.raises(SieveError, match="type 'tool_use' is not defined by the target"):
        sieve(tool_use, target_cls, models(source))


@pytest.mark.parametrize(
    ("source", "target"),
    [(NEWEST_HANDSHAKE, "2025-06-18"), (STATELESS, "2025-06-18"), (STATELESS, "2025-11-25")],
)
def test_elicit_result(source: str, target: str) -> None:
    data: JSON = {"action": "accept", "content": {"name": "Ada", "age": 36, "subscribe": True}}
    if source == NEWEST_HANDSHAKE:
        data["_meta"] = META
    out = check(source, target, "ElicitResult", data).value
    assert out == data


# Semantics beyond single results


@pytest.mark.parametrize("revision", RELEASED)
def test_identical_revisions_are_a_no_op(revision: str) -> None:
    data = {"content": [{"type": "text", "text": "x", "x-unknown": 1}], **VENDOR}
    data = stateless(revision, data)
    sieved = sieve(data, models(revision).CallToolResult, models(revision))
    assert sieved.value is data and sieved.dropped == ()


def test_unknown_extras_pass_and_free_form_objects_are_not_entered() -> None:
    data = call_tool_result(NEWEST_HANDSHAKE)
    data["content"][0]["x-extra"] = {"structuredContent": 1}
    out = sieve(data, models(OLDEST).CallToolResult, models(NEWEST_HANDSHAKE)).value
    assert out["content"][0]["x-extra"] == {"structuredContent": 1}
    assert out["_meta"] is data["_meta"]  # shared, not copied or entered
    assert out["x-vendor"] == VENDOR["x-vendor"]


def test_the_leak_check_sees_undefined_members() -> None:
    """The checker used above finds what an unsieved newer result would leak."""
    raw = list_tools_result(NEWEST_HANDSHAKE)
    parsed = models(OLDEST).ListToolsResult.model_validate(raw, by_name=False)
    found = leaks(parsed, models(NEWEST_HANDSHAKE))
    assert "Tool.outputSchema" in found and "Tool.icons" in found and "Tool.title" in found


def test_strict_mode_without_a_source_keeps_only_what_the_target_defines() -> None:
    data = call_tool_result(NEWEST_HANDSHAKE)
    sieved = sieve(data, models(OLDEST).CallToolResult, None)
    out = sieved.value
    assert set(out) == {"content", "isError", "_meta"}
    assert out["_meta"] == META  # free-form: kept whole
    assert set(out["content"][0]) == {"type", "text", "annotations"}
    assert set(out["content"][0]["annotations"]) == {"audience", "priority"}
    models(OLDEST).CallToolResult.model_validate(out, by_name=False)


def test_plans_are_cached_per_target_and_source() -> None:
    from typedmcp.protocol import sieve as module

    source, target = models(NEWEST_HANDSHAKE), models(OLDEST).ListToolsResult
    sieve(list_tools_result(NEWEST_HANDSHAKE), target, source)
    node = module._ROOTS[(target, source)]
    sieve(list_tools_result(NEWEST_HANDSHAKE), target, source)
    assert module._ROOTS[(target, source)] is node is not None
    same = models(NEWEST_HANDSHAKE).ListToolsResult
    sieve(list_tools_result(NEWEST_HANDSHAKE), same, source)
    assert module._ROOTS[(same, source)] is None  # nothing to do: the call returns at once


def test_a_twenty_tool_list_sieves_quickly() -> None:
    """A generous bound (real figures are in the report): the plan is built once, then reused."""
    source = models(NEWEST_HANDSHAKE)
    data = list_tools_result(NEWEST_HANDSHAKE, count=20)
    target = models(OLDEST).ListToolsResult
    sieve(data, target, source)
    rounds = 200
    start = time.perf_counter()
    for _ in range(rounds):
        sieve(data, target, source)
    per_call = (time.perf_counter() - start) / rounds
    assert per_call < 0.005


# The rules on small hand-made revisions (no generated package involved)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class NewText(_Open):
    type: Literal["text"]
    text: str
    meta: Annotated[dict[str, Any] | None, Field(alias="_meta")] = None


class NewPicture(_Open):
    type: Literal["picture"]
    url: str


class NewChildB(_Open):  # named differently from the old revision's class at this place
    keep: str
    added: int | None = None


class NewRoot(_Open):
    items: list[Annotated[NewText | NewPicture, Field(discriminator="type")]]
    child: NewChildB
    by_name: dict[str, NewText] | None = None
    loose: NewText | dict[str, Any] | None = None
    added: int | None = None


class OldText(_Open):
    type: Literal["text"]
    text: str


class OldChildA(_Open):
    keep: str


class OldRoot(_Open):
    items: list[Annotated[OldText, Field(discriminator="type")]]
    child: OldChildA
    by_name: dict[str, OldText] | None = None
    loose: OldText | dict[str, Any] | None = None
    only: OldText | None = None


def fake_revision(**classes: type[BaseModel]) -> ModuleType:
    module = ModuleType("fake_models")
    for name, cls in classes.items():
        setattr(module, name, cls)
    return module


OldText.__name__ = NewText.__name__ = "Text"
OldRoot.__name__ = NewRoot.__name__ = "Root"
NEW = fake_revision(Text=NewText, Picture=NewPicture, ChildB=NewChildB, Root=NewRoot)


def test_rules_on_a_hand_made_pair_of_revisions() -> None:
    data = {
        "items": [{"type": "picture", "url": "u"}, {"type": "text", "text": "t", "_meta": {}}],
        "child": {"keep": "k", "added": 1, "x-other": 2},
        "by_name": {"a": {"type": "text", "text": "t", "_meta": {"k": 1}}},
        "loose": {"type": "picture", "free": True},
        "only": {"type": "text", "text": "t", "_meta": {}},
        "added": 3,
    }
    sieved = sieve(data, OldRoot, NEW)
    assert sieved.value == {
        "items": [{"type": "text", "text": "t"}],
        "child": {"keep": "k", "x-other": 2},  # found through the parallel field
        "by_name": {"a": {"type": "text", "text": "t"}},
        "loose": {"type": "picture", "free": True},  # a free-form member may take it
        "only": {"type": "text", "text": "t"},
    }
    assert [d.path for d in sieved.dropped] == ["/items/0"]
    OldRoot.model_validate(sieved.value, by_name=False)


def test_a_required_value_the_target_cannot_hold_refuses_the_whole_result() -> None:
    class OldHolder(_Open):
        block: Annotated[OldText, Field(discriminator="type")]

    with pytest.raises(SieveError) as caught:
        sieve({"block": {"type": "picture", "url": "u"}}, OldHolder, NEW)
    assert caught.value.dropped.path == "/block"


# The other direction: a handler typed with 2025-11-25 answering a 2026-07-28 peer. The
# session skips the sieve there (``Session._widening``); these prove there is nothing to cut.

WIDENING = [
    ("CallToolResult", lambda: call_tool_result(NEWEST_HANDSHAKE), False),
    ("ListToolsResult", lambda: list_tools_result(NEWEST_HANDSHAKE), True),
    ("ListResourcesResult", lambda: list_resources_result(NEWEST_HANDSHAKE), True),
    ("ReadResourceResult", lambda: read_resource_result(NEWEST_HANDSHAKE), True),
    ("ListPromptsResult", lambda: list_prompts_result(NEWEST_HANDSHAKE), True),
    ("GetPromptResult", lambda: get_prompt_result(NEWEST_HANDSHAKE), False),
]


@pytest.mark.parametrize(("type_name", "make", "cacheable"), WIDENING, ids=[w[0] for w in WIDENING])
def test_an_older_revisions_result_needs_no_sieve_for_a_newer_peer(
    type_name: str, make: Any, cacheable: bool
) -> None:
    data = make()
    newer: type[BaseModel] = getattr(models(STATELESS), type_name)
    outcome = sieve(data, newer, models(NEWEST_HANDSHAKE))
    assert outcome.dropped == () and outcome.value == data
    # what the runtime adds in that era makes it valid as it stands
    complete = stateless(STATELESS, data, cacheable=cacheable)
    newer.model_validate(complete, by_name=False)
    assert schema_valid(STATELESS, type_name, complete)
