"""The gateway forwards a server's sampling and elicitation requests to its 2026-07-28
clients: the forwarded call is parked between the rounds of the client's multi round-trip
call (``runtime/typedmcp/host/parking.py``).

Real parts: the host runs here and serves its gateway over Streamable HTTP (uvicorn, this
loop); its servers are real stdio processes (a handshake-era one whose tools ask mid-call,
and the stateless-era fixture server); the clients are ours (``connect_http``), raw HTTP
where the rounds are driven by hand, and the official SDK client."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from host_support import MODERN_SERVER, REPO, reaper, serving_http, stdio, text_of
from mcp import Client
from mcp.client.session import ClientRequestContext
from test_hardening_stateless import PRM, answer, call, verify

from typedmcp.auth.bearer import BearerAuth
from typedmcp.connecting import connect_http, connect_stdio
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.host import Host
from typedmcp.host.gateway import ParkingLimits
from typedmcp.host.parking import ParkingLot
from typedmcp.protocol.stubs import RequestContext
from typedmcp.stateless.scope import RequestScope, _scope
from mcp_generated.v2026_07_28 import models
from mcp_generated.v2026_07_28.client import ClientHandlers

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]
__all__ = ["reaper"]
LIMIT = 60.0
ASKER = stdio(REPO / "tests" / "servers" / "gateway_asker.py")
SAMPLING = {"sampling": {}}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Answers(ClientHandlers):
    """A 2026-07-28 client's answers, naming the client; records what it was asked."""

    def __init__(self, name: str, *, decline: bool = False) -> None:
        self.name = name
        self.decline = decline
        self.sampled: list[str] = []
        self.elicited: list[str] = []

    async def create_message(self, params: models.CreateMessageRequestParams, ctx: RequestContext[Any]) -> models.CreateMessageResult:
        content = params.messages[0].content
        prompt = content.text if isinstance(content, models.TextContent) else "?"
        self.sampled.append(prompt)
        await asyncio.sleep(0)  # let other calls run between the rounds
        return models.CreateMessageResult(
            role="assistant", content=models.TextContent(type="text", text=f"{self.name} on {prompt}"), model="m"
        )

    async def elicit(self, params: models.ElicitRequestParams, ctx: RequestContext[Any]) -> models.ElicitResult:
        self.elicited.append(str(params.message))  # type: ignore[union-attr]
        if self.decline:
            return models.ElicitResult(action="decline")
        return models.ElicitResult(action="accept", content={"answer": f"{self.name} agrees"})


class OnlyElicits(ClientHandlers):
    """A client that declares elicitation only."""

    async def elicit(self, params: models.ElicitRequestParams, ctx: RequestContext[Any]) -> models.ElicitResult:
        return models.ElicitResult(action="accept", content={"answer": "yes"})


@contextlib.asynccontextmanager
async def gateway(config: dict[str, Any], *, auth: bool = False, **options: Any) -> AsyncIterator[tuple[Host, int]]:
    """A started host serving its gateway over Streamable HTTP on a free port: (host, port)."""
    host_options = {k: options.pop(k) for k in ("sampling", "elicitation") if k in options}
    async with Host(config, client_requests=("sampling", "elicitation"), **host_options) as host:
        for name, status in host.status().items():
            assert status["state"] == "ready", (name, status)
        if auth:
            options["auth"] = BearerAuth(verify, PRM)
        async with serving_http(host, LIMIT, **options) as port:
            yield host, port


def url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


async def stats(port: int, token: str | None = None) -> dict[str, list[str]]:
    _, response = await answer(port, call(900, "ask__stats", {}), token)
    return json.loads(response["result"]["content"][0]["text"])  # type: ignore[no-any-return]


async def test_sampling_and_elicitation_reach_a_modern_client_and_their_answers_the_server(reaper: Any) -> None:
    """One round (sampling), two rounds in one call (sampling, then an elicitation that
    quotes the sampled answer), and a declined form: the tool's result shows what the
    client answered."""
    async with gateway({"ask": ASKER}) as (_, port):
        answers = Answers("alice")
        async with connect_http(url(port), handlers=answers) as client:
            assert client.session.era == "stateless"
            with anyio.fail_after(LIMIT):
                sampled = await client.call_tool(name="ask__sample", arguments={"prompt": "hi"})
                assert text_of(sampled) == "alice on hi" and answers.sampled == ["hi"]
                interviewed = await client.call_tool(name="ask__interview", arguments={"topic": "mcp"})
        assert text_of(interviewed) == "asked 'alice on a question about mcp', heard alice agrees"
        assert answers.sampled == ["hi", "a question about mcp"]
        assert answers.elicited == ["alice on a question about mcp"]
        declining = Answers("bob", decline=True)
        async with connect_http(url(port), handlers=declining) as client:
            with anyio.fail_after(LIMIT):
                declined = await client.call_tool(name="ask__interview", arguments={"topic": "x"})
        assert text_of(declined) == "asked 'bob on a question about x', heard <decline>"


async def test_the_rounds_on_the_wire(reaper: Any) -> None:
    """Round 1 asks for sampling (under the gateway's own key) with a sealed requestState;
    the retry with the answer gets the elicitation; the last retry the result. A stale
    state (an answered round) is refused with what to do."""
    both = {"sampling": {}, "elicitation": {}}
    async with gateway({"ask": ASKER}) as (_, port):
        with anyio.fail_after(LIMIT):
            _, first = await answer(port, call(1, "ask__interview", {"topic": "t"}, capabilities=both))
            result = first["result"]
            assert result["resultType"] == "input_required"
            assert list(result["inputRequests"]) == ["sampling-1"]
            assert result["inputRequests"]["sampling-1"]["method"] == "sampling/createMessage"
            sampled = {"sampling-1": {"role": "assistant", "content": {"type": "text", "text": "Q?"}, "model": "m"}}
            _, second = await answer(port, call(
                2, "ask__interview", {"topic": "t"}, capabilities=both,
                inputResponses=sampled, requestState=result["requestState"]))
            asked = second["result"]["inputRequests"]
            assert list(asked) == ["elicitation-2"] and asked["elicitation-2"]["params"]["message"] == "Q?"
            _, stale = await answer(port, call(
                3, "ask__interview", {"topic": "t"}, capabilities=both,
                inputResponses=sampled, requestState=result["requestState"]))
            assert stale["error"]["code"] == -32602
            assert "already answered" in stale["error"]["message"]
            elicited = {"elicitation-2": {"action": "accept", "content": {"answer": "A!"}}}
            _, done = await answer(port, call(
                4, "ask__interview", {"topic": "t"}, capabilities=both,
                inputResponses=elicited, requestState=second["result"]["requestState"]))
        assert done["result"]["content"][0]["text"] == "asked 'Q?', heard A!"


async def test_a_parked_call_expires_and_is_cancelled_on_its_server(reaper: Any) -> None:
    async with gateway({"ask": ASKER}, parking=ParkingLimits(ttl=0.5)) as (_, port):
        with anyio.fail_after(LIMIT):
            _, first = await answer(port, call(1, "ask__wait", {"label": "late"}, capabilities=SAMPLING))
            state = first["result"]["requestState"]
            while (seen := await stats(port))["cancelled"] == [] and seen["refused"] == []:
                await asyncio.sleep(0.1)
            assert seen == {"cancelled": ["late"], "refused": []}
            response = {"sampling-1": {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}}
            _, retry = await answer(port, call(
                2, "ask__wait", {"label": "late"}, capabilities=SAMPLING,
                inputResponses=response, requestState=state))
        assert retry["error"]["code"] == -32602
        message = retry["error"]["message"]
        assert "no longer waiting" in message and "expired after 0.5 s" in message
        assert "again without requestState and inputResponses" in message


async def test_another_principal_cannot_continue_a_parked_call(reaper: Any) -> None:
    response = {"sampling-1": {"role": "assistant", "content": {"type": "text", "text": "mine"}, "model": "m"}}
    async with gateway({"ask": ASKER}, auth=True) as (_, port):
        with anyio.fail_after(LIMIT):
            _, first = await answer(port, call(1, "ask__sample", {"prompt": "p"}, capabilities=SAMPLING), "alice-token")
            state = first["result"]["requestState"]
            _, stolen = await answer(port, call(
                2, "ask__sample", {"prompt": "p"}, capabilities=SAMPLING,
                inputResponses=response, requestState=state), "mallory-token")
            assert stolen["error"]["code"] == -32602
            # the owner's retry still continues it
            _, done = await answer(port, call(
                3, "ask__sample", {"prompt": "p"}, capabilities=SAMPLING,
                inputResponses=response, requestState=state), "alice-token")
        assert done["result"]["content"][0]["text"] == "mine"


async def test_parked_calls_are_capped_per_principal(reaper: Any) -> None:
    """Alice's calls to one server all wait at once (a request her server makes is shown to
    one of her calls); Bob's go to another server (with calls of two principals in flight,
    a server's request could be either's: the host would answer it)."""
    limits = ParkingLimits(ttl=30, per_principal=2, total=3)
    async with gateway({"ask": ASKER, "other": ASKER}, auth=True, parking=limits) as (_, port):
        with anyio.fail_after(LIMIT):
            for request_id in (1, 2):
                _, first = await answer(port, call(request_id, "ask__wait", {"label": f"a{request_id}"}, capabilities=SAMPLING), "alice-token")
                assert first["result"]["resultType"] == "input_required"
            _, third = await answer(port, call(3, "ask__wait", {"label": "a3"}, capabilities=SAMPLING), "alice-token")
            assert third["error"]["code"] == -32600 and "answer or abandon one first" in third["error"]["message"]
            _, bobs = await answer(port, call(4, "other__wait", {"label": "b1"}, capabilities=SAMPLING), "bob-token")
            assert bobs["result"]["resultType"] == "input_required"
            _, full = await answer(port, call(5, "other__wait", {"label": "c1"}, capabilities=SAMPLING), "carol-token")
            assert full["error"]["code"] == -32600 and "try again later" in full["error"]["message"]


async def test_many_clients_at_once_each_get_their_own_requests(reaper: Any) -> None:
    """Four clients, each with calls in flight at once: to the stateless-era server (its
    requests come back within the call, so each is the calling client's), and to a
    handshake-era server of its own (two rounds each)."""
    names = ["c0", "c1", "c2", "c3"]
    config: dict[str, Any] = {"modern": stdio(MODERN_SERVER, "--stdio")}
    config.update({f"ask{k}": ASKER for k in range(len(names))})
    async with gateway(config) as (_, port):

        async def client_run(k: int, name: str) -> tuple[Answers, list[str]]:
            answers = Answers(name)
            async with connect_http(url(port), handlers=answers) as client:
                calls = [client.call_tool(name="modern__sample", arguments={"prompt": f"{name}-{n}"}) for n in range(3)]
                calls.append(client.call_tool(name=f"ask{k}__interview", arguments={"topic": name}))
                results = await asyncio.gather(*calls)
            return answers, [text_of(result) for result in results]

        with anyio.fail_after(LIMIT * 2):
            outcomes = await asyncio.gather(*(client_run(k, name) for k, name in enumerate(names)))
    for name, (answers, texts) in zip(names, outcomes, strict=True):
        assert texts[:3] == [f"m says {name} on {name}-{n}" for n in range(3)]
        assert texts[3] == f"asked '{name} on a question about {name}', heard {name} agrees"
        assert sorted(answers.sampled) == sorted([f"{name}-{n}" for n in range(3)] + [f"a question about {name}"])


async def test_a_kind_the_client_did_not_declare_is_answered_by_the_hosts_hook(reaper: Any) -> None:
    async def host_sampling(server: str, params: Any, ctx: Any) -> dict[str, Any]:
        return {"role": "assistant", "content": {"type": "text", "text": f"host answers {server}"}, "model": "h"}

    async with gateway({"ask": ASKER}, sampling=host_sampling) as (_, port):
        async with connect_http(url(port), handlers=OnlyElicits()) as client:
            with anyio.fail_after(LIMIT):
                result = await client.call_tool(name="ask__interview", arguments={"topic": "t"})
        assert text_of(result) == "asked 'host answers ask', heard yes"


async def test_the_official_sdk_client_answers_the_gateways_input_requests(reaper: Any) -> None:
    """mcp 2.3.0's Client speaks 2026-07-28 and drives input_required rounds with its
    sampling and elicitation callbacks."""
    asked: list[str] = []

    async def sampling(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append("sampling")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="sdk Q"), model="m")

    async def elicitation(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(f"elicitation: {params.message}")
        return types.ElicitResult(action="accept", content={"answer": "sdk A"})

    async with gateway({"ask": ASKER}) as (_, port):
        with anyio.fail_after(LIMIT):
            async with Client(url(port), sampling_callback=sampling, elicitation_callback=elicitation) as client:
                result = await client.call_tool("ask__interview", {"topic": "t"})
    assert result.content[0].text == "asked 'sdk Q', heard sdk A"  # type: ignore[union-attr]
    assert asked == ["sampling", "elicitation: sdk Q"]


async def test_a_cancelled_round_cancels_the_call_on_its_server(reaper: Any) -> None:
    """The client gives up while its round waits for the call (a client that may be asked
    for input: the call runs parked): the call is cancelled on the owning server."""
    async with (
        gateway({"modern": stdio(MODERN_SERVER, "--stdio")}) as (_, port),
        connect_http(url(port), handlers=Answers("z")) as client,
    ):
        task = asyncio.ensure_future(client.call_tool(name="modern__slow", arguments={"label": "gone", "seconds": 30}))
        with anyio.fail_after(LIMIT):
            while True:
                seen = json.loads(text_of(await client.call_tool(name="modern__cancelled", arguments={})))
                if "gone" in seen["started"]:
                    break
                await asyncio.sleep(0.05)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, RpcError):
                await task
            while "gone" not in json.loads(text_of(await client.call_tool(name="modern__cancelled", arguments={})))["cancelled"]:
                await asyncio.sleep(0.05)


async def test_a_parked_call_carries_progress_and_errors_as_a_direct_one(reaper: Any) -> None:
    """A client that may be asked for input: its calls run parked, and still get their
    progress, the unknown-tool error and the invalid-arguments tool result."""
    async with (
        gateway({"ask": ASKER, "modern": stdio(MODERN_SERVER, "--stdio")}) as (_, port),
        connect_http(url(port), handlers=Answers("p")) as client,
    ):
        with anyio.fail_after(LIMIT):
            seen: list[float] = []
            client.session.progress_callbacks["t"] = lambda note: seen.append(note.progress)
            done = await client.call_tool(name="modern__progress", meta={"progressToken": "t"})
            assert text_of(done) == "progressed" and seen == [1, 2, 3]
            with pytest.raises(RpcError, match="no tool named 'nope'") as unknown:
                await client.call_tool(name="nope", arguments={})
            assert unknown.value.code == -32602
            invalid = await client.call_tool(name="ask__sample", arguments={"prompt": 3})
            assert invalid.is_error and "invalid arguments for tool 'ask__sample'" in text_of(invalid)


async def test_the_parked_call_runs_in_a_fresh_context() -> None:
    """Nothing of the request that starts a parked call (its stateless scope, any context
    variable of the transport or the application) is seen by the call's task."""
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("gateway_test_marker")
    marker.set("the request's")

    async def emit(method: str, params: Any) -> None:
        raise AssertionError("nothing is emitted")

    scope = RequestScope("tools/call", 1, {"protocolVersion": "2026-07-28", "clientCapabilities": SAMPLING}, emit)
    token = _scope.set(scope)
    seen: dict[str, Any] = {}

    async def start(forward: Any, progress: Any) -> str:
        seen.update((var.name, value) for var, value in contextvars.copy_context().items())
        return "done"

    lot = ParkingLot({})
    try:
        assert await asyncio.wait_for(lot.serve(None, None, start, None), 10) == "done"
    finally:
        _scope.reset(token)
    assert "gateway_test_marker" not in seen and "mcp_request_scope" not in seen
    assert lot.calls == {} and lot.counts == {}


@pytest.mark.parametrize("per_principal", [0, 1])
async def test_a_principal_gets_exactly_its_per_principal_parked_calls(per_principal: int) -> None:
    """The cap counts from nothing: a principal allowed one call gets its first one and not
    a second; allowed none, not even the first."""

    async def emit(method: str, params: Any) -> None:
        raise AssertionError("nothing is emitted")

    never = asyncio.Event()

    async def start(forward: Any, progress: Any) -> None:
        await never.wait()

    lot = ParkingLot({}, ParkingLimits(ttl=30, per_principal=per_principal, total=8))
    scope = RequestScope("tools/call", 1, {"protocolVersion": "2026-07-28"}, emit, principal="alice")
    parked = [lot._park(scope, start) for _ in range(per_principal)]
    try:
        with pytest.raises(RpcError, match="answer or abandon one first"):
            lot._park(scope, start)
    finally:
        for call_ in parked:
            call_.task.cancel()
        await asyncio.gather(*(call_.task for call_ in parked), return_exceptions=True)


async def test_an_invalid_answer_is_refused_and_the_call_still_waits(reaper: Any) -> None:
    async with gateway({"ask": ASKER}) as (_, port):
        with anyio.fail_after(LIMIT):
            _, first = await answer(port, call(1, "ask__sample", {"prompt": "p"}, capabilities=SAMPLING))
            state = first["result"]["requestState"]
            _, bad = await answer(port, call(
                2, "ask__sample", {"prompt": "p"}, capabilities=SAMPLING,
                inputResponses={"sampling-1": {"action": "accept"}}, requestState=state))  # a form's answer
            assert bad["error"]["code"] == -32602
            assert "is not a valid answer to sampling/createMessage" in bad["error"]["message"]
            good = {"sampling-1": {"role": "assistant", "content": {"type": "text", "text": "fine"}, "model": "m"}}
            _, done = await answer(port, call(
                3, "ask__sample", {"prompt": "p"}, capabilities=SAMPLING, inputResponses=good, requestState=state))
        assert done["result"]["content"][0]["text"] == "fine"


async def test_mcp_host_serve_over_stdio_forwards_to_a_modern_client(reaper: Any, tmp_path: Path) -> None:
    """``mcp-host serve --stdio`` (a process) with our 2026-07-28 client on its stdin/stdout."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"ask": ASKER}}))
    answers = Answers("stdio")
    command = [sys.executable, "-m", "typedmcp.host.cli", "serve", "--config", str(config), "--stdio"]
    async with connect_stdio(command, handlers=answers, cwd=str(REPO)) as client:
        assert client.session.era == "stateless"
        with anyio.fail_after(LIMIT):
            result = await client.call_tool(name="ask__interview", arguments={"topic": "pipes"})
    assert text_of(result) == "asked 'stdio on a question about pipes', heard stdio agrees"
    assert answers.elicited == ["stdio on a question about pipes"]


async def test_a_prompt_that_samples_reaches_a_modern_client(reaper: Any) -> None:
    """prompts/get is forwarded the same way (here to the stateless-era server, whose input
    request comes back within the host's call)."""
    answers = Answers("q")
    async with (
        gateway({"modern": stdio(MODERN_SERVER, "--stdio")}) as (_, port),
        connect_http(url(port), handlers=answers) as client,
    ):
        with anyio.fail_after(LIMIT):
            prompt = await client.get_prompt(name="modern__interview")
    assert prompt.messages[0].content.text == "Ask: m says q on one interview question"  # type: ignore[union-attr]
    assert answers.sampled == ["one interview question"]
