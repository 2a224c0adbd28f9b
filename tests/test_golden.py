"""Golden output of a small fixture schema, and determinism of the whole pipeline.

The golden package ``tests/fixtures/golden/tiny/`` is the generator's output for the
hand-written schema ``tests/fixtures/schemas/tiny/schema.json`` as the unpinned revision
2099-01-01. After an intended change to the output, refresh it from the repository root with::

    mcp-codegen --schema tests/fixtures/schemas/tiny/schema.json --version 2099-01-01 \\
        --out tests/fixtures/golden/tiny

and review the diff (``git diff tests/fixtures/golden``) before committing it.
"""

from __future__ import annotations

import datetime
import difflib
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pydantic
import pytest
from conftest import FIXTURES, RELEASED, REPO_ROOT

from typedmcp_codegen.generate import GeneratedPackage, generate_package
from typedmcp_codegen.load import LoadedSchema, SchemaSource, load_schema
from typedmcp_codegen.pins import load_pins

TINY = FIXTURES / "schemas" / "tiny" / "schema.json"
GOLDEN = FIXTURES / "golden" / "tiny"
UNPINNED = "2099-01-01"
DATE_OR_TIME = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}")
REFRESH = (
    "mcp-codegen --schema tests/fixtures/schemas/tiny/schema.json --version 2099-01-01 "
    "--out tests/fixtures/golden/tiny"
)


def read_tree(root: Path) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def generate_tiny(schema_file: Path = TINY) -> dict[str, str]:
    schema = load_schema(UNPINNED, load_pins(), SchemaSource(schema_file=schema_file))
    return generate_package(schema, None).files


def tree_diff(expected: dict[str, str], actual: dict[str, str]) -> str:
    lines: list[str] = []
    for path in sorted(set(expected) | set(actual)):
        lines.extend(
            difflib.unified_diff(
                expected.get(path, "").splitlines(keepends=True),
                actual.get(path, "").splitlines(keepends=True),
                fromfile=f"golden/{path}" if path in expected else "/dev/null",
                tofile=f"generated/{path}" if path in actual else "/dev/null",
            )
        )
    return "".join(lines)


@pytest.fixture(scope="module")
def tiny_files() -> dict[str, str]:
    return generate_tiny()


def test_tiny_schema_matches_the_golden_package(tiny_files: dict[str, str]) -> None:
    golden = read_tree(GOLDEN)
    assert golden, f"{GOLDEN} is empty; create it with: {REFRESH}"
    if golden != tiny_files:
        pytest.fail(
            f"generated output differs from {GOLDEN}:\n{tree_diff(golden, tiny_files)}\n"
            f"If the change is intended, refresh the golden files with:\n    {REFRESH}",
            pytrace=False,
        )
    for path, text in golden.items():  # byte for byte, not just text
        assert (GOLDEN / path).read_bytes() == text.encode("utf-8")


@pytest.fixture(scope="module")
def golden_package(import_files: Callable[[dict[str, str]], ModuleType]) -> ModuleType:
    return import_files(read_tree(GOLDEN))


def submodule(package: ModuleType, name: str) -> Any:
    import importlib

    return importlib.import_module(f"{package.__name__}.{name}")


def test_golden_package_routes_and_parses_messages(golden_package: ModuleType) -> None:
    dispatch = submodule(golden_package, "dispatch")
    models = submodule(golden_package, "models")
    assert golden_package.PROTOCOL_VERSION == UNPINNED
    assert sorted(dispatch.REQUESTS) == [
        "gadgets/list",
        "initialize",
        "ping",
        "sampling/createMessage",
    ]
    assert sorted(dispatch.NOTIFICATIONS) == [
        "notifications/cancelled",
        "notifications/gadgets/list_changed",
        "notifications/initialized",
    ]
    assert dispatch.REQUESTS["ping"].result_type is models.EmptyResult
    create = dispatch.REQUESTS["sampling/createMessage"]
    params = create.validate_params(
        {"maxTokens": 5, "prompt": {"type": "image", "data": "AA==", "mimeType": "image/png"}}
    )
    assert isinstance(params.prompt, models.ImageContent)
    assert params.max_tokens == 5
    with pytest.raises(pydantic.ValidationError):
        create.validate_params({"maxTokens": "5", "prompt": {"type": "text", "text": "hi"}})
    with pytest.raises(pydantic.ValidationError, match="'text'"):
        create.validate_params({"maxTokens": 5, "prompt": {"type": "text"}})
    request = pydantic.TypeAdapter(models.ClientRequest).validate_python(
        {"jsonrpc": "2.0", "id": 7, "method": "gadgets/list", "params": {"cursor": "c"}}
    )
    assert isinstance(request, models.ListGadgetsRequest)
    assert request.model_dump(mode="json", exclude_unset=True) == {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "gadgets/list",
        "params": {"cursor": "c"},
    }


def test_generating_twice_in_one_process_is_identical(
    offline_source: SchemaSource, generate_revision: Callable[[str], GeneratedPackage]
) -> None:
    pins = load_pins()
    again = generate_package(
        load_schema("2024-11-05", pins, offline_source), pins.find("2024-11-05")
    )
    assert again.files == generate_revision("2024-11-05").files
    assert generate_tiny() == generate_tiny()


def test_another_hash_seed_gives_identical_files(
    tmp_path: Path, spec_dir: Path, generate_revision: Callable[[str], GeneratedPackage]
) -> None:
    """A subprocess with a fixed PYTHONHASHSEED (this process has another) writes the same
    files; 2025-11-25 has the most unions, capabilities and alternatives.
    """
    revision = "2025-11-25"
    seed = "31337" if os.environ.get("PYTHONHASHSEED") != "31337" else "4242"
    env = {key: value for key, value in os.environ.items() if not key.startswith("MCP_CODEGEN")}
    out = tmp_path / "out"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "typedmcp_codegen",
            "--version",
            revision,
            "--schema-dir",
            str(spec_dir),
            "--offline",
            "--out",
            str(out),
        ],
        env={**env, "PYTHONHASHSEED": seed},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    expected = generate_revision(revision).files
    actual = read_tree(out)
    assert actual == expected, f"PYTHONHASHSEED={seed}:\n{tree_diff(expected, actual)}"


def test_order_of_definitions_does_not_matter(
    offline_source: SchemaSource, generate_revision: Callable[[str], GeneratedPackage]
) -> None:
    pins = load_pins()
    for revision in ("2025-06-18",):
        schema = load_schema(revision, pins, offline_source)
        key = "$defs" if "$defs" in schema.document else "definitions"
        names = list(schema.document[key])
        random.Random(20250618).shuffle(names)
        assert names != sorted(names)
        shuffled = {**schema.document, key: {n: schema.document[key][n] for n in names}}
        loaded = LoadedSchema(schema.revision, schema.sha256, True, schema.origin, shuffled)
        files = generate_package(loaded, pins.find(revision)).files
        expected = generate_revision(revision).files
        assert files == expected, tree_diff(expected, files)


def test_order_of_definitions_does_not_matter_for_the_tiny_schema(
    tmp_path: Path, tiny_files: dict[str, str]
) -> None:
    document = json.loads(TINY.read_text())
    reversed_defs = dict(reversed(list(document["$defs"].items())))
    copy = tmp_path / "schema.json"
    copy.write_text(json.dumps({**document, "$defs": reversed_defs}))
    files = generate_tiny(copy)
    # only the sha256 differs (other bytes, same definitions)
    old_sha = hashlib.sha256(TINY.read_bytes()).hexdigest()
    new_sha = hashlib.sha256(copy.read_bytes()).hexdigest()
    assert old_sha != new_sha
    same_sha = {path: text.replace(new_sha, old_sha) for path, text in files.items()}
    assert same_sha == tiny_files, tree_diff(tiny_files, same_sha)


def forbidden_strings(*extra: Path) -> list[str]:
    today = datetime.date.today()
    utc_today = datetime.datetime.now(datetime.timezone.utc).date()
    strings = [str(REPO_ROOT), f"{Path.home()}/", "/tmp/", "<stdin>", "timestamp:"]
    strings += [str(path) for path in extra]
    for day in {today, utc_today}:
        strings += [day.isoformat(), day.strftime("%d/%m/%Y"), day.strftime("%m/%d/%Y")]
    return strings


def test_no_absolute_paths_or_timestamps_in_output(
    tmp_path: Path, spec_dir: Path, generate_revision: Callable[[str], GeneratedPackage]
) -> None:
    located = tmp_path / "somewhere" / "schema.json"
    located.parent.mkdir()
    shutil.copy(TINY, located)
    outputs = {f"tiny/{path}": text for path, text in generate_tiny(located).items()}
    for revision in RELEASED:
        outputs.update({f"{revision}/{p}": t for p, t in generate_revision(revision).files.items()})
    forbidden = forbidden_strings(tmp_path, spec_dir, spec_dir.resolve())
    found = [(path, s) for path, text in outputs.items() for s in forbidden if s in text]
    assert found == []
    for path, text in outputs.items():
        revision = path.split("/", 1)[0].replace("tiny", UNPINNED)
        header = [line for line in text.splitlines() if line.startswith("#")][:6]
        for line in header:
            without_revision = line.replace(revision, "<revision>")
            assert not DATE_OR_TIME.search(without_revision), (path, line)
