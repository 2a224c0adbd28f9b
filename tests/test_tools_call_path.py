"""The call path of a generated tools package (``mcp-codegen tools``): a tool whose
arguments are JSON values already sends them as given (a dict of wire names, no ``Params``
round trip); a tool with a model, a date or a constant among them still goes through
``Params``. Both send the same wire form: wire names, optional arguments left out when
not given."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pydantic import ValidationError

from mcp_generated.v2025_11_25 import models
from typedmcp_codegen.pins import load_pins
from typedmcp_codegen.tools_generate import (
    ToolModels,
    _sent_as_given,
    _tool_view,
    emit_tool_models,
    generate_tools_package,
)
from typedmcp_codegen.toolset import analyse_tools

PACKAGE = "call_path_tools"

MANIFEST: dict[str, Any] = {
    "protocolVersion": "2025-11-25",
    "serverInfo": {"name": "call-path", "version": "1.0.0"},
    "tools": [
        {
            "name": "plain",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "sortOrder": {"enum": ["asc", "desc"]},
                    "limit": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["query"],
            },
        },
        {
            "name": "dated",
            "inputSchema": {
                "type": "object",
                "properties": {"from": {"type": "string", "format": "date"}, "note": {"type": "string"}},
                "required": ["from"],
            },
        },
        {
            "name": "forecast",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "outputSchema": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "high": {"type": "number"}},
                "required": ["city", "high"],
            },
        },
        {
            "name": "constant",
            "inputSchema": {
                "type": "object",
                "properties": {"kind": {"const": "fixed"}, "text": {"type": "string"}},
                "required": ["text"],
            },
        },
    ],
}


class Recording:
    """A client that records what each call sends and answers an empty result."""

    def __init__(self, structured: dict[str, Any] | None = None) -> None:
        self.sent: list[tuple[str, Any]] = []
        self.structured = structured

    async def call_tool(self, *, name: str, arguments: dict[str, Any] | None = None) -> Any:
        self.sent.append((name, json.loads(json.dumps(arguments))))
        return models.CallToolResult(content=[], structured_content=self.structured)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    folder = tmp_path_factory.mktemp("call_path")
    files, _warnings = generate_tools_package(analyse_tools(MANIFEST), load_pins())
    for relative, text in files.items():
        target = folder / PACKAGE / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(folder))


def module_source(package: ModuleType, name: str) -> str:
    return Path(package.__file__ or "").with_name(f"{name}.py").read_text()


def test_json_valued_arguments_are_sent_as_given_in_wire_names(package: ModuleType) -> None:
    assert "Params(" not in module_source(package, "plain").split("async def plain(")[1]
    client = Recording()
    asyncio.run(package.Tools(client).plain(query="q", sort_order="asc"))
    asyncio.run(package.Tools(client).plain(query="q", limit=3, tags=["a"]))
    assert client.sent == [
        ("plain", {"query": "q", "sortOrder": "asc"}),
        ("plain", {"query": "q", "limit": 3, "tags": ["a"]}),
    ]


def test_a_date_or_a_constant_still_goes_through_params(package: ModuleType) -> None:
    for name in ("dated", "constant"):
        assert "Params(" in module_source(package, name).split(f"async def {name}(")[1]
    client = Recording()
    asyncio.run(package.Tools(client).dated(from_=date(2026, 1, 2)))
    asyncio.run(package.Tools(client).constant(text="t"))
    assert client.sent == [("dated", {"from": "2026-01-02"}), ("constant", {"text": "t"})]


def test_which_tools_are_sent_as_given() -> None:
    toolset = analyse_tools(MANIFEST)
    decided = {}
    for tool in toolset.tools:
        models_of: ToolModels = emit_tool_models(tool)
        view = _tool_view(tool, models_of)
        decided[tool.name] = view["sent_as_given"]
        assert _sent_as_given(tool, view["arguments"]) is view["sent_as_given"]
    assert decided == {"plain": True, "dated": False, "forecast": True, "constant": False}


def test_a_structured_result_is_validated_and_a_missing_one_raises(package: ModuleType) -> None:
    forecast = importlib.import_module(f"{PACKAGE}.forecast")
    found = asyncio.run(package.Tools(Recording({"city": "Oslo", "high": 21.5})).forecast(city="Oslo"))
    assert isinstance(found, forecast.Result) and (found.city, found.high) == ("Oslo", 21.5)
    with pytest.raises(package.ToolResultError, match="tool forecast declared an output schema but sent no"):
        asyncio.run(package.Tools(Recording()).forecast(city="Oslo"))
    with pytest.raises(ValidationError, match="high"):
        asyncio.run(package.Tools(Recording({"city": "Oslo"})).forecast(city="Oslo"))
