"""The official schemas and test vectors are vendored in ``schema/``, each file pinned.

``schema/`` holds what the tests read from upstream (modelcontextprotocol/modelcontextprotocol
at the commit ``schema/pins.json`` names): the schema of every revision and the draft, the
official examples (``<revision>/examples/<Type>/<name>.json``) and the upstream licence.
``schema/SHA256SUMS`` (``sha256sum -c`` reads it) pins every one of those files: a file edited,
added or left out is caught here, so a clone needs no other folder to run the tests.
"""

from __future__ import annotations

import hashlib

from conftest import REPO_ROOT
from typedmcp_codegen.pins import load_pins

SCHEMA = REPO_ROOT / "schema"
SUMS = SCHEMA / "SHA256SUMS"
#: The official examples vendored per revision (upstream has them for these two only).
EXAMPLES = {"2026-07-28": 129, "draft": 129}


def pinned_sums() -> dict[str, str]:
    """``path -> sha256`` of ``schema/SHA256SUMS`` (lines ``<sha256>  <path>``)."""
    sums: dict[str, str] = {}
    for number, line in enumerate(SUMS.read_text("utf-8").splitlines(), 1):
        digest, separator, path = line.partition("  ")
        assert separator and len(digest) == 64 and path, f"{SUMS}:{number}: {line!r}"
        assert path not in sums, f"{SUMS}:{number}: {path} pinned twice"
        sums[path] = digest
    return sums


def upstream_files() -> list[str]:
    """Every file of ``schema/`` that comes from upstream: each revision's folder (the draft's
    too) and the licence; not ours (pins, the extensions' own pinned folder, this package)."""
    folders = [SCHEMA / name for name in load_pins().names]
    found = [path for folder in folders for path in folder.rglob("*") if path.is_file()]
    return sorted(path.relative_to(SCHEMA).as_posix() for path in [*found, SCHEMA / "LICENSE"])


def test_every_vendored_official_file_is_pinned_and_has_its_sha256() -> None:
    sums = pinned_sums()
    assert sorted(sums) == upstream_files()  # nothing unpinned, no pin without its file
    changed = [
        path for path, digest in sums.items()
        if hashlib.sha256((SCHEMA / path).read_bytes()).hexdigest() != digest
    ]
    assert changed == []


def test_the_vendored_test_vectors_are_all_there() -> None:
    """The official examples of 2026-07-28 and the draft, and the draft's schema: what
    ``tests/test_examples.py`` and the draft tests read when no other folder is named."""
    sums = pinned_sums()
    for revision, count in EXAMPLES.items():
        examples = [path for path in sums if path.startswith(f"{revision}/examples/")]
        assert len(examples) == count, revision
        assert all(path.count("/") == 3 and path.endswith(".json") for path in examples)
    assert "draft/schema.json" in sums


def test_the_released_schemas_pins_agree_with_the_generators_pins() -> None:
    """pins.json (what mcp-codegen checks) and SHA256SUMS name the same bytes."""
    sums = pinned_sums()
    for pin in load_pins().released:
        assert sums[f"{pin.revision}/schema.json"] == pin.sha256, pin.revision


def test_the_vendored_files_keep_the_upstream_licence() -> None:
    """Upstream's LICENSE, pinned with the rest; the distributions ship it as the schemas'
    licence (the generator's ``schema/LICENSE``, the runtime's ``SCHEMA-LICENSE``)."""
    licence = (SCHEMA / "LICENSE").read_text("utf-8")
    assert "LICENSE" in pinned_sums()
    assert "Apache License" in licence and "Version 2.0" in licence
    assert (REPO_ROOT / "runtime" / "SCHEMA-LICENSE").read_text("utf-8") == licence
