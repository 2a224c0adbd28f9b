"""The conformance suite's fixture server again, written on ``McpApp`` (typed functions).

The same tools, resources, prompts and completion as ``conformance_server.py`` (the
hand-written ``ServerHandlers`` one), so ``@modelcontextprotocol/conformance`` runs the same
server scenarios against it (``scripts/conformance.sh --app``). Schemas come from the
signatures; elicitation forms from pydantic models (the SEP-1330 enum shapes through
``Field(json_schema_extra=...)``); the 2026-07-28 ``Mcp-Param-*`` mirroring from
``x-mcp-header`` on a parameter. One tool keeps a hand-written schema, as no Python type
states JSON Schema 2020-12's ``if``/``then``/``else``: the app is subclassed and that tool
served beside the typed ones by ``list_tools``/``call_tool`` over ``super()``, the way the
two layers mix.

    python examples/conformance_app_server.py --stdio
    python examples/conformance_app_server.py --port 3001   # http://127.0.0.1:3001/mcp
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer
from typedmcp import (
    INTERNAL_ERROR,
    TASKS_EXTENSION,
    Context,
    McpApp,
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
from typedmcp.app import ContentBlock, Elicited, audio, embedded_text, image, text, user

Ctx = RequestContext[ClientPeer]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
WATCHED_URI = "test://watched-resource"
STRING = {"type": "string"}
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {"$anchor": "addressDef", "type": "object", "properties": {"street": STRING, "city": STRING}}
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
SCHEMA_TOOL = models.Tool(
    name="json_schema_2020_12_tool",
    description="Tool with JSON Schema 2020-12 features",
    input_schema=models.ToolInputSchema.model_validate(JSON_SCHEMA_2020_12),
)


class ConformanceApp(McpApp):
    """The typed app plus the one tool whose schema is written by hand."""

    async def list_tools(self, params: models.PaginatedRequestParams | None, ctx: Ctx) -> models.ListToolsResult:
        typed = await super().list_tools(params, ctx)
        return models.ListToolsResult(tools=[*typed.tools, SCHEMA_TOOL])

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        if params.name == SCHEMA_TOOL.name:
            return models.CallToolResult(content=[text(f"Received: {json.dumps(params.arguments or {}, sort_keys=True)}")])
        return await super().call_tool(params, ctx)


app = ConformanceApp(
    "mcp-codegen-conformance-server",
    "0.1.0",
    instructions="Fixture server of the MCP conformance suite, built on mcp-codegen's McpApp.",
    extensions={TASKS_EXTENSION: {}},  # the tasks extension: tasks/get, tasks/update, tasks/cancel
)
# the skills extension (SEP-2640): one skill, its SKILL.md and a file in a subdirectory
app.add_skill_directory(Path(__file__).parent / "skills" / "pdf-processing")
watched = {"content": "Watched resource content"}
shown = {"tool": False, "prompt": False}  # test_dynamic_tool, test_dynamic_prompt

# -- forms ---------------------------------------------------------------------------------


class UserForm(BaseModel):
    username: Annotated[str, Field(description="User's response")]
    email: Annotated[str, Field(description="User's email address")]


class DefaultsForm(BaseModel):  # SEP-1034: every field has a default
    name: Annotated[str, Field(description="User name")] = "John Doe"
    age: Annotated[int, Field(description="User age")] = 30
    score: Annotated[float, Field(description="User score")] = 95.5
    status: Annotated[Literal["active", "inactive", "pending"], Field(description="User status")] = "active"
    verified: Annotated[bool, Field(description="Verification status")] = True


def schema_of(replacement: dict[str, Any]) -> Any:
    """``json_schema_extra`` that states a field's whole schema (for shapes, such as titled
    enums, no Python type says; the value is still validated by the annotation)."""

    def replace(schema: dict[str, Any]) -> None:
        schema.clear()
        schema.update(replacement)

    return replace


Option = Literal["option1", "option2", "option3"]
TITLED = [
    {"const": "value1", "title": "First Option"},
    {"const": "value2", "title": "Second Option"},
    {"const": "value3", "title": "Third Option"},
]


class EnumsForm(BaseModel):  # SEP-1330: the five enum shapes
    untitledSingle: Annotated[Option | None, Field(json_schema_extra=schema_of({"type": "string", "enum": ["option1", "option2", "option3"]}))] = None
    titledSingle: Annotated[str | None, Field(json_schema_extra=schema_of({"type": "string", "oneOf": TITLED}))] = None
    legacyEnum: Annotated[
        Literal["opt1", "opt2", "opt3"] | None,
        Field(json_schema_extra=schema_of({"type": "string", "enum": ["opt1", "opt2", "opt3"],
                                           "enumNames": ["Option One", "Option Two", "Option Three"]})),
    ] = None
    untitledMulti: Annotated[
        list[Option] | None, Field(json_schema_extra=schema_of({"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}}))
    ] = None
    titledMulti: Annotated[
        list[str] | None, Field(json_schema_extra=schema_of({"type": "array", "items": {"anyOf": TITLED}}))
    ] = None


class Name(BaseModel):
    name: str


class Color(BaseModel):
    color: str


class Confirm(BaseModel):
    ok: bool


class ConfirmDelete(BaseModel):
    confirm: bool


class Topic(BaseModel):
    context: str


def described(label: str, answer: Elicited[Any]) -> str:
    """``label: action=..., content=...`` for an elicitation's answer."""
    content = answer.data.model_dump(exclude_none=True) if answer.data is not None else {}
    return f"{label}: action={answer.action}, content={json.dumps(content)}"


def field(answer: Elicited[Any], name: str) -> Any:
    """A field of an accepted answer, else ``<decline>`` / ``<cancel>``."""
    return getattr(answer.data, name) if answer.data is not None else f"<{answer.action}>"


async def sampled(ctx: Context, prompt: str, max_tokens: int) -> str:
    """The text the client's LLM answers."""
    result = await ctx.sample(prompt, max_tokens=max_tokens)
    blocks = result.content if isinstance(result.content, list) else [result.content]
    return " ".join(b.text for b in blocks if isinstance(b, models.TextContent)) or "No response"


# -- tools ---------------------------------------------------------------------------------


@app.tool(structured_output=False)
async def test_simple_text() -> str:
    """Returns a simple text content block"""
    return "This is a simple text response for testing."


@app.tool()
async def test_image_content() -> list[ContentBlock]:
    """Returns an image content block (a 1x1 PNG)"""
    return [image(PNG, "image/png")]


@app.tool()
async def test_audio_content() -> list[ContentBlock]:
    """Returns an audio content block (a tiny WAV)"""
    return [audio(WAV, "audio/wav")]


@app.tool()
async def test_embedded_resource() -> list[ContentBlock]:
    """Returns an embedded text resource"""
    return [embedded_text("test://embedded-resource", "This is an embedded resource content.")]


@app.tool()
async def test_multiple_content_types() -> list[ContentBlock]:
    """Returns text, image and resource content blocks"""
    body = '{"test":"data","value":123}'
    return [
        text("Multiple content types test:"),
        image(PNG, "image/png"),
        embedded_text("test://mixed-content-resource", body, mime_type="application/json"),
    ]


@app.tool(structured_output=False)
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs"""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@app.tool(structured_output=False)
async def test_error_handling() -> str:
    """Always fails: the result has isError true"""
    raise ToolError("This tool intentionally returns an error for testing")


@app.tool(structured_output=False)
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100 for the request's progress token"""
    for step in (0, 50, 100):
        if step:
            await asyncio.sleep(0.05)
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
    return f"Progress reported for token {ctx.progress_token!r}"


@app.tool(structured_output=False)
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's LLM (sampling/createMessage)"""
    return f"LLM response: {await sampled(ctx, prompt, 100)}"


@app.tool(structured_output=False)
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email"""
    return described("User response", await ctx.elicit(message, UserForm))


@app.tool(structured_output=False)
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields all have defaults (SEP-1034)"""
    return described("Elicitation completed", await ctx.elicit("Please provide user information", DefaultsForm))


@app.tool(structured_output=False)
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits the five enum shapes of SEP-1330"""
    message = "Please select values using different enum schema types"
    return described("Elicitation completed", await ctx.elicit(message, EnumsForm))


@app.tool(structured_output=False)
async def test_reconnection() -> str:
    """Resumable SSE stream test (SEP-1699): drops the SSE connection mid-call, then answers on the resumed stream; over stdio it just answers"""
    if close_sse_stream():
        await asyncio.sleep(0.2)
    return "Reconnection test completed"


@app.tool(structured_output=False)
async def test_tool_slow(ctx: Context, durationMs: float = 1000) -> str:
    """Sleeps durationMs milliseconds; logs a notice when cancelled"""
    try:
        await asyncio.sleep(durationMs / 1000)
    except asyncio.CancelledError:
        await ctx.log("notice", f"test_tool_slow cancelled (request {ctx.request_id!r})")
        raise
    return f"Slept {durationMs:g} ms"


@app.tool(structured_output=False)
async def test_tool_fast() -> str:
    """Answers at once"""
    return "Fast tool completed"


@app.tool()
async def test_list_roots(ctx: Context) -> list[ContentBlock]:
    """Lists the client's roots (roots/list), one JSON text block per root"""
    return [text(json.dumps({"uri": root.uri, "name": root.name})) for root in await ctx.list_roots()]


@app.tool(structured_output=False)
async def test_send_tool_list_changed(ctx: Context) -> str:
    """Sends notifications/tools/list_changed"""
    await ctx.peer.send_tool_list_changed()
    return "Sent notifications/tools/list_changed"


@app.tool(structured_output=False)
async def test_update_watched_resource(content: str) -> str:
    """Replaces the watched resource's text; subscribers hear of it"""
    watched["content"] = content
    app.resource_updated(WATCHED_URI)
    return "Watched resource updated"


@app.tool(structured_output=False)
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name (input key user_name) and greets them"""
    answer = await input_key("user_name", ctx.elicit("What is your name?", Name))
    return f"Hello, {field(answer, 'name')}!"


@app.tool(structured_output=False)
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's LLM for the capital of France (input key capital_question)"""
    reply = await input_key("capital_question", sampled(ctx, "What is the capital of France?", 100))
    return f"LLM response: {reply}"


@app.tool(structured_output=False)
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Lists the client's roots (input key client_roots)"""
    roots = await input_key("client_roots", ctx.list_roots())
    return "Client roots: " + ", ".join(f"{root.uri} ({root.name})" for root in roots)


@app.tool(structured_output=False)
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a confirmation; says state-ok when the retry's requestState passed its check"""
    answer = await input_key("confirm", ctx.elicit("Please confirm", Confirm))
    state = "state-ok" if resumed_from_state() else "no requestState"
    return f"Confirmed: ok={field(answer, 'ok')}; {state}"


@app.tool(structured_output=False)
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks for a name, a greeting from the LLM and the roots, all in one round"""
    name, greeting, roots = await asyncio.gather(
        input_key("user_name", ctx.elicit("What is your name?", Name)),
        input_key("greeting", sampled(ctx, "Generate a greeting", 50)),
        input_key("client_roots", ctx.list_roots()),
    )
    return f"{greeting} {field(name, 'name')} (roots: {', '.join(root.uri for root in roots)})"


@app.tool(structured_output=False)
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks for a name, then (next round) for a favourite colour"""
    name = await input_key("step1", ctx.elicit("Step 1: What is your name?", Name))
    color = await input_key("step2", ctx.elicit("Step 2: What is your favorite color?", Color))
    return f"{field(name, 'name')} likes {field(color, 'color')}"


@app.tool(structured_output=False)
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Asks for a confirmation; a retry whose requestState was altered is rejected"""
    answer = await input_key("confirm", ctx.elicit("Please confirm", Confirm))
    return f"Confirmed: ok={field(answer, 'ok')}"


@app.tool(structured_output=False)
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only for what the client declared: elicitation and/or sampling"""
    declared = ctx.client_capabilities
    calls: list[Any] = []
    if "elicitation" in declared:
        calls.append(input_key("user_name", ctx.elicit("What is your name?", Name)))
    if "sampling" in declared:
        calls.append(input_key("greeting", sampled(ctx, "Generate a greeting", 50)))
    if not calls:
        return "The client declared neither elicitation nor sampling: nothing to ask"
    return f"Got {len(await asyncio.gather(*calls))} answer(s)"


@app.tool(structured_output=False)
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability (asks its LLM); without it: -32021"""
    return f"LLM response: {await sampled(ctx, 'Say hello', 20)}"


@app.tool(structured_output=False)
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks the user to confirm before it answers (elicitation)"""
    answer = await ctx.elicit("Please confirm to continue", Confirm)
    return f"Confirmed: ok={field(answer, 'ok')}"


@app.tool(structured_output=False)
async def test_logging_tool(ctx: Context) -> str:
    """Logs at debug, info, warning and error (sent only at or above the client's level)"""
    for level in ("debug", "info", "warning", "error"):
        await ctx.log(level, f"test_logging_tool: a {level} message", "conformance")
    return "Logged 4 messages"


@app.tool(structured_output=False)
async def test_dynamic_tool() -> str:
    """Appears and disappears with test_trigger_tool_change"""
    return "The dynamic tool is here"


@app.tool(structured_output=False)
async def test_trigger_tool_change() -> str:
    """Shows or hides test_dynamic_tool; tools list_changed goes to every listener"""
    shown["tool"] = not shown["tool"]
    app.enable("tool", "test_dynamic_tool", shown["tool"])
    return f"test_dynamic_tool is {'listed' if shown['tool'] else 'hidden'} now"


@app.tool(structured_output=False)
async def test_trigger_prompt_change() -> str:
    """Shows or hides test_dynamic_prompt; prompts list_changed goes to every listener"""
    shown["prompt"] = not shown["prompt"]
    app.enable("prompt", "test_dynamic_prompt", shown["prompt"])
    return f"test_dynamic_prompt is {'listed' if shown['prompt'] else 'hidden'} now"


@app.tool(structured_output=False)
async def test_header_params(
    region: Annotated[str, Field(description="Where to run", json_schema_extra={"x-mcp-header": "Region"})],
    priority: Annotated[int | None, Field(json_schema_extra=schema_of({"type": "integer", "description": "How urgent", "x-mcp-header": "Priority"}))] = None,
    note: Annotated[str | None, Field(json_schema_extra=schema_of({"type": "string", "description": "Not mirrored in a header"}))] = None,
) -> str:
    """Echoes region and priority, which clients mirror as Mcp-Param-* headers"""
    return f"region={region!r} priority={priority!r} note={note!r}"


# -- the tasks extension's fixtures (SEP-2663: task= runs a tool as a task) ------------------


@app.tool(structured_output=False)
def greet(name: str) -> str:
    """Greets by name (never a task)"""
    return f"Hello, {name}!"


@app.tool(structured_output=False, task="optional")
async def slow_compute(seconds: float = 0, label: str | None = None) -> str:
    """Sleeps `seconds`, then answers (a task when the client declares the extension)"""
    await asyncio.sleep(seconds)
    return f"computed {label!r} in {seconds:g} s"


@app.tool(structured_output=False, task="required")
async def failing_job() -> str:
    """Fails as a tool after a second (runs only as a task)"""
    await asyncio.sleep(1)
    raise ToolError("failing_job failed, as it always does")


@app.tool(structured_output=False, task="optional")
async def protocol_error_job() -> str:
    """Ends in a protocol error (a task that fails)"""
    await asyncio.sleep(0.1)
    raise RpcError(INTERNAL_ERROR, "Internal error: protocol_error_job always fails")


@app.tool(structured_output=False, task="optional")
async def confirm_delete(ctx: Context, filename: str | None = None) -> str:
    """Asks to confirm, then deletes (pretends to)"""
    answer = await ctx.elicit(f"Delete {filename}?", ConfirmDelete)
    return f"deleted {filename}" if field(answer, "confirm") is True else f"kept {filename}"


@app.tool(structured_output=False, task="optional")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once"""
    first, second = await asyncio.gather(
        input_key("first", ctx.elicit("First name?", Name)),
        input_key("second", ctx.elicit("Second name?", Name)),
    )
    return f"first={field(first, 'name')} second={field(second, 'name')}"


@app.tool(structured_output=False)
async def test_tool_with_task(ctx: Context) -> models.CallToolResult:
    """Asks for a name (multi round-trip), then greets from a task (runs only as a task)"""
    name = field(await input_key("user_name", ctx.elicit("What is your name?", Name)), "name")

    async def greet_later() -> models.CallToolResult:
        await asyncio.sleep(0.1)
        return models.CallToolResult(content=[text(f"Hello, {name}! (from a task)")])

    return await run_as_task(greet_later, required=True)


# -- resources -----------------------------------------------------------------------------


@app.resource("test://static-text", name="static-text", description="A static text resource", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@app.resource("test://static-binary", name="static-binary", description="A static binary resource (a 1x1 PNG)", mime_type="image/png")
def static_binary() -> bytes:
    return PNG


@app.resource(WATCHED_URI, name="watched-resource", description="A resource to subscribe to", mime_type="text/plain")
def watched_resource() -> str:
    return watched["content"]


@app.resource("test://template/{id}/data", name="template", description="A resource template with an id parameter", mime_type="application/json")
def template(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# -- prompts -------------------------------------------------------------------------------


@app.prompt()
def test_simple_prompt() -> str:
    """A simple prompt without arguments"""
    return "This is a simple prompt for testing."


@app.prompt()
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> str:
    """A prompt with required arguments"""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@test_prompt_with_arguments.complete("arg1")
def arg1_values(prefix: str) -> list[str]:
    return [value for value in ("alpha", "beta", "gamma") if value.startswith(prefix)]


@app.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[models.PromptMessage]:
    """A prompt that includes an embedded resource"""
    return [
        user(embedded_text(resourceUri, "Embedded resource content for testing.")),
        user("Please process the embedded resource above."),
    ]


@app.prompt()
def test_prompt_with_image() -> list[models.PromptMessage]:
    """A prompt that includes image content"""
    return [user(image(PNG, "image/png")), user("Please analyze the image above.")]


@app.prompt()
async def test_input_required_result_prompt(ctx: Context) -> str:
    """Asks the user for context first (elicitation), then builds the prompt"""
    answer = await input_key("user_context", ctx.elicit("What context should the prompt use?", Topic))
    return f"Answer with this context in mind: {field(answer, 'context')}"


@app.prompt()
def test_dynamic_prompt() -> str:
    """Appears and disappears with test_trigger_prompt_change"""
    return "This prompt comes and goes."


app.disable("tool", "test_dynamic_tool")
app.disable("prompt", "test_dynamic_prompt")


def main() -> None:
    parser = argparse.ArgumentParser(description="The MCP conformance suite's fixture server, on McpApp.")
    transport = parser.add_mutually_exclusive_group(required=True)
    transport.add_argument("--stdio", action="store_true", help="serve stdin/stdout")
    transport.add_argument("--port", type=int, help="serve Streamable HTTP at 127.0.0.1:PORT/mcp")
    args = parser.parse_args()
    if args.stdio:
        run_stdio(app)
        return
    import uvicorn

    uvicorn.run(http_app(app), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
