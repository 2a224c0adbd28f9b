"""Search mode's parts without processes (issue 32): the tokenizer, the BM25 index,
:class:`Discovery` over a stand-in host (availability, access policy, the index following
the registry) and the three tools' handler (``search_namespace``) with a stand-in for the
gateway's routed call. The end-to-end tests are ``tests/test_host_discovery.py``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from typedmcp.engine.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, RpcError
from typedmcp.host import Registry, ToolEntry, ToolMatch, UnknownTool
from typedmcp.host.discovery import (
    MAX_DESCRIBE,
    SEARCH_DEFINITIONS,
    Discovery,
    SearchIndex,
    check_expose,
    search_namespace,
    words,
)
from typedmcp.protocol.access import AccessPolicy, requires
from typedmcp.protocol.origin import serving_origin
from typedmcp.protocol.stubs import ToolError
from mcp_generated.v2025_11_25 import models


def entry(name: str, description: str = "", title: str | None = None, **properties: Any) -> ToolEntry:
    server, _, tool = name.partition("__")
    definition = {"name": tool, "description": description,
                  "inputSchema": {"type": "object", "properties": properties}}
    if title is not None:
        definition["title"] = title
    return ToolEntry(name, server, tool, definition)


# -- ranking --------------------------------------------------------------------------------------


def test_words_split_names_and_fold_plurals() -> None:
    assert words("notes__addNote") == ["note", "add", "note"]
    assert words("get_current-weather, CITY!") == ["get", "current", "weather", "city"]
    assert words("class access") == ["class", "access"]  # "ss" is no plural


def test_the_index_ranks_by_name_then_description_then_arguments() -> None:
    index = SearchIndex([
        entry("files__read_file", "Read a file from disk", path={}),
        entry("notes__add_note", "Add a note", title={}, body={}),
        entry("notes__search_notes", "Find notes whose title contains the query", query={}),
        entry("weather__current", "Current weather for a city", city={}),
        entry("mail__send", "Send an e-mail", subject={}, to={}),
    ])
    assert [e.name for e, _ in index.rank("add a note")][:2] == ["notes__add_note", "notes__search_notes"]
    assert [e.name for e, _ in index.rank("weather in Oslo")] == ["weather__current"]
    assert [e.name for e, _ in index.rank("city")] == ["weather__current"]  # an argument's name
    assert [e.name for e, _ in index.rank("subject")] == ["mail__send"]
    assert index.rank("nothing matches this") == []
    weighted = SearchIndex([entry("x__alpha", "one two", title="Note"), entry("a__beta", "note one")])
    assert [e.name for e, _ in weighted.rank("note")] == ["x__alpha", "a__beta"]  # a title says more
    kept = index.rank("note", keep=lambda e: e.name != "notes__add_note")
    assert [e.name for e, _ in kept] == ["notes__search_notes"]




def test_an_empty_catalog_finds_nothing() -> None:
    assert SearchIndex([]).rank("anything") == []


# -- Discovery over a stand-in host --------------------------------------------------------------


@dataclass
class StandIn:
    """What Discovery reads of a host: its registry and which tools are available."""

    registry: Registry
    down: set[str] = field(default_factory=set)

    def available(self, name: str) -> bool:
        return name in self.registry.tools and self.registry.tools[name].server not in self.down


def standin(*entries: ToolEntry) -> StandIn:
    return StandIn(Registry(tools={e.name: e for e in entries}))


CATALOG = (
    entry("notes__add_note", "Add a note.\nIt is kept.", title="Add note", title_={}, body={}),
    entry("notes__search_notes", "Find notes by title", query={}),
    entry("mail__send", "Send a message", to={}),
)


def test_search_answers_typed_matches_with_the_first_line_and_title() -> None:
    found = Discovery(standin(*CATALOG)).search("add note")
    assert [type(m) for m in found] == [ToolMatch, ToolMatch]
    assert found[0].name == "notes__add_note" and found[0].server == "notes"
    assert found[0].title == "Add note" and found[0].description == "Add a note."
    assert found[1].title is None and found[1].description == "Find notes by title"
    assert found[0].score > found[1].score > 0
    assert found[0].wire() == {"name": "notes__add_note", "server": "notes", "title": "Add note",
                               "description": "Add a note."}
    assert found[1].wire() == {"name": "notes__search_notes", "server": "notes",
                               "description": "Find notes by title"}


def test_search_limits_and_checks_its_arguments() -> None:
    discovery = Discovery(standin(*CATALOG))
    assert [m.name for m in discovery.search("note", limit=1)] == ["notes__add_note"]
    assert len(discovery.search("note", limit=50)) == 2
    for wrong in (0, 51, True, 2.0, "3"):
        with pytest.raises(ValueError, match=f"limit must be a whole number from 1 to 50, not {wrong!r}"):
            discovery.search("note", limit=wrong)  # type: ignore[arg-type]
    for query in ("", "  ", "the a of", None, 3):
        with pytest.raises(ValueError, match="query must be a few words"):
            discovery.search(query)  # type: ignore[arg-type]


def test_a_tool_whose_server_is_down_is_neither_found_nor_described() -> None:
    host = standin(*CATALOG)
    host.down.add("notes")
    assert [m.name for m in Discovery(host).search("note send")] == ["mail__send"]
    with pytest.raises(UnknownTool, match="'notes__add_note'"):
        Discovery(host).describe(["mail__send", "notes__add_note"])


def test_the_index_follows_the_registry() -> None:
    host = standin(*CATALOG)
    discovery = Discovery(host)
    assert discovery.search("zebra") == []
    index = host._search_index  # type: ignore[attr-defined]
    discovery.search("note")
    assert host._search_index is index  # type: ignore[attr-defined]  # the same registry: kept
    host.registry = Registry(tools={e.name: e for e in (*CATALOG, entry("zoo__zebra", "A zebra"))})
    assert [m.name for m in discovery.search("zebra")] == ["zoo__zebra"]


def test_describe_answers_the_exported_definitions_in_order_once_each() -> None:
    described = Discovery(standin(*CATALOG)).describe(["mail__send", "notes__add_note", "mail__send"])
    assert [d["name"] for d in described] == ["mail__send", "notes__add_note"]
    assert described[0]["inputSchema"]["properties"] == {"to": {}}
    for wrong in ("mail__send", [], ["x"] * (MAX_DESCRIBE + 1), [1], None):
        with pytest.raises(ValueError, match="names must"):
            Discovery(standin(*CATALOG)).describe(wrong)  # type: ignore[arg-type]
    assert len(Discovery(standin(*CATALOG)).describe(["mail__send"] * MAX_DESCRIBE)) == 1


def test_a_policy_hides_what_the_principal_may_not_call() -> None:
    policy = AccessPolicy(tools={"mail__send": requires("mail:send")})
    host = standin(*CATALOG)
    assert [m.name for m in Discovery(host, policy=policy).search("send")] == ["mail__send"]  # no principal
    reader = Discovery(host, policy=policy, principal={"scopes": "notes:read"})
    assert reader.search("send") == [] and not reader.usable("mail__send") and reader.usable("notes__add_note")
    sender = Discovery(host, policy=policy, principal={"scopes": "mail:send"})
    assert [m.name for m in sender.search("send")] == ["mail__send"]
    assert Discovery(host, principal={"scopes": ""}).usable("mail__send")  # no policy


def test_expose_modes() -> None:
    assert check_expose("tools") == "tools" and check_expose("search") == "search"
    with pytest.raises(ValueError, match="code mode is not available yet"):
        check_expose("code")
    with pytest.raises(ValueError, match=r"^expose must be one of 'tools', 'search', not 'all'$"):
        check_expose("all")


# -- the three tools' handler ----------------------------------------------------------------------


class Handlers:
    access_policy: AccessPolicy | None = None


def serve(host: StandIn, name: str, arguments: Any, handlers: Any = None, principal: Any = None) -> tuple[Any, list[Any]]:
    """Call the search-mode ``call_tool`` handler: (its answer, the params it routed)."""
    import asyncio

    routed: list[Any] = []

    async def route(self: Any, params: Any, ctx: Any) -> Any:
        routed.append(params)
        return {"content": [{"type": "text", "text": "routed"}]}

    handler = search_namespace(host, route)["call_tool"]
    params = models.CallToolRequestParams(name=name, arguments=arguments)

    async def run() -> Any:
        if principal is None:
            return await handler(handlers or Handlers(), params, None)
        with serving_origin({}, principal):
            return await handler(handlers or Handlers(), params, None)

    return asyncio.run(run()), routed


def test_the_gateway_lists_exactly_the_three_tools() -> None:
    import asyncio

    listed = asyncio.run(search_namespace(standin(), lambda *a: None)["list_tools"](None, None, None))
    assert [t["name"] for t in listed["tools"]] == ["search_tools", "describe_tools", "call_tool"]
    assert listed["tools"] is SEARCH_DEFINITIONS
    for definition in SEARCH_DEFINITIONS:
        models.Tool.model_validate(definition)  # each a valid tool definition


def test_search_tools_and_describe_tools_answer_structured_content() -> None:
    answer, _ = serve(standin(*CATALOG), "search_tools", {"query": "send a message", "limit": 1})
    assert answer["structuredContent"] == {"tools": [
        {"name": "mail__send", "server": "mail", "description": "Send a message"}]}
    assert answer["content"][0]["text"] == '{"tools": [{"name": "mail__send", "server": "mail", "description": "Send a message"}]}'
    answer, _ = serve(standin(*CATALOG), "describe_tools", {"names": ["mail__send"]})
    assert answer["structuredContent"]["tools"][0]["name"] == "mail__send"


@pytest.mark.parametrize(("name", "arguments", "message"), [
    ("search_tools", {"query": "x", "limit": 0}, "search_tools: limit must be a whole number from 1 to 50, not 0"),
    ("search_tools", {}, "search_tools: query must be a few words"),
    ("search_tools", {"query": "x", "top": 3}, "search_tools: unknown argument 'top' (it takes query, limit)"),
    ("describe_tools", {"names": ["nope"]}, "describe_tools: no tool named 'nope'; find tools with search_tools"),
    ("describe_tools", {"names": "mail__send"}, "describe_tools: names must be a list of tool names"),
    ("call_tool", {"name": "nope"}, "call_tool: no tool named 'nope'; find tools with search_tools"),
    ("call_tool", {"name": 3}, 'call_tool takes {"name": "<a name from search_tools>", "arguments": {...}}'),
    ("call_tool", {"name": "mail__send", "arguments": []}, "call_tool takes {"),
    ("call_tool", {"name": "mail__send", "args": {}}, "call_tool: unknown argument 'args' (it takes name, arguments)"),
])
def test_a_models_mistake_is_an_error_it_can_read(name: str, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError) as raised:
        serve(standin(*CATALOG), name, arguments)
    assert str(raised.value).startswith(message)


def test_call_tool_routes_the_tool_inside_as_a_direct_call() -> None:
    answer, routed = serve(standin(*CATALOG), "call_tool", {"name": "mail__send", "arguments": {"to": "x"}})
    assert answer == {"content": [{"type": "text", "text": "routed"}]}
    assert [(p.name, p.arguments) for p in routed] == [("mail__send", {"to": "x"})]
    _, routed = serve(standin(*CATALOG), "call_tool", {"name": "mail__send"})
    assert [(p.name, p.arguments) for p in routed] == [("mail__send", {})]


def test_a_direct_call_of_any_other_tool_is_unknown() -> None:
    with pytest.raises(RpcError) as raised:
        serve(standin(*CATALOG), "mail__send", {"to": "x"})
    assert raised.value.code == INVALID_PARAMS
    assert str(raised.value.message).startswith("Unknown tool: 'mail__send' (this gateway serves search_tools")


def test_call_tool_refuses_what_the_principal_may_not_call() -> None:
    guarded = Handlers()
    guarded.access_policy = AccessPolicy(tools={"mail__send": requires("mail:send")})
    with pytest.raises(RpcError) as raised:
        serve(standin(*CATALOG), "call_tool", {"name": "mail__send"}, guarded, {"scopes": "notes:read"})
    assert raised.value.code == INVALID_REQUEST
    assert raised.value.data == {"requiredScopes": ["mail:send"], "missingScopes": ["mail:send"]}
    _, routed = serve(standin(*CATALOG), "call_tool", {"name": "mail__send"}, guarded, {"scopes": "mail:send"})
    assert len(routed) == 1
    answer, _ = serve(standin(*CATALOG), "search_tools", {"query": "send"}, guarded, {"scopes": "notes:read"})
    assert answer["structuredContent"] == {"tools": []}
    _, routed = serve(standin(*CATALOG), "call_tool", {"name": "mail__send"}, guarded)  # no principal
    assert len(routed) == 1


# -- the figures, against the Okapi BM25 formula written out -------------------------------------


def test_scores_are_okapi_bm25_of_the_weighted_fields() -> None:
    import math

    first = entry("pp__xx", "apple")  # pp x3, xx x6 (exported and original name), apple x1: length 10
    second = entry("qq__yy", "apple banana banana")  # qq x3, yy x6, apple x1, banana x2: length 12
    index = SearchIndex([first, second])
    average, k1, b = 11.0, 1.5, 0.75

    def part(idf: float, count: int, length: int) -> float:
        return idf * count * (k1 + 1) / (count + k1 * (1 - b + b * length / average))

    banana = math.log(1 + (2 - 1 + 0.5) / (1 + 0.5))
    apple = math.log(1 + (2 - 2 + 0.5) / (2 + 0.5))
    assert index.rank("banana") == [(second, pytest.approx(part(banana, 2, 12)))]
    assert index.rank("apple") == [(first, pytest.approx(part(apple, 1, 10))),
                                   (second, pytest.approx(part(apple, 1, 12)))]
    xx = math.log(1 + 1.5 / 1.5)
    assert index.rank("xx apple") == [(first, pytest.approx(part(xx, 6, 10) + part(apple, 1, 10))),
                                      (second, pytest.approx(part(apple, 1, 12)))]
    assert index.rank("zzz banana") == index.rank("banana")  # an unknown word is skipped, not the end
    found = Discovery(standin(first, second)).search("apple")
    assert [m.score for m in found] == [round(part(apple, 1, 10), 4), round(part(apple, 1, 12), 4)]  # 4 places


def test_plurals_fold_from_four_letters() -> None:
    assert words("gas bus apps class") == ["gas", "bus", "app", "class"]


def test_a_tool_without_description_matches_with_an_empty_line() -> None:
    bare = ToolEntry("s__bare", "s", "bare", {"name": "bare", "inputSchema": {"type": "object"}})
    (match,) = Discovery(standin(bare)).search("bare")
    assert match.description == "" and match.title is None


def test_errors_name_the_first_wrong_item() -> None:
    with pytest.raises(UnknownTool, match="'bad1'"):
        Discovery(standin(*CATALOG)).describe(["bad1", "mail__send", "bad2"])
    with pytest.raises(ToolError, match="unknown argument 'a' "):
        serve(standin(*CATALOG), "search_tools", {"query": "x", "b": 1, "a": 2})


def test_a_principal_without_a_policy_calls_anything() -> None:
    _, routed = serve(standin(*CATALOG), "call_tool", {"name": "mail__send"}, Handlers(), {"scopes": ""})
    assert len(routed) == 1


# -- an application's own tool loop: function definitions and Discovery.call ---------------------


class CallingStandIn(StandIn):
    """A stand-in that also runs tools: ``mail__send`` echoes, ``mail__fail`` is down."""

    async def call_tool(self, name: str, arguments: Any, **options: Any) -> Any:
        from typedmcp.host import ServerUnavailable

        if name == "mail__fail":
            raise ServerUnavailable("mail", "it is restarting")
        return models.CallToolResult(content=[models.TextContent(text=f"{name} {arguments} {options}")])


def calling() -> CallingStandIn:
    return CallingStandIn(Registry(tools={e.name: e for e in (*CATALOG, entry("mail__fail", "Fail"))}))


def test_the_three_tools_as_function_definitions() -> None:
    openai = Discovery(standin()).function_definitions()
    assert [f["function"]["name"] for f in openai] == ["search_tools", "describe_tools", "call_tool"]
    assert openai[0]["type"] == "function"
    assert openai[0]["function"]["parameters"]["required"] == ["query"]
    anthropic = Discovery(standin()).function_definitions("anthropic")
    assert anthropic[2]["name"] == "call_tool" and "input_schema" in anthropic[2]


def test_discovery_call_answers_a_models_function_calls() -> None:
    import asyncio

    discovery = Discovery(calling())
    found = asyncio.run(discovery.call("search_tools", {"query": "send"}))
    assert found["structuredContent"]["tools"][0]["name"] == "mail__send"
    ran = asyncio.run(discovery.call("call_tool", {"name": "mail__send", "arguments": {"to": "x"}}, timeout=3))
    assert ran == {"content": [{"type": "text", "text": "mail__send {'to': 'x'} {'timeout': 3}"}]}
    down = asyncio.run(discovery.call("call_tool", {"name": "mail__fail"}))
    assert down == {"content": [{"type": "text", "text": "server 'mail' is unavailable: it is restarting"}],
                    "isError": True}
    mistake = asyncio.run(discovery.call("describe_tools", None))
    assert mistake["isError"] is True
    assert mistake["content"][0]["text"].startswith("describe_tools: names must")
    other = asyncio.run(discovery.call("mail__send", {}))
    assert other["isError"] is True and other["content"][0]["text"].startswith("Unknown tool: 'mail__send'")
