"""The fixture server of the official MCP conformance suite, on the generated 2025-11-25 package.

Every tool, resource and prompt that ``@modelcontextprotocol/conformance`` calls by name is
here, plus a few extras the interop tests use (``test_tool_slow``, ``test_tool_fast``,
``test_list_roots``, ``test_send_tool_list_changed``, ``test_update_watched_resource``,
``test_header_params``).

It also reads as a demo of the runtime: one ``ServerHandlers`` subclass with one typed
``async`` method per request it serves. Capabilities are derived from the methods it
overrides (tools, resources with subscribe, prompts, completions; logging is built in),
and ``ctx.peer`` calls the client back (sampling, elicitation, roots, notifications).

The same handlers serve both eras. In a handshake-era session (2025-11-25 and earlier)
``ctx.peer.elicit(...)`` is a live request to the client; in a stateless 2026-07-28 request
the runtime turns it into an ``InputRequiredResult`` and re-runs the handler when the client
retries with its ``inputResponses`` (``input_key`` names the entry). Changes are published
once on the server-wide ``ChangeFeed`` (``feed.tools_changed()``,
``feed.resource_updated(uri)``); the runtime delivers them to every handshake session that
declared the capability (``resources/updated``: that subscribed to the resource) and to every
``subscriptions/listen`` stream that opted in.

A tool failure the model should read is raised as ``ToolError`` (answered ``isError: true``
with its message); any other exception is a bug, logged by the runtime and answered -32603
with nothing of it.

    python examples/conformance_server.py --stdio                       # stdin/stdout
    python examples/conformance_server.py --stdio --protocol 2025-06-18  # one revision only
    python examples/conformance_server.py --port 3001                   # http://127.0.0.1:3001/mcp

With ``MCP_REDIS_URL`` set, several of these processes (behind one load balancer) share their
state in Redis: changes, tasks, resumable streams, sessions (see ``docs/how-to/workers.md``,
"Several workers on Redis").
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
from pathlib import Path
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import Any

from pydantic import ValidationError

from typedmcp import (
    SKILLS_EXTENSION,
    SkillCatalog,
    load_skill,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    TASKS_EXTENSION,
    CapabilityError,
    ChangeFeed,
    RequestContext,
    RpcError,
    ToolError,
    close_sse_stream,
    http_app,
    input_key,
    resumed_from_state,
    run_as_task,
    run_stdio,
)
from mcp_generated import REVISIONS
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

Ctx = RequestContext[ClientPeer]
Content = (
    models.TextContent
    | models.ImageContent
    | models.AudioContent
    | models.ResourceLink
    | models.EmbeddedResource
)
Output = list[Content] | str | models.CallToolResult
ToolMethod = Callable[["ConformanceServer", dict[str, Any], Ctx], Awaitable[Output]]

SERVER_INFO = {"name": "mcp-codegen-conformance-server", "version": "0.1.0"}
INSTRUCTIONS = "Fixture server of the MCP conformance suite, built on mcp-codegen."
RESOURCE_NOT_FOUND = -32002  # MCP's error code for an unknown resource URI

TEST_IMAGE_BASE64 = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
TEST_AUDIO_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="  # a tiny WAV
STATIC_TEXT = "This is the content of the static text resource."
WATCHED_URI = "test://watched-resource"
TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"
ARG1_COMPLETIONS = ("alpha", "beta", "gamma")
STRING = {"type": "string"}
#: The tools that run as tasks of the tasks extension (SEP-2663) when a 2026-07-28 client
#: declares it: "optional" ones run in the request otherwise, "required" ones are refused.
TASK_TOOLS = {
    "slow_compute": "optional",
    "failing_job": "required",
    "protocol_error_job": "optional",
    "confirm_delete": "optional",
    "multi_input": "optional",
}


def text(value: str) -> models.TextContent:
    """A text content block."""
    return models.TextContent(type="text", text=value)


def image() -> models.ImageContent:
    """The test image (a 1x1 PNG) as a content block."""
    return models.ImageContent(type="image", data=TEST_IMAGE_BASE64, mime_type="image/png")


def embedded(uri: str, mime_type: str, body: str) -> models.EmbeddedResource:
    """A text resource embedded in a content block."""
    contents = models.TextResourceContents(uri=uri, mime_type=mime_type, text=body)
    return models.EmbeddedResource(type="resource", resource=contents)


def user(content: Content) -> models.PromptMessage:
    """A prompt message from the user."""
    return models.PromptMessage(role="user", content=content)


def unshowable_fields(error: ValidationError) -> list[str]:
    """The form fields named in the runtime's refusal of an ``elicitation/create`` whose
    ``requestedSchema`` the negotiated revision cannot express."""
    return sorted(
        {
            str(detail["loc"][2])
            for detail in error.errors()
            if detail["loc"][:2] == ("requestedSchema", "properties") and len(detail["loc"]) > 2
        }
    )


def answered(result: models.ElicitResult, field: str) -> Any:
    """A field of an accepted elicitation, or how the user answered (decline, cancel)."""
    if result.action != "accept" or not result.content:
        return f"<{result.action}>"
    return result.content.get(field)


# -- tools are methods registered by a decorator ------------------------------------------

TOOLS: dict[str, tuple[models.Tool, ToolMethod]] = {}


def tool(
    description: str,
    properties: dict[str, Any] | None = None,
    required: Sequence[str] = (),
    schema: dict[str, Any] | None = None,
) -> Callable[[ToolMethod], ToolMethod]:
    """Register a method as a tool named after it; ``schema`` replaces the object schema."""

    def register(method: ToolMethod) -> ToolMethod:
        input_schema = dict(schema or {"type": "object", "properties": properties or {}})
        if required:
            input_schema["required"] = list(required)
        name = method.__name__
        typed_schema = models.ToolInputSchema.model_validate(input_schema)
        definition = models.Tool(name=name, description=description, input_schema=typed_schema)
        TOOLS[name] = (definition, method)
        return method

    return register


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": STRING, "city": STRING},
        }
    },
    "properties": {
        "name": STRING,
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": STRING,
        "email": STRING,
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

SEP1034_DEFAULTS = {
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
}

_OPTIONS = ["option1", "option2", "option3"]
_TITLED = [
    {"const": "value1", "title": "First Option"},
    {"const": "value2", "title": "Second Option"},
    {"const": "value3", "title": "Third Option"},
]
SEP1330_ENUMS = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": _OPTIONS},
        "titledSingle": {"type": "string", "oneOf": _TITLED},
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": _OPTIONS}},
        "titledMulti": {"type": "array", "items": {"anyOf": _TITLED}},
    },
}

NAME_FORM = {"type": "object", "properties": {"name": STRING}, "required": ["name"]}
COLOR_FORM = {"type": "object", "properties": {"color": STRING}, "required": ["color"]}
CONTEXT_FORM = {"type": "object", "properties": {"context": STRING}, "required": ["context"]}
CONFIRM_DELETE_FORM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
CONFIRM_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
#: A tool whose arguments clients mirror as Mcp-Param-* headers (2026-07-28, x-mcp-header).
HEADER_PARAMS = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "description": "Where to run", "x-mcp-header": "Region"},
        "priority": {"type": "integer", "description": "How urgent", "x-mcp-header": "Priority"},
        "note": {"type": "string", "description": "Not mirrored in a header"},
    },
    "required": ["region"],
}

USER_FORM = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

# -- resources and prompts ----------------------------------------------------------------

SKILL_FOLDER = Path(__file__).parent / "skills" / "pdf-processing"


def skill_resources(catalog: SkillCatalog) -> list[models.Resource]:
    """The skills' files as resources, as ``McpApp.add_skill_directory`` lists them: SKILL.md
    named and described from its frontmatter, the others by their path in the skill."""
    listed = []
    for skill in catalog.skills.values():
        for file in skill.files:
            manifest = file.uri == skill.uri
            listed.append(models.Resource(
                uri=file.uri, mime_type=file.mime_type, size=file.size,
                name=skill.name if manifest else file.uri.removeprefix(f"skill://{skill.name}/"),
                description=skill.frontmatter["description"] if manifest else f"A file of the skill {skill.name!r}",
            ))
    return listed


RESOURCES = [
    models.Resource(
        uri="test://static-text",
        name="static-text",
        description="A static text resource",
        mime_type="text/plain",
    ),
    models.Resource(
        uri="test://static-binary",
        name="static-binary",
        description="A static binary resource (a 1x1 PNG)",
        mime_type="image/png",
    ),
    models.Resource(
        uri=WATCHED_URI,
        name="watched-resource",
        description="A resource to subscribe to",
        mime_type="text/plain",
    ),
]
TEMPLATE = models.ResourceTemplate(
    uri_template=f"{TEMPLATE_PREFIX}{{id}}{TEMPLATE_SUFFIX}",
    name="template",
    description="A resource template with an id parameter",
    mime_type="application/json",
)


def required_argument(name: str, description: str) -> models.PromptArgument:
    """A prompt argument the client must give."""
    return models.PromptArgument(name=name, description=description, required=True)


PROMPTS = [
    models.Prompt(name="test_simple_prompt", description="A simple prompt without arguments"),
    models.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with required arguments",
        arguments=[
            required_argument("arg1", "First test argument"),
            required_argument("arg2", "Second test argument"),
        ],
    ),
    models.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that includes an embedded resource",
        arguments=[required_argument("resourceUri", "URI of the resource to embed")],
    ),
    models.Prompt(name="test_prompt_with_image", description="A prompt that includes image content"),
    models.Prompt(
        name="test_input_required_result_prompt",
        description="Asks the user for context first (elicitation), then builds the prompt",
    ),
]
#: Listed only while switched on by test_trigger_tool_change / test_trigger_prompt_change.
DYNAMIC_TOOL = models.Tool(
    name="test_dynamic_tool",
    description="Appears and disappears with test_trigger_tool_change",
    input_schema=models.ToolInputSchema(type="object", properties={}),
)
DYNAMIC_PROMPT = models.Prompt(
    name="test_dynamic_prompt", description="Appears and disappears with test_trigger_prompt_change"
)


class ConformanceServer(ServerHandlers):
    """Serves the fixture tools, resources, prompts and completions."""

    def __init__(self, changes: ChangeFeed | None = None) -> None:
        self.watched_content = "Watched resource content"
        self.changes = changes if changes is not None else ChangeFeed()  # serve with changes=
        self.dynamic_tool = False
        self.dynamic_prompt = False
        #: the skills extension (SEP-2640): the runtime answers skills/list, skills/get and
        #: resources/directory/read from it; its files are listed and read below
        self.skill_catalog = SkillCatalog([load_skill(SKILL_FOLDER)])

    # -- tools/list and tools/call -----------------------------------------------------------

    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListToolsResult:
        tools = [definition for definition, _ in TOOLS.values()]
        return models.ListToolsResult(tools=tools + ([DYNAMIC_TOOL] if self.dynamic_tool else []))

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: Ctx
    ) -> models.CallToolResult:
        """Run a tool. Its ``ToolError`` is answered ``isError: true`` (by the runtime), and so
        is a client that lacks a capability the tool needs (handshake era; in 2026-07-28 the
        runtime answers -32021 itself). Any other exception is a bug: logged, and -32603."""
        if params.name == DYNAMIC_TOOL.name and self.dynamic_tool:
            return models.CallToolResult(content=[text("The dynamic tool is here")])
        entry = TOOLS.get(params.name)
        if entry is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        _, run = entry

        async def work() -> models.CallToolResult:
            try:
                output = await run(self, params.arguments or {}, ctx)
            except CapabilityError as error:  # e.g. sampling asked of a client that cannot sample
                raise ToolError(str(error)) from None
            if isinstance(output, models.CallToolResult):
                return output
            return models.CallToolResult(content=[text(output)] if isinstance(output, str) else output)

        support = TASK_TOOLS.get(params.name)
        if support is None:
            return await work()
        # a 2026-07-28 client that declared the tasks extension gets a task at once
        return await run_as_task(work, required=support == "required")

    # -- the tools ---------------------------------------------------------------------------

    @tool("Returns a simple text content block")
    async def test_simple_text(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return "This is a simple text response for testing."

    @tool("Returns an image content block (a 1x1 PNG)")
    async def test_image_content(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return [image()]

    @tool("Returns an audio content block (a tiny WAV)")
    async def test_audio_content(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return [models.AudioContent(type="audio", data=TEST_AUDIO_BASE64, mime_type="audio/wav")]

    @tool("Returns an embedded text resource")
    async def test_embedded_resource(self, args: dict[str, Any], ctx: Ctx) -> Output:
        body = "This is an embedded resource content."
        return [embedded("test://embedded-resource", "text/plain", body)]

    @tool("Returns text, image and resource content blocks")
    async def test_multiple_content_types(self, args: dict[str, Any], ctx: Ctx) -> Output:
        body = '{"test":"data","value":123}'
        return [
            text("Multiple content types test:"),
            image(),
            embedded("test://mixed-content-resource", "application/json", body),
        ]

    @tool("Sends three log messages while it runs")
    async def test_tool_with_logging(self, args: dict[str, Any], ctx: Ctx) -> Output:
        await ctx.log("info", "Tool execution started")
        await asyncio.sleep(0.05)
        await ctx.log("info", "Tool processing data")
        await asyncio.sleep(0.05)
        await ctx.log("info", "Tool execution completed")
        return "Tool with logging executed successfully"

    @tool("Always fails: the result has isError true")
    async def test_error_handling(self, args: dict[str, Any], ctx: Ctx) -> Output:
        raise ToolError("This tool intentionally returns an error for testing")

    @tool("Reports progress 0, 50 and 100 of 100 for the request's progress token")
    async def test_tool_with_progress(self, args: dict[str, Any], ctx: Ctx) -> Output:
        for step in (0, 50, 100):
            if step:
                await asyncio.sleep(0.05)
            await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        return f"Progress reported for token {ctx.progress_token!r}"

    @tool("Asks the client's LLM (sampling/createMessage)", {"prompt": STRING}, ["prompt"])
    async def test_sampling(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return f"LLM response: {await self.sample(ctx, str(args['prompt']), 100)}"

    @tool("Asks the user for a username and an email", {"message": STRING}, ["message"])
    async def test_elicitation(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return await self.ask(ctx, str(args["message"]), USER_FORM, "User response")

    @tool("Elicits a form whose fields all have defaults (SEP-1034)")
    async def test_elicitation_sep1034_defaults(self, args: dict[str, Any], ctx: Ctx) -> Output:
        message = "Please provide user information"
        return await self.ask(ctx, message, SEP1034_DEFAULTS, "Elicitation completed")

    @tool("Elicits the five enum shapes of SEP-1330")
    async def test_elicitation_sep1330_enums(self, args: dict[str, Any], ctx: Ctx) -> Output:
        message = "Please select values using different enum schema types"
        return await self.ask(ctx, message, SEP1330_ENUMS, "Elicitation completed")

    @tool("Tool with JSON Schema 2020-12 features", schema=JSON_SCHEMA_2020_12)
    async def json_schema_2020_12_tool(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return f"Received: {json.dumps(args, sort_keys=True)}"

    @tool("Resumable SSE stream test (SEP-1699): drops the SSE connection mid-call, then answers "
          "on the resumed stream; over stdio it just answers")
    async def test_reconnection(self, args: dict[str, Any], ctx: Ctx) -> Output:
        if close_sse_stream():  # HTTP, 2025-11-25 or later: the client resumes with GET
            await asyncio.sleep(0.2)
        return "Reconnection test completed"

    @tool("Sleeps durationMs milliseconds; logs a notice when cancelled", {"durationMs": {"type": "number"}})
    async def test_tool_slow(self, args: dict[str, Any], ctx: Ctx) -> Output:
        milliseconds = float(args.get("durationMs", 1000))
        try:
            await asyncio.sleep(milliseconds / 1000)
        except asyncio.CancelledError:
            await ctx.log("notice", f"test_tool_slow cancelled (request {ctx.request_id!r})")
            raise
        return f"Slept {milliseconds:g} ms"

    @tool("Answers at once")
    async def test_tool_fast(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return "Fast tool completed"

    @tool("Lists the client's roots (roots/list), one JSON text block per root")
    async def test_list_roots(self, args: dict[str, Any], ctx: Ctx) -> Output:
        result = await ctx.peer.list_roots()
        return [text(json.dumps({"uri": root.uri, "name": root.name})) for root in result.roots]

    @tool("Sends notifications/tools/list_changed")
    async def test_send_tool_list_changed(self, args: dict[str, Any], ctx: Ctx) -> Output:
        await ctx.peer.send_tool_list_changed()
        return "Sent notifications/tools/list_changed"

    @tool("Replaces the watched resource's text; subscribers hear of it", {"content": STRING}, ["content"])
    async def test_update_watched_resource(self, args: dict[str, Any], ctx: Ctx) -> Output:
        self.watched_content = str(args["content"])
        # Published once: the runtime tells each handshake session that subscribed to it
        # (resources/subscribe) and each 2026-07-28 listen stream that named it.
        self.changes.resource_updated(WATCHED_URI)
        return "Watched resource updated"

    @tool("Asks the user's name (input key user_name) and greets them")
    async def test_input_required_result_elicitation(self, args: dict[str, Any], ctx: Ctx) -> Output:
        answer = await input_key("user_name", self.form(ctx, "What is your name?", NAME_FORM))
        return f"Hello, {answered(answer, 'name')}!"

    @tool("Asks the client's LLM for the capital of France (input key capital_question)")
    async def test_input_required_result_sampling(self, args: dict[str, Any], ctx: Ctx) -> Output:
        reply = await input_key("capital_question", self.sample(ctx, "What is the capital of France?", 100))
        return f"LLM response: {reply}"

    @tool("Lists the client's roots (input key client_roots)")
    async def test_input_required_result_list_roots(self, args: dict[str, Any], ctx: Ctx) -> Output:
        result = await input_key("client_roots", ctx.peer.list_roots())
        return "Client roots: " + ", ".join(f"{root.uri} ({root.name})" for root in result.roots)

    @tool("Asks for a confirmation; says state-ok when the retry's requestState passed its check")
    async def test_input_required_result_request_state(self, args: dict[str, Any], ctx: Ctx) -> Output:
        answer = await input_key("confirm", self.form(ctx, "Please confirm", CONFIRM_FORM))
        state = "state-ok" if resumed_from_state() else "no requestState"
        return f"Confirmed: ok={answered(answer, 'ok')}; {state}"

    @tool("Asks for a name, a greeting from the LLM and the roots, all in one round")
    async def test_input_required_result_multiple_inputs(self, args: dict[str, Any], ctx: Ctx) -> Output:
        name, greeting, roots = await asyncio.gather(
            input_key("user_name", self.form(ctx, "What is your name?", NAME_FORM)),
            input_key("greeting", self.sample(ctx, "Generate a greeting", 50)),
            input_key("client_roots", ctx.peer.list_roots()),
        )
        uris = ", ".join(root.uri for root in roots.roots)
        return f"{greeting} {answered(name, 'name')} (roots: {uris})"

    @tool("Asks for a name, then (next round) for a favourite colour")
    async def test_input_required_result_multi_round(self, args: dict[str, Any], ctx: Ctx) -> Output:
        name = await input_key("step1", self.form(ctx, "Step 1: What is your name?", NAME_FORM))
        message = "Step 2: What is your favorite color?"
        color = await input_key("step2", self.form(ctx, message, COLOR_FORM))
        return f"{answered(name, 'name')} likes {answered(color, 'color')}"

    @tool("Asks for a confirmation; a retry whose requestState was altered is rejected")
    async def test_input_required_result_tampered_state(self, args: dict[str, Any], ctx: Ctx) -> Output:
        answer = await input_key("confirm", self.form(ctx, "Please confirm", CONFIRM_FORM))
        return f"Confirmed: ok={answered(answer, 'ok')}"

    @tool("Asks only for what the client declared: elicitation and/or sampling")
    async def test_input_required_result_capabilities(self, args: dict[str, Any], ctx: Ctx) -> Output:
        declared = ctx.peer.session.peer_capabilities
        calls: list[Awaitable[Any]] = []
        if "elicitation" in declared:
            calls.append(input_key("user_name", self.form(ctx, "What is your name?", NAME_FORM)))
        if "sampling" in declared:
            calls.append(input_key("greeting", self.sample(ctx, "Generate a greeting", 50)))
        if not calls:
            return "The client declared neither elicitation nor sampling: nothing to ask"
        answers = await asyncio.gather(*calls)
        return f"Got {len(answers)} answer(s)"

    @tool("Needs the client's sampling capability (asks its LLM); without it: -32021")
    async def test_missing_capability(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return f"LLM response: {await self.sample(ctx, 'Say hello', 20)}"

    @tool("Asks the user to confirm before it answers (elicitation)")
    async def test_streaming_elicitation(self, args: dict[str, Any], ctx: Ctx) -> Output:
        answer = await self.form(ctx, "Please confirm to continue", CONFIRM_FORM)
        return f"Confirmed: ok={answered(answer, 'ok')}"

    @tool("Logs at debug, info, warning and error (sent only at or above the client's level)")
    async def test_logging_tool(self, args: dict[str, Any], ctx: Ctx) -> Output:
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, f"test_logging_tool: a {level} message", "conformance")
        return "Logged 4 messages"

    @tool("Shows or hides test_dynamic_tool; tools list_changed goes to every listener")
    async def test_trigger_tool_change(self, args: dict[str, Any], ctx: Ctx) -> Output:
        self.dynamic_tool = not self.dynamic_tool
        self.changes.tools_changed()
        return f"{DYNAMIC_TOOL.name} is {'listed' if self.dynamic_tool else 'hidden'} now"

    @tool("Shows or hides test_dynamic_prompt; prompts list_changed goes to every listener")
    async def test_trigger_prompt_change(self, args: dict[str, Any], ctx: Ctx) -> Output:
        self.dynamic_prompt = not self.dynamic_prompt
        self.changes.prompts_changed()
        return f"{DYNAMIC_PROMPT.name} is {'listed' if self.dynamic_prompt else 'hidden'} now"

    @tool("Echoes region and priority, which clients mirror as Mcp-Param-* headers", schema=HEADER_PARAMS)
    async def test_header_params(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return f"region={args.get('region')!r} priority={args.get('priority')!r} note={args.get('note')!r}"

    # -- the tasks extension's fixtures (SEP-2663; TASK_TOOLS says which run as tasks) -------

    @tool("Greets by name (never a task)", {"name": STRING}, ["name"])
    async def greet(self, args: dict[str, Any], ctx: Ctx) -> Output:
        return f"Hello, {args.get('name')}!"

    @tool("Sleeps `seconds`, then answers (a task when the client declares the extension)",
          {"seconds": {"type": "number"}, "label": STRING})
    async def slow_compute(self, args: dict[str, Any], ctx: Ctx) -> Output:
        seconds = float(args.get("seconds") or 0)
        await asyncio.sleep(seconds)
        return f"computed {args.get('label')!r} in {seconds:g} s"

    @tool("Fails as a tool after a second (runs only as a task)")
    async def failing_job(self, args: dict[str, Any], ctx: Ctx) -> Output:
        await asyncio.sleep(1)
        raise ToolError("failing_job failed, as it always does")

    @tool("Ends in a protocol error (a task that fails)")
    async def protocol_error_job(self, args: dict[str, Any], ctx: Ctx) -> Output:
        await asyncio.sleep(0.1)
        raise RpcError(INTERNAL_ERROR, "Internal error: protocol_error_job always fails")

    @tool("Asks to confirm, then deletes (pretends to)", {"filename": STRING})
    async def confirm_delete(self, args: dict[str, Any], ctx: Ctx) -> Output:
        filename = args.get("filename")
        answer = await self.form(ctx, f"Delete {filename}?", CONFIRM_DELETE_FORM)
        return f"deleted {filename}" if answered(answer, "confirm") is True else f"kept {filename}"

    @tool("Asks two questions at once")
    async def multi_input(self, args: dict[str, Any], ctx: Ctx) -> Output:
        first, second = await asyncio.gather(
            input_key("first", self.form(ctx, "First name?", NAME_FORM)),
            input_key("second", self.form(ctx, "Second name?", NAME_FORM)),
        )
        return f"first={answered(first, 'name')} second={answered(second, 'name')}"

    @tool("Asks for a name (multi round-trip), then greets from a task (runs only as a task)")
    async def test_tool_with_task(self, args: dict[str, Any], ctx: Ctx) -> Output:
        answer = await input_key("user_name", self.form(ctx, "What is your name?", NAME_FORM))
        name = answered(answer, "name")

        async def greet_later() -> models.CallToolResult:
            await asyncio.sleep(0.1)
            return models.CallToolResult(content=[text(f"Hello, {name}! (from a task)")])

        return await run_as_task(greet_later, required=True)

    async def form(self, ctx: Ctx, message: str, schema: dict[str, Any]) -> models.ElicitResult:
        """Ask the user to fill a form (``ctx.peer.elicit``). A client whose revision cannot
        show the form (2025-06-18 has no titled or multi-select enums) gets a tool error
        naming the fields: the runtime refuses to send what that revision does not define."""
        requested = models.ElicitRequestFormParamsRequestedSchema.model_validate(schema)
        params = models.ElicitRequestFormParams(message=message, requested_schema=requested)
        try:
            return await ctx.peer.elicit(params)
        except ValidationError as error:
            fields = unshowable_fields(error)
            if not fields:
                raise  # not the form: a bug, answered -32603
            raise ToolError(
                "This client's MCP revision cannot show this form: it has no field type for "
                + ", ".join(fields)
            ) from None

    async def sample(self, ctx: Ctx, prompt: str, max_tokens: int) -> str:
        """The text the client's LLM answers to ``prompt`` (``ctx.peer.create_message``)."""
        message = models.SamplingMessage(role="user", content=text(prompt))
        result = await ctx.peer.create_message(messages=[message], max_tokens=max_tokens)
        blocks = result.content if isinstance(result.content, list) else [result.content]
        return " ".join(b.text for b in blocks if isinstance(b, models.TextContent)) or "No response"

    async def ask(self, ctx: Ctx, message: str, schema: dict[str, Any], label: str) -> str:
        """Ask the user to fill a form; describe the answer as ``label: action=..., content=...``."""
        result = await self.form(ctx, message, schema)
        return f"{label}: action={result.action}, content={json.dumps(result.content or {})}"

    # -- resources ---------------------------------------------------------------------------

    async def list_resources(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListResourcesResult:
        return models.ListResourcesResult(resources=RESOURCES + skill_resources(self.skill_catalog))

    async def list_resource_templates(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListResourceTemplatesResult:
        return models.ListResourceTemplatesResult(resource_templates=[TEMPLATE])

    async def read_resource(
        self, params: models.ReadResourceRequestParams, ctx: Ctx
    ) -> models.ReadResourceResult:
        uri = params.uri
        contents: models.TextResourceContents | models.BlobResourceContents
        if uri == "test://static-text":
            contents = models.TextResourceContents(uri=uri, mime_type="text/plain", text=STATIC_TEXT)
        elif uri == "test://static-binary":
            contents = models.BlobResourceContents(uri=uri, mime_type="image/png", blob=TEST_IMAGE_BASE64)
        elif uri == WATCHED_URI:
            contents = models.TextResourceContents(
                uri=uri, mime_type="text/plain", text=self.watched_content
            )
        elif uri.startswith(TEMPLATE_PREFIX) and uri.endswith(TEMPLATE_SUFFIX):
            item = uri[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)]
            data = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
            contents = models.TextResourceContents(uri=uri, mime_type="application/json", text=data)
        elif (skill_file := self.skill_catalog.file(uri)) is not None:
            contents = models.TextResourceContents(
                uri=uri, mime_type=skill_file.mime_type, text=skill_file.content().decode("utf-8")
            )
        else:
            raise RpcError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})
        return models.ReadResourceResult(contents=[contents])

    async def subscribe(self, params: models.SubscribeRequestParams, ctx: Ctx) -> models.Result:
        """Accept a ``resources/subscribe``: the runtime records it for this session, so
        ``changes.resource_updated(uri)`` reaches it (serving it declares
        ``resources.subscribe``)."""
        return models.Result()

    async def unsubscribe(
        self, params: models.UnsubscribeRequestParams, ctx: Ctx
    ) -> models.Result:
        """Accept a ``resources/unsubscribe`` (the runtime forgets the subscription)."""
        return models.Result()

    # -- prompts and completion --------------------------------------------------------------

    async def list_prompts(
        self, params: models.PaginatedRequestParams | None, ctx: Ctx
    ) -> models.ListPromptsResult:
        return models.ListPromptsResult(prompts=PROMPTS + ([DYNAMIC_PROMPT] if self.dynamic_prompt else []))

    async def get_prompt(
        self, params: models.GetPromptRequestParams, ctx: Ctx
    ) -> models.GetPromptResult:
        listed = PROMPTS + ([DYNAMIC_PROMPT] if self.dynamic_prompt else [])
        prompt = next((p for p in listed if p.name == params.name), None)
        if prompt is None:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        args = params.arguments or {}
        missing = [a.name for a in prompt.arguments or () if a.name not in args]
        if missing:
            raise RpcError(INVALID_PARAMS, f"Missing required arguments: {', '.join(missing)}")
        if prompt.name == "test_prompt_with_arguments":
            body = f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'"
            messages = [user(text(body))]
        elif prompt.name == "test_prompt_with_embedded_resource":
            resource = embedded(args["resourceUri"], "text/plain", "Embedded resource content for testing.")
            messages = [user(resource), user(text("Please process the embedded resource above."))]
        elif prompt.name == "test_prompt_with_image":
            messages = [user(image()), user(text("Please analyze the image above."))]
        elif prompt.name == "test_input_required_result_prompt":
            message = "What context should the prompt use?"
            answer = await input_key("user_context", self.form(ctx, message, CONTEXT_FORM))
            messages = [user(text(f"Answer with this context in mind: {answered(answer, 'context')}"))]
        elif prompt.name == DYNAMIC_PROMPT.name:
            messages = [user(text("This prompt comes and goes."))]
        else:
            messages = [user(text("This is a simple prompt for testing."))]
        return models.GetPromptResult(messages=messages)

    async def complete(
        self, params: models.CompleteRequestParams, ctx: Ctx
    ) -> models.CompleteResult:
        """Suggest values for ``arg1`` of ``test_prompt_with_arguments``; nothing elsewhere."""
        ref, argument = params.ref, params.argument
        values: list[str] = []
        prompt = ref.name if isinstance(ref, models.PromptReference) else None
        if (prompt, argument.name) == ("test_prompt_with_arguments", "arg1"):
            values = [v for v in ARG1_COMPLETIONS if v.startswith(argument.value)]
        completion = models.CompleteResultCompletion(values=values, total=len(values), has_more=False)
        return models.CompleteResult(completion=completion)


# -- command line ---------------------------------------------------------------------------


def protocol_packages(revisions: Sequence[str]) -> list[ModuleType]:
    """The generated packages of ``revisions`` (``2025-06-18``), to pin the server to them."""
    for revision in revisions:
        if revision not in REVISIONS:
            raise SystemExit(f"unknown revision {revision!r}; known: {', '.join(REVISIONS)}")
    return [importlib.import_module(f"mcp_generated.{REVISIONS[r]}") for r in revisions]


def serving_options(server: ConformanceServer, revisions: Sequence[str] = ()) -> dict[str, Any]:
    """How ``server`` is served: identity, list_changed for tools and prompts, its change
    feed (shared by both eras), and the revisions to speak (default: every one generated)."""
    options: dict[str, Any] = {
        "server_info": SERVER_INFO,
        "instructions": INSTRUCTIONS,
        "list_changed": ["tools", "prompts"],
        "changes": server.changes,
        # the tasks extension: the runtime serves tasks/get, tasks/update, tasks/cancel
        "extensions": {TASKS_EXTENSION: {}, SKILLS_EXTENSION: {"directoryRead": True}},
    }
    if revisions:
        options["packages"] = protocol_packages(revisions)
    return options


def serve_http(server: ConformanceServer, port: int, options: dict[str, Any]) -> None:
    """Serve Streamable HTTP at http://127.0.0.1:PORT/mcp with uvicorn."""
    try:
        import uvicorn
    except ModuleNotFoundError:
        raise SystemExit("--port needs uvicorn: pip install 'mcp-codegen[http]'") from None
    uvicorn.run(http_app(server, **options), host="127.0.0.1", port=port)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="The MCP conformance suite's fixture server.")
    transport = parser.add_mutually_exclusive_group(required=True)
    transport.add_argument("--stdio", action="store_true", help="serve stdin/stdout")
    transport.add_argument("--port", type=int, help="serve Streamable HTTP at 127.0.0.1:PORT/mcp")
    parser.add_argument(
        "--protocol",
        action="append",
        default=[],
        metavar="REVISION",
        help="speak only this revision (repeatable); default: every generated revision, "
        "handshake era and 2026-07-28 side by side",
    )
    args = parser.parse_args(argv)
    server = ConformanceServer()
    options = serving_options(server, args.protocol)
    if args.stdio:
        run_stdio(server, **options)
    else:
        serve_http(server, args.port, options)


if __name__ == "__main__":
    main()
