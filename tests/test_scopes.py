"""Scopes per tool, resource and prompt (issue 20, requirement 2): ``scopes=`` and ``allow=``
on the typed API and ``access_policy`` on low-level handlers; over HTTP with ``auth`` a
call without a required scope is ``403`` with the ``insufficient_scope`` challenge before
any handler runs (both eras, JSON and would-be SSE replies, batches, HTTP+SSE), a refusing
predicate is ``403`` without it, and lists show a caller only what its token may use.

The raw tests drive the ASGI app in process (:func:`exchange`) to see the exact status and
headers; the client tests run it under uvicorn."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from scoped_app import READ, TOKENS, WRITE, LowLevel, bearer_auth, build_app, principal

import mcp_generated.v2025_11_25
from typedmcp import http_app
from typedmcp.app import DeclarationError, McpApp
from typedmcp.connecting import connect_memory
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.access import AccessPolicy, Refusal, Requirement, granted_scopes, requires
from typedmcp.protocol.meta import CLIENT_CAPABILITIES_KEY, PROTOCOL_VERSION_KEY
from typedmcp.protocol.origin import serving_origin
from typedmcp.stateless.sealing import principal_tag

pytestmark = pytest.mark.anyio

HOST = "127.0.0.1:8000"
METADATA_URL = f"http://{HOST}/.well-known/oauth-protected-resource/mcp"
MODERN = "2026-07-28"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- driving the ASGI app in process ----------------------------------------------------------


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


async def exchange(app: Any, message: Any, headers: dict[str, str], path: str = "/mcp") -> Reply:
    """POST ``message`` to ``app`` and collect the whole response."""
    body = json.dumps(message).encode()
    sent = False
    started: dict[str, Any] = {}
    chunks: list[bytes] = []
    complete = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await complete.wait()  # the client stays until the response is complete
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            started.update(event)
        else:
            chunks.append(event.get("body", b""))
            if not event.get("more_body", False):
                complete.set()

    all_headers = {"host": HOST, "content-type": "application/json",
                   "accept": "application/json, text/event-stream", **headers}
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in all_headers.items()],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
    }
    await app(scope, receive, send)
    response_headers = {k.decode().lower(): v.decode() for k, v in started["headers"]}
    return Reply(started["status"], response_headers, b"".join(chunks))


def rpc(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


class Handshake:
    """A 2025-11-25 session of ``token`` on ``app`` (initialized)."""

    def __init__(self, app: Any, token: str, version: str = "2025-11-25") -> None:
        self.app, self.token, self.version = app, token, version
        self.session_id = ""

    async def open(self) -> Handshake:
        params = {"protocolVersion": self.version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        reply = await exchange(self.app, rpc(0, "initialize", params), self.auth)
        assert reply.status == 200, reply.body
        self.session_id = reply.headers["mcp-session-id"]
        notified = await self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert notified.status == 202
        return self

    @property
    def auth(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.token}"}

    async def post(self, message: Any, token: str | None = None) -> Reply:
        headers = {"authorization": f"Bearer {token or self.token}", "mcp-session-id": self.session_id,
                   "mcp-protocol-version": self.version}
        return await exchange(self.app, message, headers)

    async def request(self, method: str, params: dict[str, Any] | None = None, token: str | None = None) -> Reply:
        return await self.post(rpc(7, method, params), token)


async def stateless(app: Any, token: str, method: str, params: dict[str, Any], **meta: Any) -> Reply:
    """One 2026-07-28 request, its headers mirroring the body."""
    params = {**params, "_meta": {PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: {}, **meta}}
    headers = {"authorization": f"Bearer {token}", "mcp-protocol-version": MODERN, "mcp-method": method}
    name = params.get("name", params.get("uri"))
    if method in ("tools/call", "prompts/get", "resources/read"):
        headers["mcp-name"] = str(name)
    return await exchange(app, rpc(7, method, params), headers)


def challenge(*scopes: str) -> str:
    return f'Bearer error="insufficient_scope", scope="{" ".join(scopes)}", resource_metadata="{METADATA_URL}"'


def served(app: McpApp, **options: Any) -> Any:
    return http_app(app, auth=bearer_auth(), **options)


def assert_forbidden(reply: Reply, *scopes: str, request_id: Any = 7) -> dict[str, Any]:
    """A 403 with the step-up challenge naming ``scopes`` (none: a predicate's refusal,
    which has no challenge); returns the JSON-RPC error."""
    assert reply.status == 403, (reply.status, reply.body)
    assert reply.headers["content-type"] == "application/json"
    if scopes:
        assert reply.headers["www-authenticate"] == challenge(*scopes)
    else:
        assert "www-authenticate" not in reply.headers
    message = reply.json()
    assert message["id"] == request_id
    error: dict[str, Any] = message["error"]
    return error


def tool_text(reply: Reply) -> str:
    assert reply.status == 200, reply.body
    if reply.headers["content-type"] == "text/event-stream":
        data = [line[6:] for line in reply.body.decode().splitlines() if line.startswith("data: ") and len(line) > 6]
        result = json.loads(data[-1])["result"]
    else:
        result = reply.json()["result"]
    text: str = result["content"][0]["text"]
    return text


# -- the policy itself --------------------------------------------------------------------------


def test_a_requirement_names_what_is_missing_and_the_predicate_refuses_on_its_own() -> None:
    requirement = requires(READ, WRITE)
    assert requirement.missing(TOKENS["reader"]) == {WRITE}
    assert requirement.allows(TOKENS["writer"])
    guarded = requires(allow=lambda who: who.subject == "root")
    assert guarded.allows(TOKENS["admin"]) and not guarded.allows(TOKENS["reader"])


def test_a_raising_predicate_refuses(caplog: pytest.LogCaptureFixture) -> None:
    def broken(who: Any) -> bool:
        raise KeyError("roles")

    assert not requires(allow=broken).allows(TOKENS["reader"])
    assert "the allow= predicate raised" in caplog.text


def test_scopes_come_from_a_principal_an_object_a_mapping_or_a_string() -> None:
    class Custom:
        scopes = "a b"

    assert granted_scopes(TOKENS["writer"]) == {READ, WRITE}
    assert granted_scopes(Custom()) == {"a", "b"}
    assert granted_scopes({"scopes": ["x"]}) == {"x"}
    assert granted_scopes("alice") == frozenset()  # a principal that says nothing of scopes


def test_templates_guard_every_uri_they_match_and_exact_uris_come_first() -> None:
    policy = AccessPolicy(resources={"notes://{note_id}": requires(READ), "notes://index": requires(WRITE)})
    assert policy.resource_requirement("notes://3") == ("notes://{note_id}", requires(READ))
    assert policy.resource_requirement("notes://index") == ("notes://index", requires(WRITE))
    assert policy.resource_requirement("notes://a/b") is None  # a variable matches no "/"
    assert policy.resource_requirement("other://3") is None


def test_without_a_principal_nothing_is_refused_or_hidden() -> None:
    policy = AccessPolicy(tools={"add": requires(WRITE)})
    assert policy.refusal("tools/call", {"name": "add"}, None) is None
    listed = {"tools": [{"name": "add"}]}
    assert policy.visible("tools/list", listed, None) is listed


def test_a_list_item_without_a_name_is_left_in_the_list() -> None:
    policy = AccessPolicy(tools={"add": requires(WRITE)})
    nameless = {"title": "no name: nothing can guard it"}
    listed = {"tools": [nameless, {"name": "add"}, {"name": 7}]}
    assert policy.visible("tools/list", listed, TOKENS["reader"]) == {"tools": [nameless, {"name": 7}]}


def test_a_batch_is_refused_for_its_first_forbidden_request_never_a_notification() -> None:
    from typedmcp.transports.access_gate import first_refusal

    policy = AccessPolicy(tools={"add": requires(WRITE)})
    call = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add"}}
    found = first_refusal(policy, [call, {**call, "id": 2}], TOKENS["reader"])
    assert found is not None and found[0] == 2  # the notification (no id) is not answered
    assert first_refusal(policy, call, TOKENS["reader"]) is None


def test_a_post_naming_a_session_held_by_another_worker_takes_a_local_sessions_policy() -> None:
    from types import SimpleNamespace

    from typedmcp.transports.access_gate import policy_of_request

    policy = AccessPolicy(tools={"add": requires(WRITE)})
    local = SimpleNamespace(server=SimpleNamespace(access_policy=policy))
    app = SimpleNamespace(modern=None, sessions={"held-here": local})
    assert policy_of_request(app, {"mcp-session-id": "held-elsewhere"}) is policy
    assert policy_of_request(app, {"mcp-session-id": "held-here"}) is policy
    assert policy_of_request(SimpleNamespace(modern=None, sessions={}), {"mcp-session-id": "x"}) is None


def test_the_refusal_explains_itself() -> None:
    refusal = Refusal("tool 'add'", frozenset({WRITE}), frozenset({WRITE}))
    assert refusal.message == (
        "Forbidden: tool 'add' needs scope notes:write, which this access token does not grant; "
        "authorize again asking for it"
    )
    assert refusal.challenge("u") == 'Bearer error="insufficient_scope", scope="notes:write", resource_metadata="u"'
    assert Refusal("tool 'purge'", frozenset(), frozenset()).challenge("u") is None


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda app: app.tool(scopes="notes:read")(lambda: 1),
         "scopes= takes a list of scopes, not the string 'notes:read': write scopes=['notes:read']"),
        (lambda app: app.tool(name="t", scopes=["notes read"])(lambda: 1), "'notes read' is not an OAuth scope"),
        (lambda app: app.prompt(allow=True)(lambda: "x"), "allow= takes a function of the principal"),
    ],
)
def test_bad_declarations_are_refused_when_made(declare: Any, message: str) -> None:
    with pytest.raises(DeclarationError, match=message.replace("[", r"\[").replace("]", r"\]")):
        declare(McpApp("bad"))


def test_removing_a_declaration_removes_its_requirement() -> None:
    app = build_app()
    assert set(app.access_policy.tools) == {"search", "add", "export", "purge"}
    app.remove_tool("add")
    app.remove_resource("notes://{note_id}")
    app.remove_prompt("summarize")
    assert "add" not in app.access_policy.tools
    assert set(app.access_policy.resources) == {"notes://index"}
    assert app.access_policy.prompts == {}


def test_a_bad_access_policy_on_handlers_is_named_at_start() -> None:
    class Broken(LowLevel):
        access_policy: ClassVar[Any] = {"tools": {"write": ["notes:write"]}}

    with pytest.raises(TypeError, match=r"^Broken.access_policy must be an AccessPolicy, not dict"):
        http_app(Broken(), auth=bearer_auth())


# -- principals: identity, not scopes (requirement 4) ------------------------------------------


def test_a_stepped_up_principal_is_the_same_caller() -> None:
    reader, writer = TOKENS["reader"], TOKENS["writer"]
    assert reader == writer and hash(reader) == hash(writer)
    assert {reader: "session"}[writer] == "session"  # session caps and parking key on it
    assert principal_tag(reader) == principal_tag(writer)  # requestState binding
    assert principal_tag(reader) != principal_tag(principal("bob", READ))
    assert reader != principal("alice", READ).__class__("alice", issuer="https://other.example")


# -- handshake era -----------------------------------------------------------------------------


async def test_handshake_call_without_the_scope_is_403_with_the_step_up_challenge() -> None:
    app = build_app()
    calls: list[str] = []
    app.add_tool(lambda: calls.append("ran") or "x", name="audited", scopes=[READ, "notes:audit"])
    session = await Handshake(served(app), "reader").open()
    error = assert_forbidden(await session.request("tools/call", {"name": "add", "arguments": {"title": "t"}}), WRITE)
    assert error["code"] == -32600
    assert error["message"].startswith("Forbidden: tool 'add' needs scope notes:write")
    assert error["data"] == {"requiredScopes": [WRITE], "missingScopes": [WRITE]}
    # the challenge names every scope the call needs (reader has notes:read), not only the missing one
    audited = assert_forbidden(await session.request("tools/call", {"name": "audited", "arguments": {}}), "notes:audit", READ)
    assert audited["data"] == {"requiredScopes": ["notes:audit", READ], "missingScopes": ["notes:audit"]}
    assert calls == []  # no handler ran
    assert tool_text(await session.request("tools/call", {"name": "search", "arguments": {"query": "q"}})) == "found q"


async def test_a_call_that_would_stream_is_refused_before_the_stream_starts() -> None:
    session = await Handshake(served(build_app()), "reader").open()
    params = {"name": "export", "arguments": {}, "_meta": {"progressToken": "p"}}
    assert_forbidden(await session.request("tools/call", params), WRITE)
    # the same call with the scope streams (SSE): the check was the only difference
    streamed = await session.request("tools/call", params, token="writer")
    assert streamed.headers["content-type"] == "text/event-stream"
    assert tool_text(streamed) == "exported"


async def test_a_stepped_up_token_keeps_its_session_and_may_then_call() -> None:
    session = await Handshake(served(build_app()), "reader").open()
    assert_forbidden(await session.request("tools/call", {"name": "add", "arguments": {"title": "t"}}), WRITE)
    stepped_up = await session.request("tools/call", {"name": "add", "arguments": {"title": "t"}}, token="writer")
    assert tool_text(stepped_up) == "added t"  # same session id, a wider token of the same caller


async def test_the_predicate_refusing_is_403_without_a_challenge() -> None:
    app = served(build_app())
    reader = await Handshake(app, "reader").open()
    error = assert_forbidden(await reader.request("tools/call", {"name": "purge", "arguments": {}}))
    assert error["message"] == "Forbidden: the server's policy does not allow this caller to use tool 'purge'"
    admin = await Handshake(app, "admin").open()
    assert tool_text(await admin.request("tools/call", {"name": "purge", "arguments": {}})) == "purged"


async def test_resources_prompts_and_completions_are_guarded() -> None:
    session = await Handshake(served(build_app()), "nobody").open()
    assert_forbidden(await session.request("resources/read", {"uri": "notes://index"}), READ)
    assert_forbidden(await session.request("resources/read", {"uri": "notes://3"}), READ)
    assert_forbidden(await session.request("prompts/get", {"name": "summarize", "arguments": {"note_id": "1"}}), READ)
    complete = {"ref": {"type": "ref/prompt", "name": "summarize"}, "argument": {"name": "style", "value": "s"}}
    assert_forbidden(await session.request("completion/complete", complete), READ)
    template = {"ref": {"type": "ref/resource", "uri": "notes://{note_id}"}, "argument": {"name": "note_id", "value": ""}}
    assert_forbidden(await session.request("completion/complete", template), READ)
    assert_forbidden(await session.request("resources/subscribe", {"uri": "notes://3"}), READ)
    readme = await session.request("resources/read", {"uri": "public://readme"})
    assert readme.json()["result"]["contents"][0]["text"] == "readme"
    assert (await session.request("prompts/get", {"name": "greet"})).status == 200


async def test_lists_show_only_what_the_token_may_use() -> None:
    app = served(build_app())
    seen: dict[str, dict[str, list[str]]] = {}
    for token in ("nobody", "reader", "writer", "admin"):
        session = await Handshake(app, token).open()
        names = {}
        for method, key, field in (
            ("tools/list", "tools", "name"), ("prompts/list", "prompts", "name"),
            ("resources/list", "resources", "uri"), ("resources/templates/list", "resourceTemplates", "uriTemplate"),
        ):
            result = (await session.request(method)).json()["result"]
            names[method] = sorted(item[field] for item in result[key])
        seen[token] = names
    assert seen["nobody"] == {
        "tools/list": ["hello"], "prompts/list": ["greet"],
        "resources/list": ["public://readme"], "resources/templates/list": [],
    }
    assert seen["reader"]["tools/list"] == ["hello", "search"]
    assert seen["writer"]["tools/list"] == ["add", "export", "hello", "search"]
    assert seen["admin"]["tools/list"] == ["hello", "purge", "search"]
    assert seen["reader"]["resources/templates/list"] == ["notes://{note_id}"]
    assert seen["reader"]["prompts/list"] == ["greet", "summarize"]


def test_a_broader_scope_implies_the_narrower_ones_it_is_declared_to() -> None:
    """2026-07-28: a token with a broader scope may use what needs a narrower one; which
    scope implies which is declared (transitively: admin > write > read)."""
    policy = AccessPolicy(
        tools={"add": requires(WRITE), "search": requires(READ)},
        implied_scopes={"notes:admin": [WRITE], WRITE: [READ]},
    )
    admin = principal("root", "notes:admin")
    call = {"name": "search", "arguments": {}}
    assert policy.granted(admin) == {"notes:admin", WRITE, READ}
    assert policy.refusal("tools/call", call, admin) is None
    assert policy.refusal("tools/call", {**call, "name": "add"}, admin) is None
    listed = policy.visible("tools/list", {"tools": [{"name": "add"}, {"name": "search"}]}, admin)
    assert [tool["name"] for tool in listed["tools"]] == ["add", "search"]
    reader = principal("alice", READ)  # (implication runs one way only)
    refusal = policy.refusal("tools/call", {**call, "name": "add"}, reader)
    assert refusal is not None and refusal.missing == {WRITE}


async def test_an_apps_implied_scopes_let_a_broader_token_call_over_http() -> None:
    tokens = {**TOKENS, "owner": principal("carol", "notes:admin")}
    app = http_app(build_app(implied_scopes={"notes:admin": [READ, WRITE]}), auth=bearer_auth(tokens))
    session = await Handshake(app, "owner").open()
    reply = await session.request("tools/call", {"name": "add", "arguments": {"title": "t"}})
    assert reply.status == 200 and "error" not in reply.json()


async def test_hide_unauthorized_false_lists_everything_and_still_refuses_calls() -> None:
    session = await Handshake(served(build_app(hide_unauthorized=False)), "nobody").open()
    tools = (await session.request("tools/list")).json()["result"]["tools"]
    assert sorted(tool["name"] for tool in tools) == ["add", "export", "hello", "purge", "search"]
    assert_forbidden(await session.request("tools/call", {"name": "add", "arguments": {"title": "t"}}), WRITE)


async def test_a_batch_with_one_forbidden_request_is_refused_whole() -> None:
    session = await Handshake(served(build_app()), "reader", version="2025-03-26").open()
    batch = [rpc(1, "tools/call", {"name": "search", "arguments": {"query": "q"}}),
             rpc(2, "tools/call", {"name": "add", "arguments": {"title": "t"}})]
    assert_forbidden(await session.post(batch), WRITE, request_id=2)


async def test_low_level_handlers_declare_their_scopes_as_a_class_attribute() -> None:
    app = http_app(LowLevel(), auth=bearer_auth())
    reader = await Handshake(app, "reader").open()
    tools = (await reader.request("tools/list")).json()["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["read"]
    assert_forbidden(await reader.request("tools/call", {"name": "write", "arguments": {}}), WRITE)
    assert_forbidden(await reader.request("tools/call", {"name": "admin_only", "arguments": {}}))
    assert tool_text(await reader.request("tools/call", {"name": "read", "arguments": {}})) == "did read"
    prompts = (await reader.request("prompts/list")).json()["result"]["prompts"]
    assert [prompt["name"] for prompt in prompts] == ["secret", "open"]
    nobody = await Handshake(app, "nobody").open()
    assert_forbidden(await nobody.request("prompts/get", {"name": "secret"}), READ)
    writer = await Handshake(app, "writer").open()
    assert tool_text(await writer.request("tools/call", {"name": "write", "arguments": {}})) == "did write"


# -- stateless era (2026-07-28) ----------------------------------------------------------------


async def test_stateless_call_without_the_scope_is_403_with_the_step_up_challenge() -> None:
    app = served(build_app())
    error = assert_forbidden(await stateless(app, "reader", "tools/call", {"name": "add", "arguments": {"title": "t"}}), WRITE)
    assert error["data"]["missingScopes"] == [WRITE]
    assert tool_text(await stateless(app, "writer", "tools/call", {"name": "add", "arguments": {"title": "t"}})) == "added t"


async def test_stateless_streaming_call_is_refused_before_the_stream_starts() -> None:
    app = served(build_app())
    params = {"name": "export", "arguments": {}}
    assert_forbidden(await stateless(app, "reader", "tools/call", params, progressToken="p"), WRITE)
    streamed = await stateless(app, "writer", "tools/call", params, progressToken="p")
    assert streamed.headers["content-type"] == "text/event-stream"
    assert tool_text(streamed) == "exported"


async def test_stateless_lists_resources_prompts_and_predicate() -> None:
    app = served(build_app())
    listed = (await stateless(app, "reader", "tools/list", {})).json()["result"]["tools"]
    assert sorted(tool["name"] for tool in listed) == ["hello", "search"]
    assert_forbidden(await stateless(app, "nobody", "resources/read", {"uri": "notes://2"}), READ)
    assert_forbidden(await stateless(app, "nobody", "prompts/get", {"name": "summarize", "arguments": {"note_id": "1"}}), READ)
    assert_forbidden(await stateless(app, "reader", "tools/call", {"name": "purge", "arguments": {}}))
    templates = (await stateless(app, "nobody", "resources/templates/list", {})).json()["result"]
    assert templates["resourceTemplates"] == []


# -- HTTP+SSE (2024-11-05) ----------------------------------------------------------------------


async def test_the_deprecated_sse_transport_refuses_the_post_with_403() -> None:
    app = served(build_app(), legacy_sse=True)
    events: asyncio.Queue[bytes] = asyncio.Queue()
    disconnect = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.body" and event.get("body"):
            await events.put(event["body"])

    headers = [(b"host", HOST.encode()), (b"accept", b"text/event-stream"), (b"authorization", b"Bearer reader")]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/sse", "raw_path": b"/sse", "query_string": b"", "headers": headers,
             "client": ("127.0.0.1", 50001), "server": ("127.0.0.1", 8000)}
    stream = asyncio.ensure_future(app(scope, receive, send))
    try:
        first = (await asyncio.wait_for(events.get(), 5)).decode()
        endpoint = next(line[6:] for line in first.splitlines() if line.startswith("data: "))
        path, _, query = endpoint.partition("?")

        async def post(message: Any) -> Reply:
            return await exchange_query(app, message, path, query)

        init = {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
        assert (await post(rpc(0, "initialize", init))).status == 202
        assert (await post({"jsonrpc": "2.0", "method": "notifications/initialized"})).status == 202
        assert_forbidden(await post(rpc(7, "tools/call", {"name": "add", "arguments": {"title": "t"}})), WRITE)
        assert (await post(rpc(8, "tools/call", {"name": "search", "arguments": {"query": "q"}}))).status == 202
    finally:
        disconnect.set()
        await asyncio.wait_for(stream, 5)


async def exchange_query(app: Any, message: Any, path: str, query: str) -> Reply:
    """A POST to the HTTP+SSE messages endpoint (its session key in the query)."""
    body = json.dumps(message).encode()
    started: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            started.update(event)
        else:
            chunks.append(event.get("body", b""))

    headers = [(b"host", HOST.encode()), (b"content-type", b"application/json"), (b"authorization", b"Bearer reader")]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query.encode(), "headers": headers,
             "client": ("127.0.0.1", 50001), "server": ("127.0.0.1", 8000)}
    await app(scope, receive, send)
    return Reply(started["status"], {k.decode(): v.decode() for k, v in started["headers"]}, b"".join(chunks))


# -- without auth ------------------------------------------------------------------------------


async def test_without_auth_nothing_is_enforced_and_the_app_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="typedmcp"):
        app = http_app(build_app())
    assert "ScopedApp" not in caplog.text
    assert (
        "McpApp declare scopes (prompt 'summarize', resource 'notes://index', resource "
        "'notes://{note_id}', tool 'add', tool 'export', tool 'purge', tool 'search') but http_app "
        "has no auth=: they are not enforced"
    ) in caplog.text
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    init = await exchange(app, rpc(0, "initialize", params), {})
    session = init.headers["mcp-session-id"]
    headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
    await exchange(app, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    assert tool_text(await exchange(app, rpc(7, "tools/call", {"name": "add", "arguments": {"title": "t"}}), headers)) == "added t"


def test_an_app_without_scopes_does_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    app = McpApp("plain")
    app.add_tool(lambda: 1, name="one")
    with caplog.at_level(logging.WARNING, logger="typedmcp"):
        http_app(app)
        http_app(build_app(), auth=bearer_auth())
    assert caplog.text == ""


def test_requirement_of_none_is_no_requirement() -> None:
    assert Requirement.of(None, None) is None
    assert Requirement.of([], None) is None
    with pytest.raises(ValueError, match=r"requires\(\) needs a scope or allow="):
        requires()


# -- the session's own guard, and a handshake-only server -----------------------------------


@pytest.mark.parametrize("protocol", ["v2025_11_25", "v2026_07_28"])
async def test_the_session_refuses_too_where_no_http_gate_ran(protocol: str) -> None:
    """A transport without the HTTP gate (here in process, the principal set around it):
    the session itself refuses with the JSON-RPC error and filters the lists."""
    package = importlib.import_module(f"mcp_generated.{protocol}")
    with serving_origin({}, TOKENS["reader"]):
        async with connect_memory(build_app(), protocol=package) as client:
            assert sorted(tool.name for tool in (await client.list_tools()).tools) == ["hello", "search"]
            with pytest.raises(RpcError) as refused:
                await client.call_tool(name="add", arguments={"title": "t"})
            assert refused.value.code == -32600
            assert refused.value.data == {"requiredScopes": [WRITE], "missingScopes": [WRITE]}
            assert (await client.call_tool(name="search", arguments={"query": "q"})).content[0].text == "found q"  # type: ignore[union-attr]


async def test_a_handshake_only_server_refuses_with_403_too() -> None:
    app = served(build_app(), packages=[mcp_generated.v2025_11_25])
    session = await Handshake(app, "reader").open()
    assert_forbidden(await session.request("tools/call", {"name": "add", "arguments": {"title": "t"}}), WRITE)


async def test_session_caps_count_a_stepped_up_token_as_the_same_client() -> None:
    """``max_sessions_per_client`` keys on the principal: alice's wider token is still
    alice (her idle session makes room), eve is someone else (her session stays)."""
    app = served(build_app(), max_sessions_per_client=1)
    eve = await Handshake(app, "nobody").open()
    first = await Handshake(app, "reader").open()
    second = await Handshake(app, "writer").open()  # alice again: her first session is ended
    assert (await first.request("tools/list")).status == 404
    assert (await second.request("tools/list")).status == 200
    assert (await eve.request("tools/list")).status == 200


async def test_a_stepped_up_token_may_cancel_its_own_stateless_request_and_no_one_else_may() -> None:
    started, never = asyncio.Event(), asyncio.Event()
    cancelled: list[str] = []

    async def wait() -> str:
        started.set()
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append("wait")
            raise
        return "never"

    scoped = build_app()
    scoped.add_tool(wait, name="wait", scopes=[READ])
    app = served(scoped)
    call = asyncio.ensure_future(stateless(app, "reader", "tools/call", {"name": "wait", "arguments": {}}))
    await asyncio.wait_for(started.wait(), 5)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
    headers = {"mcp-protocol-version": MODERN, "mcp-method": "notifications/cancelled"}
    eve = await exchange(app, cancel, {**headers, "authorization": "Bearer nobody"})
    assert eve.status == 202
    # a whole request served meanwhile: a cancel that had reached the call has landed by now
    assert tool_text(await stateless(app, "nobody", "tools/call", {"name": "hello", "arguments": {}})) == "hello"
    assert cancelled == [] and not call.done()  # someone else's cancel reached nothing
    alice = await exchange(app, cancel, {**headers, "authorization": "Bearer writer"})
    assert alice.status == 202
    assert (await asyncio.wait_for(call, 5)).status == 204  # cancelled: nothing more is sent
    assert cancelled == ["wait"]


async def test_a_cancel_posted_in_the_stateless_era_passes_the_middleware_chain(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server's middleware sees a ``notifications/cancelled`` POSTed to the 2026-07-28
    endpoint (with its principal), and one that fails there is logged, never a 500."""
    seen: list[tuple[str, str, Any, Any]] = []

    async def record(ctx: Any, call_next: Any) -> Any:
        seen.append((ctx.method, ctx.kind, ctx.principal.subject, ctx.params.get("requestId")))
        if ctx.params.get("requestId") == "boom":
            raise RuntimeError("a broken middleware")
        return await call_next(ctx)

    app = served(build_app(), middleware=[record])
    meta = {PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: {}}
    headers = {"authorization": "Bearer reader", "mcp-protocol-version": MODERN,
               "mcp-method": "notifications/cancelled"}
    for request_id in (41, "boom"):
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": request_id, "_meta": meta}}
        with caplog.at_level(logging.ERROR, logger="typedmcp"):
            reply = await exchange(app, note, headers)
        assert reply.status == 202
    assert seen == [("notifications/cancelled", "notification", "alice", 41),
                    ("notifications/cancelled", "notification", "alice", "boom")]
    assert "a server middleware failed on notifications/cancelled" in caplog.text
