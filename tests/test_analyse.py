"""Stage 2 (analyse): pairing, directions, capability gates and eras of every revision."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import FIXTURES, RELEASED

from typedmcp_codegen import analyse as analyse_module
from typedmcp_codegen.analyse import (
    EMPTY_RESULT_METHODS,
    GATE_EXCEPTIONS,
    Direction,
    Gate,
    Notification,
    Protocol,
    Request,
    analyse,
    handler_name,
)
from typedmcp_codegen.errors import CodegenError
from typedmcp_codegen.generate import GeneratedPackage
from typedmcp_codegen.load import LoadedSchema, SchemaSource, load_schema
from typedmcp_codegen.models import index_models
from typedmcp_codegen.pins import load_pins
from typedmcp_codegen.document import Era, definitions_key, ref_name

PINNED = load_pins().names
HANDSHAKE_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


@pytest.fixture(scope="module")
def schemas(offline_source: SchemaSource) -> dict[str, LoadedSchema]:
    pins = load_pins()
    return {name: load_schema(name, pins, offline_source) for name in PINNED}


@pytest.fixture(scope="module")
def protocols(schemas: dict[str, LoadedSchema]) -> dict[str, Protocol]:
    return {name: analyse(s.document, name, s.sha256) for name, s in schemas.items()}


def defs_of(schema: LoadedSchema) -> dict[str, Any]:
    defs: dict[str, Any] = schema.document[definitions_key(schema.document)]
    return defs


def messages(protocol: Protocol) -> list[Request | Notification]:
    return [*protocol.requests, *protocol.notifications]


def gates(protocol: Protocol, method: str) -> set[Gate]:
    for message in messages(protocol):
        if message.method == method:
            return set(message.gates)
    raise AssertionError(f"{protocol.revision} has no method {method}")


def test_every_request_of_every_revision_pairs_with_existing_types(
    schemas: dict[str, LoadedSchema], protocols: dict[str, Protocol]
) -> None:
    problems = []
    for name, protocol in protocols.items():
        defs = defs_of(schemas[name])
        assert protocol.requests, f"{name}: no requests found"
        for request in protocol.requests:
            for result in (request.result_type, *request.alternative_result_types):
                if result not in defs:
                    problems.append(f"{name} {request.method}: result {result} is not defined")
            params = request.params_type
            declared = defs[request.request_type].get("properties", {}).get("params")
            if declared is None:
                if params is not None:
                    problems.append(f"{name} {request.method}: params {params} from nowhere")
            elif ref_name(declared) is not None:
                if params != ref_name(declared) or params not in defs:
                    problems.append(f"{name} {request.method}: params {params} != {declared}")
            elif params != f"{request.request_type}Params":
                problems.append(f"{name} {request.method}: inline params named {params}")
    assert problems == []


def test_every_message_with_a_method_is_analysed(
    schemas: dict[str, LoadedSchema], protocols: dict[str, Protocol]
) -> None:
    """A message type missing from the Client*/Server* unions would silently drop a method."""
    for name, protocol in protocols.items():
        defs = defs_of(schemas[name])
        found = {r.request_type for r in protocol.requests}
        found |= {n.notification_type for n in protocol.notifications}
        with_method = {
            type_name
            for type_name, schema in defs.items()
            if isinstance(schema.get("properties", {}).get("method", {}).get("const"), str)
            and not type_name.startswith(("Client", "Server"))
        }
        assert with_method - found == set(), name
        methods = [m.method for m in messages(protocol)]
        assert len(methods) == len(set(methods)), name


@pytest.mark.parametrize("revision", RELEASED)
def test_every_paired_type_exists_among_the_generated_models(
    revision: str, generate_revision: Callable[[str], GeneratedPackage]
) -> None:
    package = generate_revision(revision)
    index = index_models(
        {path: text for path, text in package.files.items() if path.startswith("models/")}
    )
    for request in package.protocol.requests:
        names = [request.request_type, request.result_type, *request.alternative_result_types]
        names += [request.params_type] if request.params_type else []
        assert [n for n in names if n not in index] == [], request.method
    for notification in package.protocol.notifications:
        names = [notification.notification_type]
        names += [notification.params_type] if notification.params_type else []
        assert [n for n in names if n not in index] == [], notification.method


def test_main_result_is_in_the_answering_sides_result_union(
    schemas: dict[str, LoadedSchema], protocols: dict[str, Protocol]
) -> None:
    for name, protocol in protocols.items():
        defs = defs_of(schemas[name])

        def members(union: str, defs: dict[str, Any] = defs) -> set[str]:
            return {str(ref_name(b)) for b in defs.get(union, {}).get("anyOf", [])}

        answers = {
            Direction.CLIENT_TO_SERVER: members("ServerResult"),
            Direction.SERVER_TO_CLIENT: members("ClientResult"),
            Direction.BOTH: members("ServerResult") & members("ClientResult"),
        }
        for request in protocol.requests:
            if request.embedded:
                continue  # answered inside an input response, not as a JSON-RPC result
            result = request.result_type
            target = ref_name(defs[result]) if "$ref" in defs[result] else result
            assert target in answers[request.direction], (name, request.method)


@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
def test_ping_answers_with_empty_result(revision: str, protocols: dict[str, Protocol]) -> None:
    ping = protocols[revision].request("ping")
    assert (ping.result_type, ping.alternative_result_types) == ("EmptyResult", ())
    assert ping.direction is Direction.BOTH
    assert not ping.params_required


def test_stateless_revisions_have_no_ping_or_initialize(protocols: dict[str, Protocol]) -> None:
    for name in ("2026-07-28", "draft"):
        methods = {r.method for r in protocols[name].requests}
        assert {"ping", "initialize"} & methods == set()
        assert "server/discover" in methods


def test_tools_call_may_answer_with_a_task_in_2025_11_25(protocols: dict[str, Protocol]) -> None:
    call = protocols["2025-11-25"].request("tools/call")
    assert (call.result_type, call.alternative_result_types) == (
        "CallToolResult",
        ("CreateTaskResult",),
    )


def test_task_augmentable_requests_are_exactly_those_the_capabilities_name(
    schemas: dict[str, LoadedSchema], protocols: dict[str, Protocol]
) -> None:
    """``tasks.requests.<a>.<b>`` in either side's capabilities declares ``a/b`` task-augmentable,
    so exactly those requests may answer with ``CreateTaskResult``.
    """
    defs = defs_of(schemas["2025-11-25"])
    declared = set()
    for side in ("ClientCapabilities", "ServerCapabilities"):
        requests = defs[side]["properties"]["tasks"]["properties"]["requests"]["properties"]
        for group, node in requests.items():
            declared |= {f"{group}/{action}" for action in node["properties"]}
    assert declared == {"tools/call", "sampling/createMessage", "elicitation/create"}
    augmentable = {
        r.method
        for r in protocols["2025-11-25"].requests
        if "CreateTaskResult" in r.alternative_result_types
    }
    assert augmentable == declared


@pytest.mark.parametrize("revision", ["2026-07-28", "draft"])
def test_tools_call_may_ask_for_input_in_2026_07_28(
    revision: str, protocols: dict[str, Protocol]
) -> None:
    call = protocols[revision].request("tools/call")
    assert (call.result_type, call.alternative_result_types) == (
        "CallToolResult",
        ("InputRequiredResult",),
    )
    assert call.pairing_rule == "response-def"


def test_older_revisions_have_no_alternative_results(protocols: dict[str, Protocol]) -> None:
    for name in ("2024-11-05", "2025-03-26", "2025-06-18"):
        assert [r.method for r in protocols[name].requests if r.alternative_result_types] == []


@pytest.mark.parametrize(
    ("method", "direction"),
    [
        ("initialize", Direction.CLIENT_TO_SERVER),
        ("tools/call", Direction.CLIENT_TO_SERVER),
        ("sampling/createMessage", Direction.SERVER_TO_CLIENT),
        ("roots/list", Direction.SERVER_TO_CLIENT),
        ("ping", Direction.BOTH),
        ("notifications/cancelled", Direction.BOTH),
        ("notifications/progress", Direction.BOTH),
        ("notifications/initialized", Direction.CLIENT_TO_SERVER),
        ("notifications/roots/list_changed", Direction.CLIENT_TO_SERVER),
        ("notifications/message", Direction.SERVER_TO_CLIENT),
        ("notifications/tools/list_changed", Direction.SERVER_TO_CLIENT),
    ],
)
def test_directions_in_2025_06_18(
    method: str, direction: Direction, protocols: dict[str, Protocol]
) -> None:
    protocol = protocols["2025-06-18"]
    found = {m.method: m.direction for m in messages(protocol)}
    assert found[method] is direction


def test_directions_in_2026_07_28(protocols: dict[str, Protocol]) -> None:
    protocol = protocols["2026-07-28"]
    found = {m.method: m for m in messages(protocol)}
    # ClientNotification is a flattened one-member union there: it still makes it BOTH
    assert found["notifications/cancelled"].direction is Direction.BOTH
    assert found["notifications/progress"].direction is Direction.SERVER_TO_CLIENT
    embedded = {r.method for r in protocol.requests if r.embedded}
    assert embedded == {"sampling/createMessage", "roots/list", "elicitation/create"}
    for method in embedded:
        assert found[method].direction is Direction.SERVER_TO_CLIENT
    assert found["tools/call"].direction is Direction.CLIENT_TO_SERVER


@pytest.mark.parametrize("revision", RELEASED)
@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("tools/call", {Gate("server", ("tools",))}),
        ("notifications/tools/list_changed", {Gate("server", ("tools", "listChanged"))}),
        ("sampling/createMessage", {Gate("client", ("sampling",))}),
        ("notifications/message", {Gate("server", ("logging",))}),
        ("notifications/resources/updated", {Gate("server", ("resources", "subscribe"))}),
    ],
)
def test_capability_gates(
    revision: str, method: str, expected: set[Gate], protocols: dict[str, Protocol]
) -> None:
    assert gates(protocols[revision], method) == expected


@pytest.mark.parametrize("revision", HANDSHAKE_REVISIONS)
def test_subscribe_gates_and_ungated_methods(revision: str, protocols: dict[str, Protocol]) -> None:
    protocol = protocols[revision]
    subscribe = {Gate("server", ("resources", "subscribe"))}
    assert gates(protocol, "resources/subscribe") == subscribe
    assert gates(protocol, "resources/unsubscribe") == subscribe
    assert gates(protocol, "resources/read") == {Gate("server", ("resources",))}
    for ungated in ("ping", "initialize", "notifications/initialized", "notifications/cancelled"):
        assert gates(protocol, ungated) == set(), ungated


def test_completion_gate_appears_with_the_capability(protocols: dict[str, Protocol]) -> None:
    assert gates(protocols["2024-11-05"], "completion/complete") == set()
    assert gates(protocols["2025-03-26"], "completion/complete") == {
        Gate("server", ("completions",))
    }


def test_both_way_requests_are_gated_on_both_sides(protocols: dict[str, Protocol]) -> None:
    assert gates(protocols["2025-11-25"], "tasks/list") == {
        Gate("client", ("tasks", "list")),
        Gate("server", ("tasks", "list")),
    }


def test_eras(protocols: dict[str, Protocol]) -> None:
    pins = load_pins()
    for name, protocol in protocols.items():
        expected = Era.HANDSHAKE if name in HANDSHAKE_REVISIONS else Era.STATELESS
        assert protocol.era is expected, name
        assert protocol.era.value == pins.find(name).era  # type: ignore[union-attr]


@pytest.mark.parametrize("method", sorted(EMPTY_RESULT_METHODS))
def test_each_empty_result_exception_is_needed(
    method: str, schemas: dict[str, LoadedSchema], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(analyse_module, "EMPTY_RESULT_METHODS", EMPTY_RESULT_METHODS - {method})
    failures = []
    for name, schema in schemas.items():
        try:
            analyse(schema.document, name, schema.sha256)
        except CodegenError as error:
            failures.append(name)
            assert method in error.problem and "EMPTY_RESULT_METHODS" in error.fix
    assert failures, f"{method} is in EMPTY_RESULT_METHODS but no revision needs it"


@pytest.mark.parametrize("method", sorted(GATE_EXCEPTIONS))
def test_each_gate_exception_is_needed(
    method: str,
    schemas: dict[str, LoadedSchema],
    protocols: dict[str, Protocol],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reduced = {key: value for key, value in GATE_EXCEPTIONS.items() if key != method}
    monkeypatch.setattr(analyse_module, "GATE_EXCEPTIONS", reduced)
    changed = []
    for name, schema in schemas.items():
        protocol = analyse(schema.document, name, schema.sha256)
        methods = {m.method for m in messages(protocol)}
        if method in methods and gates(protocol, method) != gates(protocols[name], method):
            changed.append(name)
    assert changed, f"{method} is in GATE_EXCEPTIONS but derivation gives the same gates"


@pytest.mark.parametrize(
    ("type_name", "suffix", "expected"),
    [
        ("CallToolRequest", "Request", "call_tool"),
        ("ListResourceTemplatesRequest", "Request", "list_resource_templates"),
        ("ProgressNotification", "Notification", "progress"),
        ("CreateMessageRequest", "Request", "create_message"),
        ("Oddball", "Request", "oddball"),
    ],
)
def test_handler_name(type_name: str, suffix: str, expected: str) -> None:
    assert handler_name(type_name, suffix) == expected


def tiny() -> dict[str, Any]:
    document: dict[str, Any] = json.loads((FIXTURES / "schemas/tiny/schema.json").read_text())
    return document


def test_tiny_schema_analysis() -> None:
    protocol = analyse(tiny(), "2099-01-01", "0" * 64)
    assert protocol.era is Era.HANDSHAKE
    assert [r.method for r in protocol.requests] == [
        "gadgets/list",
        "initialize",
        "ping",
        "sampling/createMessage",
    ]
    gadgets = protocol.request("gadgets/list")
    assert (gadgets.params_type, gadgets.params_required) == ("ListGadgetsRequestParams", False)
    assert gadgets.gates == (Gate("server", ("gadgets",)),)
    assert protocol.request("ping").params_type is None


def test_a_request_without_a_result_is_an_error() -> None:
    document = tiny()
    del document["$defs"]["ListGadgetsResult"]
    with pytest.raises(CodegenError, match=r"gadgets/list \(ListGadgetsRequest\) has no result"):
        analyse(document, "2099-01-01", "0" * 64)


def test_a_union_member_without_a_method_is_an_error() -> None:
    document = tiny()
    del document["$defs"]["PingRequest"]["properties"]["method"]
    with pytest.raises(CodegenError, match=r"PingRequest .* no const 'method'"):
        analyse(document, "2099-01-01", "0" * 64)


def test_two_methods_with_one_python_name_are_an_error() -> None:
    document = tiny()
    defs = document["$defs"]
    defs["ListGADGETSRequest"] = copy.deepcopy(defs["ListGadgetsRequest"])
    defs["ListGADGETSRequest"]["properties"]["method"]["const"] = "gadgets/list2"
    defs["ListGADGETSResult"] = copy.deepcopy(defs["ListGadgetsResult"])
    defs["ClientRequest"]["anyOf"].append({"$ref": "#/$defs/ListGADGETSRequest"})
    assert handler_name("ListGADGETSRequest", "Request") == "list_gadgets"
    with pytest.raises(CodegenError, match="'list_gadgets'"):
        analyse(document, "2099-01-01", "0" * 64)


def test_a_flattened_union_must_copy_exactly_one_message() -> None:
    document = tiny()
    defs = document["$defs"]
    defs["ServerNotification"] = {"type": "object", "properties": {"method": {"const": "nope"}}}
    with pytest.raises(CodegenError, match="ServerNotification is neither an anyOf"):
        analyse(document, "2099-01-01", "0" * 64)


# not an MCP schema: the input's fault, named as such


@pytest.mark.parametrize(
    ("removed", "missing"),
    [
        (("ClientRequest",), "ClientRequest"),
        (("ClientNotification", "ServerNotification"), "ClientNotification, ServerNotification"),
        (("ServerRequest",), "ServerRequest (or InputRequest)"),
    ],
)
def test_a_schema_without_the_message_unions_is_not_an_mcp_schema(
    removed: tuple[str, ...], missing: str
) -> None:
    document = tiny()
    for name in removed:
        del document["$defs"][name]
    with pytest.raises(CodegenError) as caught:
        analyse(document, "2099-01-01", "0" * 64)
    assert f"not an MCP schema: it lacks {missing}" in caught.value.problem
    assert "generator bug" not in str(caught.value)
    assert "schema.json of an MCP revision" in caught.value.fix


def test_input_request_stands_in_for_server_request() -> None:
    """2026-07-28 has InputRequest (requests carried in results) instead of ServerRequest."""
    document = tiny()
    document["$defs"]["InputRequest"] = document["$defs"].pop("ServerRequest")
    protocol = analyse(document, "2099-01-01", "0" * 64)
    assert protocol.request("sampling/createMessage").embedded


def test_an_empty_client_request_union_is_not_an_mcp_schema() -> None:
    document = tiny()
    document["$defs"]["ClientRequest"] = {"anyOf": [{"$ref": "#/$defs/Gadget"}]}
    with pytest.raises(CodegenError, match="Gadget is listed in a Client"):
        analyse(document, "2099-01-01", "0" * 64)
