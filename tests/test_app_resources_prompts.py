"""McpApp resources, {var} templates with typed variables, prompts from signatures and
completions; mistakes refused at declaration; docstring styles."""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from typedmcp.app import Context, DeclarationError, McpApp, UriTemplate, assistant, user
from typedmcp.app.docstrings import parse_docstring
from typedmcp.connecting import connect_memory
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.stubs import ToolError
from typedmcp.testing import McpClientFactory
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models


def wire(model: Any) -> Any:
    return model.model_dump(by_alias=True, exclude_unset=True)


def library() -> McpApp:
    app = McpApp("library", version="2.0")

    @app.resource("books://index")
    def index() -> list[int]:
        """Every book id."""
        return [1, 2]

    @app.resource("books://{book_id}/pages/{page}", mime_type="text/plain")
    def page(book_id: int, page: int, ctx: Context) -> str:
        return f"book {book_id} page {page}"

    @app.resource("books://covers/{name}")
    def cover(name: str) -> bytes:
        return name.encode()

    @page.complete("page")
    def pages(prefix: str) -> list[str]:
        return [str(n) for n in range(1, 200) if str(n).startswith(prefix)]

    @app.prompt(title="Review")
    async def review(book_id: int, tone: str = "kind") -> list[models.PromptMessage]:
        """Review a book.

        Args:
            book_id: The book.
            tone: How to sound.
        """
        return [user(f"Review book {book_id}, {tone}ly."), assistant("Sure.")]

    @review.complete("tone")
    async def tones(prefix: str) -> list[str]:
        return [t for t in ("kind", "keen", "harsh") if t.startswith(prefix)]

    return app


def run(app: McpApp, steps: Any) -> Any:
    async def scenario() -> Any:
        async with connect_memory(app, protocol=v2025_11_25) as client:
            return await steps(client)

    return asyncio.run(scenario())


def test_resources_and_templates_are_listed_and_read_with_typed_variables() -> None:
    async def steps(client: Any) -> Any:
        return (
            wire(await client.list_resources()),
            wire(await client.list_resource_templates()),
            wire(await client.read_resource(uri="books://index")),
            wire(await client.read_resource(uri="books://7/pages/12")),
            wire(await client.read_resource(uri="books://covers/a%20b")),
        )

    listed, templates, index, page, cover = run(library(), steps)
    assert listed == {"resources": [{"uri": "books://index", "name": "index", "description": "Every book id."}]}
    assert templates == {
        "resourceTemplates": [
            {"uriTemplate": "books://{book_id}/pages/{page}", "name": "page", "mimeType": "text/plain"},
            {"uriTemplate": "books://covers/{name}", "name": "cover"},
        ]
    }
    assert index == {"contents": [{"uri": "books://index", "mimeType": "application/json", "text": "[1, 2]"}]}
    assert page == {"contents": [{"uri": "books://7/pages/12", "mimeType": "text/plain", "text": "book 7 page 12"}]}
    assert cover == {
        "contents": [{"uri": "books://covers/a%20b", "mimeType": "application/octet-stream", "blob": "YSBi"}]
    }


def test_a_variable_of_the_wrong_type_and_an_unknown_uri_are_errors() -> None:
    async def steps(client: Any) -> list[tuple[int, str]]:
        found = []
        for uri in ("books://seven/pages/1", "films://1"):
            with pytest.raises(RpcError) as failed:
                await client.read_resource(uri=uri)
            found.append((failed.value.code, failed.value.message))
        return found

    assert run(library(), steps) == [
        (
            -32602,
            "Invalid params: resource URI books://seven/pages/1: book_id: Input should be a valid integer, "
            "unable to parse string as an integer",
        ),
        (-32002, "Resource not found: films://1"),
    ]


def test_prompts_take_their_arguments_from_the_signature() -> None:
    async def steps(client: Any) -> Any:
        return (
            wire(await client.list_prompts()),
            wire(await client.get_prompt(name="review", arguments={"book_id": "3"})),
        )

    listed, rendered = run(library(), steps)
    assert listed == {
        "prompts": [
            {
                "name": "review",
                "title": "Review",
                "description": "Review a book.",
                "arguments": [
                    {"name": "book_id", "description": "The book.", "required": True},
                    {"name": "tone", "description": "How to sound.", "required": False},
                ],
            }
        ]
    }
    assert rendered == {
        "description": "Review a book.",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Review book 3, kindly."}},
            {"role": "assistant", "content": {"type": "text", "text": "Sure."}},
        ],
    }


def test_a_str_prompt_is_one_user_message_and_bad_arguments_are_invalid_params() -> None:
    app = McpApp("t")

    @app.prompt()
    def greet(name: str, times: int = 1) -> str:
        return " ".join([f"Hello {name}"] * times)

    async def steps(client: Any) -> Any:
        rendered = wire(await client.get_prompt(name="greet", arguments={"name": "Ada", "times": "2"}))
        with pytest.raises(RpcError) as failed:
            await client.get_prompt(name="greet", arguments={"name": "Ada", "times": "many"})
        return rendered, (failed.value.code, failed.value.message)

    rendered, failed = run(app, steps)
    assert rendered == {"messages": [{"role": "user", "content": {"type": "text", "text": "Hello Ada Hello Ada"}}]}
    assert failed == (
        -32602,
        "Invalid params: prompt greet: times: Input should be a valid integer, unable to parse string as an integer",
    )
    assert greet("Bo") == "Hello Bo"  # still the function


def test_completions_of_prompt_arguments_and_template_variables() -> None:
    async def steps(client: Any) -> Any:
        prompt = await client.complete(
            ref=models.PromptReference(type="ref/prompt", name="review"),
            argument=models.CompleteRequestParamsArgument(name="tone", value="k"),
        )
        template = await client.complete(
            ref=models.ResourceTemplateReference(type="ref/resource", uri="books://{book_id}/pages/{page}"),
            argument=models.CompleteRequestParamsArgument(name="page", value="1"),
        )
        none = await client.complete(
            ref=models.ResourceTemplateReference(type="ref/resource", uri="books://{book_id}/pages/{page}"),
            argument=models.CompleteRequestParamsArgument(name="book_id", value="1"),
        )
        return wire(prompt), wire(template), wire(none)

    prompt, template, none = run(library(), steps)
    assert prompt == {"completion": {"values": ["kind", "keen"], "total": 2, "hasMore": False}}
    expected = ["1", *(str(n) for n in range(10, 20)), *(str(n) for n in range(100, 189))]
    assert template == {"completion": {"values": expected, "total": 111, "hasMore": True}}
    assert none == {"completion": {"values": [], "total": 0, "hasMore": False}}


def test_a_completion_for_an_argument_that_does_not_exist_is_refused() -> None:
    app = library()
    review = app.prompts["review"]

    with pytest.raises(DeclarationError) as refused:
        review.completions.register("mood")
    assert str(refused.value) == (
        "prompt 'review' has no argument 'mood' to complete (its arguments: 'book_id', 'tone'); "
        "pass one of those to .complete()"
    )

    @app.resource("things://index")
    def things() -> list[str]:
        return []

    with pytest.raises(DeclarationError, match=r"resource 'things://index' \(no URI variables\) has no argument 'x'"):
        things.complete("x")
    with pytest.raises(DeclarationError, match="argument 'tone' already has a completion function"):
        review.completions.register("tone")


def test_template_parameters_must_be_its_variables() -> None:
    app = McpApp("t")

    def mismatched(book: int) -> str:
        return ""

    with pytest.raises(DeclarationError) as refused:
        app.add_resource(mismatched, "books://{book_id}")
    assert str(refused.value) == (
        "resource 'books://{book_id}' (test_template_parameters_must_be_its_variables.<locals>.mismatched): "
        "parameters ['book'] are not variables of the URI; URI variables ['book_id'] are not parameters; "
        "a resource's parameters are exactly its URI's {variables} (plus, optionally, the Context)"
    )
    with pytest.raises(DeclarationError, match=r"\{x\*\} in 'a://\{x\*\}' is not a variable; use \{name\}"):
        app.add_resource(lambda: "", "a://{x*}")
    with pytest.raises(DeclarationError, match="is not a URI"):
        app.add_resource(lambda: "", "index")


def test_uri_templates_match_one_segment_per_variable() -> None:
    template = UriTemplate.parse("notes://{folder}/{note_id}", "t")
    assert template.match("notes://work/12") == {"folder": "work", "note_id": "12"}
    assert template.match("notes://work/sub/12") is None
    assert template.match("notes://work/") is None
    assert template.match("notes://a%20b/1") == {"folder": "a b", "note_id": "1"}


HOSTILE_URIS = [
    "files://..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd",
    "files://%2Fetc%2Fpasswd",
    "files://..%5C..%5Cx",
    "files://hello.txt%00.png",
    "files://..",
    "files://%2E%2E",
    "files://.",
]


def file_server(root: Any) -> McpApp:
    """The issue's server: ``files://{name}`` read as ``root / name``, and the opt-out
    ``tree://{+path}`` read the same way."""
    app = McpApp("files")

    @app.resource("files://{name}")
    def read_file(name: str) -> str:
        return (root / name).read_text()

    @app.resource("tree://{+path}")
    def read_tree(path: str) -> str:
        return (root / path).read_text()

    return app


@pytest.mark.parametrize("uri", HOSTILE_URIS)
def test_a_variable_that_decodes_to_a_path_is_an_unknown_resource(uri: str, tmp_path: Any) -> None:
    """``files://{name}`` with ``(root / name).read_text()``: a value decoding to ``/``,
    ``\\``, NUL, ``.`` or ``..`` does not match the template, and is answered as any URI
    no template serves (before: ``/etc/passwd``, or "Internal error")."""
    (tmp_path / "hello.txt").write_text("hello")

    async def steps(client: Any) -> list[tuple[int, str, Any]]:
        assert wire(await client.read_resource(uri="files://hello.txt"))["contents"][0]["text"] == "hello"
        found = []
        for asked in (uri, "nothing://here"):
            with pytest.raises(RpcError) as failed:
                await client.read_resource(uri=asked)
            found.append((failed.value.code, failed.value.message.replace(asked, "<uri>"), failed.value.data))
        return found

    refused, unknown = run(file_server(tmp_path), steps)
    assert refused == (-32002, "Resource not found: <uri>", {"uri": uri})
    assert refused[:2] == unknown[:2]


@pytest.mark.parametrize(
    ("uri", "text"),
    [
        ("tree://docs/a.txt", "deep"),
        ("tree://docs%2Fa.txt", "deep"),
        ("tree://hello.txt", "hello"),
        ("tree://docs/./a.txt", "deep"),
        ("tree://..", None),
        ("tree://docs/../hello.txt", None),
        ("tree://docs%2F..%2F..%2Fx", None),
        ("tree://docs%5C..%5C..%5Cx", None),
        ("tree://%2Fetc%2Fpasswd", None),
        ("tree:///etc/passwd", None),
        ("tree://%5Cetc", None),
        ("tree://C:%5CWindows", None),
        ("tree://docs/a.txt%00.png", None),
    ],
)
def test_a_path_variable_takes_relative_paths_and_still_refuses_dot_dot_and_absolute_ones(
    uri: str, text: str | None, tmp_path: Any
) -> None:
    """``{+path}``, the opt-out: ``/`` is allowed, ``..`` segments, absolute paths (``/``,
    ``\\``, a drive) and NUL are still an unknown resource."""
    (tmp_path / "hello.txt").write_text("hello")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("deep")

    async def steps(client: Any) -> Any:
        try:
            return wire(await client.read_resource(uri=uri))["contents"][0]["text"]
        except RpcError as error:
            return error.code, error.message

    assert run(file_server(tmp_path), steps) == (text if text is not None else (-32002, f"Resource not found: {uri}"))


def test_a_path_variable_is_declared_with_a_plus_and_listed_as_written() -> None:
    template = UriTemplate.parse("tree://{+path}/raw/{name}", "t")
    assert template.variables == ("path", "name")
    assert template.paths == frozenset({"path"})
    assert template.match("tree://a/b/raw/c") == {"path": "a/b", "name": "c"}
    assert template.match("tree://a/b/raw/c%2Fd") is None
    assert UriTemplate.parse("tree://{name}", "t").paths == frozenset()
    for bad in ("tree://{+}", "tree://{++path}", "tree://{#path}", "tree://{+pa th}"):
        with pytest.raises(DeclarationError, match=r"is not a variable; use \{name\}"):
            UriTemplate.parse(bad, "t")
    for unbalanced in ("tree://{path", "tree://path}", "tree://{+path}/{"):
        with pytest.raises(DeclarationError, match="unbalanced braces"):
            UriTemplate.parse(unbalanced, "t")

    async def steps(client: Any) -> Any:
        return wire(await client.list_resource_templates())

    listed = run(file_server(Any), steps)["resourceTemplates"]
    assert [entry["uriTemplate"] for entry in listed] == ["files://{name}", "tree://{+path}"]


@pytest.mark.parametrize(
    "doc",
    [
        '''Search notes.

        Args:
            query (str): Text to find,
                anywhere.
            limit: At most this many.

        Returns:
            The notes.
        ''',
        '''Search notes.

        Parameters
        ----------
        query : str
            Text to find,
            anywhere.
        limit : int
            At most this many.

        Returns
        -------
        list
        ''',
        '''Search notes.

        :param str query: Text to find,
            anywhere.
        :param limit: At most this many.
        :returns: The notes.
        ''',
    ],
    ids=["google", "numpy", "sphinx"],
)
def test_docstring_styles_give_the_same_descriptions(doc: str) -> None:
    parsed = parse_docstring(doc)
    assert parsed.summary == "Search notes."
    assert parsed.params == {"query": "Text to find, anywhere.", "limit": "At most this many."}


class Tone(enum.Enum):
    KIND = "kind"


class Place(BaseModel):
    city: str


def test_a_prompt_parameter_no_string_can_give_is_refused() -> None:
    app = McpApp("t")

    def tagged(tags: list[str]) -> str:
        return ""

    with pytest.raises(DeclarationError) as refused:
        app.add_prompt(tagged)
    assert str(refused.value) == (
        "prompt 'tagged': parameter 'tags' of test_a_prompt_parameter_no_string_can_give_is_refused.<locals>"
        ".tagged cannot come from a string, and MCP sends prompt arguments as strings; use str, int, float, "
        "bool, a Literal or an Enum (parse richer values inside the function)"
    )

    def placed(place: Place) -> str:
        return ""

    with pytest.raises(DeclarationError, match=r"parameter 'place' .* cannot come from a string"):
        app.add_prompt(placed)

    @app.prompt()
    def fine(a: int, b: float, c: bool, tone: Tone, d: str | None = None, e: Literal["x"] = "x") -> str:
        return ""

    assert wire(run(app, lambda client: client.get_prompt(name="fine", arguments={
        "a": "1", "b": "2.5", "c": "true", "tone": "kind"
    })))["messages"][0]["content"]["text"] == ""


def test_a_bare_resource_or_prompt_decorator_is_refused() -> None:
    app = McpApp("t")

    def index() -> str:
        return ""

    with pytest.raises(DeclarationError, match=r"write @app.resource\('scheme://...'\) with the URI"):
        app.resource(index)  # type: ignore[arg-type]
    with pytest.raises(DeclarationError, match=r"write @app.prompt\(\) with parentheses"):
        app.prompt(index)  # type: ignore[arg-type]


def test_subscribers_hear_of_an_updated_resource() -> None:
    from mcp_generated.v2025_11_25.client import ClientHandlers

    app = library()
    updated: list[str] = []
    heard = asyncio.Event()

    class Subscriber(ClientHandlers):
        async def on_resource_updated(self, params: Any, ctx: Any) -> None:
            updated.append(params.uri)
            heard.set()

    async def scenario() -> tuple[dict[str, Any], int]:
        async with connect_memory(app, protocol=v2025_11_25, client_handlers=Subscriber()) as client:
            await client.subscribe(uri="books://7/pages/1")
            with pytest.raises(RpcError) as unknown:
                await client.subscribe(uri="films://1")
            app.resource_updated("books://7/pages/2")  # nobody subscribed to it
            app.resource_updated("books://7/pages/1")
            await asyncio.wait_for(heard.wait(), 5)
            return client.session.peer_capabilities["resources"], unknown.value.code

    capabilities, code = asyncio.run(scenario())
    assert capabilities == {"listChanged": True, "subscribe": True}
    assert code == -32002
    assert updated == ["books://7/pages/1"]


@pytest.mark.parametrize(("found", "has_more"), [(100, False), (101, True)])
def test_a_completion_carries_at_most_100_values_and_says_when_there_are_more(found: int, has_more: bool) -> None:
    """The spec's cap: exactly 100 values fit in one result (no ``hasMore``); 101 do not."""
    app = McpApp("t")

    @app.prompt()
    def pick(item: str) -> str:
        return item

    @pick.complete("item")
    def items(prefix: str) -> list[str]:
        return [f"{prefix}{n}" for n in range(found)]

    async def steps(client: Any) -> Any:
        return wire(await client.complete(
            ref=models.PromptReference(type="ref/prompt", name="pick"),
            argument=models.CompleteRequestParamsArgument(name="item", value="i"),
        ))

    completion = run(app, steps)["completion"]
    assert completion["values"] == [f"i{n}" for n in range(min(found, 100))]
    assert (completion["total"], completion["hasMore"]) == (found, has_more)


@pytest.mark.parametrize("doc", [None, "", "   \n  "])
def test_no_docstring_gives_no_summary_and_no_descriptions(doc: str | None) -> None:
    parsed = parse_docstring(doc)
    assert (parsed.summary, parsed.params) == (None, {})


def test_a_google_section_holds_blank_lines_and_may_open_the_docstring() -> None:
    """Blank lines between items stay in the section; the next header ends it, blank line
    before it or not; an ``Args:`` on the first line (no summary) is read too."""
    parsed = parse_docstring("Args:\n    x: The x.\n\n    y: The y.\nReturns:\n    Nothing.\n")
    assert (parsed.summary, parsed.params) == (None, {"x": "The x.", "y": "The y."})


def test_an_args_header_on_the_last_line_reads_nothing_before_it() -> None:
    """A docstring opened on the line after its quotes may start deeper than a header that
    ends it: the empty ``Args:`` section at the end holds nothing, and the indented first
    line (shaped like an item) is no parameter's (the mutation audit's line 55)."""
    parsed = parse_docstring('\n        note: an indented first line\n    Args:\n    ')
    assert (parsed.summary, parsed.params) == ("note: an indented first line", {})


def test_a_numpy_section_is_found_after_a_lone_parameters_line_and_may_end_the_docstring() -> None:
    """A ``Parameters`` line without its rule is prose: the real section after it is read,
    up to the docstring's end; text left of the section's header is no parameter's."""
    parsed = parse_docstring(
        "Summary.\n\nParameters\nare below.\n\n    Parameters\n    ----------\n    x : int\n"
        "        The x.\nOutside.\n    y : str\n        The y."
    )
    assert parsed.params == {"x": "The x.", "y": "The y."}


@pytest.mark.parametrize("fields", ["Args:\n    x: The x.", ":param x: The x."])
def test_the_summary_ends_at_a_section_or_field_without_a_blank_line(fields: str) -> None:
    parsed = parse_docstring(f"Summary,\non two lines.\n{fields}")
    assert (parsed.summary, parsed.params) == ("Summary, on two lines.", {"x": "The x."})


class Shelf(BaseModel):
    name: str


class LabelledShelf(Shelf):
    label: str


def test_resource_contents_text_json_and_passed_through_blocks() -> None:
    """A str without a MIME type is text/plain; JSON keeps non-ASCII characters and follows
    the return annotation (a subclass's extra field is not sent); a list of resource
    contents passes through as it is."""
    app = McpApp("t")

    @app.resource("shelf://note")
    def note() -> str:
        return "plain"

    @app.resource("shelf://main")
    def main() -> Shelf:
        return LabelledShelf(name="café", label="secret")

    @app.resource("shelf://both")
    def both() -> list[models.TextResourceContents]:
        return [models.TextResourceContents(uri="shelf://both", text="a", mime_type="text/x-a")]

    async def steps(client: Any) -> Any:
        return [wire(await client.read_resource(uri=uri))["contents"] for uri in ("shelf://note", "shelf://main", "shelf://both")]

    assert run(app, steps) == [
        [{"uri": "shelf://note", "mimeType": "text/plain", "text": "plain"}],
        [{"uri": "shelf://main", "mimeType": "application/json", "text": '{"name": "café"}'}],
        [{"uri": "shelf://both", "mimeType": "text/x-a", "text": "a"}],
    ]


def test_resource_declaration_mistakes_are_refused_naming_them() -> None:
    app = McpApp("t")
    with pytest.raises(DeclarationError, match=r"unbalanced braces in 'a://x\}'"):
        app.add_resource(lambda: "", "a://x}")
    with pytest.raises(DeclarationError, match="3 is not a URI"):
        app.add_resource(lambda: "", 3)  # type: ignore[arg-type]
    with pytest.raises(DeclarationError, match="its metadata is not valid MCP: title"):
        app.add_resource(lambda: "", "a://x", title=3)  # type: ignore[arg-type]

    @app.resource("a://{item}")
    def item(item: str) -> str:
        return item

    with pytest.raises(DeclarationError, match=r"^resource template 'a://\{item\}' has no argument 'other'"):
        item.complete("other")


class Opaque:
    """A plain class: pydantic has no schema for it."""


def test_a_return_type_pydantic_cannot_take_is_read_as_plain_json() -> None:
    app = McpApp("t")

    @app.resource("loose://value")
    def loose() -> Opaque:
        return {"a": 1}  # type: ignore[return-value]

    async def steps(client: Any) -> Any:
        return wire(await client.read_resource(uri="loose://value"))["contents"]

    assert run(app, steps) == [{"uri": "loose://value", "mimeType": "application/json", "text": '{"a": 1}'}]


def test_a_google_item_goes_on_at_its_own_indent_under_a_header_on_any_line() -> None:
    parsed = parse_docstring("One.\nArgs:\n    x: The x,\n    continued.")
    assert (parsed.summary, parsed.params) == ("One.", {"x": "The x, continued."})


# -- failures a client should read (issue 30, req. 7) -----------------------------------------

shelf = McpApp("shelf")
SHELF = {1: "Dune"}


@shelf.resource("shelf://{book_id}")
def shelved(book_id: int) -> str:
    if book_id == 13:
        raise ToolError("book 13 is on loan until Friday")
    return SHELF[book_id]


@shelf.prompt()
def review(book_id: int) -> str:
    if book_id == 13:
        raise ToolError("book 13 is on loan until Friday")
    return f"Review {SHELF[book_id]}"


@pytest.mark.anyio
async def test_a_resources_missing_key_is_resource_not_found_in_each_era(
    mcp_client: McpClientFactory, mcp_revision: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "typedmcp.app")
    async with mcp_client(shelf, revision=mcp_revision) as client:
        with pytest.raises(RpcError) as missing:
            await client.read_resource(uri="shelf://2")
    not_found = -32002 if mcp_revision == "2025-11-25" else -32602  # (SEP-2164)
    assert (missing.value.code, missing.value.message) == (not_found, "Resource not found: shelf://2")
    assert missing.value.data == {"uri": "shelf://2"}
    assert "resource shelf://2: KeyError(2) read as not found" in caplog.text


@pytest.mark.anyio
async def test_a_resource_or_prompt_raising_tool_error_sends_its_message(
    mcp_client: McpClientFactory, mcp_revision: str
) -> None:
    async with mcp_client(shelf, revision=mcp_revision) as client:
        with pytest.raises(RpcError) as read:
            await client.read_resource(uri="shelf://13")
        with pytest.raises(RpcError) as got:
            await client.get_prompt(name="review", arguments={"book_id": "13"})
    assert (read.value.code, read.value.message) == (
        -32603, "Error reading resource shelf://13: book 13 is on loan until Friday"
    )
    assert (got.value.code, got.value.message) == (
        -32603, "Error getting prompt review: book 13 is on loan until Friday"
    )


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.parametrize(
    "doc",
    [
        "Weather.\n\nArgs:\n    citty: The city.\n    days: How many.",
        "Weather.\n\nParameters\n----------\ncitty : str\n    The city.",
        "Weather.\n\n:param citty: The city.",
    ],
    ids=["google", "numpy", "sphinx"],
)
def test_a_docstring_entry_naming_no_parameter_is_a_declaration_error(doc: str) -> None:
    app = McpApp("t")

    def weather(city: str, ctx: Context, days: int = 1) -> str:
        return city

    weather.__doc__ = doc
    with pytest.raises(DeclarationError) as refused:
        app.tool()(weather)
    assert "describes 'citty', which is not one of its parameters (city, ctx, days); rename it to 'city'" in str(refused.value)
    for declare in (app.prompt(), app.resource("w://{city}")):
        with pytest.raises(DeclarationError, match="describes 'citty'"):
            declare(lambda_of(doc))


def test_a_misspelt_docstring_entry_is_told_the_closest_parameter() -> None:
    def weather(citys: list[str], city: str) -> str:
        """Weather.

        Args:
            citty: The city.
        """
        return city

    with pytest.raises(DeclarationError, match=r"\(citys, city\); rename it to 'city'$"):
        McpApp("t").tool()(weather)


def test_a_docstring_entry_like_no_parameter_is_told_to_go() -> None:
    with pytest.raises(DeclarationError) as refused:
        McpApp("t").tool()(lambda_of("Weather.\n\nArgs:\n    town: The town.\n    zone: The zone."))
    assert str(refused.value).endswith(
        "describes 'town' (and 'zone'), which is not one of its parameters (city); "
        "rename it to the parameter it describes, or remove it"
    )


def lambda_of(doc: str) -> Any:
    def weather(city: str) -> str:
        return city

    weather.__doc__ = doc
    return weather


def test_a_documented_context_parameter_and_unrelated_entries_are_fine() -> None:
    app = McpApp("t")

    @app.tool()
    def weather(city: str, ctx: Context) -> str:
        """Weather.

        Args:
            city: The city.
            ctx: The request's context.

        Returns:
            town: not a parameter, but in another section.
        """
        return city

    assert app.tools["weather"].definition.input_schema.properties == {
        "city": {"type": "string", "description": "The city."}
    }
