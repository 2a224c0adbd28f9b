"""The official example instances of 2026-07-28 and draft: schema-valid, parse, round-trip exactly.

Every file ``<spec>/<revision>/examples/<TypeName>/<name>.json`` is first validated with
jsonschema against ``#/$defs/<TypeName>`` of that revision's schema (the whole schema is
registered as a resource, so every inner ``$ref`` resolves), then parsed with the generated
type of the same name and dumped back; the dump must equal the file's JSON exactly.

``2026-07-28`` uses the committed package; ``draft`` is not committed and is generated (once
per session) from the pinned draft schema.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from pydantic import BaseModel, TypeAdapter
from referencing import Registry, Resource

from conftest import models_module, official_spec_dir
from typedmcp_codegen.generate import GeneratedPackage

EXAMPLE_REVISIONS = ("2026-07-28", "draft")
EXAMPLES_PER_REVISION = 129


def _example_files(revision: str) -> list[Path]:
    return sorted((official_spec_dir() / revision / "examples").glob("*/*.json"))


def _example_params() -> list[Any]:
    params = [
        pytest.param(revision, path, id=f"{revision}/{path.parent.name}/{path.stem}")
        for revision in EXAMPLE_REVISIONS
        for path in _example_files(revision)
    ]
    # An empty parameter set would be reported as a skip; fail loudly instead.
    return params or [pytest.param(None, None, id="no-official-examples-found")]


@cache
def _schema(revision: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(
        (official_spec_dir() / revision / "schema.json").read_text("utf-8")
    )
    return document


@cache
def _validator(revision: str, type_name: str) -> Validator:
    """A validator for ``#/$defs/<type_name>`` with the whole schema registered as a resource."""
    schema = _schema(revision)
    cls = validator_for(schema)
    uri = f"urn:mcp-schema:{revision}"
    registry: Registry[Any] = Registry().with_resource(uri, Resource.from_contents(schema))
    defs = "$defs" if "$defs" in schema else "definitions"
    assert type_name in schema[defs], f"{type_name} is not a definition of {revision}"
    validator: Validator = cls({"$ref": f"{uri}#/{defs}/{type_name}"}, registry=registry)
    return validator


def _parse_and_dump(target: Any, text: str) -> tuple[Any, Any]:
    """Parse JSON text with a generated model class or type alias; dump it back (wire names)."""
    if isinstance(target, type) and issubclass(target, BaseModel):
        parsed: Any = target.model_validate_json(text)
        return parsed, parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    adapter: TypeAdapter[Any] = TypeAdapter(target)
    parsed = adapter.validate_json(text)
    return parsed, adapter.dump_python(parsed, mode="json", by_alias=True, exclude_unset=True)


def _canonical(value: Any) -> str:
    """JSON text with sorted keys: tells 50 from 50.0 and true from 1, unlike ``==``."""
    return json.dumps(value, sort_keys=True)


@pytest.fixture(scope="session")
def example_models(
    generate_revision: Callable[[str], GeneratedPackage],
    import_files: Callable[[dict[str, str]], ModuleType],
) -> Callable[[str], ModuleType]:
    """The models module of a revision: committed for 2026-07-28, generated once for draft."""
    loaded: dict[str, ModuleType] = {}

    def models(revision: str) -> ModuleType:
        if revision not in loaded:
            if revision == "draft":
                package = import_files(generate_revision("draft").files)
                loaded[revision] = importlib.import_module(package.__name__ + ".models")
            else:
                loaded[revision] = models_module(revision)
        return loaded[revision]

    return models


@pytest.mark.parametrize("revision", EXAMPLE_REVISIONS)
def test_all_official_example_files_are_found(revision: str) -> None:
    files = _example_files(revision)
    assert len(files) == EXAMPLES_PER_REVISION, (
        f"expected {EXAMPLES_PER_REVISION} example files for {revision}, found {len(files)}"
    )


@pytest.mark.parametrize(("revision", "path"), _example_params())
def test_official_example_is_schema_valid_and_round_trips_exactly(
    revision: str | None,
    path: Path | None,
    example_models: Callable[[str], ModuleType],
) -> None:
    assert revision is not None and path is not None, "no official example files were found"
    type_name = path.parent.name
    text = path.read_text("utf-8")
    instance = json.loads(text)

    errors = [error.message for error in _validator(revision, type_name).iter_errors(instance)]
    assert not errors, f"{path.name} is not a valid {type_name}: {errors}"

    models = example_models(revision)
    target = getattr(models, type_name, None)
    assert target is not None, f"the generated {revision} models have no {type_name}"
    parsed, dumped = _parse_and_dump(target, text)
    if isinstance(target, type):
        assert isinstance(parsed, target)

    assert dumped == instance
    assert _canonical(dumped) == _canonical(instance)
