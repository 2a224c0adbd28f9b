"""The lane's answers spliced from the server's line (``typedmcp.host.splice``): byte for
byte what the parse path writes (the result parsed, checked, completed by the gateway's
``finish`` and dumped under the caller's id), for ids of both kinds and results with and
without a ``_meta``; None (the parse path answers) for every line it cannot splice so; and,
through the lane, the same bytes as the pass-through's task path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic_core import from_json
from test_gateway_passthrough import Lines, call, gateway, prompt, reaper, started, untraced

from mcp_generated.v2026_07_28.server import ServerHandlers
from typedmcp.engine.jsonrpc import RequestId, encode, encode_result
from typedmcp.host.fastpath import PassThrough, _check_output
from typedmcp.host.splice import AnswerSplice
from typedmcp.protocol.client import ClientSession
from typedmcp.protocol.tools import ToolSchemas
from typedmcp.stateless.server import StatelessServer

__all__ = ["reaper", "untraced"]
INFO = "io.modelcontextprotocol/serverInfo"
THEIRS = {"name": "a server", "version": "1.0.0"}
WEATHER = {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]}
CALLER_IDS: list[RequestId] = [0, 7, 2**53 + 1, "abc", 'q"u\\o\u00e9\n\u2028 ']


class Handlers(ServerHandlers):  # (the gateway's stateless server needs a handler object)
    pass


def gateway_server(**options: Any) -> StatelessServer:
    return StatelessServer(Handlers(), server_info={"name": 'gateway "g"', "version": "0.1"}, **options)


class Session:
    """What the splice reads of a server connection (the plain ``on_result`` hook)."""

    on_result = ClientSession.on_result
    validate_tool_output = True

    def __init__(self) -> None:
        self.tool_schemas = ToolSchemas()
        self.tool_schemas.update([
            {"name": "echo", "inputSchema": {"type": "object"}},
            {"name": "weather", "inputSchema": {"type": "object"}, "outputSchema": WEATHER},
        ])


class Hooked(Session):
    def on_result(self, method: str, raw: Any) -> Any:
        return raw


def parse_path(modern: StatelessServer, session: Any, tool: str | None, caller_id: RequestId, line: bytes) -> bytes:
    """The lane's parse path: the server's result checked and completed as
    ``PassThrough._complete`` does, then dumped under the caller's id."""
    result = session.on_result("tools/call", from_json(line, allow_inf_nan=False)["result"])
    if tool is not None:
        _check_output(session, tool, result)
    return encode_result(caller_id, modern.finish("tools/call", result))


def spliced(splice: AnswerSplice, session: Any, tool: str | None, caller_id: RequestId, line: bytes,
            upstream_id: RequestId = 5) -> bytes | None:
    message = from_json(line, allow_inf_nan=False)
    return splice.answer("tools/call", caller_id, upstream_id, session, tool, message, line)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


RESULTS: list[tuple[str | None, dict[str, Any]]] = [
    ("echo", {"content": [text("hi")], "resultType": "complete", "_meta": {INFO: THEIRS}}),
    ("echo", {"x-fixture": {"kept": [1, 2.5, None, 2**70]}, "content": [text('é ☃ "\\ \u2028')],
              "resultType": "complete", "_meta": {"fixture/seen": True, INFO: THEIRS}}),
    ("echo", {"content": [text("no _meta")], "resultType": "complete"}),
    ("weather", {"content": [], "structuredContent": {"celsius": 21.5}, "resultType": "complete",
                 "_meta": {INFO: THEIRS}}),
    ("weather", {"content": [text("failed")], "isError": True, "resultType": "complete", "_meta": {INFO: THEIRS}}),
    (None, {"messages": [], "resultType": "complete", "_meta": {INFO: {"name": "other", "version": "2"}}}),
]


@pytest.mark.parametrize("caller_id", CALLER_IDS)
@pytest.mark.parametrize(("tool", "result"), RESULTS)
def test_a_spliced_answer_is_the_parse_paths_bytes(caller_id: RequestId, tool: str | None, result: dict[str, Any]) -> None:
    modern, session = gateway_server(), Session()
    splice = AnswerSplice(modern)
    for upstream_id in (5, 123456789):
        line = encode({"jsonrpc": "2.0", "id": upstream_id, "result": result})
        answer = spliced(splice, session, tool, caller_id, line, upstream_id)
        assert answer == parse_path(modern, session, tool, caller_id, line)
    assert json.loads(answer)["result"]["_meta"][INFO] == {"name": 'gateway "g"', "version": "0.1"}


def test_without_server_info_in_results_the_result_passes_unchanged() -> None:
    modern, session = gateway_server(server_info_in_results=False), Session()
    line = encode({"jsonrpc": "2.0", "id": 5, "result": RESULTS[1][1]})
    answer = spliced(AnswerSplice(modern), session, "echo", "the caller", line)
    assert answer == parse_path(modern, session, "echo", "the caller", line)
    assert answer == b'{"jsonrpc":"2.0","id":"the caller"' + line[len(b'{"jsonrpc":"2.0","id":5'):]


RESULT = {"content": [text("hi")], "resultType": "complete", "_meta": {INFO: THEIRS}}
WRITTEN = encode({"jsonrpc": "2.0", "id": 5, "result": RESULT}).decode()
NOT_SPLICED = {
    # what the parse path changes besides the id and serverInfo, or rejects
    "no resultType": {"content": [], "_meta": {INFO: THEIRS}},
    "input required": {"resultType": "input_required", "inputRequests": {}, "_meta": {INFO: THEIRS}},
    "_meta not last": {"_meta": {INFO: THEIRS}, "content": [], "resultType": "complete"},
    "a member after _meta that ends as it does": {"_meta": {INFO: THEIRS}, "resultType": "complete",
                                                  "x": {INFO: THEIRS}},
    "serverInfo not last": {"content": [], "resultType": "complete", "_meta": {INFO: THEIRS, "k": 1}},
    "an empty _meta": {"content": [], "resultType": "complete", "_meta": {}},
    "a _meta not an object": {"content": [], "resultType": "complete", "_meta": None},
    "output breaking the outputSchema": {"content": [], "structuredContent": {"celsius": "warm"},
                                         "resultType": "complete", "_meta": {INFO: THEIRS}},
}
NOT_SPLICED_LINES = {
    "another member order": WRITTEN.replace('{"jsonrpc":"2.0","id":5,', '{"id":5,"jsonrpc":"2.0",'),
    "a member besides result": WRITTEN[:-1] + ',"x":{"_meta":{"' + INFO + '":' + json.dumps(THEIRS, separators=(",", ":")) + "}}}",
    "spaces": json.dumps({"jsonrpc": "2.0", "id": 5, "result": RESULT}),
    "spaces in the serverInfo": WRITTEN.replace('{"name":"a server",', '{"name": "a server", '),
    "another id": WRITTEN.replace('"id":5,', '"id":6,'),
    "an escape our encoder does not write": WRITTEN.replace('"text":"hi"', '"text":"h\\u0069"'),
    "a number spelled otherwise": WRITTEN.replace('"resultType"', '"x-n":1E2,"resultType"'),
    "a member written twice": WRITTEN.replace('"text":"hi"', '"text":"hi","text":"hi"'),
}


@pytest.mark.parametrize("case", sorted(NOT_SPLICED))
def test_a_result_the_parse_path_changes_or_refuses_is_not_spliced(case: str) -> None:
    line = encode({"jsonrpc": "2.0", "id": 5, "result": NOT_SPLICED[case]})
    tool = "weather" if "outputSchema" in case else "echo"
    assert spliced(AnswerSplice(gateway_server()), Session(), tool, 1, line) is None


@pytest.mark.parametrize("case", sorted(NOT_SPLICED_LINES))
def test_a_line_written_otherwise_is_not_spliced(case: str) -> None:
    line = NOT_SPLICED_LINES[case].encode()
    assert from_json(line)["result"]  # (still a response the parse path answers)
    assert spliced(AnswerSplice(gateway_server()), Session(), "echo", 1, line) is None


def test_a_session_with_its_own_result_hook_or_a_completion_that_adds_members_is_not_spliced() -> None:
    line = WRITTEN.encode()
    assert spliced(AnswerSplice(gateway_server()), Session(), "echo", 1, line) is not None
    assert spliced(AnswerSplice(gateway_server()), Hooked(), "echo", 1, line) is None
    message = from_json(line)
    # a cacheable method's completion adds ttlMs and cacheScope: not spliced
    assert AnswerSplice(gateway_server()).answer("tools/list", 1, 5, Session(), None, message, line) is None


def test_a_server_whose_info_changes_is_spliced_with_its_new_info() -> None:
    modern, session = gateway_server(), Session()
    splice = AnswerSplice(modern)
    for info in (THEIRS, {"name": "a server", "version": "2.0.0"}, {"name": "a server", "version": "2.0.0-beta"},
                 THEIRS):
        line = encode({"jsonrpc": "2.0", "id": 5, "result": {**RESULT, "_meta": {INFO: info}}})
        assert spliced(splice, session, "echo", 1, line) == parse_path(modern, session, "echo", 1, line)


def lane_bytes(splice: AnswerSplice, session: Any, tool: str | None, line: bytes) -> bytes:
    """What the lane answers for the server's ``line``: spliced, or else the parse path's."""
    return spliced(splice, session, tool, 1, line) or parse_path(splice.modern, session, tool, 1, line)


HEAD = '{"jsonrpc":"2.0","id":5,'
GOOD_INFO = '"_meta":{"' + INFO + '":{"name":"a server","version":"1.0.0"}}'
#: lines with a member written twice, where the gateway relays the server's bytes: the
#: parser keeps the last member (the one checked); a relay of the line would carry both,
#: and a reader that keeps the first would see the unchecked one. (label, tool, line, the
#: member's text in the unchecked copy, in the checked one)
TWICE: list[tuple[str, str, str, str, str]] = [
    ("result twice", "echo",
     HEAD + '"result":{"content":[{"type":"text","text":"EVIL"}],"resultType":"complete",' + GOOD_INFO + '},'
     '"result":{"content":[{"type":"text","text":"GOOD"}],"resultType":"complete",' + GOOD_INFO + "}}",
     '"EVIL"', '"GOOD"'),
    ("structuredContent twice", "weather",
     HEAD + '"result":{"content":[],"structuredContent":{"celsius":"EVIL"},"structuredContent":{"celsius":21.5},'
     '"resultType":"complete",' + GOOD_INFO + "}}",
     '"EVIL"', "21.5"),
    ("a key twice inside structuredContent", "weather",
     HEAD + '"result":{"content":[],"structuredContent":{"celsius":"EVIL","celsius":21.5},'
     '"resultType":"complete",' + GOOD_INFO + "}}",
     '"EVIL"', "21.5"),
    ("a key twice in a content block", "echo",
     HEAD + '"result":{"content":[{"type":"text","text":"EVIL","text":"GOOD"}],"resultType":"complete",'
     + GOOD_INFO + "}}",
     '"EVIL"', '"GOOD"'),
    ("a key twice in the result's _meta", "echo",
     HEAD + '"result":{"content":[],"resultType":"complete","_meta":{"x/seen":"EVIL","x/seen":"GOOD",'
     '"' + INFO + '":{"name":"a server","version":"1.0.0"}}}}',
     '"EVIL"', '"GOOD"'),
    ("a key twice, spelled otherwise", "echo",
     HEAD + '"result":{"content":[{"type":"text","text":"EVIL","t\u0065xt":"GOOD"}],"resultType":"complete",'
     + GOOD_INFO + "}}",
     '"EVIL"', '"GOOD"'),
    ("a key twice in a result without _meta", "echo",
     HEAD + '"result":{"content":[{"type":"text","text":"EVIL","text":"GOOD"}],"resultType":"complete"}}',
     '"EVIL"', '"GOOD"'),
]


@pytest.mark.parametrize("case", TWICE, ids=[case[0] for case in TWICE])
@pytest.mark.parametrize("info_in_results", [True, False])
def test_a_line_with_a_member_written_twice_is_answered_with_the_checked_member_alone(
        case: tuple[str, str, str, str, str], info_in_results: bool) -> None:
    """The lane's answer is the parse path's bytes: the member the output check saw, once."""
    _label, tool, written, unchecked, checked = case
    line = written.encode()
    assert from_json(line)  # (a line the engine's read path parses: it reaches the lane)
    modern, session = gateway_server(server_info_in_results=info_in_results), Session()
    answer = lane_bytes(AnswerSplice(modern), session, tool, line)
    assert answer == parse_path(modern, session, tool, 1, line)
    assert unchecked.encode() not in answer and answer.count(checked.encode()) == 1


#: a member written twice only where the gateway writes its own (the server's id, its
#: serverInfo): relaying the rest would be harmless; these lines take the parse path all the same
TWICE_NOT_RELAYED = {
    "the server's serverInfo": HEAD + '"result":{"content":[],"resultType":"complete","_meta":{"' + INFO
    + '":{"name":"EVIL","name":"a server","version":"1.0.0"}}}}',
    "jsonrpc": '{"jsonrpc":"2.0","jsonrpc":"2.0","id":5,"result":{"content":[],"resultType":"complete",'
    + GOOD_INFO + "}}",
}


@pytest.mark.parametrize("case", sorted(TWICE_NOT_RELAYED))
def test_a_member_written_twice_where_the_gateway_writes_its_own_takes_the_parse_path(case: str) -> None:
    line = TWICE_NOT_RELAYED[case].encode()
    modern, session = gateway_server(), Session()
    splice = AnswerSplice(modern)
    assert spliced(splice, session, "echo", 1, line) is None
    answer = lane_bytes(splice, session, "echo", line)
    assert answer == parse_path(modern, session, "echo", 1, line) and b"EVIL" not in answer


def test_a_string_upstream_id_is_spliced_as_an_int_one() -> None:
    modern, session = gateway_server(), Session()
    line = encode({"jsonrpc": "2.0", "id": "up-1", "result": RESULT})
    answer = spliced(AnswerSplice(modern), session, "echo", 7, line, upstream_id="up-1")
    assert answer is not None and answer == parse_path(modern, session, "echo", 7, line)


def test_a_servers_ending_is_written_once_per_info_and_the_table_is_bounded(monkeypatch: Any) -> None:
    modern = gateway_server()
    splice = AnswerSplice(modern)
    written: list[Any] = []
    their_end = AnswerSplice._their_end

    def counted(self: AnswerSplice, session: Any, info: Any) -> bytes:
        written.append(info)
        return their_end(self, session, info)

    monkeypatch.setattr(AnswerSplice, "_their_end", counted)
    session, line = Session(), WRITTEN.encode()
    for _ in range(3):
        assert spliced(splice, session, "echo", 1, line) == parse_path(modern, session, "echo", 1, line)
    assert written == [THEIRS]  # (the same server, the same info: written once)
    sessions = [Session() for _ in range(300)]  # (kept alive: ids stay distinct)
    for index, other in enumerate(sessions):
        assert spliced(splice, other, "echo", 1, line) is not None
        assert len(splice._theirs) == (index + 1) % 256 + 1  # 256 at most, then it starts again


def test_output_the_client_does_not_check_is_spliced() -> None:
    """An error result, or a session that does not validate output: the parse path relays
    its structured output unchecked, so the splice does too."""
    modern = gateway_server()
    broken = {"content": [], "structuredContent": {"celsius": "warm"}, "resultType": "complete",
              "_meta": {INFO: THEIRS}}
    failed = {"content": [], "structuredContent": {"celsius": "warm"}, "isError": True, "resultType": "complete",
              "_meta": {INFO: THEIRS}}
    for result, validate in ((failed, True), (broken, False)):
        session = Session()
        session.validate_tool_output = validate
        line = encode({"jsonrpc": "2.0", "id": 5, "result": result})
        answer = spliced(AnswerSplice(modern), session, "weather", 1, line)
        assert answer is not None and answer == parse_path(modern, session, "weather", 1, line)


def test_a_line_of_the_right_length_in_other_bytes_is_not_spliced() -> None:
    """A length check alone is not sound: ``1e15`` is 14 bytes shorter than our
    ``1000000000000000.0``, as long as a ``"text":"EVIL",`` written twice."""
    tail = '"resultType":"complete",' + GOOD_INFO + "}}"
    padded = HEAD + '"result":{"x-pad":1e15,"content":[{"type":"text","text":"EVIL","text":"GOOD"}],' + tail
    respelled = HEAD + '"result":{"x-a":1.500,"x-b":1e2,"content":[],' + tail  # ours: 1.5 and 100.0
    modern, session = gateway_server(), Session()
    for written in (padded, respelled):
        line = written.encode()
        assert len(encode({"jsonrpc": "2.0", "id": 5, "result": from_json(line)["result"]})) == len(line)
        assert spliced(AnswerSplice(modern), session, "echo", 1, line) is None
        assert b"EVIL" not in lane_bytes(AnswerSplice(modern), session, "echo", line)


class MetaAddingServer:
    """A gateway server whose completion adds a ``_meta`` member of its own."""

    def finish(self, method: str, result: dict[str, Any]) -> dict[str, Any]:
        return {**result, "_meta": {"x/added": 1, INFO: {"name": "g", "version": "1"}}}


def test_a_completion_that_adds_a_meta_member_is_not_spliced() -> None:
    assert spliced(AnswerSplice(MetaAddingServer()), Session(), "echo", 1, WRITTEN.encode()) is None


# -- through the lane ------------------------------------------------------------------------

ODD_IDS: list[RequestId] = [1, 'id "2"\\ \u00e9', 3, "4", 5]


async def raw_answers(host: Any, requests: list[dict[str, Any]]) -> tuple[list[bytes], PassThrough]:
    async with gateway(host, passing=True) as (lines, passage):
        assert isinstance(lines, Lines) and isinstance(passage, PassThrough)
        answers = []
        for request in requests:
            lines.put(request)
            answers.append((await lines.until_answer(request["id"]))[-1])
        return answers, passage


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_through_the_lane_the_spliced_bytes_are_the_task_paths(reaper: Any, monkeypatch: Any) -> None:
    """Results, a result with a ``_meta`` of its own, structured output, a prompt, an
    error: the lane's bytes (spliced where it may) equal the pass-through's task path's."""
    requests = [
        call(ODD_IDS[0], "p__echo", {"text": "hi"}),
        call(ODD_IDS[1], "p__odd"),
        call(ODD_IDS[2], "p__weather", {}),
        prompt(ODD_IDS[3], "p__greet", {"who": "Ada"}),
        call(ODD_IDS[4], "p__failing", {"code": -32603}),
    ]
    async with started() as host:
        lane_answers, passage = await raw_answers(host, requests)
        # echo and weather; odd's and the prompt's results end with a resultType the server
        # added after their own _meta, and the error is answered as ever: the parse path
        assert passage.engine.lane.spliced == 2
        monkeypatch.setattr(PassThrough, "use_lane", False)
        task_answers, _passage = await raw_answers(host, requests)
    assert lane_answers == task_answers
    assert [json.loads(answer)["id"] for answer in lane_answers] == ODD_IDS
    assert json.loads(lane_answers[4])["error"]["code"] == -32603


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_number_too_large_for_a_float_is_refused_as_it_is_read_by_both_paths(reaper: Any, monkeypatch: Any) -> None:
    """A number too large for a float (``1e999``, which pydantic-core reads as infinity):
    refused as the gateway reads it, -32700 naming the number and answering the call's id
    (the lane never sees it; before: -32603 when the encoder refused it), not a call left
    unanswered; and a string "NaN" in the arguments is sent as any other."""
    line = json.dumps(call(1, "p__weather", {"x": 0})).replace('{"x": 0}', '{"x": 1e999}').encode()
    nan_text = call(2, "p__echo", {"text": "NaN and Infinity"})
    answers: dict[bool, list[dict[str, Any]]] = {}
    async with started() as host:
        for lane in (True, False):
            monkeypatch.setattr(PassThrough, "use_lane", lane)
            async with gateway(host, passing=True) as (lines, passage):
                lines.incoming.put_nowait(line)
                lines.put(nan_text)
                answers[lane] = [json.loads((await lines.until_answer(request_id))[-1]) for request_id in (1, 2)]
                assert passage.passed == 1
                if lane:
                    assert not passage.engine.lane.calls
    assert answers[True] == answers[False]
    assert answers[True][0]["error"]["code"] == -32700
    assert answers[True][0]["error"]["message"].startswith("Parse error: the number 1e999 is too large for a float")
    assert answers[True][1]["result"]["content"][0]["text"] == "NaN and Infinity"
