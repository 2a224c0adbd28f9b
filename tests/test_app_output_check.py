"""Structured output of ``McpApp`` tools and the server's own check of it: a result the app
validated and dumped with the types its ``outputSchema`` came from is sent without a second
(jsonschema) check; any result whose dump could differ from its schema is still checked, so
a result that breaks the declared output is never sent."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel, computed_field, field_serializer

from typedmcp.app import McpApp
from typedmcp.app.tools import CheckedCallToolResult
from typedmcp.connecting import connect_memory
from typedmcp.engine.jsonrpc import RpcError
from typedmcp.protocol.tools import ToolSchemas
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models


class Note(BaseModel):
    id: int
    title: str


class Lying(BaseModel):
    """A model whose serializer sends a string for a field it declares an integer."""

    id: int

    @field_serializer("id")
    def shown(self, value: int) -> int:
        return f"#{value}"  # type: ignore[return-value]


class Computing(BaseModel):
    """A model with a computed field that returns another type than it declares."""

    id: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def double(self) -> int:
        return "twice" if self.id else 0  # type: ignore[return-value]


def output_checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tool names the server checks against their ``outputSchema`` from now on."""
    checked: list[str] = []
    original = ToolSchemas.check

    def counting(self: ToolSchemas, name: str, which: str, instance: Any) -> list[str]:
        if which == "outputSchema":
            checked.append(name)
        return original(self, name, which, instance)

    monkeypatch.setattr(ToolSchemas, "check", counting)
    return checked


def served(app: McpApp, name: str) -> Any:
    """Call ``name`` over JSON-RPC (2025-11-25); the result, or the ``RpcError`` raised."""

    async def scenario() -> Any:
        client: Any
        async with connect_memory(app, protocol=v2025_11_25) as client:
            try:
                return await client.call_tool(name=name, arguments={})
            except RpcError as error:
                return error

    return asyncio.run(scenario())


def test_a_validated_result_is_sent_without_a_second_check(monkeypatch: pytest.MonkeyPatch) -> None:
    app = McpApp("t")

    @app.tool()
    def word() -> str:
        return "hi"

    @app.tool()
    def note() -> Note:
        return {"id": 1, "title": "t"}  # type: ignore[return-value]  # (validated into a Note)

    checked = output_checks(monkeypatch)
    assert served(app, "word").structured_content == {"result": "hi"}
    assert served(app, "note").structured_content == {"id": 1, "title": "t"}
    assert checked == []
    assert isinstance(asyncio.run(app.tools["note"].call({}, None)), CheckedCallToolResult)


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")  # (the point of the test)
def test_a_model_instance_is_still_checked_it_may_have_changed_since_it_was_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = McpApp("t")

    @app.tool()
    def changed() -> Note:
        made = Note(id=1, title="t")
        made.id = "not a number"  # type: ignore[assignment]  # (no validate_assignment)
        return made

    checked = output_checks(monkeypatch)
    refused = served(app, "changed")
    assert isinstance(refused, RpcError)
    assert (refused.code, refused.message) == (-32603, "Internal error")
    assert set(checked) == {"changed"}


def _app_returning(model: type[BaseModel]) -> McpApp:
    app = McpApp("t")

    def made() -> Any:
        return {"id": 3}  # (validated as ``model``, then dumped by the model's own code)

    made.__annotations__["return"] = model
    app.add_tool(made, name="made")
    return app


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize("model", [Lying, Computing])
def test_a_result_whose_serializer_may_break_the_schema_is_still_checked(model: type[BaseModel]) -> None:
    app = _app_returning(model)
    assert app.tools["made"].output.faithful is False
    refused = served(app, "made")
    assert isinstance(refused, RpcError)
    assert (refused.code, refused.message) == (-32603, "Internal error")


def test_a_call_tool_result_a_tool_returns_itself_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    app = McpApp("t")

    @app.tool()
    def handmade() -> Note:
        return models.CallToolResult(content=[], structured_content={"id": "x"})  # type: ignore[return-value]

    checked = output_checks(monkeypatch)
    refused = served(app, "handmade")
    assert isinstance(refused, RpcError)
    assert refused.code == -32603
    assert set(checked) == {"handmade"}
