"""Hostile and careless clients of the stateless era (2026-07-28), issue 13.

* Cancellation has an owner: a ``notifications/cancelled`` POSTed over stateless HTTP reaches
  only the requests of the same authenticated principal (and none without auth, where a
  client cancels by closing its response stream); a cancelled request never becomes an HTTP
  500.
* ``requestState`` is bound to the request that got it (method, name, a digest of the
  arguments, the principal), expires ``state_ttl`` seconds after it was sealed, opens under
  every key of the ring (rotation) and, when the server asks for it, is single-use.
* A ``subscriptions/listen`` stream ends at once at the end of input (stdio), and a client
  that leaves mid-listen leaves no task behind.
* A client that stops reading cannot make the server buffer without bound (a listen
  coalesces changes; an SSE reply holds a bounded number of messages, then its handler waits).

Servers run under a real uvicorn on 127.0.0.1 (``ServerThread``) and are spoken to in raw
HTTP/1.1, or run as real stdio processes. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from typedmcp.auth.bearer import BearerAuth
from typedmcp.connecting import connect_memory, connect_stdio
from typedmcp.engine.jsonrpc import Engine
from typedmcp.protocol.meta import encode_header_value
from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import http_app
from typedmcp.stateless.router import build_router
from typedmcp.stateless.scope import input_key, single_use_state
from typedmcp.stateless.sealing import MemoryUsedStates, UsedStates
from mcp_generated import v2026_07_28
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers
from test_http_server import RawResponse, ServerThread, raw

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parent.parent
VERSION = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
ELICIT = {"elicitation": {}}
CONFIRMED = {"confirm": {"action": "accept", "content": {"ok": True}}}
PRM = {"resource": "http://127.0.0.1/mcp", "authorization_servers": ["https://auth.example.com"]}
Ctx = RequestContext[ClientPeer]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- the server under test --------------------------------------------------------------------


def tool(name: str, **properties: Any) -> models.Tool:
    schema = models.ToolInputSchema(type="object", properties={k: {"type": v} for k, v in properties.items()})
    return models.Tool(name=name, input_schema=schema)


CONFIRM_FORM = models.ElicitRequestFormParamsRequestedSchema.model_validate(
    {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
)


class Bank(ServerHandlers):
    """``hold`` waits until released (records who was cancelled); ``transfer`` (and
    ``pay``, the same under another name) asks for a confirmation, then moves ``amount``
    (records every transfer); ``self_cancel`` raises CancelledError without anyone
    cancelling it; the ``transfer`` and ``pay`` prompts ask too.

    The server runs in uvicorn's thread: the records are plain lists and thread-safe events.
    """

    def __init__(self, single_use: bool = False) -> None:
        self.release = threading.Event()
        self.started: list[tuple[str, Any]] = []
        self.cancelled: list[tuple[str, Any]] = []
        self.transfers: list[float] = []
        self.emitted = 0
        self.single_use = single_use

    async def list_tools(self, params: Any, ctx: Ctx) -> models.ListToolsResult:
        return models.ListToolsResult(
            tools=[tool("hold", who="string"), tool("transfer", amount="number"), tool("pay", amount="number"),
                   tool("self_cancel"),
                   tool("chatty", count="integer")]
        )

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        arguments = params.arguments or {}
        if params.name == "hold":
            who = str(arguments.get("who"))
            self.started.append((who, ctx.request_id))
            await ctx.report_progress(0.5, 1.0)  # sent only if asked for: starts an SSE reply
            try:
                while not self.release.is_set():
                    await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                self.cancelled.append((who, ctx.request_id))
                raise
            return models.CallToolResult(content=[models.TextContent(type="text", text=f"held {who}")])
        if params.name in ("transfer", "pay"):
            if self.single_use:
                single_use_state()
            await input_key("confirm", ctx.peer.elicit(
                models.ElicitRequestFormParams(message="Move the money?", requested_schema=CONFIRM_FORM)
            ))
            amount = float(arguments["amount"])
            self.transfers.append(amount)
            return models.CallToolResult(content=[models.TextContent(type="text", text=f"moved {amount:g}")])
        if params.name == "self_cancel":
            raise asyncio.CancelledError
        if params.name == "chatty":
            total = int(arguments.get("count", 5000))
            for step in range(total):
                await ctx.report_progress(step, total)
                self.emitted += 1
            return models.CallToolResult(content=[models.TextContent(type="text", text="said it all")])
        raise ValueError(params.name)

    async def list_prompts(self, params: Any, ctx: Ctx) -> models.ListPromptsResult:
        return models.ListPromptsResult(prompts=[models.Prompt(name="transfer"), models.Prompt(name="pay")])

    async def get_prompt(self, params: models.GetPromptRequestParams, ctx: Ctx) -> models.GetPromptResult:
        await input_key("confirm", ctx.peer.elicit(
            models.ElicitRequestFormParams(message="Write it?", requested_schema=CONFIRM_FORM)
        ))
        amount = (params.arguments or {}).get("amount")
        message = models.PromptMessage(role="user", content=models.TextContent(type="text", text=f"move {amount}"))
        return models.GetPromptResult(messages=[message])


def verify(token: str) -> str | None:
    """Bearer tokens ``<name>-token`` name the principal ``<name>``."""
    return token.removesuffix("-token") if token.endswith("-token") else None


def bank_app(bank: Bank, *, auth: bool = False, **options: Any) -> Any:
    if auth:
        options["auth"] = BearerAuth(verify, PRM)
    return http_app(bank, **options)


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    """Wait (polling: the server runs in another thread) until ``condition()`` holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.005)


# -- raw 2026-07-28 HTTP ---------------------------------------------------------------------


def request(request_id: Any, method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    body = dict(params or {})
    body["_meta"] = {PV: VERSION, CC: meta.pop("capabilities", {}), **meta}
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}


def call(request_id: Any, name: str, arguments: dict[str, Any], **options: Any) -> dict[str, Any]:
    extra = {k: options.pop(k) for k in ("inputResponses", "requestState") if k in options}
    return request(request_id, "tools/call", {"name": name, "arguments": arguments, **extra}, **options)


def cancelled(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


async def post(port: int, message: dict[str, Any], token: str | None = None) -> RawResponse:
    """POST one message as a 2026-07-28 client does (headers mirror the body)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": VERSION}
    if "method" in message and "id" in message:
        headers["Mcp-Method"] = message["method"]
        name = message["params"].get("name", message["params"].get("uri"))
        if message["method"] in ("tools/call", "prompts/get", "resources/read"):
            headers["Mcp-Name"] = encode_header_value(name)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return await raw_bounded(port, headers, json.dumps(message).encode())


async def raw_bounded(port: int, headers: dict[str, str], body: bytes) -> RawResponse:
    return await asyncio.wait_for(raw(port, "POST", headers, body), 10)


async def next_message(reply: RawResponse, timeout: float = 10) -> Any:
    """The next message of a 2026-07-28 SSE reply (its events carry no id), or None at its
    end; keep-alive comments are skipped."""

    async def read() -> Any:
        while True:
            while b"\n\n" not in reply.buffer:
                if reply.ended:
                    return None
                reply.buffer += await reply._chunk()
            block, _, reply.buffer = reply.buffer.partition(b"\n\n")
            data = [line[6:] for line in block.split(b"\n") if line.startswith(b"data: ")]
            if data:
                assert block.startswith(b"event: message\n"), block
                return json.loads(b"".join(data))

    return await asyncio.wait_for(read(), timeout)


async def all_messages(reply: RawResponse) -> list[Any]:
    found = []
    while (message := await next_message(reply)) is not None:
        found.append(message)
    return found


async def answer(port: int, message: dict[str, Any], token: str | None = None) -> tuple[int, Any]:
    """POST a request and read its whole reply: (status, the JSON-RPC response or None).
    An SSE reply is read to its end; its response is the message with the request's id."""
    reply = await post(port, message, token)
    try:
        if reply.headers.get("content-type") == "text/event-stream":
            responses = [m for m in await all_messages(reply) if m.get("id") == message["id"]]
            assert len(responses) <= 1, responses
            return reply.status, responses[0] if responses else None
        if reply.status == 204:
            assert "content-length" not in reply.headers and "transfer-encoding" not in reply.headers
            return 204, None
        body = await asyncio.wait_for(reply.body(), 10)
        return reply.status, json.loads(body) if body and reply.status != 500 else body or None
    finally:
        reply.close()


def text_of(response: dict[str, Any]) -> str:
    assert "result" in response, response
    content = response["result"].get("content") or response["result"].get("messages")[0]["content"]
    block = content[0] if isinstance(content, list) else content
    return str(block["text"])


# -- 1. a cancel reaches only its owner's requests (stateless HTTP) --------------------------


async def test_a_cancel_from_another_principal_leaves_the_request_alone() -> None:
    bank = Bank()
    with ServerThread(bank_app(bank, auth=True)) as server:
        alice = asyncio.ensure_future(answer(server.port, call(7, "hold", {"who": "alice"}), "alice-token"))
        bob = asyncio.ensure_future(answer(server.port, call(7, "hold", {"who": "bob"}), "bob-token"))
        await until(lambda: len(bank.started) == 2)
        notified = await post(server.port, cancelled(7), "bob-token")
        assert notified.status == 202
        notified.close()
        await until(lambda: bank.cancelled != [])
        bank.release.set()
        status, response = await asyncio.wait_for(alice, 10)
        assert (status, text_of(response)) == (200, "held alice")
        assert await asyncio.wait_for(bob, 10) == (204, None)  # cancelled: nothing more is sent
    assert bank.cancelled == [("bob", 7)]


async def test_without_auth_a_posted_cancel_reaches_no_request() -> None:
    """Without a principal nothing says who sent a POST: a client cancels by closing its
    response stream, and a stray notifications/cancelled cancels nothing."""
    bank = Bank()
    with ServerThread(bank_app(bank)) as server:
        first = asyncio.ensure_future(answer(server.port, call(7, "hold", {"who": "a"})))
        second = asyncio.ensure_future(answer(server.port, call(7, "hold", {"who": "b"})))
        await until(lambda: len(bank.started) == 2)
        for _ in range(3):
            notified = await post(server.port, cancelled(7))
            assert notified.status == 202
            notified.close()
        await asyncio.sleep(0.1)
        assert bank.cancelled == []
        bank.release.set()
        results = await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert [(status, text_of(response)) for status, response in results] == [(200, "held a"), (200, "held b")]


async def test_a_request_its_owner_cancels_ends_without_a_reply_never_a_500() -> None:
    bank = Bank()
    with ServerThread(bank_app(bank, auth=True)) as server:
        json_reply = asyncio.ensure_future(answer(server.port, call(1, "hold", {"who": "json"}), "alice-token"))
        sse = await post(server.port, call(2, "hold", {"who": "sse"}, progressToken="p"), "alice-token")
        assert (await next_message(sse))["method"] == "notifications/progress"
        await until(lambda: len(bank.started) == 2)
        for request_id in (1, 2):
            (await post(server.port, cancelled(request_id), "alice-token")).close()
        assert await asyncio.wait_for(json_reply, 10) == (204, None)
        assert sse.status == 200 and sse.headers["content-type"] == "text/event-stream"
        assert await all_messages(sse) == []  # ended cleanly, with nothing for id 2
        sse.close()
    assert sorted(bank.cancelled) == [("json", 1), ("sse", 2)]


async def test_a_handler_that_raises_cancelled_error_itself_is_an_internal_error() -> None:
    """Nobody cancelled it: the client still waits for an answer, and gets -32603."""
    bank = Bank()
    with ServerThread(bank_app(bank)) as server:
        for message in (call(1, "self_cancel", {}), call(2, "self_cancel", {}, progressToken="p")):
            status, response = await answer(server.port, message)
            assert status == 200
            assert response == {"jsonrpc": "2.0", "id": message["id"],
                                "error": {"code": -32603, "message": "Internal error"}}


async def test_a_json_reply_that_is_itself_cancelled_cancels_its_handler() -> None:
    """The server cancels the ASGI call (shutting down, say): the handler does not run on
    detached from any reply."""
    bank = Bank()
    app = bank_app(bank)
    scope, body = asgi_post(call(1, "hold", {"who": "orphan"}))
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if body:
            return body.pop()
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        raise AssertionError(f"nothing is sent: {event}")

    serving = asyncio.ensure_future(app(scope, receive, send))
    await until(lambda: bank.started != [])
    serving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(serving, 5)
    await until(lambda: bank.cancelled != [])
    assert bank.cancelled == [("orphan", 1)]


def asgi_post(message: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ASGI scope and receive messages of a 2026-07-28 POST of ``message``."""
    headers = {"host": "127.0.0.1", "content-type": "application/json",
               "accept": "application/json, text/event-stream", "mcp-protocol-version": VERSION,
               "mcp-method": message["method"]}
    if message["method"] == "tools/call":
        headers["mcp-name"] = message["params"]["name"]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
             "headers": [(k.encode(), v.encode()) for k, v in headers.items()]}
    return scope, [{"type": "http.request", "body": json.dumps(message).encode(), "more_body": False}]


async def test_an_sse_reply_the_client_does_not_read_holds_the_handler_back() -> None:
    """A client that stops reading (the server's writes block) cannot make the server
    buffer a chatty handler's notifications without bound: the handler waits instead."""
    bank = Bank()
    app = bank_app(bank)
    scope, body = asgi_post(call(1, "chatty", {"count": 5000}, progressToken="p"))
    chunks: list[bytes] = []
    blocked = asyncio.Event()
    never = asyncio.Event()

    async def receive() -> dict[str, Any]:
        if body:
            return body.pop()
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.body":
            chunks.append(event["body"])
            if len(chunks) == 3:  # the client stops reading here
                blocked.set()
                await never.wait()

    serving = asyncio.ensure_future(app(scope, receive, send))
    try:
        await asyncio.wait_for(blocked.wait(), 5)
        for _ in range(20):
            await asyncio.sleep(0.01)
        assert bank.emitted < 1000, bank.emitted
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving


async def test_scenario_many_principals_cancel_each_others_ids() -> None:
    """Six principals each run requests 1, 2 and 3 at once (JSON and SSE replies); each
    cancels one of its own ids, and an anonymous client posts cancels for all three. Exactly
    the six owned cancels land; the twelve other requests complete; nothing is a 500."""
    bank = Bank()
    names = [f"p{k}" for k in range(6)]
    with ServerThread(bank_app(bank, auth=True)) as server:
        calls = {
            (name, request_id): asyncio.ensure_future(answer(
                server.port,
                call(request_id, "hold", {"who": name}, **({"progressToken": "t"} if request_id == 2 else {})),
                f"{name}-token",
            ))
            for name in names
            for request_id in (1, 2, 3)
        }
        await until(lambda: len(bank.started) == len(calls), 15)
        chosen = {name: k % 3 + 1 for k, name in enumerate(names)}
        posts = [post(server.port, cancelled(request_id), f"{name}-token") for name, request_id in chosen.items()]
        anonymous_server = ServerThread(bank_app(bank))
        with anonymous_server:  # the same handlers behind an endpoint without auth
            posts += [post(anonymous_server.port, cancelled(i)) for i in (1, 2, 3)]
            for notified in await asyncio.wait_for(asyncio.gather(*posts), 10):
                assert notified.status == 202
                notified.close()
        await until(lambda: len(bank.cancelled) >= len(chosen))
        await asyncio.sleep(0.1)  # room for a stray cancel to land
        bank.release.set()
        outcomes = dict(zip(calls, await asyncio.wait_for(asyncio.gather(*calls.values()), 20), strict=True))
    assert sorted(bank.cancelled) == sorted(chosen.items())
    for (name, request_id), (status, response) in outcomes.items():
        if chosen[name] == request_id:
            assert (status, response) == ((200 if request_id == 2 else 204), None), (name, request_id)
        else:
            assert (status, text_of(response)) == (200, f"held {name}"), (name, request_id)


# -- 2. requestState: bound to its request, single-use on demand ---------------------------


async def first_round(port: int, message: dict[str, Any], token: str | None = None) -> str:
    status, response = await answer(port, message, token)
    assert status == 200 and response["result"]["resultType"] == "input_required", response
    return str(response["result"]["requestState"])


def transfer(request_id: int, amount: float, state: str | None = None) -> dict[str, Any]:
    extra: dict[str, Any] = {} if state is None else {"requestState": state, "inputResponses": CONFIRMED}
    return call(request_id, "transfer", {"amount": amount}, capabilities=ELICIT, **extra)


ANOTHER_REQUEST = {
    "code": -32602,
    "message": "Invalid params: requestState belongs to another request; "
    "retry without requestState and inputResponses",
}
ALREADY_USED = {
    "code": -32602,
    "message": "Invalid params: requestState was already used; "
    "retry the request without requestState and inputResponses",
}


async def test_a_request_state_replayed_with_other_arguments_is_rejected() -> None:
    bank = Bank()
    with ServerThread(bank_app(bank)) as server:
        state = await first_round(server.port, transfer(1, 1))
        status, response = await answer(server.port, transfer(2, 1000000, state))
        assert (status, response["error"]) == (200, ANOTHER_REQUEST)
        assert bank.transfers == []
        status, response = await answer(server.port, transfer(3, 1, state))
        assert text_of(response) == "moved 1"
    assert bank.transfers == [1]


async def test_a_prompt_state_is_bound_to_the_prompt_arguments() -> None:
    bank = Bank()
    with ServerThread(bank_app(bank)) as server:
        def get(request_id: int, amount: str, **extra: Any) -> dict[str, Any]:
            params = {"name": "transfer", "arguments": {"amount": amount}, **extra}
            return request(request_id, "prompts/get", params, capabilities=ELICIT)

        state = await first_round(server.port, get(1, "1"))
        _, response = await answer(server.port, get(2, "1000000", requestState=state, inputResponses=CONFIRMED))
        assert response["error"] == ANOTHER_REQUEST
        _, response = await answer(server.port, get(3, "1", requestState=state, inputResponses=CONFIRMED))
        assert text_of(response) == "move 1"


async def test_a_request_state_replayed_to_another_tool_or_prompt_is_rejected() -> None:
    """A state is bound to the tool's (or prompt's) name: the same arguments sent to
    ``pay`` with the state ``transfer`` got are refused, and nothing moves; the state
    still completes the request it belongs to."""
    bank = Bank()
    with ServerThread(bank_app(bank)) as server:
        state = await first_round(server.port, transfer(1, 1))
        replayed = call(2, "pay", {"amount": 1}, capabilities=ELICIT, requestState=state,
                        inputResponses=CONFIRMED)
        status, response = await answer(server.port, replayed)
        assert (status, response.get("error")) == (200, ANOTHER_REQUEST), response
        assert bank.transfers == []
        assert text_of((await answer(server.port, transfer(3, 1, state)))[1]) == "moved 1"

        def get(request_id: int, name: str, **extra: Any) -> dict[str, Any]:
            params = {"name": name, "arguments": {"amount": "1"}, **extra}
            return request(request_id, "prompts/get", params, capabilities=ELICIT)

        state = await first_round(server.port, get(4, "transfer"))
        _, response = await answer(server.port, get(5, "pay", requestState=state, inputResponses=CONFIRMED))
        assert response.get("error") == ANOTHER_REQUEST, response
        _, response = await answer(server.port, get(6, "transfer", requestState=state, inputResponses=CONFIRMED))
        assert text_of(response) == "move 1"
    assert bank.transfers == [1]


EXPIRED = {
    "code": -32602,
    "message": "Invalid params: requestState has expired; "
    "retry the request without requestState and inputResponses",
}
INTEGRITY = {
    "code": -32602,
    "message": "Invalid params: requestState failed its integrity check; "
    "retry the request without requestState and inputResponses",
}


class Clock:
    """Stands for the ``time`` module in ``sealing``: its ``time()`` is what the test says."""

    def __init__(self) -> None:
        self.now = time.time()

    def time(self) -> float:
        return self.now


async def test_a_request_state_expires_after_state_ttl(monkeypatch: pytest.MonkeyPatch) -> None:
    """``state_ttl=60``: a retry 59 s after the first round (by the sealer's clock) goes
    through; one 61 s after is refused as expired, and nothing moves."""
    from typedmcp.stateless import sealing

    clock = Clock()
    monkeypatch.setattr(sealing, "time", clock)
    bank = Bank()
    with ServerThread(bank_app(bank, state_ttl=60)) as server:
        state = await first_round(server.port, transfer(1, 1))
        clock.now += 59
        assert text_of((await answer(server.port, transfer(2, 1, state)))[1]) == "moved 1"
        clock.now += 2
        status, response = await answer(server.port, transfer(3, 1, state))
        assert (status, response.get("error")) == (200, EXPIRED), response
        fresh = await first_round(server.port, transfer(4, 2))  # a new first round: a new lifetime
        assert text_of((await answer(server.port, transfer(5, 2, fresh)))[1]) == "moved 2"
    assert bank.transfers == [1, 2]


async def test_a_state_sealed_before_a_key_rotation_opens_on_one_worker() -> None:
    """One worker, its key ring in memory (``state_keys``, changed in place as a rotation
    does): a state sealed with the old key still completes its request after a new key is
    put in front, states are sealed with the new key from then on, and once the old key is
    retired its states fail the integrity check while the new ones still open."""
    from typedmcp.stateless.sealing import StateSealer

    ring = [b"old-key"]
    bank = Bank()
    with ServerThread(bank_app(bank, state_keys=ring)) as server:
        old_state = await first_round(server.port, transfer(1, 1))
        ring.insert(0, b"new-key")
        new_state = await first_round(server.port, transfer(2, 2))
        assert StateSealer(keys=[b"new-key"]).open(new_state)["m"] == "tools/call"
        assert text_of((await answer(server.port, transfer(3, 1, old_state)))[1]) == "moved 1"
        ring.pop()  # the old key retires
        status, response = await answer(server.port, transfer(4, 1, old_state))
        assert (status, response.get("error")) == (200, INTEGRITY), response
        assert text_of((await answer(server.port, transfer(5, 2, new_state)))[1]) == "moved 2"
    assert bank.transfers == [1, 2]


async def test_argument_order_and_spacing_do_not_matter_to_the_binding() -> None:
    bank = Bank()
    with ServerThread(bank_app(bank)) as server:
        message = call(1, "transfer", {"amount": 5, "memo": "rent"}, capabilities=ELICIT)
        state = await first_round(server.port, message)
        retry = call(2, "transfer", {"memo": "rent", "amount": 5}, capabilities=ELICIT,
                     requestState=state, inputResponses=CONFIRMED)
        _, response = await answer(server.port, retry)
        assert text_of(response) == "moved 5"


async def test_a_single_use_state_is_accepted_once() -> None:
    bank = Bank()
    with ServerThread(bank_app(bank, single_use_state=True)) as server:
        state = await first_round(server.port, transfer(1, 1))
        _, response = await answer(server.port, transfer(2, 1, state))
        assert text_of(response) == "moved 1"
        status, response = await answer(server.port, transfer(3, 1, state))
        assert (status, response["error"]) == (200, ALREADY_USED)
        # a fresh flow works
        state = await first_round(server.port, transfer(4, 2))
        _, response = await answer(server.port, transfer(5, 2, state))
        assert text_of(response) == "moved 2"
    assert bank.transfers == [1, 2]


async def test_a_handler_can_make_its_own_state_single_use() -> None:
    """``single_use_state()`` in the handler: that request's states are single-use, other
    requests' are not (the server option is off)."""
    bank = Bank(single_use=True)
    with ServerThread(bank_app(bank)) as server:
        state = await first_round(server.port, transfer(1, 1))
        assert text_of((await answer(server.port, transfer(2, 1, state)))[1]) == "moved 1"
        assert (await answer(server.port, transfer(3, 1, state)))[1]["error"] == ALREADY_USED
    assert bank.transfers == [1]


async def test_scenario_concurrent_replays_of_one_state_land_once() -> None:
    """Twenty clients replay one single-use state at once, half of them with altered
    arguments: one transfer happens, every other replay is rejected."""
    bank = Bank()
    with ServerThread(bank_app(bank, single_use_state=True)) as server:
        state = await first_round(server.port, transfer(1, 1))
        replies = await asyncio.wait_for(asyncio.gather(*(
            answer(server.port, transfer(10 + k, 1 if k % 2 else 1000000, state)) for k in range(20)
        )), 20)
    outcomes = [response.get("error", "ok") for _, response in replies]
    assert outcomes.count("ok") == 1
    assert outcomes.count(ANOTHER_REQUEST) == 10 and outcomes.count(ALREADY_USED) == 9
    assert bank.transfers == [1]


async def test_a_state_is_bound_to_its_principal_too() -> None:
    bank = Bank()
    with ServerThread(bank_app(bank, auth=True)) as server:
        state = await first_round(server.port, transfer(1, 1), "alice-token")
        _, response = await answer(server.port, transfer(2, 1, state), "mallory-token")
        assert response["error"] == ANOTHER_REQUEST
    assert bank.transfers == []


async def test_the_memory_store_is_bounded_in_size_and_time() -> None:
    now = [1000.0]
    store = MemoryUsedStates(max_entries=3, clock=lambda: now[0])
    assert isinstance(store, UsedStates)
    assert [await store.claim(k, 1010.0) for k in "abc"] == [True, True, True]
    assert await store.claim("a", 1010.0) is False  # used
    assert await store.claim("d", 1010.0) is False  # full: refused, never forgotten early
    assert len(store) == 3
    now[0] = 1011.0  # every entry expired: the states themselves are refused by now
    assert await store.claim("d", 1020.0) is True
    assert len(store) == 1


async def test_a_used_state_stays_used_until_the_instant_it_expires() -> None:
    """A state whose expiry is now still opens (it expires once the time is past), so its
    record must still refuse a replay at that very instant."""
    now = [1000.0]
    store = MemoryUsedStates(clock=lambda: now[0])
    assert await store.claim("a", 1010.0) is True
    now[0] = 1010.0
    assert await store.claim("a", 1010.0) is False


async def test_expired_records_go_whatever_order_they_were_claimed_in() -> None:
    """The soonest-expiring record goes first, even when a later-expiring one was claimed
    after it: a full store makes room as soon as any record has expired."""
    now = [0.0]
    store = MemoryUsedStates(max_entries=2, clock=lambda: now[0])
    assert await store.claim("b", 200.0) is True
    assert await store.claim("a", 10.0) is True
    now[0] = 100.0
    assert await store.claim("c", 300.0) is True
    assert len(store) == 2


async def test_a_full_memory_store_warns_once_until_it_has_room_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One warning when a full store starts refusing, not one per refused claim; after it
    has accepted a claim again, the next time it fills it warns again."""
    now = [0.0]
    store = MemoryUsedStates(max_entries=1, clock=lambda: now[0])
    warned = lambda: [r for r in caplog.records if "refusing new ones" in r.getMessage()]  # noqa: E731
    with caplog.at_level("WARNING", logger="typedmcp"):
        assert await store.claim("a", 10.0) is True
        assert not warned()
        assert await store.claim("b", 10.0) is False
        assert await store.claim("c", 10.0) is False
        assert len(warned()) == 1
        now[0] = 11.0
        assert await store.claim("d", 20.0) is True
        assert await store.claim("e", 20.0) is False
        assert len(warned()) == 2


async def test_a_shared_store_can_replace_the_memory_one() -> None:
    class Recording:
        def __init__(self) -> None:
            self.claims: list[tuple[str, float]] = []

        async def claim(self, state_id: str, expires_at: float) -> bool:
            self.claims.append((state_id, expires_at))
            return len(self.claims) == 1

    store = Recording()
    bank = Bank()
    with ServerThread(bank_app(bank, single_use_state=True, used_states=store)) as server:
        state = await first_round(server.port, transfer(1, 1))
        assert text_of((await answer(server.port, transfer(2, 1, state)))[1]) == "moved 1"
        assert (await answer(server.port, transfer(3, 1, state)))[1]["error"] == ALREADY_USED
    assert len(store.claims) == 2 and store.claims[0] == store.claims[1]
    assert store.claims[0][1] > time.time()


# -- 9. end of input with listens open -------------------------------------------------------


class Closed:
    """A transport whose input holds some lines, then ends; records what is sent."""

    def __init__(self, *lines: dict[str, Any]) -> None:
        self.lines = [json.dumps(line).encode() for line in lines]
        self.sent: list[Any] = []
        self.eof = asyncio.Event()

    async def receive(self) -> bytes | None:
        if self.lines:
            return self.lines.pop(0)
        await self.eof.wait()
        return None

    async def send(self, data: bytes) -> None:
        self.sent.append(json.loads(data))


def listen(request_id: Any) -> dict[str, Any]:
    return request(request_id, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})


async def test_listen_streams_end_at_once_at_the_end_of_input() -> None:
    """The end-of-input grace is for handlers that finish: listen streams end at once with
    their final result (a long grace makes a regression hang, not pass)."""
    transport = Closed(listen(1), listen("two"))
    router = build_router(Bank(), list_changed=["tools"])
    engine = Engine(transport, router, eof_grace=30)
    router.attach(engine)
    running = asyncio.ensure_future(engine.run())
    await until(lambda: len(transport.sent) == 2)  # both acknowledged
    transport.eof.set()
    try:
        await asyncio.wait_for(asyncio.shield(running), 5)
    finally:
        running.cancel()
        router.close()
    finals = {m["id"]: m for m in transport.sent if "id" in m}
    assert set(finals) == {1, "two"}
    assert finals[1]["result"]["_meta"][SUBSCRIPTION] == 1


async def test_a_stdio_server_with_listens_open_exits_promptly_at_eof() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "examples" / "conformance_server.py"), "--stdio",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=str(REPO),
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        for request_id in (1, 2, 3):
            process.stdin.write(json.dumps(listen(request_id)).encode() + b"\n")
        await process.stdin.drain()
        for _ in range(3):  # the acknowledgements
            line = await asyncio.wait_for(process.stdout.readline(), 10)
            assert json.loads(line)["method"] == "notifications/subscriptions/acknowledged"
        process.stdin.close()
        started = time.monotonic()
        rest = await asyncio.wait_for(process.stdout.read(), 10)
        await asyncio.wait_for(process.wait(), 10)
        elapsed = time.monotonic() - started
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    finals = [json.loads(line) for line in rest.splitlines()]
    assert sorted(m["id"] for m in finals) == [1, 2, 3]  # each stream ended with its result
    assert process.returncode == 0
    assert elapsed < 5  # generous; the grace (1 s) no longer applies to listen streams


class Slow(Closed):
    """A transport whose writes wait for ``flowing`` once the first message is out."""

    def __init__(self, *lines: dict[str, Any]) -> None:
        super().__init__(*lines)
        self.flowing = asyncio.Event()

    async def send(self, data: bytes) -> None:
        if self.sent:
            await self.flowing.wait()
        await super().send(data)


async def test_a_listen_whose_client_does_not_read_holds_one_change_per_kind() -> None:
    """A client that stops reading cannot make a listen stream buffer changes without bound:
    a change already waiting is not queued again (list_changed and resources/updated say
    only that something changed)."""
    transport = Slow(listen(1))
    bank = Bank()
    router = build_router(bank, list_changed=["tools"])
    engine = Engine(transport, router, eof_grace=5)
    router.attach(engine)
    running = asyncio.ensure_future(engine.run())
    try:
        await until(lambda: len(transport.sent) == 1)  # acknowledged
        assert router.modern is not None
        for _ in range(1000):
            router.modern.changes.tools_changed()
        await asyncio.sleep(0.05)
        assert sum(queue.qsize() for queue in router.modern._listens) <= 1
        transport.flowing.set()
        await until(lambda: len(transport.sent) >= 2)
        await asyncio.sleep(0.05)
        changes = [m for m in transport.sent if m.get("method") == "notifications/tools/list_changed"]
        assert 1 <= len(changes) <= 2
        transport.eof.set()
        await asyncio.wait_for(asyncio.shield(running), 5)
    finally:
        running.cancel()
        router.close()


# -- 10. a client that leaves mid-listen leaves nothing behind ------------------------------


def leftovers() -> list[str]:
    """Tasks of the running loop that wait on a queue or an event (a listen's helpers)."""
    return [repr(t) for t in asyncio.all_tasks() if not t.done() and ("Queue.get" in repr(t) or "Event.wait" in repr(t))]


async def test_scenario_http_clients_leave_mid_listen() -> None:
    """Ten listen streams; the clients drop their connections without cancelling. Each
    stream stops listening, and no task of the server's stays behind."""
    bank = Bank()
    app = bank_app(bank, list_changed=["tools"])
    assert app.modern is not None
    feed = app.modern.server.changes
    with ServerThread(app) as server:
        streams = [await post(server.port, listen(k)) for k in range(10)]
        for stream in streams:
            acknowledged = await next_message(stream)
            assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert len(feed._listeners) == 10
        for stream in streams:
            stream.close()
        await until(lambda: not feed._listeners)

        async def left() -> list[str]:
            await asyncio.sleep(0.05)
            return leftovers()

        assert await server.call(left()) == []


async def test_a_memory_client_that_leaves_mid_listen_leaves_no_task() -> None:
    bank = Bank()
    async with connect_memory(bank, protocol=v2026_07_28, server_options={"list_changed": ["tools"]}) as client:
        listening = client.session.listen(tools_list_changed=True)
        await asyncio.wait_for(listening.__aenter__(), 5)
        # the client leaves without closing the listen block
    await asyncio.sleep(0.05)
    assert leftovers() == []
    with contextlib.suppress(Exception):
        await listening.__aexit__(None, None, None)


# -- the same class elsewhere (other files; see ALLOWED_ASYNCIO_LEAKS in conftest.py) --------


async def test_a_client_cancelled_while_negotiating_leaves_no_task_behind() -> None:
    """``connect`` (client.py) cancelled before the server answered: its ``opening`` task
    must not end later with an exception nobody retrieves (allow-listed until fixed)."""

    async def go() -> None:
        silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # never answers
        async with connect_stdio(silent):
            raise AssertionError("a silent server cannot be connected to")

    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(go(), 0.5)
    await asyncio.sleep(0.05)
