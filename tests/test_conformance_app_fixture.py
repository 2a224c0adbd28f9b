"""``examples/conformance_app_server.py`` (McpApp) declares what the hand-written fixture
``examples/conformance_server.py`` does: the same tools with the same descriptions and
argument names, the same resources, template, prompts (with their arguments) and
completion, so the conformance suite (``scripts/conformance.sh`` runs it against both)
meets the same server. The suite itself needs Node; this guard runs without it."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fixture_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fixtures() -> tuple[Any, Any]:
    return load("conformance_server"), load("conformance_app_server")


def arguments(schema: Any) -> tuple[set[str], set[str]]:
    dumped = schema.model_dump(by_alias=True, exclude_none=True)
    return set(dumped.get("properties", {})), set(dumped.get("required", []))


def test_the_same_tools_with_the_same_descriptions_and_arguments(fixtures: tuple[Any, Any]) -> None:
    handwritten, typed = fixtures
    expected = {name: definition for name, (definition, _) in handwritten.TOOLS.items()}
    expected[handwritten.DYNAMIC_TOOL.name] = handwritten.DYNAMIC_TOOL
    served = {name: spec.definition for name, spec in typed.app.tools.items()}
    served[typed.SCHEMA_TOOL.name] = typed.SCHEMA_TOOL
    assert sorted(served) == sorted(expected)
    for name, definition in expected.items():
        assert served[name].description == definition.description, name
        assert arguments(served[name].input_schema) == arguments(definition.input_schema), name


def test_the_same_resources_template_and_prompts(fixtures: tuple[Any, Any]) -> None:
    handwritten, typed = fixtures
    resources = {uri: spec.definition for uri, spec in typed.app.resources.items()}
    for resource in [*handwritten.RESOURCES, *handwritten.skill_resources(handwritten.ConformanceServer().skill_catalog)]:
        listed = resources.pop(resource.uri)
        assert (listed.name, listed.description, listed.mime_type) == (resource.name, resource.description, resource.mime_type)
    template = resources.pop(handwritten.TEMPLATE.uri_template)
    assert (template.name, template.description, template.mime_type) == (
        handwritten.TEMPLATE.name, handwritten.TEMPLATE.description, handwritten.TEMPLATE.mime_type,
    )
    assert resources == {}
    expected = {prompt.name: prompt for prompt in [*handwritten.PROMPTS, handwritten.DYNAMIC_PROMPT]}
    served = {name: spec.definition for name, spec in typed.app.prompts.items()}
    assert sorted(served) == sorted(expected)
    for name, prompt in expected.items():
        assert served[name].description == prompt.description, name
        shown = [(a.name, a.description, a.required) for a in served[name].arguments or []]
        assert shown == [(a.name, a.description, a.required) for a in prompt.arguments or []], name


def test_the_same_completion(fixtures: tuple[Any, Any]) -> None:
    handwritten, typed = fixtures
    assert typed.arg1_values("") == list(handwritten.ARG1_COMPLETIONS)
    assert typed.arg1_values("b") == ["beta"]
