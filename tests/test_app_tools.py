"""McpApp tools: schemas derived from the signature (golden JSON Schema per type family),
descriptions from docstrings, validation before the call, structured output from the
return annotation, errors as results, mistakes refused at declaration."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import threading
from typing import Annotated, Any, Literal, Optional

from typing_extensions import TypedDict  # typing.TypedDict before Python 3.12 is refused by pydantic

import pytest
from pydantic import AfterValidator, BaseModel, Field

from typedmcp.app import Context, DeclarationError, McpApp, image, text
from typedmcp.connecting import connect_memory
from typedmcp.testing import McpClientFactory, Transport
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.stubs import RequestContext, ToolError
from mcp_generated import v2025_06_18, v2025_11_25
from mcp_generated.v2025_11_25 import models


class Note(BaseModel):
    id: int
    title: str
    tags: list[str]


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    width: float
    label: str = "box"


def schema_of(app: McpApp, name: str, which: str = "inputSchema") -> Any:
    return app.tools[name].definition.model_dump(by_alias=True, exclude_unset=True).get(which)


def wire(result: Any) -> Any:
    return result.model_dump(by_alias=True, exclude_unset=True)


def call(app: McpApp, name: str, arguments: dict[str, Any]) -> Any:
    """The tool's result as the app makes it (without the runtime's own schema check)."""
    context = Context(RequestContext(None, 1))
    return wire(asyncio.run(app.tools[name].call(arguments, context)))


# -- input schemas, golden ------------------------------------------------------------------


def notes_app() -> McpApp:
    app = McpApp("notes", version="1.0.0")

    @app.tool(annotations={"readOnlyHint": False})
    async def add_note(
        title: str, body: str, tags: list[str] = [], priority: Literal["low", "high"] = "low"  # noqa: B006
    ) -> Note:
        """Add a note.

        The second paragraph is not part of the description.

        Args:
            title: A short title.
            body: The text,
                on two lines.
            tags: Labels to find it by.
            priority: How urgent it is.
        """
        return Note(id=1, title=title, tags=tags)

    return app


def test_input_schema_of_add_note_is_derived_from_its_signature_and_docstring() -> None:
    app = notes_app()
    definition = app.tools["add_note"].definition.model_dump(by_alias=True, exclude_unset=True)
    assert definition == {
        "name": "add_note",
        "description": "Add a note.",
        "annotations": {"readOnlyHint": False},
        "inputSchema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "A short title."},
                "body": {"type": "string", "description": "The text, on two lines."},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "default": [],
                    "description": "Labels to find it by.",
                },
                "priority": {
                    "type": "string",
                    "enum": ["low", "high"],
                    "default": "low",
                    "description": "How urgent it is.",
                },
            },
            "required": ["title", "body"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "title": {"type": "string"},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["id", "title", "tags"],
        },
    }


def test_annotated_field_constraints_reach_the_schema() -> None:
    app = McpApp("t")

    @app.tool()
    def constrained(
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        code: Annotated[str, Field(max_length=8, pattern=r"^[A-Z]+$")] = "A",
        ratio: float = Field(0.5, gt=0, description="From Field."),
        size: Annotated[int, Field(description="From Annotated.")] = 1,
    ) -> None:
        """Constraints.

        Args:
            ratio: Not this one: Field's description wins.
            size: Nor this one.
        """

    assert schema_of(app, "constrained") == {
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
            "code": {"type": "string", "maxLength": 8, "pattern": "^[A-Z]+$", "default": "A"},
            "ratio": {"type": "number", "exclusiveMinimum": 0, "default": 0.5, "description": "From Field."},
            "size": {"type": "integer", "default": 1, "description": "From Annotated."},
        },
        "additionalProperties": False,
    }


def test_literal_enum_optional_and_dict_schemas() -> None:
    app = McpApp("t")

    @app.tool()
    def kinds(
        colour: Colour, mode: Literal["a", "b"], note: Optional[str] = None, counts: dict[str, int] | None = None  # noqa: UP045
    ) -> None:
        """Kinds."""

    assert schema_of(app, "kinds") == {
        "type": "object",
        "$defs": {"Colour": {"enum": ["red", "green"], "title": "Colour", "type": "string"}},
        "properties": {
            "colour": {"$ref": "#/$defs/Colour"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "counts": {
                "anyOf": [{"type": "object", "additionalProperties": {"type": "integer"}}, {"type": "null"}],
                "default": None,
            },
        },
        "required": ["colour", "mode"],
        "additionalProperties": False,
    }


def test_nested_model_typeddict_and_dataclass_schemas() -> None:
    app = McpApp("t")

    @app.tool()
    def shapes(note: Note, point: Point, box: Box) -> None:
        """Shapes."""

    assert schema_of(app, "shapes") == {
        "type": "object",
        "$defs": {
            "Box": {
                "type": "object",
                "title": "Box",
                "properties": {"width": {"type": "number"}, "label": {"type": "string", "default": "box"}},
                "required": ["width"],
                "additionalProperties": False,  # arguments are closed, down to TypedDicts and dataclasses
            },
            "Note": {
                "type": "object",
                "title": "Note",
                "properties": {
                    "id": {"type": "integer"},
                    "title": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["id", "title", "tags"],
            },
            "Point": {
                "type": "object",
                "title": "Point",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"],
                "additionalProperties": False,
            },
        },
        "properties": {
            "note": {"$ref": "#/$defs/Note"},
            "point": {"$ref": "#/$defs/Point"},
            "box": {"$ref": "#/$defs/Box"},
        },
        "required": ["note", "point", "box"],
        "additionalProperties": False,
    }


def test_nested_arguments_reach_the_function_as_their_types() -> None:
    app = McpApp("t")
    seen: list[Any] = []

    @app.tool()
    def shapes(note: Note, point: Point, box: Box, colour: Colour) -> None:
        seen.extend([note, point, box, colour])

    result = call(
        app,
        "shapes",
        {"note": {"id": 1, "title": "t", "tags": []}, "point": {"x": 1, "y": 2}, "box": {"width": 2}, "colour": "red"},
    )
    assert result == {"content": []}
    assert seen == [Note(id=1, title="t", tags=[]), {"x": 1, "y": 2}, Box(width=2.0), Colour.RED]


def test_parameter_names_that_clash_with_pydantic_work() -> None:
    app = McpApp("t")

    @app.tool()
    def clash(json: str, model_config: int, _private: bool) -> str:
        return f"{json} {model_config} {_private}"

    assert sorted(schema_of(app, "clash")["properties"]) == ["_private", "json", "model_config"]
    assert call(app, "clash", {"json": "j", "model_config": 2, "_private": True})["content"] == [
        {"type": "text", "text": "j 2 True"}
    ]


# -- output --------------------------------------------------------------------------------


def test_non_object_return_is_wrapped_as_result_and_declared() -> None:
    app = McpApp("t")

    @app.tool()
    def search(query: str) -> list[Note]:
        return [Note(id=1, title=query, tags=["x"])]

    @app.tool()
    def count() -> int:
        return 3

    note_schema = {
        "type": "object",
        "title": "Note",
        "properties": {
            "id": {"type": "integer"},
            "title": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["id", "title", "tags"],
    }
    assert schema_of(app, "search", "outputSchema") == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/Note"}}},
        "required": ["result"],
        "x-typedmcp-wrapped": True,
        "$defs": {"Note": note_schema},
    }
    assert schema_of(app, "count", "outputSchema") == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
        "x-typedmcp-wrapped": True,
    }
    assert call(app, "search", {"query": "q"}) == {
        "content": [{"type": "text", "text": '[{"id": 1, "title": "q", "tags": ["x"]}]'}],
        "structuredContent": {"result": [{"id": 1, "title": "q", "tags": ["x"]}]},
    }
    assert call(app, "count", {}) == {
        "content": [{"type": "text", "text": "3"}],
        "structuredContent": {"result": 3},
    }


def test_str_return_is_its_own_text_block() -> None:
    app = McpApp("t")

    @app.tool()
    def hello(name: str) -> str:
        return f"hello {name}"

    assert call(app, "hello", {"name": "Ada"}) == {
        "content": [{"type": "text", "text": "hello Ada"}],
        "structuredContent": {"result": "hello Ada"},
    }


def test_typeddict_and_dataclass_returns_are_objects() -> None:
    app = McpApp("t")

    @app.tool()
    def where() -> Point:
        return {"x": 1, "y": 2}

    @app.tool()
    def wrap() -> Box:
        return Box(width=1.5)

    assert schema_of(app, "where", "outputSchema") == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    }
    assert schema_of(app, "wrap", "outputSchema") == {
        "type": "object",
        "properties": {"width": {"type": "number"}, "label": {"type": "string", "default": "box"}},
        "required": ["width"],
    }
    assert call(app, "where", {})["structuredContent"] == {"x": 1, "y": 2}
    assert call(app, "wrap", {})["structuredContent"] == {"width": 1.5, "label": "box"}


def test_an_annotated_model_return_is_the_object_itself_with_its_description() -> None:
    """``Annotated[Model, Field(description=...)]`` as a return type: pydantic's schema is a
    ``$ref`` beside the description, which is not an object schema; the output schema is
    the model's own object, described."""
    app = McpApp("t")

    @app.tool()
    def wrap() -> Annotated[Box, Field(description="the box made")]:
        return Box(width=2.0)

    assert schema_of(app, "wrap", "outputSchema") == {
        "type": "object",
        "description": "the box made",
        "properties": {"width": {"type": "number"}, "label": {"type": "string", "default": "box"}},
        "required": ["width"],
    }
    assert call(app, "wrap", {})["structuredContent"] == {"width": 2.0, "label": "box"}


def test_content_blocks_and_call_tool_result_pass_through_without_output_schema() -> None:
    app = McpApp("t")

    @app.tool()
    def blocks() -> list[models.TextContent | models.ImageContent]:
        return [text("hi"), image(b"\x89PNG", "image/png")]

    @app.tool()
    def full() -> models.CallToolResult:
        return models.CallToolResult(content=[text("raw")], is_error=True)

    @app.tool(structured_output=False)
    def plain() -> int:
        return 7

    for name in ("blocks", "full", "plain"):
        assert schema_of(app, name, "outputSchema") is None
    assert call(app, "blocks", {}) == {
        "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}]
    }
    assert call(app, "full", {}) == {"content": [{"type": "text", "text": "raw"}], "isError": True}
    assert call(app, "plain", {}) == {"content": [{"type": "text", "text": "7"}]}


def test_a_result_that_breaks_the_return_annotation_is_never_sent() -> None:
    app = McpApp("t")

    @app.tool()
    def liar() -> Note:
        return {"id": "not a number", "title": "t", "tags": []}  # type: ignore[return-value]

    assert call(app, "liar", {}) == {
        "content": [
            {
                "type": "text",
                "text": "Tool liar returned a result that does not match its output schema: "
                "id: Input should be a valid integer, unable to parse string as an integer",
            }
        ],
        "isError": True,
    }


class Rounded(BaseModel):
    """A model that re-validates its instances (its validator runs on each)."""

    model_config = {"revalidate_instances": "always"}
    value: Annotated[float, Field(ge=0)]


def test_a_model_that_revalidates_its_instances_is_validated_before_it_is_sent() -> None:
    app = McpApp("t")

    @app.tool()
    def negative() -> Rounded:
        made = Rounded(value=1.0)
        made.value = -1.0  # (no validate_assignment: the instance now breaks its own model)
        return made

    result = call(app, "negative", {})
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(
        "Tool negative returned a result that does not match its output schema: value: "
    )


def test_a_plain_return_of_another_type_is_still_validated() -> None:
    app = McpApp("t")

    @app.tool()
    def count() -> int:
        return "3"  # type: ignore[return-value]  # (lax validation converts it)

    @app.tool()
    def flag() -> bool:
        return 1  # type: ignore[return-value]

    assert call(app, "count", {})["structuredContent"] == {"result": 3}
    assert call(app, "flag", {})["structuredContent"] == {"result": True}


# -- validation and errors --------------------------------------------------------------------


def test_a_bad_argument_is_an_error_result_naming_the_field_and_problem() -> None:
    app = notes_app()
    assert call(app, "add_note", {"title": "t", "body": "b", "priority": "urgent"}) == {
        "content": [
            {"type": "text", "text": "Invalid arguments for tool add_note: priority: Input should be 'low' or 'high'"}
        ],
        "isError": True,
    }
    assert call(app, "add_note", {"body": "b", "colour": 1})["content"][0]["text"] == (
        "Invalid arguments for tool add_note: title: Field required; colour: Extra inputs are not permitted"
    )


def test_bad_arguments_over_the_wire_as_each_revision_specifies() -> None:
    app = McpApp("t")

    @app.tool()
    def search(query: str, limit: Annotated[int, Field(ge=1, le=100)] = 10) -> list[str]:
        return [query] * limit

    async def scenario() -> tuple[Any, RpcError]:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            modern = await client.call_tool(name="search", arguments={"query": "q", "limit": 101})
        async with connect_memory(app, protocol=v2025_06_18) as client:
            with pytest.raises(RpcError) as older:
                await client.call_tool(name="search", arguments={"query": "q", "limit": 0})
        return modern, older.value

    modern, older = asyncio.run(scenario())
    assert wire(modern) == {
        "content": [{"type": "text", "text": "Invalid arguments for tool search: /limit: 101 is greater than the maximum of 100"}],
        "isError": True,
    }
    assert (older.code, older.message) == (
        -32602,
        "Invalid arguments for tool search: /limit: 0 is less than the minimum of 1",
    )


def test_the_functions_own_exception_is_a_clipped_error_result() -> None:
    app = McpApp("t")

    @app.tool()
    def boom() -> str:
        raise ValueError("x" * 2000)

    result = call(app, "boom", {})
    message = result["content"][0]["text"]
    assert result["isError"] is True
    assert message.startswith("Tool boom failed: ValueError: xxxx")
    assert len(message) < 600


def vault(**options: Any) -> McpApp:
    app = McpApp("vault", **options)

    @app.tool()
    def connect() -> str:
        raise KeyError("secret-db-password")

    @app.tool()
    def refuse() -> str:
        raise ToolError("the vault is closed on Sundays")

    return app


@pytest.mark.parametrize("mcp_transport", ["memory", "direct"])
def test_mask_errors_sends_no_exception_text_and_logs_it(
    mcp_client: McpClientFactory, mcp_transport: Transport, mcp_revision: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario() -> tuple[Any, Any]:
        async with mcp_client(vault(mask_errors=True), transport=mcp_transport, revision=mcp_revision) as client:
            return await client.call_tool(name="connect"), await client.call_tool(name="refuse")

    masked, refused = asyncio.run(scenario())
    assert (masked.is_error, wire(masked)["content"]) == (True, [{"type": "text", "text": "Internal error in tool connect"}])
    assert "secret-db-password" in caplog.text  # the server's log has it, with the traceback
    assert (refused.is_error, wire(refused)["content"]) == (True, [{"type": "text", "text": "the vault is closed on Sundays"}])


def test_without_mask_errors_the_exception_text_is_sent() -> None:
    assert vault().mask_errors is False
    result = call(vault(), "connect", {})
    assert result["content"][0]["text"] == "Tool connect failed: KeyError: 'secret-db-password'"


def test_tool_error_and_rpc_error_behave_as_with_handlers() -> None:
    app = McpApp("t")

    @app.tool()
    def refuse() -> str:
        raise ToolError("no such city")

    @app.tool()
    def protocol() -> str:
        raise RpcError(-32602, "Invalid params: nope")

    async def scenario() -> tuple[Any, RpcError]:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            refused = await client.call_tool(name="refuse", arguments={})
            with pytest.raises(RpcError) as failed:
                await client.call_tool(name="protocol", arguments={})
        return refused, failed.value

    refused, failed = asyncio.run(scenario())
    assert wire(refused) == {"content": [{"type": "text", "text": "no such city"}], "isError": True}
    assert (failed.code, failed.message) == (-32602, "Invalid params: nope")


def test_an_unknown_tool_is_invalid_params() -> None:
    app = notes_app()

    async def scenario() -> RpcError:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            with pytest.raises(RpcError) as failed:
                await client.call_tool(name="nope", arguments={})
        return failed.value

    failed = asyncio.run(scenario())
    assert (failed.code, failed.message) == (-32602, "Unknown tool: nope")


# -- running ---------------------------------------------------------------------------------


def test_sync_functions_run_in_a_worker_thread_async_ones_on_the_loop() -> None:
    app = McpApp("t")
    threads: dict[str, int] = {}

    @app.tool()
    def blocking() -> None:
        threads["sync"] = threading.get_ident()

    @app.tool()
    async def awaiting() -> None:
        threads["async"] = threading.get_ident()

    async def scenario() -> int:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            await client.call_tool(name="blocking", arguments={})
            await client.call_tool(name="awaiting", arguments={})
        return threading.get_ident()

    loop_thread = asyncio.run(scenario())
    assert threads["async"] == loop_thread
    assert threads["sync"] != loop_thread


def test_the_decorated_function_stays_directly_callable() -> None:
    app = McpApp("t")

    @app.tool
    def add(a: int, b: int = 2) -> int:
        """Add."""
        return a + b

    assert add(1) == 3
    assert add.__name__ == "add"
    assert sorted(app.tools) == ["add"]


# -- mistakes refused at declaration ------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "a" * 129, "has space", "ünï", "a/b"])
def test_a_tool_name_breaking_the_spec_rule_is_refused(name: str) -> None:
    app = McpApp("t")
    with pytest.raises(DeclarationError, match="breaks the spec's rule: 1 to 128 characters"):
        app.add_tool(lambda: None, name=name)


def test_a_name_passed_positionally_to_the_decorator_is_refused() -> None:
    app = McpApp("t")
    with pytest.raises(DeclarationError, match=r"write @app.tool\(name='add'\): the name is a keyword argument"):
        app.tool("add")  # type: ignore[call-overload]


def test_allowed_tool_names() -> None:
    app = McpApp("t")
    for name in ("a", "A-b_c.d", "x" * 128):
        app.add_tool(lambda: None, name=name)
    assert len(app.tools) == 3


def test_a_duplicate_tool_is_refused() -> None:
    app = notes_app()

    def add_note() -> None: ...

    with pytest.raises(DeclarationError) as refused:
        app.add_tool(add_note)
    assert str(refused.value) == (
        "tool 'add_note' is declared twice (by notes_app.<locals>.add_note and "
        "test_a_duplicate_tool_is_refused.<locals>.add_note); give one another name with name='...'"
    )


class Connection:
    """A type pydantic knows nothing about."""


def test_a_parameter_type_pydantic_cannot_express_is_refused_naming_it() -> None:
    app = McpApp("t")

    def query(sql: str, conn: Connection) -> None: ...

    with pytest.raises(DeclarationError) as refused:
        app.add_tool(query)
    message = str(refused.value)
    assert message.startswith(
        "tool 'query': parameter 'conn' of test_a_parameter_type_pydantic_cannot_express_is_refused_naming_it"
        ".<locals>.query has type Connection, which pydantic cannot validate or describe in JSON Schema"
    )
    assert "use str, numbers, bool, lists, dicts, Literal, Enum, a pydantic model" in message


def test_unannotated_and_variadic_parameters_are_refused() -> None:
    app = McpApp("t")

    def untyped(city):  # type: ignore[no-untyped-def]
        return city

    def variadic(*cities: str) -> None: ...

    with pytest.raises(DeclarationError, match=r"parameter 'city' of .*untyped has no type annotation; annotate it"):
        app.add_tool(untyped)
    with pytest.raises(DeclarationError, match=r"parameter \*cities of .*variadic takes any number of arguments"):
        app.add_tool(variadic)


def test_context_parameter_is_left_out_of_the_schema() -> None:
    app = McpApp("t")

    @app.tool()
    async def report(count: int, ctx: Context) -> None:
        """Report."""

    assert schema_of(app, "report") == {
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
        "additionalProperties": False,
    }


def test_a_wrapped_output_schema_keeps_the_runtimes_fast_check() -> None:
    """``x-`` keys are annotations: the session checks ``{"result": "..."}`` without jsonschema."""
    from typedmcp.protocol.tools import simple_check

    app = McpApp("t")

    @app.tool()
    def hello(name: str) -> str:
        return name

    check = simple_check(schema_of(app, "hello", "outputSchema"))
    assert check is not None
    assert (check({"result": "x"}), check({"result": 1}), check({})) == (True, False, False)
    assert simple_check({"type": "object", "properties": {"a": {"type": "string", "minLength": 1}}}) is None


def test_metadata_mistakes_are_refused_at_declaration() -> None:
    app = McpApp("t")

    def shown() -> None: ...

    with pytest.raises(DeclarationError) as no_schema:
        app.add_tool(shown, structured_output=True)
    assert str(no_schema.value) == (
        "tool 'shown': structured_output=True needs a return annotation with a JSON Schema "
        "(a model, a TypedDict, a dataclass or a plain type), not None"
    )
    with pytest.raises(DeclarationError) as bad_icon:
        app.add_tool(shown, icons=[{"mimeType": "image/png"}])
    assert str(bad_icon.value) == (
        "icon {'mimeType': 'image/png'} is not an MCP Icon (src: Field required); give at least src"
    )
    with pytest.raises(DeclarationError) as bad_annotation:
        app.add_tool(shown, annotations={"readOnlyHint": "yes"})
    assert str(bad_annotation.value) == (
        "tool 'shown': its metadata is not valid MCP: readOnlyHint: Input should be a valid boolean"
    )
    app.add_prompt(lambda: "", name="p", icons=[{"src": "https://example.com/p.png"}])
    assert app.prompts["p"].definition.icons == [models.Icon(src="https://example.com/p.png")]


# -- found by mutation testing (scripts/mutation/app_tools.toml) -----------------------------


def test_annotated_return_types_are_read_through_their_metadata() -> None:
    """``Annotated[Note, ...]`` is an object (its own output schema, not wrapped), and
    ``Annotated[TextContent, ...]`` a content block (no output schema, passed through)."""
    app = McpApp("t")

    @app.tool()
    def described() -> Annotated[Note, "the note"]:
        return Note(id=1, title="t", tags=[])

    @app.tool()
    def block() -> Annotated[models.TextContent, "a text block"]:
        return text("hi")

    assert schema_of(app, "described", "outputSchema")["properties"].keys() == {"id", "title", "tags"}
    assert call(app, "described", {})["structuredContent"] == {"id": 1, "title": "t", "tags": []}
    assert schema_of(app, "block", "outputSchema") is None
    assert call(app, "block", {}) == {"content": [{"type": "text", "text": "hi"}]}


def test_structured_output_text_keeps_non_ascii_characters() -> None:
    app = McpApp("t")

    @app.tool()
    def cafe() -> Note:
        return Note(id=1, title="café ☕", tags=["naïve"])

    assert call(app, "cafe", {})["content"] == [
        {"type": "text", "text": '{"id": 1, "title": "café ☕", "tags": ["naïve"]}'}
    ]


class Hit(BaseModel):
    from_: str = Field(alias="from")


class Opaque:
    """A plain class: pydantic has no schema for it."""


def test_structured_output_uses_the_fields_aliases() -> None:
    app = McpApp("t")

    @app.tool()
    def hit() -> Hit:
        return Hit(**{"from": "here"})

    assert call(app, "hit", {})["structuredContent"] == {"from": "here"}


def test_unstructured_output_text_keeps_non_ascii_characters() -> None:
    app = McpApp("t")

    @app.tool(structured_output=False)
    def cafe() -> dict[str, str]:
        return {"name": "café"}

    assert call(app, "cafe", {}) == {"content": [{"type": "text", "text": '{"name": "café"}'}]}


def test_a_return_type_without_a_json_schema_is_refused_naming_it() -> None:
    app = McpApp("t")

    def opaque() -> Opaque:
        return Opaque()

    with pytest.raises(DeclarationError) as refused:
        app.add_tool(opaque)
    message = str(refused.value)
    assert message.startswith("tool 'opaque': its return type <class 'test_app_tools.Opaque'> has no JSON Schema (")
    assert message.endswith("or pass structured_output=False")


def test_a_positional_only_parameter_is_passed_by_position() -> None:
    app = McpApp("t")

    @app.tool()
    def minus(a: int, /, b: int) -> int:
        return a - b

    assert call(app, "minus", {"a": 5, "b": 2})["structuredContent"] == {"result": 3}


@pytest.mark.parametrize(("bad", "more"), [(5, ""), (6, "; and 1 more")])
def test_an_error_result_names_five_bad_arguments_then_counts_the_rest(bad: int, more: str) -> None:
    app = McpApp("t")

    @app.tool()
    def six(a: int, b: int, c: int, d: int, e: int, f: int = 0) -> int:
        return a

    arguments = {name: "x" for name in "abcdef"[:bad]}
    content = call(app, "six", arguments)["content"][0]["text"]
    assert content.count("Input should be a valid integer") == 5
    assert content.endswith("unable to parse string as an integer" + more)


def test_a_context_first_or_annotated_is_left_out_and_the_rest_read() -> None:
    app = McpApp("t")

    @app.tool()
    async def first(ctx: Annotated[Context, "the request"], count: int) -> int:
        return count if isinstance(ctx, Context) else -1

    assert schema_of(app, "first")["properties"] == {"count": {"type": "integer"}}
    assert call(app, "first", {"count": 2})["structuredContent"] == {"result": 2}


def long_check(value: str) -> str:
    raise ValueError("x" * 300)


def test_each_argument_problem_is_clipped_to_200_characters() -> None:
    app = McpApp("t")

    @app.tool()
    def checked(value: Annotated[str, AfterValidator(long_check)]) -> str:
        return value

    problem = call(app, "checked", {"value": "v"})["content"][0]["text"].split("value: ", 1)[1]
    message = "Value error, " + "x" * 300
    assert problem == f"{message[:200]}... ({len(message) - 200} more characters)"


def no_such_type_tool(x: NoSuchType) -> int:  # type: ignore[name-defined]  # noqa: F821
    return 0


def bad_subscript_tool(x: int[str]) -> int:  # type: ignore[type-arg]
    return 0


@pytest.mark.parametrize(
    ("function", "reason"),
    [(no_such_type_tool, "name 'NoSuchType' is not defined"), (bad_subscript_tool, "type 'int' is not subscriptable"),
     (next, "no signature found for builtin")],
    ids=["NameError", "TypeError", "ValueError"],
)
def test_a_signature_that_cannot_be_read_is_refused_naming_why(function: Any, reason: str) -> None:
    with pytest.raises(DeclarationError) as refused:
        McpApp("t").add_tool(function, name="t")
    assert reason in str(refused.value) and "define its annotations at module level" in str(refused.value)
