"""The official MCP client (mcp 2.3.0) against our conformance server, over stdio.

``examples/conformance_server.py`` runs as a subprocess, served by our runtime from the
generated 2025-11-25 package. The SDK client always offers 2025-11-25 in ``initialize``; the
server's ``--protocol`` option pins it to one revision so 2025-03-26 and 2025-06-18 are
negotiated too. Every value is compared exactly, as the SDK parsed it off the wire
(``exclude_unset`` dumps are what was sent).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
]

REPO = Path(__file__).resolve().parent.parent
CONFORMANCE_SERVER = REPO / "examples" / "conformance_server.py"
WEATHER_SERVER = REPO / "examples" / "weather_server.py"
SKILL_FOLDER = REPO / "examples" / "skills" / "pdf-processing"
SKILL_MD_SIZE = (SKILL_FOLDER / "SKILL.md").stat().st_size
FORMS_MD_SIZE = (SKILL_FOLDER / "references" / "FORMS.md").stat().st_size
REVISIONS = ("2025-03-26", "2025-06-18", "2025-11-25")

SERVER_INFO = {"name": "mcp-codegen-conformance-server", "version": "0.1.0"}
INSTRUCTIONS = "Fixture server of the MCP conformance suite, built on mcp-codegen."
CAPABILITIES = {
    "completions": {},
    "logging": {},
    "prompts": {"listChanged": True},
    "resources": {"subscribe": True},
    "tools": {"listChanged": True},
}
IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
IMAGE_BLOCK = {"type": "image", "data": IMAGE, "mimeType": "image/png"}
EMPTY_OBJECT = {"type": "object", "properties": {}}
TOOL_NAMES = [
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_error_handling",
    "test_tool_with_progress",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
    "test_tool_slow",
    "test_tool_fast",
    "test_list_roots",
    "test_send_tool_list_changed",
    "test_update_watched_resource",
    # the 2026-07-28 fixtures (multi round-trip input, listen streams, x-mcp-header)
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "test_header_params",
    # the tasks extension's fixtures (SEP-2663)
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
]
SAMPLED_TEXT = "This is a test response from the client"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


def wire(model: Any) -> Any:
    """What the server sent: the SDK model dumped with wire names and only the fields parsed."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


@asynccontextmanager
async def connect(
    *, revision: str | None = None, server: Path = CONFORMANCE_SERVER, **callbacks: Any
) -> AsyncIterator[ClientSession]:
    """Start a server under the SDK's stdio client and run the SDK's handshake."""
    args = [str(server)] if server != CONFORMANCE_SERVER else [str(server), "--stdio"]
    if revision is not None:
        args += ["--protocol", revision]
    parameters = StdioServerParameters(command=sys.executable, args=args, cwd=str(REPO))
    async with (
        stdio_client(parameters) as (read, write),
        ClientSession(read, write, **callbacks) as session,
    ):
        await session.initialize()
        yield session


async def eventually(condition: Callable[[], bool], timeout: float = 3.0) -> None:
    """Wait until ``condition()`` holds (notifications are handled in their own tasks)."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(0.01)


class Inbox:
    """Collects what the SDK hands its ``message_handler`` and ``logging_callback``."""

    def __init__(self) -> None:
        self.notifications: list[Any] = []
        self.logs: list[dict[str, Any]] = []

    async def message(self, message: Any) -> None:
        self.notifications.append(message)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(wire(params))

    def methods(self) -> list[str]:
        return [n.method for n in self.notifications if not isinstance(n, Exception)]


# -- handshake and revisions ---------------------------------------------------------------


async def test_handshake_reports_server_info_instructions_and_derived_capabilities() -> None:
    async with connect() as session:
        assert session.protocol_version == "2025-11-25"
        assert session.initialize_result is not None
        assert wire(session.initialize_result) == {
            "protocolVersion": "2025-11-25",
            "capabilities": CAPABILITIES,
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }
        assert wire(await session.send_ping()) == {}


@pytest.mark.parametrize("revision", REVISIONS)
async def test_server_pinned_to_one_revision_negotiates_it(revision: str) -> None:
    async with connect(revision=revision) as session:
        assert session.protocol_version == revision
        assert session.initialize_result is not None
        assert wire(session.initialize_result) == {
            "protocolVersion": revision,
            "capabilities": CAPABILITIES,
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }
        listed = await session.list_tools()
        assert [tool.name for tool in listed.tools] == TOOL_NAMES
        result = await session.call_tool("test_simple_text")
        assert wire(result) == {"content": [text("This is a simple text response for testing.")]}
        audio = await session.call_tool("test_audio_content")
        assert wire(audio) == {"content": [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]}


# -- tools ----------------------------------------------------------------------------------


async def test_tools_list_names_descriptions_and_schemas() -> None:
    async with connect() as session:
        listed = await session.list_tools()
    tools = {tool.name: wire(tool) for tool in listed.tools}
    assert list(tools) == TOOL_NAMES
    assert listed.next_cursor is None
    assert all(tool["description"] and tool["inputSchema"]["type"] == "object" for tool in tools.values())
    assert tools["test_simple_text"] == {
        "name": "test_simple_text",
        "description": "Returns a simple text content block",
        "inputSchema": EMPTY_OBJECT,
    }
    assert tools["test_sampling"]["inputSchema"] == {
        "type": "object",
        "properties": {"prompt": {"type": "string"}},
        "required": ["prompt"],
    }
    assert tools["json_schema_2020_12_tool"] == {
        "name": "json_schema_2020_12_tool",
        "description": "Tool with JSON Schema 2020-12 features",
        "inputSchema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                }
            },
            "properties": {
                "name": {"type": "string"},
                "address": {"$ref": "#/$defs/address"},
                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                "phone": {"type": "string"},
                "email": {"type": "string"},
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": False,
        },
    }


TOOL_RESULTS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("test_simple_text", {}, {"content": [text("This is a simple text response for testing.")]}),
    ("test_image_content", {}, {"content": [IMAGE_BLOCK]}),
    ("test_audio_content", {}, {"content": [{"type": "audio", "data": AUDIO, "mimeType": "audio/wav"}]}),
    (
        "test_embedded_resource",
        {},
        {
            "content": [
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://embedded-resource",
                        "mimeType": "text/plain",
                        "text": "This is an embedded resource content.",
                    },
                }
            ]
        },
    ),
    (
        "test_multiple_content_types",
        {},
        {
            "content": [
                text("Multiple content types test:"),
                IMAGE_BLOCK,
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": '{"test":"data","value":123}',
                    },
                },
            ]
        },
    ),
    (
        "test_error_handling",
        {},
        {"content": [text("This tool intentionally returns an error for testing")], "isError": True},
    ),
    (
        "json_schema_2020_12_tool",
        {"name": "Ada", "contactMethod": "email", "email": "ada@example.com"},
        {"content": [text('Received: {"contactMethod": "email", "email": "ada@example.com", "name": "Ada"}')]},
    ),
    ("test_reconnection", {}, {"content": [text("Reconnection test completed")]}),
    ("test_tool_fast", {}, {"content": [text("Fast tool completed")]}),
    ("test_tool_slow", {"durationMs": 10}, {"content": [text("Slept 10 ms")]}),
]


async def test_every_tool_content_type_arrives_exactly() -> None:
    async with connect() as session:
        for name, arguments, expected in TOOL_RESULTS:
            result = await session.call_tool(name, arguments)
            assert wire(result) == expected, name


async def test_unknown_tool_is_a_protocol_error() -> None:
    async with connect() as session:
        with pytest.raises(MCPError) as raised:
            await session.call_tool("no_such_tool")
    assert raised.value.error.code == -32602
    assert raised.value.error.message == "Unknown tool: no_such_tool"


# -- resources ------------------------------------------------------------------------------


async def test_resources_list_read_and_templates() -> None:
    async with connect() as session:
        listed = await session.list_resources()
        assert [wire(r) for r in listed.resources] == [
            {
                "uri": "test://static-text",
                "name": "static-text",
                "description": "A static text resource",
                "mimeType": "text/plain",
            },
            {
                "uri": "test://static-binary",
                "name": "static-binary",
                "description": "A static binary resource (a 1x1 PNG)",
                "mimeType": "image/png",
            },
            {
                "uri": "test://watched-resource",
                "name": "watched-resource",
                "description": "A resource to subscribe to",
                "mimeType": "text/plain",
            },
            {  # the skill (SEP-2640): its files are resources in every era
                "uri": "skill://pdf-processing/SKILL.md",
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "mimeType": "text/markdown",
                "size": SKILL_MD_SIZE,
            },
            {
                "uri": "skill://pdf-processing/references/FORMS.md",
                "name": "references/FORMS.md",
                "description": "A file of the skill 'pdf-processing'",
                "mimeType": "text/markdown",
                "size": FORMS_MD_SIZE,
            },
        ]
        templates = await session.list_resource_templates()
        assert [wire(t) for t in templates.resource_templates] == [
            {
                "uriTemplate": "test://template/{id}/data",
                "name": "template",
                "description": "A resource template with an id parameter",
                "mimeType": "application/json",
            }
        ]
        static_text = await session.read_resource("test://static-text")
        assert wire(static_text) == {
            "contents": [
                {
                    "uri": "test://static-text",
                    "mimeType": "text/plain",
                    "text": "This is the content of the static text resource.",
                }
            ]
        }
        binary = await session.read_resource("test://static-binary")
        assert wire(binary) == {
            "contents": [{"uri": "test://static-binary", "mimeType": "image/png", "blob": IMAGE}]
        }
        templated = await session.read_resource("test://template/123/data")
        assert wire(templated) == {
            "contents": [
                {
                    "uri": "test://template/123/data",
                    "mimeType": "application/json",
                    "text": '{"id": "123", "templateTest": true, "data": "Data for ID: 123"}',
                }
            ]
        }
        with pytest.raises(MCPError) as raised:
            await session.read_resource("test://missing")
        assert (raised.value.error.code, raised.value.error.message) == (
            -32002,
            "Resource not found: test://missing",
        )
        assert raised.value.error.data == {"uri": "test://missing"}


async def test_subscribe_then_updates_arrive_until_unsubscribe() -> None:
    inbox = Inbox()
    async with connect(message_handler=inbox.message) as session:
        assert wire(await session.subscribe_resource("test://watched-resource")) == {}
        await session.call_tool("test_update_watched_resource", {"content": "first update"})
        await eventually(lambda: "notifications/resources/updated" in inbox.methods())
        updates = [n for n in inbox.notifications if n.method == "notifications/resources/updated"]
        assert [wire(n.params) for n in updates] == [{"uri": "test://watched-resource"}]
        read = await session.read_resource("test://watched-resource")
        assert [wire(c) for c in read.contents] == [
            {"uri": "test://watched-resource", "mimeType": "text/plain", "text": "first update"}
        ]

        assert wire(await session.unsubscribe_resource("test://watched-resource")) == {}
        await session.call_tool("test_update_watched_resource", {"content": "second update"})
        await session.send_ping()  # anything the server sent before this answer has arrived
        await anyio.sleep(0.1)
        assert inbox.methods().count("notifications/resources/updated") == 1


# -- prompts and completion -----------------------------------------------------------------


async def test_prompts_list_and_get() -> None:
    async with connect() as session:
        listed = await session.list_prompts()
        assert [wire(p) for p in listed.prompts] == [
            {"name": "test_simple_prompt", "description": "A simple prompt without arguments"},
            {
                "name": "test_prompt_with_arguments",
                "description": "A prompt with required arguments",
                "arguments": [
                    {"name": "arg1", "description": "First test argument", "required": True},
                    {"name": "arg2", "description": "Second test argument", "required": True},
                ],
            },
            {
                "name": "test_prompt_with_embedded_resource",
                "description": "A prompt that includes an embedded resource",
                "arguments": [
                    {"name": "resourceUri", "description": "URI of the resource to embed", "required": True}
                ],
            },
            {"name": "test_prompt_with_image", "description": "A prompt that includes image content"},
            {
                "name": "test_input_required_result_prompt",
                "description": "Asks the user for context first (elicitation), then builds the prompt",
            },
        ]
        simple = await session.get_prompt("test_simple_prompt")
        assert wire(simple) == {
            "messages": [{"role": "user", "content": text("This is a simple prompt for testing.")}]
        }
        with_args = await session.get_prompt(
            "test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"}
        )
        assert wire(with_args) == {
            "messages": [
                {"role": "user", "content": text("Prompt with arguments: arg1='hello', arg2='world'")}
            ]
        }
        embedded = await session.get_prompt(
            "test_prompt_with_embedded_resource", {"resourceUri": "test://example"}
        )
        assert wire(embedded) == {
            "messages": [
                {
                    "role": "user",
                    "content": {
                        "type": "resource",
                        "resource": {
                            "uri": "test://example",
                            "mimeType": "text/plain",
                            "text": "Embedded resource content for testing.",
                        },
                    },
                },
                {"role": "user", "content": text("Please process the embedded resource above.")},
            ]
        }
        image = await session.get_prompt("test_prompt_with_image")
        assert wire(image) == {
            "messages": [
                {"role": "user", "content": IMAGE_BLOCK},
                {"role": "user", "content": text("Please analyze the image above.")},
            ]
        }
        with pytest.raises(MCPError) as raised:
            await session.get_prompt("test_prompt_with_arguments", {"arg1": "only one"})
        assert (raised.value.error.code, raised.value.error.message) == (
            -32602,
            "Missing required arguments: arg2",
        )


@pytest.mark.parametrize("revision", REVISIONS)
async def test_completion_of_a_prompt_argument(revision: str) -> None:
    prompt = types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments")
    async with connect(revision=revision) as session:
        everything = await session.complete(prompt, {"name": "arg1", "value": ""})
        narrowed = await session.complete(prompt, {"name": "arg1", "value": "b"})
        other = await session.complete(prompt, {"name": "arg2", "value": "b"})
    assert wire(everything) == {
        "completion": {"values": ["alpha", "beta", "gamma"], "total": 3, "hasMore": False}
    }
    assert wire(narrowed) == {"completion": {"values": ["beta"], "total": 1, "hasMore": False}}
    assert wire(other) == {"completion": {"values": [], "total": 0, "hasMore": False}}


# -- logging and progress -------------------------------------------------------------------


async def test_set_level_then_tool_logs_reach_the_logging_callback() -> None:
    inbox = Inbox()
    async with connect(logging_callback=inbox.log) as session:
        assert wire(await session.set_logging_level("debug")) == {}
        result = await session.call_tool("test_tool_with_logging")
        assert wire(result) == {"content": [text("Tool with logging executed successfully")]}
        await eventually(lambda: len(inbox.logs) >= 3)
        assert inbox.logs == [
            {"level": "info", "data": "Tool execution started"},
            {"level": "info", "data": "Tool processing data"},
            {"level": "info", "data": "Tool execution completed"},
        ]

        assert wire(await session.set_logging_level("warning")) == {}
        await session.call_tool("test_tool_with_logging")
        await anyio.sleep(0.1)
        assert len(inbox.logs) == 3  # info is below warning: nothing more was sent


async def test_invalid_log_level_is_rejected() -> None:
    async with connect() as session:
        with pytest.raises(MCPError) as raised:
            await session.send_request(
                types.SetLevelRequest(params=types.SetLevelRequestParams.model_construct(level="loud")),
                types.EmptyResult,
            )
    assert raised.value.error.code == -32602


async def test_progress_notifications_reach_the_progress_callback() -> None:
    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with connect() as session:
        result = await session.call_tool("test_tool_with_progress", progress_callback=on_progress)
        await eventually(lambda: len(updates) >= 3)
    assert updates == [
        (0, 100, "Completed step 0 of 100"),
        (50, 100, "Completed step 50 of 100"),
        (100, 100, "Completed step 100 of 100"),
    ]
    assert len(result.content) == 1
    assert re.fullmatch(r"Progress reported for token \S+", wire(result.content[0])["text"])


# -- server -> client requests --------------------------------------------------------------


@pytest.mark.parametrize("revision", REVISIONS)
async def test_sampling_request_is_answered_by_the_sdk_callback(revision: str) -> None:
    seen: list[dict[str, Any]] = []

    async def sample(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        seen.append(wire(params))
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED_TEXT),
            model="test-model",
            stop_reason="endTurn",
        )

    async with connect(revision=revision, sampling_callback=sample) as session:
        result = await session.call_tool("test_sampling", {"prompt": "Test prompt for sampling"})
    assert wire(result) == {"content": [text(f"LLM response: {SAMPLED_TEXT}")]}
    assert seen == [
        {
            "messages": [{"role": "user", "content": text("Test prompt for sampling")}],
            "maxTokens": 100,
        }
    ]


USER_FORM = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


@pytest.mark.parametrize("revision", ["2025-06-18", "2025-11-25"])
async def test_elicitation_request_is_answered_by_the_sdk_callback(revision: str) -> None:
    seen: list[dict[str, Any]] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(wire(params))
        return types.ElicitResult(
            action="accept", content={"username": "testuser", "email": "test@example.com"}
        )

    async with connect(revision=revision, elicitation_callback=elicit) as session:
        result = await session.call_tool("test_elicitation", {"message": "Who are you?"})
    expected = 'User response: action=accept, content={"username": "testuser", "email": "test@example.com"}'
    assert wire(result) == {"content": [text(expected)]}
    assert seen == [{"message": "Who are you?", "requestedSchema": USER_FORM}]


async def test_declined_elicitation_has_no_content() -> None:
    async def decline(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with connect(elicitation_callback=decline) as session:
        result = await session.call_tool("test_elicitation", {"message": "Who are you?"})
    assert wire(result) == {"content": [text("User response: action=decline, content={}")]}


async def test_elicitation_schemas_with_defaults_and_enums_reach_the_client_intact() -> None:
    seen: list[dict[str, Any]] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(wire(params))
        return types.ElicitResult(action="accept", content={"name": "Jane Smith", "age": 25})

    async with connect(elicitation_callback=elicit) as session:
        defaults = await session.call_tool("test_elicitation_sep1034_defaults")
        enums = await session.call_tool("test_elicitation_sep1330_enums")
    assert seen[0] == {
        "message": "Please provide user information",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verification status", "default": True},
            },
        },
    }
    titled = [
        {"const": "value1", "title": "First Option"},
        {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"},
    ]
    options = ["option1", "option2", "option3"]
    assert seen[1] == {
        "message": "Please select values using different enum schema types",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": options},
                "titledSingle": {"type": "string", "oneOf": titled},
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {"type": "array", "items": {"type": "string", "enum": options}},
                "titledMulti": {"type": "array", "items": {"anyOf": titled}},
            },
        },
    }
    answer = 'action=accept, content={"name": "Jane Smith", "age": 25}'
    assert wire(defaults) == {"content": [text(f"Elicitation completed: {answer}")]}
    assert wire(enums) == {"content": [text(f"Elicitation completed: {answer}")]}


async def test_elicitation_is_refused_locally_when_the_revision_has_none() -> None:
    calls: list[Any] = []

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        calls.append(params)
        return types.ElicitResult(action="cancel")

    async with connect(revision="2025-03-26", elicitation_callback=elicit) as session:
        result = await session.call_tool("test_elicitation", {"message": "Who are you?"})
    assert calls == []
    assert result.is_error is True
    assert "elicitation/create" in wire(result)["content"][0]["text"]


async def test_server_requests_are_refused_locally_without_the_client_capability() -> None:
    async with connect() as session:  # no sampling, elicitation or roots callbacks
        for name, arguments, method, capability in [
            ("test_sampling", {"prompt": "hi"}, "sampling/createMessage", "sampling"),
            ("test_elicitation", {"message": "hi"}, "elicitation/create", "elicitation"),
            ("test_list_roots", {}, "roots/list", "roots"),
        ]:
            result = await session.call_tool(name, arguments)
            assert result.is_error is True, name
            message = wire(result)["content"][0]["text"]
            assert method in message and capability in message, message


async def test_roots_are_listed_through_the_sdk_callback() -> None:
    async def roots(context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(
            roots=[
                types.Root.model_validate({"uri": "file:///workspace/project", "name": "project"}),
                types.Root.model_validate({"uri": "file:///tmp/scratch"}),
            ]
        )

    async with connect(list_roots_callback=roots) as session:
        result = await session.call_tool("test_list_roots")
    assert wire(result) == {
        "content": [
            text(json.dumps({"uri": "file:///workspace/project", "name": "project"})),
            text(json.dumps({"uri": "file:///tmp/scratch", "name": None})),
        ]
    }


# -- cancellation and list_changed ----------------------------------------------------------


async def test_sdk_timeout_cancels_our_running_handler() -> None:
    inbox = Inbox()
    async with connect(logging_callback=inbox.log) as session:
        await session.set_logging_level("debug")
        with pytest.raises(MCPError):
            await session.call_tool("test_tool_slow", {"durationMs": 5000}, read_timeout_seconds=0.3)
        # The SDK sent notifications/cancelled; our handler saw CancelledError and said so.
        await eventually(lambda: len(inbox.logs) >= 1)
        assert len(inbox.logs) == 1
        assert inbox.logs[0]["level"] == "notice"
        assert re.fullmatch(r"test_tool_slow cancelled \(request \S+\)", inbox.logs[0]["data"])
        # The connection is still good.
        fast = await session.call_tool("test_tool_fast")
        assert wire(fast) == {"content": [text("Fast tool completed")]}


async def test_tool_list_changed_notification_reaches_the_message_handler() -> None:
    inbox = Inbox()
    async with connect(message_handler=inbox.message) as session:
        result = await session.call_tool("test_send_tool_list_changed")
        assert wire(result) == {"content": [text("Sent notifications/tools/list_changed")]}
        await eventually(lambda: "notifications/tools/list_changed" in inbox.methods())
        assert inbox.methods() == ["notifications/tools/list_changed"]


# -- the example weather server (examples/weather_server.py) ---------------------------------


async def test_weather_demo_server() -> None:
    """The demo is one typed function on ``McpApp`` (issue 18): the schemas come from its
    signature, its str result is wrapped as structured output beside the text; an app
    declares every list it may serve (tools, resources, prompts may be added at run time)."""
    async with connect(server=WEATHER_SERVER) as session:
        assert session.initialize_result is not None
        assert wire(session.initialize_result) == {
            "protocolVersion": "2025-11-25",
            "capabilities": {
                "completions": {},
                "logging": {},
                "prompts": {"listChanged": True},
                "resources": {"listChanged": True, "subscribe": True},
                "tools": {"listChanged": True},
            },
            "serverInfo": {"name": "weather", "version": "1.0.0"},
        }
        listed = await session.list_tools()
        assert [wire(t) for t in listed.tools] == [
            {
                "name": "weather",
                "description": "Today's weather in a city",
                "inputSchema": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "The city's name, e.g. Oslo."}},
                    "required": ["city"],
                    "additionalProperties": False,
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"result": {"type": "string"}},
                    "required": ["result"],
                    "x-typedmcp-wrapped": True,
                },
            }
        ]
        result = await session.call_tool("weather", {"city": "Paris"})
    assert wire(result) == {"content": [text("Sunny in Paris")], "structuredContent": {"result": "Sunny in Paris"}}
