"""The per-request fast paths of both sides keep the slow paths' guarantees.

* Validators are the models' core validators bound once: wire names only, same errors.
* The client checks outgoing params with its own ``_meta`` validated once (as a model where
  the params type takes it): bad params are still refused before anything is sent, and a
  caller's own ``_meta`` entries are still checked and sent.
* The server's one-test ``_meta`` check lets only well-formed requests through; anything
  else gets the ordered checks and their errors.
* ``connect_direct`` hands over answers without an encoding step, so the server makes them
  plain JSON data, and never changes a dict a handler returned.
* ``ctx.peer`` is built on first use; a context knows when its handler has returned.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import ValidationError

from typedmcp.connecting import connect_direct
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.meta import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY
from typedmcp.protocol.spec import validator_of
from typedmcp.protocol.stubs import RequestContext
from typedmcp.stateless.server import StatelessServer
from mcp_generated import v2026_07_28
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ServerHandlers

SHARED_RESULT: dict[str, Any] = {
    "content": [{"type": "text", "text": "shared"}],
    "structuredContent": {"pair": (1, 2)},
}


class Plain(ServerHandlers):
    """Handlers that return plain data, and one that records what its context saw."""

    def __init__(self) -> None:
        self.seen: dict[str, Any] = {}

    async def call_tool(self, params: Any, ctx: Any) -> Any:
        if params.name == "shared":
            return SHARED_RESULT
        self.seen["meta"] = dict(ctx.meta)
        self.seen["peer built before use"] = ctx._peer is not None
        return models.CallToolResult(content=[models.TextContent(type="text", text="ok")])


def run(body: Any) -> Any:
    return asyncio.run(body())


# -- validators -------------------------------------------------------------------------------


def test_a_bound_validator_accepts_wire_names_only() -> None:
    validate = validator_of(models.CallToolResult)
    typed = validate({"content": [], "isError": True})
    assert isinstance(typed, models.CallToolResult) and typed.is_error is True
    # the Python name is not a wire name: it is kept as an extra, not read as isError
    assert validate({"content": [], "is_error": True}).is_error is None
    with pytest.raises(ValidationError, match="content"):
        validate({"isError": True})


# -- the client's params check -----------------------------------------------------------------


def test_bad_params_are_refused_before_anything_is_sent() -> None:
    async def body() -> None:
        handlers = Plain()
        async with connect_direct(handlers) as client:
            assert client.session.era == "stateless"
            with pytest.raises(ValidationError, match="name"):
                await client.call_tool(name=123, arguments={})  # type: ignore[arg-type]
            assert handlers.seen == {}

    run(body)


def test_the_callers_own_meta_is_checked_and_sent_beside_ours() -> None:
    async def body() -> None:
        handlers = Plain()
        async with connect_direct(handlers) as client:
            with pytest.raises(ValidationError, match="progressToken"):
                await client.call_tool(name="echo", meta={"progressToken": 1.5})  # checked at run time
            await client.call_tool(name="echo", meta={"progressToken": "p", "x/trace": "t1"})
            meta = handlers.seen["meta"]
            assert meta["progressToken"] == "p" and meta["x/trace"] == "t1"
            assert meta[PROTOCOL_VERSION_KEY] == "2026-07-28"
            assert isinstance(meta[CLIENT_CAPABILITIES_KEY], dict)

    run(body)


def test_our_meta_stands_in_as_a_model_only_where_the_params_type_takes_it() -> None:
    async def body() -> None:
        async with connect_direct(Plain()) as client:
            session = client.session
            spec = v2026_07_28.dispatch.REQUESTS["tools/call"]
            stand_in = session._meta_stand_in(spec)
            assert isinstance(stand_in, v2026_07_28.models.RequestMetaObject)
            assert stand_in.model_dump(by_alias=True, exclude_unset=True) == session._meta

            class Other:  # a params type whose _meta is not the request meta model
                method = "x/other"
                params_type = v2026_07_28.models.ListRootsResult

            assert session._meta_stand_in(Other) == session._meta_check

    run(body)


# -- the server's _meta check ------------------------------------------------------------------


def _server() -> StatelessServer:
    return StatelessServer(Plain(), packages=[v2026_07_28])


def _meta(**extra: Any) -> dict[str, Any]:
    return {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}, **extra}


@pytest.mark.parametrize(
    ("params", "code", "words"),
    [
        ({"name": "echo"}, -32602, "_meta is missing"),
        ({"_meta": [1]}, -32602, "_meta is missing"),
        ({"_meta": {CLIENT_CAPABILITIES_KEY: {}}}, -32602, "protocolVersion"),
        ({"_meta": _meta(**{CLIENT_CAPABILITIES_KEY: []})}, -32602, "must be an object"),
        ({"_meta": _meta(**{PROTOCOL_VERSION_KEY: "2099-01-01"})}, -32022, "2099-01-01"),
        ({"_meta": _meta(**{"io.modelcontextprotocol/logLevel": "loud"})}, -32602, "loud"),
    ],
)
def test_a_request_the_quick_test_rejects_gets_the_ordered_checks(
    params: dict[str, Any], code: int, words: str
) -> None:
    with pytest.raises(RpcError) as failed:
        _server().checked_meta(params)
    assert failed.value.code == code and words in failed.value.message


def test_well_formed_meta_passes_both_ways() -> None:
    server = _server()

    class Meta(dict[str, Any]):
        pass

    assert server.checked_meta({"_meta": _meta()}) == _meta()
    assert server.checked_meta({"_meta": Meta(_meta())}) == _meta()  # not a plain dict: slow path
    level = _meta(**{"io.modelcontextprotocol/logLevel": "info"})
    assert server.checked_meta({"_meta": level}) is level


# -- answers handed over without encoding ---------------------------------------------------------


def test_direct_answers_are_json_data_and_a_handlers_dict_is_left_alone() -> None:
    async def body() -> None:
        async with connect_direct(Plain()) as client:
            session = client.session
            raw = await session.engine.request(
                "tools/call", {"name": "shared", "arguments": {}, "_meta": session._meta}
            )
            assert raw["structuredContent"] == {"pair": [1, 2]}  # a tuple reads as a list
            assert raw["resultType"] == "complete" and "_meta" in raw
            assert SHARED_RESULT == {
                "content": [{"type": "text", "text": "shared"}],
                "structuredContent": {"pair": (1, 2)},
            }
            result = await client.call_tool(name="shared", arguments={})
            assert result.structured_content == {"pair": [1, 2]}

    run(body)


# -- the handler's context ---------------------------------------------------------------------------


def test_the_peer_is_built_on_first_use_only() -> None:
    built: list[int] = []

    def make() -> str:
        built.append(1)
        return "peer"

    context: RequestContext[str] = RequestContext(None, 7, {}, make_peer=make)
    assert built == []
    assert context.peer == "peer" and context.peer == "peer"
    assert built == [1]
    assert RequestContext("given").peer == "given"


def test_a_context_is_finished_once_its_handler_returned() -> None:
    context: RequestContext[None] = RequestContext(None, 1, {"progressToken": "t"})
    assert not context.finished and context.progress_state == {}
    context.finish()
    assert context.finished  # the sessions drop progress reported from here on


def test_a_handler_that_never_touches_its_peer_never_builds_one() -> None:
    async def body() -> None:
        handlers = Plain()
        async with connect_direct(handlers) as client:
            await client.call_tool(name="echo", arguments={})
            assert handlers.seen["peer built before use"] is False

    run(body)
