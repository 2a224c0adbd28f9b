"""The generated stubs: typed send methods build wire params; handler bases; the table."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
import typing
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import pytest

from conftest import RELEASED
from typedmcp.protocol.spec import Direction, NotificationSpec, RequestSpec
from typedmcp.protocol.stubs import MethodNotFound, RequestContext


def package(revision: str, module: str) -> ModuleType:
    return importlib.import_module(f"mcp_generated.v{revision.replace('-', '_')}.{module}")


class RecordingSender:
    """Records what the proxies send and answers with a canned raw result."""

    def __init__(self, raw_result: Mapping[str, Any] | None = None) -> None:
        self.sent: list[tuple[str, Mapping[str, Any] | None]] = []
        self.raw_result = raw_result or {}

    async def send_request(self, spec: RequestSpec[Any], params: Mapping[str, Any] | None) -> Any:
        self.sent.append((spec.method, params))
        return spec.validate_result(self.raw_result)

    async def send_notification(
        self, spec: NotificationSpec, params: Mapping[str, Any] | None
    ) -> None:
        self.sent.append((spec.method, params))


def test_call_tool_sends_wire_named_params_and_returns_the_typed_result() -> None:
    client_module = package("2025-06-18", "client")
    models = package("2025-06-18", "models")
    sender = RecordingSender({"content": [{"type": "text", "text": "sunny"}]})
    client = client_module.Client(sender)

    result = asyncio.run(client.call_tool(name="weather", arguments={"city": "Paris"}))

    assert sender.sent == [("tools/call", {"name": "weather", "arguments": {"city": "Paris"}})]
    assert isinstance(result, models.CallToolResult)
    assert isinstance(result.content[0], models.TextContent)
    assert result.content[0].text == "sunny"


def test_optional_arguments_left_out_are_not_sent() -> None:
    client = package("2025-11-25", "client").Client(RecordingSender({"tools": []}))
    asyncio.run(client.list_tools())
    asyncio.run(client.list_tools(cursor="page-2"))
    assert client._sender.sent == [("tools/list", None), ("tools/list", {"cursor": "page-2"})]


def test_python_names_become_wire_names_in_sent_params() -> None:
    peer = package("2025-06-18", "server").ClientPeer(RecordingSender())
    asyncio.run(peer.send_progress(progress_token="tok", progress=1, total=4))
    assert peer._sender.sent == [
        ("notifications/progress", {"progressToken": "tok", "progress": 1, "total": 4})
    ]


def test_union_params_are_sent_as_their_model_dump() -> None:
    server = package("2025-11-25", "server")
    models = package("2025-11-25", "models")
    sender = RecordingSender({"action": "accept", "content": {"name": "Ada"}})
    form = models.ElicitRequestFormParams(
        message="Who are you?",
        requested_schema={"type": "object", "properties": {"name": {"type": "string"}}},
    )
    result = asyncio.run(server.ClientPeer(sender).elicit(form))
    method, params = sender.sent[0]
    assert method == "elicitation/create"
    assert params == {
        "message": "Who are you?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    }
    assert result.action == "accept"


def test_unimplemented_request_handler_answers_method_not_found() -> None:
    server = package("2025-06-18", "server")
    handlers = server.ServerHandlers()
    context = RequestContext(peer=None, request_id=1)
    with pytest.raises(MethodNotFound) as raised:
        asyncio.run(handlers.call_tool(None, context))
    assert raised.value.method == "tools/call"
    assert raised.value.code == -32601


def test_unhandled_notification_is_ignored() -> None:
    client = package("2025-06-18", "client")
    assert asyncio.run(client.ClientHandlers().on_progress(None, RequestContext(None))) is None


def test_implemented_lists_only_overridden_handlers() -> None:
    server = package("2025-06-18", "server")
    models = package("2025-06-18", "models")
    dispatch = package("2025-06-18", "dispatch")

    class Weather(server.ServerHandlers):  # type: ignore[name-defined,misc]
        async def list_tools(self, params: Any, ctx: Any) -> Any:
            return models.ListToolsResult(tools=[])

    names = tuple(spec.handler_name for spec in dispatch.REQUESTS.values())
    assert Weather.implemented(server.ServerHandlers, names) == frozenset({"list_tools"})


@pytest.mark.parametrize("revision", RELEASED)
def test_every_request_has_a_handler_and_a_send_method_on_the_right_sides(revision: str) -> None:
    dispatch = package(revision, "dispatch")
    client = package(revision, "client")
    server = package(revision, "server")
    receivers = {
        Direction.CLIENT_TO_SERVER: [(server.ServerHandlers, client.Client)],
        Direction.SERVER_TO_CLIENT: [(client.ClientHandlers, server.ClientPeer)],
    }
    receivers[Direction.BOTH] = receivers[Direction.CLIENT_TO_SERVER] + receivers[
        Direction.SERVER_TO_CLIENT
    ]
    # the handshake is the runtime's: the typed Client offers no method for it
    runtimes = {"initialize", "notifications/initialized"}
    for method, spec in dispatch.REQUESTS.items():
        assert spec.method == method
        for handler_class, sender_class in receivers[spec.direction]:
            assert callable(getattr(handler_class, spec.handler_name)), (method, handler_class)
            sends = hasattr(sender_class, spec.handler_name)
            assert sends == (method not in runtimes), (method, sender_class)
    for method, spec in dispatch.NOTIFICATIONS.items():
        assert spec.method == method
        for handler_class, sender_class in receivers[spec.direction]:
            assert callable(getattr(handler_class, "on_" + spec.handler_name))
            sends = hasattr(sender_class, "send_" + spec.handler_name)
            assert sends == (method not in runtimes), (method, sender_class)


@pytest.mark.parametrize("revision", RELEASED)
def test_package_constants_name_the_revision(revision: str) -> None:
    package_init = importlib.import_module(f"mcp_generated.v{revision.replace('-', '_')}")
    assert package_init.PROTOCOL_VERSION == revision
    assert package_init.ERA == ("stateless" if revision == "2026-07-28" else "handshake")
    assert len(package_init.SCHEMA_SHA256) == 64


def test_dispatch_validates_params_and_results_with_the_paired_types() -> None:
    dispatch = package("2026-07-28", "dispatch")
    models = package("2026-07-28", "models")
    call_tool = dispatch.REQUESTS["tools/call"]
    assert call_tool.result_type is models.CallToolResult
    assert call_tool.alternative_result_types == (models.InputRequiredResult,)
    params = call_tool.validate_params(
        {
            "name": "weather",
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }
    )
    assert isinstance(params, models.CallToolRequestParams)
    assert params.meta.protocol_version == "2026-07-28"


def test_importing_a_package_builds_no_model_class_until_one_is_used() -> None:
    """models, dispatch, client and server import lazily: a program pays for what it uses."""
    script = """
import sys
import mcp_generated.v2025_11_25 as package
from mcp_generated.v2025_11_25 import client, dispatch, models, server
prefix = package.__name__ + ".models."
loaded = lambda: sorted(n for n in sys.modules if n.startswith(prefix))
assert loaded() == [], loaded()
dispatch.REQUESTS["tools/call"].validate_params({"name": "weather"})
assert prefix + "call_tool_request_params" in loaded(), loaded()
assert prefix + "list_prompts_result" not in loaded(), loaded()
print(len(loaded()))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert 0 < int(done.stdout) < 20


@pytest.mark.parametrize("revision", RELEASED)
def test_stub_annotations_resolve_at_runtime(revision: str) -> None:
    client = package(revision, "client")
    server = package(revision, "server")
    models = package(revision, "models")
    hints = typing.get_type_hints(client.Client.call_tool)
    assert hints["return"] is models.CallToolResult
    handler_hints = typing.get_type_hints(server.ServerHandlers.call_tool)
    assert handler_hints["params"] is models.CallToolRequestParams
