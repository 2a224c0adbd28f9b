"""Capabilities a client can declare (issue 13, item 13): URL-mode elicitation and
client-side tasks, derived from what the client can really do, end to end.

* ``elicitation.url`` (2025-11-25, 2026-07-28) is declared when the client implements the
  ``elicit_url`` hook, which the dispatch table names for the URL variant of
  ``elicitation/create`` (``elicit`` keeps form mode); a server sends URL mode only to such a
  client, and a client refuses a mode it did not declare (-32602).
* ``tasks`` (2025-11-25) is declared by a client connected with ``tasks=True`` that answers
  sampling or elicitation: those requests, task-augmented, run in the runtime's task store
  and are answered with ``CreateTaskResult``; the server polls ``tasks/get`` and
  ``tasks/result`` on the client. A server task-augments only what the client declared.
* Older revisions never declare what they do not define.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import official_spec_dir

import mcp_generated.v2025_03_26
import mcp_generated.v2025_06_18
import mcp_generated.v2025_11_25
import mcp_generated.v2026_07_28
from typedmcp_codegen.analyse import analyse
from typedmcp_codegen.load import SchemaSource, load_schema
from typedmcp_codegen.pins import load_pins
from typedmcp.connecting import connect_direct, connect_memory, connect_stdio
from typedmcp.engine.jsonrpc import INVALID_PARAMS, RpcError
from typedmcp.protocol.stubs import RequestContext
from typedmcp.protocol.tasks import TaskStore
from typedmcp_codegen.analyse import Gate
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.client import Client, ClientHandlers
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers
from servers.asking_server import LINK, Asking

pytestmark = pytest.mark.anyio

SERVERS = Path(__file__).resolve().parent / "servers"
ASKING = [sys.executable, str(SERVERS / "asking_server.py")]
Ctx = RequestContext[ClientPeer]
CONNECTORS = {"memory": connect_memory, "direct": connect_direct}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


# -- clients ------------------------------------------------------------------------------------


class FormOnly(ClientHandlers):
    async def elicit(self, params: Any, ctx: RequestContext[Client]) -> models.ElicitResult:
        return models.ElicitResult(action="accept", content={"name": "form"})


class UrlOnly(ClientHandlers):
    def __init__(self) -> None:
        self.urls: list[models.ElicitRequestURLParams] = []
        self.completed: list[str] = []

    async def elicit_url(
        self, params: models.ElicitRequestURLParams, ctx: RequestContext[Client]
    ) -> models.ElicitResult:
        self.urls.append(params)
        return models.ElicitResult(action="accept")

    async def on_elicitation_complete(
        self, params: models.ElicitationCompleteNotificationParams, ctx: RequestContext[Client]
    ) -> None:
        self.completed.append(params.elicitation_id)


class Both(UrlOnly, FormOnly):
    pass


class Everything(Both):
    """Answers sampling, roots and both elicitation modes; sampling waits for ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.release.set()
        self.cancelled = 0

    async def create_message(self, params: Any, ctx: RequestContext[Client]) -> models.CreateMessageResult:
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        return models.CreateMessageResult(
            role="assistant", content=models.TextContent(type="text", text="sampled"), model="m"
        )

    async def list_roots(self, params: Any, ctx: RequestContext[Client]) -> models.ListRootsResult:
        return models.ListRootsResult(roots=[])


class Sampler(ClientHandlers):
    async def create_message(self, params: Any, ctx: RequestContext[Client]) -> models.CreateMessageResult:
        return models.CreateMessageResult(
            role="assistant", content=models.TextContent(type="text", text="sampled"), model="m"
        )


async def call(client: Any, name: str) -> Any:
    result = await asyncio.wait_for(client.call_tool(name=name), 10)
    return json.loads(result.content[0].text)


@contextlib.asynccontextmanager
async def connected(
    handlers: Any, link: str = "memory", protocol: Any = mcp_generated.v2025_11_25, **options: Any
) -> AsyncIterator[tuple[Any, Asking]]:
    server = Asking()
    async with CONNECTORS[link](server, protocol=protocol, client_handlers=handlers, **options) as client:
        yield client, server


# == the dispatch table names the variants =======================================================


@pytest.fixture(scope="module")
def protocols() -> dict[str, Any]:
    pins = load_pins()
    source = SchemaSource(schema_dir=official_spec_dir(), cache_dir=None, allow_download=False)
    found = {}
    for name in pins.names:
        schema = load_schema(name, pins, source)
        found[name] = analyse(schema.document, name, schema.sha256)
    return found


def test_the_analysis_finds_the_elicitation_modes_and_nothing_else(protocols: dict[str, Any]) -> None:
    for revision, protocol in protocols.items():
        with_variants = {r.method: r.variants for r in protocol.requests if r.variants}
        if revision in ("2025-11-25", "2026-07-28", "draft"):
            [variants] = with_variants.values()
            assert list(with_variants) == ["elicitation/create"]
            found = {(v.field, v.value, v.gate, v.handler_name, v.params_type, v.default) for v in variants}
            assert found == {
                ("mode", "form", Gate("client", ("elicitation", "form")), "elicit", "ElicitRequestFormParams", True),
                ("mode", "url", Gate("client", ("elicitation", "url")), "elicit_url", "ElicitRequestURLParams", False),
            }
        else:
            assert with_variants == {}, revision


def test_the_generated_tables_and_handlers_carry_the_url_hook() -> None:
    new, old = mcp_generated.v2025_11_25, mcp_generated.v2025_06_18
    assert [v.handler_name for v in new.dispatch.ELICIT.variants] == ["elicit", "elicit_url"]
    assert old.dispatch.ELICIT.variants == ()
    hook = new.client.ClientHandlers.elicit_url
    assert "ElicitRequestURLParams" in str(hook.__annotations__["params"])
    assert "elicitation.url" in (hook.__doc__ or "")
    assert hasattr(mcp_generated.v2026_07_28.client.ClientHandlers, "elicit_url")
    assert not hasattr(old.client.ClientHandlers, "elicit_url")


# == what a client declares =====================================================================


async def declared(handlers: Any, protocol: Any = mcp_generated.v2025_11_25, **options: Any) -> dict[str, Any]:
    """The capabilities the server saw."""
    async with connected(handlers, protocol=protocol, **options) as (client, server):
        if protocol is mcp_generated.v2026_07_28:
            return client.session.own_capabilities  # type: ignore[no-any-return]
        await asyncio.wait_for(client.call_tool(name="form"), 10)
        return server.peer_capabilities


@pytest.mark.parametrize(
    ("handlers", "options", "expected"),
    [
        (FormOnly, {}, {"elicitation": {}}),
        (UrlOnly, {}, {"elicitation": {"url": {}}}),
        (Both, {}, {"elicitation": {"form": {}, "url": {}}}),
        (Sampler, {"tasks": True}, {
            "sampling": {},
            "tasks": {"list": {}, "cancel": {}, "requests": {"sampling": {"createMessage": {}}}},
        }),
        (Everything, {"tasks": True}, {
            "elicitation": {"form": {}, "url": {}},
            "sampling": {},
            "roots": {},
            "tasks": {
                "list": {},
                "cancel": {},
                "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}},
            },
        }),
        (Everything, {}, {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}),
        (ClientHandlers, {"tasks": True}, {}),  # nothing it could run as a task: no tasks
    ],
)
async def test_a_2025_11_25_client_declares_what_its_handlers_can_do(
    handlers: Callable[[], Any], options: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert await declared(handlers(), **options) == expected


@pytest.mark.parametrize(
    ("protocol", "expected"),
    [
        (mcp_generated.v2025_06_18, {"elicitation": {}, "sampling": {}, "roots": {}}),
        (mcp_generated.v2025_03_26, {"sampling": {}, "roots": {}}),
        (mcp_generated.v2026_07_28, {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}),
    ],
)
async def test_other_revisions_declare_only_what_they_define(protocol: Any, expected: dict[str, Any]) -> None:
    assert await declared(Everything(), protocol=protocol, tasks=True) == expected


def schema_allows(schema: dict[str, Any], defs: dict[str, Any], declared: Any, path: str) -> list[str]:
    """Paths of ``declared`` that the schema's ClientCapabilities does not define."""
    while "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if not isinstance(declared, dict):
        return []
    known = schema.get("properties", {})
    problems = []
    for key, value in declared.items():
        if key not in known:
            problems.append(f"{path}.{key}")
        else:
            problems += schema_allows(known[key], defs, value, f"{path}.{key}")
    return problems


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"])
async def test_everything_a_client_declares_is_defined_by_its_revision(revision: str) -> None:
    document = json.loads((official_spec_dir() / revision / "schema.json").read_text())
    defs = document.get("$defs") or document["definitions"]
    package = getattr(mcp_generated, "v" + revision.replace("-", "_"))
    capabilities = await declared(Everything(), protocol=package, tasks=True)
    assert capabilities, revision
    assert schema_allows(defs["ClientCapabilities"], defs, capabilities, "capabilities") == []


# == URL-mode elicitation ========================================================================


@pytest.mark.parametrize("link", CONNECTORS)
async def test_a_server_sends_url_mode_to_a_client_that_declared_it(link: str) -> None:
    handlers = Both()
    async with connected(handlers, link) as (client, _):
        assert await call(client, "url") == "accept"
        assert await call(client, "form") == {"name": "form"}  # form mode still goes to elicit
        await asyncio.sleep(0.05)
    [asked] = handlers.urls
    assert isinstance(asked, models.ElicitRequestURLParams)
    assert (asked.url, asked.elicitation_id, asked.mode) == (LINK, "e-1", "url")
    assert handlers.completed == ["e-1"]


@pytest.mark.parametrize("link", CONNECTORS)
async def test_a_server_never_sends_a_mode_the_client_did_not_declare(link: str) -> None:
    async with connected(FormOnly(), link) as (client, _):
        refused = (await call(client, "url"))["refused"]
        assert "elicitation.url" in refused and "elicitation/create" in refused
    async with connected(UrlOnly(), link) as (client, _):
        refused = (await call(client, "form"))["refused"]
        assert "elicitation.form" in refused


async def test_a_client_refuses_a_mode_it_did_not_declare() -> None:
    async with connected(FormOnly()) as (client, _):
        answer = await call(client, "raw_url")
    assert answer["error"] == INVALID_PARAMS
    assert "elicitation.url" in answer["message"] and "mode" in answer["message"]


async def test_url_mode_in_the_stateless_era() -> None:
    """The stateless server asks through input_required; the same hook answers."""
    from mcp_generated.v2026_07_28 import models as modern
    from mcp_generated.v2026_07_28.client import ClientHandlers as ModernClient
    from mcp_generated.v2026_07_28.server import ServerHandlers as ModernHandlers

    class ModernUrl(ModernClient):
        def __init__(self) -> None:
            self.urls: list[Any] = []

        async def elicit_url(self, params: modern.ElicitRequestURLParams, ctx: Any) -> Any:
            self.urls.append(params)
            return modern.ElicitResult(action="accept")

    handlers = ModernUrl()

    class AskUrl(ModernHandlers):
        async def list_tools(self, params: Any, ctx: Any) -> Any:
            return {"tools": [{"name": "url", "inputSchema": {"type": "object"}}]}

        async def call_tool(self, params: Any, ctx: Any) -> Any:
            answer = await ctx.peer.elicit(
                modern.ElicitRequestURLParams(mode="url", message="Sign in", url=LINK)
            )
            return modern.CallToolResult(content=[modern.TextContent(type="text", text=answer.action)])

    async with connect_memory(
        AskUrl(), protocol=mcp_generated.v2026_07_28, client_handlers=handlers
    ) as client:
        result = await asyncio.wait_for(client.call_tool(name="url"), 10)
    assert result.content[0].text == "accept"
    assert [p.url for p in handlers.urls] == [LINK]

    class ModernForm(ModernClient):
        async def elicit(self, params: Any, ctx: Any) -> Any:
            return modern.ElicitResult(action="decline")

    async with connect_memory(
        AskUrl(), protocol=mcp_generated.v2026_07_28, client_handlers=ModernForm()
    ) as client:
        assert client.session.own_capabilities["elicitation"] == {}
        with pytest.raises(RpcError) as raised:  # never asked: -32021 names what is missing
            await asyncio.wait_for(client.call_tool(name="url"), 10)
    assert raised.value.code == -32021
    assert raised.value.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}


# == client-side tasks ==========================================================================


@pytest.mark.parametrize("link", CONNECTORS)
async def test_task_augmented_sampling_runs_as_a_task_the_server_polls(link: str) -> None:
    async with connected(Everything(), link, tasks=True) as (client, server):
        answer = await call(client, "sample_task")
        await asyncio.sleep(0.05)
    assert answer == {"listed": True, "final": "completed", "text": "sampled"}
    assert server.statuses == ["completed"]  # notifications/tasks/status from the client


@pytest.mark.parametrize("link", CONNECTORS)
async def test_task_augmented_url_elicitation(link: str) -> None:
    handlers = Everything()
    async with connected(handlers, link, tasks=True) as (client, _):
        answer = await call(client, "url_task")
    assert answer["action"] == "accept" and answer["statuses"] == ["completed"]
    assert answer["meta"]["io.modelcontextprotocol/related-task"]["taskId"]
    assert len(handlers.urls) == 1


async def test_the_server_can_cancel_a_client_task() -> None:
    handlers = Everything()
    handlers.release.clear()
    async with connected(handlers, tasks=True) as (client, _):
        answer = await call(client, "cancel_task")
    assert answer == {"status": "cancelled", "payload_error": INVALID_PARAMS}
    assert handlers.cancelled == 1


async def test_a_server_never_task_augments_what_the_client_did_not_declare() -> None:
    async with connected(Everything()) as (client, _):  # no tasks=True
        refused = (await call(client, "sample_task"))["refused"]
    assert "tasks.requests.sampling.createMessage" in refused


async def test_a_client_without_tasks_serves_a_task_augmented_request_normally() -> None:
    async with connected(FormOnly()) as (client, _):
        answer = await call(client, "raw_task")
    assert answer == {"action": "accept", "content": {"name": "form"}}


async def test_the_client_task_store_ends_with_the_connection() -> None:
    handlers = Everything()
    handlers.release.clear()
    sampling = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}],
        "maxTokens": 5,
        "task": {},
    }
    async with connected(handlers, tasks=True) as (client, _):
        store = client.session.task_store
        assert isinstance(store, TaskStore)
        created = await asyncio.wait_for(client.session.on_request("sampling/createMessage", sampling, 99), 10)
        assert created["task"]["status"] == "working"
        [record] = store.records.values()
        await asyncio.sleep(0.02)  # the handler starts, and waits
    await asyncio.sleep(0.01)
    assert record.runner is not None and record.runner.done()
    assert handlers.cancelled == 1


# == over stdio ===================================================================================


async def test_url_mode_and_client_tasks_over_stdio() -> None:
    handlers = Everything()
    async with connect_stdio(ASKING, protocol=mcp_generated.v2025_11_25, handlers=handlers, tasks=True) as client:
        assert await call(client, "url") == "accept"
        assert (await call(client, "sample_task"))["final"] == "completed"
        assert (await call(client, "url_task"))["action"] == "accept"
    assert len(handlers.urls) == 2


async def test_over_stdio_the_server_asks_only_what_the_client_declared() -> None:
    async with connect_stdio(ASKING, protocol=mcp_generated.v2025_11_25, handlers=FormOnly()) as client:
        assert "elicitation.url" in (await call(client, "url"))["refused"]
    async with connect_stdio(ASKING, protocol=mcp_generated.v2025_11_25, handlers=Everything()) as client:
        assert await call(client, "url") == "accept"
        assert "tasks.requests.sampling" in (await call(client, "sample_task"))["refused"]


# == the task store is bounded ==================================================================


async def test_the_task_store_keeps_a_bounded_number_of_tasks() -> None:
    async def noted(task: Any) -> None:
        return None

    store = TaskStore(noted, max_tasks=3)
    never = asyncio.Event()

    async def done() -> str:
        return "done"

    finished = [store.start("m", 60_000, done) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert all(r.status == "completed" for r in finished)
    running = [store.start("m", 60_000, never.wait) for _ in range(3)]  # evicts the finished
    assert len(store.records) == 3 and set(store.records) == {r.task_id for r in running}
    with pytest.raises(RpcError) as raised:
        store.start("m", 60_000, never.wait)
    assert "too many tasks" in raised.value.message
    store.close()


async def test_the_server_task_store_ends_with_the_connection_too() -> None:
    cancelled: list[bool] = []

    class Waits(ServerHandlers):
        async def list_tools(self, params: Any, ctx: Ctx) -> Any:
            return {"tools": [{"name": "wait", "inputSchema": {"type": "object"}}]}

        async def call_tool(self, params: Any, ctx: Ctx) -> Any:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

    async with connect_memory(
        Waits(), protocol=mcp_generated.v2025_11_25, server_options={"tasks": True}
    ) as client:
        created = await asyncio.wait_for(client.call_tool(name="wait", task=models.TaskMetadata()), 10)
        assert created.task.status == "working"
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.02)
    assert cancelled == [True]
