"""Generated MCP models as tool parameters: the schema the app derives for them accepts
each model's dump, and agrees with the model's own validation on mutated dumps (each
required member removed, or given a value of the wrong JSON type)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from typedmcp.app import McpApp
from typedmcp.protocol.tools import compile_schema
from mcp_generated.v2025_11_25 import models

SAMPLES: list[BaseModel] = [
    models.TextContent(type="text", text="hi", annotations=models.Annotations(audience=["user"], priority=0.5)),
    models.ImageContent(type="image", data="iVBORw==", mime_type="image/png"),
    models.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav"),
    models.ResourceLink(type="resource_link", uri="notes://1", name="one", mime_type="application/json"),
    models.EmbeddedResource(
        type="resource", resource=models.TextResourceContents(uri="notes://1", text="{}", mime_type="text/plain")
    ),
    models.Tool(
        name="add",
        input_schema=models.ToolInputSchema(type="object", properties={"a": {"type": "integer"}}, required=["a"]),
        annotations=models.ToolAnnotations(read_only_hint=True),
        icons=[models.Icon(src="https://example.com/i.png", sizes=["48x48"])],
    ),
    models.Resource(uri="notes://index", name="index", size=12),
    models.ResourceTemplate(uri_template="notes://{id}", name="note"),
    models.Prompt(name="summarize", arguments=[models.PromptArgument(name="id", required=True)]),
    models.PromptMessage(role="user", content=models.TextContent(type="text", text="hi")),
    models.SamplingMessage(role="assistant", content=models.TextContent(type="text", text="ok")),
    models.Root(uri="file:///notes", name="notes"),
    models.Implementation(name="client", version="1.0"),
]
WRONG_TYPE = {"string": 12345, "integer": "x", "number": "x", "boolean": "x", "array": "x", "object": "x"}


def derived(model: type[BaseModel]) -> tuple[Any, Any]:
    """The tool input schema the app derives for one parameter of type ``model`` (compiled),
    and the app's validation of it."""
    app = McpApp("t")

    def tool(value: Any) -> None: ...

    tool.__annotations__ = {"value": model, "return": None}
    app.add_tool(tool)
    spec = app.tools["tool"]
    schema = spec.definition.input_schema.model_dump(by_alias=True, exclude_unset=True)
    return compile_schema(schema), spec.signature.validate


def pydantic_accepts(validate: Any, value: Any) -> bool:
    try:
        validate({"value": value})
    except ValidationError:
        return False
    return True


def mutations(model: type[BaseModel], dump: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each required member removed, and each given a value of the wrong JSON type."""
    schema = model.model_json_schema(by_alias=True)
    found = []
    for name in schema.get("required", []):
        found.append((f"without {name}", {k: v for k, v in dump.items() if k != name}))
        kind = schema["properties"][name].get("type")
        if "const" in schema["properties"][name]:
            found.append((f"{name} not its constant", {**dump, name: "__nope__"}))
        elif kind in WRONG_TYPE:
            found.append((f"{name} of the wrong type", {**dump, name: WRONG_TYPE[kind]}))
    return found


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda sample: type(sample).__name__)
def test_the_derived_schema_accepts_dumps_and_agrees_on_mutations(sample: BaseModel) -> None:
    model = type(sample)
    validator, validate = derived(model)
    dump = sample.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert list(validator.iter_errors({"value": dump})) == []
    assert pydantic_accepts(validate, dump)
    cases = mutations(model, dump)
    assert cases, f"{model.__name__} has no required member to mutate"
    for label, mutated in cases:
        schema_accepts = not list(validator.iter_errors({"value": mutated}))
        assert (schema_accepts, pydantic_accepts(validate, mutated)) == (False, False), label
