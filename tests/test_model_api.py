"""Generated models behave as a Python developer expects, and never put invalid JSON on the wire.

- A field whose schema value is a constant (``type``, ``method``, ``jsonrpc``) defaults to it
  when a model is built in Python, and that value always reaches the wire; parsing stays exact
  (a wire message without it is refused, as the schema says).
- The default dump (``model_dump()``, ``model_dump_json()``) is the wire form: no ``null`` for
  fields nobody set.
- ``None`` for an optional field the schema does not allow to be null means "absent" when a
  model is built in Python (outbound); a ``null`` for such a field in parsed input (inbound) is
  refused, like any other value the schema rejects. Fields the schema lets be null keep it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import FIXTURES, RELEASED, REPO_ROOT, models_module
from pydantic import BaseModel, ValidationError

from typedmcp_codegen.generate import generate_package
from typedmcp_codegen.load import SchemaSource, load_schema
from typedmcp_codegen.pins import load_pins

TINY = FIXTURES / "schemas" / "tiny" / "schema.json"


def wire(model: BaseModel) -> Any:
    """What the runtime sends: its own dump (``to_wire``: by alias, unset fields left out)."""
    return json.loads(model.__pydantic_serializer__.to_json(model, by_alias=True, exclude_unset=True))


@pytest.mark.parametrize("revision", RELEASED)
def test_a_constant_field_defaults_to_its_value_and_reaches_the_wire(revision: str) -> None:
    models = models_module(revision)
    text = models.TextContent(text="hi")
    assert text.type == "text"
    assert wire(text) == {"text": "hi", "type": "text"}
    image = models.ImageContent(data="aGk=", mime_type="image/png")
    result = models.CallToolResult(content=[text, image])
    sent = wire(result)
    assert [block["type"] for block in sent["content"]] == ["text", "image"]
    parsed = models.CallToolResult.model_validate_json(json.dumps(sent), by_name=False)
    assert [type(block).__name__ for block in parsed.content] == ["TextContent", "ImageContent"]
    assert wire(parsed) == sent, "a parsed message dumps back to exactly what was parsed"


def test_messages_fill_jsonrpc_and_method() -> None:
    models = models_module("2025-11-25")
    request = models.CallToolRequest(id=7, params=models.CallToolRequestParams(name="weather"))
    assert wire(request) == {
        "id": 7,
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"name": "weather"},
    }
    notification = models.ToolListChangedNotification()
    assert wire(notification) == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
    }


@pytest.mark.parametrize("revision", RELEASED)
def test_parsing_still_requires_the_constant(revision: str) -> None:
    """The schema requires ``type``: parsed input without it is refused, as before."""
    models = models_module(revision)
    with pytest.raises(ValidationError, match="type"):
        models.TextContent.model_validate({"text": "hi"}, by_name=False)
    with pytest.raises(ValidationError):
        models.CallToolResult.model_validate({"content": [{"text": "hi"}]}, by_name=False)
    with pytest.raises(ValidationError):
        models.TextContent(text="hi", type="image")


@pytest.mark.parametrize("revision", RELEASED)
def test_the_default_dump_is_the_wire_form(revision: str) -> None:
    models = models_module(revision)
    result = models.CallToolResult(content=[models.TextContent(text="hi")])
    expected = {"content": [{"text": "hi", "type": "text"}]}
    assert json.loads(result.model_dump_json()) == wire(result) == expected
    assert result.model_dump() == expected
    assert "null" not in result.model_dump_json()
    # asking for everything still gives everything
    assert result.model_dump(exclude_unset=False)["_meta"] is None


@pytest.mark.parametrize("revision", RELEASED)
def test_none_means_absent_when_building(revision: str) -> None:
    models = models_module(revision)
    extra: dict[str, Any] = {"ttl_ms": 0, "cache_scope": "private"} if revision >= "2026" else {}
    by_name = models.ListToolsResult(tools=[], next_cursor=None, **extra)
    by_alias = models.ListToolsResult(tools=[], nextCursor=None, **extra)
    for result in (by_name, by_alias):
        assert result.next_cursor is None
        assert "next_cursor" not in result.model_fields_set
        assert "nextCursor" not in wire(result)
        assert "null" not in result.model_dump_json()
    text = models.TextContent(text="hi", annotations=None)
    assert wire(text) == {"text": "hi", "type": "text"}
    # a value is still a value
    assert wire(models.ListToolsResult(tools=[], next_cursor="p2", **extra))["nextCursor"] == "p2"


@pytest.mark.parametrize("revision", RELEASED)
def test_a_null_the_schema_rejects_is_refused_when_parsing(revision: str) -> None:
    models = models_module(revision)
    raw = {"tools": [], "nextCursor": None}
    if revision == "2026-07-28":
        raw.update(ttlMs=0, cacheScope="private", resultType="complete")
    with pytest.raises(ValidationError, match="nextCursor"):
        models.ListToolsResult.model_validate(raw, by_name=False)
    with pytest.raises(ValidationError, match="nextCursor"):
        models.ListToolsResult.model_validate_json(json.dumps(raw), by_name=False)
    dispatch = __import__(f"mcp_generated.v{revision.replace('-', '_')}.dispatch", fromlist=["x"])
    with pytest.raises(ValidationError):
        dispatch.LIST_TOOLS.validate_result(raw)
    del raw["nextCursor"]
    assert dispatch.LIST_TOOLS.validate_result(raw).next_cursor is None


def test_a_null_the_schema_allows_is_kept_both_ways() -> None:
    """2025-11-25 ``Task.ttl`` is required and may be null ("null for unlimited")."""
    models = models_module("2025-11-25")
    task = models.Task(
        task_id="t1",
        status="working",
        created_at="2025-11-25T00:00:00Z",
        last_updated_at="2025-11-25T00:00:00Z",
        ttl=None,
    )
    assert wire(task)["ttl"] is None
    parsed = models.Task.model_validate_json(json.dumps(wire(task)), by_name=False)
    assert parsed.ttl is None and wire(parsed) == wire(task)


@pytest.fixture(scope="module")
def nullable_tiny(
    tmp_path_factory: pytest.TempPathFactory, import_files: Callable[[dict[str, str]], ModuleType]
) -> ModuleType:
    """The tiny schema plus an optional property that may be null (no official schema has one)."""
    document = json.loads(TINY.read_text())
    document["$defs"]["Gadget"]["properties"]["note"] = {"type": ["string", "null"]}
    path = tmp_path_factory.mktemp("nullable") / "schema.json"
    path.write_text(json.dumps(document))
    schema = load_schema("2099-01-01", load_pins(), SchemaSource(schema_file=path))
    package = import_files(generate_package(schema, None).files)
    models: ModuleType = package.models
    return models


def test_an_optional_field_that_may_be_null_keeps_null_both_ways(nullable_tiny: ModuleType) -> None:
    gadget = nullable_tiny.Gadget.model_validate({"name": "g", "note": None}, by_name=False)
    assert "note" in gadget.model_fields_set and wire(gadget) == {"name": "g", "note": None}
    built = nullable_tiny.Gadget(name="g", note=None)
    assert wire(built) == {"name": "g", "note": None}, "null is a value the schema allows"
    assert wire(nullable_tiny.Gadget(name="g")) == {"name": "g"}
    with pytest.raises(ValidationError):  # the other optional fields still refuse null
        nullable_tiny.Gadget.model_validate({"name": "g", "weight": None}, by_name=False)


@pytest.mark.parametrize("revision", RELEASED)
def test_parsing_never_runs_python_per_instance(revision: str) -> None:
    """The conveniences live in ``__init__`` (Python construction) only: the core validator,
    which the runtime uses for every message, never calls it."""
    models = models_module(revision)
    for name in ("TextContent", "CallToolResult", "ListToolsResult", "Tool"):
        cls = getattr(models, name)
        cls.model_rebuild()
        assert cls.__pydantic_custom_init__ is False, name
        assert cls.__pydantic_post_init__ is None, name


def test_construction_type_checks(tmp_path: Path) -> None:
    """mypy --strict accepts the constructions above (constants and None are optional)."""
    user = tmp_path / "user.py"
    user.write_text(
        "from mcp_generated.v2025_11_25 import models\n"
        "text = models.TextContent(text='hi')\n"
        "result = models.ListToolsResult(tools=[], next_cursor=None)\n"
        "request = models.CallToolRequest(id=1, params=models.CallToolRequestParams(name='x'))\n"
        "reveal_type(text.type)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent",
         str(user)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "Literal['text']" in completed.stdout
